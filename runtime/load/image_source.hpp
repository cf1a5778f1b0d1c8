// Where the bytes of a selected image come from (docs/LOADING.md, "Which image" and "When no cubin
// fits"): a stored cubin straight from the archive's mapping; a compressed cubin decoded into
// memory (never to the cache: it holds JIT outputs only); PTX or LTO-IR built by the first JIT
// backend that may run (jit_backend.hpp), through the cache when the backend's output is cached.
// A fatbin is decoded and sdm chooses inside it as among bare entries: its cubin goes to the
// driver alone, its PTX to the backends like a bare PTX entry; the driver never gets it whole.
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
#include "runtime/platform/driver.hpp"
#include "common/hash.hpp"
#include "runtime/jit/jit_backend.hpp"
#include "runtime/jit/jit_isolation.hpp"
#include "runtime/jit/jit_toolchain.hpp"
#include "runtime/select/layering.hpp"
#include "runtime/jit/lazy_cache.hpp"
#include "runtime/device/load_context.hpp"
#include "runtime/platform/log.hpp"
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
    // A cubin's entry points (a fatbin's inner cubin's too), as its checks read them (unset for
    // what the driver's JIT loaded): what the load checks the manifest against.
    std::optional<std::vector<std::string>> kernels;
    uint64_t device_bytes{0};   // a cubin's sections in device memory (archive::ImageInfo); 0 for what the driver's JIT loaded
    bool decoded_ahead{false};  // a worker decoded it while an earlier load ran (readahead.hpp)
    Bytes bytes() const noexcept { return owned.empty() ? view : Bytes(owned); }
};

// The image `served` selected, ready for cuModuleLoadData (or loaded, by the driver's JIT), with
// `driver` current in the device's context. `stream` is checked for graph capture before any JIT.
Result<LoadableImage> load_image_bytes(const ImageRooms& rooms, Driver& driver, const ServedBy& served, CUstream stream);

// What a JIT job builds from: the PTX or LTO-IR entry `served` selected, or the PTX inside the
// fatbin it selected that image_source.cpp chose for the device.
struct JitSource {
    archive::Kind kind{archive::Kind::ptx};
    crypto::Digest identity{};  // what the bytes are (the cache key's content): Archive::identity, or BLAKE2b of an inner image
    std::string name;           // "kernels.compute_90", "kernels.fatbin[entry 1 (compute_90, zstd)]": the backend's log
    std::string image;          // "ptx kernels, compute_90 (entry 2) of archive k.sdma", for messages
    uint16_t target_sm{0};      // what to link for
    archive::Variant target_variant{archive::Variant::base};
};

// `served`'s own entry as a JIT source (its selection's path is jit).
JitSource archive_jit_source(const ServedBy& served);

// The JIT job of `source` for `served`, with its checked `bytes` (empty until a build needs them:
// which backend may run, and its cache key, read none of them), isolated or not as `isolation`
// says of its kind and the trust of the archive holding it.
JitJob jit_job(const ServedBy& served, const JitSource& source, Bytes bytes, JitIsolation isolation);

// Which backend would build `served`'s image now, loading and building nothing but what asking
// needs (sdm info): the first that may run, and why each before it may not; no backend: every
// reason. One that may run can still fail on the input, which only a build shows.
struct JitPlan {
    std::string backend;                  // "nvJitLink"; empty: none may run
    std::vector<std::string> passed_over;
};
Result<JitPlan> jit_plan(const ImageRooms& rooms, Driver& driver, const ServedBy& served);

}  // namespace sdm::runtime
