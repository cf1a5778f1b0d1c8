// The content-addressed cache of linked images (docs/CACHE.md).
// - Identity: BLAKE2b over length-prefixed fields (CacheKeyBuilder): the input's content digest,
//   the target, the backend and its version, the driver version, every option in order, and the
//   cache format version. Identical inputs share an entry; anything else gets its own.
// - Layout: DIR/v1/ab/<30 more hex digits>.sdmc, a 64-byte header (magic, format, key, payload
//   size, payload XXH3-64) then the payload. Every read checks it; a bad entry is a miss and is
//   removed (Cache::evict is the only code that removes entries).
// - Concurrency: a per-key lock file (flock: released by the kernel when a process dies, so no
//   stale locks), the entry checked again under the lock, written to a temporary file, fsynced
//   and renamed into place. N processes or threads asking for one key run one build.
// - Eviction: a byte cap over entries and temporaries; least recently used first (hits touch the
//   entry), trimming to 75 %. An image larger than a quarter of the cap is used uncached.
// - Security (docs/RELIABILITY.md, the threat model): the root is opened once as a directory
//   descriptor and everything below is reached relative to it, never through a link. Every level
//   (root, v1, fan-out folders) must belong to the user and not be group- or world-writable, and so
//   must every entry; sdm creates them 0700 / 0600. Anything else is a miss, reported with the
//   path and the fix, and never loaded (a planted cubin is code execution on the GPU). An entry is
//   read into private memory and checked there: the bytes the caller gets are the bytes that
//   passed, whatever another process does to the file afterwards.
// - Modes: disabled (nothing read or written) and read-only (nothing written or created).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/bytes.hpp"
#include "common/crypto.hpp"
#include "common/digest.hpp"
#include "common/hash.hpp"
#include "runtime/platform/platform.hpp"
#include "common/result.hpp"

namespace sdm::runtime {

inline constexpr uint32_t kCacheFormat = 1;
inline constexpr uint64_t kDefaultCacheMaxBytes = 1ull << 30;  // 1 GiB

struct CacheOptions {
    std::string directory;        // empty: $SDM_CACHE_DIR, else $XDG_CACHE_HOME/sdm, else ~/.cache/sdm
    bool disabled{false};         // also $SDM_CACHE_DISABLE=1
    bool read_only{false};
    uint64_t max_bytes{0};        // 0: $SDM_CACHE_MAX_BYTES, else 1 GiB
    // Told when get_or_build could not store what it built (a full disk, a directory it cannot
    // write), and when an entry or a level of the directory is refused (another user's, writable
    // by others, a link): the image is then used anyway, uncached or rebuilt. Any thread.
    std::function<void(const std::string&)> store_failed;
    // Create the directories when missing (the runtime); `sdm cache` inspects and creates nothing.
    bool create{true};
    // A build another process or thread holds the key's lock for: after lock_warn_seconds the log
    // says which key and who holds it; after lock_give_up_seconds the image is built uncached.
    double lock_warn_seconds{5.0};
    double lock_give_up_seconds{600.0};
    // Serve only entries whose MAC holds under the cache's own key (the signature policy
    // require): DIR/v1/mac.key, 32 random bytes sdm creates 0600 on first store. Every entry
    // written by an sdm with libsodium carries the MAC; one without it (or with a wrong one) is a
    // miss, said once, and is built again.
    bool authenticate{false};
};

// A cache key: BLAKE2b over length-prefixed fields, truncated to 128 bits. Every field that says
// what an input is must be a digest sdm computed from bytes it read (archive::Archive::identity),
// never a checksum an archive declares: XXH3 has cheap second preimages.
class CacheKeyBuilder {
public:
    CacheKeyBuilder();  // starts with the cache format version
    CacheKeyBuilder& field(std::string_view text);
    CacheKeyBuilder& field(uint64_t value);
    CacheKeyBuilder& field(const Hash128& hash);
    CacheKeyBuilder& field(const crypto::Digest& digest);
    Hash128 key() { return crypto::truncated(hasher_.digest()); }  // once

private:
    crypto::Blake2b hasher_;
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
    uint64_t bytes{0};            // entries and temporaries: what counts against the cap
    uint64_t temporaries{0};      // files being written, or left by writers that were killed
    uint64_t temporary_bytes{0};
};

class Cache {
public:
    // Resolves the directory, creates it (0700) when missing and allowed, opens it and checks
    // every level that exists. A cache whose root does not exist yet (read-only, or not created)
    // opens empty.
    static Result<std::unique_ptr<Cache>> open(const CacheOptions& options);

    const std::string& directory() const noexcept { return directory_; }
    bool disabled() const noexcept { return disabled_; }
    bool read_only() const noexcept { return read_only_; }
    bool exists() const noexcept { return version_ != nullptr; }
    bool authenticates() const noexcept { return authenticate_; }
    uint64_t max_bytes() const noexcept { return max_bytes_; }

    // The checked payload of `key` in private memory, or nullopt (absent, refused, or bad and now
    // removed).
    std::optional<ByteVector> get(const Hash128& key);
    // Stores atomically (temporary file, fsync, rename), then trims past the cap. Read-only and
    // disabled caches store nothing and succeed; a payload over a quarter of the cap is not stored
    // (ErrorCode::invalid_argument, naming the cap).
    Result<void> put(const Hash128& key, Bytes payload);
    // get(), or under the key's lock: get() again, else build() and put(). Several processes
    // or threads asking at once run build() once. When the entry cannot be stored (no space, no
    // directory, no lock file), what build() made is returned all the same and store_failed says
    // why: a cache problem never costs the caller its image.
    // `mark` tells waiters what the build is and its limit: they stop waiting for a holder that is
    // past its limit (platform::Directory::lock) instead of after lock_give_up_seconds.
    using Builder = std::function<Result<ByteVector>()>;
    Result<ByteVector> get_or_build(const Hash128& key, const Builder& build, const platform::LockMark& mark = {});
    // Removes the entry of `key`: what it holds failed a later check (the driver refused it, or it
    // lacks kernels). Counted in bad_entries. Nothing in read-only mode.
    void evict(const Hash128& key);

    CacheStats stats() const;
    Result<CacheUsage> usage() const;
    // Removes temporary files no writer holds any more (left by killed writers), then least
    // recently used entries until the cache holds at most `target` bytes.
    Result<uint64_t> prune(uint64_t target);
    Result<uint64_t> clear();
    std::string entry_path(const Hash128& key) const;  // for messages and tests

private:
    Cache() = default;
    // The fan-out folder of `key` ("ab"), opened and checked once and then kept.
    Result<const platform::Directory*> fanout(const std::string& hex, bool create);
    Result<void> store(const Hash128& key, Bytes payload);
    Result<void> trim_if_needed();
    void refused(const std::string& why);
    // The MAC key of DIR/v1/mac.key, read (or with `create`, made under a lock) once; null when
    // there is none or it cannot be used (said once through store_failed).
    const crypto::MacKey* mac_key(bool create);
    std::string directory_;
    bool authenticate_{false};
    std::mutex mac_mutex_;
    bool mac_loaded_{false};
    std::optional<crypto::MacKey> mac_key_;
    std::atomic<bool> mac_told_{false};
    std::function<void(const std::string&)> store_failed_;
    bool disabled_{false};
    bool read_only_{false};
    bool create_{true};
    uint64_t max_bytes_{kDefaultCacheMaxBytes};
    double lock_warn_seconds_{5.0}, lock_give_up_seconds_{600.0};
    std::unique_ptr<platform::Directory> version_;  // DIR/v1; null while it does not exist
    std::mutex fanout_mutex_;
    std::array<std::unique_ptr<platform::Directory>, 256> fanouts_;
    std::mutex told_mutex_;
    std::set<std::string> told_;  // the reasons store_failed_ was told, each once
    std::atomic<uint64_t> hits_{0}, misses_{0}, builds_{0}, evictions_{0}, bad_{0}, written_{0};
    std::atomic<uint64_t> build_microseconds_{0};
};

// Checks that a directory of the cache (`path`, with status `status`) belongs to the effective
// user and is not group- or world-writable; the error names the path and the fix.
Result<void> check_cache_directory(const std::string& path, const platform::FileStatus& status);

}  // namespace sdm::runtime
