// A fetched kernel's handle and the loaded module it belongs to, as the registry (registry/modules.hpp)
// keeps them and the code that resolves, checks, launches and copies globals reads them: the checks a
// handle's every use starts with (is it alive, does the host's signature agree) are here too.
#pragma once

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

#include "runtime/platform/driver.hpp"
#include "runtime/jit/jit_backend.hpp"
#include "launch.hpp"
#include "runtime/select/layering.hpp"
#include "runtime/load/library.hpp"
#include "archive/format.hpp"
#include "common/hash.hpp"
#include "common/result.hpp"

namespace sdm::runtime {

struct MountedArchive;

struct ModuleSlot;

struct KernelHandle {
    ModuleSlot* slot{nullptr};  // the loaded module this kernel belongs to
    void* owner{nullptr};       // the runtime that fetched it (opaque here: the C ABI reaches it through this)
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

}  // namespace sdm::runtime
