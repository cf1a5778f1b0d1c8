// What a module must pass once the driver has loaded it: the kernel asked for resolves
// (resolve_kernel; that the image defines every other kernel listed was checked from its own
// entry points, without the driver), and the image policy (image_policy.hpp), then each loaded
// plugin, accept what the driver says it compiled from (validate_module). A module that fails
// either is unloaded by its caller (Modules::load) and not served.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/platform/driver.hpp"
#include "runtime/jit/jit_backend.hpp"
#include "runtime/kernel/kernel_attributes.hpp"
#include "runtime/select/image_policy.hpp"
#include "runtime/kernel/module_slot.hpp"
#include "runtime/select/layering.hpp"
#include "runtime/device/load_context.hpp"
#include "runtime/select/plugins.hpp"
#include "common/result.hpp"

namespace sdm::runtime {

// What the checks are given: the devices (through the load context, which the kernels' launchers
// keep too), the image policy, the plugins, and the owner the handles answer to (opaque here: the
// runtime, which the C ABI reaches a kernel's through).
struct CheckRooms {
    LoadContext& load;
    ImagePolicy& image_policy;
    Plugins& plugins;
    const KernelSettings& settings;  // what hosts set on kernels, given to each function resolved
    void* owner{nullptr};
};

// Where a loaded image's kernels come from: its library (a CUkernel each, then the function in
// `context`, which is current), or its module in `context`.
struct LoadedCode {
    CUmodule module{nullptr};
    CUlibrary library{nullptr};
    CUcontext context{nullptr};
};

// The handle of kernel `listed` of `served`'s module, loaded as `code` from an image of `source`,
// for `slot`; null when the image lacks the kernel. A function the driver fails to make in the
// context (the library's load into it), or that refuses a setting recorded for its name, is an error.
Result<std::unique_ptr<KernelHandle>> resolve_kernel(const CheckRooms& rooms, Driver& driver, const LoadedCode& code, const ServedBy& served, ModuleSlot& slot,
                                                     int32_t ordinal, ImageSource source, const archive::ManifestIndex::Kernel& listed);

// The verdicts on the loaded module, read through one of its kernels (`any`).
Result<void> validate_module(const CheckRooms& rooms, Driver& driver, const ServedBy& served, const KernelHandle& any, int32_t ordinal);

}  // namespace sdm::runtime
