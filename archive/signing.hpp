// Signing an archive (docs/SIGNING.md, `sdm sign`): a signature block added, or a signature added
// to the one there; the payloads do not move.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/bytes.hpp"
#include "common/crypto.hpp"
#include "common/result.hpp"

namespace sdm::archive {

// Adds a signature by `key` to the archive in `bytes` (replacing one by the same key); a block
// there already must match the contents (its digest table and digest are computed again). The
// payloads do not move: the header (archive_size, optional_features, header_hash) and the block
// change.
Result<ByteVector> sign_archive(Bytes bytes, const std::string& label, const crypto::SecretKey& key);

}  // namespace sdm::archive
