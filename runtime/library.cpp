#include "library.hpp"

#include <iterator>

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
        // Entries whose library is gone and that nobody holds go as new ones come: the map stays
        // as large as what is loaded, however many reloads passed. Nobody can take one meanwhile
        // (that needs mutex_); its own mutex, tried, orders this read after the last load's write.
        for (auto it = entries_.begin(); it != entries_.end();) {
            bool idle = false;
            if (it->second && it->second.use_count() == 1) {
                std::unique_lock entry_lock(it->second->mutex, std::try_to_lock);
                idle = entry_lock.owns_lock() && it->second->library.expired();
            }  // unlocked before the erase destroys the mutex
            it = idle ? entries_.erase(it) : std::next(it);
        }
        e = std::make_shared<Entry>();
    }
    return e;
}

bool Libraries::available(Driver& driver, const Logger& log) {
    std::call_once(once_, [&] {
        std::string missing;
        for (EntryPoint e : {EntryPoint::cuLibraryLoadData, EntryPoint::cuLibraryUnload, EntryPoint::cuLibraryGetKernel, EntryPoint::cuKernelGetFunction})
            if (!driver.resolve(e)) missing += (missing.empty() ? "" : ", ") + std::string(entry_point_name(e));
        available_ = missing.empty();
        if (!available_)
            log.info("the CUDA driver lacks " + missing + ": images load as modules (cuModuleLoadData), once per context, instead of as libraries shared by every context");
    });
    return available_;
}

}  // namespace sdm::runtime
