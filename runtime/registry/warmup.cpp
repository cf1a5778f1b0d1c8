#include "warmup.hpp"

#include <algorithm>
#include <new>
#include <system_error>
#include <utility>

#include "runtime/platform/log.hpp"
#include "runtime/platform/platform.hpp"
#include "runtime/platform/settings.hpp"
#include "runtime/platform/trace_ranges.hpp"
#include "modules.hpp"

namespace sdm::runtime {

namespace {

// The outcome's error where even its message cannot be made: the status still says it.
Error out_of_memory() noexcept {
    Error e;
    e.code = ErrorCode::out_of_memory;
    return e;
}

}  // namespace

Warmup::Warmup(std::shared_ptr<WarmupCore> core, int32_t ordinal, std::vector<std::string> names, int32_t priority, CUcontext context, Done done)
    : core_(std::move(core)),
      ordinal_(ordinal),
      names_(std::move(names)),
      priority_(priority),
      context_(context),
      done_(std::move(done)),
      owner_(platform::process_id()) {}

bool Warmup::forked() const noexcept { return platform::process_id() != owner_; }

Warmup::Progress Warmup::progress() const {
    std::lock_guard lock(core_->mutex);
    return {done_count_, total_.value_or(0)};
}

std::optional<Result<void>> Warmup::wait(std::chrono::milliseconds timeout) const {
    std::unique_lock lock(core_->mutex);
    if (!core_->finished.wait_for(lock, timeout, [&] { return outcome_.has_value(); })) return std::nullopt;
    return *outcome_;
}

void Warmup::wait_retired() const {
    std::unique_lock lock(core_->mutex);
    core_->finished.wait(lock, [&] { return retired_; });
}

bool Warmup::release_after_callback(std::function<void()> release) {
    std::lock_guard lock(core_->mutex);
    if (retired_ || callback_thread_ != std::this_thread::get_id()) return false;
    release_ = std::move(release);
    return true;
}

bool Warmup::finishable() const noexcept {
    if (finishing_ || running_ > 0 || listing_) return false;
    return cancelled_ || (listed() && next_ >= work_.size());
}

bool Warmup::cut_short() const noexcept { return cancelled_ && (!listed() || done_count_ < *total_); }

Error Warmup::cancelled_error() const {
    const std::string what = names_.empty() ? "every listed kernel" : names_.size() == 1 ? "kernel " + names_[0] : std::to_string(names_.size()) + " kernels";
    const std::string how_far = listed() ? std::to_string(done_count_) + " of its " + std::to_string(*total_) + " modules" : "none of its modules";
    return make_error(ErrorCode::cancelled, "the warm-up of " + what + " on device " + std::to_string(ordinal_) + " was cancelled after " + how_far +
                                                " had loaded; the others were skipped");
}

void Warmup::cancel_locked() noexcept {
    if (outcome_ || cancelled_) return;
    cancelled_ = true;
    // Nothing of it loading: its outcome is known now (a thread still runs its callback).
    if (running_ == 0 && !listing_ && cut_short()) {
        try {
            outcome_ = cancelled_error();
        } catch (...) {
            outcome_ = Error{ErrorCode::cancelled, {}, 0, {}};
        }
    }
}

void Warmup::cancel() {
    {
        std::lock_guard lock(core_->mutex);
        cancel_locked();
    }
    core_->finished.notify_all();
    core_->work.notify_all();
}

Warmups::Warmups(Modules& modules, const ArchiveSet& archives, LoadContext& load, const Logger& log, unsigned threads)
    : modules_(modules), archives_(archives), load_(load), log_(log), max_threads_(std::max(1u, threads)), owner_(platform::process_id()) {}

bool Warmups::forked() const noexcept { return platform::process_id() != owner_; }

void WarmupsDeleter::operator()(Warmups* warmups) const noexcept {
    if (warmups != nullptr && !warmups->forked()) delete warmups;
}

Warmups::~Warmups() {
    {
        std::lock_guard lock(core_->mutex);
        stopping_ = true;
        for (const auto& w : queue_) w->cancel_locked();
    }
    core_->finished.notify_all();
    core_->work.notify_all();
    for (auto& t : threads_) t.join();
}

Result<std::shared_ptr<Warmup>> Warmups::create(int32_t ordinal, std::vector<std::string> names, int32_t priority, Warmup::Done done) {
    SDM_TRY_GET(context, preload_context(load_, ordinal));
    return std::make_shared<Warmup>(core_, ordinal, std::move(names), priority, *context, std::move(done));
}

Result<void> Warmups::start(const std::shared_ptr<Warmup>& warmup) {
    {
        std::lock_guard lock(core_->mutex);
        if (stopping_) return make_error(ErrorCode::cancelled, "the runtime is being destroyed: no warm-up starts now");
        // The threads start with the first warm-up: a runtime that never warms up in the
        // background never pays for them.
        if (threads_.empty()) {
            try {
                while (threads_.size() < max_threads_) threads_.emplace_back([this] { work(); });
            } catch (const std::system_error& e) {
                if (threads_.empty())
                    return make_error(ErrorCode::io, std::string("no thread could be started for a warm-up: ") + e.what() + "; sdm_preload loads on the calling thread");
            }
        }
        warmup->sequence_ = sequence_++;
        queue_.push_back(warmup);
    }
    core_->work.notify_one();
    return {};
}

std::shared_ptr<Warmup> Warmups::pick_locked(bool& finish) {
    std::shared_ptr<Warmup> best;
    for (const auto& w : queue_) {
        if (w->finishable()) {
            finish = true;
            return w;
        }
        if (w->has_step() && (!best || w->priority_ > best->priority_ || (w->priority_ == best->priority_ && w->sequence_ < best->sequence_))) best = w;
    }
    return best;
}

void Warmups::work() noexcept {
    std::unique_lock lock(core_->mutex);
    for (;;) {
        bool finish = false;
        const std::shared_ptr<Warmup> w = pick_locked(finish);
        if (!w) {
            if (stopping_ && queue_.empty()) return;
            core_->work.wait(lock);
        } else if (finish) {
            this->finish(lock, w);
        } else if (!w->listed()) {
            list(lock, *w);
        } else {
            load(lock, *w);
        }
    }
}

void Warmups::list(std::unique_lock<std::mutex>& lock, Warmup& w) {
    w.listing_ = true;
    lock.unlock();
    PreloadFailures failures;
    std::vector<std::string> work;
    try {
        const TraceRange range("warm-up", "device", std::to_string(w.ordinal_));
        work = preload_work(archives_, load_, w.ordinal_, w.names_, failures);
    } catch (...) {  // out of memory, or a broken invariant: nothing of it loads
        work.clear();
        try {
            failures.record("every kernel of the warm-up", make_error(ErrorCode::out_of_memory, "out of memory while listing a warm-up's modules"));
        } catch (...) {
            failures.first = out_of_memory();
        }
    }
    lock.lock();
    w.listing_ = false;
    w.total_ = static_cast<uint32_t>(work.size());
    w.work_ = std::move(work);
    w.failures_ = std::move(failures);
    core_->work.notify_all();  // its modules may be taken by every thread
}

void Warmups::load(std::unique_lock<std::mutex>& lock, Warmup& w) {
    const std::string& name = w.work_[w.next_++];  // work_ does not change once listed
    ++w.running_;
    lock.unlock();
    Result<void> loaded{};
    try {
        const TraceRange range("warm-up", name, "device " + std::to_string(w.ordinal_));
        loaded = preload_module(modules_, w.ordinal_, name, w.context_);
    } catch (...) {  // the range's text: no memory
        loaded = out_of_memory();
    }
    lock.lock();
    --w.running_;
    ++w.done_count_;
    if (!loaded) {
        try {
            w.failures_.record(name, std::move(loaded).error());
        } catch (...) {
            if (!w.failures_.first) w.failures_.first = out_of_memory();
        }
    }
}

void Warmups::finish(std::unique_lock<std::mutex>& lock, const std::shared_ptr<Warmup>& w) {
    w->finishing_ = true;
    queue_.erase(std::find(queue_.begin(), queue_.end(), w));
    if (!w->outcome_) {
        try {
            if (w->cut_short()) w->outcome_ = w->cancelled_error();
            else if (auto e = w->failures_.summary()) w->outcome_ = std::move(*e);
            else w->outcome_ = Result<void>{};
        } catch (...) {
            w->outcome_ = out_of_memory();
        }
    }
    w->callback_thread_ = std::this_thread::get_id();
    core_->finished.notify_all();
    lock.unlock();
    // The outcome no longer changes: read without the lock, which the callback must not find held.
    if (w->done_) {
        try {
            w->done_(*w->outcome_);
        } catch (...) {
            try {
                log_.error("a warm-up's done callback threw; sdm ignored it (a C callback must not throw)");
            } catch (...) {  // no memory to say it
            }
        }
    }
    lock.lock();
    w->retired_ = true;
    w->callback_thread_ = {};
    std::function<void()> release = std::move(w->release_);
    core_->finished.notify_all();
    if (release) {
        lock.unlock();
        release();  // the host's handle, freed as its destroy asked from the callback
        lock.lock();
    }
}

unsigned warmup_threads_from_environment(const Logger& log) {
    // The cores, at most 8, as sdm_preload's threads (one per core): loads overlap decoding,
    // checks and the driver's work, and a host's frames keep the cores above 8.
    const unsigned kDefault = std::clamp(platform::cores(), 1u, 8u);
    return static_cast<unsigned>(settings::value_or(settings::count(settings::Id::warmup_threads, log), kDefault));
}

}  // namespace sdm::runtime
