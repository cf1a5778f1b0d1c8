// sdm cache stats | prune | clear: the kernel cache on disk. Creates nothing: a directory that
// does not exist is reported as an empty cache, and one that fails the cache's checks (another
// user's, writable by others, a link) is refused before anything in it is touched.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "runtime/jit/cache.hpp"
#include "commands.hpp"
#include "wording.hpp"

namespace sdm::tools {

int run_cache(const CacheCommand& c) {
    runtime::CacheOptions o;
    o.directory = c.directory;
    o.max_bytes = c.max_bytes;
    o.create = false;
    auto cache = runtime::Cache::open(o);
    if (!cache) {
        fmt::print(stderr, "sdm cache: {}\n", cache.error().message);
        return 1;
    }
    runtime::Cache& cc = **cache;
    if (cc.disabled()) {
        fmt::print(stderr, "sdm cache: the cache is disabled (SDM_CACHE_DISABLE); unset it to use {}\n", cc.directory());
        return 1;
    }
    uint64_t removed = 0;
    if (c.action == "prune" || c.action == "clear") {
        auto r = c.action == "clear" ? cc.clear() : cc.prune(c.max_bytes != 0 ? c.max_bytes : cc.max_bytes());
        if (!r) {
            fmt::print(stderr, "sdm cache: {}\n", r.error().message);
            return 1;
        }
        removed = *r;
    }
    auto usage = cc.usage();
    if (!usage) {
        fmt::print(stderr, "sdm cache: {}\n", usage.error().message);
        return 1;
    }
    if (c.json) {
        nlohmann::json out{{"directory", cc.directory()},     {"exists", cc.exists()},
                           {"entries", usage->entries},       {"bytes", usage->bytes},
                           {"temporaries", usage->temporaries}, {"temporary_bytes", usage->temporary_bytes},
                           {"max_bytes", cc.max_bytes()}};
        if (c.action != "stats") out["removed"] = removed;
        fmt::print("{}\n", out.dump(2));
        return 0;
    }
    if (c.action != "stats") fmt::print("{}: removed {} and temporary files\n", cc.directory(), plural(removed, "entry", "entries"));
    if (!cc.exists()) {
        fmt::print("{}: 0 entries (no cache there yet; nothing was created)\n", cc.directory());
    } else if (c.action == "stats") {
        fmt::print("{}: {}, {} of at most {} ({:.1f} %)", cc.directory(), plural(usage->entries, "entry", "entries"), plural(usage->bytes, "byte"), cc.max_bytes(),
                   100.0 * static_cast<double>(usage->bytes) / static_cast<double>(cc.max_bytes()));
        if (usage->temporaries > 0)
            fmt::print(", {} of them in {} (being written, or left by killed writers: sdm cache prune removes those)",
                       usage->temporary_bytes, plural(usage->temporaries, "temporary file"));
        fmt::print("\n(hit, miss, JIT-time and eviction counters are per process: sdm_cache_stats_get)\n");
    }
    return 0;
}

}  // namespace sdm::tools
