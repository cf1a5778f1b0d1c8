// What a module must pass once the driver has loaded it: every kernel the manifest lists for it
// resolves (resolve_kernels), and the image policy (image_policy.hpp), then each loaded plugin,
// accept what the driver says it compiled from (validate_module). A module that fails either is
// unloaded by its caller (Modules::load) and not served.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "driver.hpp"
#include "jit_backend.hpp"
#include "layering.hpp"
#include "modules.hpp"
#include "result.hpp"

namespace sdm::runtime {

class Runtime;

struct ResolvedKernels {
    std::vector<std::unique_ptr<KernelHandle>> handles;
    std::string missing;  // "a, b": kernels the manifest lists that the module does not define
};

// Where a loaded image's kernels come from: its library (a CUkernel each, then the function in
// `context`, which is current), or its module in `context`.
struct LoadedCode {
    CUmodule module{nullptr};
    CUlibrary library{nullptr};
    CUcontext context{nullptr};
};

// The handles of `served`'s module, loaded as `code` from an image of `source`, for `slot`. A
// kernel the image lacks is listed in `missing`; a function the driver fails to make in the
// context (the library's load into it) is an error.
Result<ResolvedKernels> resolve_kernels(Runtime& runtime, Driver& driver, const LoadedCode& code, const ServedBy& served, ModuleSlot& slot, int32_t ordinal,
                                        ImageSource source);

// The verdicts on the loaded module, read through one of its kernels (`any`).
Result<void> validate_module(Runtime& runtime, Driver& driver, const ServedBy& served, const KernelHandle& any, int32_t ordinal);

}  // namespace sdm::runtime
