#include "device_scope.hpp"

namespace sdm::runtime {

Result<DeviceScope> DeviceScope::enter(LoadContext& load, int32_t ordinal) {
    SDM_TRY_GET(contexts, load.contexts());  // loads the driver on first need
    SDM_TRY_GET(context, (*contexts)->get(ordinal));
    return enter(load, *context);
}

Result<DeviceScope> DeviceScope::enter(LoadContext& load, CUcontext context) {
    SDM_TRY_GET(driver, load.driver());
    SDM_TRY_GET(scope, ContextScope::enter(**driver, context));
    return DeviceScope(std::move(*driver), context, std::move(*scope));
}

}  // namespace sdm::runtime
