// XXH3 digests used by the format and the cache. 128-bit digests serialize high half first, so
// their hex text reads like xxhsum's.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "bytes.hpp"

namespace sdm {

struct Hash128 {
    uint64_t high{0};
    uint64_t low{0};
    bool operator==(const Hash128&) const = default;
    auto operator<=>(const Hash128&) const = default;
    std::string hex() const;
};

uint64_t xxh3_64(Bytes data) noexcept;
Hash128 xxh3_128(Bytes data) noexcept;
Hash128 load_hash128(Bytes b, size_t at);
void store_hash128(std::span<std::byte> b, size_t at, const Hash128& h);

// Streaming XXH3-64: the same digest as xxh3_64 over the concatenation of the updates (for bytes
// hashed as they arrive, while they are still in the CPU's cache).
class Hasher64 {
public:
    Hasher64();
    ~Hasher64();
    Hasher64(const Hasher64&) = delete;
    Hasher64& operator=(const Hasher64&) = delete;
    void update(Bytes data) noexcept;
    uint64_t digest() const noexcept;

private:
    void* state_;
};

// Streaming XXH3-128 over several fields; the cache's identity hashes use it with length-prefixed
// fields so that ("ab","c") and ("a","bc") never collide by construction.
class Hasher128 {
public:
    Hasher128();
    ~Hasher128();
    Hasher128(const Hasher128&) = delete;
    Hasher128& operator=(const Hasher128&) = delete;
    void update(Bytes data) noexcept;
    void field(Bytes data) noexcept;  // u64 length, then the bytes
    void field(std::string_view text) noexcept { field(as_bytes(text)); }
    void field(uint64_t value) noexcept;
    Hash128 digest() const noexcept;

private:
    void* state_;
};

}  // namespace sdm
