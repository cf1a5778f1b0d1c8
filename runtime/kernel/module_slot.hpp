// One module loaded on one device from one archive -- the stage between the loaded code and the
// kernel handles hosts hold -- and the protocol of its lifetime, which the slot itself enforces:
//
//   empty --load--> loaded --registered--> serving --retired--> retired --last reference--> unloaded
//                                            |    ^
//                                     evicted|    |reloaded at its next use (a device-memory budget)
//                                            v    |
//                                           evicted
//
// - A fetch holds a reference on the slot from the moment it finds or makes it (a lease), so no
//   step of the fetch finds it gone; the reference becomes the host's when the fetch succeeds, and
//   is dropped when it fails.
// - One fetch at a time loads it or resolves a kernel in it, under its loading lock
//   (lock_for_loading); what the load produced is written once, then read without a lock.
// - Registered: in the registry's load order. A slot registered after its archive was replaced
//   registers retired.
// - Retired (its archive replaced by a reload): it serves no new fetch, and is unloaded when its
//   last reference goes. The step that marks it unloaded is the one the registry then acts on.
//
// References and phase live in one atomic word, so each step (take, drop, retire, register) is
// one compare-and-swap: a slot cannot be both handed out and unloaded.
//
// Under a device-memory budget (registry/modules.hpp) a serving slot may be evicted: its module
// unloaded while its kernels' handles stay the host's. Every use of a handle's function or module
// (a launch, a global, an attribute) is then counted in a second word while it runs (enter /
// leave), and eviction takes the slot only when no use runs (one compare-and-swap from zero to
// "evicted", with the loading lock held); a use that finds it evicted reloads it under the loading
// lock first. Without a budget nothing is counted.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>

#include "kernel_handle.hpp"
#include "launch_streams.hpp"
#include "runtime/load/library.hpp"
#include "runtime/select/layering.hpp"
#include "common/hash.hpp"
#include "common/result.hpp"

namespace sdm::runtime {

struct MountedArchive;

// Which slot: one per (device, archive, module), and per context when fetches follow the calling
// thread's (the context is null otherwise). `context_id` is the driver's unique id of the context
// (cuCtxGetId): a context destroyed and another created at the same address is another context.
struct ModuleKey {
    int32_t ordinal{0};
    const MountedArchive* archive{nullptr};
    std::string module;
    CUcontext context{nullptr};
    uint64_t context_id{0};

    bool operator<(const ModuleKey& other) const {
        return std::tie(ordinal, archive, module, context, context_id) < std::tie(other.ordinal, other.archive, other.module, other.context, other.context_id);
    }
};

// What a load produced: written once, before the slot is registered.
struct LoadedModule {
    CUmodule module{nullptr};                // the module path (no library entry points, the driver's JIT)
    std::shared_ptr<LoadedLibrary> library;  // or the library it uses, shared with other contexts
    CUcontext context{nullptr};
    ImageSource source{ImageSource::archive_cubin};  // where the image's bytes came from
    std::optional<Hash128> cache_key;                 // the cache entry they came from, if any
    // What chose it (archive, image, device): a later kernel of the module is resolved in it
    // without choosing again. Its archive is dropped when the module is unloaded.
    ServedBy served;
    uint64_t device_bytes{0};  // its image's sections in device memory (archive::ImageInfo); 0 when the driver's JIT loaded it
    // Under a device-memory budget: how much its load and its kernels' resolves grew the device's
    // memory in use, as cuMemGetInfo showed it (registry/device_meter.hpp); nullopt when not
    // measured. Changed under the registry's lock, as the budget's counts are.
    std::optional<uint64_t> measured_bytes;
};

// Made by the registry as a shared object (its handles reach it from the raw pointer they hold).
class ModuleSlot : public std::enable_shared_from_this<ModuleSlot> {
public:
    explicit ModuleSlot(ModuleKey key) : key_(std::move(key)) {}
    ModuleSlot(const ModuleSlot&) = delete;
    ModuleSlot& operator=(const ModuleSlot&) = delete;

    const ModuleKey& key() const noexcept { return key_; }

    // --- Loading: one fetch at a time, with the lock held.
    [[nodiscard]] std::unique_lock<std::mutex> lock_for_loading() { return std::unique_lock(loading_); }
    [[nodiscard]] std::unique_lock<std::mutex> try_lock_for_loading() { return std::unique_lock(loading_, std::try_to_lock); }
    bool loaded() const noexcept { return loaded_.has_value(); }
    // The load's result and the one kernel it resolved (the first fetch's).
    void set_loaded(LoadedModule module, std::unique_ptr<KernelHandle> first);
    // A kernel resolved before, or null.
    KernelHandle* resolved(std::string_view name) const;
    KernelHandle* add_resolved(std::unique_ptr<KernelHandle> kernel);
    // How many kernels are resolved, read without the lock (for a report).
    uint32_t resolved_count() const noexcept { return resolved_count_.load(std::memory_order_acquire); }
    // Every kernel resolved so far (what a reload must keep for the hosts holding them).
    template <class Visit>
    void each_resolved(Visit&& visit) const {
        for (const auto& [name, kernel] : kernels_) visit(*kernel);
    }
    template <class Visit>
    void each_resolved(Visit&& visit) {
        for (auto& [name, kernel] : kernels_) visit(*kernel);
    }

    // --- What the load produced: once loaded, read without a lock (the reference a reader
    // holds, taken after the load, orders it), until the module is unloaded.
    const LoadedModule& module() const noexcept { return *loaded_; }

    // --- References and phase.
    enum class Take { any, serving };  // any phase but unloaded; only a registered, current slot
    // Takes a reference; false when the slot may not be handed out (so nothing was taken).
    [[nodiscard]] bool take(Take which) noexcept;
    enum class Dropped { kept, unload, too_often };
    // Drops a reference: `unload` when it was the last of a registered, retired slot, which is
    // now marked unloaded and must be unloaded by the caller; `too_often` when none was held.
    [[nodiscard]] Dropped drop() noexcept;
    // Its archive was replaced: true when no reference is left, so that it is now marked unloaded
    // and must be unloaded by the caller. For a registered slot.
    [[nodiscard]] bool retire() noexcept;
    // Into the registry's load order, by the fetch that loaded it (holding its reference);
    // retired when its archive was replaced meanwhile.
    void mark_registered(bool current) noexcept { state_.fetch_or(kRegistered | (current ? 0 : kRetired), std::memory_order_acq_rel); }
    bool registered() const noexcept { return (state_.load(std::memory_order_acquire) & kRegistered) != 0; }
    bool serving() const noexcept { return (state_.load(std::memory_order_acquire) & (kRegistered | kRetired | kUnloaded)) == kRegistered; }
    bool retired() const noexcept { return (state_.load(std::memory_order_acquire) & kRetired) != 0; }
    // Its handles are dead: it was retired and unloaded.
    bool unloaded() const noexcept { return (state_.load(std::memory_order_acquire) & kUnloaded) != 0; }
    // The references held now (for a report: it may change at once).
    uint64_t references() const noexcept { return state_.load(std::memory_order_acquire) & kReferences; }
    // The module and library, handed to whoever unloads them once their work finished; the slot
    // keeps its name and context, and drops its archive. For a slot marked unloaded.
    LoadedModule take_unloaded();

    // --- Uses and eviction (a device-memory budget only).
    // A use begins: false when the slot is evicted (nothing is counted then: reload it, under the
    // loading lock, and begin again there). `now_ns` records the use, for the least recently used.
    [[nodiscard]] bool enter(int64_t now_ns) noexcept {
        if ((use_.fetch_add(1, std::memory_order_acq_rel) & kEvictedUse) != 0) {
            use_.fetch_sub(1, std::memory_order_acq_rel);
            return false;
        }
        last_use_ns_.store(now_ns, std::memory_order_relaxed);
        return true;
    }
    void leave() noexcept { use_.fetch_sub(1, std::memory_order_acq_rel); }
    bool evicted() const noexcept { return (use_.load(std::memory_order_acquire) & kEvictedUse) != 0; }
    int64_t last_use_ns() const noexcept { return last_use_ns_.load(std::memory_order_relaxed); }
    void touch(int64_t now_ns) noexcept { last_use_ns_.store(now_ns, std::memory_order_relaxed); }  // loaded (or reloaded) now
    // Marks it evicted when no use runs. With the loading lock held.
    [[nodiscard]] bool try_evict() noexcept {
        uint64_t idle = 0;
        return use_.compare_exchange_strong(idle, kEvictedUse, std::memory_order_acq_rel);
    }
    // The module and library of an evicted slot, handed to whoever unloads them once their work
    // finished; what chose it stays, for its reload. With the loading lock held.
    LoadedModule take_evicted();
    // Its reload: the new module or library, and each kernel's function again (the handles stay
    // the host's). With the loading lock held; the slot serves uses again.
    void restore(CUmodule module, std::shared_ptr<LoadedLibrary> library, std::optional<uint64_t> measured_bytes);
    // A resolve grew the device's memory by `delta` (may be negative), as measured. Under the
    // registry's lock.
    void add_measured(int64_t delta) noexcept {
        auto& m = loaded_->measured_bytes;
        m = static_cast<uint64_t>(std::max<int64_t>(0, static_cast<int64_t>(m.value_or(0)) + delta));
    }

    // --- Where its kernels were launched, for its retirement (launch_streams.hpp).
    LaunchStreams& streams() noexcept { return streams_; }
    const LaunchStreams& streams() const noexcept { return streams_; }

    // --- Its globals as the driver found them (globals.hpp), by name: at most kMaxGlobals.
    static constexpr size_t kMaxGlobals = 4096;
    std::optional<std::pair<CUdeviceptr, uint64_t>> global(std::string_view name) const;
    void remember_global(const std::string& name, CUdeviceptr address, uint64_t bytes);

private:
    // The state word: the references in the low bits, the phase in three high bits.
    static constexpr uint64_t kRegistered = uint64_t{1} << 62, kRetired = uint64_t{1} << 61, kUnloaded = uint64_t{1} << 60;
    static constexpr uint64_t kReferences = kUnloaded - 1;
    static constexpr uint64_t kEvictedUse = uint64_t{1} << 63;  // in use_: the uses in the low bits

    const ModuleKey key_;
    std::atomic<uint64_t> state_{0};
    std::mutex loading_;
    std::optional<LoadedModule> loaded_;  // guarded by loading_ until registered
    std::map<std::string, std::unique_ptr<KernelHandle>, std::less<>> kernels_;  // guarded by loading_
    std::atomic<uint32_t> resolved_count_{0};
    std::atomic<uint64_t> use_{0};
    std::atomic<int64_t> last_use_ns_{0};
    LaunchStreams streams_;
    mutable std::mutex globals_mutex_;
    std::map<std::string, std::pair<CUdeviceptr, uint64_t>, std::less<>> globals_;
};

// Whether `kernel` may still be used: not once it was released and its module unloaded (its
// archive replaced by a reload). `api` names the call in the message.
Result<void> check_live(const KernelHandle& kernel, std::string_view api);

}  // namespace sdm::runtime
