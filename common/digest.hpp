// BLAKE2b over libsodium, in every build: what identifies bytes where an attacker may have chosen
// them (the cache's keys, the content of archive entries, sdm diff) and what signatures cover.
// XXH3 (hash.hpp) only catches corruption: second preimages for XXH3-64 and XXH3-128 at once
// cost milliseconds (tests/xxh3_preimage.hpp makes them).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>

#include "bytes.hpp"
#include "hash.hpp"
#include "result.hpp"

namespace sdm::crypto {

using Digest = std::array<uint8_t, 32>;  // BLAKE2b-256
using MacKey = std::array<uint8_t, 32>;
using Mac = std::array<uint8_t, 16>;     // keyed BLAKE2b-128

// Incremental BLAKE2b-256 (unkeyed), or keyed BLAKE2b-128 when given a key (a MAC).
class Blake2b {
public:
    Blake2b();
    explicit Blake2b(const MacKey& key);
    Blake2b(const Blake2b&) = delete;
    Blake2b& operator=(const Blake2b&) = delete;
    ~Blake2b();
    void update(Bytes data) noexcept;
    void update_u64(uint64_t value) noexcept;  // eight little-endian bytes
    // A length-prefixed field: ("ab", "c") and ("a", "bc") never hash alike by construction.
    void field(Bytes data) noexcept;
    void field(std::string_view text) noexcept { field(as_bytes(text)); }
    Digest digest() noexcept;                  // unkeyed only; once
    Mac mac() noexcept;                        // keyed only; once

private:
    struct State;
    std::unique_ptr<State> state_;
};

Result<Digest> blake2b(Bytes data);
// The first 128 bits of a digest, as the cache's keys hold them (collision resistance 2^64).
Hash128 truncated(const Digest& digest) noexcept;
std::string digest_hex(const Digest& digest);

}  // namespace sdm::crypto
