// The index `sdm push --per-target` stores at a tag (docs/REGISTRY.md, "Per-target pulls"): an
// OCI image index of artifactType sdm's archive listing the whole archive's manifest (annotated
// io.sdm.part-target=all) and one manifest per GPU target (io.sdm.part-target=sm_90), each entry
// an sdm artifact manifest (artifact.hpp). Written canonically for push; read back with every
// entry checked (at most kMaxIndexEntries of them) for pull and lock.
#pragma once

#include <cstddef>
#include <map>
#include <string>

#include "artifact.hpp"
#include "common/bytes.hpp"
#include "common/result.hpp"

namespace sdm::tools::oci {

// Each entry's annotation naming what it holds: kWholeArchive, or the GPU target sm_XY of a part.
inline constexpr const char* kPartTargetAnnotation = "io.sdm.part-target";
inline constexpr const char* kWholeArchive = "all";
// The most entries an index may list: the whole archive and a part per target (CUDA 13.0's
// `nvcc --list-gpu-arch` names 12, compute_75 to compute_121); a longer index is refused before any
// entry is looked at.
inline constexpr size_t kMaxIndexEntries = 64;

struct ArchiveIndex {
    Descriptor whole;                           // the whole archive's manifest
    std::map<std::string, Descriptor> parts;    // by target: "sm_90" -> its manifest
    std::map<std::string, std::string> annotations;  // the whole archive's (the lock reads its versions)
};

// The index's bytes: canonical (keys sorted, no spaces); the whole archive listed first.
std::string archive_index_json(const ArchiveIndex& index);
// Whether `bytes` (a registry's answer) is an OCI image index rather than a manifest: its mediaType says so.
bool is_image_index(Bytes bytes);
// Reads and checks an index a registry answered for `what` (a reference, for messages): its
// mediaType and artifactType; at most kMaxIndexEntries entries; each an sdm artifact manifest
// (mediaType, artifactType) with a sha256 digest, a size of 1 byte to kMaxManifestBytes and a
// part-target annotation that is "all" (exactly one entry) or sm_XY (each target once).
Result<ArchiveIndex> parse_archive_index(Bytes bytes, const std::string& what);

}  // namespace sdm::tools::oci
