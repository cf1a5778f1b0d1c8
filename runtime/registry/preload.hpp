// Preloading (sdm_preload): the modules of the kernels named (every listed kernel when none is)
// loaded ahead of their first fetch, on one thread per core, one representative kernel per
// module. A worker has no C ABI frame above it to turn an exception into a status: it catches its
// own, so nothing it meets ends the process; the first error (by completion) is the call's.
// Its steps are the background warm-up's too (warmup.hpp): the modules listed, one loaded, the
// failures told.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <cuda.h>

#include "common/result.hpp"

namespace sdm::runtime {

class ArchiveSet;
class LoadContext;
class Modules;

Result<void> preload(Modules& modules, const ArchiveSet& archives, LoadContext& load, int32_t ordinal, const std::vector<std::string>& names);

// The context a preload of device `ordinal` loads into: the calling thread's when fetches follow
// it (the workers have none current), else null (the device's).
Result<CUcontext> preload_context(LoadContext& load, int32_t ordinal);

// What failed of a preload: every kernel that did not preload, and the first failure.
struct PreloadFailures {
    std::vector<std::string> failed;
    std::optional<Error> first;
    void record(const std::string& name, Error e);
    // The first failure's code and text, then how many kernels did not preload and which; nothing
    // when none failed.
    std::optional<Error> summary() const;
};

// The modules to load for `names` (every kernel the mounted archives list when empty) on device
// `ordinal`: one representative kernel each, in order. A name that selects nothing goes to
// `failures`.
std::vector<std::string> preload_work(const ArchiveSet& archives, LoadContext& load, int32_t ordinal, const std::vector<std::string>& names,
                                      PreloadFailures& failures);

// Loads the module of kernel `name` with every kernel it lists resolved (Modules::load_all); any
// exception is an error naming the kernel, so a thread of sdm's may call it.
Result<void> preload_module(Modules& modules, int32_t ordinal, const std::string& name, CUcontext context) noexcept;

}  // namespace sdm::runtime
