#include "sha256.hpp"

namespace sdm::tools::oci {

std::string Sha256::finish() {
    unsigned char out[crypto_hash_sha256_BYTES];
    crypto_hash_sha256_final(&state_, out);
    char hex[2 * crypto_hash_sha256_BYTES + 1];
    sodium_bin2hex(hex, sizeof hex, out, sizeof out);
    return std::string("sha256:") + hex;
}

std::string sha256_digest(Bytes bytes) {
    Sha256 h;
    h.update(bytes);
    return h.finish();
}

}  // namespace sdm::tools::oci
