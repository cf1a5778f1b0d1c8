// Context-independent libraries (cuLibraryLoadData, CUDA 12.0): one per distinct image a runtime
// loads (one archive entry, built for one target), shared by every device and context that selects
// it; the driver loads it into a context on first use (cuKernelGetFunction). The library owns or
// pins the bytes it was given and tells the driver so (CU_LIBRARY_BINARY_IS_PRESERVED): a stored
// cubin is read in place from the archive's mapping, anything decoded or built is kept here
// instead of in a copy the driver would make. It is unloaded when the last module slot using it
// goes. A driver without the library entry points gets modules (cuModuleLoadData) per context
// instead, and so do images the driver's own JIT loaded (modules.cpp).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>

#include "bytes.hpp"
#include "driver.hpp"
#include "format.hpp"
#include "hash.hpp"
#include "jit_backend.hpp"
#include "log.hpp"
#include "result.hpp"

namespace sdm::runtime {

struct MountedArchive;

class LoadedLibrary {
public:
    // Loads `bytes` (alive as long as `pin` and `owned` are) as a library; `what` names the image.
    static Result<std::shared_ptr<LoadedLibrary>> load(std::shared_ptr<Driver> driver, const Logger& log, Bytes bytes, ByteVector owned,
                                                       std::shared_ptr<const MountedArchive> pin, std::string what);
    ~LoadedLibrary();  // cuLibraryUnload (a failure is logged)
    LoadedLibrary(const LoadedLibrary&) = delete;
    LoadedLibrary& operator=(const LoadedLibrary&) = delete;

    CUlibrary handle() const noexcept { return library_; }
    const std::string& what() const noexcept { return what_; }
    // Where its bytes came from, and the cache entry they did (for the handles and an eviction).
    ImageSource source{ImageSource::archive_cubin};
    std::optional<Hash128> cache_key;

private:
    LoadedLibrary(std::shared_ptr<Driver> driver, const Logger& log) : driver_(std::move(driver)), log_(log) {}
    std::shared_ptr<Driver> driver_;
    const Logger& log_;
    CUlibrary library_{nullptr};
    ByteVector owned_;
    std::shared_ptr<const MountedArchive> pin_;
    std::string what_;
};

// The libraries a runtime loaded, by image: (archive, module, entry index, JIT target SM and variant;
// 0 for an image loaded as it is stored).
class Libraries {
public:
    using Key = std::tuple<const MountedArchive*, std::string, uint32_t, uint16_t, archive::Variant>;
    struct Entry {
        std::mutex mutex;  // held while its library loads: one load per image however many devices ask
        std::weak_ptr<LoadedLibrary> library;
    };
    // The entry of `key`, made on first use; lock its mutex, then read or fill its library.
    std::shared_ptr<Entry> entry(const Key& key);
    // Whether the driver has the library entry points (asked once; the answer is logged once).
    bool available(Driver& driver, const Logger& log);

private:
    std::mutex mutex_;
    std::map<Key, std::shared_ptr<Entry>> entries_;
    std::once_flag once_;
    bool available_{false};
};

}  // namespace sdm::runtime
