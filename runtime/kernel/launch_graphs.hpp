// The CUDA graphs that captured launches of one module, so that retiring the module (a reload
// replaced its archive, or the runtime ends) never unloads code a graph may still replay. A
// launch into a capturing stream (cuStreamGetCaptureInfo) hands the capture's graph a CUDA user
// object (cuUserObjectCreate, CU_USER_OBJECT_NO_DESTRUCTOR_SYNC; cuGraphRetainUserObject,
// CU_GRAPH_USER_OBJECT_MOVE): the graph, every executable graph instantiated from it and every
// graph cloned from it hold it, and the driver runs its destructor once the last of them is
// destroyed. That destructor runs on a driver thread and may make no CUDA call: it only drops a
// count in GraphCount, which its own reference keeps alive. The registry (modules.hpp) reads the
// count at each retire and release, as it queries the events of a retired module's streams.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>

#include <cuda.h>

#include "runtime/platform/driver.hpp"
#include "common/result.hpp"

namespace sdm::runtime {

// How many graphs hold a module: a user object's destructor drops it. Shared by the module's
// GraphHolds, each user object and a retired module waiting to unload.
struct GraphCount {
    std::atomic<int64_t> graphs{0};
    int64_t live() const noexcept { return graphs.load(std::memory_order_acquire); }
};

class GraphHolds {
public:
    // From the launch path, before the launch: when `stream` is capturing a graph, that graph
    // holds module `module` from now on (one user object per capture: a second launch into the
    // same capture adds none). A query or a user object that fails is an error: the launch is
    // not made, since the graph could replay it after the module is gone.
    Result<void> note(Driver& driver, CUstream stream, const std::string& module);
    // The count a retired module waits on (alive as long as any holder).
    std::shared_ptr<const GraphCount> count() const noexcept { return count_; }
    // Captures remembered as holding already (the oldest forgotten first: a capture forgotten
    // and launched into again gets a second user object, which only delays the unload).
    static constexpr size_t kCapturesKept = 16;

private:
    Result<void> hold(Driver& driver, CUgraph graph, uint64_t capture, const std::string& module);
    const std::shared_ptr<GraphCount> count_ = std::make_shared<GraphCount>();
    std::mutex mutex_;  // held while a capture's user object is made: one per capture
    std::deque<uint64_t> captures_;
};

}  // namespace sdm::runtime
