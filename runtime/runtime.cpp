#include "runtime.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string_view>

#include <sys/stat.h>

#include "embedded_archive.hpp"
#include "archive/file_map.hpp"
#include "platform.hpp"
#include "archive/verify.hpp"

namespace sdm::runtime {

Runtime::Runtime(RuntimeOptions options)
    : options_(std::move(options)),
      log_(options_.log_sink, options_.log_level),
      provenance_(options_.signatures, options_.embedded_key ? std::optional<std::string_view>(*options_.embedded_key) : embedded_archive_key(), log_),
      devices_([this] { return driver(); }),
      isolation_(JitIsolationSettings::resolve(options_.isolation, log_)),
      readahead_modules_(readahead_modules_from_environment(log_)),
      modules_(std::make_unique<Modules>(*this)) {
    // The embedded archive first (the SDM kernels, when this libsdm was built with nvcc).
    if (options_.mount_embedded) {
        if (const auto bytes = options_.embedded_bytes ? options_.embedded_bytes : embedded_archive()) {
            auto a = archive::Archive::open_memory(*bytes, options_.embedded_label);
            auto mounted = a ? mount(std::make_shared<MountedArchive>(MountedArchive{std::move(*a), std::nullopt, true, nullptr, {}}))
                             : Result<void>(std::move(a).error());
            if (!mounted) log_.error("the archive embedded in this libsdm does not mount: " + mounted.error().message);
        } else {
            log_.debug("this libsdm was built without an embedded archive (no nvcc, -Dkernels=disabled, or -Dtools=disabled: packing the kernels runs the sdm tool)");
        }
    }
    // Plan-provider plugins of $SDM_PLUGIN_PATH; one that cannot be used is logged and skipped.
    for (const auto& file : platform::env_list("SDM_PLUGIN_PATH"))
        if (auto loaded = plugins_.load(file); !loaded) log_.warn("skipped plugin " + file + " of SDM_PLUGIN_PATH: " + loaded.error().message);
    // Then the files of $SDM_ARCHIVE_PATH, in order (later ones take precedence). One that cannot
    // be mounted is logged and skipped; the others serve.
    for (const auto& file : platform::env_list("SDM_ARCHIVE_PATH")) {
        if (auto mounted = mount_file(file); !mounted) {
            const std::string why = "skipped archive " + file + " of SDM_ARCHIVE_PATH: " + mounted.error().message;
            log_.warn(why);
            std::lock_guard lock(mutex_);
            skipped_.push_back(why);
        }
    }
}

std::vector<std::string> Runtime::skipped_archives() const {
    std::lock_guard lock(mutex_);
    return skipped_;
}

Result<std::shared_ptr<Driver>> Runtime::driver() {
    std::lock_guard lock(mutex_);
    if (driver_) return driver_;
    const auto started = std::chrono::steady_clock::now();
    auto loaded = Driver::load(options_.cuda_driver);
    if (log_.enabled(LogLevel::debug))
        log_.debug("driver load: " + std::to_string(std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - started).count()) +
                   " us");
    if (!loaded) {
        log_.debug(loaded.error().message);
        return loaded;
    }
    driver_ = std::move(*loaded);
    log_.info("loaded CUDA driver " + driver_->path() + " version " + std::to_string(driver_->version()));
    return driver_;
}

Cache* Runtime::cache() {
    std::call_once(cache_once_, [this] {
        // The driver's own switch for its JIT cache turns sdm's off too (docs/CACHE.md).
        if (const char* off = std::getenv("CUDA_CACHE_DISABLE"); off != nullptr && std::string_view(off) == "1") {
            log_.info("the kernel cache is off: CUDA_CACHE_DISABLE=1 (it turns off the driver's JIT cache, and sdm's with it); every JIT builds again");
            return;
        }
        CacheOptions options = options_.cache;
        options.store_failed = [this](const std::string& why) { log_.warn(why); };
        options.authenticate = provenance_.authenticate_cache();
        auto opened = Cache::open(options);
        if (opened) cache_ = std::move(*opened);
        else log_.warn("the kernel cache is off: " + opened.error().message);
    });
    return cache_ && !cache_->disabled() ? cache_.get() : nullptr;
}

std::optional<NvJitLinkLocation> Runtime::nvjitlink_location() {
    std::call_once(locate_once_, [this] { nvjitlink_location_ = locate_nvjitlink(options_.nvjitlink); });
    return nvjitlink_location_;
}

std::shared_ptr<const NvJitLink> Runtime::nvjitlink() {
    const auto located = nvjitlink_location();
    std::call_once(nvjitlink_once_, [&] {
        auto loaded = NvJitLink::load(located ? located->file : options_.nvjitlink);
        if (loaded) nvjitlink_ = std::make_shared<const NvJitLink>(std::move(*loaded));
        else nvjitlink_error_ = loaded.error().message;
    });
    return nvjitlink_;
}

Result<std::vector<std::string>> Runtime::jit_helper() {
    std::call_once(helper_once_, [this] { helper_.emplace(jit_helper_command(isolation_)); });
    return *helper_;
}

std::string Runtime::nvjitlink_error() {
    (void)nvjitlink();
    return nvjitlink_error_;
}

Result<Contexts*> Runtime::contexts() {
    SDM_TRY_GET(d, driver());
    std::lock_guard lock(mutex_);
    if (!contexts_) contexts_ = std::make_unique<Contexts>(*d, options_.contexts, log_);
    return contexts_.get();
}

Result<void> Runtime::check_compatible(const archive::Archive& a) const {
    const auto& h = a.header();
    if (options_.kernel_abi_major != 0 && h.kernel_abi_major != options_.kernel_abi_major)
        return make_error(ErrorCode::mismatch, "archive " + a.label() + " holds kernels of kernel ABI " + std::to_string(h.kernel_abi_major) + "." +
                                                   std::to_string(h.kernel_abi_minor) + ", but this host was built for kernel ABI " +
                                                   std::to_string(options_.kernel_abi_major) + ".x (sdm_runtime_params.kernel_abi_major). Use an archive built for kernel ABI " +
                                                   std::to_string(options_.kernel_abi_major) + ", or rebuild the host for " + std::to_string(h.kernel_abi_major));
    return {};
}

namespace {

// The manifest indexed in place (a stored one, as the sdm writer writes it, is never copied); each
// kernel's fields are decoded at its first use.
Result<void> decode_manifest_of(MountedArchive& mounted) {
    const auto index = mounted.archive.find_manifest();
    if (!index) return {};
    Bytes bytes;
    if (mounted.archive.entries()[*index].codec == archive::Codec::stored) {
        SDM_TRY_GET(view, mounted.archive.view(*index));
        bytes = *view;
    } else {
        SDM_TRY_GET(raw, mounted.archive.read(*index));
        mounted.manifest_bytes = std::move(*raw);
        bytes = mounted.manifest_bytes;
    }
    auto built = archive::ManifestIndex::build(bytes);
    if (!built) return make_error(built.error().code, mounted.archive.describe(*index) + ": " + built.error().message);
    mounted.manifest = std::move(*built);
    return {};
}

// What identifies a file's version on disk: device, inode, size, modification time (ns).
using FileVersion = std::tuple<uint64_t, uint64_t, uint64_t, int64_t>;

std::optional<FileVersion> on_disk(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return std::nullopt;
    return FileVersion{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino), static_cast<uint64_t>(st.st_size),
                       static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec};
}

FileVersion mapped(const archive::FileMap& map) { return {map.device(), map.inode(), map.bytes().size(), map.mtime_ns()}; }

}  // namespace

Result<void> Runtime::reload(bool changed_only, uint32_t& reloaded) {
    reloaded = 0;
    std::lock_guard serial(reload_mutex_);
    std::optional<Error> first;
    for (const auto& old : archives()) {
        const archive::FileMap* map = old->archive.file();
        if (map == nullptr || old->embedded) continue;  // memory and embedded archives do not change
        const auto now = on_disk(map->path());
        if (changed_only && now == mapped(*map)) continue;
        {  // a poll reports a refused version once; sdm_runtime_reload tries it again
            std::lock_guard lock(mutex_);
            const auto refused = refused_.find(map->path());
            if (changed_only && refused != refused_.end() && now && refused->second == *now) continue;
        }
        auto fresh = [&]() -> Result<std::shared_ptr<MountedArchive>> {
            SDM_TRY_GET(a, archive::Archive::open_file(map->path()));
            // Admitted first, as a mount is: the policy and the kernel ABI read only the metadata,
            // and an archive they refuse (an unsigned one under require) costs no decoding.
            SDM_TRY(provenance_.admit(*a, false));
            SDM_TRY(check_compatible(*a));
            // A new version replaces one that works only when all of it is sound: every checksum,
            // every image against its declared target, the manifest.
            SDM_TRY(archive::verify_archive(*a));
            auto m = std::make_shared<MountedArchive>(MountedArchive{std::move(*a), std::nullopt, false, nullptr, {}});
            SDM_TRY(decode_manifest_of(*m));
            return m;
        }();
        if (!fresh) {
            Error e = std::move(fresh).error();
            e.message = "reloading " + map->path() + " failed; the version mounted before keeps serving: " + e.message;
            log_.warn(e.message);
            if (now) {
                std::lock_guard lock(mutex_);
                refused_[map->path()] = *now;
            }
            if (!first) first = std::move(e);
            continue;
        }
        // Byte-identical metadata (every entry's checksums included) is the same archive: keep it.
        const auto meta = [](const archive::Archive& a) { return a.file()->bytes().first(static_cast<size_t>(a.header().payload_offset)); };
        const auto before = meta(old->archive), after = meta((*fresh)->archive);
        if (before.size() == after.size() && std::equal(before.begin(), before.end(), after.begin())) continue;
        {
            std::lock_guard lock(mutex_);
            std::replace(archives_.begin(), archives_.end(), old, std::shared_ptr<const MountedArchive>(*fresh));
            generation_.fetch_add(1, std::memory_order_acq_rel);
        }
        modules_->retire(old.get());
        ++reloaded;
        log_.info("reloaded archive " + map->path() + " (" + std::to_string((*fresh)->archive.entries().size()) + " entries)");
    }
    if (first) return *first;
    return {};
}

Result<void> Runtime::mount(std::shared_ptr<MountedArchive> mounted) {
    SDM_TRY(provenance_.admit(mounted->archive, mounted->embedded));
    SDM_TRY(check_compatible(mounted->archive));
    SDM_TRY(decode_manifest_of(*mounted));
    log_.info("mounted archive " + mounted->archive.label() + " (" + std::to_string(mounted->archive.entries().size()) + " entries)");
    std::lock_guard lock(mutex_);
    archives_.push_back(std::move(mounted));
    generation_.fetch_add(1, std::memory_order_acq_rel);
    return {};
}

Result<void> Runtime::mount_file(const std::string& path) {
    SDM_TRY_GET(a, archive::Archive::open_file(path));
    auto mounted = std::make_shared<MountedArchive>(MountedArchive{std::move(*a), std::nullopt, false, nullptr, {}});
    return mount(std::move(mounted));
}

Result<void> Runtime::mount_memory(Bytes bytes, const std::string& label) {
    auto owned = std::make_shared<const ByteVector>(bytes.begin(), bytes.end());
    SDM_TRY_GET(a, archive::Archive::open_memory(*owned, label, owned));
    return mount(std::make_shared<MountedArchive>(MountedArchive{std::move(*a), std::nullopt, false, owned, {}}));
}

std::vector<std::shared_ptr<const MountedArchive>> Runtime::archives() const {
    std::lock_guard lock(mutex_);
    return archives_;
}

void Runtime::record_error(const Error& error) {
    log_.debug(error.message);
    std::lock_guard lock(mutex_);
    last_error_ = error;
}

std::optional<Error> Runtime::last_error() const {
    std::lock_guard lock(mutex_);
    return last_error_;
}

}  // namespace sdm::runtime
