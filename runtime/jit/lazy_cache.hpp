// The kernel cache (cache.hpp) as the loading rooms are given it: opened on first need, and null
// when it cannot be used (the reason is logged once as a warning, and images are then built every
// time). CUDA_CACHE_DISABLE (on: any value but 0) turns it off (docs/CACHE.md).
#pragma once

#include <atomic>
#include <memory>
#include <mutex>

#include "cache.hpp"
#include "runtime/platform/log.hpp"

namespace sdm::runtime {

class LazyCache {
public:
    // `authenticate`: entries carry a MAC under a key of the cache's own (signatures required).
    LazyCache(const Logger& log, CacheOptions options, bool authenticate) : log_(log), options_(std::move(options)), authenticate_(authenticate) {}
    LazyCache(const LazyCache&) = delete;
    LazyCache& operator=(const LazyCache&) = delete;

    Cache* get();
    // The cache if an earlier get() opened it, without opening it (for a report); else null.
    Cache* if_open() const noexcept { return opened_.load(std::memory_order_acquire); }

private:
    const Logger& log_;
    const CacheOptions options_;
    const bool authenticate_;
    std::once_flag once_;
    std::unique_ptr<Cache> cache_;
    std::atomic<Cache*> opened_{nullptr};
};

}  // namespace sdm::runtime
