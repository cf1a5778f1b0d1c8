#include "context.hpp"

namespace sdm::runtime {

Contexts::~Contexts() {
    for (const auto& [ordinal, retained] : retained_)
        (void)SDM_DRIVER_CALL(*driver_, cuDevicePrimaryCtxRelease, "releasing the primary context of device " + std::to_string(ordinal),
                              retained.first);
}

Result<CUcontext> Contexts::get(int32_t ordinal) {
    if (host_ != nullptr) return host_;
    std::lock_guard lock(mutex_);
    if (const auto it = retained_.find(ordinal); it != retained_.end()) return it->second.second;
    const std::string what = "retaining the primary context of CUDA device " + std::to_string(ordinal);
    CUdevice device = 0;
    SDM_TRY(SDM_DRIVER_CALL(*driver_, cuDeviceGet, what, &device, ordinal));
    CUcontext context = nullptr;
    SDM_TRY(SDM_DRIVER_CALL(*driver_, cuDevicePrimaryCtxRetain, what, &context, device));
    retained_.emplace(ordinal, std::pair(device, context));
    return context;
}

Result<ContextScope> ContextScope::enter(Driver& driver, CUcontext context) {
    SDM_TRY(SDM_DRIVER_CALL(driver, cuCtxPushCurrent, "making a CUDA context current", context));
    return ContextScope(&driver);
}

ContextScope::~ContextScope() {
    if (driver_ == nullptr) return;
    CUcontext popped = nullptr;
    (void)SDM_DRIVER_CALL(*driver_, cuCtxPopCurrent, "restoring the thread's CUDA context", &popped);
}

}  // namespace sdm::runtime
