// GPU test: a launch captured into a CUDA graph outlives a hot reload (exits 77 without a GPU).
// The test archive, copied to a file of its own and mounted; `scale` (y *= 3) captured with
// sdm_launch into a graph on a stream, instantiated and replayed; the file replaced by the same
// kernels stored uncompressed (golden/kernels-stored.sdma: another archive, so the reload replaces it)
// and the kernel released, so that its module retires; the graph replayed again, its output
// checked (y0 * 9: the old module's code still runs); the log says the module waits for the graph;
// the graph and its executable graph destroyed, the module unloads at a later release (the real
// driver runs the user object's destructor on a thread of its own, so the test polls for it).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gpu_driver.hpp"
#include "sdm/sdm.h"

using sdm::gpu_test::check;
using sdm::gpu_test::Cuda;
using sdm::gpu_test::memory_calls;
using sdm::gpu_test::skipped;
using sdm::gpu_test::failures;

namespace {

std::mutex log_mutex;
std::vector<std::string> log_lines;

void on_log(void*, sdm_log_level, const char* message, size_t length) {
    std::lock_guard lock(log_mutex);
    log_lines.emplace_back(message, length);
    std::printf("  log: %s\n", log_lines.back().c_str());
}

bool logged(const std::string& text) {
    std::lock_guard lock(log_mutex);
    for (const auto& line : log_lines)
        if (line.find(text) != std::string::npos) return true;
    return false;
}

// `archive` copied beside itself as `path` (a new file renamed over the old: what a deployment does).
void drop(const std::string& archive, const std::string& path) {
    std::filesystem::copy_file(archive, path + ".new", std::filesystem::copy_options::overwrite_existing);
    std::filesystem::rename(path + ".new", path);
}

}  // namespace

int main() {
    Cuda cuda;
    if (!cuda.open_device0()) return skipped();
    [[maybe_unused]] const auto [alloc, mfree, htod, dtoh, memset32, stream_create, stream_sync, sync] = memory_calls(cuda);
    const auto begin = cuda.get<decltype(&cuStreamBeginCapture)>("cuStreamBeginCapture");
    const auto end = cuda.get<decltype(&cuStreamEndCapture)>("cuStreamEndCapture");
    const auto instantiate = cuda.get<decltype(&cuGraphInstantiateWithFlags)>("cuGraphInstantiateWithFlags");
    const auto graph_launch = cuda.get<decltype(&cuGraphLaunch)>("cuGraphLaunch");
    const auto graph_destroy = cuda.get<decltype(&cuGraphDestroy)>("cuGraphDestroy");
    const auto exec_destroy = cuda.get<decltype(&cuGraphExecDestroy)>("cuGraphExecDestroy");
    const auto ctx_sync = cuda.get<decltype(&cuCtxSynchronize)>("cuCtxSynchronize");
    CUstream stream = nullptr;
    stream_create(&stream, CU_STREAM_NON_BLOCKING);

    char tmpl[] = "/tmp/sdm-gpu-graphs-XXXXXX";
    const std::string dir = ::mkdtemp(tmpl);
    const std::string file = dir + "/kernels.sdma";
    drop(SDM_TEST_ARCHIVE, file);
    sdm_runtime_params p{};
    p.struct_size = sizeof p;
    p.flags = SDM_RUNTIME_NO_EMBEDDED_ARCHIVE;
    p.cache_dir = dir.c_str();
    p.log_level = SDM_LOG_INFO;
    p.log_fn = on_log;
    sdm_runtime* rt = nullptr;
    sdm_error* e = nullptr;
    if (sdm_runtime_create(&p, &rt, &e) != SDM_OK || sdm_archive_mount_file(rt, file.c_str(), &e) != SDM_OK) {
        std::printf("FAIL: %s\n", sdm_error_message(e));
        return 1;
    }
    sdm_kernel* k = nullptr;
    check(sdm_kernel_get(rt, 0, "scale", nullptr, &k, nullptr) == SDM_OK, "fetch scale");

    const int n = 1 << 20;
    std::vector<float> y(n), out(n, std::nanf(""));
    for (int i = 0; i < n; ++i) y[i] = static_cast<float>(i % 1000) * 0.25f - 100.f;
    CUdeviceptr dy = 0;
    check(alloc(&dy, n * sizeof(float)) == CUDA_SUCCESS && htod(dy, y.data(), n * sizeof(float)) == CUDA_SUCCESS, "device memory");
    sdm_plan plan{};
    plan.struct_size = sizeof plan;
    plan.grid = (n + 255) / 256;
    plan.block = 256;
    plan.cluster[0] = plan.cluster[1] = plan.cluster[2] = 1;
    float factor = 3.f;
    int count = n;
    void* args[] = {&dy, &factor, &count};

    CUgraph graph = nullptr;
    CUgraphExec exec = nullptr;
    check(begin(stream, CU_STREAM_CAPTURE_MODE_GLOBAL) == CUDA_SUCCESS, "begin capture");
    const sdm_status launched = sdm_launch(k, &plan, stream, args, 3, &e);
    check(launched == SDM_OK, std::string("sdm_launch into the capture") + (launched == SDM_OK ? "" : std::string(": ") + sdm_error_message(e)));
    check(end(stream, &graph) == CUDA_SUCCESS && instantiate(&exec, graph, 0) == CUDA_SUCCESS, "end capture, instantiate");
    check(graph_launch(exec, stream) == CUDA_SUCCESS && stream_sync(stream) == CUDA_SUCCESS, "replay before the reload");

    drop((std::filesystem::path(SDM_TEST_ARCHIVE).parent_path() / "kernels-stored.sdma").string(), file);
    uint32_t reloaded = 0;
    check(sdm_runtime_reload(rt, &reloaded, nullptr) == SDM_OK && reloaded == 1, "the archive reloaded");
    check(sdm_kernel_release(rt, k, nullptr) == SDM_OK, "the old kernel released: its module retires");
    check(logged("module kernels of a replaced archive waits for 1 CUDA graph(s)"), "the log says the module waits for the graph");
    check(!logged("unloaded module kernels of a replaced archive"), "the module the graph captured is not unloaded");
    const CUresult replayed = graph_launch(exec, stream);
    const CUresult synced = stream_sync(stream);
    dtoh(out.data(), dy, n * sizeof(float));
    int bad = 0;
    for (int i = 0; i < n; ++i)
        if (!(std::fabs(out[i] - y[i] * 9.f) <= 1e-5f * std::fabs(y[i] * 9.f) + 1e-6f)) ++bad;
    check(replayed == CUDA_SUCCESS && synced == CUDA_SUCCESS && bad == 0,
          "replay after the reload: " + std::to_string(bad) + " wrong of " + std::to_string(n) + " (CUresult " + std::to_string(replayed) + ", " +
              std::to_string(synced) + ")");

    check(exec_destroy(exec) == CUDA_SUCCESS && graph_destroy(graph) == CUDA_SUCCESS, "graph and executable graph destroyed");
    ctx_sync();
    bool unloaded = false;
    for (int i = 0; i < 500 && !unloaded; ++i) {  // the driver runs the destructor on its own thread
        sdm_kernel* fresh = nullptr;
        if (sdm_kernel_get(rt, 0, "scale", nullptr, &fresh, nullptr) == SDM_OK) sdm_kernel_release(rt, fresh, nullptr);
        unloaded = logged("unloaded module kernels of a replaced archive");
        if (!unloaded) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    check(unloaded && logged("and no CUDA graph that captured it exists"), "the module unloads once the graphs are gone");
    mfree(dy);
    sdm_error_destroy(e);
    sdm_runtime_destroy(rt);
    std::filesystem::remove_all(dir);
    std::printf("%d failure(s)\n", failures);
    return failures == 0 ? 0 : 1;
}
