// libFuzzer target: LTO-IR and fatbins through sdm's checks to the real nvJitLink, isolated.
// The first byte picks what the rest is: an LTO-IR module, or a fatbin whose every PTX entry is
// linked in turn (inspect_fatbin refuses a fatbin holding LTO-IR: issue 38). What passes inspect_image goes to run_isolated (the JIT helper
// of $SDM_JIT_HELPER, which loads nvJitLink from the usual places) for sm_90, under a 5 s and
// 2 GiB limit. The helper's crashes are nvJitLink's, counted and reported at exit, never
// failures: what must hold is that this process, the host, never crashes, hangs or leaks.
// Without $SDM_JIT_HELPER or nvJitLink only the checks run.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "archive/fatbin.hpp"
#include "archive/image.hpp"
#include "runtime/jit/jit_isolation.hpp"
#include "runtime/jit/jit_nvjitlink.hpp"
#include "runtime/platform/platform.hpp"

namespace {

using namespace sdm;
using namespace sdm::archive;
using namespace sdm::runtime;

struct Tally {
    uint64_t inputs{0}, refused{0}, linked{0}, tool_errors{0}, crashed{0}, timed_out{0};
    ~Tally() {
        std::fprintf(stderr, "fuzz_isolated_jit: %llu inputs, %llu refused by sdm's checks, %llu linked, %llu refused by nvJitLink, "
                             "%llu links that killed the JIT helper (a signal), %llu past the time limit; the host never crashed\n",
                     static_cast<unsigned long long>(inputs), static_cast<unsigned long long>(refused), static_cast<unsigned long long>(linked),
                     static_cast<unsigned long long>(tool_errors), static_cast<unsigned long long>(crashed), static_cast<unsigned long long>(timed_out));
    }
} tally;

const std::vector<std::string>* helper() {
    static const std::optional<std::vector<std::string>> h = []() -> std::optional<std::vector<std::string>> {
        const auto path = platform::env("SDM_JIT_HELPER");
        if (!path || !locate_nvjitlink("")) return std::nullopt;
        return std::vector<std::string>{*path};
    }();
    return h ? &*h : nullptr;
}

void link(Kind kind, Bytes bytes) {
    const std::vector<std::string>* h = helper();
    if (h == nullptr) return;
    const auto located = locate_nvjitlink("");
    const IsolatedJob job{IsolatedTool::nvjitlink, located ? located->file : std::string(), {kind, bytes, "fuzz"}, 90, Variant::base, {}};
    auto out = run_isolated(*h, job, JitLimits{5, uint64_t{2} << 30});  // (under libFuzzer's 10 s -timeout)
    if (out) {
        ++tally.linked;
        (void)inspect_cubin(out->cubin);  // what comes back is checked like any other cubin
        return;
    }
    const std::string& m = out.error().message;
    static const bool verbose = std::getenv("SDM_FUZZ_VERBOSE") != nullptr;  // each failure's message, for a look by hand
    if (verbose) std::fprintf(stderr, "fuzz_isolated_jit: %s\n", m.c_str());
    if (m.find("was killed by signal") != std::string::npos) ++tally.crashed;
    else if (m.find("ran past its time limit") != std::string::npos) ++tally.timed_out;
    else ++tally.tool_errors;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 2) return 0;
    ++tally.inputs;
    const Bytes bytes{reinterpret_cast<const std::byte*>(data + 1), size - 1};
    if (data[0] % 2 == 0) {
        if (!inspect_ltoir(bytes)) {
            ++tally.refused;
            return 0;
        }
        link(Kind::ltoir, bytes);
        return 0;
    }
    if (!inspect_fatbin(bytes)) {  // every inner image checked; then the ones a JIT reads are linked
        ++tally.refused;
        return 0;
    }
    const auto container = parse_fatbin(bytes);
    for (const FatbinEntry& e : container->entries) {
        if (e.image_kind != Kind::ptx) continue;
        auto payload = fatbin_entry_payload(e);
        if (payload) link(Kind::ptx, *payload);
    }
    return 0;
}
