// What a runtime holds, for a host that budgets its memory (sdm_footprint_get, sdm info): each
// loaded module's device bytes (its image's sections in device memory, as the image declares them)
// and the host bytes kept for it, then the totals with what the archives hold besides (images
// decoded ahead, decoded references, copies of archives mounted from memory, mapped files) and the
// kernel cache on disk. A report: it walks every module and archive, and may change at once.
#pragma once

#include <cstdint>
#include <vector>

#include "modules.hpp"

namespace sdm::runtime {

class ArchiveSet;
class LazyCache;

struct Footprint {
    std::vector<ModuleFootprint> modules;  // loaded now, then draining (Modules::footprint)
    uint64_t device_bytes{0};              // the modules' device bytes, summed
    uint64_t host_bytes{0};                // the image bytes libraries keep, each library once
    uint64_t readahead_bytes{0};           // images decoded (or queued) ahead of their loads
    uint64_t reference_bytes{0};           // decoded references the archives keep for their loads
    uint64_t archive_memory_bytes{0};      // sdm's copies of archives mounted from memory (and decoded manifests)
    uint64_t archive_mapped_bytes{0};      // archive files mapped read-only (paged in and out by the kernel)
    uint64_t cache_bytes{0};               // the kernel cache's entries on disk (0 when it was never opened)
    uint32_t unknown_device_modules{0};    // modules the driver's JIT loaded: their device bytes are unknown (0)
};

// `cache`'s entries are counted only if it was opened before (it is not opened for a report).
Footprint footprint(Modules& modules, const ArchiveSet& archives, const LazyCache& cache);

}  // namespace sdm::runtime
