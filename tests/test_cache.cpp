// The content-addressed cache: keys, checked entries, one build for many threads and processes,
// killed writers, hostile directories, the byte cap, and the disabled and read-only modes.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <ctime>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cache.hpp"
#include "support.hpp"
#include "file_map.hpp"

using namespace sdm;
using namespace sdm::runtime;
using archive::ByteVector;
namespace fs = std::filesystem;

namespace {

std::unique_ptr<Cache> open_cache(const std::string& dir, uint64_t max_bytes = 0, bool read_only = false, bool disabled = false) {
    CacheOptions o;
    o.directory = dir;
    o.max_bytes = max_bytes;
    o.read_only = read_only;
    o.disabled = disabled;
    auto c = Cache::open(o);
    if (!c) FAIL(c.error().message);
    return std::move(*c);
}

ByteVector payload(size_t size, uint8_t seed) {
    ByteVector b(size);
    for (size_t i = 0; i < size; ++i) b[i] = std::byte(static_cast<uint8_t>(i * 31 + seed));
    return b;
}

archive::Hash128 key_of(const std::string& input, uint64_t sm = 90) {
    return CacheKeyBuilder().field(input).field(sm).field("nvJitLink").field("13.0").field(uint64_t{13000}).key();
}

}  // namespace

TEST_CASE("keys: every input field counts, length-prefixed", "[cache]") {
    CHECK(key_of("ptx") == key_of("ptx"));
    CHECK_FALSE(key_of("ptx", 90) == key_of("ptx", 100));
    CHECK_FALSE(key_of("ptx") == key_of("ptx2"));
    CHECK_FALSE(CacheKeyBuilder().field("ab").field("c").key() == CacheKeyBuilder().field("a").field("bc").key());
    CHECK_FALSE(CacheKeyBuilder().field("-O3").field("-lineinfo").key() == CacheKeyBuilder().field("-lineinfo").field("-O3").key());
}

TEST_CASE("entries round trip; damaged ones are misses, removed and rebuilt", "[cache]") {
    test::TempDir dir;
    auto cache = open_cache(dir.path);
    const auto key = key_of("kernels.ptx");
    CHECK_FALSE(cache->get(key));
    REQUIRE(cache->put(key, payload(5000, 1)));
    const std::string path = cache->entry_path(key);
    CHECK(path.find(dir.path + "/v1/") == 0);
    CHECK(fs::path(path).parent_path().filename().string().size() == 2);  // two-level fan-out
    CHECK(cache->get(key).value() == payload(5000, 1));
    CHECK(cache->stats().hits == 1);

    SECTION("truncated") { fs::resize_file(path, fs::file_size(path) - 10); }
    SECTION("bit-flipped payload") {
        std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
        f.seekp(200);
        f.put('\x55');
    }
    SECTION("bit-flipped header") {
        std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
        f.seekp(20);
        f.put('\x55');
    }
    SECTION("another key's entry under this name") {
        REQUIRE(cache->put(key_of("other"), payload(5000, 1)));
        fs::rename(cache->entry_path(key_of("other")), path);
    }
    SECTION("empty") { fs::resize_file(path, 0); }
    CHECK_FALSE(cache->get(key));
    CHECK_FALSE(fs::exists(path));
    CHECK(cache->stats().bad_entries == 1);
    int builds = 0;
    auto rebuilt = cache->get_or_build(key, [&]() -> Result<ByteVector> {
        ++builds;
        return payload(5000, 1);
    });
    REQUIRE(rebuilt);
    CHECK(*rebuilt == payload(5000, 1));
    CHECK(builds == 1);
    CHECK(cache->get(key).value() == payload(5000, 1));
}

TEST_CASE("an entry that cannot be stored: the built image is returned all the same, and the reason told", "[cache]") {
    test::TempDir dir;
    CacheOptions o;
    o.directory = dir.path;
    std::vector<std::string> told;
    o.store_failed = [&](const std::string& why) { told.push_back(why); };
    auto opened = Cache::open(o);
    REQUIRE(opened);
    auto& cache = *opened;
    const auto key = CacheKeyBuilder().field("no room").key();
    // The entry's directory cannot be made: a file stands where it goes.
    const std::string entry_dir = cache->entry_path(key).substr(0, cache->entry_path(key).rfind('/'));
    std::filesystem::create_directories(std::filesystem::path(entry_dir).parent_path());
    std::ofstream(entry_dir) << "in the way";
    int builds = 0;
    auto r = cache->get_or_build(key, [&]() -> Result<ByteVector> { ++builds; return payload(100, 3); });
    REQUIRE(r);
    CHECK(*r == payload(100, 3));
    CHECK(builds == 1);
    // Told twice, once each: the entry could not be looked up (its folder is a file), and it could not be stored.
    REQUIRE(told.size() == 2);
    CHECK_THAT(told[0], Catch::Contains("is a regular file, not a directory; remove it"));
    CHECK_THAT(told[1], Catch::Contains("could not store") && Catch::Contains("used uncached") && Catch::Contains("remove it"));
    CHECK_FALSE(cache->get(key));
    // A build that fails is still the caller's error, and not a store failure; nothing is told twice.
    auto failed = cache->get_or_build(key, []() -> Result<ByteVector> { return make_error(ErrorCode::jit, "link failed"); });
    CHECK_FALSE(failed);
    CHECK(told.size() == 2);
}

TEST_CASE("16 threads asking for one key run one build", "[cache][concurrency]") {
    test::TempDir dir;
    auto cache = open_cache(dir.path);
    const auto key = key_of("shared.ptx");
    std::atomic<int> builds{0};
    std::vector<std::thread> threads;
    std::atomic<int> good{0};
    for (int t = 0; t < 16; ++t)
        threads.emplace_back([&] {
            auto r = cache->get_or_build(key, [&]() -> Result<ByteVector> {
                ++builds;
                std::this_thread::sleep_for(std::chrono::milliseconds(150));
                return payload(100000, 7);
            });
            if (r && *r == payload(100000, 7)) ++good;
        });
    for (auto& t : threads) t.join();
    CHECK(builds == 1);
    CHECK(good == 16);
}

TEST_CASE("8 processes asking for one key run one build", "[cache][concurrency]") {
    test::TempDir dir;
    const std::string log = dir.path + "/builds.log";
    const auto key = key_of("fleet.ptx");
    std::vector<pid_t> children;
    for (int p = 0; p < 8; ++p) {
        const pid_t pid = ::fork();
        REQUIRE(pid >= 0);
        if (pid == 0) {
            CacheOptions o;
            o.directory = dir.path + "/cache";
            auto cache = Cache::open(o);
            if (!cache) ::_exit(2);
            auto r = (*cache)->get_or_build(key, [&]() -> Result<ByteVector> {
                std::ofstream(log, std::ios::app) << ::getpid() << "\n";
                std::this_thread::sleep_for(std::chrono::milliseconds(300));
                return payload(200000, 3);
            });
            ::_exit(r && *r == payload(200000, 3) ? 0 : 1);
        }
        children.push_back(pid);
    }
    for (const pid_t pid : children) {
        int status = 0;
        REQUIRE(::waitpid(pid, &status, 0) == pid);
        CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
    }
    std::ifstream in(log);
    int lines = 0;
    for (std::string line; std::getline(in, line);) ++lines;
    CHECK(lines == 1);
}

TEST_CASE("a process killed while building or writing leaves nothing that reads back wrong", "[cache][kill]") {
    test::TempDir dir;
    const auto key = key_of("killed.ptx");
    const ByteVector big = payload(32 << 20, 9);
    // Killed while holding the lock: the kernel drops it, and the next process builds.
    {
        const pid_t pid = ::fork();
        REQUIRE(pid >= 0);
        if (pid == 0) {
            auto cache = open_cache(dir.path);
            (void)cache->get_or_build(key, []() -> Result<ByteVector> {
                std::this_thread::sleep_for(std::chrono::seconds(30));
                return ByteVector{};
            });
            ::_exit(0);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
        auto cache = open_cache(dir.path);
        const auto started = std::chrono::steady_clock::now();
        auto r = cache->get_or_build(key, [&]() -> Result<ByteVector> { return payload(1000, 1); });
        REQUIRE(r);
        CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(5));  // no stale lock
        REQUIRE(cache->clear());
    }
    // Killed at random points while writing 32 MiB entries: a read finds the whole entry or none.
    for (int round = 0; round < 8; ++round) {
        const pid_t pid = ::fork();
        REQUIRE(pid >= 0);
        if (pid == 0) {
            auto cache = open_cache(dir.path);
            for (;;) {
                (void)cache->put(key, big);
                (void)cache->clear();
            }
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20 + 37 * round));
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
        auto cache = open_cache(dir.path);
        const auto got = cache->get(key);
        if (got) CHECK(*got == big);
        CHECK(cache->stats().bad_entries == 0);
    }
}

TEST_CASE("a cache directory others can write to, or that another user owns, is refused", "[cache][security]") {
    test::TempDir dir;
    REQUIRE(::chmod(dir.path.c_str(), 0775) == 0);
    CacheOptions o;
    o.directory = dir.path;
    auto refused = Cache::open(o);
    REQUIRE_FALSE(refused);
    CHECK_THAT(refused.error().message, Catch::Contains("group- or world-writable (mode 0775)") && Catch::Contains("chmod go-w"));
    REQUIRE(::chmod(dir.path.c_str(), 0700) == 0);
    CHECK(Cache::open(o));
    if (::geteuid() == 0) {  // only root can give a directory away
        REQUIRE(::chown(dir.path.c_str(), 4321, 4321) == 0);
        auto foreign = Cache::open(o);
        REQUIRE_FALSE(foreign);
        CHECK_THAT(foreign.error().message, Catch::Contains("belongs to uid 4321"));
        REQUIRE(::chown(dir.path.c_str(), 0, 0) == 0);
    } else {
        WARN("not root: the foreign-owner case needs chown");
    }
}

namespace {
// Sets an entry's time (what the LRU trim orders by) to `age` ago.
void age_entry(const Cache& cache, const sdm::archive::Hash128& key, std::chrono::seconds age) {
    timespec now{};
    ::clock_gettime(CLOCK_REALTIME, &now);
    const timespec then{now.tv_sec - age.count(), now.tv_nsec};
    const timespec times[2] = {then, then};
    REQUIRE(::utimensat(AT_FDCWD, cache.entry_path(key).c_str(), times, 0) == 0);
}
int64_t entry_age_seconds(const Cache& cache, const sdm::archive::Hash128& key) {
    struct stat st {};
    REQUIRE(::stat(cache.entry_path(key).c_str(), &st) == 0);
    return static_cast<int64_t>(::time(nullptr)) - static_cast<int64_t>(st.st_mtime);
}
}  // namespace

TEST_CASE("the byte cap holds, trimming least recently used entries to 75 %", "[cache][evict]") {
    test::TempDir dir;
    const uint64_t cap = 1 << 20;
    auto cache = open_cache(dir.path, cap);
    // Eight entries used hours ago, the oldest first; "hot" is the oldest of all.
    const auto hot = key_of("hot");
    REQUIRE(cache->put(hot, payload(100000, 0)));
    age_entry(*cache, hot, std::chrono::hours(10));
    for (int i = 0; i < 8; ++i) {
        REQUIRE(cache->put(key_of("cold" + std::to_string(i)), payload(100000, static_cast<uint8_t>(i + 1))));
        age_entry(*cache, key_of("cold" + std::to_string(i)), std::chrono::hours(9) - std::chrono::minutes(i));
    }
    // A hit on an entry last used longer ago than the granularity (ten minutes) makes it the newest.
    REQUIRE(cache->get(hot));
    CHECK(entry_age_seconds(*cache, hot) < 60);
    // A hit on an entry used within the granularity writes nothing (a warm start stays read-only).
    age_entry(*cache, hot, std::chrono::minutes(5));
    REQUIRE(cache->get(hot));
    CHECK(entry_age_seconds(*cache, hot) >= 299);
    // Past the cap, the least recent go until 75 % is left: the old colds, not hot.
    for (int i = 0; i < 4; ++i) {
        REQUIRE(cache->put(key_of("new" + std::to_string(i)), payload(100000, static_cast<uint8_t>(100 + i))));
        const auto u = cache->usage();
        REQUIRE(u);
        CHECK(u->bytes <= cap);
    }
    CHECK(cache->stats().evictions > 0);
    CHECK(cache->get(hot));
    CHECK_FALSE(cache->get(key_of("cold0")));
    CHECK(cache->get(key_of("new3")));
    REQUIRE(cache->clear());
    CHECK(cache->usage()->entries == 0);
}

TEST_CASE("disabled and read-only caches", "[cache][modes]") {
    test::TempDir dir;
    const auto key = key_of("mode.ptx");
    {
        auto disabled = open_cache(dir.path, 0, false, true);
        REQUIRE(disabled->put(key, payload(100, 1)));
        CHECK_FALSE(disabled->get(key));
        int builds = 0;
        for (int i = 0; i < 3; ++i) REQUIRE(disabled->get_or_build(key, [&]() -> Result<ByteVector> { ++builds; return payload(100, 1); }));
        CHECK(builds == 3);
        CHECK_FALSE(fs::exists(disabled->entry_path(key)));
    }
    {
        auto writer = open_cache(dir.path);
        REQUIRE(writer->put(key, payload(100, 1)));
    }
    auto ro = open_cache(dir.path, 0, true);
    CHECK(ro->get(key).value() == payload(100, 1));
    const auto other = key_of("not-there");
    REQUIRE(ro->get_or_build(other, []() -> Result<ByteVector> { return payload(10, 2); }));
    CHECK_FALSE(fs::exists(ro->entry_path(other)));
    setenv("SDM_CACHE_MAX_BYTES", "lots", 1);
    CacheOptions o;
    o.directory = dir.path;
    auto bad = Cache::open(o);
    unsetenv("SDM_CACHE_MAX_BYTES");
    REQUIRE_FALSE(bad);
    CHECK_THAT(bad.error().message, Catch::Contains("SDM_CACHE_MAX_BYTES=lots"));
}
