// CUDA contexts: which context device work of an ordinal runs in (docs/LOADING.md, "Contexts").
// - By default each device's primary context (retained once per runtime, released when it goes).
// - A context the host gives for a device (ContextChoice::given), or the one context of 1.0's
//   cuda_context, used for the device it belongs to (checked with cuCtxGetDevice at first use;
//   other devices keep their primary contexts). sdm never releases a host's context.
// - Or, with ContextChoice::current, the context current on the calling thread at each fetch
//   (engines that juggle contexts, green contexts made current with cuCtxFromGreenCtx), checked
//   against the ordinal asked for.
// ContextScope makes one current on the calling thread for the span of a call.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <utility>

#include "runtime/platform/driver.hpp"
#include "runtime/platform/log.hpp"
#include "common/result.hpp"

namespace sdm::runtime {

struct ContextChoice {
    CUcontext host{nullptr};             // 1.0's cuda_context: the context of the device it belongs to
    std::map<int32_t, CUcontext> given;  // ordinal -> the host's context for it
    bool current{false};                 // the calling thread's current context, at each fetch
};

class Contexts {
public:
    Contexts(std::shared_ptr<Driver> driver, ContextChoice choice, const Logger& log)
        : driver_(std::move(driver)), choice_(std::move(choice)), log_(log) {}
    ~Contexts();  // releases the primary contexts it retained
    Contexts(const Contexts&) = delete;
    Contexts& operator=(const Contexts&) = delete;

    // The context device work of `ordinal` runs in (with `current`: the calling thread's).
    Result<CUcontext> get(int32_t ordinal);
    // The context current on the calling thread, which must belong to device `ordinal`.
    Result<CUcontext> current(int32_t ordinal);
    // The driver's unique id of `context` (cuCtxGetId): never the same for two contexts of one
    // process, even at the same address.
    Result<uint64_t> id_of(CUcontext context);
    bool follows_current() const noexcept { return choice_.current; }
    Driver& driver() noexcept { return *driver_; }

private:
    Result<CUdevice> device_of(CUcontext context);  // pushes it, asks, pops
    Result<CUcontext> primary(int32_t ordinal);

    std::shared_ptr<Driver> driver_;
    ContextChoice choice_;
    const Logger& log_;
    std::mutex mutex_;
    std::map<int32_t, std::pair<CUdevice, CUcontext>> retained_;
    std::map<int32_t, CUcontext> checked_;  // ordinal -> a host context checked to belong to it
    std::set<int32_t> host_elsewhere_;      // ordinals the 1.0 host context does not belong to
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
