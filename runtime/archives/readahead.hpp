// Decoding ahead of the loads: when a load of one module reads its image, the same target of the
// next modules in the archive's order is decoded (compressed) or checked (stored: its checksum,
// and its signed digest, each computed once) on a worker thread meanwhile, so a
// host that fetches module after module (every kernel of a library, in the order `sdm ls` lists
// them) pays for the driver's load of one module while the next one decodes (docs/LOADING.md,
// "Decoding ahead"). A fetch of an entry decoded ahead takes its bytes (waiting for a decode under
// way); of one still queued, it decodes the entry itself. What is decoded ahead and not taken is
// bounded by bytes and dropped oldest first. One per mounted archive; its workers end with it.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "archive/archive.hpp"
#include "common/bytes.hpp"
#include "runtime/platform/log.hpp"
#include "reference_memo.hpp"
#include "common/result.hpp"

namespace sdm::runtime {

class Readahead {
public:
    // A stored entry smaller than `min_checked` is left to its load: hashing it costs less than
    // handing it to a worker (cuDNN's engines, a few KB a module, lost 30 % to the hand-off).
    // `workers`: at most that many threads, started as jobs queue (0: half the machine's cores,
    // from 2 to 8; how many modules ahead a load queues, SDM_READAHEAD, bounds how many run).
    explicit Readahead(size_t max_bytes = size_t{64} << 20, unsigned workers = 0, size_t min_checked = size_t{512} << 10);
    ~Readahead();
    Readahead(const Readahead&) = delete;
    Readahead& operator=(const Readahead&) = delete;

    // Entry `index`'s verified raw bytes: decoded ahead, or decoded here. `archive` and
    // `references` are the mounted archive's own, the same at every call.
    // `ahead`, when given, says whether a worker had decoded (or was decoding) it.
    Result<ByteVector> read(const archive::Archive& archive, ReferenceMemo& references, size_t index, bool* ahead = nullptr);
    // For a stored entry (which a worker only checks ahead, leaving nothing to take): waits for a
    // check under way, or drops one still queued, so that the caller's Archive::view of it finds it
    // checked, or checks it. `ahead`, when given, says whether a worker had checked it.
    void settle(size_t index, bool* ahead = nullptr);
    // Queues entry `index` for a worker, unless it is queued or decoded already, or the bound
    // would be passed: an entry counts its raw size and that of the reference it is coded against
    // (which its decode reads), from its queueing until its read takes it. Never fails: without a thread to run it, nothing is decoded ahead.
    void start(const archive::Archive& archive, ReferenceMemo& references, size_t index);
    // Whether this process is a fork of the one that made it: the workers are the parent's then,
    // and nothing here may be waited for, locked or joined (ReadaheadDeleter leaves it alone).
    bool forked() const noexcept;
    // How many reads found their entry decoded ahead, and whether entry `index` is decoded and
    // waiting for its read (for the tests).
    size_t hits() const;
    bool ready(size_t index) const;
    // What the entries queued and decoded ahead hold, as the bound counts them (for the footprint
    // report); 0 in a forked child (nothing of the parent's may be locked there).
    uint64_t held_bytes() const;

private:
    struct Job {
        bool running{false};
        bool wanted{false};  // a read waits for it
        std::optional<Result<ByteVector>> result;  // set when done
        uint64_t bytes{0};
    };
    void work();
    // With the lock held: the job for `index` taken out of the tables, waited for first when a
    // worker has it (then with its result); nullopt when there is none (or another load took it).
    std::optional<Job> take_locked(std::unique_lock<std::mutex>& lock, size_t index);

    const archive::Archive* archive_{nullptr};  // set by the first start, before any worker runs
    ReferenceMemo* references_{nullptr};
    const size_t max_bytes_;
    const unsigned max_workers_;
    const size_t min_checked_;
    const int owner_;  // the process id that made it
    mutable std::mutex mutex_;
    std::condition_variable queued_, finished_;
    std::map<size_t, Job> jobs_;
    std::deque<size_t> queue_;  // queued, oldest first
    std::deque<size_t> done_;   // decoded and not taken, oldest first
    std::vector<std::thread> workers_;
    uint64_t bytes_{0};
    size_t hits_{0};
    bool stop_{false};
};

// Deletes a Readahead, except in a forked child (a host that forked after loading: its copy's
// workers do not exist there, and its mutex or condition variables may be held by them): that copy
// is left as it is, a few bytes, rather than joined or destroyed.
struct ReadaheadDeleter {
    void operator()(Readahead* readahead) const noexcept;
};

// How many modules ahead a load decodes: $SDM_READAHEAD (0 turns it off, at most 16), else half the
// machine's cores from 2 to 8; a value that is neither is warned of through `log` and read as that
// default. Read once per runtime.
size_t readahead_modules_from_environment(const Logger& log);

// The entries a load of entry `index` (a cubin or fatbin) prepares ahead: the same kind and target
// of the next `modules` modules in the archive's order that have one (a compressed one is decoded
// ahead, a stored one checked).
std::vector<size_t> next_in_order(const archive::Archive& archive, size_t index, size_t modules);

}  // namespace sdm::runtime
