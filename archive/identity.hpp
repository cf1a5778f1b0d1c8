// An archive's identity: what an overlay (sdm jit) records of the archive it was built from, and
// what the runtime compares before it lets the overlay serve above an archive (docs/FORMAT.md,
// section 20). XXH3-128 over the header (its size, checksum and signed bit read as zero, so that
// signing the archive keeps its identity) and the index with the names: every entry's raw and
// stored checksums are in the index, so any change of content changes it. It costs one pass over
// the metadata, never over the payloads. It guards against an overlay left behind by an update
// of its base, not against an author: a signature says who made an archive.
#pragma once

#include <string>

#include "common/hash.hpp"

namespace sdm::archive {

class Archive;

Hash128 identity(const Archive& archive);
// "xxh3-128:" and the 32 hex digits, as listings and messages print it.
std::string identity_text(const Hash128& identity);

}  // namespace sdm::archive
