// Little-endian field access over byte spans, and checked arithmetic for sizes read from untrusted
// bytes. Every read is bounds-checked by the caller's validation first; these helpers only decode.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace sdm {

using Bytes = std::span<const std::byte>;
using ByteVector = std::vector<std::byte>;

// One unaligned load each (a byte-at-a-time loop over std::byte does not fold into one).
inline uint16_t load_u16(Bytes b, size_t at) {
    uint16_t v;
    std::memcpy(&v, b.data() + at, sizeof v);
    if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap16(v);
    return v;
}
inline uint32_t load_u32(Bytes b, size_t at) {
    uint32_t v;
    std::memcpy(&v, b.data() + at, sizeof v);
    if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap32(v);
    return v;
}
inline uint64_t load_u64(Bytes b, size_t at) {
    uint64_t v;
    std::memcpy(&v, b.data() + at, sizeof v);
    if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap64(v);
    return v;
}
inline uint8_t load_u8(Bytes b, size_t at) { return std::to_integer<uint8_t>(b[at]); }

inline void store_u8(std::span<std::byte> b, size_t at, uint8_t v) { b[at] = std::byte{v}; }
inline void store_u16(std::span<std::byte> b, size_t at, uint16_t v) {
    for (size_t i = 0; i < 2; ++i) b[at + i] = std::byte(static_cast<uint8_t>(v >> (8 * i)));
}
inline void store_u32(std::span<std::byte> b, size_t at, uint32_t v) {
    for (size_t i = 0; i < 4; ++i) b[at + i] = std::byte(static_cast<uint8_t>(v >> (8 * i)));
}
inline void store_u64(std::span<std::byte> b, size_t at, uint64_t v) {
    for (size_t i = 0; i < 8; ++i) b[at + i] = std::byte(static_cast<uint8_t>(v >> (8 * i)));
}

// Overflow-checked arithmetic on sizes that came from a file.
inline std::optional<uint64_t> checked_add(uint64_t a, uint64_t b) {
    uint64_t r = 0;
    if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
    return r;
}
inline std::optional<uint64_t> checked_mul(uint64_t a, uint64_t b) {
    uint64_t r = 0;
    if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
    return r;
}
// [offset, offset + size) lies inside [0, total).
inline bool in_bounds(uint64_t offset, uint64_t size, uint64_t total) {
    return offset <= total && size <= total - offset;
}
inline uint64_t align_up(uint64_t value, uint64_t alignment) {
    return (value + alignment - 1) / alignment * alignment;
}

inline Bytes as_bytes(std::string_view text) {
    return {reinterpret_cast<const std::byte*>(text.data()), text.size()};
}
inline std::string_view as_text(Bytes bytes) {
    return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

std::string hex(uint64_t value, int digits = 16);

}  // namespace sdm
