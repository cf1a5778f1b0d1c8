// The cryptography of signed archives and of the cache's MACs (docs/SIGNING.md), over libsodium:
// BLAKE2b digests, Ed25519 keys and signatures, keyed BLAKE2b MACs, random bytes. Built without
// libsodium (-Dsigning=disabled, or libsodium-dev absent), available() is false and every other
// call answers ErrorCode::unsupported naming the build option; nothing else changes.
#pragma once

#include <array>
#include <cstdint>
#include <memory>

#include "bytes.hpp"
#include "result.hpp"

namespace sdm::crypto {

using Digest = std::array<uint8_t, 32>;      // BLAKE2b-256
using PublicKey = std::array<uint8_t, 32>;   // Ed25519
using SecretKey = std::array<uint8_t, 64>;   // Ed25519, libsodium's layout: seed then public key
using Signature = std::array<uint8_t, 64>;   // Ed25519
using MacKey = std::array<uint8_t, 32>;
using Mac = std::array<uint8_t, 16>;         // keyed BLAKE2b-128

// Whether this build has libsodium.
bool available() noexcept;
// "this sdm was built without libsodium (-Dsigning): ..." for `what`, as ErrorCode::unsupported.
Error unsupported(const std::string& what);

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
    Digest digest() noexcept;                  // unkeyed only; once
    Mac mac() noexcept;                        // keyed only; once

private:
    struct State;
    std::unique_ptr<State> state_;
};

Result<Digest> blake2b(Bytes data);

struct KeyPair {
    PublicKey public_key{};
    SecretKey secret_key{};
};
Result<KeyPair> generate_key_pair();
Result<Signature> sign(const SecretKey& key, Bytes message);
// False for a bad signature (and for a public key that is not a valid point).
bool verify(const PublicKey& key, Bytes message, const Signature& signature) noexcept;
// The public half of a secret key, and whether the secret key's two halves agree.
PublicKey public_half(const SecretKey& key) noexcept;
bool consistent(const SecretKey& key) noexcept;
Result<void> random_bytes(std::span<uint8_t> out);
// Constant-time comparison.
bool equal(std::span<const uint8_t> a, std::span<const uint8_t> b) noexcept;

}  // namespace sdm::crypto
