// Where the bytes of a selected image come from (docs/LOADING.md, "Which image" and "When no cubin
// fits"): a stored cubin straight from the archive's mapping; a compressed cubin or a fatbin
// decoded into memory (never to the cache: it holds JIT outputs only); PTX or LTO-IR built by the
// first JIT backend that may run (jit_backend.hpp), through the cache when the backend's output is
// cached.
// The driver trusts an image's headers (the real one crashes on an ELF header that points past the
// image), and so do the backends: every image an archive holds passes the checks `sdm verify` runs
// before a backend or the driver sees it, and so does every image a backend or the cache hands
// back; a cache hit that fails them is evicted and built again.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/bytes.hpp"
#include "driver.hpp"
#include "common/hash.hpp"
#include "jit_backend.hpp"
#include "jit_isolation.hpp"
#include "jit_toolchain.hpp"
#include "layering.hpp"
#include "lazy_cache.hpp"
#include "load_context.hpp"
#include "log.hpp"
#include "common/result.hpp"

namespace sdm::runtime {

// What getting an image's bytes is given: the cache, the JIT toolchain, the driver's context (its
// JIT backend holds the shared driver), and how many modules ahead a compressed image's load
// decodes (readahead.hpp; $SDM_READAHEAD).
struct ImageRooms {
    const Logger& log;
    LoadContext& load;
    JitToolchain& jit;
    LazyCache& cache;
    size_t readahead_modules{0};
};

struct LoadableImage {
    ImageSource source{ImageSource::archive_cubin};
    std::optional<Hash128> cache_key;  // the cache entry it came from or went to
    Bytes view;                        // a stored cubin, in the archive's mapping
    ByteVector owned;                  // anything else
    CUmodule module{nullptr};          // loaded already (the driver's JIT)
    // A cubin's entry points, as its checks read them (unset for a fatbin, whose image the driver
    // chooses, and for what the driver's JIT loaded): what the load checks the manifest against.
    std::optional<std::vector<std::string>> kernels;
    bool decoded_ahead{false};  // a worker decoded it while an earlier load ran (readahead.hpp)
    Bytes bytes() const noexcept { return owned.empty() ? view : Bytes(owned); }
};

// The image `served` selected, ready for cuModuleLoadData (or loaded, by the driver's JIT), with
// `driver` current in the device's context. `stream` is checked for graph capture before any JIT.
Result<LoadableImage> load_image_bytes(const ImageRooms& rooms, Driver& driver, const ServedBy& served, CUstream stream);

// The JIT job of `served` (its selection's path is jit), with the entry's raw `input` (empty until
// a build needs it: which backend may run, and its cache key, read none of it), isolated or not as
// `isolation` says of its kind and its archive's trust.
JitJob jit_job(const ServedBy& served, Bytes input, JitIsolation isolation);

// Which backend would build `served`'s image now, loading and building nothing but what asking
// needs (sdm info): the first that may run, and why each before it may not; no backend: every
// reason. One that may run can still fail on the input, which only a build shows.
struct JitPlan {
    std::string backend;                  // "nvJitLink"; empty: none may run
    std::vector<std::string> passed_over;
};
Result<JitPlan> jit_plan(const ImageRooms& rooms, Driver& driver, const ServedBy& served);

}  // namespace sdm::runtime
