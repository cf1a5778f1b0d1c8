#include "identity.hpp"

#include <algorithm>
#include <array>

#include "archive.hpp"
#include "common/bytes.hpp"
#include "signature_block.hpp"

namespace sdm::archive {

Hash128 identity(const Archive& archive) {
    const Bytes b = archive.bytes();
    const HeaderInfo& h = archive.header();
    // The header as it was before it was signed: header_size <= 4096 (Archive::validate_header).
    std::array<std::byte, limits::max_header_size> head{};
    std::copy_n(b.begin(), h.header_size, head.begin());
    const std::span<std::byte> header_bytes(head.data(), h.header_size);
    store_u64(header_bytes, header::archive_size, 0);
    store_u64(header_bytes, header::header_hash, 0);
    store_u64(header_bytes, header::optional_features, h.optional_features & ~kFeatureSigned);
    const uint64_t meta_begin = load_u64(b, header::index_offset);
    const uint64_t meta_end = load_u64(b, header::strings_offset) + load_u64(b, header::strings_size);  // validated at open
    constexpr std::string_view kDomain{"sdm archive identity 1", 22};
    std::array<std::byte, kDomain.size() + 1 + 32> parts{};
    std::copy_n(reinterpret_cast<const std::byte*>(kDomain.data()), kDomain.size(), parts.begin());
    store_hash128(parts, kDomain.size() + 1, xxh3_128(header_bytes));
    store_hash128(parts, kDomain.size() + 17, xxh3_128(b.subspan(static_cast<size_t>(meta_begin), static_cast<size_t>(meta_end - meta_begin))));
    return xxh3_128(parts);
}

std::string identity_text(const Hash128& identity) { return "xxh3-128:" + identity.hex(); }

}  // namespace sdm::archive
