// Preloading (sdm_preload): the modules of the kernels named (every listed kernel when none is)
// loaded ahead of their first fetch, on one thread per core, one representative kernel per
// module. A worker has no C ABI frame above it to turn an exception into a status: it catches its
// own, so nothing it meets ends the process; the first error (by completion) is the call's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.hpp"

namespace sdm::runtime {

class ArchiveSet;
class LoadContext;
class Modules;

Result<void> preload(Modules& modules, const ArchiveSet& archives, LoadContext& load, int32_t ordinal, const std::vector<std::string>& names);

}  // namespace sdm::runtime
