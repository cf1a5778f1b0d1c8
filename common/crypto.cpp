#include "crypto.hpp"

#include <sodium.h>

namespace sdm::crypto {
namespace {

// sodium_init is thread-safe and idempotent; once is enough.
bool ready() noexcept {
    static const bool ok = sodium_init() >= 0;
    return ok;
}

Error not_ready() { return make_error(ErrorCode::internal, "libsodium failed to initialise (sodium_init)"); }

}  // namespace

bool available() noexcept { return ready(); }

Error unsupported(const std::string& what) { return make_error(ErrorCode::unsupported, what + ": libsodium failed to initialise"); }

Result<KeyPair> generate_key_pair() {
    if (!ready()) return not_ready();
    KeyPair pair;
    crypto_sign_ed25519_keypair(pair.public_key.data(), pair.secret_key.data());
    return pair;
}

Result<Signature> sign(const SecretKey& key, Bytes message) {
    if (!ready()) return not_ready();
    Signature s{};
    crypto_sign_ed25519_detached(s.data(), nullptr, reinterpret_cast<const unsigned char*>(message.data()), message.size(), key.data());
    return s;
}

bool verify(const PublicKey& key, Bytes message, const Signature& signature) noexcept {
    if (!ready()) return false;
    return crypto_sign_ed25519_verify_detached(signature.data(), reinterpret_cast<const unsigned char*>(message.data()), message.size(), key.data()) == 0;
}

PublicKey public_half(const SecretKey& key) noexcept {
    PublicKey p{};
    crypto_sign_ed25519_sk_to_pk(p.data(), key.data());
    return p;
}

bool consistent(const SecretKey& key) noexcept {
    if (!ready()) return false;
    // The public key libsodium stores in the second half must be the one the seed derives.
    unsigned char seed[crypto_sign_ed25519_SEEDBYTES];
    crypto_sign_ed25519_sk_to_seed(seed, key.data());
    PublicKey derived{};
    SecretKey again{};
    crypto_sign_ed25519_seed_keypair(derived.data(), again.data(), seed);
    sodium_memzero(seed, sizeof seed);
    const bool same = sodium_memcmp(again.data(), key.data(), key.size()) == 0;
    sodium_memzero(again.data(), again.size());
    return same;
}

Result<void> random_bytes(std::span<uint8_t> out) {
    if (!ready()) return not_ready();
    randombytes_buf(out.data(), out.size());
    return {};
}

bool equal(std::span<const uint8_t> a, std::span<const uint8_t> b) noexcept {
    return a.size() == b.size() && sodium_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace sdm::crypto
