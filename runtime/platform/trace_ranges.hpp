// NVTX ranges in the domain "sdm", for profilers (Nsight Systems) and any NVTX tool: a range is an
// object on the stack, pushed when made and popped when it goes, on the thread that made it. Its
// message is "KIND SUBJECT [DETAIL]" ("module load scale"). Without a tool attached (NVTX found no
// injection library: its domain is NULL) a range costs a call, a load and a branch; its message is
// never formatted. In a build without the NVTX3 headers (the Meson feature `nvtx`) a range is
// nothing (trace_ranges_absent.cpp).
#pragma once

#include <string_view>

namespace sdm::runtime {

class TraceRange {
public:
    // `kind` names what runs ("mount", "module load", "jit", "preload", "launch"), `subject` what it
    // runs on, `detail` (when given) more of it; all three are read only while the range is made.
    TraceRange(const char* kind, std::string_view subject, std::string_view detail = {}) noexcept { open(kind, subject, detail); }
    // Only when `on` (a switch read once, as SDM_NVTX_LAUNCH is): off, a test of it, and one of the
    // empty range as it goes, are all.
    static TraceRange when(bool on, const char* kind, std::string_view subject) noexcept { return on ? TraceRange(kind, subject) : TraceRange(); }
    ~TraceRange() {
        if (domain_ != nullptr) close();
    }
    TraceRange(const TraceRange&) = delete;
    TraceRange& operator=(const TraceRange&) = delete;

private:
    TraceRange() noexcept = default;
    void open(const char* kind, std::string_view subject, std::string_view detail) noexcept;
    void close() noexcept;
    void* domain_{nullptr};  // the domain pushed on (an nvtxDomainHandle_t); NULL: nothing pushed
};

}  // namespace sdm::runtime
