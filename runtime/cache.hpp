// The content-addressed cache of linked images (DESIGN.md, "JIT and the cache").
// - Identity: XXH3-128 over length-prefixed fields (CacheKeyBuilder): the input's content hash,
//   the target, the backend and its version, the driver version, every option in order, and the
//   cache format version. Identical inputs share an entry; anything else gets its own.
// - Layout: DIR/v1/ab/<32 hex digits>.sdmc, a 64-byte header (magic, format, key, payload size,
//   payload XXH3-64) then the payload. Every read checks it; a bad entry is a miss and is removed.
// - Concurrency: a per-key lock file (flock: released by the kernel when a process dies, so no
//   stale locks), the entry checked again under the lock, written to a temporary file, fsynced
//   and renamed into place. N processes or threads asking for one key run one build.
// - Eviction: a byte cap; least recently used first (hits touch the entry), trimming to 75 %.
// - Security: the directory must belong to the user and not be group- or world-writable, else
//   sdm refuses to read from it (a planted cubin is code execution on the GPU).
// - Modes: disabled (nothing read or written) and read-only (nothing written).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bytes.hpp"
#include "file_map.hpp"
#include "hash.hpp"
#include "result.hpp"

namespace sdm::runtime {

inline constexpr uint32_t kCacheFormat = 1;
inline constexpr uint64_t kDefaultCacheMaxBytes = 1ull << 30;  // 1 GiB

struct CacheOptions {
    std::string directory;        // empty: $SDM_CACHE_DIR, else $XDG_CACHE_HOME/sdm, else ~/.cache/sdm
    bool disabled{false};         // also $SDM_CACHE_DISABLE=1
    bool read_only{false};
    uint64_t max_bytes{0};        // 0: $SDM_CACHE_MAX_BYTES, else 1 GiB
    // Told when get_or_build could not store what it built (a full disk, a directory it cannot
    // write): the image is used anyway, uncached. May be called from any thread.
    std::function<void(const std::string&)> store_failed;
    // Options as the environment sets them, for a host that set nothing.
    static CacheOptions from_environment();
};

class CacheKeyBuilder {
public:
    CacheKeyBuilder();  // starts with the cache format version
    CacheKeyBuilder& field(std::string_view text);
    CacheKeyBuilder& field(uint64_t value);
    CacheKeyBuilder& field(const archive::Hash128& hash);
    archive::Hash128 key() const { return hasher_.digest(); }

private:
    archive::Hasher128 hasher_;
};

struct CacheStats {
    uint64_t hits{0};
    uint64_t misses{0};
    uint64_t builds{0};
    double build_milliseconds{0};
    uint64_t evictions{0};
    uint64_t bad_entries{0};      // entries that failed their check and were removed
    uint64_t bytes_written{0};
};

struct CacheUsage {
    uint64_t entries{0};
    uint64_t bytes{0};
};

class Cache {
public:
    // Resolves the directory, creates it (0700) when missing, and checks who owns it.
    static Result<std::unique_ptr<Cache>> open(const CacheOptions& options);

    const std::string& directory() const noexcept { return directory_; }
    bool disabled() const noexcept { return disabled_; }
    bool read_only() const noexcept { return read_only_; }
    uint64_t max_bytes() const noexcept { return max_bytes_; }

    // The checked payload of `key`, or nullopt (absent, or bad and now removed).
    std::optional<archive::ByteVector> get(const archive::Hash128& key);
    // The same without a copy: the payload inside the mapped entry, valid while `map` lives.
    struct Mapped {
        std::shared_ptr<const archive::FileMap> map;
        archive::Bytes payload;
    };
    std::optional<Mapped> map(const archive::Hash128& key);
    // Stores atomically (temporary file, fsync, rename), then trims past the cap. Read-only and
    // disabled caches store nothing and succeed.
    Result<void> put(const archive::Hash128& key, archive::Bytes payload);
    // get(), or under the key's lock: get() again, else build() and put(). Several processes
    // or threads asking at once run build() once. When the entry cannot be stored (no space, no
    // directory, no lock file), what build() made is returned all the same and store_failed says
    // why: a cache problem never costs the caller its image.
    using Builder = std::function<Result<archive::ByteVector>()>;
    Result<archive::ByteVector> get_or_build(const archive::Hash128& key, const Builder& build);

    CacheStats stats() const;
    Result<CacheUsage> usage() const;
    // Removes least recently used entries until the cache holds at most `target` bytes, and
    // temporary files older than an hour (left by killed writers).
    Result<uint64_t> prune(uint64_t target);
    Result<uint64_t> clear();
    std::string entry_path(const archive::Hash128& key) const;

private:
    Cache() = default;
    Result<void> trim_if_needed();
    std::string directory_;
    std::function<void(const std::string&)> store_failed_;
    bool disabled_{false};
    bool read_only_{false};
    uint64_t max_bytes_{kDefaultCacheMaxBytes};
    std::atomic<uint64_t> hits_{0}, misses_{0}, builds_{0}, evictions_{0}, bad_{0}, written_{0};
    std::atomic<uint64_t> build_microseconds_{0};
};

// Checks that `directory` belongs to the effective user and is not group- or world-writable.
Result<void> check_cache_directory(const std::string& directory);

}  // namespace sdm::runtime
