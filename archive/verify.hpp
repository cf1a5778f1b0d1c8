// Deep verification, as `sdm verify` does it: every checksum (Archive::verify), and every entry
// parsed as what the index says it is (images against their declared targets, the manifest
// decoded, every kernel's module present).
#pragma once

#include "archive.hpp"
#include "common/result.hpp"

namespace sdm::archive {

Result<void> verify_archive(const Archive& archive);

}  // namespace sdm::archive
