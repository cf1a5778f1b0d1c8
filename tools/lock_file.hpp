// sdm.lock: which manifest digest each reference resolves to, as `sdm lock` wrote it and `sdm pull
// --locked` honours it (docs/REGISTRY.md, "Lock file"). JSON: {"lock_version": 1, "archives":
// [{"reference": "reg/repo:tag", "digest": "sha256:...", "content_version": "...", "overlays":
// [{"digest": "sha256:...", "targets": "sm_90"}]}]}, sorted by reference, written atomically.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/result.hpp"

namespace sdm::tools {

// An overlay pinned with its base (sdm lock --overlays): the manifest digest of a referrer and
// the targets its annotation named when it was locked.
struct LockedOverlay {
    std::string digest;
    std::string targets;
};

struct LockEntry {
    std::string reference;        // registry/repository:tag, as parse_reference writes it back
    std::string digest;           // the manifest's sha256
    std::string content_version;  // its org.opencontainers.image.version annotation, or empty
    std::optional<uint64_t> archive_version;  // its io.sdm.archive-version annotation (format 1.2), when it has one
    std::vector<LockedOverlay> overlays;      // the overlays pinned with it (`sdm pull --locked --for-devices` installs only these)
};

struct LockFile {
    std::vector<LockEntry> entries;

    // The entry of `reference` (registry/repository:tag), or null.
    const LockEntry* find(const std::string& reference) const;
    // Adds `entry`, replacing the one of the same reference.
    void set(LockEntry entry);
};

// A missing file is an empty lock when `missing_ok`; anything that does not parse, or holds a
// reference or digest that does not, is an error naming the file.
Result<LockFile> read_lock_file(const std::string& path, bool missing_ok);
Result<void> write_lock_file(const std::string& path, const LockFile& lock);

}  // namespace sdm::tools
