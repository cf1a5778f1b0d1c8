// A runtime: the archives a host mounted, the driver (loaded on first need), the devices, the log
// and the last error. Everything the C ABI's sdm_runtime handle reaches. Thread-safe.
#pragma once

#include <atomic>
#include <map>
#include <tuple>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "cache.hpp"
#include "context.hpp"
#include "device.hpp"
#include "driver.hpp"
#include "image_policy.hpp"
#include "jit_isolation.hpp"
#include "jit_nvjitlink.hpp"
#include "kernel_names.hpp"
#include "log.hpp"
#include "archive/manifest.hpp"
#include "modules.hpp"
#include "readahead.hpp"
#include "reference_memo.hpp"
#include "plugins.hpp"
#include "provenance.hpp"
#include "archive/archive.hpp"
#include "common/result.hpp"

namespace sdm::runtime {

struct JitPolicy {
    bool nvjitlink{true};  // link PTX / LTO-IR with nvJitLink (cached)
    bool ptx_compiler{true};  // compile PTX with the static nvPTXCompiler, when built in (cached)
    bool driver{true};     // hand PTX to the driver's own JIT when nvJitLink cannot
};

struct RuntimeOptions {
    bool mount_embedded{true};
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
    SignatureOptions signatures;        // which archives may mount (provenance.hpp)
    // The public key (a .pub file's text) that signed the embedded archive; unset: the one this
    // libsdm's build embedded beside it (embedded_archive_key()).
    std::optional<std::string> embedded_key;
};

struct MountedArchive {
    archive::Archive archive;
    std::optional<archive::ManifestIndex> manifest;  // views into the archive's mapping, or into manifest_bytes
    bool embedded{false};
    std::shared_ptr<const ByteVector> owned;  // bytes copied from the host, when mounted from memory
    ByteVector manifest_bytes;                // a compressed manifest, decoded (a stored one is viewed in place)
    std::shared_ptr<ReferenceMemo> references{std::make_shared<ReferenceMemo>()};  // decoded prefix bases, for the loads
    // Its kernels' C++ spellings, built on first need (kernel_names.hpp).
    std::shared_ptr<KernelNamesOnce> names{std::make_shared<KernelNamesOnce>()};
    // Images decoded ahead of their loads (readahead.hpp). Last: its workers stop before the
    // archive they read goes.
    std::unique_ptr<Readahead, ReadaheadDeleter> readahead{new Readahead()};
    // Whether the archive's kernels follow the SDM hardware matrix (its manifest says so).
    bool follows_matrix() const noexcept { return manifest && manifest->hardware_matrix; }
};

class Runtime {
public:
    explicit Runtime(RuntimeOptions options);
    Runtime(const Runtime&) = delete;
    Runtime& operator=(const Runtime&) = delete;

    const Logger& log() const noexcept { return log_; }
    // The driver, loaded on first need. A failure is returned (and logged) but not kept: a later
    // call tries again.
    Result<std::shared_ptr<Driver>> driver();
    Devices& devices() noexcept { return devices_; }
    // The contexts device work runs in (loads the driver on first need).
    Result<Contexts*> contexts();
    // Whether fetches use the calling thread's current context (SDM_RUNTIME_CURRENT_CONTEXT).
    bool follows_current_context() const noexcept { return options_.contexts.current; }

    // The cache, opened on first need; null when it cannot be used (the reason is logged once as a
    // warning, and images are then built every time).
    Cache* cache();
    // nvJitLink, loaded into this process on first need; null when absent (nvjitlink_error() says
    // why). Shared: a link under the watchdog that outlives its fetch keeps it.
    std::shared_ptr<const NvJitLink> nvjitlink();
    std::string nvjitlink_error();
    // Where nvJitLink is, found without loading it: what keys the cache for its builds (the file's
    // identity), and what the JIT helper loads. nullopt when it cannot be located without loading
    // (then nvjitlink() decides).
    std::optional<NvJitLinkLocation> nvjitlink_location();
    const JitPolicy& jit_policy() const noexcept { return options_.jit; }
    const JitIsolationSettings& jit_isolation() const noexcept { return isolation_; }
    // How many modules ahead a compressed image's load decodes (readahead.hpp; $SDM_READAHEAD).
    size_t readahead_modules() const noexcept { return readahead_modules_; }
    // The JIT helper's command line, located on first need (jit_helper_command).
    Result<std::vector<std::string>> jit_helper();
    Modules& modules() noexcept { return *modules_; }
    ImagePolicy& image_policy() noexcept { return image_policy_; }
    Plugins& plugins() noexcept { return plugins_; }
    uint16_t kernel_abi_major() const noexcept { return options_.kernel_abi_major; }
    const Provenance& provenance() const noexcept { return provenance_; }

    Result<void> mount_file(const std::string& path);
    Result<void> mount_memory(Bytes bytes, const std::string& label);
    std::vector<std::shared_ptr<const MountedArchive>> archives() const;
    // Hot reload: remounts the archive files that changed on disk since they were mounted (every
    // file archive when `changed_only` is false; one whose content is byte-identical is kept).
    // A new version takes the old one's place in the layer order: new fetches get its images,
    // kernels fetched before keep working until released. A file that fails to mount leaves the
    // old version serving; the first such error is returned (after every file was tried), and
    // each is logged. `reloaded` counts the archives replaced. With `changed_only` (a poll), a
    // version of a file that was refused before is not tried (nor reported) again until it changes.
    Result<void> reload(bool changed_only, uint32_t& reloaded);
    // Archives of $SDM_ARCHIVE_PATH that could not be mounted, each with why.
    std::vector<std::string> skipped_archives() const;
    // Changes whenever the set of mounted archives does (a mount, a reload).
    uint64_t mount_generation() const noexcept { return generation_.load(std::memory_order_acquire); }

    // Records an error a call on this runtime returned (for sdm_runtime_last_error) and logs it at
    // debug level.
    void record_error(const Error& error);
    std::optional<Error> last_error() const;

private:
    Result<void> check_compatible(const archive::Archive& archive) const;
    Result<void> mount(std::shared_ptr<MountedArchive> mounted);

    RuntimeOptions options_;
    Logger log_;
    Provenance provenance_;
    ImagePolicy image_policy_{log_};
    Plugins plugins_{log_};  // after log_; destroyed after modules_ (declared before it)
    Devices devices_;
    mutable std::mutex mutex_;
    std::shared_ptr<Driver> driver_;
    std::unique_ptr<Contexts> contexts_;  // released before driver_ (declared after it)
    std::once_flag cache_once_, nvjitlink_once_;
    std::unique_ptr<Cache> cache_;
    std::shared_ptr<const NvJitLink> nvjitlink_;
    JitIsolationSettings isolation_;
    size_t readahead_modules_;
    std::once_flag helper_once_;
    std::optional<Result<std::vector<std::string>>> helper_;
    std::once_flag locate_once_;
    std::optional<NvJitLinkLocation> nvjitlink_location_;
    std::string nvjitlink_error_;
    std::unique_ptr<Modules> modules_;    // unloaded first: declared last
    std::vector<std::shared_ptr<const MountedArchive>> archives_;
    std::atomic<uint64_t> generation_{0};
    std::vector<std::string> skipped_;
    std::mutex reload_mutex_;  // one reload at a time
    // path -> the on-disk version (device, inode, size, mtime) a reload refused: polls skip it.
    std::map<std::string, std::tuple<uint64_t, uint64_t, uint64_t, int64_t>> refused_;
    std::optional<Error> last_error_;
};

}  // namespace sdm::runtime
