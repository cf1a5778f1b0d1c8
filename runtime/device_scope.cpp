#include "device_scope.hpp"

#include "runtime.hpp"

namespace sdm::runtime {

Result<DeviceScope> DeviceScope::enter(Runtime& runtime, int32_t ordinal) {
    SDM_TRY_GET(contexts, runtime.contexts());  // loads the driver on first need
    SDM_TRY_GET(context, (*contexts)->get(ordinal));
    return enter(runtime, *context);
}

Result<DeviceScope> DeviceScope::enter(Runtime& runtime, CUcontext context) {
    SDM_TRY_GET(driver, runtime.driver());
    SDM_TRY_GET(scope, ContextScope::enter(**driver, context));
    return DeviceScope(std::move(*driver), context, std::move(*scope));
}

}  // namespace sdm::runtime
