// One archive a runtime mounted: the archive, its manifest indexed in place, and what the loads
// keep beside it (decoded prefix bases, the kernel-name index, the images decoded ahead).
#pragma once

#include <memory>
#include <mutex>
#include <optional>

#include "archive/archive.hpp"
#include "archive/manifest.hpp"
#include "common/bytes.hpp"
#include "common/hash.hpp"
#include "kernel_name_index.hpp"
#include "readahead.hpp"
#include "reference_memo.hpp"

namespace sdm::runtime {

// An archive's identity (archive/identity.hpp), computed at its first need: an overlay's mount.
struct IdentityOnce {
    std::once_flag once;
    Hash128 value;
};

struct MountedArchive {
    archive::Archive archive;
    std::optional<archive::ManifestIndex> manifest;  // views into the archive's mapping, or into manifest_bytes
    bool embedded{false};
    std::shared_ptr<const ByteVector> owned;  // bytes copied from the host, when mounted from memory
    ByteVector manifest_bytes;                // a compressed manifest, decoded (a stored one is viewed in place)
    std::shared_ptr<ReferenceMemo> references{std::make_shared<ReferenceMemo>()};  // decoded prefix bases, for the loads
    // Its kernels' C++ spellings, built on first need (kernel_names.hpp).
    std::shared_ptr<KernelNamesOnce> names{std::make_shared<KernelNamesOnce>()};
    std::shared_ptr<IdentityOnce> identity_once{std::make_shared<IdentityOnce>()};
    // Images decoded ahead of their loads (readahead.hpp). Last: its workers stop before the
    // archive they read goes.
    std::unique_ptr<Readahead, ReadaheadDeleter> readahead{new Readahead()};
    // Whether the archive's kernels follow the SDM hardware matrix (its manifest says so).
    bool follows_matrix() const noexcept { return manifest && manifest->hardware_matrix; }
    const Hash128& identity() const;
};

}  // namespace sdm::runtime
