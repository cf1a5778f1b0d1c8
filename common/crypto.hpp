// The cryptography of signed archives and of the cache's MACs (docs/SIGNING.md), over libsodium:
// Ed25519 keys and signatures, random bytes (BLAKE2b, which every build has, is digest.hpp's).
// Built with -Dsigning=disabled, available() is false and every call here answers
// ErrorCode::unsupported naming the build option; nothing else changes.
#pragma once

#include <array>
#include <cstdint>
#include <memory>

#include "bytes.hpp"
#include "digest.hpp"
#include "result.hpp"

namespace sdm::crypto {

using PublicKey = std::array<uint8_t, 32>;   // Ed25519
using SecretKey = std::array<uint8_t, 64>;   // Ed25519, libsodium's layout: seed then public key
using Signature = std::array<uint8_t, 64>;   // Ed25519

// Whether this build signs and verifies (-Dsigning).
bool available() noexcept;
// "this sdm was built without signing (-Dsigning): ..." for `what`, as ErrorCode::unsupported.
Error unsupported(const std::string& what);

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
