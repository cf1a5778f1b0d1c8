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

#include "runtime/jit/cache.hpp"
#include "runtime/device/device_scope.hpp"
#include "runtime/load/image_source.hpp"
#include "runtime/kernel/kernel_names.hpp"
#include "runtime/select/layering.hpp"
#include "runtime/platform/trace_ranges.hpp"

namespace sdm::runtime {

namespace {

// Libraries of modules that CUDA graphs held when their runtime was destroyed: kept (their bytes
// with them) for the rest of the process, since unloading one would leave the graphs' kernel
// nodes on freed code. Reachable from here, so no leak checker reports them.
void keep_for_process(std::shared_ptr<LoadedLibrary> library) {
    static auto* const mutex = new std::mutex;
    static auto* const kept = new std::vector<std::shared_ptr<LoadedLibrary>>;
    std::lock_guard lock(*mutex);
    kept->push_back(std::move(library));
}

}  // namespace

Modules::~Modules() {
    drain_locked(true);  // retired modules' queued work finishes first (no other thread is left)
    for (Draining& d : draining_) keep_for_graphs(d);  // what did not drain: graphs hold it
    // Nothing loaded: no driver is loaded just to unload nothing.
    for (auto it = load_order_.rbegin(); it != load_order_.rend(); ++it) {
        Slot& s = **it;
        if (s.loaded && s.streams.graphs().count()->live() > 0) {
            Draining held{s.module, std::move(s.library), s.context, std::get<2>(s.key), {}, s.streams.graphs().count()};
            keep_for_graphs(held);
            continue;
        }
        s.library.reset();  // unloaded with the last slot using it
        if (s.module == nullptr) continue;
        auto scope = DeviceScope::enter(rooms_.load, s.context);
        if (!scope) {
            rooms_.log.error("unloading a module: " + scope.error().message);
            continue;
        }
        auto r = SDM_DRIVER_CALL(scope->driver(), cuModuleUnload, "unloading module " + std::get<2>(s.key), s.module);
        if (!r) rooms_.log.error(r.error().message);
        else rooms_.log.debug("unloaded module " + std::get<2>(s.key));
    }
}

void Modules::keep_for_graphs(Draining& d) {
    if (auto scope = DeviceScope::enter(rooms_.load, d.context)) {
        for (CUevent event : d.events)
            if (auto r = SDM_DRIVER_CALL(scope->driver(), cuEventDestroy, "destroying the retire event of module " + d.name, event); !r) rooms_.log.error(r.error().message);
    }
    if (d.library) keep_for_process(std::move(d.library));
    rooms_.log.warn("module " + d.name + " stays loaded after its runtime is destroyed: " + std::to_string(d.graphs->live()) +
                    " CUDA graph(s) that captured its launches still exist, and may replay them. It goes with its CUDA context; destroy the "
                    "graphs (and their executable graphs) before the runtime to have sdm unload it");
}

bool Modules::held_by_graphs(Draining& d) {
    const int64_t graphs = d.graphs ? d.graphs->live() : 0;
    if (graphs <= 0) return false;
    if (!d.announced)
        rooms_.log.info("module " + d.name + " of a replaced archive waits for " + std::to_string(graphs) +
                        " CUDA graph(s) that captured its launches: it is unloaded at the first reload or release after the last of them, "
                        "and every executable graph instantiated from them, is destroyed");
    d.announced = true;
    return true;
}

Modules::Draining Modules::fence(const Slot& s) {
    Draining d{s.module, s.library, s.context, std::get<2>(s.key), {}, s.streams.graphs().count()};
    const LaunchStreams::Seen seen = s.streams.seen();
    if (seen.streams.empty() && !seen.everywhere) return d;  // never launched through sdm: nothing to wait for
    auto scope = DeviceScope::enter(rooms_.load, s.context);
    if (!scope) {
        rooms_.log.error("retiring module " + d.name + ": " + scope.error().message);
        return d;
    }
    Driver& driver = scope->driver();
    bool fenced = !seen.everywhere;
    for (CUstream stream : seen.everywhere ? std::vector<CUstream>{} : seen.streams) {
        CUevent event = nullptr;
        auto made = SDM_DRIVER_CALL(driver, cuEventCreate, "creating an event to retire module " + d.name, &event, CU_EVENT_DISABLE_TIMING);
        if (made) d.events.push_back(event);
        auto recorded = made ? SDM_DRIVER_CALL(driver, cuEventRecord, "recording the end of module " + d.name + "'s work", event, stream) : Result<void>(made);
        if (!recorded) {
            rooms_.log.warn(recorded.error().message + "; waiting for the whole context instead");
            fenced = false;
            break;
        }
    }
    if (!fenced) {
        // Launched where sdm cannot see (the host took its CUfunction), or on more streams than
        // it remembers: everything queued in the context finishes first.
        rooms_.log.debug("retiring module " + d.name + ": synchronizing its context (" +
                             (seen.everywhere ? std::string("its kernels may run on streams sdm did not see") : std::string("an event failed")) + ")");
        if (auto synced = driver.call<decltype(&::cuCtxSynchronize)>(EntryPoint::cuCtxSynchronize, "waiting for module " + d.name + "'s work before unloading it");
            !synced)
            rooms_.log.error(synced.error().message);
    }
    return d;
}

bool Modules::finished(Draining& d, bool wait) {
    if (held_by_graphs(d)) return false;  // nothing waits for a graph: it goes when they do
    auto scope = DeviceScope::enter(rooms_.load, d.context);
    if (!scope) {
        rooms_.log.error("unloading module " + d.name + ": " + scope.error().message);
        return true;
    }
    Driver& driver = scope->driver();
    for (CUevent event : d.events) {
        if (wait) {
            if (auto r = SDM_DRIVER_CALL(driver, cuEventSynchronize, "waiting for module " + d.name + "'s work", event); !r)
                rooms_.log.error(r.error().message);
            continue;
        }
        auto query = driver.resolve(EntryPoint::cuEventQuery);  // CUDA_ERROR_NOT_READY is an answer, not a failure
        if (!query) {
            rooms_.log.error(query.error().message);
            break;
        }
        const CUresult rc = reinterpret_cast<decltype(&::cuEventQuery)>(*query)(event);
        if (rc == CUDA_ERROR_NOT_READY) return false;
        if (rc != CUDA_SUCCESS) {  // no answer: wait for it instead
            rooms_.log.warn(driver.error(rc, EntryPoint::cuEventQuery, "asking whether module " + d.name + "'s work finished").message +
                                "; waiting for it");
            if (auto r = SDM_DRIVER_CALL(driver, cuEventSynchronize, "waiting for module " + d.name + "'s work", event); !r)
                rooms_.log.error(r.error().message + "; the module is unloaded anyway");
        }
    }
    for (CUevent event : d.events)
        if (auto r = SDM_DRIVER_CALL(driver, cuEventDestroy, "destroying the retire event of module " + d.name, event); !r) rooms_.log.error(r.error().message);
    if (d.module != nullptr)
        if (auto r = SDM_DRIVER_CALL(driver, cuModuleUnload, "unloading module " + d.name + " of a replaced archive", d.module); !r)
            rooms_.log.error(r.error().message);
    d.library.reset();  // its library goes with the last slot that used it
    rooms_.log.info("unloaded module " + d.name + " of a replaced archive: no kernel of it is held any more" +
                        (d.events.empty() ? std::string() : ", and the work launched with it has finished") +
                        (d.announced ? ", and no CUDA graph that captured it exists" : ""));
    return true;
}

void Modules::drain_locked(bool wait) {
    for (auto it = draining_.begin(); it != draining_.end();) it = finished(*it, wait) ? draining_.erase(it) : std::next(it);
    // A host reloading faster than its GPU finishes: the oldest is waited for, so the list stays
    // bounded. One a graph holds is not waited for (that would be forever): the host's graphs bound those.
    for (auto it = draining_.begin(); draining_.size() > kDrainingMax && it != draining_.end();) {
        if (held_by_graphs(*it)) {
            ++it;
            continue;
        }
        finished(*it, true);
        it = draining_.erase(it);
    }
}

void Modules::unload_locked(std::shared_ptr<Slot> s) {
    // `s` is registered: loaded, its module written before it was registered under mutex_. Its
    // handles are dead from now on; the module goes once the work launched with it has finished.
    draining_.push_back(fence(*s));
    s->module = nullptr;
    s->library.reset();
    if (s->served) s->served->archive.reset();  // (no reference is left: nothing reads it now)
    s->unloaded.store(true, std::memory_order_release);
    if (const auto it = slots_.find(s->key); it != slots_.end() && it->second == s) slots_.erase(it);
    std::erase(load_order_, s);
    // Kept a while, so that a handle used after its release is reported, not a crash; the oldest
    // go, so that a host reloading every frame does not grow without bound.
    unloaded_.push_back(s);
    if (unloaded_.size() > kUnloadedKept) unloaded_.pop_front();
    for (auto it = served_.begin(); it != served_.end();) it = it->second.slot == s ? served_.erase(it) : std::next(it);
    const auto pinned = std::find_if(pinned_.begin(), pinned_.end(), [&](const auto& a) { return a.get() == std::get<1>(s->key); });
    if (pinned != pinned_.end()) pinned_.erase(pinned);  // one pin per loaded slot
    drain_locked(false);
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
    drain_locked(false);
}

std::vector<FetchedKernel> Modules::fetched(const MountedArchive* archive) {
    std::vector<std::shared_ptr<Slot>> slots;
    {
        std::lock_guard lock(mutex_);
        for (const auto& s : load_order_)
            if (std::get<1>(s->key) == archive) slots.push_back(s);
    }
    std::vector<FetchedKernel> out;
    for (const auto& s : slots) {  // each under its own lock (a fetch takes a slot's, then the registry's)
        std::lock_guard lock(s->mutex);
        for (const auto& [name, handle] : s->kernels) out.push_back({handle->name, handle->module, handle->signature});
    }
    return out;
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
    if (!draining_.empty()) drain_locked(false);
    return {};
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

Result<const KernelHandle*> Modules::kernel(int32_t ordinal, const std::string& name, CUstream stream, std::optional<std::string_view> expected,
                                            CUcontext context) {
    const uint64_t generation = rooms_.archives.mount_generation();
    uint64_t context_id = 0;
    if (rooms_.load.follows_current_context()) {
        SDM_TRY_GET(contexts, rooms_.load.contexts());
        if (context == nullptr) {  // the calling thread's, checked against the ordinal
            SDM_TRY_GET(current, (*contexts)->current(ordinal));
            context = *current;
        }
        SDM_TRY_GET(id, (*contexts)->id_of(context));
        context_id = *id;
    } else {
        context = nullptr;  // the ordinal's: the key needs no context
    }
    {  // the usual call: this kernel was served before, and nothing was mounted since
        std::lock_guard lock(mutex_);
        const auto it = served_.find(std::tuple<int32_t, CUcontext, std::string_view>(ordinal, context, name));
        if (it != served_.end() && it->second.generation == generation && it->second.context_id == context_id && !it->second.slot->retired) {
            const KernelHandle& handle = *it->second.handle;
            if (expected) SDM_TRY(check_signature(handle.name, handle.archive, handle.signature, *expected));  // before the reference
            ++it->second.slot->references;
            return &handle;
        }
    }
    for (;;) {
        SDM_TRY_GET(listing, listed(ordinal, name, context, context_id));
        Listed found = std::move(*listing);
        if (found.record == nullptr) {  // no archive lists it as it is: a recorded name expression, or a C++ spelling of a listed name?
            SDM_TRY_GET(recorded, recorded_expression(rooms_.archives, name));
            if (*recorded && **recorded != name) return kernel(ordinal, **recorded, stream, expected, context);
            const archive::QualifiedName q = archive::split_module(name);
            SDM_TRY_GET(listed_name, resolve_kernel_name(rooms_.archives, rooms_.jit, q.name, q.module));
            const std::string again = q.module.empty() ? *listed_name : archive::qualified_name(q.module, *listed_name);
            if (again != name) return kernel(ordinal, again, stream, expected, context);
            continue;  // (listed since: a mount came between)
        }
        const std::string symbol(found.record->name);  // the name the archive lists (`name` may be module-qualified)
        std::optional<ServedBy> chosen;  // chosen here: the module is not loaded for this key yet
        std::shared_ptr<Slot> s = std::move(found.slot);
        if (!s) {
            SDM_TRY_GET(serve, served_by(rooms_.archives, rooms_.load.devices(), ordinal, name));  // (not found: the message names what is mounted)
            chosen = std::move(*serve);
            if (chosen->archive != found.archive) {  // an older archive has the image (or a mount came between)
                found.archive = chosen->archive;
                found.record = chosen->archive->manifest->find(symbol, chosen->module);
            }
            if (found.record == nullptr || found.record->module != chosen->module)
                return make_error(ErrorCode::internal, "kernel " + name + " is not in the manifest of archive " + chosen->archive->archive.label() + " that serves it");
            s = slot({ordinal, chosen->archive.get(), chosen->module, context, context_id});
        }
        if (expected) {  // checked against the serving manifest before anything is loaded or referenced
            SDM_TRY_GET(spec, found.archive->manifest->spec(*found.record));
            SDM_TRY(check_signature(name, found.archive->archive.label(), archive::signature_text(spec->signature), *expected));
        }
        std::lock_guard lock(s->mutex);  // one load per module; later callers find it loaded
        KernelHandle* handle = nullptr;
        bool pinned = false;  // a reference taken before resolving in a loaded slot
        if (!s->loaded) {
            if (!chosen) continue;  // (a registered slot is loaded: not reached)
            // Not registered yet, so nothing unloads it meanwhile.
            SDM_TRY(load(*s, ordinal, *chosen, stream, symbol));
            handle = s->kernels.begin()->second.get();  // the one load resolved
        } else {
            {  // A registered slot may be retired and unloaded by a reload: pinned by a reference
               // while this kernel is resolved in it (the driver is asked for its function).
                std::lock_guard registry(mutex_);
                if (s->unloaded.load(std::memory_order_acquire)) continue;
                ++s->references;
                pinned = true;
            }
            // What chose the module chose this kernel's image: resolved in it, this kernel only,
            // on its first fetch.
            auto resolved = resolve(*s, ordinal, *s->served, symbol, *found.record);
            if (!resolved) {
                std::lock_guard registry(mutex_);
                if (--s->references == 0 && s->retired && s->registered && !s->unloaded.load(std::memory_order_acquire)) unload_locked(s);
                return std::move(resolved).error();
            }
            handle = *resolved;
        }
        const MountedArchive* const serving = std::get<1>(s->key);
        std::lock_guard registry(mutex_);
        // Replaced while this call loaded it? Then it registers retired. (Checked under mutex_: a
        // reload replaces the archive first, then retires the registered slots under mutex_.)
        const auto mounted = rooms_.archives.archives();
        const bool current = std::any_of(mounted.begin(), mounted.end(), [&](const auto& a) { return a.get() == serving; });
        // A reload may have unloaded it between the load and here (retired, with no reference
        // yet): serve again, from what is mounted now. (A pinned slot was not unloaded.)
        if (s->unloaded.load(std::memory_order_acquire)) continue;
        if (!s->registered) {
            s->registered = true;
            load_order_.push_back(s);
            pinned_.push_back(s->served->archive);
        }
        if (!current) s->retired = true;
        if (!pinned) ++s->references;  // retired or not: the reference keeps it loaded until released
        if (!s->retired) served_[std::tuple(ordinal, context, name)] = {generation, context_id, s, handle};
        return handle;
    }
}

Result<Modules::Listed> Modules::listed(int32_t ordinal, std::string_view name, CUcontext context, uint64_t context_id) {
    Listed out;
    const auto mounted = rooms_.archives.archives();
    for (auto it = mounted.rbegin(); it != mounted.rend(); ++it) {  // the newest mount first
        SDM_TRY_GET(record, listed_kernel(**it, name));
        if (*record == nullptr) continue;
        out.archive = *it;
        out.record = *record;
        break;
    }
    if (out.record == nullptr) return out;
    std::lock_guard lock(mutex_);
    const auto found = slots_.find(Key{ordinal, out.archive.get(), std::string(out.record->module), context, context_id});
    if (found != slots_.end() && found->second->registered && !found->second->retired) out.slot = found->second;
    return out;
}

Result<void> Modules::load_all(int32_t ordinal, const std::string& name, CUcontext context) {
    SDM_TRY_GET(first, kernel(ordinal, name, nullptr, std::nullopt, context));
    Slot& s = *(*first)->slot;
    const auto release_first = gsl::finally([&]() noexcept { (void)release(**first); });  // preload keeps no reference
    {
        std::lock_guard registry(mutex_);
        if (s.retired) return {};  // replaced by a reload meanwhile: the next fetch loads the new one
    }
    std::lock_guard lock(s.mutex);  // (the reference keeps it loaded, and its choice, meanwhile)
    const ServedBy& served = *s.served;
    for (const auto* listed : served.archive->manifest->of_module(served.module)) SDM_TRY(resolve(s, ordinal, served, std::string(listed->name), *listed));
    return {};
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

// What a load hands out the kernels' handles from: a library (shared, or loaded now), or a module
// of the current context; and the entry points its image defines, when its checks read them.
struct Code {
    CUmodule module{nullptr};
    std::shared_ptr<LoadedLibrary> library;
    ImageSource source{ImageSource::archive_cubin};
    std::optional<Hash128> cache_key;
    std::optional<std::vector<std::string>> kernels;
};

Result<Code> load_code(const RegistryRooms& rooms, Libraries& libraries, Driver& driver, const ServedBy& served, CUstream stream, PhaseTrace& trace) {
    const archive::Archive& a = served.archive->archive;
    const std::string image = a.describe(served.selection.image.index);
    const bool jit = served.selection.path == SelectionPath::jit;
    std::shared_ptr<Libraries::Entry> entry;
    std::unique_lock<std::mutex> entry_lock;  // one load per image, whichever device or context asks first
    if (libraries.path(driver, rooms.log, rooms.load.follows_current_context()) == LoadPath::library) {
        entry = libraries.entry({served.archive.get(), served.module, served.selection.image.index, jit ? served.selection.target_sm : uint16_t{0},
                                 jit ? served.selection.target_variant : archive::Variant::base});
        entry_lock = std::unique_lock(entry->mutex);
        if (auto shared = entry->library.lock()) {
            trace.mark("library (loaded before)");
            return Code{nullptr, shared, shared->source, shared->cache_key, shared->kernels};
        }
    }
    SDM_TRY_GET(bytes, load_image_bytes(rooms.images, driver, served, stream));
    trace.mark(bytes->decoded_ahead ? "image (decoded ahead)" : "image");
    const auto evict = [&] {
        if (bytes->source == ImageSource::cache) rooms.images.cache.get()->evict(*bytes->cache_key);
    };
    if (bytes->module != nullptr) return Code{bytes->module, nullptr, bytes->source, bytes->cache_key, std::nullopt};  // the driver's JIT loaded it
    if (entry) {
        SDM_TRY_GET(shared_driver, rooms.load.driver());
        auto library = LoadedLibrary::load(*shared_driver, rooms.log, bytes->view, std::move(bytes->owned), served.archive, image);
        if (!library) {
            evict();
            return std::move(library).error();
        }
        (*library)->source = bytes->source;
        (*library)->cache_key = bytes->cache_key;
        (*library)->kernels = bytes->kernels;
        entry->library = *library;
        trace.mark("cuLibraryLoadData");
        return Code{nullptr, *library, bytes->source, bytes->cache_key, std::move(bytes->kernels)};
    }
    // The module path: the driver copies the image, so bytes decoded for it go when it returns.
    CUmodule module = nullptr;
    if (auto loaded = SDM_DRIVER_CALL(driver, cuModuleLoadData, "loading " + image + " on " + served.device, &module, bytes->bytes().data()); !loaded) {
        evict();
        return std::move(loaded).error();
    }
    trace.mark("cuModuleLoadData");
    return Code{module, nullptr, bytes->source, bytes->cache_key, std::move(bytes->kernels)};
}

}  // namespace

Result<void> Modules::load(Slot& slot, int32_t ordinal, const ServedBy& served, CUstream stream, const std::string& name) {
    PhaseTrace trace(rooms_.log.enabled(LogLevel::debug));
    const std::string& module = served.module;
    const TraceRange range("module load", module);
    const archive::Archive& a = served.archive->archive;
    const std::string image = a.describe(served.selection.image.index);
    CUcontext const given = std::get<3>(slot.key);  // the calling thread's, when fetches follow it
    SDM_TRY_GET(scope, given != nullptr ? DeviceScope::enter(rooms_.load, given) : DeviceScope::enter(rooms_.load, ordinal));
    Driver& driver = scope->driver();
    trace.mark("context");
    SDM_TRY_GET(code, load_code(rooms_, libraries_, driver, served, stream, trace));
    CUmodule cu_module = code->module;
    // From here every way out but success unloads a module again, an exception's included (a
    // library goes with its last reference).
    bool kept = false;
    const auto unload_unless_kept = gsl::finally([&]() noexcept {
        if (kept || cu_module == nullptr) return;
        try {
            (void)SDM_DRIVER_CALL(driver, cuModuleUnload, "unloading module " + module + ", whose load did not complete", cu_module);
        } catch (...) {  // no memory for the message: the module stays loaded until the context goes
        }
    });
    const auto evicted = [&]() -> std::string {
        Cache* cache = rooms_.images.cache.get();
        if (cache == nullptr || !code->cache_key || code->source == ImageSource::archive_cubin || code->source == ImageSource::fatbin) return {};
        cache->evict(*code->cache_key);
        return "; its cache entry was removed";
    };
    // Every kernel the manifest lists for the module (its records alone, found by module), against
    // the entry points the image defines, as its checks read them: a module that lacks one is
    // refused whole, as the seed refuses it, without resolving any kernel into the context.
    const auto listed = served.archive->manifest->of_module(module);
    if (code->kernels) {
        std::string missing;
        for (const auto* k : listed)
            if (!std::binary_search(code->kernels->begin(), code->kernels->end(), k->name)) missing += (missing.empty() ? "" : ", ") + std::string(k->name);
        if (!missing.empty())
            return make_error(ErrorCode::not_found, "module " + module + " of archive " + a.label() + " (" + image + ", loaded on " + served.device +
                                                        ") lacks kernel(s) " + missing + " that the manifest lists" + evicted() +
                                                        ". Rebuild the archive so its images define them");
    }
    trace.mark((std::to_string(listed.size()) + " kernels listed").c_str());
    const LoadedCode loaded{cu_module, code->library ? code->library->handle() : nullptr, scope->context()};
    const auto* wanted = served.archive->manifest->find(name, module);
    if (wanted == nullptr) return make_error(ErrorCode::internal, "kernel " + name + " is not in the manifest that served it");
    SDM_TRY_GET(handle, resolve_kernel(rooms_.checks, driver, loaded, served, slot, ordinal, code->source, *wanted));
    if (!*handle)
        return make_error(ErrorCode::not_found, "module " + module + " of archive " + a.label() + " (" + image + ", loaded on " + served.device +
                                                    ") lacks kernel " + name + " that the manifest lists" + evicted() +
                                                    ". Rebuild the archive so its images define it");
    trace.mark("function");
    SDM_TRY(validate_module(rooms_.checks, driver, served, **handle, ordinal));
    trace.mark("validate");
    decltype(slot.kernels) kernels;  // filled aside: a throw here leaves the slot as it was
    kernels.emplace(name, std::move(*handle));
    slot.kernels = std::move(kernels);
    slot.module = cu_module;
    slot.library = std::move(code->library);
    slot.context = scope->context();
    slot.source = code->source;
    slot.cache_key = code->cache_key;
    slot.served = served;
    slot.loaded = true;
    kept = true;
    rooms_.log.info("loaded module " + module + " from " + image + " on " + served.device + (slot.library ? "" : " (as a module of its context)"));
    if (!trace.text().empty()) rooms_.log.debug("load of module " + module + ": " + trace.text());
    return {};
}

Result<KernelHandle*> Modules::resolve(Slot& slot, int32_t ordinal, const ServedBy& served, const std::string& name,
                                       const archive::ManifestIndex::Kernel& listed) {
    if (const auto it = slot.kernels.find(name); it != slot.kernels.end()) return it->second.get();
    SDM_TRY_GET(scope, DeviceScope::enter(rooms_.load, slot.context));
    const LoadedCode loaded{slot.module, slot.library ? slot.library->handle() : nullptr, slot.context};
    SDM_TRY_GET(handle, resolve_kernel(rooms_.checks, scope->driver(), loaded, served, slot, ordinal, slot.source, listed));
    if (!*handle)  // an image whose entry points its checks did not read (what the driver's JIT loaded)
        return make_error(ErrorCode::not_found, "module " + served.module + " of archive " + served.archive->archive.label() + " (loaded on " +
                                                    served.device + ") lacks kernel " + name +
                                                    " that the manifest lists. Rebuild the archive so its images define it");
    return slot.kernels.emplace(name, std::move(*handle)).first->second.get();
}

}  // namespace sdm::runtime
