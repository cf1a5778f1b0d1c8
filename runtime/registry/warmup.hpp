// Background warm-up (sdm_preload_async): sdm_preload's work (preload.hpp) done by a few threads
// the runtime owns, started at its first warm-up (never at the runtime's creation), module by
// module. Across the pending warm-ups a free thread takes a module of the one of highest priority
// (then the earliest started); a cancelled one gets no more modules, and those it started finish.
// Modules are loaded through Modules::load_all, so a fetch of a kernel whose module a warm-up is
// loading waits for that load on the slot's loading lock rather than loading it again.
//
// A warm-up (Warmup) is shared by the pool and the host's handle, which may outlive the pool: what
// the handle reads (progress, the outcome) lives with it, under one lock shared with the pool
// (WarmupCore), which the pool never holds while it loads or calls a host's callback.
//
// fork(): the threads are the parent's. In a forked child, the pool is left as it is (neither
// locked, nor joined, nor freed: WarmupsDeleter), and a warm-up refuses every call (forked()); the
// parent is unaffected, so no atfork handler is needed.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <cuda.h>

#include "preload.hpp"
#include "common/result.hpp"

namespace sdm::runtime {

class ArchiveSet;
class LoadContext;
class Logger;
class Modules;

// The lock and the signals a pool and its warm-ups share (the warm-ups keep it alive).
struct WarmupCore {
    std::mutex mutex;
    std::condition_variable work;      // a step may be taken (a warm-up queued, listed, cancelled)
    std::condition_variable finished;  // a warm-up got its outcome, or its callback returned
};

class Warmup {
public:
    // Called once, on a pool thread, with the outcome; no lock held.
    using Done = std::function<void(const Result<void>& outcome)>;
    struct Progress {
        uint32_t done{0};   // modules loaded or failed
        uint32_t total{0};  // modules to load; 0 until listed
    };

    Warmup(std::shared_ptr<WarmupCore> core, int32_t ordinal, std::vector<std::string> names, int32_t priority, CUcontext context, Done done);

    Progress progress() const;
    // The outcome once it finished, waiting at most `timeout`; nullopt when the deadline came first.
    std::optional<Result<void>> wait(std::chrono::milliseconds timeout) const;
    // Modules not started are skipped; the outcome is known once those loading finish.
    void cancel();
    // Waits until it finished and its callback returned.
    void wait_retired() const;
    // Called from its own callback (on that thread): `release` runs once the callback returned,
    // and true is returned; otherwise false and nothing is kept.
    bool release_after_callback(std::function<void()> release);
    // Whether this process is a fork of the one that made it: nothing here may be locked then.
    bool forked() const noexcept;

private:
    friend class Warmups;
    // With the core's lock held.
    bool listed() const noexcept { return total_.has_value(); }
    bool has_step() const noexcept { return !cancelled_ && !finishing_ && (listed() ? next_ < work_.size() : !listing_); }
    bool finishable() const noexcept;
    bool cut_short() const noexcept;  // cancelled with modules left
    Error cancelled_error() const;
    void cancel_locked() noexcept;

    const std::shared_ptr<WarmupCore> core_;
    const int32_t ordinal_;
    const std::vector<std::string> names_;
    const int32_t priority_;
    const CUcontext context_;
    const Done done_;
    const int owner_;      // the process id that made it
    uint64_t sequence_{0};  // its place among the pool's warm-ups: the earlier first at equal priority
    // Guarded by core_->mutex:
    bool listing_{false};
    std::optional<uint32_t> total_;
    std::vector<std::string> work_;  // one kernel per module (preload_work)
    size_t next_{0};                  // the next module to start
    uint32_t running_{0};
    uint32_t done_count_{0};
    PreloadFailures failures_;
    bool cancelled_{false};
    bool finishing_{false};  // a thread took it to finish: out of the queue
    std::optional<Result<void>> outcome_;
    bool retired_{false};    // its callback returned
    std::thread::id callback_thread_;
    std::function<void()> release_;
};

// The runtime's warm-up threads and what they work on.
class Warmups {
public:
    // `threads`: at most this many threads (at least 1).
    Warmups(Modules& modules, const ArchiveSet& archives, LoadContext& load, const Logger& log, unsigned threads);
    // Cancels every warm-up, lets each finish (callbacks included, with SDM_ERROR_CANCELLED), joins.
    ~Warmups();
    Warmups(const Warmups&) = delete;
    Warmups& operator=(const Warmups&) = delete;

    // A warm-up of `names` (every listed kernel when empty) on device `ordinal`, not yet started:
    // the caller may record it before start() lets a thread see it. The context is taken now.
    Result<std::shared_ptr<Warmup>> create(int32_t ordinal, std::vector<std::string> names, int32_t priority, Warmup::Done done);
    // Queues it, starting the threads at the first; an error when no thread can be started, or
    // when the pool is being destroyed.
    Result<void> start(const std::shared_ptr<Warmup>& warmup);
    bool forked() const noexcept;

private:
    void work() noexcept;  // a thread's loop
    // With the lock held: the warm-up to finish, else the one to take a step of; null when none.
    std::shared_ptr<Warmup> pick_locked(bool& finish);
    void list(std::unique_lock<std::mutex>& lock, Warmup& w);
    void load(std::unique_lock<std::mutex>& lock, Warmup& w);
    void finish(std::unique_lock<std::mutex>& lock, const std::shared_ptr<Warmup>& w);

    Modules& modules_;
    const ArchiveSet& archives_;
    LoadContext& load_;
    const Logger& log_;
    const unsigned max_threads_;
    const int owner_;
    const std::shared_ptr<WarmupCore> core_ = std::make_shared<WarmupCore>();
    // Guarded by core_->mutex:
    std::vector<std::shared_ptr<Warmup>> queue_;  // started and not finishing
    uint64_t sequence_{0};
    bool stopping_{false};
    std::vector<std::thread> threads_;
};

// Deletes a pool, except in a forked child (its threads are the parent's there, and its lock may be
// held by one of them): that copy is left as it is.
struct WarmupsDeleter {
    void operator()(Warmups* warmups) const noexcept;
};

// How many threads warm up: $SDM_WARMUP_THREADS (1 to 64), else the cores up to 8; a bad value is
// warned of through `log` and read as that default. Read once per runtime.
unsigned warmup_threads_from_environment(const Logger& log);

}  // namespace sdm::runtime
