#include "footprint.hpp"

#include <set>

#include "archive/file_map.hpp"
#include "runtime/archives/archive_set.hpp"
#include "runtime/jit/lazy_cache.hpp"

namespace sdm::runtime {

namespace {

uint64_t add(uint64_t a, uint64_t b) noexcept { return b > UINT64_MAX - a ? UINT64_MAX : a + b; }

}  // namespace

Footprint footprint(Modules& modules, const ArchiveSet& archives, const LazyCache& cache) {
    Footprint out;
    out.modules = modules.footprint();
    std::set<const void*> libraries;
    for (const ModuleFootprint& m : out.modules) {
        out.device_bytes = add(out.device_bytes, m.device_bytes);
        if (m.device_bytes == 0 && !m.evicted && !m.draining) ++out.unknown_device_modules;
        if (m.library != nullptr && libraries.insert(m.library).second) out.host_bytes = add(out.host_bytes, m.host_bytes);
    }
    for (const auto& a : archives.archives()) {
        if (a->readahead) out.readahead_bytes = add(out.readahead_bytes, a->readahead->held_bytes());
        if (a->references) out.reference_bytes = add(out.reference_bytes, a->references->held_bytes());
        out.archive_memory_bytes = add(out.archive_memory_bytes, (a->owned ? a->owned->size() : 0) + a->manifest_bytes.size());
        if (a->archive.file() != nullptr) out.archive_mapped_bytes = add(out.archive_mapped_bytes, a->archive.file()->bytes().size());
    }
    if (Cache* c = cache.if_open())
        if (auto usage = c->usage()) out.cache_bytes = usage->bytes;
    return out;
}

}  // namespace sdm::runtime
