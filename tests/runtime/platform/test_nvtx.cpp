// NVTX ranges (runtime/platform/trace_ranges.hpp) as a profiler sees them: the tool of
// tests/nvtx_injection, which NVTX loads from NVTX_INJECTION64_PATH (meson sets it for the test
// `nvtx`, which runs the hidden case [.nvtx]), records every range libsdm pushes on the fake driver:
// mounts, module loads, a JIT link inside its module's load, a preload around its module's load,
// and launches only under SDM_NVTX_LAUNCH. Without a tool (the test `nvtx_no_tool`, the default
// case) the same work runs as ever and nothing loads the tool.
#include <catch2/catch.hpp>

#include <dlfcn.h>

#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "sdm/sdm.h"
#include "fake_runtime.hpp"
#include "support.hpp"

using namespace sdm;
using namespace sdm::test;

namespace {

// One line of the tool's record (nvtx_injection.cpp, nvtx_test_ranges).
struct SeenRange {
    std::string domain;
    int thread;
    size_t depth;
    std::string parent;
    std::string message;
    bool closed;
};

struct Tool {
    const char* (*ranges)();
    int (*unbalanced)();
    int (*initializations)();

    std::vector<SeenRange> seen() const {
        std::vector<SeenRange> out;
        std::istringstream lines(ranges());
        for (std::string line; std::getline(lines, line);) {
            std::vector<std::string> fields;
            std::istringstream cells(line);
            for (std::string cell; std::getline(cells, cell, '\t');) fields.push_back(cell);
            REQUIRE(fields.size() == 6);
            out.push_back({fields[0], std::stoi(fields[1]), std::stoul(fields[2]), fields[3], fields[4], fields[5] == "1"});
        }
        return out;
    }
};

// The tool NVTX loaded into this process; FAILs when it loaded none.
Tool loaded_tool() {
    void* handle = dlopen(SDM_TEST_NVTX_INJECTION, RTLD_NOW | RTLD_NOLOAD);
    INFO("NVTX_INJECTION64_PATH=" << (std::getenv("NVTX_INJECTION64_PATH") ? std::getenv("NVTX_INJECTION64_PATH") : "(unset)"));
    REQUIRE(handle != nullptr);  // NVTX, on libsdm's first range, loaded it
    Tool tool{reinterpret_cast<const char* (*)()>(dlsym(handle, "nvtx_test_ranges")), reinterpret_cast<int (*)()>(dlsym(handle, "nvtx_test_unbalanced")),
              reinterpret_cast<int (*)()>(dlsym(handle, "nvtx_test_initializations"))};
    REQUIRE(tool.ranges != nullptr);
    REQUIRE(tool.unbalanced != nullptr);
    REQUIRE(tool.initializations != nullptr);
    dlclose(handle);  // NVTX holds its own reference
    return tool;
}

std::vector<SeenRange> with_message(const std::vector<SeenRange>& all, const std::string& prefix) {
    std::vector<SeenRange> out;
    for (const auto& r : all)
        if (r.message.rfind(prefix, 0) == 0) out.push_back(r);
    return out;
}

// The work whose ranges are checked: PTX linked by nvJitLink at a fetch, a cubin module preloaded,
// and a launch.
void fetch_preload_launch(sdm_runtime* rt) {
    mount(rt, make_archive("jit", {"compute_90"}), "ptx.sdma");
    mount(rt, make_archive("cubins", {"sm_90"}, {"axpy"}), "cubins.sdma");
    sdm_kernel* k = kernel_of(rt, "scale");
    const char* names[] = {"axpy"};
    REQUIRE(sdm_preload(rt, 0, names, 1, nullptr) == SDM_OK);
    CHECK(launch_scale(k) == SDM_OK);
    CHECK(sdm_kernel_release(rt, k, nullptr) == SDM_OK);
}

}  // namespace

TEST_CASE("a tool attached through NVTX_INJECTION64_PATH sees mounts, module loads, JIT links and preloads; launches under SDM_NVTX_LAUNCH", "[.nvtx]") {
    FakeRuntime f;
    fetch_preload_launch(f.rt.get());
    CHECK(info_of(f.rt.get(), 0, "scale").source == 3);  // nvJitLink linked it
    const Tool tool = loaded_tool();
    CHECK(tool.initializations() == 1);  // libsdm's NVTX, once
    auto seen = tool.seen();
    for (const auto& r : seen) {
        INFO(r.message);
        CHECK(r.domain == "sdm");
        CHECK(r.closed);
    }
    CHECK(tool.unbalanced() == 0);

    const auto mounts = with_message(seen, "mount ");
    REQUIRE(mounts.size() == 2);
    CHECK(mounts[0].message == "mount ptx.sdma");
    CHECK(mounts[1].message == "mount cubins.sdma");
    CHECK(mounts[0].depth == 0);

    // The fetch: the module's load on this thread, the link inside it.
    const auto jit_loads = with_message(seen, "module load jit");
    REQUIRE(jit_loads.size() == 1);
    CHECK(jit_loads[0].depth == 0);
    const auto links = with_message(seen, "jit ");
    REQUIRE(links.size() == 1);
    CHECK(links[0].message.rfind("jit nvJitLink ", 0) == 0);
    CHECK(links[0].parent == "module load jit");
    CHECK(links[0].thread == jit_loads[0].thread);

    // The preload of one module: it loads on the calling thread, inside the preload's range.
    const auto preloads = with_message(seen, "preload ");
    REQUIRE(preloads.size() == 1);
    CHECK(preloads[0].message == "preload device 0");
    const auto cubin_loads = with_message(seen, "module load cubins");
    REQUIRE(cubin_loads.size() == 1);
    CHECK(cubin_loads[0].parent == "preload device 0");
    CHECK(cubin_loads[0].depth == 1);

    CHECK(with_message(seen, "launch ").empty());  // SDM_NVTX_LAUNCH unset

    {  // The switch on (read by the next runtime, on the same cache): a launch is a range; the
       // fetch hits the cache, a load without a link.
        const EnvGuard launches("SDM_NVTX_LAUNCH", "1");
        f.restart();
        fetch_preload_launch(f.rt.get());
        CHECK(info_of(f.rt.get(), 0, "scale").source == 2);
    }
    seen = tool.seen();
    const auto launches = with_message(seen, "launch ");
    REQUIRE(launches.size() == 1);
    CHECK(launches[0].message == "launch scale");
    CHECK(launches[0].depth == 0);
    CHECK(launches[0].closed);
    CHECK(with_message(seen, "module load jit").size() == 2);
    CHECK(with_message(seen, "jit ").size() == 1);  // the cache served the second
    CHECK(tool.unbalanced() == 0);

    {  // "0" is off, as for every switch
        const EnvGuard launches("SDM_NVTX_LAUNCH", "0");
        f.restart();
        fetch_preload_launch(f.rt.get());
    }
    CHECK(with_message(tool.seen(), "launch ").size() == 1);
}

TEST_CASE("without a tool the same work runs, launches under SDM_NVTX_LAUNCH included, and nothing loads the tool", "[nvtx_no_tool]") {
    unsetenv("NVTX_INJECTION64_PATH");  // before libsdm's first range: NVTX reads it once
    const EnvGuard launches("SDM_NVTX_LAUNCH", "1");
    FakeRuntime f;
    fetch_preload_launch(f.rt.get());
    CHECK(info_of(f.rt.get(), 0, "scale").source == 3);
    if (SDM_TEST_NVTX) CHECK(dlopen(SDM_TEST_NVTX_INJECTION, RTLD_NOW | RTLD_NOLOAD) == nullptr);  // (else no tool was built)
}
