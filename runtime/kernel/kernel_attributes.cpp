#include "kernel_attributes.hpp"

#include "archive/manifest.hpp"

namespace sdm::runtime {

Result<KernelAttributes> read_attributes(LoadContext& load, const KernelHandle& kernel) {
    SDM_TRY_GET(driver, load.driver());
    SDM_TRY_GET(props, load.devices().properties(kernel.ordinal));
    KernelAttributes a;
    const auto read = [&](CUfunction_attribute attribute, int32_t& out, const char* what) -> Result<void> {
        int value = 0;
        SDM_TRY(SDM_DRIVER_CALL(**driver, cuFuncGetAttribute, std::string("reading ") + what + " of kernel " + kernel.name, &value, attribute, kernel.function));
        out = value;
        return {};
    };
    SDM_TRY(read(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, a.max_threads_per_block, "the most threads per block"));
    SDM_TRY(read(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, a.shared_size_bytes, "the static shared memory"));
    SDM_TRY(read(CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES, a.const_size_bytes, "the constant memory"));
    SDM_TRY(read(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, a.local_size_bytes, "the local memory"));
    SDM_TRY(read(CU_FUNC_ATTRIBUTE_NUM_REGS, a.num_regs, "the registers"));
    SDM_TRY(read(CU_FUNC_ATTRIBUTE_PTX_VERSION, a.ptx_version, "the PTX version"));
    SDM_TRY(read(CU_FUNC_ATTRIBUTE_BINARY_VERSION, a.binary_version, "the binary version"));
    SDM_TRY(read(CU_FUNC_ATTRIBUTE_CACHE_MODE_CA, a.cache_mode_ca, "the cache mode"));
    SDM_TRY(read(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, a.max_dynamic_shared_size_bytes, "the dynamic shared memory limit"));
    SDM_TRY(read(CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, a.preferred_shared_memory_carveout, "the preferred carveout"));
    if (props->capability.major < 9) return a;
    SDM_TRY(read(CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET, a.cluster_size_must_be_set, "whether a cluster size must be set"));
    SDM_TRY(read(CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH, a.required_cluster_width, "the required cluster width"));
    SDM_TRY(read(CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT, a.required_cluster_height, "the required cluster height"));
    SDM_TRY(read(CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH, a.required_cluster_depth, "the required cluster depth"));
    SDM_TRY(read(CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, a.non_portable_cluster_size_allowed, "whether non-portable cluster sizes are allowed"));
    SDM_TRY(read(CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE, a.cluster_scheduling_policy_preference, "the cluster scheduling policy"));
    a.cluster_read = true;
    return a;
}

namespace {

Result<void> apply_one(const KernelHandle& kernel, KernelSetting setting, int32_t value) {
    if (setting == KernelSetting::max_dynamic_shared_bytes) return kernel.launcher->set_smem_limit(value);
    return kernel.launcher->set_carveout(value);
}

}  // namespace

Result<void> KernelSettings::set(const KernelHandle& kernel, KernelSetting setting, int32_t value) {
    if (setting != KernelSetting::max_dynamic_shared_bytes && setting != KernelSetting::preferred_carveout)
        return make_error(ErrorCode::invalid_argument, "kernel " + kernel.name + ": setting " + std::to_string(static_cast<int32_t>(setting)) +
                                                           " is not one sdm_kernel_set knows (SDM_KERNEL_SETTING_MAX_DYNAMIC_SHARED_BYTES, "
                                                           "SDM_KERNEL_SETTING_PREFERRED_CARVEOUT)");
    // Under the lock: a fetch resolving the name meanwhile applies either the old record or the new.
    std::lock_guard lock(mutex_);
    SDM_TRY(apply_one(kernel, setting, value));
    Recorded& r = recorded_[{kernel.ordinal, archive::qualified_name(kernel.module, kernel.name)}];
    (setting == KernelSetting::max_dynamic_shared_bytes ? r.max_dynamic_shared_bytes : r.preferred_carveout) = value;
    return {};
}

Result<void> KernelSettings::apply(const KernelHandle& kernel) const {
    Recorded r;
    {
        std::lock_guard lock(mutex_);
        const auto it = recorded_.find({kernel.ordinal, archive::qualified_name(kernel.module, kernel.name)});
        if (it == recorded_.end()) return {};
        r = it->second;
    }
    const auto recorded = [&](Result<void> applied, const char* what) -> Result<void> {
        if (applied) return applied;
        Error e = std::move(applied).error();
        e.message = "the " + std::string(what) + " recorded for kernel " + kernel.name + " (sdm_kernel_set) cannot be given to the kernel just loaded from archive " +
                    kernel.archive + ": " + e.message;
        return e;
    };
    if (r.max_dynamic_shared_bytes) SDM_TRY(recorded(apply_one(kernel, KernelSetting::max_dynamic_shared_bytes, *r.max_dynamic_shared_bytes), "dynamic shared memory limit"));
    if (r.preferred_carveout) SDM_TRY(recorded(apply_one(kernel, KernelSetting::preferred_carveout, *r.preferred_carveout), "carveout"));
    return {};
}

}  // namespace sdm::runtime
