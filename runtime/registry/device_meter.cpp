#include "device_meter.hpp"

#include <string>

namespace sdm::runtime {

std::optional<uint64_t> DeviceMeter::used(Driver& driver) {
    size_t free = 0;
    size_t total = 0;
    auto r = SDM_DRIVER_CALL(driver, cuMemGetInfo, "reading the device memory in use, for the device-memory budget", &free, &total);
    if (!r || free > total) {
        if (!told_.exchange(true))
            log_.warn((r ? std::string("cuMemGetInfo reported more memory free than the device has") : r.error().message) +
                      ": the device-memory budget counts what the modules' images declare instead, which is less than the driver takes");
        return std::nullopt;
    }
    return static_cast<uint64_t>(total - free);
}

DeviceMeter::Window DeviceMeter::open(Driver& driver) {
    Window w;
    if (!on_) return w;
    w.meter_ = this;
    w.lock_ = std::unique_lock(mutex_);
    w.before_ = used(driver);
    return w;
}

std::optional<int64_t> DeviceMeter::Window::close(Driver& driver) {
    if (!lock_.owns_lock()) return std::nullopt;
    const auto after = before_ ? meter_->used(driver) : std::nullopt;
    lock_.unlock();
    if (!after) return std::nullopt;
    return static_cast<int64_t>(*after) - static_cast<int64_t>(*before_);
}

}  // namespace sdm::runtime
