#include "embedded_archive.hpp"

// Defined by capi/embedded.S when libsdm embeds an archive; weak, so that without it they
// are null (and the runtime's tests, which link the runtime without libsdm, see none either).
extern "C" {
__attribute__((weak, visibility("hidden"))) extern const unsigned char sdm_embedded_archive_begin[];
__attribute__((weak, visibility("hidden"))) extern const unsigned char sdm_embedded_archive_end[];
}

namespace sdm::runtime {

std::optional<Bytes> embedded_archive() noexcept {
    const unsigned char* begin = sdm_embedded_archive_begin;
    const unsigned char* end = sdm_embedded_archive_end;
    if (begin == nullptr || end == nullptr || end <= begin) return std::nullopt;
    return Bytes(reinterpret_cast<const std::byte*>(begin), static_cast<size_t>(end - begin));
}

}  // namespace sdm::runtime
