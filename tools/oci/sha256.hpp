// SHA-256, the digest OCI registries name content by, over libsodium's streaming API (libsodium is
// already every build's dependency: common/digest.hpp). Fed as bytes arrive, so a blob is checked
// while it is written, never held whole in memory.
#pragma once

#include <sodium.h>

#include <string>

#include "common/bytes.hpp"

namespace sdm::tools::oci {

class Sha256 {
public:
    Sha256() noexcept { crypto_hash_sha256_init(&state_); }
    void update(Bytes bytes) noexcept { crypto_hash_sha256_update(&state_, reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size()); }
    // "sha256:<64 lower-case hex>"; the state is spent afterwards.
    std::string finish();

private:
    crypto_hash_sha256_state state_{};
};

// The OCI digest of `bytes`: "sha256:<hex>".
std::string sha256_digest(Bytes bytes);

}  // namespace sdm::tools::oci
