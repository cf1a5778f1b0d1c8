// The streams sdm launched one module's kernels on, so that retiring the module (its archive
// reloaded, its last kernel released) waits for the work queued there before it is unloaded:
// an event is recorded on each (modules.cpp). A host that took a kernel's CUfunction
// (sdm_kernel_function) may have launched it anywhere, and so may a module launched on more
// streams than are remembered: those retire after a context-wide synchronize instead. A launch
// captured into a CUDA graph is the graph's to replay: the module waits for the graph instead
// (launch_graphs.hpp).
#pragma once

#include <atomic>
#include <mutex>
#include <vector>

#include <cuda.h>

#include "launch_graphs.hpp"

namespace sdm::runtime {

class LaunchStreams {
public:
    static constexpr size_t kMax = 16;
    // From the launch path: one load and a compare when `stream` is the last launch's.
    void note(CUstream stream) {
        if (any_.load(std::memory_order_acquire) && last_.load(std::memory_order_relaxed) == stream) return;
        std::lock_guard lock(mutex_);
        bool known = false;
        for (CUstream s : streams_) known = known || s == stream;
        if (!known) {
            if (streams_.size() < kMax) streams_.push_back(stream);
            else overflow_ = true;
        }
        last_.store(stream, std::memory_order_relaxed);
        any_.store(true, std::memory_order_release);
    }
    // The host took the CUfunction: sdm cannot know where it was launched.
    void note_raw() noexcept { raw_.store(true, std::memory_order_release); }

    struct Seen {
        std::vector<CUstream> streams;
        bool everywhere{false};  // wait for the whole context instead
    };
    Seen seen() const {
        std::lock_guard lock(mutex_);
        return {streams_, overflow_ || raw_.load(std::memory_order_acquire)};
    }
    // The graphs that captured its launches.
    GraphHolds& graphs() noexcept { return graphs_; }
    const GraphHolds& graphs() const noexcept { return graphs_; }

private:
    std::atomic<bool> any_{false};
    std::atomic<CUstream> last_{nullptr};
    std::atomic<bool> raw_{false};
    mutable std::mutex mutex_;
    std::vector<CUstream> streams_;
    bool overflow_{false};
    GraphHolds graphs_;
};

}  // namespace sdm::runtime
