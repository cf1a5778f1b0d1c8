// crypto.hpp for a build without libsodium (-Dsigning=disabled, or libsodium-dev absent): every
// call answers ErrorCode::unsupported, and nothing signs or verifies.
#include "crypto.hpp"

namespace sdm::crypto {
namespace {
constexpr const char* kWhy = "this sdm was built without libsodium (Meson option -Dsigning; Debian: libsodium-dev), so it cannot sign or verify archives";
}

bool available() noexcept { return false; }

Error unsupported(const std::string& what) { return make_error(ErrorCode::unsupported, what + ": " + kWhy); }

struct Blake2b::State {};
Blake2b::Blake2b() = default;
Blake2b::Blake2b(const MacKey&) {}
Blake2b::~Blake2b() = default;
void Blake2b::update(Bytes) noexcept {}
void Blake2b::update_u64(uint64_t) noexcept {}
Digest Blake2b::digest() noexcept { return {}; }
Mac Blake2b::mac() noexcept { return {}; }

Result<Digest> blake2b(Bytes) { return unsupported("BLAKE2b"); }
Result<KeyPair> generate_key_pair() { return unsupported("generating a key"); }
Result<Signature> sign(const SecretKey&, Bytes) { return unsupported("signing"); }
bool verify(const PublicKey&, Bytes, const Signature&) noexcept { return false; }
PublicKey public_half(const SecretKey&) noexcept { return {}; }
bool consistent(const SecretKey&) noexcept { return false; }
Result<void> random_bytes(std::span<uint8_t>) { return unsupported("random bytes"); }
bool equal(std::span<const uint8_t> a, std::span<const uint8_t> b) noexcept {
    if (a.size() != b.size()) return false;
    uint8_t d = 0;
    for (size_t i = 0; i < a.size(); ++i) d |= a[i] ^ b[i];
    return d == 0;
}

}  // namespace sdm::crypto
