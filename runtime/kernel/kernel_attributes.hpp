// A fetched kernel's attributes as the driver reports them (cuFuncGetAttribute), and the settings a
// host makes on it (cuFuncSetAttribute: the dynamic shared memory limit, the carveout), recorded
// per (device, kernel name) so that every function of that name resolved later -- after a reload,
// in another context -- is given them before its fetch returns (module_check.cpp applies them).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "kernel_handle.hpp"
#include "runtime/device/load_context.hpp"
#include "common/result.hpp"

namespace sdm::runtime {

// cuFuncGetAttribute's answers, sizes in bytes, versions major * 10 + minor.
struct KernelAttributes {
    int32_t max_threads_per_block{0};
    int32_t shared_size_bytes{0};
    int32_t const_size_bytes{0};
    int32_t local_size_bytes{0};
    int32_t num_regs{0};
    int32_t ptx_version{0};
    int32_t binary_version{0};
    int32_t cache_mode_ca{0};
    int32_t max_dynamic_shared_size_bytes{0};
    int32_t preferred_shared_memory_carveout{0};
    bool cluster_read{false};  // the six below were read (a device of 9.0 or later)
    int32_t cluster_size_must_be_set{0};
    int32_t required_cluster_width{0};
    int32_t required_cluster_height{0};
    int32_t required_cluster_depth{0};
    int32_t non_portable_cluster_size_allowed{0};
    int32_t cluster_scheduling_policy_preference{0};
};

// Every attribute of `kernel`'s function; the cluster ones on devices of capability 9.0 and later
// (older ones have no clusters, and drivers differ in how they refuse the question).
Result<KernelAttributes> read_attributes(LoadContext& load, const KernelHandle& kernel);

// What sdm_kernel_set sets (the values of sdm_kernel_setting).
enum class KernelSetting : int32_t { max_dynamic_shared_bytes = 1, preferred_carveout = 2 };

class KernelSettings {
public:
    // Sets `setting` on `kernel`'s function (Launcher::set_smem_limit / set_carveout check the
    // value against the device) and, once the driver took it, records it for the kernel's name on
    // its device.
    Result<void> set(const KernelHandle& kernel, KernelSetting setting, int32_t value);
    // Gives a function just resolved what is recorded for its name on its device.
    Result<void> apply(const KernelHandle& kernel) const;

private:
    struct Recorded {
        std::optional<int32_t> max_dynamic_shared_bytes;
        std::optional<int32_t> preferred_carveout;
    };
    mutable std::mutex mutex_;
    std::map<std::pair<int32_t, std::string>, Recorded> recorded_;  // (ordinal, MODULE!NAME): two modules defining one name are two kernels
};

}  // namespace sdm::runtime
