// Device work, entered once: the driver (loaded on first need), the context device work of an
// ordinal runs in (contexts.hpp: the host's, or the device's primary context), made current on the
// calling thread for the scope's life. Everything that talks to a device (a load, an unload, an
// occupancy query) starts with one of these instead of writing the sequence again.
#pragma once

#include <cstdint>
#include <memory>

#include "context.hpp"
#include "runtime/platform/driver.hpp"
#include "load_context.hpp"
#include "common/result.hpp"

namespace sdm::runtime {

class DeviceScope {
public:
    // The context of device `ordinal`.
    static Result<DeviceScope> enter(LoadContext& load, int32_t ordinal);
    // A context known already (the one a module was loaded in).
    static Result<DeviceScope> enter(LoadContext& load, CUcontext context);

    Driver& driver() const noexcept { return *driver_; }
    CUcontext context() const noexcept { return context_; }

private:
    DeviceScope(std::shared_ptr<Driver> driver, CUcontext context, ContextScope scope)
        : driver_(std::move(driver)), context_(context), scope_(std::move(scope)) {}
    std::shared_ptr<Driver> driver_;
    CUcontext context_;
    ContextScope scope_;  // popped before driver_ goes (declared after it)
};

}  // namespace sdm::runtime
