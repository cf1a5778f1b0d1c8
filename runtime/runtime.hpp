// A runtime: the archives a host mounted, the driver (loaded on first need), the devices, the log
// and the last error. Everything the C ABI's sdm_runtime handle reaches. Thread-safe.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "runtime/archives/archive_set.hpp"
#include "runtime/jit/cache.hpp"
#include "runtime/device/context.hpp"
#include "runtime/device/device.hpp"
#include "runtime/platform/driver.hpp"
#include "runtime/select/image_policy.hpp"
#include "runtime/jit/jit_isolation.hpp"
#include "runtime/jit/jit_toolchain.hpp"
#include "runtime/kernel/kernel_attributes.hpp"
#include "runtime/jit/lazy_cache.hpp"
#include "runtime/device/load_context.hpp"
#include "runtime/platform/log.hpp"
#include "runtime/registry/modules.hpp"
#include "runtime/registry/warmup.hpp"
#include "runtime/archives/mounted_archive.hpp"
#include "runtime/registry/footprint.hpp"
#include "runtime/select/plugins.hpp"
#include "runtime/archives/provenance.hpp"
#include "common/result.hpp"

namespace sdm::runtime {

struct RuntimeOptions {
    bool mount_embedded{true};
    bool reload_any_contract{false};  // SDM_RUNTIME_RELOAD_ANY_CONTRACT: a reload may change the kernels' contract
    // The embedded archive's bytes when they are not this binary's (sdm info mounts those of the
    // libsdm a host loads); they must outlive the runtime. Unset: embedded_archive().
    std::optional<Bytes> embedded_bytes;
    std::string embedded_label{"embedded kernels.sdma"};
    Logger::Sink log_sink;
    std::optional<LogLevel> log_level;  // unset: $SDM_LOG, else warn
    std::string cuda_driver;            // empty: $SDM_CUDA_DRIVER, else libcuda.so.1
    ContextChoice contexts;             // default: each device's primary context
    CacheOptions cache;
    JitPolicy jit;
    JitIsolationOptions isolation;      // where links run, and their limits (jit_isolation.hpp)
    std::string nvjitlink;              // empty: $SDM_NVJITLINK, then the search order
    uint16_t kernel_abi_major{0};       // the kernel ABI major the host was built for; 0: any
    uint64_t device_memory_budget{0};   // per device, for the loaded modules (Modules); 0: $SDM_DEVICE_MEMORY_BUDGET, else none
    SignatureOptions signatures;        // which archives may mount (provenance.hpp)
    // The public key (a .pub file's text) that signed the embedded archive; unset: the one this
    // libsdm's build embedded beside it (embedded_archive_key()).
    std::optional<std::string> embedded_key;
};

// The last error a call on a runtime returned (sdm_runtime_last_error). Shared with the handles
// that report into it and may outlive the runtime (a kernel list): recording into it after the
// runtime is destroyed touches nothing freed, and no one reads it then. Thread-safe.
class LastError {
public:
    void record(const Error& error) {
        std::lock_guard lock(mutex_);
        error_ = error;
    }
    std::optional<Error> get() const {
        std::lock_guard lock(mutex_);
        return error_;
    }

private:
    mutable std::mutex mutex_;
    std::optional<Error> error_;
};

// The facade the C ABI and the tool hold: it owns the objects of the folders below it and wires
// them together, and decides nothing itself. Each is given only the objects it needs (docs/ARCHITECTURE.md,
// "Inside runtime/"); the accessors here are for the layers above.
class Runtime {
public:
    explicit Runtime(RuntimeOptions options);
    Runtime(const Runtime&) = delete;
    Runtime& operator=(const Runtime&) = delete;

    const Logger& log() const noexcept { return log_; }
    LoadContext& load_context() noexcept { return load_; }
    Result<std::shared_ptr<Driver>> driver() { return load_.driver(); }
    Devices& devices() noexcept { return load_.devices(); }
    Result<Contexts*> contexts() { return load_.contexts(); }
    bool follows_current_context() const noexcept { return load_.follows_current_context(); }
    // The cache, opened on first need; null when it cannot be used (lazy_cache.hpp).
    Cache* cache() { return cache_.get(); }
    JitToolchain& jit() noexcept { return jit_; }
    const JitPolicy& jit_policy() const noexcept { return jit_.policy(); }
    const JitIsolationSettings& jit_isolation() const noexcept { return jit_.isolation(); }
    Modules& modules() noexcept { return *modules_; }
    Warmups& warmups() noexcept { return *warmups_; }
    ImagePolicy& image_policy() noexcept { return image_policy_; }
    Plugins& plugins() noexcept { return plugins_; }
    KernelSettings& kernel_settings() noexcept { return kernel_settings_; }
    uint16_t kernel_abi_major() const noexcept { return options_.kernel_abi_major; }
    const Provenance& provenance() const noexcept { return provenance_; }

    ArchiveSet& archive_set() noexcept { return archives_; }
    Result<void> mount_file(const std::string& path) { return archives_.mount_file(path); }
    Result<void> mount_memory(Bytes bytes, const std::string& label) { return archives_.mount_memory(bytes, label); }
    std::vector<std::shared_ptr<const MountedArchive>> archives() const { return archives_.archives(); }
    // Hot reload (ArchiveSet::reload): the registry retires each replaced archive's modules.
    Result<void> reload(bool changed_only, uint32_t& reloaded);
    // Unmount (ArchiveSet::unmount): the registry retires its modules, as a reload's.
    Result<void> unmount(std::string_view label, uint32_t& unmounted);
    std::vector<std::string> skipped_archives() const { return archives_.skipped_archives(); }
    // What the runtime holds now (registry/footprint.hpp).
    Footprint footprint() { return runtime::footprint(*modules_, archives_, cache_); }
    // What an image's bytes are got with (sdm info asks which JIT backend would build one).
    ImageRooms image_rooms() noexcept;
    uint64_t mount_generation() const noexcept { return archives_.mount_generation(); }

    // Records an error a call on this runtime returned (for sdm_runtime_last_error) and logs it at
    // debug level.
    void record_error(const Error& error);
    std::optional<Error> last_error() const { return last_error_->get(); }
    std::shared_ptr<LastError> last_error_slot() const noexcept { return last_error_; }

private:
    RuntimeOptions options_;
    Logger log_;
    Provenance provenance_;
    ImagePolicy image_policy_{log_};
    Plugins plugins_{log_};  // after log_; destroyed after modules_ (declared before it)
    KernelSettings kernel_settings_;  // read by the registry's loads: declared before it
    LoadContext load_;       // destroyed after modules_: the registry unloads through it
    LazyCache cache_;
    JitToolchain jit_;
    const size_t readahead_modules_;  // how many modules ahead a compressed image's load decodes ($SDM_READAHEAD)
    std::unique_ptr<Modules> modules_;  // unloads its modules before the driver goes
    ArchiveSet archives_;    // destroyed first: the registry pins the archives its modules use
    const std::shared_ptr<LastError> last_error_ = std::make_shared<LastError>();
    // Destroyed first: its threads load through the registry and read the archives; they are
    // cancelled and joined before either goes (no thread runs until the first warm-up).
    std::unique_ptr<Warmups, WarmupsDeleter> warmups_;
};

}  // namespace sdm::runtime
