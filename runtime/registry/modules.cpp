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
#include "runtime/platform/settings.hpp"
#include "runtime/platform/trace_ranges.hpp"

namespace sdm::runtime {

namespace {

int64_t steady_now_ns() noexcept {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Libraries of modules that CUDA graphs held when their runtime was destroyed: kept (their bytes
// with them) for the rest of the process, since unloading one would leave the graphs' kernel
// nodes on freed code. Reachable from here, so no leak checker reports them.
void keep_for_process(std::shared_ptr<LoadedLibrary> library) {
    static auto* const mutex = new std::mutex;
    static auto* const kept = new std::vector<std::shared_ptr<LoadedLibrary>>;
    std::lock_guard lock(*mutex);
    kept->push_back(std::move(library));
}

// What the budget counts for a loaded module: its measured bytes, else the declared ones.
uint64_t counted_bytes(const LoadedModule& m) noexcept { return m.measured_bytes.value_or(m.device_bytes); }

uint64_t plus(uint64_t a, int64_t delta) noexcept {
    return delta >= 0 ? a + static_cast<uint64_t>(delta) : a - std::min(a, static_cast<uint64_t>(-delta));
}

}  // namespace

Modules::~Modules() {
    drain_locked(true);  // retired modules' queued work finishes first (no other thread is left)
    for (Draining& d : draining_) keep_for_graphs(d);  // what did not drain: graphs hold it
    // Nothing loaded: no driver is loaded just to unload nothing.
    for (auto it = load_order_.rbegin(); it != load_order_.rend(); ++it) {
        ModuleSlot& s = **it;
        LoadedModule taken = s.take_unloaded();  // (registered: loaded)
        const std::string& name = s.key().module;
        if (s.streams().graphs().count()->live() > 0) {
            Draining held{taken.module, std::move(taken.library), taken.context, name, {}, s.streams().graphs().count()};
            keep_for_graphs(held);
            continue;
        }
        taken.library.reset();  // unloaded with the last slot using it
        if (taken.module == nullptr) continue;
        auto scope = DeviceScope::enter(rooms_.load, taken.context);
        if (!scope) {
            rooms_.log.error("unloading a module: " + scope.error().message);
            continue;
        }
        auto r = SDM_DRIVER_CALL(scope->driver(), cuModuleUnload, "unloading module " + name, taken.module);
        if (!r) rooms_.log.error(r.error().message);
        else rooms_.log.debug("unloaded module " + name);
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

Modules::Draining Modules::fence(const ModuleSlot& s, LoadedModule taken) {
    Draining d{taken.module, std::move(taken.library), taken.context, s.key().module, {}, s.streams().graphs().count()};
    d.ordinal = s.key().ordinal;
    d.archive = taken.served.archive ? taken.served.archive->archive.label() : std::string();
    d.device_bytes = taken.device_bytes;
    const LaunchStreams::Seen seen = s.streams().seen();
    if (seen.streams.empty() && !seen.everywhere) return d;  // never launched through sdm: nothing to wait for
    auto scope = DeviceScope::enter(rooms_.load, d.context);
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
    auto window = d.counted ? meter_.open(driver) : DeviceMeter::Window{};
    if (d.module != nullptr)
        if (auto r = SDM_DRIVER_CALL(driver, cuModuleUnload, "unloading module " + d.name + " of a replaced archive", d.module); !r)
            rooms_.log.error(r.error().message);
    d.library.reset();  // its library goes with the last slot that used it
    if (const auto grew = window.close(driver)) {  // counted as freed when it was taken out: what it freed instead
        uint64_t& resident = resident_[d.ordinal];
        resident = plus(resident + *d.counted, *grew);
    }
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

void Modules::unload_locked(const std::shared_ptr<ModuleSlot>& s) {
    // `s` is registered and marked unloaded: its handles are dead from now on; the module goes
    // once the work launched with it has finished (an evicted one's went already).
    const bool evicted = s->evicted();
    const uint64_t counted = evicted ? 0 : counted_bytes(s->module());
    if (!evicted) {
        uint64_t& resident = resident_[s->key().ordinal];
        resident -= std::min(resident, counted);
    }
    draining_.push_back(fence(*s, s->take_unloaded()));
    if (evicted) draining_.back().device_bytes = 0;
    else if (meter_.on()) draining_.back().counted = counted;
    if (const auto it = slots_.find(s->key()); it != slots_.end() && it->second == s) slots_.erase(it);
    std::erase(load_order_, s);
    // Kept a while, so that a handle used after its release is reported, not a crash; the oldest
    // go, so that a host reloading every frame does not grow without bound.
    unloaded_.push_back(s);
    if (unloaded_.size() > kUnloadedKept) unloaded_.pop_front();
    for (auto it = served_.begin(); it != served_.end();) it = it->second.slot == s ? served_.erase(it) : std::next(it);
    const auto pinned = std::find_if(pinned_.begin(), pinned_.end(), [&](const auto& a) { return a.get() == s->key().archive; });
    if (pinned != pinned_.end()) pinned_.erase(pinned);  // one pin per registered slot
    drain_locked(false);
}

void Modules::retire(const MountedArchive* old) {
    std::lock_guard lock(mutex_);
    std::vector<std::shared_ptr<ModuleSlot>> idle;
    // Registered slots only: one still loading registers retired (fetch()).
    for (const auto& s : load_order_)
        if (s->key().archive == old && s->retire()) idle.push_back(s);
    for (const auto& s : idle) unload_locked(s);
    drain_locked(false);
}

std::vector<FetchedKernel> Modules::fetched(const MountedArchive* archive) {
    std::vector<std::shared_ptr<ModuleSlot>> slots;
    {
        std::lock_guard lock(mutex_);
        for (const auto& s : load_order_)
            if (s->key().archive == archive) slots.push_back(s);
    }
    std::vector<FetchedKernel> out;
    for (const auto& s : slots) {  // each under its own lock (a fetch takes a slot's, then the registry's)
        const auto loading = s->lock_for_loading();
        s->each_resolved([&](const KernelHandle& k) { out.push_back({k.name, k.module, k.signature}); });
    }
    return out;
}

std::vector<ModuleFootprint> Modules::footprint() {
    std::lock_guard lock(mutex_);
    std::vector<ModuleFootprint> out;
    out.reserve(load_order_.size() + draining_.size());
    for (const auto& s : load_order_) {
        const LoadedModule& m = s->module();  // (registered: loaded, and not unloaded while in load_order_ under mutex_)
        const std::string archive = m.served.archive ? m.served.archive->archive.label() : std::string();
        const bool evicted = s->evicted();
        out.push_back({s->key().ordinal, s->key().module, archive, evicted ? 0 : m.device_bytes, m.library ? m.library->host_bytes() : 0, m.library.get(),
                       s->resolved_count(), s->references(), s->retired(), false, evicted});
    }
    for (const Draining& d : draining_)
        out.push_back({d.ordinal, d.name, d.archive, d.device_bytes, d.library ? d.library->host_bytes() : 0, d.library.get(), 0, 0, true, true, false});
    return out;
}

Result<void> Modules::drop(const std::shared_ptr<ModuleSlot>& slot, const std::string& kernel) {
    std::lock_guard lock(mutex_);
    switch (slot->drop()) {
        case ModuleSlot::Dropped::too_often:
            return make_error(ErrorCode::invalid_argument, "kernel " + kernel + " was released more often than it was fetched");
        case ModuleSlot::Dropped::unload:
            unload_locked(slot);
            break;
        case ModuleSlot::Dropped::kept:
            if (!draining_.empty()) drain_locked(false);
            break;
    }
    return {};
}

Result<void> Modules::release(const KernelHandle& kernel) {
    if (kernel.slot == nullptr) return make_error(ErrorCode::invalid_argument, "kernel " + kernel.name + " was released more often than it was fetched");
    // (A handle's slot is the registry's while it is registered, and kept a while once unloaded:
    // a release after that is a use after free the host made, as for any freed handle.)
    return drop(kernel.slot->shared_from_this(), kernel.name);
}

void Modules::Lease::reset() noexcept {
    if (owner_ != nullptr && slot_) {
        try {
            (void)owner_->drop(slot_, slot_->key().module);
        } catch (...) {  // no memory for a message: the reference stays, and the module with it
        }
    }
    owner_ = nullptr;
    slot_.reset();
}

Modules::Lease& Modules::Lease::operator=(Lease&& other) noexcept {
    if (this != &other) {
        reset();
        owner_ = std::exchange(other.owner_, nullptr);
        slot_ = std::move(other.slot_);
    }
    return *this;
}

Modules::Lease Modules::lease(const ModuleKey& key) {
    std::lock_guard lock(mutex_);
    auto& s = slots_[key];
    if (!s || s->retired() || !s->take(ModuleSlot::Take::any)) {  // none yet, or one of a replaced archive: a new one
        s = std::make_shared<ModuleSlot>(key);
        (void)s->take(ModuleSlot::Take::any);  // (a new slot is never refused)
    }
    return Lease(*this, s);
}

Result<Modules::Where> Modules::where(int32_t ordinal, CUcontext context) {
    if (!rooms_.load.follows_current_context()) return Where{ordinal, nullptr, 0};  // the ordinal's: the key needs no context
    SDM_TRY_GET(contexts, rooms_.load.contexts());
    if (context == nullptr) {  // the calling thread's, checked against the ordinal
        SDM_TRY_GET(current, (*contexts)->current(ordinal));
        context = *current;
    }
    SDM_TRY_GET(id, (*contexts)->id_of(context));
    return Where{ordinal, context, *id};
}

Result<const KernelHandle*> Modules::kernel(int32_t ordinal, const std::string& name, CUstream stream, std::optional<std::string_view> expected,
                                            CUcontext context) {
    const uint64_t generation = rooms_.archives.mount_generation();
    SDM_TRY_GET(at, where(ordinal, context));
    {  // the usual call: this kernel was served before, and nothing was mounted since
        std::lock_guard lock(mutex_);
        const auto it = served_.find(std::tuple<int32_t, CUcontext, std::string_view>(ordinal, at->context, name));
        if (it != served_.end() && it->second.generation == generation && it->second.context_id == at->context_id) {
            const KernelHandle& handle = *it->second.handle;
            if (expected) SDM_TRY(check_signature(handle.name, handle.archive, handle.signature, *expected));  // before the reference
            if (it->second.slot->take(ModuleSlot::Take::serving)) return &handle;
        }
    }
    // Listed as asked (the usual case), else as the newest archive lists the spelling asked for.
    SDM_TRY_GET(listing, listed(*at, name));
    if (listing->record != nullptr) return fetch(*at, name, name, std::move(*listing), stream, expected, generation);
    SDM_TRY_GET(spelled, listed_spelling(name));
    SDM_TRY_GET(respelled, listed(*at, *spelled));
    return fetch(*at, name, *spelled, std::move(*respelled), stream, expected, generation);
}

Result<std::string> Modules::listed_spelling(const std::string& name) {
    // A recorded name expression (of a listed kernel: a manifest checks it), or a C++ spelling of a
    // listed name. Neither is listed, so neither is asked again.
    SDM_TRY_GET(recorded, recorded_expression(rooms_.archives, name));
    if (*recorded) return std::move(**recorded);
    const archive::QualifiedName q = archive::split_module(name);
    SDM_TRY_GET(listed_name, resolve_kernel_name(rooms_.archives, rooms_.jit, q.name, q.module));
    return q.module.empty() ? std::move(*listed_name) : archive::qualified_name(q.module, *listed_name);
}

Result<const KernelHandle*> Modules::fetch(const Where& at, const std::string& asked, const std::string& name, Listed found, CUstream stream,
                                           std::optional<std::string_view> expected, uint64_t generation) {
    Lease lease = std::move(found.lease);
    std::optional<ServedBy> chosen;  // chosen here: the module is not loaded for this key yet
    if (!lease) {
        SDM_TRY_GET(serve, served_by(rooms_.archives, rooms_.load.devices(), at.ordinal, name));  // (not found: the message names what is mounted)
        chosen = std::move(*serve);
        found.archive = chosen->archive;  // an older archive may have the image, or a mount came between
        found.record = chosen->archive->manifest->find(archive::split_module(name).name, chosen->module);
        if (found.record == nullptr)
            return make_error(ErrorCode::internal, "kernel " + name + " is not in the manifest of archive " + chosen->archive->archive.label() + " that serves it");
        lease = this->lease({at.ordinal, chosen->archive.get(), chosen->module, at.context, at.context_id});
    }
    if (expected) {  // checked against the serving manifest before anything is loaded or referenced
        SDM_TRY_GET(spec, found.archive->manifest->spec(*found.record));
        SDM_TRY(check_signature(name, found.archive->archive.label(), archive::signature_text(spec->signature), *expected));
    }
    const std::string symbol(found.record->name);  // the name the archive lists (`name` may be module-qualified)
    ModuleSlot& s = lease.slot();
    KernelHandle* handle = nullptr;
    {
        const auto loading = s.lock_for_loading();  // one load per module; later fetches find it loaded
        if (!s.loaded()) {
            // Chosen above: a slot found registered is loaded, and the lease keeps it so.
            if (!chosen) return make_error(ErrorCode::internal, "module " + s.key().module + " was found registered but not loaded");
            SDM_TRY(load(s, at.ordinal, *chosen, stream, symbol));
            handle = s.resolved(symbol);
        } else {
            if (s.evicted()) SDM_TRY(reload_evicted(s, "a fetch of kernel " + name));
            // What chose the module chose this kernel's image: resolved in it, this kernel only,
            // on its first fetch.
            SDM_TRY_GET(resolved, resolve(s, at.ordinal, symbol, *found.record));
            handle = *resolved;
        }
    }
    std::lock_guard registry(mutex_);
    if (!s.registered()) {
        // Replaced while this fetch loaded it? Then it registers retired. (Checked under mutex_: a
        // reload replaces the archive first, then retires the registered slots under mutex_.)
        const auto mounted = rooms_.archives.archives();
        const bool current = std::any_of(mounted.begin(), mounted.end(), [&](const auto& a) { return a.get() == s.key().archive; });
        s.mark_registered(current);
        load_order_.push_back(lease.shared());
        pinned_.push_back(s.module().served.archive);
        resident_[at.ordinal] += counted_bytes(s.module());
        s.touch(steady_now_ns());
        enforce_budget_locked(at.ordinal, &s);
    }
    if (s.serving()) {  // served again as listed, and as the host spelled it
        served_[std::tuple(at.ordinal, at.context, name)] = {generation, at.context_id, lease.shared(), handle};
        if (asked != name) served_[std::tuple(at.ordinal, at.context, asked)] = {generation, at.context_id, lease.shared(), handle};
    }
    lease.keep();  // retired or not: the reference keeps it loaded until the host releases it
    return handle;
}

Result<Modules::Listed> Modules::listed(const Where& at, std::string_view name) {
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
    const auto found = slots_.find(ModuleKey{at.ordinal, out.archive.get(), std::string(out.record->module), at.context, at.context_id});
    if (found != slots_.end() && found->second->take(ModuleSlot::Take::serving)) out.lease = Lease(*this, found->second);
    return out;
}

Result<void> Modules::load_all(int32_t ordinal, const std::string& name, CUcontext context) {
    SDM_TRY_GET(first, kernel(ordinal, name, nullptr, std::nullopt, context));
    ModuleSlot& s = *(*first)->slot;
    const auto release_first = gsl::finally([&]() noexcept { (void)release(**first); });  // preload keeps no reference
    if (s.retired()) return {};  // replaced by a reload meanwhile: the next fetch loads the new one
    const auto loading = s.lock_for_loading();  // (the reference keeps it loaded, and its choice, meanwhile)
    if (s.evicted()) SDM_TRY(reload_evicted(s, "a preload of kernel " + name));
    const ServedBy& served = s.module().served;
    // Under a budget, one measure of all the resolves (a lazily loading driver places each kernel's
    // code as it is resolved), not one per kernel.
    std::optional<DeviceScope> scope;
    DeviceMeter::Window window;
    if (meter_.on()) {
        SDM_TRY_GET(entered, DeviceScope::enter(rooms_.load, s.module().context));
        scope.emplace(std::move(*entered));
        window = meter_.open(scope->driver());
    }
    for (const auto* listed : served.archive->manifest->of_module(served.module)) SDM_TRY(resolve(s, ordinal, std::string(listed->name), *listed, false));
    if (const auto grew = scope ? window.close(scope->driver()) : std::nullopt; grew && *grew != 0) {
        std::lock_guard registry(mutex_);
        charge_locked(s, *grew);
    }
    if (budget_ != 0) {
        // Loads on other threads meanwhile (a warm-up's) found this module busy, and so could not
        // evict it: the budget is checked again now that it is idle.
        std::lock_guard registry(mutex_);
        enforce_budget_locked(ordinal, nullptr);
    }
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
    uint64_t device_bytes{0};
};

// `window` opens right before the driver loads the image (not around the decode), when the meter is on.
Result<Code> load_code(const RegistryRooms& rooms, Libraries& libraries, Driver& driver, const ServedBy& served, CUstream stream, PhaseTrace& trace,
                       DeviceMeter& meter, DeviceMeter::Window& window) {
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
            return Code{nullptr, shared, shared->source, shared->cache_key, shared->kernels, shared->device_bytes};
        }
    }
    SDM_TRY_GET(bytes, load_image_bytes(rooms.images, driver, served, stream));
    trace.mark(bytes->decoded_ahead ? "image (decoded ahead)" : "image");
    const auto evict = [&] {
        if (bytes->source == ImageSource::cache) rooms.images.cache.get()->evict(*bytes->cache_key);
    };
    if (bytes->module != nullptr) return Code{bytes->module, nullptr, bytes->source, bytes->cache_key, std::nullopt, 0};  // the driver's JIT loaded it
    window = meter.open(driver);
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
        (*library)->device_bytes = bytes->device_bytes;
        entry->library = *library;
        trace.mark("cuLibraryLoadData");
        return Code{nullptr, *library, bytes->source, bytes->cache_key, std::move(bytes->kernels), bytes->device_bytes};
    }
    // The module path: the driver copies the image, so bytes decoded for it go when it returns.
    CUmodule module = nullptr;
    if (auto loaded = SDM_DRIVER_CALL(driver, cuModuleLoadData, "loading " + image + " on " + served.device, &module, bytes->bytes().data()); !loaded) {
        evict();
        return std::move(loaded).error();
    }
    trace.mark("cuModuleLoadData");
    return Code{module, nullptr, bytes->source, bytes->cache_key, std::move(bytes->kernels), bytes->device_bytes};
}

}  // namespace

Result<void> Modules::load(ModuleSlot& slot, int32_t ordinal, const ServedBy& served, CUstream stream, const std::string& name) {
    PhaseTrace trace(rooms_.log.enabled(LogLevel::debug));
    const std::string& module = served.module;
    const TraceRange range("module load", module);
    const archive::Archive& a = served.archive->archive;
    const std::string image = a.describe(served.selection.image.index);
    CUcontext const given = slot.key().context;  // the calling thread's, when fetches follow it
    SDM_TRY_GET(scope, given != nullptr ? DeviceScope::enter(rooms_.load, given) : DeviceScope::enter(rooms_.load, ordinal));
    Driver& driver = scope->driver();
    trace.mark("context");
    DeviceMeter::Window window;
    SDM_TRY_GET(code, load_code(rooms_, libraries_, driver, served, stream, trace, meter_, window));
    if (!window.open()) window = meter_.open(driver);  // shared, or loaded by the driver's JIT: its resolve, at least
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
    const bool as_library = code->library != nullptr;
    const auto grew = window.close(driver);
    slot.set_loaded(LoadedModule{cu_module, std::move(code->library), scope->context(), code->source, code->cache_key, served, code->device_bytes,
                                 grew ? std::optional<uint64_t>(plus(0, *grew)) : std::nullopt},
                    std::move(*handle));
    kept = true;
    rooms_.log.info("loaded module " + module + " from " + image + " on " + served.device + (as_library ? "" : " (as a module of its context)"));
    if (!trace.text().empty()) rooms_.log.debug("load of module " + module + ": " + trace.text());
    return {};
}

Result<KernelHandle*> Modules::resolve(ModuleSlot& slot, int32_t ordinal, const std::string& name, const archive::ManifestIndex::Kernel& listed, bool metered) {
    if (KernelHandle* known = slot.resolved(name)) return known;
    const LoadedModule& m = slot.module();
    const ServedBy& served = m.served;
    SDM_TRY_GET(scope, DeviceScope::enter(rooms_.load, m.context));
    const LoadedCode loaded{m.module, m.library ? m.library->handle() : nullptr, m.context};
    auto window = metered ? meter_.open(scope->driver()) : DeviceMeter::Window{};  // a lazily loading driver places the kernel's code now
    SDM_TRY_GET(handle, resolve_kernel(rooms_.checks, scope->driver(), loaded, served, slot, ordinal, m.source, listed));
    if (const auto grew = window.close(scope->driver()); grew && *grew != 0) {
        std::lock_guard registry(mutex_);
        charge_locked(slot, *grew);
    }
    if (!*handle)  // an image whose entry points its checks did not read (what the driver's JIT loaded)
        return make_error(ErrorCode::not_found, "module " + served.module + " of archive " + served.archive->archive.label() + " (loaded on " +
                                                    served.device + ") lacks kernel " + name +
                                                    " that the manifest lists. Rebuild the archive so its images define it");
    return slot.add_resolved(std::move(*handle));
}

uint64_t device_memory_budget_from_environment(const Logger& log) {
    return settings::value_or(settings::size(settings::Id::device_memory_budget, log), uint64_t{0});
}

Result<Modules::KernelUse> Modules::use(const KernelHandle& kernel, std::string_view api) {
    SDM_TRY(check_live(kernel, api));
    if (budget_ == 0 || kernel.slot == nullptr) return KernelUse{};
    ModuleSlot& s = *kernel.slot;
    const int64_t now = steady_now_ns();
    if (s.enter(now)) return KernelUse{&s};
    // Evicted: loaded again here, and the use begun while the loading lock keeps eviction away.
    const auto loading = s.lock_for_loading();
    if (s.evicted()) SDM_TRY(reload_evicted(s, std::string(api) + " of kernel " + kernel.name));
    if (!s.enter(now)) return make_error(ErrorCode::internal, "module " + s.key().module + " was evicted again while its loading lock was held");
    return KernelUse{&s};
}

void Modules::charge_locked(ModuleSlot& s, int64_t delta) {
    s.add_measured(delta);
    if (!s.registered() || s.evicted() || s.unloaded()) return;  // counted when it registers (or not at all)
    uint64_t& resident = resident_[s.key().ordinal];
    resident = plus(resident, delta);
    if (delta > 0) enforce_budget_locked(s.key().ordinal, &s);
}

void Modules::enforce_budget_locked(int32_t ordinal, const ModuleSlot* keep) {
    if (budget_ == 0) return;
    uint64_t& resident = resident_[ordinal];
    if (resident <= budget_) return;
    // The candidates, least recently used first (a walk of the device's modules, only when a
    // load passed the budget).
    std::vector<std::shared_ptr<ModuleSlot>> candidates;
    for (const auto& s : load_order_) {
        if (s->key().ordinal != ordinal || s.get() == keep || s->evicted() || s->unloaded()) continue;
        if (!s->module().measured_bytes && s->module().device_bytes == 0) continue;  // nothing known to free
        // Never one whose CUfunction the host took (it may launch it where sdm cannot see), nor one
        // a CUDA graph captured (the graph may replay it).
        if (s->streams().seen().everywhere || s->streams().graphs().count()->live() > 0) continue;
        candidates.push_back(s);
    }
    std::sort(candidates.begin(), candidates.end(), [](const auto& a, const auto& b) { return a->last_use_ns() < b->last_use_ns(); });
    for (const auto& s : candidates) {
        if (resident <= budget_) break;
        auto loading = s->try_lock_for_loading();
        if (!loading.owns_lock() || !s->try_evict()) continue;  // being loaded or used now: busy
        const uint64_t bytes = counted_bytes(s->module());
        draining_.push_back(fence(*s, s->take_evicted()));  // unloaded once its queued work has finished
        resident -= std::min(resident, bytes);
        rooms_.log.info("evicted module " + s->key().module + " (" + std::to_string(bytes) + " B" + (s->module().measured_bytes ? " as measured" : "") +
                        ") from device " + std::to_string(ordinal) + " under the device-memory budget of " + std::to_string(budget_) +
                        " B: it was the least recently used idle one; it reloads at its next use");
        if (meter_.on()) {  // unloaded now if its work is done, so that what it freed is known before the next is chosen
            draining_.back().counted = bytes;
            if (finished(draining_.back(), false)) draining_.pop_back();
        }
    }
    if (resident > budget_ && budget_told_.insert(ordinal).second)
        rooms_.log.warn("the device-memory budget of " + std::to_string(budget_) + " B on device " + std::to_string(ordinal) + " is not kept: " +
                        std::to_string(resident) + " B of modules are loaded there, and no other is idle (in use, captured by a CUDA graph, or its "
                        "CUfunction taken by the host). Raise the budget (SDM_DEVICE_MEMORY_BUDGET, sdm_runtime_params.device_memory_budget)");
    drain_locked(false);
}

Result<void> Modules::reload_evicted(ModuleSlot& s, const std::string& why) {
    const ServedBy served = s.module().served;  // what chose it, kept through the eviction
    const int32_t ordinal = s.key().ordinal;
    CUcontext const given = s.key().context;
    SDM_TRY_GET(scope, given != nullptr ? DeviceScope::enter(rooms_.load, given) : DeviceScope::enter(rooms_.load, ordinal));
    Driver& driver = scope->driver();
    PhaseTrace trace(false);
    DeviceMeter::Window window;
    SDM_TRY_GET(code, load_code(rooms_, libraries_, driver, served, nullptr, trace, meter_, window));
    if (!window.open()) window = meter_.open(driver);
    bool kept = false;
    const auto unload_unless_kept = gsl::finally([&]() noexcept {
        if (kept || code->module == nullptr) return;
        try {
            (void)SDM_DRIVER_CALL(driver, cuModuleUnload, "unloading module " + served.module + ", whose reload did not complete", code->module);
        } catch (...) {  // no memory for the message: the module stays loaded until the context goes
        }
    });
    // Each kernel resolved before, resolved again in the new code (its recorded settings with it);
    // the handles stay the host's, with the new functions.
    const LoadedCode loaded{code->module, code->library ? code->library->handle() : nullptr, scope->context()};
    std::vector<std::pair<KernelHandle*, std::unique_ptr<KernelHandle>>> fresh;
    std::optional<Error> failed;
    s.each_resolved([&](KernelHandle& h) {
        if (failed) return;
        const auto* listed = served.archive->manifest->find(h.name, served.module);
        if (listed == nullptr) {
            failed = Error{ErrorCode::internal, "kernel " + h.name + " is not in the manifest that served it", 0, {}};
            return;
        }
        auto again = resolve_kernel(rooms_.checks, driver, loaded, served, s, ordinal, code->source, *listed);
        if (!again || !*again) {
            failed = again ? Error{ErrorCode::not_found, "module " + served.module + " lacks kernel " + h.name + " at its reload", 0, {}} : std::move(again).error();
            return;
        }
        fresh.emplace_back(&h, std::move(*again));
    });
    if (failed) return *failed;
    for (auto& [h, f] : fresh) {
        h->function = f->function;
        h->launcher = std::move(f->launcher);
    }
    kept = true;
    const auto grew = window.close(driver);
    rooms_.log.info("reloaded module " + served.module + " on " + served.device + " for " + why + ": it had been evicted under the device-memory budget");
    std::lock_guard registry(mutex_);  // (a footprint report reads the slot's module under it)
    s.restore(code->module, std::move(code->library), grew ? std::optional<uint64_t>(plus(0, *grew)) : std::nullopt);
    resident_[ordinal] += counted_bytes(s.module());
    s.touch(steady_now_ns());
    enforce_budget_locked(ordinal, &s);
    return {};
}

}  // namespace sdm::runtime
