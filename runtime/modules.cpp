#include "modules.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <new>
#include <set>
#include <system_error>
#include <thread>

#include <gsl/util>  // gsl::finally

#include "cache.hpp"
#include "context.hpp"
#include "image.hpp"
#include "jit_nvjitlink.hpp"
#include "jit_ptxcompiler.hpp"
#include "runtime.hpp"
#include "select.hpp"

namespace sdm::runtime {
namespace {

using archive::Kind;

std::string device_text(const DeviceProperties& p, DeviceClass c) {
    return "device " + std::to_string(p.ordinal) + " (" + p.name + ", compute capability " + std::to_string(p.capability.major) + "." +
           std::to_string(p.capability.minor) + ", class " + device_class_name(c) + ")";
}

// The driver's JIT wants NUL-terminated PTX.
ByteVector terminated(ByteVector text) {
    if (text.empty() || text.back() != std::byte{0}) text.push_back(std::byte{0});
    return text;
}

}  // namespace

Result<void> check_signature(const std::string& kernel, const std::string& archive, const std::string& signature, std::string_view expected) {
    auto parsed = archive::parse_signature(expected);
    if (!parsed)
        return make_error(ErrorCode::invalid_argument, "the signature expected for kernel " + kernel + " ('" + std::string(expected) +
                                                           "') does not parse: " + parsed.error().message);
    const std::string want = archive::signature_text(*parsed);
    if (want != signature)
        return make_error(ErrorCode::mismatch, "kernel " + kernel + " of archive " + archive + " takes (" + signature +
                                                   "), but the host was built for (" + want +
                                                   "). Use an archive built for this host, or rebuild the host against this archive's kernels");
    return {};
}

Modules::~Modules() {
    if (load_order_.empty()) return;  // nothing was loaded: no driver to load just to unload nothing
    auto driver = runtime_.driver();
    if (!driver) return;
    for (auto it = load_order_.rbegin(); it != load_order_.rend(); ++it) {
        Slot& s = **it;
        if (s.module == nullptr) continue;
        auto scope = ContextScope::enter(**driver, s.context);
        if (!scope) {
            runtime_.log().error("unloading a module: " + scope.error().message);
            continue;
        }
        auto r = SDM_DRIVER_CALL(**driver, cuModuleUnload, "unloading module " + std::get<2>(s.key), s.module);
        if (!r) runtime_.log().error(r.error().message);
    }
}

void Modules::unload_locked(std::shared_ptr<Slot> s) {
    // `s` is registered: loaded, its module written before it was registered under mutex_.
    if (auto driver = runtime_.driver()) {
        auto scope = ContextScope::enter(**driver, s->context);
        auto r = scope ? SDM_DRIVER_CALL(**driver, cuModuleUnload, "unloading module " + std::get<2>(s->key) + " of a replaced archive", s->module)
                       : Result<void>(std::move(scope).error());
        if (!r) runtime_.log().error(r.error().message);
    }
    s->module = nullptr;
    s->unloaded.store(true, std::memory_order_release);
    runtime_.log().info("unloaded module " + std::get<2>(s->key) + " of a replaced archive: no kernel of it is held any more");
    if (const auto it = slots_.find(s->key); it != slots_.end() && it->second == s) slots_.erase(it);
    std::erase(load_order_, s);
    // Kept a while, so that a handle used after its release is reported, not a crash; the oldest
    // go, so that a host reloading every frame does not grow without bound.
    unloaded_.push_back(s);
    if (unloaded_.size() > kUnloadedKept) unloaded_.pop_front();
    for (auto it = served_.begin(); it != served_.end();) it = it->second.second == s ? served_.erase(it) : std::next(it);
    const auto pinned = std::find_if(pinned_.begin(), pinned_.end(), [&](const auto& a) { return a.get() == std::get<1>(s->key); });
    if (pinned != pinned_.end()) pinned_.erase(pinned);  // one pin per loaded slot
}

void Modules::retire(const MountedArchive* old) {
    std::lock_guard lock(mutex_);
    std::vector<std::shared_ptr<Slot>> idle;
    // Registered slots only: one still loading retires itself when it registers (kernel()).
    for (const auto& s : load_order_) {
        if (std::get<1>(s->key) != old) continue;
        s->retired = true;
        if (s->references == 0) idle.push_back(s);
    }
    for (const auto& s : idle) unload_locked(s);
}

Result<void> Modules::release(const KernelHandle& kernel) {
    std::lock_guard lock(mutex_);
    Slot* raw = kernel.slot;
    if (raw == nullptr || raw->references <= 0)
        return make_error(ErrorCode::invalid_argument, "kernel " + kernel.name + " was released more often than it was fetched");
    if (--raw->references == 0 && raw->retired) {
        // Registered slots are in load_order_ (a retired one may be gone from slots_ already).
        const auto it = std::find_if(load_order_.begin(), load_order_.end(), [&](const auto& p) { return p.get() == raw; });
        if (it != load_order_.end()) unload_locked(*it);
    }
    return {};
}

Result<Serving> Modules::serving(int32_t ordinal, const std::string& name) {
    const auto archives = runtime_.archives();
    std::string mounted;
    std::optional<Error> newest_no_image;
    std::vector<std::string> passed_over;
    std::optional<std::string> device;
    std::optional<DeviceClass> cls;
    std::optional<DeviceProperties> props;
    const DriverSwitches switches = DriverSwitches::from_environment();
    for (auto it = archives.rbegin(); it != archives.rend(); ++it) {  // the newest mount first
        const MountedArchive& m = **it;
        mounted += (mounted.empty() ? "" : ", ") + m.archive.label();
        if (!m.manifest) continue;
        const auto* spec = m.manifest->find_kernel(name);
        if (spec == nullptr) continue;
        if (!device) {  // the device is read once a listing archive is found
            SDM_TRY_GET(p, runtime_.devices().properties(ordinal));
            SDM_TRY_GET(c, runtime_.devices().device_class(ordinal));
            props = *p;
            cls = *c;
            device = device_text(*p, *c);
        }
        std::vector<ImageCandidate> candidates;
        const auto [first, last] = m.archive.find_name(spec->module);
        for (size_t i = first; i < last; ++i) {
            const auto& e = m.archive.entries()[i];
            if (archive::kind_has_arch(e.kind) || e.kind == Kind::fatbin) candidates.push_back({i, e.kind, e.sm, e.variant});
        }
        auto selected = select_image(candidates, {props->capability, *cls, *device}, spec->module, "archive " + m.archive.label(), switches);
        if (selected) return Serving{*it, spec->module, std::move(*selected), *device, std::move(passed_over), switches};
        if (selected.error().code != ErrorCode::no_image) return std::move(selected).error();
        passed_over.push_back(m.archive.label() + ": " + selected.error().message);
        if (!newest_no_image) newest_no_image = std::move(selected).error();
    }
    if (newest_no_image) {
        if (passed_over.size() > 1)
            newest_no_image->message += " (no older mounted archive listing " + name + " has one either: " + std::to_string(passed_over.size()) +
                                        " archives tried)";
        return *newest_no_image;
    }
    return make_error(ErrorCode::not_found, "kernel " + name + " is in no mounted archive (" + (mounted.empty() ? "none is mounted" : "mounted: " + mounted) +
                                                "); mount the archive that lists it");
}

std::shared_ptr<Modules::Slot> Modules::slot(const Key& key) {
    std::lock_guard lock(mutex_);
    auto& s = slots_[key];
    if (!s) {
        s = std::make_shared<Slot>();
        s->key = key;
    }
    return s;
}

Result<const KernelHandle*> Modules::kernel(int32_t ordinal, const std::string& name, CUstream stream, std::optional<std::string_view> expected) {
    const uint64_t generation = runtime_.mount_generation();
    {  // the usual call: this kernel was served before, and nothing was mounted since
        std::lock_guard lock(mutex_);
        const auto it = served_.find(std::pair(ordinal, name));
        if (it != served_.end() && it->second.first == generation && !it->second.second->retired) {
            const auto k = it->second.second->kernels.find(name);
            if (k != it->second.second->kernels.end()) {
                const KernelHandle& handle = *k->second;
                if (expected) SDM_TRY(check_signature(handle.name, handle.archive, handle.signature, *expected));  // before the reference
                ++it->second.second->references;
                return &handle;
            }
        }
    }
    for (;;) {
        SDM_TRY_GET(serve, serving(ordinal, name));
        if (expected) {  // checked against the manifest before anything is loaded or referenced
            const archive::KernelSpec* spec = serve->archive->manifest->find_kernel(name);
            SDM_TRY(check_signature(name, serve->archive->archive.label(), archive::signature_text(spec->signature), *expected));
        }
        auto s = slot({ordinal, serve->archive.get(), serve->module});
        std::lock_guard lock(s->mutex);  // one load per module; later callers find it loaded
        if (!s->loaded) SDM_TRY(load(*s, ordinal, *serve, stream));
        const auto it = s->kernels.find(name);
        if (it == s->kernels.end()) return make_error(ErrorCode::internal, "kernel " + name + " vanished from its loaded module " + serve->module);
        std::lock_guard registry(mutex_);
        // Replaced while this call loaded it? Then it registers retired. (Checked under mutex_: a
        // reload replaces the archive first, then retires the registered slots under mutex_.)
        const auto mounted = runtime_.archives();
        const bool current = std::any_of(mounted.begin(), mounted.end(), [&](const auto& a) { return a == serve->archive; });
        // A reload may have unloaded it between the load and here (retired, with no reference
        // yet): serve again, from what is mounted now.
        if (s->unloaded.load(std::memory_order_acquire)) continue;
        if (std::find(load_order_.begin(), load_order_.end(), s) == load_order_.end()) {
            load_order_.push_back(s);
            pinned_.push_back(serve->archive);
        }
        if (!current) s->retired = true;
        ++s->references;  // retired or not: the reference keeps it loaded until released
        if (!s->retired) served_[std::pair(ordinal, name)] = {generation, s};
        return it->second.get();
    }
}

namespace {

// At debug level: where a load spends its time, phase by phase, in one line.
class PhaseTrace {
public:
    explicit PhaseTrace(bool enabled) : enabled_(enabled), last_(std::chrono::steady_clock::now()) {}
    void mark(const char* phase) {
        if (!enabled_) return;
        const auto now = std::chrono::steady_clock::now();
        text_ += std::string(text_.empty() ? "" : ", ") + phase + " " +
                 std::to_string(std::chrono::duration_cast<std::chrono::microseconds>(now - last_).count()) + " us";
        last_ = now;
    }
    const std::string& text() const noexcept { return text_; }

private:
    bool enabled_;
    std::chrono::steady_clock::time_point last_;
    std::string text_;
};

}  // namespace

Result<void> Modules::load(Slot& slot, int32_t ordinal, const Serving& serving, CUstream stream) {
    PhaseTrace trace(runtime_.log().enabled(LogLevel::debug));
    const MountedArchive& mounted = *serving.archive;
    const std::string& module = serving.module;
    const archive::Archive& a = mounted.archive;
    SDM_TRY_GET(props, runtime_.devices().properties(ordinal));
    SDM_TRY_GET(cls, runtime_.devices().device_class(ordinal));
    const std::string& device = serving.device;
    const DriverSwitches& switches = serving.switches;
    const Selection* selected = &serving.selection;
    trace.mark("device");
    const auto& entry = a.entries()[selected->image.index];
    const std::string image = a.describe(selected->image.index);

    SDM_TRY_GET(driver_result, runtime_.driver());
    Driver& driver = **driver_result;
    SDM_TRY_GET(contexts, runtime_.contexts());
    SDM_TRY_GET(context, (*contexts)->get(ordinal));
    SDM_TRY_GET(scope, ContextScope::enter(driver, *context));
    trace.mark("select+context");

    Cache* cache = runtime_.cache();  // null: no usable cache (logged once); images are built every time
    ImageSource source = ImageSource::archive_cubin;
    std::optional<Hash128> cache_key;
    ByteVector owned;
    Bytes bytes;
    CUmodule cu_module = nullptr;
    const auto not_capturing = [&]() -> Result<void> {
        CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
        SDM_TRY(SDM_DRIVER_CALL(driver, cuStreamIsCapturing, "checking the stream for graph capture before a JIT", stream, &status));
        if (status != CU_STREAM_CAPTURE_STATUS_NONE)
            return make_error(ErrorCode::graph_capture, "loading module " + module + " on " + device + " needs a JIT of " + image +
                                                            ", but the stream is capturing a CUDA graph. Load it before capture: "
                                                            "sdm_preload, or one sdm_kernel_get outside the capture");
        return {};
    };
    // The driver trusts an image's headers (the real one crashes on an ELF header that points past
    // the image), and so do the JIT backends: every image an archive holds passes the checks
    // `sdm verify` runs before a backend or the driver sees it, and so does every image a backend
    // or the cache hands back.
    const auto from_archive = [&](Bytes raw) -> Result<void> {
        auto info = archive::check_declared_target(entry.kind, entry.sm, entry.variant, raw, image);
        if (!info) return make_error(info.error().code, info.error().message + "; it is not loaded");
        return {};
    };
    const auto well_formed = [&](Kind kind, Bytes raw, const std::string& what) -> Result<void> {
        auto info = archive::inspect_image(kind, raw);
        if (!info) return make_error(ErrorCode::archive_corrupt, what + ": " + info.error().message + "; it is not loaded");
        return {};
    };
    // Through the cache: a hit that fails the checks is evicted and built again.
    const auto cached = [&](const Hash128& key, Kind kind, ImageSource built_by, const std::function<Result<ByteVector>()>& build) -> Result<void> {
        cache_key = key;
        bool ran = false;
        const auto run = [&]() -> Result<ByteVector> {
            ran = true;
            auto built = build();
            if (!built) return built;
            SDM_TRY(well_formed(kind, *built, "the image built from " + image));
            return built;
        };
        SDM_TRY_GET(got, cache != nullptr ? cache->get_or_build(key, run) : run());
        if (!ran) {
            if (auto checked = well_formed(kind, *got, "the cache entry for " + image + " (" + cache->entry_path(key) + ")"); !checked) {
                runtime_.log().warn(checked.error().message + "; it was removed, and the image is built again");
                cache->evict(key);
                got = cache->get_or_build(key, run);  // gone now: built, checked and stored
                if (!got) return std::move(got).error();
            }
        }
        source = ran || cache == nullptr ? built_by : ImageSource::cache;
        owned = std::move(*got);
        bytes = owned;
        return {};
    };

    if (selected->path == SelectionPath::cubin && entry.codec == archive::Codec::stored) {
        auto view = a.view(selected->image.index);  // checked, zero-copy from the mapping
        if (!view) return std::move(view).error();
        SDM_TRY(from_archive(*view));
        bytes = *view;
    } else if (selected->path == SelectionPath::cubin || selected->path == SelectionPath::fatbin) {
        // Compressed: the verified raw image is kept in the cache, so a warm start skips the decompression.
        const Kind kind = selected->path == SelectionPath::fatbin ? Kind::fatbin : Kind::cubin;
        SDM_TRY(cached(CacheKeyBuilder().field("raw image").field(entry.raw_hash).field(entry.raw_size).key(), kind,
                       selected->path == SelectionPath::fatbin ? ImageSource::fatbin : ImageSource::archive_cubin,
                       [&]() -> Result<ByteVector> {
                           auto raw = a.read(selected->image.index);
                           if (raw) SDM_TRY(from_archive(*raw));
                           return raw;
                       }));
    } else {
        SDM_TRY_GET(input, a.read(selected->image.index));
        SDM_TRY(from_archive(*input));
        const std::string target = archive::target_name(Kind::cubin, selected->target_sm, selected->target_variant);
        // The cache key names nvJitLink by the identity of its file, so a warm hit never loads it.
        std::string identity = runtime_.jit_policy().nvjitlink ? runtime_.nvjitlink_identity() : std::string();
        const NvJitLink* jit = nullptr;
        if (runtime_.jit_policy().nvjitlink && identity.empty()) {
            jit = runtime_.nvjitlink();  // not locatable without loading: load it, and key by its file
            if (jit != nullptr) identity = jit->file();
        }
        const bool ptx_compiler = runtime_.jit_policy().ptx_compiler && ptx_compiler_built() && entry.kind == Kind::ptx;
        if (!identity.empty()) {
            const auto key = CacheKeyBuilder()
                                 .field("nvJitLink link")
                                 .field(entry.raw_hash)
                                 .field(target)
                                 .field(identity)
                                 .field(static_cast<uint64_t>(driver.version()))
                                 .key();
            SDM_TRY(cached(key, Kind::cubin, ImageSource::nvjitlink, [&]() -> Result<ByteVector> {
                SDM_TRY(not_capturing());
                const NvJitLink* linker = runtime_.nvjitlink();
                if (linker == nullptr) return make_error(ErrorCode::jit, "loading " + image + " needs nvJitLink: " + runtime_.nvjitlink_error());
                auto out = linker->link({entry.kind, *input, module + "." + entry.target()}, selected->target_sm, selected->target_variant, {});
                if (!out) return std::move(out).error();
                runtime_.log().info("linked " + image + " for " + target + " with nvJitLink " + linker->version() + " in " +
                                    std::to_string(out->milliseconds) + " ms");
                return std::move(out->cubin);
            }));
        } else if (ptx_compiler) {
            SDM_TRY_GET(version, ptx_compiler_version());
            const auto key = CacheKeyBuilder()
                                 .field("nvPTXCompiler compile")
                                 .field(entry.raw_hash)
                                 .field(target)
                                 .field(*version)
                                 .field(static_cast<uint64_t>(driver.version()))
                                 .key();
            SDM_TRY(cached(key, Kind::cubin, ImageSource::ptx_compiler, [&]() -> Result<ByteVector> {
                SDM_TRY(not_capturing());
                auto out = ptx_compile({entry.kind, *input, module + "." + entry.target()}, selected->target_sm, selected->target_variant, {});
                if (!out) return std::move(out).error();
                runtime_.log().info("compiled " + image + " for " + target + " with nvPTXCompiler " + *version + " in " +
                                    std::to_string(out->milliseconds) + " ms");
                return std::move(out->cubin);
            }));
        } else if (runtime_.jit_policy().driver && !switches.disable_ptx_jit && entry.kind == Kind::ptx) {
            SDM_TRY(not_capturing());
            source = ImageSource::driver_jit;
            owned = terminated(std::move(*input));
            char error_log[16384] = {0};
            char info_log[4096] = {0};
            CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, CU_JIT_INFO_LOG_BUFFER,
                                      CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES};
            void* values[] = {error_log, reinterpret_cast<void*>(sizeof error_log), info_log, reinterpret_cast<void*>(sizeof info_log)};
            auto loaded = SDM_DRIVER_CALL(driver, cuModuleLoadDataEx, "the driver's JIT of " + image + " on " + device, &cu_module, owned.data(), 4u,
                                          options, values);
            if (!loaded) {
                Error e = std::move(loaded).error();
                e.code = ErrorCode::jit;
                e.log = error_log;
                if (!e.log.empty()) e.message += ":\n" + e.log;
                return e;
            }
        } else {
            const std::string ptxc = !runtime_.jit_policy().ptx_compiler ? "nvPTXCompiler is forbidden by the host"
                                     : !ptx_compiler_built()          ? "this libsdm was built without nvPTXCompiler"
                                                                      : "nvPTXCompiler compiles PTX only";
            return make_error(ErrorCode::jit, "loading " + image + " on " + device + " needs a JIT, and no backend may run: " +
                                                  (runtime_.jit_policy().nvjitlink ? runtime_.nvjitlink_error() : std::string("nvJitLink is forbidden by the host")) +
                                                  "; " + ptxc +
                                                  (!runtime_.jit_policy().driver ? "; the driver's JIT is forbidden by the host"
                                                   : switches.disable_ptx_jit ? "; the driver's JIT is off (CUDA_DISABLE_PTX_JIT=1 is set)"
                                                                              : ""));
        }
    }
    trace.mark("image");
    if (cu_module == nullptr) {
        auto loaded = SDM_DRIVER_CALL(driver, cuModuleLoadData, "loading " + image + " on " + device, &cu_module, bytes.data());
        if (!loaded) {
            if (source == ImageSource::cache && cache_key) cache->evict(*cache_key);
            return std::move(loaded).error();
        }
    }
    trace.mark("cuModuleLoad");
    // From here every way out but success unloads the module again, an exception's included.
    bool kept = false;
    const auto unload_unless_kept = gsl::finally([&]() noexcept {
        if (kept) return;
        try {
            (void)SDM_DRIVER_CALL(driver, cuModuleUnload, "unloading module " + module + ", whose load did not complete", cu_module);
        } catch (...) {  // no memory for the message: the module stays loaded until the context goes
        }
    });
    // Every kernel the manifest lists for this module must resolve.
    std::vector<std::unique_ptr<KernelHandle>> handles;
    std::string missing;
    for (const auto& spec : mounted.manifest->kernels) {
        if (spec.module != module) continue;
        CUfunction function = nullptr;
        auto got = SDM_DRIVER_CALL(driver, cuModuleGetFunction, "resolving kernel " + spec.name, &function, cu_module, spec.name.c_str());
        if (!got) {
            missing += (missing.empty() ? "" : ", ") + spec.name;
            continue;
        }
        auto h = std::make_unique<KernelHandle>();
        h->slot = &slot;
        h->name = spec.name;
        h->module = module;
        h->archive = a.label();
        h->signature = archive::signature_text(spec.signature);
        h->ordinal = ordinal;
        h->function = function;
        h->image_kind = entry.kind;
        h->image_sm = entry.sm;
        h->loaded_sm = selected->path == SelectionPath::jit ? selected->target_sm : entry.sm;
        h->source = source;
        auto table = PlanTable::compile(spec);  // validated at mount: this parses what decode_manifest accepted
        if (!table) return std::move(table).error();
        h->launcher = std::make_unique<Launcher>(runtime_, ordinal, function, spec.name, module, a.label(), spec.signature, std::move(*table));
        handles.push_back(std::move(h));
    }
    if (!missing.empty()) {
        std::string evicted;
        if (cache != nullptr && cache_key && (source == ImageSource::cache || source == ImageSource::nvjitlink)) {
            cache->evict(*cache_key);
            evicted = "; its cache entry was removed";
        }
        return make_error(ErrorCode::not_found, "module " + module + " of archive " + a.label() + " (" + image + ", loaded on " + device +
                                                    ") lacks kernel(s) " + missing + " that the manifest lists" + evicted +
                                                    ". Rebuild the archive so its images define them");
    }
    // The image policy, with a kernel of the module: the driver says what it compiled from.
    LoadedImage loaded{ordinal,
                       current_forced_row(),
                       *cls,
                       entry.raw_hash.hex() + (selected->path == SelectionPath::jit ? "@" + archive::target_name(Kind::cubin, selected->target_sm, selected->target_variant) : ""),
                       image + " (module " + module + ")",
                       device,
                       props->name,
                       props->capability,
                       switches};
    // The policy's verdicts are memoized; a plugin's are not (it may rule on anything, and a plugin
    // loaded later must see images accepted before it came).
    const bool plugins = runtime_.plugins().count() > 0;
    if (!handles.empty() && (plugins || !runtime_.image_policy().accepted(loaded))) {
        int ptx_version = 0;
        auto got = SDM_DRIVER_CALL(driver, cuFuncGetAttribute, "reading the PTX version of " + image, &ptx_version, CU_FUNC_ATTRIBUTE_PTX_VERSION,
                                   handles.front()->function);
        if (got) got = runtime_.image_policy().check(loaded, ptx_version);
        if (got && plugins) {  // then the plugins' own rules
            const PlanDevice pd{*cls, static_cast<uint16_t>(props->capability.sm()), props->sm_count, static_cast<int64_t>(props->l2_bytes),
                                class_smem_cap(*cls), device};
            got = runtime_.plugins().validate_image({ordinal, pd, static_cast<uint32_t>(entry.kind), entry.sm, ptx_version, module, a.label()});
        }
        if (!got) {
            return std::move(got).error();
        }
    }
    trace.mark("validate");
    decltype(slot.kernels) kernels;  // filled aside: a throw here leaves the slot as it was
    for (auto& h : handles) kernels.emplace(h->name, std::move(h));
    slot.kernels = std::move(kernels);
    slot.module = cu_module;
    slot.context = *context;
    slot.loaded = true;
    kept = true;
    trace.mark("functions");
    runtime_.log().info("loaded module " + module + " from " + image + " on " + device);
    if (!trace.text().empty()) runtime_.log().debug("load of module " + module + ": " + trace.text());
    return {};
}

Result<void> Modules::preload(int32_t ordinal, const std::vector<std::string>& names) {
    std::vector<std::string> wanted = names;
    if (wanted.empty())
        for (const auto& a : runtime_.archives())
            if (a->manifest)
                for (const auto& k : a->manifest->kernels) wanted.push_back(k.name);
    // One representative kernel per module: loading it loads the module.
    std::vector<std::string> work;
    std::set<std::pair<const MountedArchive*, std::string>> seen;
    for (const auto& name : wanted) {
        SDM_TRY_GET(found, serving(ordinal, name));
        if (seen.insert({found->archive.get(), found->module}).second) work.push_back(name);
    }
    std::atomic<size_t> next{0};
    std::mutex error_mutex;
    std::optional<Error> first_error;
    const auto record = [&](Error e) {
        std::lock_guard lock(error_mutex);
        if (!first_error) first_error = std::move(e);
    };
    // A worker thread has no C ABI frame above it to turn an exception into a status: it catches
    // its own (an exception leaving a thread's function terminates the process).
    const auto worker = [&]() noexcept {
        for (size_t i = next++; i < work.size(); i = next++) {
            try {
                auto k = kernel(ordinal, work[i], nullptr);
                if (k) (void)release(**k);  // loaded is all preload wants: it keeps no reference
                else record(std::move(k).error());
            } catch (const std::bad_alloc&) {
                record(make_error(ErrorCode::out_of_memory, "out of memory while preloading kernel " + work[i]));
            } catch (const std::exception& e) {
                record(make_error(ErrorCode::internal, "internal error while preloading kernel " + work[i] + ": " + e.what() + "; please report it"));
            } catch (...) {
                record(make_error(ErrorCode::internal, "internal error while preloading kernel " + work[i] + ": an unknown exception; please report it"));
            }
        }
    };
    const unsigned threads = std::min<unsigned>(std::max(1u, std::thread::hardware_concurrency()), static_cast<unsigned>(work.size()));
    std::vector<std::thread> pool;
    try {
        for (unsigned t = 1; t < threads; ++t) pool.emplace_back(worker);
    } catch (const std::system_error&) {
        // No more threads to be had: the ones started and this one do the work.
    }
    worker();
    for (auto& t : pool) t.join();
    if (first_error) return *first_error;
    return {};
}

}  // namespace sdm::runtime
