// Image selection (docs/LOADING.md, "Which image"): a pure function of the images a module holds and
// the device's capability and class, so every row of the hardware matrix is tested without a GPU.
// For a device of capability X.Y, in order:
//   1. a cubin for exactly X.Y (the `a` one first; an `a` cubin only ever on exactly X.Y);
//   2. an `f` cubin of the same family with minor <= Y; then a base cubin of the same major with
//      minor <= Y, highest first;
//   3. PTX, then LTO-IR, with the highest virtual arch <= X.Y (same rules for `a` and `f`), to be
//      linked for sm_XY;
//   4. a fatbin, inside which sdm chooses by these same rules (image_source.cpp): the driver only
//      ever gets one of its cubins;
//   else ErrorCode::no_image, listing what the module holds and what the device is.
// On a `modern` device, step 2 and 3 candidates older than the class (below compute_90) are not
// eligible: their arch guards compile the portable path, which the modern plans do not expect.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/hardware_matrix.hpp"
#include "archive/format.hpp"
#include "common/result.hpp"

namespace sdm::runtime {

struct ImageCandidate {
    size_t index{0};  // the caller's handle (an archive entry index)
    archive::Kind kind{archive::Kind::cubin};
    uint16_t sm{0};
    archive::Variant variant{archive::Variant::base};
};

enum class SelectionPath : int { cubin = 1, jit = 2, fatbin = 3 };

struct Selection {
    ImageCandidate image;
    SelectionPath path{SelectionPath::cubin};
    uint16_t target_sm{0};                                     // what to link for (jit)
    archive::Variant target_variant{archive::Variant::base};   // sm_90a when the PTX is compute_90a
    std::string reason;                                        // "exact cubin", "family cubin", ...
};

struct SelectionDevice {
    Capability capability;
    std::optional<DeviceClass> device_class;  // nullopt: outside the hardware matrix (no class rule applies)
    std::string description;  // "device 0 (NVIDIA H200, compute capability 9.0, class modern)"
};

// Whether an image compiled for (sm, variant) can run on capability `cc` at all, as the driver
// decides: the same major; minor <= the device's; `a` only on exactly that capability.
bool runs_on(uint16_t sm, archive::Variant variant, Capability cc);

// The CUDA driver's own switches, which change what it does with an image; sdm honours them the
// same way (read from the environment at each load, like the driver reads them at cuInit).
//   CUDA_FORCE_PTX_JIT=1: cubins are not used; the PTX path is taken (inside a fatbin too).
//   CUDA_DISABLE_PTX_JIT=1: no PTX goes to the driver's JIT (sdm's own nvJitLink still may link).
struct DriverSwitches {
    bool force_ptx_jit{false};
    bool disable_ptx_jit{false};
    static DriverSwitches from_environment();
    std::string text() const;  // "CUDA_FORCE_PTX_JIT=1, CUDA_DISABLE_PTX_JIT=0"
    bool operator==(const DriverSwitches&) const = default;
};

// `module` and `where` (the archive) name the module in the no-image message.
Result<Selection> select_image(const std::vector<ImageCandidate>& images, const SelectionDevice& device, const std::string& module,
                               const std::string& where, const DriverSwitches& switches = {});

}  // namespace sdm::runtime
