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

// An XXH3 streaming state (both widths use the same one), owned; the hashers below wrap it.
class Xxh3State {
public:
    Xxh3State(const Xxh3State&) = delete;
    Xxh3State& operator=(const Xxh3State&) = delete;

protected:
    Xxh3State();  // throws std::bad_alloc
    ~Xxh3State();
    void* state_;
};

// Streaming XXH3-64: the same digest as xxh3_64 over the concatenation of the updates (for bytes
// hashed as they arrive, while they are still in the CPU's cache).
class Hasher64 : private Xxh3State {
public:
    Hasher64();
    void update(Bytes data) noexcept;
    uint64_t digest() const noexcept;
};

// Streaming XXH3-128 over several fields; the cache's identity hashes use it with length-prefixed
// fields so that ("ab","c") and ("a","bc") never collide by construction.
class Hasher128 : private Xxh3State {
public:
    Hasher128();
    void update(Bytes data) noexcept;
    void field(Bytes data) noexcept;  // u64 length, then the bytes
    void field(std::string_view text) noexcept { field(as_bytes(text)); }
    void field(uint64_t value) noexcept;
    Hash128 digest() const noexcept;
};

}  // namespace sdm
