// A game-engine-style host of sdm (sdm.hpp): it owns its CUDA context (retains the device's primary
// context itself and hands it to sdm), routes sdm's log into its own logger, launches the SDM
// kernels every frame (the read, then the atomic write, on its own buffers), hot-reloads the
// kernels archive when its file changes (one stat per frame: sdm::Runtime::poll_archives), warms
// up everything else in the background while its frames run (sdm::Runtime::preload_async: the
// frame loop never waits for it), and reports what sdm holds (sdm::Runtime::footprint) and its
// worst frame time.
//
//   engine_host ARCHIVE [FRAMES [FRAME_MS [BUDGET_BYTES]]]
//
// With BUDGET_BYTES the runtime keeps its loaded modules within that much device memory: the least
// recently used idle ones are evicted and reload at their next use (the log says when).
// ARCHIVE is a kernels archive file (kernels.sdma) mounted over the one libsdm embeds: replace it
// (write a new file, rename it over) while the host runs and the next frame serves the new
// kernels. The CUDA driver is libcuda.so.1, or $SDM_CUDA_DRIVER (the fake driver in CI, where the
// kernels do not run: the frame loop, the log routing, the plans and the reloads do).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <cuda.h>

#include "cuda_driver.hpp"
#include "sdm/sdm.hpp"

namespace {

// The engine's logger: every subsystem's lines, one format, one lock.
class EngineLog {
public:
    void line(const char* system, const char* level, std::string_view text) {
        const std::lock_guard<std::mutex> lock(mu_);
        const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
        std::printf("[%8.3f] %-6s %-5s %.*s\n", t, system, level, static_cast<int>(text.size()), text.data());
        std::fflush(stdout);
    }

private:
    std::mutex mu_;
    const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

const char* level_name(sdm_log_level level) {
    switch (level) {
    case SDM_LOG_ERROR: return "error";
    case SDM_LOG_WARN: return "warn";
    case SDM_LOG_INFO: return "info";
    case SDM_LOG_DEBUG: return "debug";
    default: return "log";
    }
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: engine_host ARCHIVE [FRAMES [FRAME_MS [BUDGET_BYTES]]]\n");
        return 2;
    }
    const std::string archive = argv[1];
    const int frames = argc > 2 ? std::atoi(argv[2]) : 120;
    const int frame_ms = argc > 3 ? std::atoi(argv[3]) : 16;
    const uint64_t budget = argc > 4 ? std::strtoull(argv[4], nullptr, 10) : 0;
    EngineLog log;

    // The engine's own CUDA context.
    const char* driver_path = std::getenv("SDM_CUDA_DRIVER");
    sdm_host::CudaDriver cu;  // the driver entry points the engine uses itself (examples/cuda_driver.hpp)
    if (!cu.open(driver_path)) {
        log.line("engine", "error", "no CUDA driver or device: the engine needs a GPU (or SDM_CUDA_DRIVER)");
        return 1;
    }
    const auto retain = cu.get<decltype(&cuDevicePrimaryCtxRetain)>("cuDevicePrimaryCtxRetain");
    const auto release = cu.get<decltype(&cuDevicePrimaryCtxRelease)>("cuDevicePrimaryCtxRelease");
    const auto push = cu.get<decltype(&cuCtxPushCurrent)>("cuCtxPushCurrent");
    const auto alloc = cu.get<decltype(&cuMemAlloc)>("cuMemAlloc");
    const auto mfree = cu.get<decltype(&cuMemFree)>("cuMemFree");
    const auto htod = cu.get<decltype(&cuMemcpyHtoD)>("cuMemcpyHtoD");
    const auto memset32 = cu.get<decltype(&cuMemsetD32)>("cuMemsetD32");
    const auto sync = cu.get<decltype(&cuCtxSynchronize)>("cuCtxSynchronize");
    CUcontext ctx = nullptr;
    if (retain == nullptr || alloc == nullptr || retain(&ctx, 0) != CUDA_SUCCESS || push(ctx) != CUDA_SUCCESS) {
        log.line("engine", "error", "cannot set up the CUDA context of device 0");
        return 1;
    }

    // sdm, on that context, logging through the engine's logger.
    sdm::RuntimeOptions options;
    options.cuda_context = ctx;
    options.cuda_driver = driver_path != nullptr ? driver_path : "";
    options.log_level = SDM_LOG_INFO;
    options.device_memory_budget = budget;
    options.log = [&log](sdm_log_level level, std::string_view text) { log.line("sdm", level_name(level), text); };
    auto runtime = sdm::Runtime::create(options);
    if (!runtime) {
        log.line("engine", "error", runtime.error().message());
        return 1;
    }
    if (auto mounted = runtime->mount_file(archive); !mounted) {
        log.line("engine", "error", mounted.error().message());
        return 1;
    }

    // The engine's buffers: a values table, a batch of indices and weights, the read's output and
    // the write's deltas.
    int B = 256, K = 16, D = 256;
    int64_t rows = 4096;
    CUdeviceptr values = 0, idx = 0, w = 0, out = 0, delta = 0;
    std::vector<int32_t> host_idx(static_cast<size_t>(B) * K);
    std::vector<float> host_w(host_idx.size(), 1.0f / K);
    for (size_t i = 0; i < host_idx.size(); ++i) host_idx[i] = static_cast<int32_t>((i * 2654435761u) % static_cast<size_t>(rows));
    const bool allocated = alloc(&values, static_cast<size_t>(rows) * D * 4) == CUDA_SUCCESS && alloc(&idx, host_idx.size() * 4) == CUDA_SUCCESS &&
                           alloc(&w, host_w.size() * 4) == CUDA_SUCCESS && alloc(&out, static_cast<size_t>(B) * D * 4) == CUDA_SUCCESS &&
                           alloc(&delta, static_cast<size_t>(B) * D * 4) == CUDA_SUCCESS;
    if (!allocated || htod(idx, host_idx.data(), host_idx.size() * 4) != CUDA_SUCCESS || htod(w, host_w.data(), host_w.size() * 4) != CUDA_SUCCESS ||
        memset32(values, 0x3f800000u, static_cast<size_t>(rows) * D) != CUDA_SUCCESS || memset32(delta, 0x3c23d70au, static_cast<size_t>(B) * D) != CUDA_SUCCESS) {
        log.line("engine", "error", "cannot allocate or fill the engine's buffers");
        return 1;
    }

    // Everything else the archives serve, warmed up on sdm's threads behind the frames; the frame
    // loop only looks at its progress.
    auto warmup = runtime->preload_async(0, {}, 0, [&log](sdm_status status) {
        log.line("engine", status == SDM_OK ? "info" : "warn", std::string("background warm-up finished: ") + std::string(sdm_status_string(status)));
    });
    if (!warmup) log.line("engine", "warn", std::string("no background warm-up: ") + warmup.error().message());
    bool warm = !warmup;

    std::string serving;  // what served the read last frame
    int failed_frames = 0, reloads = 0;
    double worst_frame_ms = 0, worst_frame_ms_warming = 0;
    for (int frame = 0; frame < frames; ++frame) {
        const auto frame_start = std::chrono::steady_clock::now();
        if (auto reloaded = runtime->poll_archives(); !reloaded) {
            log.line("engine", "warn", "frame " + std::to_string(frame) + ": the new archive was refused, the old one keeps serving: " + reloaded.error().message());
        } else if (*reloaded > 0) {
            ++reloads;
            log.line("engine", "info", "frame " + std::to_string(frame) + ": reloaded " + std::to_string(*reloaded) + " archive(s)");
        }
        // Fetched every frame (a lookup once loaded) so that a reload takes effect at the next
        // frame; each Kernel drops its reference at the end of the frame.
        auto read = runtime->kernel_checked(0, "sdm_gather_f32_i32", "ptr,i64,ptr,ptr,ptr,i32,i32,i32,ptr");
        auto write = runtime->kernel_checked(0, "sdm_scatter_delta_atomic_f32_i32", "ptr,i64,ptr,ptr,ptr,f32,i32,i32,i32,ptr");
        if (!read || !write) {
            log.line("engine", "error", "frame " + std::to_string(frame) + ": " + (read ? write : read).error().message());
            ++failed_frames;
            continue;
        }
        auto info = read->info();
        auto plan = read->plan({B, K, D, rows});
        auto write_plan = write->plan({B, K, D, rows});
        CUdeviceptr no_check = 0;
        float lr = 0.01f;
        sdm::Status launched = plan ? read->launch(*plan, nullptr, {&values, &rows, &idx, &w, &out, &B, &K, &D, &no_check}) : sdm::Status(plan.error());
        if (launched && write_plan) launched = write->launch(*write_plan, nullptr, {&values, &rows, &idx, &w, &delta, &lr, &B, &K, &D, &no_check});
        else if (launched) launched = write_plan.error();
        const CUresult synced = sync();
        if (!launched || synced != CUDA_SUCCESS) {
            log.line("engine", "error", "frame " + std::to_string(frame) + ": " + (launched ? "the frame's kernels failed" : launched.error().message()));
            ++failed_frames;
        }
        if (info) {
            const std::string now = info->archive + " (" + (info->image_kind == 1 ? "cubin sm_" : "PTX for sm_") + std::to_string(info->loaded_sm) + ")";
            if (now != serving)
                log.line("engine", "info", "frame " + std::to_string(frame) + ": sdm_gather_f32_i32 from " + now + ", grid " +
                                               std::to_string(plan ? plan->grid : 0) + " x " + std::to_string(plan ? plan->block : 0));
            serving = now;
        }
        // The frame's own work, before it sleeps: what a warm-up must not stretch.
        const double work_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - frame_start).count();
        worst_frame_ms = std::max(worst_frame_ms, work_ms);
        if (!warm) {
            worst_frame_ms_warming = std::max(worst_frame_ms_warming, work_ms);
            auto progress = warmup->progress();
            if (progress && progress->total > 0 && progress->done == progress->total) {
                warm = true;
                log.line("engine", "info", "frame " + std::to_string(frame) + ": warm, " + std::to_string(progress->total) + " module(s) loaded in the background");
            }
        }
        std::this_thread::sleep_until(frame_start + std::chrono::milliseconds(frame_ms));
    }
    if (warmup) (void)warmup->wait(60000);  // a short run may end before the warm-up did
    if (auto held = runtime->footprint())
        log.line("engine", "info", "sdm holds " + std::to_string(held->module_count) + " module(s), " + std::to_string(held->device_bytes) +
                                       " B of device memory (as their images declare it), " + std::to_string(held->host_bytes) + " B of host memory for them");
    char worst[160];
    std::snprintf(worst, sizeof worst, "worst frame: %.3f ms of work (%.3f ms while the warm-up ran)", worst_frame_ms, worst_frame_ms_warming);
    log.line("engine", "info", worst);
    log.line("engine", "info", std::to_string(frames) + " frames, " + std::to_string(failed_frames) + " failed, " + std::to_string(reloads) + " reload(s)");
    for (const CUdeviceptr p : {values, idx, w, out, delta}) mfree(p);
    runtime = sdm::Runtime();  // sdm first: it holds modules in the engine's context
    release(0);
    return failed_frames == 0 ? 0 : 1;
}
