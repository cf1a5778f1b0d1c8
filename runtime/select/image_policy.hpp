// Image validation (docs/LOADING.md, "The image policy"; the seed's _image.py), after every load.
// On a `modern` device the loaded image must be a modern pass: the driver's
// CU_FUNC_ATTRIBUTE_PTX_VERSION of a kernel of the module is 90, 100 or 103. Anything else (an
// sm_90 cubin compiled from compute_80, PTX for an older arch) would run the kernels' portable path,
// which the modern plans do not expect: the load is refused (ErrorCode::image_refused) with a
// message naming the image, the device and the fix. Nothing retries a refusal with another image.
// Success is memoized per (device, forced row, image identity, driver switches); refusals never;
// while plan plugins are loaded their image verdicts are asked at every load, memo or not.
// On an `rtx` device the first check logs one "untested hardware" warning per process and device (a
// forced row reads as another device), whichever runtime loads first: as the seed, not per runtime.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <tuple>

#include "common/hardware_matrix.hpp"
#include "runtime/platform/forced_matrix_row.hpp"
#include "runtime/platform/log.hpp"
#include "common/result.hpp"
#include "image_selection.hpp"

namespace sdm::runtime {

struct LoadedImageFacts {
    int32_t ordinal{0};
    DeviceClass device_class{DeviceClass::modern};
    std::string identity;     // what makes the loaded bytes these bytes (content hash, JIT target)
    std::string description;  // "cubin kernels, sm_90 (entry 3) of archive k.sdma (module kernels)"
    std::string device;       // "device 0 (NVIDIA H200, compute capability 9.0, class modern)"
    std::string device_name;  // "NVIDIA H200"
    Capability capability;
    DriverSwitches switches;
};

class ImagePolicy {
public:
    explicit ImagePolicy(const Logger& log) : log_(log) {}

    // Whether `image` was accepted before: then the driver need not be asked again.
    bool accepted(const LoadedImageFacts& image) const;
    // Checks the image with the ptxVersion the driver reported for a kernel of it.
    Result<void> check(const LoadedImageFacts& image, int ptx_version);

private:
    using Key = std::tuple<int32_t, std::string, bool, bool>;
    static Key key(const LoadedImageFacts& image);
    const Logger& log_;
    mutable std::mutex mutex_;
    std::set<Key> accepted_;
};

}  // namespace sdm::runtime
