// The module registry: a kernel's module is loaded on first use, once per (device, archive, module)
// -- per (context, archive, module) when fetches follow the calling thread's context -- however
// many threads ask at once: a fetch finds or makes the module's slot with a reference on it (a
// lease), then loads it under the slot's loading lock unless another fetch did
// (module_slot.hpp owns that protocol). Each successful fetch keeps its reference, and a module
// of a replaced archive is unloaded when its last reference goes. A load enters the device (device_scope.hpp), asks the
// layering rule which archive and image serve the kernel (layering.hpp), gets the image's bytes
// (image_source.hpp), has the driver load them as a library shared by every context selecting the
// same image (library.hpp), or as a module of the context, and checks it (module_check.hpp).
// Destroying the registry unloads the modules in reverse load order, logging any failure.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "runtime/archives/archive_set.hpp"
#include "runtime/load/image_source.hpp"
#include "runtime/kernel/module_slot.hpp"
#include "runtime/load/library.hpp"
#include "runtime/device/load_context.hpp"
#include "module_check.hpp"
#include "device_meter.hpp"
#include "runtime/archives/reload_contract.hpp"
#include "archive/manifest.hpp"
#include "common/result.hpp"

namespace sdm::runtime {

// What the registry is given: every room a load goes through. They outlive it.
struct RegistryRooms {
    const Logger& log;
    const ArchiveSet& archives;
    LoadContext& load;
    JitToolchain& jit;      // the kernel-name index demangles through its helper
    ImageRooms images;      // an image's bytes (image_source.hpp)
    CheckRooms checks;      // a loaded module's checks and its kernels' handles (module_check.hpp)
};

// One loaded module as a footprint report shows it (Modules::footprint).
struct ModuleFootprint {
    int32_t ordinal{0};
    std::string module;
    std::string archive;        // its label
    uint64_t device_bytes{0};   // its image's sections in device memory (0: the driver's JIT loaded it)
    uint64_t host_bytes{0};     // the image bytes its library keeps (shared by the contexts that load the same image)
    const void* library{nullptr};  // that library, so that a total counts a shared one once
    uint32_t kernels{0};        // resolved so far
    uint64_t references{0};     // fetches not released
    bool retired{false};        // its archive was replaced or unmounted: it goes with its last reference
    bool draining{false};       // unloaded by sdm, waiting for the work (or the graphs) that used it
    bool evicted{false};        // unloaded under the device-memory budget: reloaded at its next use (0 device bytes meanwhile)
};

// $SDM_DEVICE_MEMORY_BUDGET (a size), or 0 (none); a bad value is warned of through `log`.
uint64_t device_memory_budget_from_environment(const Logger& log);

class Modules {
public:
    // `device_memory_budget`: bytes per device the loaded modules may take, as the device shows
    // what sdm's loads, resolves and unloads took (device_meter.hpp; as their images declare them
    // when it cannot say); past it, the least recently used idle modules are evicted. 0: none.
    explicit Modules(RegistryRooms rooms, uint64_t device_memory_budget = 0)
        : rooms_(rooms), budget_(device_memory_budget), meter_(rooms.log, device_memory_budget > 0) {}
    ~Modules();
    Modules(const Modules&) = delete;
    Modules& operator=(const Modules&) = delete;

    // The kernel `name` on device `ordinal` (in `context`, when fetches follow the calling thread's
    // context: null asks the thread); `stream` is checked for graph capture before any JIT.
    // With `expected`, its signature must match (check_signature) before anything is loaded. Each
    // success takes a reference on the kernel's module, which release() drops; a failure takes none.
    Result<const KernelHandle*> kernel(int32_t ordinal, const std::string& name, CUstream stream,
                                       std::optional<std::string_view> expected = std::nullopt, CUcontext context = nullptr);
    // What sdm_preload does for one module: kernel(), then every other kernel the manifest lists
    // for its module resolved too (eager), and the reference released.
    Result<void> load_all(int32_t ordinal, const std::string& name, CUcontext context);
    // Drops a reference kernel() took. A module of a replaced (reloaded) archive is unloaded when
    // its last reference goes; a current one stays loaded until the runtime is destroyed.
    Result<void> release(const KernelHandle& kernel);
    // `old` was replaced by a reload: its modules serve no new fetch, and each is unloaded once
    // no reference to it is left (now, for those without any).
    void retire(const MountedArchive* old);
    // Every kernel resolved in a loaded module of `archive` (what hosts hold handles of): the
    // contract a reload of it keeps (reload_contract.hpp).
    std::vector<FetchedKernel> fetched(const MountedArchive* archive);
    // Every module loaded now, in load order, then those draining (a report: it walks them all).
    std::vector<ModuleFootprint> footprint();

    // A use of a fetched kernel's function or module (a launch, a global, an attribute): check_live,
    // then, under a device-memory budget, its module reloaded if it was evicted, and kept from
    // eviction while the use lasts. Without a budget: check_live alone, nothing counted.
    class KernelUse {
    public:
        KernelUse() = default;
        explicit KernelUse(ModuleSlot* slot) noexcept : slot_(slot) {}
        KernelUse(KernelUse&& other) noexcept : slot_(std::exchange(other.slot_, nullptr)) {}
        KernelUse& operator=(KernelUse&&) = delete;
        ~KernelUse() {
            if (slot_ != nullptr) slot_->leave();
        }

    private:
        ModuleSlot* slot_{nullptr};
    };
    Result<KernelUse> use(const KernelHandle& kernel, std::string_view api);
    uint64_t device_memory_budget() const noexcept { return budget_; }

private:
    // A reference on a slot, taken when a fetch finds or makes it, so that no step of the fetch finds
    // the slot unloaded; the host's once the fetch succeeds (keep), dropped when it fails.
    class Lease {
    public:
        Lease() = default;
        Lease(Modules& owner, std::shared_ptr<ModuleSlot> slot) : owner_(&owner), slot_(std::move(slot)) {}
        Lease(Lease&& other) noexcept : owner_(std::exchange(other.owner_, nullptr)), slot_(std::move(other.slot_)) {}
        Lease& operator=(Lease&& other) noexcept;
        ~Lease() { reset(); }
        explicit operator bool() const noexcept { return slot_ != nullptr; }
        ModuleSlot& slot() const noexcept { return *slot_; }
        const std::shared_ptr<ModuleSlot>& shared() const noexcept { return slot_; }
        void keep() noexcept { owner_ = nullptr; }  // the reference is the host's now
        void reset() noexcept;

    private:
        Modules* owner_{nullptr};
        std::shared_ptr<ModuleSlot> slot_;
    };
    // Where a fetch is served: the ordinal, and the context with its id when fetches follow the
    // calling thread's (null and 0 otherwise).
    struct Where {
        int32_t ordinal{0};
        CUcontext context{nullptr};
        uint64_t context_id{0};
    };
    Result<Where> where(int32_t ordinal, CUcontext context);
    // Kernel `name`, which no archive lists as it is, as the newest archive lists it, plain or
    // module-qualified: a recorded name expression, or a C++ spelling of a listed name (kernel_names.hpp).
    Result<std::string> listed_spelling(const std::string& name);
    struct Listed;
    // The fetch of kernel `name` (a listed spelling of `asked`, as the host asked; `found`, what
    // listed() found of it) once nothing served it before: served again under both.
    Result<const KernelHandle*> fetch(const Where& where, const std::string& asked, const std::string& name, Listed found, CUstream stream,
                                      std::optional<std::string_view> expected, uint64_t generation);

    // The slot of `key` with a reference on it: a live one, or a new empty one (replacing one
    // being unloaded).
    Lease lease(const ModuleKey& key);
    // Drops a reference a lease or a fetch took; unloads the slot when that was the last of a
    // retired one. `kernel` names it in the message of one dropped too often.
    Result<void> drop(const std::shared_ptr<ModuleSlot>& slot, const std::string& kernel);
    void unload_locked(const std::shared_ptr<ModuleSlot>& slot);  // with mutex_ held, for a slot marked unloaded
    // Under a budget, with mutex_ held: the least recently used idle modules of device `ordinal`
    // (but `keep`) evicted until what is loaded there fits, or none is left to evict (logged once).
    void enforce_budget_locked(int32_t ordinal, const ModuleSlot* keep);
    // With mutex_ held: a resolve of `s` grew the device's memory by `delta`, as measured.
    void charge_locked(ModuleSlot& s, int64_t delta);
    // An evicted slot loaded again, its kernels' functions resolved again in it. With the slot's
    // loading lock held; `why` names the use, for the log.
    Result<void> reload_evicted(ModuleSlot& slot, const std::string& why);
    // Loads the image and checks it, with `name` resolved (a module's image policy is read through
    // its first kernel). With the slot's loading lock held.
    Result<void> load(ModuleSlot& slot, int32_t ordinal, const ServedBy& served, CUstream stream, const std::string& name);
    // Kernel `name` (its manifest record `listed`) of the loaded `slot`, resolved on its first
    // call. With the slot's loading lock held.
    // `metered`: under a budget, what the resolve took on the device is measured and counted (the
    // caller measures a batch of them itself otherwise).
    Result<KernelHandle*> resolve(ModuleSlot& slot, int32_t ordinal, const std::string& name, const archive::ManifestIndex::Kernel& listed,
                                  bool metered = true);
    // The newest mounted archive listing `name` and its record; with a lease on the registered
    // (loaded, current) slot of its module for `where`, when there is one: the layering rule would
    // choose that archive again (it chose an image of it for the module), so nothing is chosen again.
    struct Listed {
        std::shared_ptr<const MountedArchive> archive;
        const archive::ManifestIndex::Kernel* record{nullptr};
        Lease lease;
    };
    // `name` listed or module-qualified; ErrorCode::ambiguous for a name the newest listing archive
    // has in several modules (layering.hpp, listed_kernel).
    Result<Listed> listed(const Where& where, std::string_view name);

    const RegistryRooms rooms_;
    const uint64_t budget_;  // per device; 0: none
    DeviceMeter meter_;      // on under a budget
    std::mutex mutex_;
    // Per ordinal, the device bytes the registered, loaded (not evicted) modules take, as the budget
    // counts them: each one's measured bytes (the declared ones when unmeasured), less those of the
    // modules taken out, and corrected by what their unloads measured.
    std::map<int32_t, uint64_t> resident_;
    std::set<int32_t> budget_told_;            // devices whose budget could not be kept, said once
    std::map<ModuleKey, std::shared_ptr<ModuleSlot>> slots_;
    std::vector<std::shared_ptr<ModuleSlot>> load_order_;  // the registered slots
    std::vector<std::shared_ptr<const MountedArchive>> pinned_;  // archives whose modules are loaded stay alive
    // What served a kernel: the slot, for the context of that id, while the mounts are those of
    // `generation` (another id at the context's address is another context: a miss).
    struct Served {
        uint64_t generation{0};
        uint64_t context_id{0};
        std::shared_ptr<ModuleSlot> slot;
        const KernelHandle* handle{nullptr};  // the slot's, for this kernel: read without the slot's lock
    };
    // (ordinal, context as in ModuleKey, kernel) -> the loaded slot serving it, valid while the mounts are
    // those of `generation`.
    // Found by a string_view of the name, without a copy: the comparison views both sides (the
    // heterogeneous tuple comparison of std::less<> does not compile with every standard library).
    struct ServedOrder {
        using is_transparent = void;
        template <class A, class B>
        bool operator()(const A& a, const B& b) const {
            return std::tuple(std::get<0>(a), std::get<1>(a), std::string_view(std::get<2>(a))) <
                   std::tuple(std::get<0>(b), std::get<1>(b), std::string_view(std::get<2>(b)));
        }
    };
    std::map<std::tuple<int32_t, CUcontext, std::string>, Served, ServedOrder> served_;
    Libraries libraries_;
    // The last kUnloadedKept unloaded slots stay allocated, so that a handle used after its release
    // is reported as dead rather than read from freed memory; older ones are freed.
    static constexpr size_t kUnloadedKept = 64;
    std::deque<std::shared_ptr<ModuleSlot>> unloaded_;
    // Retired modules whose queued work may still run, or that a CUDA graph captured: unloaded
    // once every event has completed and every such graph is destroyed (checked at each retire and
    // release; nothing waits for a graph). At most kDrainingMax wait for their events at once
    // (past that, the oldest is waited for; the host's own graphs bound the others), and at the
    // runtime's end the events are waited for; what graphs still hold then stays loaded
    // (keep_for_graphs).
    struct Draining {
        CUmodule module{nullptr};
        std::shared_ptr<LoadedLibrary> library;  // dropped once the work finished
        CUcontext context{nullptr};
        std::string name;
        std::vector<CUevent> events;
        std::shared_ptr<const GraphCount> graphs;  // how many graphs that captured its launches exist
        bool announced{false};                     // the log said it waits for graphs
        // For the footprint report:
        int32_t ordinal{0};
        std::string archive{};
        uint64_t device_bytes{0};
        // Under a budget: what resident_ was lowered by when it was taken out, corrected by its
        // unload's measure.
        std::optional<uint64_t> counted{};
    };
    static constexpr size_t kDrainingMax = 16;
    std::deque<Draining> draining_;
    // Records an event on every stream `slot`'s kernels were launched on; `taken` is what it loaded.
    Draining fence(const ModuleSlot& slot, LoadedModule taken);
    void drain_locked(bool wait);         // with mutex_ held: unloads what finished (wait: every event)
    bool finished(Draining& d, bool wait);
    bool held_by_graphs(Draining& d);     // logs, once, that it waits for graphs
    void keep_for_graphs(Draining& d);    // at the runtime's end: left loaded for the graphs
};

}  // namespace sdm::runtime
