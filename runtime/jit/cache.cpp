#include "cache.hpp"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstring>
#include <ctime>
#include <random>

#include "runtime/platform/platform.hpp"
#include "runtime/platform/settings.hpp"

namespace sdm::runtime {
namespace {

constexpr uint8_t kEntryMagic[8] = {'S', 'D', 'M', 'C', 'A', 'C', 'H', 'E'};
constexpr size_t kEntryHeader = 64;  // magic 8, format u32, header size u32, key 16, payload size u64, payload XXH3-64 u64, MAC 16
constexpr size_t kMacOffset = 48;    // keyed BLAKE2b-128 of the payload then header bytes [0,48); zero without libsodium
constexpr const char* kMacKeyName = "mac.key";
constexpr double kTrimTarget = 0.75;
// An image larger than this share of the cap is not stored: one entry would evict most others.
constexpr double kLargestShare = 1.0 - kTrimTarget;
// The largest entry file read: an image of the format's largest entry and its header. Anything
// larger was not written by sdm.
constexpr uint64_t kMaxEntryFile = (uint64_t{1} << 30) + kEntryHeader;
// A hit refreshes its entry's time for the LRU trim only when that time is older than this: a
// warm start then writes nothing (no metadata update per hit), and the trim's order stays right
// to within ten minutes.
constexpr int64_t kRecencyGranularityNs = int64_t{600} * 1000000000;
constexpr const char* kEntrySuffix = ".sdmc";
constexpr size_t kToldLimit = 64;  // distinct reasons reported per cache; later ones are dropped
constexpr const char* kLockSuffix = ".lock";
constexpr const char* kTemporaryInfix = ".tmp.";

// Appended, not "v" + std::to_string(...): GCC 12 -O3 warns a false -Wrestrict on operator+(const char*,
// string&&) (GCC bug 105651).
std::string version_name() { return std::string("v").append(std::to_string(kCacheFormat)); }

// The file names of `key` inside its fan-out folder hex[0..2).
std::string entry_name(const std::string& hex) { return hex.substr(2) + kEntrySuffix; }
std::string lock_name(const std::string& hex) { return hex.substr(2) + kLockSuffix; }

std::array<std::byte, kEntryHeader> entry_header(const Hash128& key, Bytes payload) {
    std::array<std::byte, kEntryHeader> h{};
    std::copy(std::begin(kEntryMagic), std::end(kEntryMagic), reinterpret_cast<uint8_t*>(h.data()));
    store_u32(h, 8, kCacheFormat);
    store_u32(h, 12, kEntryHeader);
    store_hash128(h, 16, key);
    store_u64(h, 32, payload.size());
    store_u64(h, 40, xxh3_64(payload));
    return h;
}

// Whether `header` is the header of an entry of `key` whose payload has `payload_size` bytes with
// XXH3-64 `payload_hash`.
bool check_entry(Bytes header, uint64_t payload_size, uint64_t payload_hash, const Hash128& key) {
    if (header.size() != kEntryHeader || !std::equal(std::begin(kEntryMagic), std::end(kEntryMagic), reinterpret_cast<const uint8_t*>(header.data())))
        return false;
    if (load_u32(header, 8) != kCacheFormat || load_u32(header, 12) != kEntryHeader) return false;
    if (load_hash128(header, 16) != key) return false;
    if (load_u64(header, 32) != payload_size) return false;
    return payload_hash == load_u64(header, 40);
}

std::string mode_text(uint32_t mode) {
    char text[8];
    std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
    return text;
}

// An entry (or temporary) must be a regular file of this user that only this user may write.
Result<void> check_entry_file(const std::string& path, const platform::FileStatus& st) {
    if (st.owner != platform::effective_user())
        return make_error(ErrorCode::invalid_argument, "cache entry " + path + " belongs to uid " + std::to_string(st.owner) + ", not to this user (uid " +
                                                           std::to_string(platform::effective_user()) + "); it is not loaded. Remove it");
    if ((st.mode & 022) != 0)
        return make_error(ErrorCode::invalid_argument, "cache entry " + path + " is writable by group or others (mode " + mode_text(st.mode) +
                                                           "); it is not loaded. Remove it, or run chmod go-w on it");
    return {};
}

bool is_hex(std::string_view s) {
    return std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// A unique temporary name beside `final_name`, for one writer.
std::string temporary_name(const std::string& hex) {
    thread_local std::mt19937_64 random{std::random_device{}() ^ static_cast<uint64_t>(platform::process_id())};
    char suffix[20];
    std::snprintf(suffix, sizeof suffix, "%016llx", static_cast<unsigned long long>(random()));
    return hex.substr(2) + kTemporaryInfix + suffix;
}

struct CacheFile {
    const platform::Directory* folder;
    std::string name;
    platform::FileStatus status;
};

// Every entry and temporary of the cache, walking only folders that pass the checks.
Result<void> walk(const platform::Directory& version, std::vector<platform::Directory>& folders, std::vector<CacheFile>& entries,
                  std::vector<CacheFile>& temporaries) {
    SDM_TRY_GET(names, version.list());
    for (const auto& [name, st] : *names) {
        if (name.size() != 2 || !is_hex(name) || !st.directory) continue;
        auto folder = version.child(name, false, 0700);
        if (!folder) continue;
        auto own = folder->status();
        if (!own || !check_cache_directory(folder->path(), *own)) continue;
        folders.push_back(std::move(*folder));
    }
    for (const auto& folder : folders) {
        SDM_TRY_GET(files, folder.list());
        for (const auto& [name, st] : *files) {
            if (!st.regular) continue;
            if (name.size() > 5 && name.ends_with(kEntrySuffix)) entries.push_back({&folder, name, st});
            else if (name.find(kTemporaryInfix) != std::string::npos) temporaries.push_back({&folder, name, st});
        }
    }
    return {};
}

}  // namespace

CacheKeyBuilder::CacheKeyBuilder() { field(uint64_t{kCacheFormat}); }
CacheKeyBuilder& CacheKeyBuilder::field(std::string_view text) {
    hasher_.field(text);
    return *this;
}
CacheKeyBuilder& CacheKeyBuilder::field(uint64_t value) {
    hasher_.update_u64(8);
    hasher_.update_u64(value);
    return *this;
}
CacheKeyBuilder& CacheKeyBuilder::field(const Hash128& hash) {
    return field(hash.high).field(hash.low);
}
CacheKeyBuilder& CacheKeyBuilder::field(const crypto::Digest& digest) {
    hasher_.field(Bytes(reinterpret_cast<const std::byte*>(digest.data()), digest.size()));
    return *this;
}

Result<void> check_cache_directory(const std::string& path, const platform::FileStatus& st) {
    if (!st.directory) return make_error(ErrorCode::invalid_argument, "cache directory " + path + " is " + st.type() + "; set SDM_CACHE_DIR");
    if (st.owner != platform::effective_user())
        return make_error(ErrorCode::invalid_argument, "cache directory " + path + " belongs to uid " + std::to_string(st.owner) +
                                                           ", not to this user (uid " + std::to_string(platform::effective_user()) +
                                                           "); sdm refuses to load code from it. Use a directory of your own (SDM_CACHE_DIR)");
    if ((st.mode & 022) != 0)
        return make_error(ErrorCode::invalid_argument, "cache directory " + path + " is group- or world-writable (mode " + mode_text(st.mode) +
                                                           "); sdm refuses to load code others could plant. Run chmod go-w " + path +
                                                           ", or set SDM_CACHE_DIR");
    return {};
}

Result<std::unique_ptr<Cache>> Cache::open(const CacheOptions& options) {
    std::unique_ptr<Cache> cache(new Cache());
    cache->disabled_ = options.disabled || settings::flag(settings::Id::cache_disable);
    cache->read_only_ = options.read_only;
    cache->create_ = options.create && !options.read_only;
    cache->store_failed_ = options.store_failed;
    cache->lock_warn_seconds_ = options.lock_warn_seconds;
    cache->lock_give_up_seconds_ = options.lock_give_up_seconds;
    cache->authenticate_ = options.authenticate;
    if (options.max_bytes != 0) {
        cache->max_bytes_ = options.max_bytes;
    } else {
        // (A bad SDM_CACHE_MAX_BYTES is refused: the read's error, never a warning.)
        SDM_TRY_GET(cap, settings::read_size(settings::Id::cache_max_bytes).value);
        if (*cap) cache->max_bytes_ = **cap;
    }
    std::string dir = options.directory;
    if (dir.empty()) dir = settings::value_or(settings::path(settings::Id::cache_dir), "");
    if (dir.empty()) {
        if (const auto folder = platform::user_folder(platform::UserFolder::cache)) dir = *folder;
        else return make_error(ErrorCode::invalid_argument, std::string("no cache directory: set SDM_CACHE_DIR (none of ") + platform::kUserFolderVariables + " is set)");
    }
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
    cache->directory_ = dir;
    if (cache->disabled_) return cache;
    // The root, checked before anything is created inside it. Its parents are made only when it
    // is missing (the default location's, $XDG_CACHE_HOME or ~/.cache, may be on a fresh account).
    auto root = platform::Directory::open(dir, false, 0700);
    if (!root && root.error().code == ErrorCode::not_found && cache->create_) {
        const auto slash = dir.rfind('/');
        if (slash != std::string::npos && slash > 0)
            if (auto made = platform::make_directories(dir.substr(0, slash), 0700); !made) return std::move(made).error();
        root = platform::Directory::open(dir, true, 0700);
    }
    if (!root) {
        if (root.error().code == ErrorCode::not_found) return cache;  // nothing cached yet
        return std::move(root).error();
    }
    SDM_TRY_GET(root_status, root->status());
    SDM_TRY(check_cache_directory(dir, *root_status));
    auto version = root->child(version_name(), cache->create_, 0700);
    if (!version) {
        if (version.error().code == ErrorCode::not_found) return cache;
        return std::move(version).error();
    }
    SDM_TRY_GET(version_status, version->status());
    SDM_TRY(check_cache_directory(version->path(), *version_status));
    cache->version_ = std::make_unique<platform::Directory>(std::move(*version));
    return cache;
}

std::string Cache::entry_path(const Hash128& key) const {
    const std::string hex = key.hex();
    return directory_ + "/" + version_name() + "/" + hex.substr(0, 2) + "/" + entry_name(hex);
}

void Cache::refused(const std::string& why) {
    if (!store_failed_) return;
    {  // each distinct reason once: a planted file would otherwise be reported on every lookup
        std::lock_guard lock(told_mutex_);
        if (told_.size() >= kToldLimit || !told_.insert(why).second) return;
    }
    store_failed_(why);
}

Result<const platform::Directory*> Cache::fanout(const std::string& hex, bool create) {
    if (!version_) {
        if (!create || !create_) return make_error(ErrorCode::not_found, "the cache " + directory_ + " holds nothing yet");
        SDM_TRY_GET(root, platform::Directory::open(directory_, true, 0700));
        SDM_TRY_GET(root_status, root->status());
        SDM_TRY(check_cache_directory(directory_, *root_status));
        std::lock_guard lock(fanout_mutex_);
        if (!version_) {
            SDM_TRY_GET(version, root->child(version_name(), true, 0700));
            SDM_TRY_GET(st, version->status());
            SDM_TRY(check_cache_directory(version->path(), *st));
            version_ = std::make_unique<platform::Directory>(std::move(*version));
        }
    }
    const size_t slot = static_cast<size_t>(std::stoul(hex.substr(0, 2), nullptr, 16));
    std::lock_guard lock(fanout_mutex_);
    if (fanouts_[slot]) return fanouts_[slot].get();
    SDM_TRY_GET(folder, version_->child(hex.substr(0, 2), create && create_, 0700));
    SDM_TRY_GET(st, folder->status());
    SDM_TRY(check_cache_directory(folder->path(), *st));
    fanouts_[slot] = std::make_unique<platform::Directory>(std::move(*folder));
    return fanouts_[slot].get();
}

const crypto::MacKey* Cache::mac_key(bool create) {
    if (!crypto::available()) return nullptr;
    std::lock_guard lock(mac_mutex_);
    if (mac_key_) return &*mac_key_;
    if (mac_loaded_ && !create) return nullptr;
    if (!version_) return nullptr;
    const auto load = [&]() -> Result<void> {
        auto read = version_->read_file(kMacKeyName, 4096, [&](const platform::FileStatus& st) -> Result<void> {
            const std::string path = version_->path() + "/" + kMacKeyName;
            if (st.owner != platform::effective_user() || (st.mode & 077) != 0)
                return make_error(ErrorCode::invalid_argument, "the cache's MAC key " + path + " is not this user's alone (uid " + std::to_string(st.owner) +
                                                                   ", mode " + mode_text(st.mode) + "); entries are not authenticated. Remove it (sdm makes a new one)");
            return {};
        });
        if (!read) return std::move(read).error();
        if (read->second.size() != std::tuple_size_v<crypto::MacKey>)
            return make_error(ErrorCode::invalid_argument, "the cache's MAC key " + version_->path() + "/" + kMacKeyName + " is " +
                                                               std::to_string(read->second.size()) + " bytes, not 32; remove it (sdm makes a new one)");
        crypto::MacKey key{};
        std::memcpy(key.data(), read->second.data(), key.size());
        mac_key_ = key;
        return {};
    };
    auto loaded = load();
    mac_loaded_ = true;
    if (loaded) return &*mac_key_;
    if (loaded.error().code != ErrorCode::not_found) {
        refused(loaded.error().message);
        return nullptr;
    }
    if (!create || !create_) return nullptr;
    // Made under a lock, so that two processes creating it at once end up with one key.
    auto held = version_->lock(std::string(kMacKeyName) + kLockSuffix, lock_warn_seconds_, lock_give_up_seconds_, {});
    if (!held) {
        refused("the cache's MAC key cannot be made: " + held.error().message);
        return nullptr;
    }
    loaded = load();
    if (loaded) return &*mac_key_;
    if (loaded.error().code != ErrorCode::not_found) {
        refused(loaded.error().message);
        return nullptr;
    }
    crypto::MacKey key{};
    if (!crypto::random_bytes(key)) return nullptr;
    if (auto written = version_->write_file_atomic(kMacKeyName, temporary_name("00" + std::string(kMacKeyName)), {std::as_bytes(std::span(key))}); !written) {
        refused("the cache's MAC key cannot be written: " + written.error().message);
        return nullptr;
    }
    mac_key_ = key;
    return &*mac_key_;
}

std::optional<ByteVector> Cache::get(const Hash128& key) {
    if (disabled_) return std::nullopt;
    const std::string hex = key.hex();
    auto folder = fanout(hex, false);
    if (!folder) {
        if (folder.error().code != ErrorCode::not_found) refused("the kernel cache is not read: " + folder.error().message);
        ++misses_;
        return std::nullopt;
    }
    const std::string name = entry_name(hex);
    const crypto::MacKey* mac_key_in_use = authenticate_ ? mac_key(false) : nullptr;
    if (authenticate_ && mac_key_in_use == nullptr) {
        // No key (yet): nothing here can be authenticated. Said once, and only when there is an
        // entry to refuse (a fresh cache's first lookup is a plain miss).
        ++misses_;
        if ((*folder)->status_of(name) && !mac_told_.exchange(true))
            refused("cache entries of " + directory_ + " without a valid MAC are not served (signature policy require): the cache has no usable MAC key; the first was " +
                    (*folder)->path() + "/" + name + ". They are built again");
        return std::nullopt;
    }
    std::optional<crypto::Blake2b> mac;
    if (mac_key_in_use != nullptr) mac.emplace(*mac_key_in_use);
    std::array<std::byte, kEntryHeader> header{};
    Hasher64 hasher;  // over the payload as it is read
    auto read = (*folder)->read_file(
        name, kMaxEntryFile, [&](const platform::FileStatus& st) { return check_entry_file((*folder)->path() + "/" + name, st); }, header,
        [&](Bytes piece) {
            hasher.update(piece);
            if (mac) mac->update(piece);
        });
    if (!read) {
        ++misses_;
        if (read.error().code == ErrorCode::not_found) return std::nullopt;
        ++bad_;
        if (read.error().code == ErrorCode::io) {  // shorter than its header, or cut short while read: damaged
            if (!read_only_) (*folder)->remove(name);
            return std::nullopt;
        }
        // Another user's file, one others may write, a link, a FIFO: never loaded, and said.
        refused(read.error().message);
        return std::nullopt;
    }
    auto& [status, bytes] = *read;
    if (!check_entry(header, bytes.size(), hasher.digest(), key)) {
        // Truncated, damaged, or another key's: a miss, and it goes (unless we may not write).
        ++bad_;
        ++misses_;
        if (!read_only_) (*folder)->remove(name, status.inode);
        return std::nullopt;
    }
    if (mac) {
        mac->update(Bytes(header).first(kMacOffset));
        const crypto::Mac expected = mac->mac();
        if (!crypto::equal(expected, std::span(reinterpret_cast<const uint8_t*>(header.data()) + kMacOffset, expected.size()))) {
            // Not written through sdm with this cache's key: never served; built again (and the
            // store replaces it). Said once per cache.
            ++misses_;
            if (!mac_told_.exchange(true))
                refused("cache entries without a valid MAC under the key of " + directory_ + " are not served (signature policy require); the first was " +
                        (*folder)->path() + "/" + name + ". They are built again");
            return std::nullopt;
        }
    }
    ++hits_;
    if (!read_only_) {
        timespec now{};
        ::clock_gettime(CLOCK_REALTIME, &now);
        const int64_t now_ns = static_cast<int64_t>(now.tv_sec) * 1000000000 + now.tv_nsec;
        if (now_ns - status.mtime_ns > kRecencyGranularityNs) (*folder)->touch(name);  // recency for the LRU trim
    }
    return std::move(bytes);
}

void Cache::evict(const Hash128& key) {
    if (disabled_ || read_only_) return;
    const std::string hex = key.hex();
    auto folder = fanout(hex, false);
    if (!folder) return;
    if ((*folder)->remove(entry_name(hex))) ++bad_;
}

Result<void> Cache::store(const Hash128& key, Bytes payload) {
    const auto largest = static_cast<uint64_t>(static_cast<double>(max_bytes_) * kLargestShare);
    if (payload.size() > largest)
        return make_error(ErrorCode::invalid_argument, "an image of " + std::to_string(payload.size()) + " bytes is more than a quarter of the cache's cap of " +
                                                           std::to_string(max_bytes_) + " bytes; raise SDM_CACHE_MAX_BYTES to cache it");
    const std::string hex = key.hex();
    SDM_TRY_GET(folder, fanout(hex, true));
    auto header = entry_header(key, payload);
    if (const crypto::MacKey* mk = mac_key(true)) {
        crypto::Blake2b mac(*mk);
        mac.update(payload);
        mac.update(Bytes(header).first(kMacOffset));
        const crypto::Mac m = mac.mac();
        std::memcpy(header.data() + kMacOffset, m.data(), m.size());
    }
    SDM_TRY((*folder)->write_file_atomic(entry_name(hex), temporary_name(hex), {Bytes(header), payload}));
    written_ += kEntryHeader + payload.size();
    return {};
}

Result<void> Cache::put(const Hash128& key, Bytes payload) {
    if (disabled_ || read_only_) return {};
    SDM_TRY(store(key, payload));
    return trim_if_needed();
}

Result<ByteVector> Cache::get_or_build(const Hash128& key, const Builder& build, const platform::LockMark& mark) {
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
    const auto tell = [&](const Error& why) { refused("the kernel cache could not store an image (" + why.message + "); it is used uncached"); };
    const auto uncached = [&](const Error& why) -> Result<ByteVector> {
        auto built = timed_build();
        if (built) tell(why);
        return built;
    };
    const std::string hex = key.hex();
    auto folder = fanout(hex, true);
    if (!folder) return uncached(folder.error());
    const std::string lock_file = (*folder)->path() + "/" + lock_name(hex);
    auto lock = (*folder)->lock(lock_name(hex), lock_warn_seconds_, lock_give_up_seconds_, [&](const std::string& holder) {
        refused("waiting for the lock " + lock_file + " of key " + hex + ": " + holder + " is building its image (" +
                std::to_string(static_cast<long>(lock_warn_seconds_)) + " s so far; sdm builds it uncached after " +
                std::to_string(static_cast<long>(lock_give_up_seconds_)) + " s, or when it is past its limit)");
    }, mark);
    if (!lock) return uncached(lock.error());
    // Whoever held the lock may have built it meanwhile. This second look is the same lookup as
    // the first: one of the two counts goes (a hit: the first was no real miss; a miss: counted once).
    auto again = get(key);
    --misses_;
    if (again) return std::move(*again);
    auto built = timed_build();
    if (!built) return built;
    if (auto stored = store(key, *built); !stored) tell(stored.error());
    else if (auto trimmed = trim_if_needed(); !trimmed) tell(trimmed.error());
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
    CacheUsage u;
    if (!version_) return u;
    std::vector<platform::Directory> folders;
    std::vector<CacheFile> entries, temporaries;
    SDM_TRY(walk(*version_, folders, entries, temporaries));
    for (const auto& e : entries) {
        ++u.entries;
        u.bytes += e.status.size;
    }
    for (const auto& t : temporaries) {
        ++u.temporaries;
        u.temporary_bytes += t.status.size;
        u.bytes += t.status.size;
    }
    return u;
}

Result<void> Cache::trim_if_needed() {
    SDM_TRY_GET(u, usage());
    if (u->bytes <= max_bytes_) return {};
    SDM_TRY_GET(pruned, prune(static_cast<uint64_t>(static_cast<double>(max_bytes_) * kTrimTarget)));
    return {};
}

Result<uint64_t> Cache::prune(uint64_t target) {
    if (!version_ || read_only_) return uint64_t{0};
    std::vector<platform::Directory> folders;
    std::vector<CacheFile> entries, temporaries;
    SDM_TRY(walk(*version_, folders, entries, temporaries));
    uint64_t total = 0;
    for (const auto& e : entries) total += e.status.size;
    // A temporary whose key's lock nobody holds has no writer: it was left by a killed process.
    // One still being written counts against the cap all the same.
    uint64_t removed = 0;
    for (const auto& t : temporaries) {
        const std::string lock = t.name.substr(0, t.name.find(kTemporaryInfix)) + kLockSuffix;
        if (auto held = t.folder->try_lock(lock); held || !t.folder->status_of(lock)) {
            if (t.folder->remove(t.name, t.status.inode)) {
                ++removed;
                continue;
            }
        }
        total += t.status.size;
    }
    std::sort(entries.begin(), entries.end(), [](const CacheFile& a, const CacheFile& b) { return a.status.mtime_ns < b.status.mtime_ns; });
    for (const auto& e : entries) {
        if (total <= target) break;
        if (e.folder->remove(e.name, e.status.inode)) {
            total -= e.status.size;
            ++removed;
            ++evictions_;
        }
    }
    return removed;
}

Result<uint64_t> Cache::clear() { return prune(0); }

}  // namespace sdm::runtime
