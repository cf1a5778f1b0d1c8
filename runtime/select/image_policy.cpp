#include "image_policy.hpp"

#include <algorithm>
#include <mutex>
#include <set>
#include <tuple>

#include "sdm_version.h"

namespace sdm::runtime {

namespace {

// The RTX devices warned about, in this process: the seed warns once per process and device, not
// once per runtime (a host that creates a runtime per request would repeat it). A device as it
// reads (ordinal, name, capability: a forced row reads as another). Never destroyed: a runtime may
// check an image while the process exits.
bool first_warning(const LoadedImageFacts& image) {
    using Device = std::tuple<int32_t, std::string, int, int>;
    static std::mutex mutex;
    static auto* warned = new std::set<Device>;
    std::lock_guard lock(mutex);
    return warned->insert({image.ordinal, image.device_name, image.capability.major, image.capability.minor}).second;
}

}  // namespace

ImagePolicy::Key ImagePolicy::key(const LoadedImageFacts& image) {
    return {image.ordinal, image.identity, image.switches.force_ptx_jit, image.switches.disable_ptx_jit};
}

bool ImagePolicy::accepted(const LoadedImageFacts& image) const {
    if (forced_matrix_row_active()) return false;  // a test's row: checked every time, never memoized
    std::lock_guard lock(mutex_);
    return accepted_.contains(key(image));
}

Result<void> ImagePolicy::check(const LoadedImageFacts& image, int ptx_version) {
    // A modern pass is compiled from one of the modern class's own archs (hardware_matrix.hpp).
    if (image.device_class == DeviceClass::modern && !class_has_capability(DeviceClass::modern, static_cast<uint16_t>(ptx_version))) {
        const std::string cc = std::to_string(image.capability.major) + std::to_string(image.capability.minor);
        return make_error(ErrorCode::image_refused,
                          "images compiled for older GPUs are refused on Hopper / Blackwell GPUs: " + image.description + ", loaded on " +
                              image.device + ", was compiled for compute_" + std::to_string(ptx_version) +
                              " (CU_FUNC_ATTRIBUTE_PTX_VERSION " + std::to_string(ptx_version) + "; " + image.switches.text() +
                              "). Rebuild the archive with a cubin for sm_" + cc + " compiled from compute_" + cc + " (or PTX for compute_" + cc +
                              "; 90 for H100/H200, 100 for B200, 103 for GB300), mount it, and load again");
    }
    if (!class_tested(image.device_class) && first_warning(image))
        log_.warn(std::string("sdm ") + SDM_VERSION_STRING + " has not been tested on RTX-class GPUs: device " + std::to_string(image.ordinal) + " (" +
                  image.device_name + ", compute capability " + std::to_string(image.capability.major) + "." +
                  std::to_string(image.capability.minor) +
                  "); results are unverified. Tested: A100 / H100 / B200 / GB300 (compute capability 8.0 / 9.0 / 10.0 / 10.3)");
    std::lock_guard lock(mutex_);
    if (!forced_matrix_row_active()) accepted_.insert(key(image));
    return {};
}

}  // namespace sdm::runtime
