#include "library.hpp"

#include <iterator>

#include "runtime/platform/platform.hpp"
#include "runtime/platform/settings.hpp"

namespace sdm::runtime {

Result<std::shared_ptr<LoadedLibrary>> LoadedLibrary::load(std::shared_ptr<Driver> driver, const Logger& log, Bytes bytes, ByteVector owned,
                                                           std::shared_ptr<const MountedArchive> pin, std::string what) {
    std::shared_ptr<LoadedLibrary> out(new LoadedLibrary(std::move(driver), log));
    out->owned_ = std::move(owned);
    out->pin_ = std::move(pin);
    out->what_ = std::move(what);
    // The bytes outlive the library (pinned or owned here): the driver reads them in place.
    CUlibraryOption option = CU_LIBRARY_BINARY_IS_PRESERVED;
    void* value = reinterpret_cast<void*>(uintptr_t{1});
    const void* code = out->owned_.empty() ? static_cast<const void*>(bytes.data()) : static_cast<const void*>(out->owned_.data());
    SDM_TRY(SDM_DRIVER_CALL(*out->driver_, cuLibraryLoadData, "loading " + out->what_, &out->library_, code, nullptr, nullptr, 0u, &option, &value, 1u));
    return out;
}

LoadedLibrary::~LoadedLibrary() {
    if (library_ == nullptr) return;
    try {
        auto r = SDM_DRIVER_CALL(*driver_, cuLibraryUnload, "unloading the library of " + what_, library_);
        if (!r) log_.error(r.error().message);
        else log_.debug("unloaded the library of " + what_);
    } catch (...) {  // no memory for the message: nothing else to do
    }
}

std::shared_ptr<Libraries::Entry> Libraries::entry(const Key& key) {
    std::lock_guard lock(mutex_);
    auto& e = entries_[key];
    if (!e) {
        // Entries whose library is gone and that nobody holds go, in one sweep each time the map
        // has doubled since the last (amortized: no load walks the whole map), so it stays about
        // as large as what is loaded, however many reloads passed. Nobody can take one meanwhile
        // (that needs mutex_); its own mutex, tried, orders this read after the last load's write.
        if (entries_.size() > 2 * swept_at_ + 16) {
            for (auto it = entries_.begin(); it != entries_.end();) {
                bool idle = false;
                if (it->second && it->second.use_count() == 1) {
                    std::unique_lock entry_lock(it->second->mutex, std::try_to_lock);
                    idle = entry_lock.owns_lock() && it->second->library.expired();
                }  // unlocked before the erase destroys the mutex
                it = idle ? entries_.erase(it) : std::next(it);
            }
            swept_at_ = entries_.size();
        }
        auto& fresh = entries_[key];  // (the sweep never erases it: it has no entry yet)
        fresh = std::make_shared<Entry>();
        return fresh;
    }
    return e;
}

LoadPathChoice choose_load_path(bool libraries, bool follows_current_context, const Logger& log) {
    if (!libraries) return {LoadPath::module, "the CUDA driver lacks the library entry points: images load as modules of each context (cuModuleLoadData)"};
    if (const auto forced = settings::value_or(settings::choice(settings::Id::load_path, log), ""); !forced.empty()) {
        if (forced == "module") return {LoadPath::module, "SDM_LOAD_PATH=module: images load as modules of each context (cuModuleLoadData)"};
        if (forced == "library") return {LoadPath::library, "SDM_LOAD_PATH=library: images load as libraries shared by every context (cuLibraryLoadData)"};
    }
    if (follows_current_context)
        return {LoadPath::library, "fetches follow the calling thread's context (contexts come and go): images load once as libraries shared by every "
                                   "context (cuLibraryLoadData)"};
    return {LoadPath::module, "one context per device: images load as modules of each device's context (cuModuleLoadData), the driver's cheaper "
                              "path at scale"};
}

LoadPathChoice load_path_for(Driver& driver, bool follows_current_context, const Logger& log) {
    bool all = true;
    for (EntryPoint e : {EntryPoint::cuLibraryLoadData, EntryPoint::cuLibraryUnload, EntryPoint::cuLibraryGetKernel, EntryPoint::cuKernelGetFunction})
        all = all && driver.resolve(e);
    return choose_load_path(all, follows_current_context, log);
}

LoadPath Libraries::path(Driver& driver, const Logger& log, bool follows_current_context) {
    std::call_once(once_, [&] {
        const LoadPathChoice choice = load_path_for(driver, follows_current_context, log);
        path_ = choice.path;
        log.info(choice.why);
    });
    return path_;
}

}  // namespace sdm::runtime
