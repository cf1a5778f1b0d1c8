// What a hot reload may not change under a host (docs/LOADING.md, "Reload"): the contract of the
// archive it replaces. By default a new version of an archive file must keep its kernel ABI
// semver-compatible (the same major, a minor no lower) and every kernel the host has fetched from
// the old version with the same parameter signature. A version that breaks it is refused like a
// damaged file: the old version keeps serving, and the error (ErrorCode::mismatch) names the
// kernel and both signatures, or both kernel ABI versions. SDM_RUNTIME_RELOAD_ANY_CONTRACT turns
// the check off.
#pragma once

#include <string>
#include <vector>

#include "common/result.hpp"

namespace sdm::runtime {

struct MountedArchive;

// A kernel resolved from a loaded module of the old version: what a host holds a handle of.
struct FetchedKernel {
    std::string name;
    std::string module;
    std::string signature;
};

Result<void> check_reload_contract(const MountedArchive& old, const MountedArchive& fresh, const std::vector<FetchedKernel>& fetched);

}  // namespace sdm::runtime
