// libFuzzer target: the cache entry reader. The input is written as the entry file of one key in
// a cache directory (mode 0600, as sdm writes entries), then read back through Cache::get: a
// truncated, foreign or damaged entry must come back absent (and be removed), never as a payload,
// never a crash.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/jit/cache.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace sdm;
    using namespace sdm::runtime;
    static const std::string dir = [] {
        char tmpl[] = "/tmp/sdm-fuzz-cache-XXXXXX";
        const char* made = mkdtemp(tmpl);
        if (made == nullptr) std::abort();
        return std::string(made);
    }();
    static const auto cache = [] {
        CacheOptions options;
        options.directory = dir;
        auto opened = Cache::open(options);
        if (!opened) std::abort();
        return std::move(*opened);
    }();
    const auto key = CacheKeyBuilder().field("fuzz").key();
    const std::string path = cache->entry_path(key);
    const auto plant = [&] {  // a damaged entry is removed when read: plant it before each read
        std::filesystem::create_directories(std::filesystem::path(path).parent_path());
        FILE* f = std::fopen(path.c_str(), "wb");
        if (f == nullptr) std::abort();
        if (size > 0 && std::fwrite(data, 1, size, f) != size) std::abort();
        std::fclose(f);
        ::chmod(path.c_str(), 0600);
    };
    plant();
    if (cache->get(key).has_value()) std::abort();  // the fuzzer cannot forge the payload's XXH3-64 and the key in it
    return 0;
}
