#include "lazy_cache.hpp"

#include <cstdlib>
#include <string_view>

namespace sdm::runtime {

Cache* LazyCache::get() {
    std::call_once(once_, [this] {
        // The driver's own switch for its JIT cache turns sdm's off too (docs/CACHE.md).
        if (const char* off = std::getenv("CUDA_CACHE_DISABLE"); off != nullptr && std::string_view(off) == "1") {
            log_.info("the kernel cache is off: CUDA_CACHE_DISABLE=1 (it turns off the driver's JIT cache, and sdm's with it); every JIT builds again");
            return;
        }
        CacheOptions options = options_;
        options.store_failed = [this](const std::string& why) { log_.warn(why); };
        options.authenticate = authenticate_;
        auto opened = Cache::open(options);
        if (opened) cache_ = std::move(*opened);
        else log_.warn("the kernel cache is off: " + opened.error().message);
    });
    return cache_ && !cache_->disabled() ? cache_.get() : nullptr;
}

}  // namespace sdm::runtime
