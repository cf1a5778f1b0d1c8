#include "readahead.hpp"

#include <algorithm>
#include <charconv>
#include <new>
#include <system_error>

#include "runtime/platform/platform.hpp"
#include "runtime/platform/settings.hpp"

namespace sdm::runtime {

Readahead::Readahead(size_t max_bytes, unsigned workers, size_t min_checked)
    : max_bytes_(max_bytes),
      max_workers_(workers != 0 ? workers : std::clamp(platform::cores() / 2, 2u, 8u)),
      min_checked_(min_checked),
      owner_(platform::process_id()) {}

bool Readahead::forked() const noexcept { return platform::process_id() != owner_; }

void ReadaheadDeleter::operator()(Readahead* readahead) const noexcept {
    if (readahead != nullptr && !readahead->forked()) delete readahead;
}

Readahead::~Readahead() {
    {
        std::lock_guard lock(mutex_);
        stop_ = true;
    }
    queued_.notify_all();
    for (auto& t : workers_) t.join();
}

uint64_t Readahead::held_bytes() const {
    if (forked()) return 0;
    std::lock_guard lock(mutex_);
    return bytes_;
}

size_t Readahead::hits() const {
    std::lock_guard lock(mutex_);
    return hits_;
}

bool Readahead::ready(size_t index) const {
    std::lock_guard lock(mutex_);
    const auto it = jobs_.find(index);
    return it != jobs_.end() && it->second.result.has_value();
}

std::optional<Readahead::Job> Readahead::take_locked(std::unique_lock<std::mutex>& lock, size_t index) {
    auto it = jobs_.find(index);
    if (it == jobs_.end()) return std::nullopt;
    if (it->second.running || it->second.result) {
        it->second.wanted = true;  // not dropped to make room while this waits
        // Looked up again after every wake: another load of the same entry may take it first.
        finished_.wait(lock, [&] {
            it = jobs_.find(index);
            return it == jobs_.end() || it->second.result.has_value();
        });
        if (it == jobs_.end()) return std::nullopt;
        done_.erase(std::remove(done_.begin(), done_.end(), index), done_.end());
        ++hits_;
    } else {  // still queued: done by the caller, not behind the others
        queue_.erase(std::remove(queue_.begin(), queue_.end(), index), queue_.end());
    }
    Job job = std::move(it->second);
    bytes_ -= job.bytes;
    jobs_.erase(it);
    return job;
}

Result<ByteVector> Readahead::read(const archive::Archive& archive, ReferenceMemo& references, size_t index, bool* ahead) {
    if (ahead != nullptr) *ahead = false;
    if (!forked()) {
        std::unique_lock lock(mutex_);
        if (auto job = take_locked(lock, index); job && job->result && *job->result) {
            if (ahead != nullptr) *ahead = true;
            return std::move(*job->result);
        }
        // A decode ahead that failed (out of memory while another load held much, say) is tried
        // again here, where its error reaches the caller.
    }
    return references.read(archive, index);
}

void Readahead::settle(size_t index, bool* ahead) {
    if (ahead != nullptr) *ahead = false;
    if (forked()) return;
    std::unique_lock lock(mutex_);
    const auto job = take_locked(lock, index);
    if (ahead != nullptr && job && job->result) *ahead = static_cast<bool>(*job->result);
}

void Readahead::start(const archive::Archive& archive, ReferenceMemo& references, size_t index) {
    if (index >= archive.entries().size()) return;
    // A stored entry is only checked ahead: nothing is held for it.
    const bool stored = archive.entries()[index].codec == archive::Codec::stored;
    if (stored && archive.entries()[index].stored_size < min_checked_) return;
    // An entry coded against a reference (a prefix base, a dictionary) costs its decode the
    // reference's raw bytes too (ReferenceMemo decodes it, and keeps it only within its own bound):
    // both count against the bound, so an entry coded against a reference as large as the bound is
    // left to its load, which decodes the reference once.
    const archive::Entry& entry = archive.entries()[index];
    const bool coded_against = entry.codec == archive::Codec::zstd_dict || entry.codec == archive::Codec::zstd_prefix;
    const uint64_t reference = coded_against && entry.ref < archive.entries().size() ? archive.entries()[entry.ref].raw_size : 0;
    const uint64_t size = stored ? 0 : entry.raw_size + reference;
    if (forked()) return;
    std::lock_guard lock(mutex_);
    if (stop_ || jobs_.count(index) || size > max_bytes_) return;
    if (archive_ == nullptr) {  // the mounted archive's own, the same at every call: set once
        archive_ = &archive;
        references_ = &references;
    }
    // Decoded and never taken (the host went elsewhere): the oldest make room first.
    while (bytes_ + size > max_bytes_ && !done_.empty()) {
        const auto it = jobs_.find(done_.front());
        done_.pop_front();
        if (it == jobs_.end() || it->second.wanted) continue;
        bytes_ -= it->second.bytes;
        jobs_.erase(it);
    }
    if (bytes_ + size > max_bytes_) return;
    if (workers_.size() < max_workers_ && workers_.size() < queue_.size() + 1) {
        try {
            workers_.emplace_back([this] { work(); });
        } catch (const std::system_error&) {
            if (workers_.empty()) return;  // no thread to be had: nothing is decoded ahead
        }
    }
    jobs_[index].bytes = size;
    bytes_ += size;
    queue_.push_back(index);
    queued_.notify_one();
}

void Readahead::work() {
    std::unique_lock lock(mutex_);
    while (true) {
        queued_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        if (stop_) return;
        const size_t index = queue_.front();
        queue_.pop_front();
        jobs_[index].running = true;
        const archive::Archive& archive = *archive_;  // read under the lock that start() set them under
        ReferenceMemo& references = *references_;
        lock.unlock();
        std::optional<Result<ByteVector>> result;
        try {
            if (archive.entries()[index].codec == archive::Codec::stored) {
                auto checked = archive.view(index);  // hashed once: the load's view finds it checked
                result.emplace(checked ? Result<ByteVector>(ByteVector{}) : Result<ByteVector>(std::move(checked).error()));
            } else {
                // One thread per entry: the workers already decode several entries at once.
                result.emplace(references.read(archive, index, 1));
            }
        } catch (const std::bad_alloc&) {
            result.emplace(make_error(ErrorCode::out_of_memory, "out of memory decoding " + archive.describe(index) + " ahead of its load"));
        }
        lock.lock();
        const auto it = jobs_.find(index);  // a read takes a running job only once it is done
        it->second.running = false;
        it->second.result = std::move(result);
        done_.push_back(index);
        finished_.notify_all();
    }
}

size_t readahead_modules_from_environment(const Logger& log) {
    // Half the cores, from 2 to 8: on the H200's 16-core host 8 ahead took cuBLASLt's whole load
    // from 1.35x to 1.13x the driver's and harmed none (bench/RESULTS.md, "Loading at scale").
    // (At most 16: the table's bound, runtime/platform/settings.cpp.)
    const size_t kDefault = std::clamp<size_t>(platform::cores() / 2, 2, 8);
    return settings::value_or(settings::count(settings::Id::readahead, log), kDefault);
}

std::vector<size_t> next_in_order(const archive::Archive& archive, size_t index, size_t modules) {
    std::vector<size_t> out;
    const auto& entries = archive.entries();
    if (index >= entries.size()) return out;
    const archive::Entry& e = entries[index];
    size_t j = index;
    for (size_t m = 0; m < modules; ++m) {
        const std::string_view name = entries[j].name;
        while (j < entries.size() && entries[j].name == name) ++j;  // `in` is sorted by name: a module's entries are together
        if (j >= entries.size()) break;
        const auto found = archive.find(entries[j].name, e.kind, e.sm, e.variant);
        if (found) out.push_back(*found);
    }
    return out;
}

}  // namespace sdm::runtime
