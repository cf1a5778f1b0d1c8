// sdm cache stats | prune | clear: the kernel cache on disk.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cache.hpp"
#include "commands.hpp"

namespace sdm::tools {

int run_cache(const CacheCommand& c) {
    runtime::CacheOptions o;
    o.directory = c.directory;
    o.max_bytes = c.max_bytes;
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
    if (c.action == "prune" || c.action == "clear") {
        auto removed = c.action == "clear" ? cc.clear() : cc.prune(c.max_bytes != 0 ? c.max_bytes : cc.max_bytes());
        if (!removed) {
            fmt::print(stderr, "sdm cache: {}\n", removed.error().message);
            return 1;
        }
        fmt::print("{}: removed {} entries\n", cc.directory(), *removed);
    }
    auto usage = cc.usage();
    if (!usage) {
        fmt::print(stderr, "sdm cache: {}\n", usage.error().message);
        return 1;
    }
    if (c.json) {
        fmt::print("{}\n", nlohmann::json{{"directory", cc.directory()}, {"entries", usage->entries}, {"bytes", usage->bytes}, {"max_bytes", cc.max_bytes()}}.dump(2));
    } else if (c.action == "stats") {
        fmt::print("{}: {} entries, {} bytes of at most {} ({:.1f} %)\n", cc.directory(), usage->entries, usage->bytes, cc.max_bytes(),
                   100.0 * static_cast<double>(usage->bytes) / static_cast<double>(cc.max_bytes()));
        fmt::print("(hit, miss, JIT-time and eviction counters are per process: sdm_cache_stats_get)\n");
    }
    return 0;
}

}  // namespace sdm::tools
