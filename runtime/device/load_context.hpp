// What every room that talks to a device is given: the driver (loaded on first need), the devices
// and their classes, and the contexts device work runs in (context.hpp). DeviceScope
// (device_scope.hpp) enters one. The runtime holds one; the registry, the launchers, the JIT's
// driver backend and the globals reach the driver through it and nothing else.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "context.hpp"
#include "device.hpp"
#include "runtime/platform/driver.hpp"
#include "runtime/platform/log.hpp"
#include "common/result.hpp"

namespace sdm::runtime {

class LoadContext {
public:
    // `cuda_driver`: empty for $SDM_CUDA_DRIVER, else libcuda.so.1 (Driver::load).
    LoadContext(const Logger& log, std::string cuda_driver, ContextChoice contexts);
    LoadContext(const LoadContext&) = delete;
    LoadContext& operator=(const LoadContext&) = delete;

    const Logger& log() const noexcept { return log_; }
    // The driver, loaded on first need. A failure is returned (and logged) but not kept: a later
    // call tries again.
    Result<std::shared_ptr<Driver>> driver();
    Devices& devices() noexcept { return devices_; }
    // The contexts device work runs in (loads the driver on first need).
    Result<Contexts*> contexts();
    // Whether fetches use the calling thread's current context (SDM_RUNTIME_CURRENT_CONTEXT).
    bool follows_current_context() const noexcept { return choice_.current; }
    // Whether launches get NVTX ranges (SDM_NVTX_LAUNCH, read when the runtime is made).
    bool traces_launches() const noexcept { return traces_launches_; }

private:
    const Logger& log_;
    const std::string cuda_driver_;
    const ContextChoice choice_;
    const bool traces_launches_;
    Devices devices_;
    std::mutex mutex_;
    std::shared_ptr<Driver> driver_;
    std::unique_ptr<Contexts> contexts_;  // released before driver_ (declared after it)
};

}  // namespace sdm::runtime
