// The module registry: a kernel's module is loaded on first use, once per (device, archive, module)
// -- per (context, archive, module) when fetches follow the calling thread's context -- however
// many threads ask at once (double-checked: a map lookup, then a per-module lock re-checked
// under it); each fetch takes a reference on its module, and a module of a replaced archive is
// unloaded when its last reference goes. A load enters the device (device_scope.hpp), asks the
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
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "driver.hpp"
#include "archive/format.hpp"
#include "common/result.hpp"
#include "launch.hpp"
#include "jit_backend.hpp"
#include "layering.hpp"
#include "library.hpp"
#include "archive/manifest.hpp"

namespace sdm::runtime {

class Runtime;
struct MountedArchive;

struct ModuleSlot;

struct KernelHandle {
    ModuleSlot* slot{nullptr};  // the loaded module this kernel belongs to
    std::string name;
    std::string module;
    std::string archive;
    std::string signature;
    int32_t ordinal{0};
    CUfunction function{nullptr};
    archive::Kind image_kind{archive::Kind::cubin};
    uint16_t image_sm{0};
    uint16_t loaded_sm{0};
    ImageSource source{ImageSource::archive_cubin};
    std::unique_ptr<Launcher> launcher;  // plans and launches for this kernel on this device
};

// Kernel `kernel`'s declared signature (of archive `archive`) against what a host expects
// ("ptr, f32,i32": spaces ignored): ErrorCode::mismatch naming both, or an invalid_argument for an
// expectation that does not parse.
Result<void> check_signature(const std::string& kernel, const std::string& archive, const std::string& signature, std::string_view expected);

// Whether `kernel` may still be used: not once it was released and its module unloaded (its
// archive replaced by a reload). `api` names the call in the message.
Result<void> check_live(const KernelHandle& kernel, std::string_view api);

// One module loaded on one device from one archive.
struct ModuleSlot {
    std::mutex mutex;  // held while loading
    bool loaded{false};
    CUmodule module{nullptr};                // the module path (no library entry points, the driver's JIT)
    std::shared_ptr<LoadedLibrary> library;  // or the library it uses, shared with other contexts
    CUcontext context{nullptr};
    // The kernels resolved so far, each at its first fetch (or all of them by preload): a load
    // checks that the image defines every kernel the manifest lists for the module, and resolves
    // only the one asked for. Guarded by `mutex`.
    std::map<std::string, std::unique_ptr<KernelHandle>, std::less<>> kernels;
    ImageSource source{ImageSource::archive_cubin};  // where the image's bytes came from
    std::optional<Hash128> cache_key;                 // the cache entry they came from, if any
    bool registered{false};  // in load_order_ (guarded by the registry's mutex)
    // Guarded by the registry's mutex:
    int64_t references{0};  // kernel() successes not yet released
    bool retired{false};    // its archive was replaced by a reload
    std::atomic<bool> unloaded{false};  // retired and unloaded: its kernels' handles are dead
    std::tuple<int32_t, const MountedArchive*, std::string, CUcontext, uint64_t> key;
    // What chose it (archive, image, device), written by its load before it is registered: a
    // later kernel of the module is resolved in it without choosing again. Its archive is dropped
    // when it is unloaded.
    std::optional<ServedBy> served;
    LaunchStreams streams;  // where its kernels were launched, for its retirement
    // Its globals as the driver found them (globals.hpp), by name.
    std::mutex globals_mutex;
    std::map<std::string, std::pair<CUdeviceptr, uint64_t>, std::less<>> globals;
};

class Modules {
public:
    explicit Modules(Runtime& runtime) : runtime_(runtime) {}
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

private:
    using Slot = ModuleSlot;
    // The context is null but when fetches follow the calling thread's (it is then the ordinal's),
    // with the driver's unique id of it (cuCtxGetId): a context destroyed and another created at the
    // same address is another context, whose modules are not the old one's.
    using Key = std::tuple<int32_t, const MountedArchive*, std::string, CUcontext, uint64_t>;

    std::shared_ptr<Slot> slot(const Key& key);
    void unload_locked(std::shared_ptr<Slot> slot);  // with mutex_ held (by value: it erases the registry's copies)
    // Loads the image and checks it, with `name` resolved (a module's image policy is read through
    // its first kernel). With the slot's mutex held.
    Result<void> load(Slot& slot, int32_t ordinal, const ServedBy& served, CUstream stream, const std::string& name);
    // Kernel `name` (its manifest record `listed`) of the loaded `slot`, resolved on its first
    // call. With the slot's mutex held.
    Result<KernelHandle*> resolve(Slot& slot, int32_t ordinal, const ServedBy& served, const std::string& name,
                                  const archive::ManifestIndex::Kernel& listed);
    // The newest mounted archive listing `name` and its record; with the registered (loaded,
    // current) slot of its module for this key, when there is one: the layering rule would choose
    // that archive again (it chose an image of it for the module), so nothing is chosen again.
    struct Listed {
        std::shared_ptr<const MountedArchive> archive;
        const archive::ManifestIndex::Kernel* record{nullptr};
        std::shared_ptr<Slot> slot;
    };
    Listed listed(int32_t ordinal, std::string_view name, CUcontext context, uint64_t context_id);


    Runtime& runtime_;
    std::mutex mutex_;
    std::map<Key, std::shared_ptr<Slot>> slots_;
    std::vector<std::shared_ptr<Slot>> load_order_;
    std::vector<std::shared_ptr<const MountedArchive>> pinned_;  // archives whose modules are loaded stay alive
    // What served a kernel: the slot, for the context of that id, while the mounts are those of
    // `generation` (another id at the context's address is another context: a miss).
    struct Served {
        uint64_t generation{0};
        uint64_t context_id{0};
        std::shared_ptr<Slot> slot;
        const KernelHandle* handle{nullptr};  // the slot's, for this kernel: read without the slot's lock
    };
    // (ordinal, context as in Key, kernel) -> the loaded slot serving it, valid while the mounts are
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
    std::deque<std::shared_ptr<Slot>> unloaded_;
    // Retired modules whose queued work may still run: unloaded once every event has completed
    // (checked at each retire and release), at most kDrainingMax at once (past that, the oldest is
    // waited for), and waited for at the runtime's end.
    struct Draining {
        CUmodule module{nullptr};
        std::shared_ptr<LoadedLibrary> library;  // dropped once the work finished
        CUcontext context{nullptr};
        std::string name;
        std::vector<CUevent> events;
    };
    static constexpr size_t kDrainingMax = 16;
    std::deque<Draining> draining_;
    Draining fence(const Slot& slot);     // records an event on every stream its kernels were launched on
    void drain_locked(bool wait);         // with mutex_ held: unloads what finished (wait: everything)
    bool finished(Draining& d, bool wait);
};

}  // namespace sdm::runtime
