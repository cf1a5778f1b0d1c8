// One artifact pulled by reference into a staged file beside its target, checked, and only then
// renamed into place (docs/REGISTRY.md, "Pull"): what sdm pull (pull.cpp) and its overlays (overlays.cpp) share.
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <string>

#include "archive/archive.hpp"
#include "commands.hpp"
#include "common/result.hpp"
#include "install_check.hpp"
#include "oci/reference.hpp"

namespace sdm::tools {

struct Pulled {
    std::string target;  // the installed file
    std::string digest;  // the manifest's
    uint64_t size{0};
    uint64_t transferred{0};  // the manifests' (and index's) bytes and the layer's
    std::string from_index;   // through an index of sdm push --per-target: what was chosen from it, for the output
};

// A check of the staged archive of its own, after the install check and before the rename.
using StagedCheck = std::function<Result<void>(const archive::Archive&)>;

// The artifact `ref` names, installed at -o, else INTO/REPOSITORY-NAME.sdma, once its size, digest,
// `install_check` and `extra` held; any failure leaves the target as it was.
// Through an index of sdm push --per-target: the whole archive, or with --for-devices the part for
// this machine's one GPU target (docs/REGISTRY.md, "Per-target pulls").
Result<Pulled> pull_artifact(const PullOptions& o, const oci::Reference& ref, InstallCheck& install_check, const StagedCheck& extra = {});

// The cubin targets of this machine's GPUs ("sm_90"), as a host's runtime sees them (--driver).
Result<std::set<std::string>> device_targets(const PullOptions& o);

}  // namespace sdm::tools
