// Launches captured into CUDA graphs (runtime/kernel/launch_graphs.hpp) on the fake driver, which records
// a capturing stream's launches into its graph, holds user objects in graphs and executable
// graphs, runs their destructors when the last reference goes, and fails cuGraphLaunch for a
// kernel whose module was unloaded: a module a graph captured is not unloaded by a reload's
// retirement (nor by the runtime's end) while the graph or an executable graph of it lives; one
// user object per capture; none outside capture; a failing capture query or user object is the
// launch's error; threads capturing and replaying while another reloads never replay an unloaded
// module (in the normal build and under ThreadSanitizer: the user objects' destructors run on the
// fake's own thread). The H200 replays a graph across a reload in tests/gpu/test_gpu_graphs.cpp.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <cuda.h>

#include "cuda_driver.hpp"
#include "fake_runtime.hpp"
#include "sdm/sdm.h"
#include "support.hpp"

using namespace sdm::test;

namespace {

// The host's side of graphs, from the fake driver.
struct HostGraphs {
    HostGraphs() {
        REQUIRE(cu.attach(SDM_FAKE_CUDA_PATH));
        begin = cu.get<decltype(&cuStreamBeginCapture)>("cuStreamBeginCapture");
        end = cu.get<decltype(&cuStreamEndCapture)>("cuStreamEndCapture");
        instantiate = cu.get<decltype(&cuGraphInstantiateWithFlags)>("cuGraphInstantiateWithFlags");
        launch = cu.get<decltype(&cuGraphLaunch)>("cuGraphLaunch");
        destroy = cu.get<decltype(&cuGraphDestroy)>("cuGraphDestroy");
        destroy_exec = cu.get<decltype(&cuGraphExecDestroy)>("cuGraphExecDestroy");
        REQUIRE((begin && end && instantiate && launch && destroy && destroy_exec));
    }
    // A graph of what `capture` launches into `stream`.
    template <typename Capture>
    CUgraph captured(CUstream stream, Capture&& capture) {
        REQUIRE(begin(stream, CU_STREAM_CAPTURE_MODE_GLOBAL) == CUDA_SUCCESS);
        capture();
        CUgraph graph = nullptr;
        REQUIRE(end(stream, &graph) == CUDA_SUCCESS);
        return graph;
    }
    CUgraphExec exec_of(CUgraph graph) {
        CUgraphExec exec = nullptr;
        REQUIRE(instantiate(&exec, graph, 0) == CUDA_SUCCESS);
        return exec;
    }
    sdm_host::CudaDriver cu;
    decltype(&cuStreamBeginCapture) begin{};
    decltype(&cuStreamEndCapture) end{};
    decltype(&cuGraphInstantiateWithFlags) instantiate{};
    decltype(&cuGraphLaunch) launch{};
    decltype(&cuGraphDestroy) destroy{};
    decltype(&cuGraphExecDestroy) destroy_exec{};
};

CUstream stream_at(uintptr_t n) { return reinterpret_cast<CUstream>(n); }  // the fake takes any stream value

// A runtime (its log in `log`) with dir/kernels.sdma mounted: module kernels, an sm_90 cubin; the
// fake one H200 on a driver of `driver_version`, with `failures`.
RuntimePtr mounted_sm90(const TempDir& dir, std::vector<std::string>* log, std::vector<FakeFailure> failures = {}, int driver_version = 13000) {
    FakeConfig config;
    config.devices = {kH200};
    config.driver_version = driver_version;
    config.failures = std::move(failures);
    fake_configure(config);
    drop(dir.path + "/kernels.sdma", make_archive("kernels", {"sm_90"}));
    RuntimePtr rt = make_runtime(dir.path + "/cache", 0, 0, log);
    REQUIRE(sdm_archive_mount_file(rt.get(), (dir.path + "/kernels.sdma").c_str(), nullptr) == SDM_OK);
    return rt;
}

// dir/kernels.sdma replaced by an sm_90a version, and reloaded.
void reload_sm90a(sdm_runtime* rt, const TempDir& dir) {
    drop(dir.path + "/kernels.sdma", make_archive("kernels", {"sm_90a"}));
    uint32_t reloaded = 0;
    REQUIRE(sdm_runtime_reload(rt, &reloaded, nullptr) == SDM_OK);
    REQUIRE(reloaded == 1);
}

// A fetch and a release of scale: the registry looks at what waits to unload.
void fetch_and_release(sdm_runtime* rt) { REQUIRE(sdm_kernel_release(rt, kernel_of(rt, "scale"), nullptr) == SDM_OK); }

}  // namespace

TEST_CASE("a module a graph captured outlives a reload until the graph and its executable graph are destroyed", "[graphs][retire]") {
    TempDir dir;
    std::vector<std::string> log;
    RuntimePtr rt = mounted_sm90(dir, &log);
    HostGraphs g;
    sdm_kernel* old = kernel_of(rt.get(), "scale");
    const CUstream stream = stream_at(0x1000);
    CUgraph graph = g.captured(stream, [&] {
        REQUIRE(launch_scale(old, stream) == SDM_OK);
        REQUIRE(launch_scale(old, stream) == SDM_OK);  // the same capture: no second user object
    });
    CHECK(fake_calls("@user_objects") == 1);
    CHECK(fake_calls("cuUserObjectCreate") == 1);
    CHECK(fake_calls("cuGraphRetainUserObject") == 1);
    CUgraphExec exec = g.exec_of(graph);
    reload_sm90a(rt.get(), dir);
    REQUIRE(sdm_kernel_release(rt.get(), old, nullptr) == SDM_OK);
    // Released and retired, its stream's work done: only the graph keeps it, and the log says so.
    CHECK(fake_calls("@modules") == 1);
    CHECK(count_containing(log, "module kernels of a replaced archive waits for 1 CUDA graph(s)") == 1);
    CHECK(g.launch(exec, stream) == CUDA_SUCCESS);  // the replay finds its code
    REQUIRE(g.destroy(graph) == CUDA_SUCCESS);
    fetch_and_release(rt.get());  // the new version loads; the old one is still held by the executable graph
    CHECK(fake_calls("@modules") == 2);
    CHECK(fake_calls("@user_objects") == 1);
    CHECK(g.launch(exec, stream) == CUDA_SUCCESS);
    CHECK(count_containing(log, "waits for 1 CUDA graph(s)") == 1);  // said once
    REQUIRE(g.destroy_exec(exec) == CUDA_SUCCESS);
    CHECK(fake_calls("@user_objects") == 0);
    CHECK(fake_calls("@modules") == 2);  // nothing unloads from the driver's thread
    fetch_and_release(rt.get());
    CHECK(fake_calls("@modules") == 1);
    CHECK(count_containing(log, "unloaded module kernels of a replaced archive: no kernel of it is held any more, and the work launched with it has "
                                "finished, and no CUDA graph that captured it exists") == 1);
}

TEST_CASE("user objects: none for a launch outside capture, one per capture", "[graphs]") {
    TempDir dir;
    RuntimePtr rt = mounted_sm90(dir, nullptr);
    HostGraphs g;
    sdm_kernel* k = kernel_of(rt.get(), "scale");
    REQUIRE(launch_scale(k, stream_at(0x2000)) == SDM_OK);
    REQUIRE(launch_scale(k, nullptr) == SDM_OK);
    CHECK(fake_calls("cuStreamGetCaptureInfo") == 2);  // asked at each launch
    CHECK(fake_calls("cuUserObjectCreate") == 0);
    const CUstream stream = stream_at(0x1000);
    CUgraph first = g.captured(stream, [&] { REQUIRE(launch_scale(k, stream) == SDM_OK); });
    CUgraph second = g.captured(stream, [&] {  // the same stream, another capture
        REQUIRE(launch_scale(k, stream) == SDM_OK);
        REQUIRE(launch_scale(k, stream) == SDM_OK);
    });
    CHECK(fake_calls("@user_objects") == 2);
    REQUIRE(g.destroy(first) == CUDA_SUCCESS);
    REQUIRE(g.destroy(second) == CUDA_SUCCESS);
    CHECK(fake_calls("@user_objects") == 0);
    REQUIRE(sdm_kernel_release(rt.get(), k, nullptr) == SDM_OK);
}

TEST_CASE("a global copy captured into a graph holds its module as a launch does", "[graphs]") {
    TempDir dir;
    fake({kH200});
    RuntimePtr rt = make_runtime(dir.path + "/cache");
    mount(rt.get(), launch_archive(), "launch.sdma");
    HostGraphs g;
    sdm_kernel* table = kernel_of(rt.get(), "scale_by_table");
    float coefficients[16] = {};
    const CUstream stream = stream_at(0x1000);
    CUgraph graph = g.captured(stream, [&] {
        REQUIRE(sdm_global_write(table, "coefficients", 0, coefficients, sizeof coefficients, stream, nullptr) == SDM_OK);
    });
    CHECK(fake_calls("@user_objects") == 1);
    REQUIRE(g.destroy(graph) == CUDA_SUCCESS);
    CHECK(fake_calls("@user_objects") == 0);
    REQUIRE(sdm_kernel_release(rt.get(), table, nullptr) == SDM_OK);
}

TEST_CASE("a failing capture query or user object fails the launch, which is not made, and holds nothing", "[graphs][faults]") {
    for (const char* entry : {"cuStreamGetCaptureInfo", "cuUserObjectCreate", "cuGraphRetainUserObject"}) {
        INFO(entry);
        fake_reset();
        TempDir dir;
        std::vector<std::string> log;
        RuntimePtr rt = mounted_sm90(dir, &log, {{entry, CUDA_ERROR_UNKNOWN, 1}});
        HostGraphs g;
        sdm_kernel* k = kernel_of(rt.get(), "scale");
        const CUstream stream = stream_at(0x1000);
        std::string message;
        CUgraph graph = g.captured(stream, [&] { CHECK(launch_scale(k, stream, &message) == SDM_ERROR_DRIVER); });
        CHECK_THAT(message, Catch::Contains(entry) && Catch::Contains("module kernels"));
        CHECK(fake_calls("cuLaunchKernelEx") == 0);
        CHECK(fake_calls("@user_objects") == 0);  // a user object made is released again
        REQUIRE(g.destroy(graph) == CUDA_SUCCESS);
        // Nothing holds the module: it retires as usual.
        reload_sm90a(rt.get(), dir);
        REQUIRE(sdm_kernel_release(rt.get(), k, nullptr) == SDM_OK);
        CHECK(fake_calls("@modules") == 0);
        CHECK(count_containing(log, "CUDA graph(s)") == 0);
    }
}

TEST_CASE("a driver older than 12.3 launches outside capture and refuses a launch into one", "[graphs]") {
    TempDir dir;
    RuntimePtr rt = mounted_sm90(dir, nullptr, {}, 12020);
    HostGraphs g;
    sdm_kernel* k = kernel_of(rt.get(), "scale");
    REQUIRE(launch_scale(k, stream_at(0x2000)) == SDM_OK);
    CHECK(fake_calls("cuStreamGetCaptureInfo") == 0);
    const CUstream stream = stream_at(0x1000);
    std::string message;
    CUgraph graph = g.captured(stream, [&] { CHECK(launch_scale(k, stream, &message) == SDM_ERROR_GRAPH_CAPTURE); });
    CHECK_THAT(message, Catch::Contains("12.3 or newer") && Catch::Contains("module kernels"));
    CHECK(fake_calls("cuLaunchKernelEx") == 1);
    REQUIRE(g.destroy(graph) == CUDA_SUCCESS);
    REQUIRE(sdm_kernel_release(rt.get(), k, nullptr) == SDM_OK);
}

TEST_CASE("a runtime destroyed while a graph holds its module leaves the module loaded, and the graph replays", "[graphs]") {
    fake_reset();
    TempDir dir;
    std::vector<std::string> log;
    RuntimePtr rt = mounted_sm90(dir, &log);
    HostGraphs g;
    sdm_kernel* k = kernel_of(rt.get(), "scale");
    // The host's own retain of the primary context (as the CUDA runtime holds one): the context,
    // and the graph in it, outlive sdm's release.
    REQUIRE(g.cu.make_current(0));
    const CUstream stream = stream_at(0x1000);
    CUgraph graph = g.captured(stream, [&] { REQUIRE(launch_scale(k, stream) == SDM_OK); });
    CUgraphExec exec = g.exec_of(graph);
    REQUIRE(sdm_kernel_release(rt.get(), k, nullptr) == SDM_OK);
    rt.reset();
    CHECK(fake_calls("@modules") == 1);
    CHECK(count_containing(log, "module kernels stays loaded after its runtime is destroyed: 1 CUDA graph(s)") == 1);
    CHECK(g.launch(exec, stream) == CUDA_SUCCESS);
    // The graphs go after the runtime: their user objects' destructors touch only what they own.
    REQUIRE(g.destroy_exec(exec) == CUDA_SUCCESS);
    REQUIRE(g.destroy(graph) == CUDA_SUCCESS);
    CHECK(fake_calls("@user_objects") == 0);
    fake_reset();  // the module goes with the context, as on the driver
}

TEST_CASE("without graph tracking a replay after the reload would hit an unloaded module: the fake says so", "[graphs]") {
    // The fake's model the tests above rely on: a graph of a launch made with the host's own
    // cuLaunchKernel (sdm cannot see it) fails to replay once its module is gone.
    TempDir dir;
    RuntimePtr rt = mounted_sm90(dir, nullptr);
    HostGraphs g;
    const auto launch = g.cu.get<decltype(&cuLaunchKernel)>("cuLaunchKernel");
    sdm_kernel* k = kernel_of(rt.get(), "scale");
    void* function = nullptr;
    REQUIRE(sdm_kernel_function(k, &function, nullptr) == SDM_OK);
    const CUstream stream = stream_at(0x1000);
    CUgraph graph = g.captured(stream, [&] {
        REQUIRE(launch(static_cast<CUfunction>(function), 1, 1, 1, 128, 1, 1, 0, stream, nullptr, nullptr) == CUDA_SUCCESS);
    });
    CUgraphExec exec = g.exec_of(graph);
    reload_sm90a(rt.get(), dir);
    REQUIRE(sdm_kernel_release(rt.get(), k, nullptr) == SDM_OK);
    CHECK(fake_calls("@modules") == 0);
    CHECK(g.launch(exec, stream) == CUDA_ERROR_INVALID_HANDLE);
    REQUIRE(g.destroy_exec(exec) == CUDA_SUCCESS);
    REQUIRE(g.destroy(graph) == CUDA_SUCCESS);
}

TEST_CASE("threads capturing and replaying while another reloads: no replay finds its module unloaded", "[graphs][concurrency]") {
    TempDir dir;
    RuntimePtr rt = mounted_sm90(dir, nullptr);
    HostGraphs g;
    const auto v1 = make_archive("kernels", {"sm_90"});
    const auto v2 = make_archive("kernels", {"sm_90a"});
    std::atomic<bool> stop{false};
    std::atomic<int> failed{0}, replays{0};
    // Each thread: fetch, capture one launch, release the kernel (the graph alone holds its module
    // now), replay the graph a few times, destroy it. No Catch2 macro runs off the main thread.
    const auto capture_and_replay = [&](CUstream stream) {
        while (!stop.load()) {
            sdm_kernel* k = nullptr;
            if (sdm_kernel_get(rt.get(), 0, "scale", nullptr, &k, nullptr) != SDM_OK) {
                ++failed;
                continue;
            }
            sdm_plan plan{};
            plan.struct_size = sizeof plan;
            plan.grid = 1, plan.block = 128;
            void* y = nullptr;
            void* args[] = {&y};
            CUgraph graph = nullptr;
            CUgraphExec exec = nullptr;
            const bool captured = g.begin(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) == CUDA_SUCCESS &&
                                  sdm_launch(k, &plan, stream, args, 1, nullptr) == SDM_OK && g.end(stream, &graph) == CUDA_SUCCESS &&
                                  g.instantiate(&exec, graph, 0) == CUDA_SUCCESS;
            if (!captured || sdm_kernel_release(rt.get(), k, nullptr) != SDM_OK) ++failed;
            for (int r = 0; captured && r < 3; ++r, ++replays) {
                if (g.launch(exec, stream) != CUDA_SUCCESS) ++failed;
                std::this_thread::yield();
            }
            if (exec != nullptr) g.destroy_exec(exec);
            if (graph != nullptr) g.destroy(graph);
        }
    };
    std::vector<std::thread> threads;
    for (uintptr_t t = 0; t < 4; ++t) threads.emplace_back(capture_and_replay, stream_at(0x1000 + t));
    for (int i = 0; i < 40; ++i) {
        drop(dir.path + "/kernels.sdma", i % 2 == 0 ? v2 : v1);
        uint32_t reloaded = 0;
        CHECK(sdm_runtime_reload(rt.get(), &reloaded, nullptr) == SDM_OK);
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    stop = true;
    for (auto& t : threads) t.join();
    CHECK(failed.load() == 0);
    CHECK(replays.load() > 0);
    CHECK(fake_calls("@user_objects") == 0);
    CHECK(fake_calls("@graphs") == 0);
    rt.reset();
    CHECK(fake_calls("@modules") == 0);  // every graph gone: every module unloaded
}
