// The content-addressed cache: keys, checked entries, one build for many threads and processes,
// killed writers, hostile directories, the byte cap, and the disabled and read-only modes.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <ctime>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <thread>

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/jit/cache.hpp"
#include "runtime/jit/jit_backend.hpp"
#include "support.hpp"
#include "archive/file_map.hpp"
#include "runtime/platform/platform.hpp"

using namespace sdm;
using namespace sdm::runtime;
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

Hash128 key_of(const std::string& input, uint64_t sm = 90) {
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

TEST_CASE("JIT keys: a new driver, a new tool, other options, another target, another sdm each miss", "[cache]") {
    using runtime::jit_cache_key;
    runtime::JitJob job;
    job.input_identity = crypto::blake2b(as_bytes("ptx")).value();
    job.target = "sm_90";
    const std::vector<std::string> options{"-arch=sm_90"};
    const Hash128 base = jit_cache_key("nvJitLink link", job, "/usr/lib/libnvJitLink.so.13:1000:1", 13000, options);
    CHECK(base == jit_cache_key("nvJitLink link", job, "/usr/lib/libnvJitLink.so.13:1000:1", 13000, options));
    CHECK_FALSE(base == jit_cache_key("nvJitLink link", job, "/usr/lib/libnvJitLink.so.13:1000:1", 13010, options));       // driver
    CHECK_FALSE(base == jit_cache_key("nvJitLink link", job, "/usr/lib/libnvJitLink.so.13:2000:2", 13000, options));       // nvJitLink
    CHECK_FALSE(base == jit_cache_key("nvJitLink link", job, "/usr/lib/libnvJitLink.so.13:1000:1", 13000, {"-arch=sm_90", "-lto"}));
    CHECK_FALSE(base == jit_cache_key("nvJitLink link", job, "/usr/lib/libnvJitLink.so.13:1000:1", 13000, {}));
    CHECK_FALSE(base == jit_cache_key("nvPTXCompiler compile", job, "/usr/lib/libnvJitLink.so.13:1000:1", 13000, options));
    runtime::JitJob other = job;
    other.target = "sm_90a";
    CHECK_FALSE(base == jit_cache_key("nvJitLink link", other, "/usr/lib/libnvJitLink.so.13:1000:1", 13000, options));
    // sdm's release is a field (jit_backend.cpp): not varied here, the key builder's fields are.
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

TEST_CASE("a wait for another process's build says which key and which process, and is bounded", "[cache][concurrency]") {
    test::TempDir dir;
    const auto key = key_of("slow.ptx");
    int ready[2];
    REQUIRE(::pipe(ready) == 0);
    // The child builds slowly, inside the key's lock; it says when it is in.
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        CacheOptions o;
        o.directory = dir.path + "/cache";
        auto cache = Cache::open(o);
        if (!cache) ::_exit(2);
        auto r = (*cache)->get_or_build(key, [&]() -> Result<ByteVector> {
            (void)!::write(ready[1], "x", 1);
            std::this_thread::sleep_for(std::chrono::milliseconds(1500));
            return payload(1000, 7);
        });
        ::_exit(r ? 0 : 1);
    }
    char c = 0;
    REQUIRE(::read(ready[0], &c, 1) == 1);
    std::vector<std::string> told;
    std::mutex told_mutex;
    CacheOptions o;
    o.directory = dir.path + "/cache";
    o.lock_warn_seconds = 0.1;
    o.lock_give_up_seconds = 0.4;
    o.store_failed = [&](const std::string& m) {
        std::lock_guard lock(told_mutex);
        told.push_back(m);
    };
    auto cache = Cache::open(o).value();
    int builds = 0;
    auto got = cache->get_or_build(key, [&]() -> Result<ByteVector> {
        ++builds;
        return payload(1000, 7);
    });
    REQUIRE(got);  // built here, uncached, once the wait passed its bound
    CHECK(builds == 1);
    const std::string pid = "process " + std::to_string(child);
    CHECK(std::any_of(told.begin(), told.end(), [&](const std::string& m) {
        return m.find("waiting for the lock") != std::string::npos && m.find("of key " + key.hex()) != std::string::npos &&
               m.find(pid + " is building its image") != std::string::npos;
    }));
    CHECK(std::any_of(told.begin(), told.end(), [&](const std::string& m) {
        return m.find("gave up after 0 s waiting for the lock") != std::string::npos && m.find("which " + pid + " holds") != std::string::npos &&
               m.find("it is used uncached") != std::string::npos;
    }));
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
    // The child's build landed: the next ask is a hit.
    builds = 0;
    CHECK(cache->get_or_build(key, [&]() -> Result<ByteVector> {
        ++builds;
        return payload(1000, 7);
    }).value() == payload(1000, 7));
    CHECK(builds == 0);
    ::close(ready[0]);
    ::close(ready[1]);
}

TEST_CASE("a lock file's contents are only a hint: junk in it, or a pid no system has, names nobody", "[cache][hostile]") {
    test::TempDir dir;
    auto folder = platform::Directory::open(dir.path, false, 0700).value();
    for (const auto& [planted, expect] : std::vector<std::pair<std::string, std::string>>{
             {"\x7f\x45LF garbage", "another process or thread"},
             {"pid ", "another process or thread"},
             {"pid 0\n", "another process or thread"},
             {"pid 99999999999999999999999999", "another process or thread"},
             {"pid 4242\n", "process 4242"},
             {std::string(4096, 'p'), "another process or thread"}}) {
        INFO(planted.substr(0, 32));
        {
            std::ofstream(dir.path + "/k.lock", std::ios::binary | std::ios::trunc) << planted;
        }
        // Held by another descriptor (as another process would), its contents planted.
        const int held = ::open((dir.path + "/k.lock").c_str(), O_RDWR);
        REQUIRE(held >= 0);
        REQUIRE(::flock(held, LOCK_EX) == 0);
        std::string holder;
        auto lock = folder.lock("k.lock", 0.01, 0.05, [&](const std::string& h) { holder = h; });
        REQUIRE_FALSE(lock);  // gave up: the other holds it
        CHECK(holder.rfind(expect, 0) == 0);
        CHECK_THAT(lock.error().message, Catch::Contains("which " + holder + " holds"));
        ::close(held);
    }
}

TEST_CASE("a lock holder says what it builds and until when; a waiter stops waiting for one past its limit, not after 600 s", "[cache][lock]") {
    test::TempDir dir;
    auto folder = runtime::platform::Directory::open(dir.path, false, 0700).value();
    const auto hold = [&](const std::string& mark) {
        { std::ofstream(dir.path + "/k.lock", std::ios::binary | std::ios::trunc) << mark; }
        const int held = ::open((dir.path + "/k.lock").c_str(), O_RDWR);
        REQUIRE(held >= 0);
        REQUIRE(::flock(held, LOCK_EX) == 0);
        return held;
    };
    const long now = static_cast<long>(::time(nullptr));
    // A holder whose limit ends in 100 s: waited for (here up to 1.5 s), its work and limit named.
    {
        const int held = hold("pid 4242 until " + std::to_string(now + 100) + ": nvJitLink building ptx k, compute_90 for sm_90\n");
        std::string holder;
        auto lock = folder.lock("k.lock", 0.01, 1.5, [&](const std::string& h) { holder = h; });
        REQUIRE_FALSE(lock);
        CHECK_THAT(holder, Catch::StartsWith("process 4242 (nvJitLink building ptx k, compute_90 for sm_90, its limit ends in"));
        CHECK_THAT(lock.error().message, !Catch::Contains("past the end of its build's limit"));
        ::close(held);
    }
    // One 60 s past its limit: given up on at the first look, long before give_up_seconds (600).
    {
        const int held = hold("pid 4242 until " + std::to_string(now - 60) + ": nvJitLink building ptx k\n");
        const auto started = std::chrono::steady_clock::now();
        auto lock = folder.lock("k.lock", 5, 600, {});
        REQUIRE_FALSE(lock);
        CHECK_THAT(lock.error().message, Catch::Contains("past the end of its build's limit") && Catch::Contains("process 4242"));
        CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(300));  // (not a timing: 600 s would be the bug)
        ::close(held);
    }
    // The holder's own mark: what the runtime writes when it takes the lock.
    {
        auto lock = folder.lock("k.lock", 5, 600, {}, {"linking m with nvJitLink", 120});
        REQUIRE(lock);
        std::ifstream in(dir.path + "/k.lock");
        std::string mark((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        CHECK_THAT(mark, Catch::StartsWith("pid " + std::to_string(::getpid()) + " until ") && Catch::Contains(": linking m with nvJitLink\n"));
    }
    // Text from the lock file is escaped: a holder cannot write terminal escapes into a waiter's log.
    {
        const int held = hold("pid 4242 until " + std::to_string(now + 100) + ": \x1b[2Jcleared\n");
        std::string holder;
        auto lock = folder.lock("k.lock", 0.01, 0.05, [&](const std::string& h) { holder = h; });
        CHECK_THAT(holder, Catch::Contains("\\x1b[2Jcleared"));
        ::close(held);
    }
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
void age_entry(const Cache& cache, const sdm::Hash128& key, std::chrono::seconds age) {
    timespec now{};
    ::clock_gettime(CLOCK_REALTIME, &now);
    const timespec then{now.tv_sec - age.count(), now.tv_nsec};
    const timespec times[2] = {then, then};
    REQUIRE(::utimensat(AT_FDCWD, cache.entry_path(key).c_str(), times, 0) == 0);
}
int64_t entry_age_seconds(const Cache& cache, const sdm::Hash128& key) {
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
    CHECK_THAT(bad.error().message, Catch::Contains("SDM_CACHE_MAX_BYTES='lots' is not a size"));
}

namespace {
CacheOptions options_in(const std::string& dir, std::vector<std::string>* told, uint64_t max_bytes = 0) {
    CacheOptions o;
    o.directory = dir;
    o.max_bytes = max_bytes;
    if (told != nullptr) o.store_failed = [told](const std::string& why) { told->push_back(why); };
    return o;
}
bool told_contains(const std::vector<std::string>& told, const std::string& text) {
    return std::any_of(told.begin(), told.end(), [&](const std::string& t) { return t.find(text) != std::string::npos; });
}
}  // namespace

TEST_CASE("planted entries: every level and every entry must be the user's and written by nobody else", "[cache][security][hostile]") {
    test::TempDir dir;
    const auto key = key_of("planted.ptx");
    const auto payload_ok = payload(5000, 4);
    std::vector<std::string> told;
    {
        auto cache = Cache::open(options_in(dir.path, &told)).value();
        REQUIRE(cache->put(key, payload_ok));
        REQUIRE(cache->get(key) == payload_ok);
    }
    const std::string entry = std::unique_ptr<Cache>(Cache::open(options_in(dir.path, nullptr)).value())->entry_path(key);
    const std::string fan = fs::path(entry).parent_path().string();
    const auto fresh_get = [&]() {
        told.clear();
        auto cache = Cache::open(options_in(dir.path, &told));
        if (!cache) return std::optional<ByteVector>();
        return (*cache)->get(key);
    };
    SECTION("v1 writable by others (chmod go-w on the root alone used to be enough)") {
        REQUIRE(::chmod((dir.path + "/v1").c_str(), 0777) == 0);
        auto cache = Cache::open(options_in(dir.path, &told));
        REQUIRE_FALSE(cache);
        CHECK_THAT(cache.error().message, Catch::Contains(dir.path + "/v1 is group- or world-writable (mode 0777)") && Catch::Contains("chmod go-w"));
    }
    SECTION("a fan-out folder writable by others") {
        REQUIRE(::chmod(fan.c_str(), 0777) == 0);
        CHECK_FALSE(fresh_get());
        CHECK(told_contains(told, fan + " is group- or world-writable (mode 0777)"));
    }
    SECTION("an entry writable by others") {
        REQUIRE(::chmod(entry.c_str(), 0666) == 0);
        CHECK_FALSE(fresh_get());
        CHECK(told_contains(told, "cache entry " + entry + " is writable by group or others (mode 0666); it is not loaded"));
    }
    SECTION("an entry that is a link to a good entry elsewhere") {
        const std::string elsewhere = dir.path + "/elsewhere.sdmc";
        fs::copy_file(entry, elsewhere);
        fs::remove(entry);
        fs::create_symlink(elsewhere, entry);
        CHECK_FALSE(fresh_get());
        CHECK(told_contains(told, entry + " is a symbolic link; sdm does not follow links here"));
    }
    SECTION("an entry that is a FIFO: refused without blocking") {
        fs::remove(entry);
        REQUIRE(::mkfifo(entry.c_str(), 0600) == 0);
        CHECK_FALSE(fresh_get());
        CHECK(told_contains(told, entry + " is a FIFO (named pipe), not a regular file"));
    }
    SECTION("a fan-out folder that is a link") {
        const std::string moved = dir.path + "/moved";
        fs::rename(fan, moved);
        fs::create_directory_symlink(moved, fan);
        CHECK_FALSE(fresh_get());
        CHECK(told_contains(told, fan + " is a symbolic link, not a directory"));
    }
    if (::geteuid() == 0) {
        SECTION("an entry another user owns") {
            REQUIRE(::chown(entry.c_str(), 4321, 4321) == 0);
            CHECK_FALSE(fresh_get());
            CHECK(told_contains(told, "cache entry " + entry + " belongs to uid 4321, not to this user"));
        }
        SECTION("a fan-out folder another user owns") {
            REQUIRE(::chown(fan.c_str(), 4321, 4321) == 0);
            CHECK_FALSE(fresh_get());
            CHECK(told_contains(told, fan + " belongs to uid 4321"));
        }
    }
}

TEST_CASE("the cache directory swapped after it was opened: everything still goes through the one that was checked", "[cache][security][hostile]") {
    test::TempDir dir;
    const std::string root = dir.path + "/cache";
    auto cache = Cache::open(options_in(root, nullptr)).value();
    const auto key = key_of("swap.ptx");
    REQUIRE(cache->put(key, payload(3000, 5)));
    // Another user with write access to the parent moves the checked directory away and puts
    // their own in its place, holding an entry of the same key with other bytes.
    fs::rename(root, dir.path + "/checked");
    {
        auto theirs = Cache::open(options_in(root, nullptr)).value();
        REQUIRE(theirs->put(key, payload(3000, 99)));
        REQUIRE(theirs->put(key_of("other.ptx"), payload(3000, 98)));
    }
    CHECK(cache->get(key) == payload(3000, 5));   // from the directory opened and checked
    CHECK_FALSE(cache->get(key_of("other.ptx")));  // nothing from the swapped-in one
    const auto k3 = key_of("new.ptx");
    REQUIRE(cache->put(k3, payload(100, 6)));
    CHECK(fs::exists(dir.path + "/checked/v1/" + k3.hex().substr(0, 2)));
    CHECK_FALSE(fs::exists(root + "/v1/" + k3.hex().substr(0, 2) + "/" + k3.hex().substr(2) + ".sdmc"));
}

TEST_CASE("entries are read into private memory: a file truncated or rewritten in place never faults the reader nor changes what it got", "[cache][security][hostile]") {
    // Before, entries of 256 KiB and more were mapped: truncating one in place killed the reader
    // with SIGBUS, and bytes changed after the checksum passed reached the driver.
    test::TempDir dir;
    auto cache = Cache::open(options_in(dir.path, nullptr)).value();
    const auto key = key_of("big.ptx");
    const ByteVector big = payload(4 << 20, 7);
    REQUIRE(cache->put(key, big));
    const std::string path = cache->entry_path(key);
    std::atomic<bool> stop{false};
    std::atomic<int> whole{0}, absent{0}, wrong{0};
    std::thread damage([&] {
        for (int round = 0; !stop; ++round) {
            const int fd = ::open(path.c_str(), O_WRONLY);
            if (fd < 0) continue;
            if (round % 3 == 0) (void)::ftruncate(fd, static_cast<off_t>((round * 7919) % (4 << 20)));
            else if (round % 3 == 1) (void)::pwrite(fd, "damage", 6, 70000 + round % 1000);
            ::close(fd);
            (void)cache->put(key, big);  // and whole again
        }
    });
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(1500);
    while (std::chrono::steady_clock::now() < deadline) {
        const auto got = cache->get(key);
        if (!got) ++absent;
        else if (*got == big) ++whole;
        else ++wrong;
    }
    stop = true;
    damage.join();
    INFO(whole << " whole, " << absent << " absent, " << wrong << " wrong");
    CHECK(wrong == 0);
    CHECK(whole + absent > 0);
    // The bytes handed out are the caller's: changing the file afterwards changes nothing.
    REQUIRE(cache->put(key, big));
    const auto copy = cache->get(key);
    REQUIRE(copy);
    {
        const int fd = ::open(path.c_str(), O_WRONLY);
        REQUIRE(fd >= 0);
        REQUIRE(::pwrite(fd, "changed", 7, 100) == 7);
        ::close(fd);
    }
    CHECK(*copy == big);
}

TEST_CASE("temporary files count against the cap; those no writer holds are removed by prune and clear", "[cache][evict][hostile]") {
    test::TempDir dir;
    const uint64_t cap = 1 << 20;
    auto cache = Cache::open(options_in(dir.path, nullptr, cap)).value();
    const auto key = key_of("t.ptx");
    REQUIRE(cache->put(key, payload(1000, 1)));
    const std::string fan = fs::path(cache->entry_path(key)).parent_path().string();
    const std::string hex = key.hex();
    // Left by a killed writer: no lock held for its key.
    const std::string stale = fan + "/" + hex.substr(2) + ".tmp.0123456789abcdef";
    std::ofstream(stale, std::ios::binary) << std::string(300000, 'x');
    // Being written: its key's lock is held.
    const auto busy_key = key_of("busy.ptx");
    const std::string busy_hex = busy_key.hex();
    auto busy_fan = platform::Directory::open(dir.path + "/v1", false, 0700).value().child(busy_hex.substr(0, 2), true, 0700).value();
    auto held = busy_fan.lock(busy_hex.substr(2) + ".lock", 5, 600, {});
    REQUIRE(held);
    const std::string busy = busy_fan.path() + "/" + busy_hex.substr(2) + ".tmp.fedcba9876543210";
    std::ofstream(busy, std::ios::binary) << std::string(200000, 'y');
    auto u = cache->usage().value();
    CHECK(u.temporaries == 2);
    CHECK(u.temporary_bytes == 500000);
    CHECK(u.entries == 1);
    CHECK(u.bytes == 500000 + 64 + 1000);  // the temporaries and the entry (header and payload)
    REQUIRE(cache->clear());
    CHECK_FALSE(fs::exists(stale));
    CHECK(fs::exists(busy));  // its writer still runs
    u = cache->usage().value();
    CHECK(u.entries == 0);
    CHECK(u.temporaries == 1);
}

TEST_CASE("a lock file that is a directory is reported as such, not as a full disk", "[cache][messages][hostile]") {
    test::TempDir dir;
    std::vector<std::string> told;
    auto cache = Cache::open(options_in(dir.path, &told)).value();
    const auto key = key_of("locked.ptx");
    const std::string lock = cache->entry_path(key).substr(0, cache->entry_path(key).size() - 5) + ".lock";
    fs::create_directories(lock);
    auto r = cache->get_or_build(key, [&]() -> Result<ByteVector> { return payload(10, 1); });
    REQUIRE(r);
    CHECK(told_contains(told, "lock file " + lock + " is a directory; remove it"));
    CHECK_FALSE(told_contains(told, "free space"));
}

TEST_CASE("an image over a quarter of the cap is used uncached: one entry never evicts the rest", "[cache][evict][hostile]") {
    test::TempDir dir;
    const uint64_t cap = 4 << 20;
    std::vector<std::string> told;
    auto cache = Cache::open(options_in(dir.path, &told, cap)).value();
    for (int i = 0; i < 6; ++i) REQUIRE(cache->put(key_of("small" + std::to_string(i)), payload(100000, static_cast<uint8_t>(i))));
    const auto bomb = payload(cap / 4 + 1, 9);
    auto r = cache->get_or_build(key_of("bomb"), [&]() -> Result<ByteVector> { return bomb; });
    REQUIRE(r);
    CHECK(*r == bomb);
    CHECK(told_contains(told, "more than a quarter of the cache's cap of 4194304 bytes; raise SDM_CACHE_MAX_BYTES"));
    CHECK(cache->usage()->entries == 6);
    CHECK(cache->stats().evictions == 0);
}

TEST_CASE("sdm cache-style opening creates nothing, not even where it refuses", "[cache][hostile]") {
    test::TempDir dir;
    CacheOptions o = options_in(dir.path + "/not/there", nullptr);
    o.create = false;
    auto cache = Cache::open(o);
    REQUIRE(cache);
    CHECK_FALSE((*cache)->exists());
    CHECK((*cache)->usage()->entries == 0);
    CHECK_FALSE(fs::exists(dir.path + "/not"));
    // Someone else's directory (here: writable by others) is refused before v1 is made inside it.
    REQUIRE(::chmod(dir.path.c_str(), 0777) == 0);
    CacheOptions mine = options_in(dir.path, nullptr);
    CHECK_FALSE(Cache::open(mine));
    CHECK_FALSE(fs::exists(dir.path + "/v1"));
    REQUIRE(::chmod(dir.path.c_str(), 0700) == 0);
}
