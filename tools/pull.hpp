// What sdm pull's parts share (pull.cpp, overlays.cpp): one artifact pulled by reference into a
// staged file beside its target, checked, and only then renamed into place (docs/REGISTRY.md, "Pull").
#pragma once

#include <cstdint>
#include <functional>
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
};

// A check of the staged archive of its own, after the install check and before the rename.
using StagedCheck = std::function<Result<void>(const archive::Archive&)>;

// The artifact `ref` names, installed at -o, else INTO/REPOSITORY-NAME.sdma, once its size, digest,
// `install_check` and `extra` held; any failure leaves the target as it was.
Result<Pulled> pull_artifact(const PullOptions& o, const oci::Reference& ref, InstallCheck& install_check, const StagedCheck& extra = {});

}  // namespace sdm::tools
