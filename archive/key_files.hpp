// Key files (docs/SIGNING.md): public and secret Ed25519 keys as one line of text each.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/crypto.hpp"
#include "common/result.hpp"

namespace sdm::archive {

// Key files (docs/SIGNING.md): one line of text each, "sdm-ed25519-public <64 hex digits>" and
// "sdm-ed25519-secret <128 hex digits>". Read as regular files of at most 4 KiB; the error names
// the file and what is wrong with it. A secret key file must not be readable by group or others.
Result<crypto::PublicKey> read_public_key(const std::string& path);
Result<crypto::SecretKey> read_secret_key(const std::string& path);
std::string public_key_text(const crypto::PublicKey& key);
std::string secret_key_text(const crypto::SecretKey& key);
// The key in a key file's text (public or secret, for tests and in-memory keys).
Result<crypto::PublicKey> parse_public_key(std::string_view text, const std::string& what);

}  // namespace sdm::archive
