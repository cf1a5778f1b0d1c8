#include "lazy_cache.hpp"

#include "runtime/platform/settings.hpp"

#include <cstdlib>
#include <string_view>

namespace sdm::runtime {

Cache* LazyCache::get() {
    std::call_once(once_, [this] {
        // The driver's own switch for its JIT cache turns sdm's off too (docs/CACHE.md).
        if (settings::flag(settings::Id::cuda_cache_disable)) {
            log_.info("the kernel cache is off: CUDA_CACHE_DISABLE is on (it turns off the driver's JIT cache, and sdm's with it); every JIT builds again");
            return;
        }
        CacheOptions options = options_;
        options.store_failed = [this](const std::string& why) { log_.warn(why); };
        options.authenticate = authenticate_;
        auto opened = Cache::open(options);
        if (opened) cache_ = std::move(*opened);
        else log_.warn("the kernel cache is off: " + opened.error().message);
        if (cache_ && !cache_->disabled()) opened_.store(cache_.get(), std::memory_order_release);
    });
    return cache_ && !cache_->disabled() ? cache_.get() : nullptr;
}

}  // namespace sdm::runtime
