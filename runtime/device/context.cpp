#include "context.hpp"

namespace sdm::runtime {

Contexts::~Contexts() {
    for (const auto& [ordinal, retained] : retained_)
        (void)SDM_DRIVER_CALL(*driver_, cuDevicePrimaryCtxRelease, "releasing the primary context of device " + std::to_string(ordinal),
                              retained.first);
}

Result<CUdevice> Contexts::device_of(CUcontext context) {
    SDM_TRY_GET(scope, ContextScope::enter(*driver_, context));
    CUdevice device = -1;
    SDM_TRY(SDM_DRIVER_CALL(*driver_, cuCtxGetDevice, "asking which device a CUDA context belongs to", &device));
    return device;
}

Result<CUcontext> Contexts::primary(int32_t ordinal) {
    if (const auto it = retained_.find(ordinal); it != retained_.end()) return it->second.second;
    const std::string what = "retaining the primary context of CUDA device " + std::to_string(ordinal);
    CUdevice device = 0;
    SDM_TRY(SDM_DRIVER_CALL(*driver_, cuDeviceGet, what, &device, ordinal));
    CUcontext context = nullptr;
    SDM_TRY(SDM_DRIVER_CALL(*driver_, cuDevicePrimaryCtxRetain, what, &context, device));
    retained_.emplace(ordinal, std::pair(device, context));
    return context;
}

Result<CUcontext> Contexts::get(int32_t ordinal) {
    if (choice_.current) return current(ordinal);
    std::lock_guard lock(mutex_);
    if (const auto it = checked_.find(ordinal); it != checked_.end()) return it->second;
    const auto given = choice_.given.find(ordinal);
    if (given != choice_.given.end() || (choice_.host != nullptr && !host_elsewhere_.contains(ordinal))) {
        CUcontext context = given != choice_.given.end() ? given->second : choice_.host;
        CUdevice want = 0;
        SDM_TRY(SDM_DRIVER_CALL(*driver_, cuDeviceGet, "finding CUDA device " + std::to_string(ordinal), &want, ordinal));
        SDM_TRY_GET(belongs, device_of(context));
        if (*belongs == want) {
            checked_.emplace(ordinal, context);
            return context;
        }
        if (given != choice_.given.end())
            return make_error(ErrorCode::mismatch, "the context the host gave for CUDA device " + std::to_string(ordinal) +
                                                       " (sdm_runtime_params.device_contexts) belongs to device " + std::to_string(*belongs) +
                                                       "; give each device a context created on it");
        // 1.0's one context serves the device it belongs to; the others keep their primary contexts.
        host_elsewhere_.insert(ordinal);
        log_.info("CUDA device " + std::to_string(ordinal) + " uses its primary context: the host's context (cuda_context) belongs to device " +
                  std::to_string(*belongs));
    }
    return primary(ordinal);
}

Result<CUcontext> Contexts::current(int32_t ordinal) {
    CUcontext context = nullptr;
    SDM_TRY(SDM_DRIVER_CALL(*driver_, cuCtxGetCurrent, "reading the calling thread's CUDA context", &context));
    if (context == nullptr)
        return make_error(ErrorCode::invalid_argument, "no CUDA context is current on this thread, and the runtime uses the current one "
                                                       "(SDM_RUNTIME_CURRENT_CONTEXT): make the context of device " +
                                                           std::to_string(ordinal) + " current (cuCtxSetCurrent) before calling sdm");
    CUdevice device = -1, want = 0;
    SDM_TRY(SDM_DRIVER_CALL(*driver_, cuCtxGetDevice, "asking which device the current CUDA context belongs to", &device));
    SDM_TRY(SDM_DRIVER_CALL(*driver_, cuDeviceGet, "finding CUDA device " + std::to_string(ordinal), &want, ordinal));
    if (device != want)
        return make_error(ErrorCode::mismatch, "the CUDA context current on this thread belongs to device " + std::to_string(device) + ", not device " +
                                                   std::to_string(ordinal) + " that the call names (SDM_RUNTIME_CURRENT_CONTEXT); make device " +
                                                   std::to_string(ordinal) + "'s context current, or ask for device " + std::to_string(device));
    return context;
}

Result<uint64_t> Contexts::id_of(CUcontext context) {
    unsigned long long id = 0;
    SDM_TRY(SDM_DRIVER_CALL(*driver_, cuCtxGetId, "reading the unique id of the calling thread's CUDA context", context, &id));
    return static_cast<uint64_t>(id);
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
