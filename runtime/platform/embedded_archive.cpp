#include "embedded_archive.hpp"

// Defined by capi/embedded.S when libsdm embeds an archive; weak, so that without it they
// are null (and the runtime's tests, which link the runtime without libsdm, see none either).
// Windows (PE has no weak undefined symbols): sdm.dll embeds no archive, and hosts mount files.
#ifdef _WIN32
static constexpr const unsigned char* sdm_embedded_archive_begin = nullptr;
static constexpr const unsigned char* sdm_embedded_archive_end = nullptr;
static constexpr const unsigned char* sdm_embedded_key_begin = nullptr;
static constexpr const unsigned char* sdm_embedded_key_end = nullptr;
#else
extern "C" {
__attribute__((weak, visibility("hidden"))) extern const unsigned char sdm_embedded_archive_begin[];
__attribute__((weak, visibility("hidden"))) extern const unsigned char sdm_embedded_archive_end[];
__attribute__((weak, visibility("hidden"))) extern const unsigned char sdm_embedded_key_begin[];
__attribute__((weak, visibility("hidden"))) extern const unsigned char sdm_embedded_key_end[];
}
#endif

namespace sdm::runtime {

std::optional<Bytes> embedded_archive() noexcept {
    const unsigned char* begin = sdm_embedded_archive_begin;
    const unsigned char* end = sdm_embedded_archive_end;
    if (begin == nullptr || end == nullptr || end <= begin) return std::nullopt;
    return Bytes(reinterpret_cast<const std::byte*>(begin), static_cast<size_t>(end - begin));
}

std::optional<std::string_view> embedded_archive_key() noexcept {
    const unsigned char* begin = sdm_embedded_key_begin;
    const unsigned char* end = sdm_embedded_key_end;
    if (begin == nullptr || end == nullptr || end <= begin) return std::nullopt;
    std::string_view text(reinterpret_cast<const char*>(begin), static_cast<size_t>(end - begin));
    while (!text.empty() && (text.back() == '\n' || text.back() == '\0')) text.remove_suffix(1);
    return text;
}

}  // namespace sdm::runtime
