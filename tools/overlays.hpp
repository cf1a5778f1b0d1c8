// sdm pull --for-devices: the overlays of a pulled base that hold cubins for this machine's GPUs
// (docs/REGISTRY.md, "Overlays for the node's GPUs"). The referrers index is a mutable tag anyone
// who may push to the repository can rewrite, so it is a list of candidates, never a grant: an
// overlay is installed only when it is pinned (its manifest digest given with --overlay or
// recorded by `sdm lock --overlays`), or when its archive carries a valid signature by a key the
// host trusts. At most one overlay per GPU target; each must name the installed base as its
// subject and in its header, and hold a cubin for the target it was chosen for.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "common/result.hpp"
#include "install_check.hpp"
#include "lock_file.hpp"
#include "oci/reference.hpp"
#include "oci/registry.hpp"
#include "pull_artifact.hpp"

namespace sdm::tools {

// The referrers an index may list for sdm to consider; an index that lists more is refused.
inline constexpr size_t kMaxReferrers = 256;
// Signed candidates tried per GPU target before sdm gives up on that target (each costs a download).
inline constexpr size_t kMaxOverlayAttempts = 3;

// Installs the overlays of `base` (pulled from `ref`) for this machine's GPUs: the `pinned`
// manifest digests when there are any, else the signed candidates of the referrers index.
// Returns how many were installed.
Result<size_t> pull_overlays(const PullOptions& o, const oci::Reference& ref, const Pulled& base, const std::vector<std::string>& pinned,
                             InstallCheck& install_check);

// For `sdm lock --overlays`: every sdm referrer the index of `base_digest` lists, each checked by
// its own manifest (fetched by digest: a referrer of that base), at most one per target.
Result<std::vector<LockedOverlay>> listed_overlays(oci::Registry& registry, const std::string& base_digest, const std::string& label);

}  // namespace sdm::tools
