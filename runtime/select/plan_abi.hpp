// sdm_plan (sdm.h) and the runtime's Plan, both ways, for every caller that crosses the C ABI with
// a plan: sdm_plan_select, sdm_plan_for_elements, sdm_launch (capi/) and the plan-provider plugins
// (plugins.cpp). A struct is read and written only within its struct_size, and zero fields read as
// their defaults (ABI 1.3): a cluster dimension, grid y/z and block y/z of 0 are 1.
#pragma once

#include <vector>

#include <cuda.h>

#include "plan.hpp"
#include "common/result.hpp"
#include "sdm/sdm.h"

namespace sdm::runtime {

// `in`, read within in.struct_size (at least ABI 1.1's size, capi/struct_sizes.hpp: the caller
// checked it).
Plan plan_from_abi(const sdm_plan& in);
// Writes `p` (and the driver's `occupancy`) into `out` within out.struct_size; its struct_size and
// `next` are left as the caller set them.
void plan_to_abi(const Plan& p, int32_t occupancy, sdm_plan& out);
// The attributes of the sdm_launch_attributes on `in`'s chain (unknown types skipped), in order.
// A chain of more than 64 links (a cycle), a struct too small, or more than
// kMaxExtraLaunchAttributes in all is ErrorCode::invalid_argument.
Result<std::vector<CUlaunchAttribute>> launch_attributes(const sdm_plan& in);

}  // namespace sdm::runtime
