#include "launch_graphs.hpp"

#include <algorithm>

namespace sdm::runtime {

namespace {

// The user object's destructor, on a driver thread once the last graph holding it is destroyed:
// no CUDA call, only the count, kept alive by the reference it owns.
void CUDA_CB drop_graph_hold(void* keep) {
    auto* count = static_cast<std::shared_ptr<GraphCount>*>(keep);
    (*count)->graphs.fetch_sub(1, std::memory_order_acq_rel);
    delete count;
}

// A driver older than 12.3 has no cuStreamGetCaptureInfo_v3 (its graph out-parameter is what a
// user object is retained on): a launch outside capture goes on, one into a capture is refused.
Result<void> refuse_capture(Driver& driver, CUstream stream, const std::string& module) {
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    SDM_TRY(SDM_DRIVER_CALL(driver, cuStreamIsCapturing, "asking whether the stream of a launch of module " + module + " is capturing a CUDA graph",
                            stream, &status));
    if (status == CU_STREAM_CAPTURE_STATUS_NONE) return {};
    return make_error(ErrorCode::graph_capture, "launching a kernel of module " + module + " into a stream that is capturing a CUDA graph needs a CUDA driver "
                                                "of 12.3 or newer (cuStreamGetCaptureInfo), through which sdm keeps the module loaded while the graph "
                                                "exists; this driver is " + std::to_string(driver.version()) + ". Update the NVIDIA driver");
}

}  // namespace

Result<void> GraphHolds::note(Driver& driver, CUstream stream, const std::string& module) {
    if (driver.version() < entry_point_version(EntryPoint::cuStreamGetCaptureInfo)) return refuse_capture(driver, stream, module);
    SDM_TRY_GET(fn, driver.resolve(EntryPoint::cuStreamGetCaptureInfo));
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    cuuint64_t capture = 0;
    CUgraph graph = nullptr;
    const CUresult rc = reinterpret_cast<decltype(&::cuStreamGetCaptureInfo)>(*fn)(stream, &status, &capture, &graph, nullptr, nullptr, nullptr);
    if (rc != CUDA_SUCCESS)
        return driver.error(rc, EntryPoint::cuStreamGetCaptureInfo, "asking whether the stream of a launch of module " + module + " is capturing a CUDA graph");
    // An invalidated capture yields no graph: the driver refuses the launch itself.
    if (status != CU_STREAM_CAPTURE_STATUS_ACTIVE) return {};
    return hold(driver, graph, capture, module);
}

Result<void> GraphHolds::hold(Driver& driver, CUgraph graph, uint64_t capture, const std::string& module) {
    std::lock_guard lock(mutex_);
    if (std::find(captures_.begin(), captures_.end(), capture) != captures_.end()) return {};
    const std::string what = "keeping module " + module + " loaded while the CUDA graph capturing its launch exists";
    auto* keep = new std::shared_ptr<GraphCount>(count_);  // the destructor's own reference
    count_->graphs.fetch_add(1, std::memory_order_acq_rel);
    CUuserObject object = nullptr;
    if (auto made = SDM_DRIVER_CALL(driver, cuUserObjectCreate, what, &object, keep, &drop_graph_hold, 1u, unsigned{CU_USER_OBJECT_NO_DESTRUCTOR_SYNC}); !made) {
        drop_graph_hold(keep);
        return std::move(made).error();
    }
    if (auto moved = SDM_DRIVER_CALL(driver, cuGraphRetainUserObject, what, graph, object, 1u, unsigned{CU_GRAPH_USER_OBJECT_MOVE}); !moved) {
        // Our reference goes, and with it the object (its destructor drops the count). Should
        // the release fail too, the count stays up: the module then stays loaded, the safe side.
        (void)SDM_DRIVER_CALL(driver, cuUserObjectRelease, what, object, 1u);
        return std::move(moved).error();
    }
    captures_.push_back(capture);
    if (captures_.size() > kCapturesKept) captures_.pop_front();
    return {};
}

}  // namespace sdm::runtime
