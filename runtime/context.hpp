// CUDA contexts: each device's primary context by default (retained once per runtime, released
// when the runtime goes), or the context the host handed in (engines own theirs; sdm never
// releases it). ContextScope makes one current on the calling thread for the span of a call.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <utility>

#include "driver.hpp"
#include "result.hpp"

namespace sdm::runtime {

class Contexts {
public:
    Contexts(std::shared_ptr<Driver> driver, CUcontext host_context) : driver_(std::move(driver)), host_(host_context) {}
    ~Contexts();  // releases the primary contexts it retained
    Contexts(const Contexts&) = delete;
    Contexts& operator=(const Contexts&) = delete;

    // The context device work of `ordinal` runs in: the host's, or the device's primary context.
    Result<CUcontext> get(int32_t ordinal);
    Driver& driver() noexcept { return *driver_; }

private:
    std::shared_ptr<Driver> driver_;
    CUcontext host_;
    std::mutex mutex_;
    std::map<int32_t, std::pair<CUdevice, CUcontext>> retained_;
};

// Pushes a context for the lifetime of the scope and pops it after, restoring what the thread had.
class ContextScope {
public:
    static Result<ContextScope> enter(Driver& driver, CUcontext context);
    ContextScope(ContextScope&& other) noexcept : driver_(std::exchange(other.driver_, nullptr)) {}
    ContextScope& operator=(ContextScope&&) = delete;
    ~ContextScope();

private:
    explicit ContextScope(Driver* driver) : driver_(driver) {}
    Driver* driver_;
};

}  // namespace sdm::runtime
