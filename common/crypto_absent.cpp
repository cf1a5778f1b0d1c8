// crypto.hpp for a build without signing (-Dsigning=disabled): every call answers
// ErrorCode::unsupported, and nothing signs or verifies (BLAKE2b, digest.hpp, is in every build).
#include "crypto.hpp"

namespace sdm::crypto {
namespace {
constexpr const char* kWhy = "this sdm was built without signing (Meson option -Dsigning=disabled), so it cannot sign or verify archives";
}

bool available() noexcept { return false; }

Error unsupported(const std::string& what) { return make_error(ErrorCode::unsupported, what + ": " + kWhy); }

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
