// What sdm's module loads and unloads cost in device memory, as the device shows it: the used
// bytes cuMemGetInfo reports before and after each (a window), one window at a time per runtime, so
// that two loads measured at once do not each count the other. Only under a device-memory budget
// (modules.hpp): a module's image declares its sections, but the driver takes more (its own
// allocations per module, in pages of 2 MiB on an H100), and a budget is kept against what the
// device shows. Memory the host allocates while a window is open counts as sdm's: it only makes
// the budget evict earlier. When cuMemGetInfo fails, a window measures nothing: the declared bytes
// count instead, and the log says so once.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>

#include "runtime/platform/driver.hpp"
#include "runtime/platform/log.hpp"

namespace sdm::runtime {

class DeviceMeter {
public:
    DeviceMeter(const Logger& log, bool on) : log_(log), on_(on) {}

    class Window {
    public:
        Window() = default;
        bool open() const noexcept { return lock_.owns_lock(); }
        // How much the used memory of the current context's device grew since open (negative:
        // shrank), and the window closed; nullopt when it was not open or the device did not say.
        std::optional<int64_t> close(Driver& driver);

    private:
        friend class DeviceMeter;
        DeviceMeter* meter_{nullptr};
        std::unique_lock<std::mutex> lock_;
        std::optional<uint64_t> before_;
    };

    bool on() const noexcept { return on_; }
    // A window on the current context's device, from now (not open when the meter is off); it
    // holds the meter until closed or destroyed.
    Window open(Driver& driver);

private:
    std::optional<uint64_t> used(Driver& driver);

    const Logger& log_;
    const bool on_;
    std::mutex mutex_;
    std::atomic<bool> told_{false};
};

}  // namespace sdm::runtime
