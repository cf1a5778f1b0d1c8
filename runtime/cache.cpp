#include "cache.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "file_map.hpp"
#include "platform.hpp"

namespace sdm::runtime {
namespace {

namespace fs = std::filesystem;
using archive::ByteVector;
using archive::Bytes;
using archive::Hash128;

constexpr uint8_t kEntryMagic[8] = {'S', 'D', 'M', 'C', 'A', 'C', 'H', 'E'};
constexpr size_t kEntryHeader = 64;  // magic 8, format u32, header size u32, key 16, payload size u64, payload XXH3-64 u64, reserved 16
constexpr double kLockWarnSeconds = 5.0;
constexpr double kTrimTarget = 0.75;
constexpr auto kStaleTemporary = std::chrono::hours(1);
// A hit refreshes its entry's time for the LRU trim only when that time is older than this: a
// warm start then writes nothing (no metadata update per hit), and the trim's order stays right
// to within ten minutes.
constexpr int64_t kRecencyGranularityNs = int64_t{600} * 1000000000;
// Entries below this are read, larger ones mapped with every page populated at once.
constexpr size_t kReadBelow = 256 * 1024;

std::string version_dir(const std::string& root) { return root + "/v" + std::to_string(kCacheFormat); }

ByteVector entry_bytes(const Hash128& key, Bytes payload) {
    ByteVector out(kEntryHeader + payload.size());
    std::copy(std::begin(kEntryMagic), std::end(kEntryMagic), reinterpret_cast<uint8_t*>(out.data()));
    archive::store_u32(out, 8, kCacheFormat);
    archive::store_u32(out, 12, kEntryHeader);
    archive::store_hash128(out, 16, key);
    archive::store_u64(out, 32, payload.size());
    archive::store_u64(out, 40, archive::xxh3_64(payload));
    std::copy(payload.begin(), payload.end(), out.begin() + kEntryHeader);
    return out;
}

// The payload, when the entry is whole and is the entry of `key`.
std::optional<Bytes> check_entry(Bytes b, const Hash128& key) {
    if (b.size() < kEntryHeader || !std::equal(std::begin(kEntryMagic), std::end(kEntryMagic), reinterpret_cast<const uint8_t*>(b.data())))
        return std::nullopt;
    if (archive::load_u32(b, 8) != kCacheFormat || archive::load_u32(b, 12) != kEntryHeader) return std::nullopt;
    if (archive::load_hash128(b, 16) != key) return std::nullopt;
    if (archive::load_u64(b, 32) != b.size() - kEntryHeader) return std::nullopt;
    const Bytes payload = b.subspan(kEntryHeader);
    if (archive::xxh3_64(payload) != archive::load_u64(b, 40)) return std::nullopt;
    return payload;
}

std::optional<uint64_t> parse_bytes(const std::string& text) {
    uint64_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
    return value;
}

struct EntryFile {
    fs::path path;
    uint64_t bytes;
    fs::file_time_type used;
};

Result<std::vector<EntryFile>> list_entries(const std::string& root, std::vector<fs::path>* stale_temporaries) {
    std::vector<EntryFile> out;
    std::error_code ec;
    const fs::path dir = version_dir(root);
    if (!fs::exists(dir, ec)) return out;
    const auto now = fs::file_time_type::clock::now();
    for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (!it->is_regular_file(ec)) continue;
        const fs::path& p = it->path();
        const auto mtime = fs::last_write_time(p, ec);
        if (p.extension() == ".sdmc") {
            out.push_back({p, static_cast<uint64_t>(it->file_size(ec)), mtime});
        } else if (stale_temporaries != nullptr && p.filename().string().find(".tmp.") != std::string::npos && now - mtime > kStaleTemporary) {
            stale_temporaries->push_back(p);
        }
    }
    if (ec) return make_error(ErrorCode::io, "cannot list the cache " + dir.string() + ": " + ec.message());
    return out;
}

}  // namespace

CacheOptions CacheOptions::from_environment() {
    CacheOptions o;
    o.disabled = platform::env("SDM_CACHE_DISABLE").value_or("0") != "0";
    return o;
}

CacheKeyBuilder::CacheKeyBuilder() { field(uint64_t{kCacheFormat}); }
CacheKeyBuilder& CacheKeyBuilder::field(std::string_view text) {
    hasher_.field(text);
    return *this;
}
CacheKeyBuilder& CacheKeyBuilder::field(uint64_t value) {
    hasher_.field(value);
    return *this;
}
CacheKeyBuilder& CacheKeyBuilder::field(const Hash128& hash) {
    hasher_.field(hash.high);
    hasher_.field(hash.low);
    return *this;
}

Result<void> check_cache_directory(const std::string& directory) {
    struct stat st {};
    if (::stat(directory.c_str(), &st) != 0) return make_error(ErrorCode::io, "cannot stat cache directory " + directory + ": " + std::strerror(errno));
    if (!S_ISDIR(st.st_mode)) return make_error(ErrorCode::invalid_argument, "cache directory " + directory + " is not a directory; set SDM_CACHE_DIR");
    if (st.st_uid != ::geteuid())
        return make_error(ErrorCode::invalid_argument, "cache directory " + directory + " belongs to uid " + std::to_string(st.st_uid) +
                                                           ", not to this user (uid " + std::to_string(::geteuid()) +
                                                           "); sdm refuses to load code from it. Use a directory of your own (SDM_CACHE_DIR)");
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
        char mode[8];
        std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
        return make_error(ErrorCode::invalid_argument, "cache directory " + directory + " is group- or world-writable (mode " + mode +
                                                           "); sdm refuses to load code others could plant. Run chmod go-w " + directory +
                                                           ", or set SDM_CACHE_DIR");
    }
    return {};
}

Result<std::unique_ptr<Cache>> Cache::open(const CacheOptions& options) {
    std::unique_ptr<Cache> cache(new Cache());
    cache->disabled_ = options.disabled || platform::env("SDM_CACHE_DISABLE").value_or("0") != "0";
    cache->read_only_ = options.read_only;
    cache->store_failed_ = options.store_failed;
    if (options.max_bytes != 0) {
        cache->max_bytes_ = options.max_bytes;
    } else if (const auto text = platform::env("SDM_CACHE_MAX_BYTES")) {
        const auto value = parse_bytes(*text);
        if (!value || *value == 0)
            return make_error(ErrorCode::invalid_argument, "SDM_CACHE_MAX_BYTES=" + *text + " is not a positive number of bytes");
        cache->max_bytes_ = *value;
    }
    std::string dir = options.directory;
    if (dir.empty()) dir = platform::env("SDM_CACHE_DIR").value_or("");
    if (dir.empty()) {
        if (const auto xdg = platform::env("XDG_CACHE_HOME")) dir = *xdg + "/sdm";
        else if (const auto home = platform::home_directory()) dir = *home + "/.cache/sdm";
        else return make_error(ErrorCode::invalid_argument, "no cache directory: set SDM_CACHE_DIR (no HOME or XDG_CACHE_HOME)");
    }
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
    cache->directory_ = dir;
    if (cache->disabled_) return cache;
    struct stat st {};
    const bool exists = ::stat(version_dir(dir).c_str(), &st) == 0 && S_ISDIR(st.st_mode);  // the usual case: one call, no mkdir
    if (!cache->read_only_ && !exists) SDM_TRY(platform::make_directories(version_dir(dir), 0700));
    if (cache->read_only_ && ::access(dir.c_str(), F_OK) != 0) return cache;  // nothing to read yet
    SDM_TRY(check_cache_directory(dir));
    return cache;
}

std::string Cache::entry_path(const Hash128& key) const {
    const std::string hex = key.hex();
    return version_dir(directory_) + "/" + hex.substr(0, 2) + "/" + hex.substr(2) + ".sdmc";
}

std::optional<Cache::Mapped> Cache::map(const Hash128& key) {
    if (disabled_) return std::nullopt;
    const std::string path = entry_path(key);
    auto map = archive::FileMap::open(path, {kReadBelow, true});
    if (!map) {
        ++misses_;
        return std::nullopt;
    }
    const auto payload = check_entry((*map)->bytes(), key);
    if (!payload) {
        // Truncated, damaged, or another key's: a miss, and it goes (unless we may not write).
        ++bad_;
        ++misses_;
        if (!read_only_) ::unlink(path.c_str());
        return std::nullopt;
    }
    ++hits_;
    if (!read_only_) {
        timespec now{};
        ::clock_gettime(CLOCK_REALTIME, &now);
        const int64_t now_ns = static_cast<int64_t>(now.tv_sec) * 1000000000 + now.tv_nsec;
        if (now_ns - (*map)->mtime_ns() > kRecencyGranularityNs) ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);  // recency for the LRU trim
    }
    return Mapped{std::move(*map), *payload};
}

std::optional<ByteVector> Cache::get(const Hash128& key) {
    auto mapped = map(key);
    if (!mapped) return std::nullopt;
    return ByteVector(mapped->payload.begin(), mapped->payload.end());
}

Result<void> Cache::put(const Hash128& key, Bytes payload) {
    if (disabled_ || read_only_) return {};
    const std::string path = entry_path(key);
    SDM_TRY(platform::make_directories(path.substr(0, path.rfind('/')), 0700));
    const ByteVector bytes = entry_bytes(key, payload);
    SDM_TRY(archive::write_file_atomic(path, bytes));
    written_ += bytes.size();
    return trim_if_needed();
}

Result<ByteVector> Cache::get_or_build(const Hash128& key, const Builder& build) {
    const auto timed_build = [&]() -> Result<ByteVector> {
        const auto started = std::chrono::steady_clock::now();
        auto built = build();
        build_microseconds_ += static_cast<uint64_t>(
            std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - started).count());
        ++builds_;
        return built;
    };
    if (disabled_) return timed_build();
    if (auto hit = get(key)) return std::move(*hit);
    if (read_only_) return timed_build();
    const auto tell = [&](const Error& why) {
        if (store_failed_)
            store_failed_("the kernel cache could not store an image (" + why.message + "); it is used uncached. Free space in " + directory_ +
                          ", or point SDM_CACHE_DIR at a writable directory");
    };
    const auto uncached = [&](const Error& why) -> Result<ByteVector> {
        auto built = timed_build();
        if (built) tell(why);
        return built;
    };
    const std::string path = entry_path(key);
    if (auto made = platform::make_directories(path.substr(0, path.rfind('/')), 0700); !made) return uncached(made.error());
    const std::string lock_path = path.substr(0, path.size() - 5) + ".lock";
    auto lock = platform::FileLock::acquire(lock_path, kLockWarnSeconds, [] {});
    if (!lock) return uncached(lock.error());
    // Whoever held the lock may have built it meanwhile.
    if (auto hit = get(key)) {
        --misses_;  // the first look was not a real miss: someone else paid for the build
        return std::move(*hit);
    }
    auto built = timed_build();
    if (!built) return built;
    if (auto stored = put(key, *built); !stored) tell(stored.error());
    return built;
}

CacheStats Cache::stats() const {
    CacheStats s;
    s.hits = hits_;
    s.misses = misses_;
    s.builds = builds_;
    s.build_milliseconds = static_cast<double>(build_microseconds_.load()) / 1000.0;
    s.evictions = evictions_;
    s.bad_entries = bad_;
    s.bytes_written = written_;
    return s;
}

Result<CacheUsage> Cache::usage() const {
    auto entries = list_entries(directory_, nullptr);
    if (!entries) return std::move(entries).error();
    CacheUsage u;
    for (const auto& e : *entries) {
        ++u.entries;
        u.bytes += e.bytes;
    }
    return u;
}

Result<void> Cache::trim_if_needed() {
    auto u = usage();
    if (!u) return std::move(u).error();
    if (u->bytes <= max_bytes_) return {};
    auto pruned = prune(static_cast<uint64_t>(static_cast<double>(max_bytes_) * kTrimTarget));
    if (!pruned) return std::move(pruned).error();
    return {};
}

Result<uint64_t> Cache::prune(uint64_t target) {
    std::vector<fs::path> stale;
    auto entries = list_entries(directory_, &stale);
    if (!entries) return std::move(entries).error();
    for (const auto& p : stale) ::unlink(p.c_str());
    uint64_t total = 0;
    for (const auto& e : *entries) total += e.bytes;
    std::sort(entries->begin(), entries->end(), [](const EntryFile& a, const EntryFile& b) { return a.used < b.used; });
    uint64_t removed = 0;
    for (const auto& e : *entries) {
        if (total <= target) break;
        if (::unlink(e.path.c_str()) == 0) {
            total -= e.bytes;
            ++removed;
            ++evictions_;
        }
    }
    return removed;
}

Result<uint64_t> Cache::clear() { return prune(0); }

}  // namespace sdm::runtime
