// The ranges over NVTX3 (header-only; CUDA's include/nvtx3). NVTX initializes itself on the first
// call in this library: it loads the tool named by NVTX_INJECTION64_PATH (or one already in the
// process), and without one every NVTX call becomes a no-op and nvtxDomainCreateA returns NULL.
// So the domain, created once, says whether a tool is attached, and nothing is formatted without one.
#include "trace_ranges.hpp"

#include <new>
#include <string>

#include <nvtx3/nvToolsExt.h>

namespace sdm::runtime {
namespace {

nvtxDomainHandle_t domain() noexcept {
    static const nvtxDomainHandle_t handle = nvtxDomainCreateA("sdm");
    return handle;
}

}  // namespace

void TraceRange::open(const char* kind, std::string_view subject, std::string_view detail) noexcept {
    nvtxDomainHandle_t const d = domain();
    if (d == nullptr) return;  // no tool attached
    try {
        std::string message(kind);
        message.append(" ").append(subject);
        if (!detail.empty()) message.append(" ").append(detail);
        nvtxEventAttributes_t attributes{};
        attributes.version = NVTX_VERSION;
        attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
        attributes.messageType = NVTX_MESSAGE_TYPE_ASCII;
        attributes.message.ascii = message.c_str();  // the tool copies what it keeps
        nvtxDomainRangePushEx(d, &attributes);
        domain_ = d;
    } catch (const std::bad_alloc&) {
        // No memory for the message: the work runs without its range.
    }
}

void TraceRange::close() noexcept { nvtxDomainRangePop(static_cast<nvtxDomainHandle_t>(domain_)); }

}  // namespace sdm::runtime
