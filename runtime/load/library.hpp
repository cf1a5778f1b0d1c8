// Context-independent libraries (cuLibraryLoadData, CUDA 12.0), on the library path (LoadPath
// below): one per distinct image a runtime loads (one archive entry, built for one target), shared by every device and context that selects
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
#include <vector>

#include "common/bytes.hpp"
#include "runtime/platform/driver.hpp"
#include "archive/format.hpp"
#include "common/hash.hpp"
#include "runtime/jit/jit_backend.hpp"
#include "runtime/platform/log.hpp"
#include "common/result.hpp"

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
    // Where its bytes came from, and the cache entry they did (for the handles and an eviction);
    // the entry points its image defines, when its checks read them.
    ImageSource source{ImageSource::archive_cubin};
    std::optional<Hash128> cache_key;
    std::optional<std::vector<std::string>> kernels;
    uint64_t device_bytes{0};  // its image's sections in device memory (LoadableImage)
    // The host memory it keeps: the image's bytes, which the driver reads again for each context
    // (none when they are the archive's mapping, which the archive owns).
    uint64_t host_bytes() const noexcept { return owned_.size(); }

private:
    LoadedLibrary(std::shared_ptr<Driver> driver, const Logger& log) : driver_(std::move(driver)), log_(log) {}
    std::shared_ptr<Driver> driver_;
    const Logger& log_;
    CUlibrary library_{nullptr};
    ByteVector owned_;
    std::shared_ptr<const MountedArchive> pin_;
    std::string what_;
};

// How a runtime hands images to the driver. The module path (cuModuleLoadData in each context)
// costs less than the library path at scale (on the H200, four CUDA libraries loaded whole: the
// library path took 1.02x to 1.33x as long EAGER, 0.95x to 1.56x LAZY; bench/RESULTS.md, "Loading at scale"), and a runtime
// with one context per device loads each image
// once per device either way; the library path loads an image once for however many contexts
// come and go, which is what a runtime following the calling thread's context meets.
enum class LoadPath : uint8_t { module, library };
struct LoadPathChoice {
    LoadPath path{LoadPath::module};
    std::string why;  // "one context per device: ...", for the log and sdm info
};
// The choice for a runtime: $SDM_LOAD_PATH (module, library) when set, else the library path when
// fetches follow the calling thread's context, else the module path; the module path always when
// the driver lacks the library entry points (`libraries`: whether it has them).
LoadPathChoice choose_load_path(bool libraries, bool follows_current_context, const Logger& log);
// The same for this driver (whether it resolves the library entry points): what a runtime on it
// chooses at its first load, and what sdm info shows.
LoadPathChoice load_path_for(Driver& driver, bool follows_current_context, const Logger& log);

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
    // The runtime's load path (choose_load_path, asked once; the choice is logged once).
    LoadPath path(Driver& driver, const Logger& log, bool follows_current_context);

private:
    std::mutex mutex_;
    std::map<Key, std::shared_ptr<Entry>> entries_;
    size_t swept_at_{0};  // entries_.size() after the last sweep of idle entries
    std::once_flag once_;
    LoadPath path_{LoadPath::module};
};

}  // namespace sdm::runtime
