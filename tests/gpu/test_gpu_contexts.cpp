// GPU test: the contexts a host chooses, with the real driver (the paths tests/runtime/device/test_context_choice.cpp
// walks on the fake). A context of the host's own from cuCtxCreate, given as device 0's
// (device_contexts): sdm works in it and leaves the primary context inactive. The same context
// and then a green context (a split of the SMs, cuCtxFromGreenCtx) made current with the runtime
// following the current context: a kernel fetched and run in each, the image loaded once as a
// library and shared (the debug log says which load reused it), a launch in the wrong context
// refused. Every run checks its output. Exits 77 without a GPU.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <cuda.h>
#include <unistd.h>

#include "gpu_driver.hpp"
#include "sdm/sdm.h"

using sdm::gpu_test::check;
using sdm::gpu_test::Cuda;
using sdm::gpu_test::failures;

namespace {

std::vector<std::string> g_log;
void keep_log(void*, sdm_log_level, const char* message, size_t) { g_log.emplace_back(message); }
int logged(const std::string& text) {
    int n = 0;
    for (const auto& line : g_log) n += line.find(text) != std::string::npos;
    return n;
}

}  // namespace

int main() {
    Cuda cuda;
    if (!cuda.open()) {
        std::printf("skipped: no CUDA driver, or cuInit failed (no device?)\n");
        return 77;
    }
    constexpr int kV13 = 13000;
    const auto device_get = cuda.get<decltype(&cuDeviceGet)>("cuDeviceGet");
    const auto ctx_create = cuda.get<decltype(&cuCtxCreate)>("cuCtxCreate", kV13);  // cuCtxCreate_v4
    const auto ctx_destroy = cuda.get<decltype(&cuCtxDestroy)>("cuCtxDestroy");
    const auto push = cuda.get<decltype(&cuCtxPushCurrent)>("cuCtxPushCurrent");
    const auto pop = cuda.get<decltype(&cuCtxPopCurrent)>("cuCtxPopCurrent");
    const auto primary_state = cuda.get<decltype(&cuDevicePrimaryCtxGetState)>("cuDevicePrimaryCtxGetState");
    const auto get_resource = cuda.get<decltype(&cuDeviceGetDevResource)>("cuDeviceGetDevResource", kV13);
    const auto split = cuda.get<decltype(&cuDevSmResourceSplitByCount)>("cuDevSmResourceSplitByCount", kV13);
    const auto make_desc = cuda.get<decltype(&cuDevResourceGenerateDesc)>("cuDevResourceGenerateDesc", kV13);
    const auto green_create = cuda.get<decltype(&cuGreenCtxCreate)>("cuGreenCtxCreate", kV13);
    const auto green_destroy = cuda.get<decltype(&cuGreenCtxDestroy)>("cuGreenCtxDestroy", kV13);
    const auto from_green = cuda.get<decltype(&cuCtxFromGreenCtx)>("cuCtxFromGreenCtx", kV13);
    CUdevice dev = 0;
    if (device_get == nullptr || device_get(&dev, 0) != CUDA_SUCCESS) return 77;
    check(ctx_create != nullptr && ctx_destroy != nullptr && primary_state != nullptr, "the driver has cuCtxCreate (v4), cuCtxDestroy, cuDevicePrimaryCtxGetState");
    if (failures) return 1;
    const std::string cache = "/tmp/sdm-gpu-contexts-" + std::to_string(getpid());

    const auto scaled = [&](const sdm_kernel* k, const std::string& what) { sdm::gpu_test::check_scale(cuda, k, what); };
    const auto make_runtime = [&](sdm_runtime_params p) {
        p.struct_size = sizeof p;
        p.flags |= SDM_RUNTIME_NO_EMBEDDED_ARCHIVE;
        p.cache_dir = cache.c_str();
        p.log_level = SDM_LOG_DEBUG;
        p.log_fn = keep_log;
        sdm_runtime* rt = nullptr;
        sdm_error* e = nullptr;
        check(sdm_runtime_create(&p, &rt, &e) == SDM_OK, std::string("create a runtime ") + sdm_error_message(e));
        sdm_error_destroy(e);
        if (rt != nullptr) check(sdm_archive_mount_file(rt, SDM_TEST_ARCHIVE, nullptr) == SDM_OK, "mount the test archive");
        return rt;
    };
    const auto fetch = [&](sdm_runtime* rt, std::string* message = nullptr) {
        sdm_kernel* k = nullptr;
        sdm_error* e = nullptr;
        if (sdm_kernel_get(rt, 0, "scale", nullptr, &k, &e) != SDM_OK) k = nullptr;
        if (message != nullptr) *message = sdm_error_message(e);
        sdm_error_destroy(e);
        return k;
    };

    CUcontext own = nullptr;
    check(ctx_create(&own, nullptr, 0, dev) == CUDA_SUCCESS, "cuCtxCreate: a context of the host's own on device 0");
    CUcontext was = nullptr;
    pop(&was);  // cuCtxCreate made it current: the first case must not lean on that
    {
        void* contexts[] = {own};
        sdm_runtime_params p{};
        p.device_contexts = contexts;
        p.device_context_count = 1;
        sdm_runtime* rt = make_runtime(p);
        const sdm_kernel* k = rt != nullptr ? fetch(rt) : nullptr;
        check(k != nullptr, "device_contexts: scale fetched in the host's cuCtxCreate context");
        unsigned flags = 0;
        int active = 1;
        check(primary_state(dev, &flags, &active) == CUDA_SUCCESS && active == 0, "device_contexts: sdm left device 0's primary context inactive");
        push(own);
        if (k != nullptr) scaled(k, "device_contexts, cuCtxCreate context");
        pop(&was);
        sdm_runtime_destroy(rt);
    }
    {
        sdm_runtime_params p{};
        p.flags = SDM_RUNTIME_CURRENT_CONTEXT;
        g_log.clear();
        sdm_runtime* rt = make_runtime(p);
        std::string message;
        const bool none_refused = rt != nullptr && fetch(rt, &message) == nullptr && message.find("no CUDA context is current") != std::string::npos;
        check(none_refused, "current context: none current is refused: " + message);
        push(own);
        const sdm_kernel* in_own = rt != nullptr ? fetch(rt) : nullptr;
        check(in_own != nullptr, "current context: scale fetched in the cuCtxCreate context");
        if (in_own != nullptr) scaled(in_own, "current context, cuCtxCreate context");
        pop(&was);
        // A green context: half the SMs (at least 8), made current as a CUcontext.
        CUdevResource all{}, part{}, rest{};
        unsigned groups = 1;
        CUdevResourceDesc desc = nullptr;
        CUgreenCtx green = nullptr;
        CUcontext green_ctx = nullptr;
        const bool made = get_resource != nullptr && split != nullptr && make_desc != nullptr && green_create != nullptr && from_green != nullptr &&
                          get_resource(dev, &all, CU_DEV_RESOURCE_TYPE_SM) == CUDA_SUCCESS &&
                          split(&part, &groups, &all, &rest, 0, std::max(8u, all.sm.smCount / 2)) == CUDA_SUCCESS && groups == 1 &&
                          make_desc(&desc, &part, 1) == CUDA_SUCCESS && green_create(&green, desc, dev, CU_GREEN_CTX_DEFAULT_STREAM) == CUDA_SUCCESS &&
                          from_green(&green_ctx, green) == CUDA_SUCCESS;
        check(made, "a green context of " + std::to_string(part.sm.smCount) + " of " + std::to_string(all.sm.smCount) + " SMs");
        if (made && rt != nullptr) {
            push(green_ctx);
            const sdm_kernel* in_green = fetch(rt);
            check(in_green != nullptr && in_green != in_own, "current context: scale fetched in the green context, its own handle");
            if (in_green != nullptr) scaled(in_green, "current context, green context");
            sdm_error* e = nullptr;
            sdm_plan plan{};
            plan.struct_size = sizeof plan;
            const int64_t problem = 1024;
            void* y = nullptr;
            float factor = 1.f;
            int count = 0;
            void* args[] = {&y, &factor, &count};
            const sdm_status wrong =
                in_own != nullptr && sdm_plan_select(in_own, &problem, 1, &plan, nullptr) == SDM_OK ? sdm_launch(in_own, &plan, nullptr, args, 3, &e) : SDM_OK;
            check(wrong == SDM_ERROR_MISMATCH, std::string("current context: a handle of another context is refused at launch: ") + sdm_error_message(e));
            sdm_error_destroy(e);
            pop(&was);
        }
        check(logged("library (loaded before)") >= 1, "the image was loaded once, as a library, and shared by the contexts (" +
                                                          std::to_string(logged("library (loaded before)")) + " reuse(s) logged)");
        sdm_runtime_destroy(rt);
        if (green != nullptr) green_destroy(green);
    }
    ctx_destroy(own);
    std::filesystem::remove_all(cache);
    std::printf("%d failure(s)\n", failures);
    return failures == 0 ? 0 : 1;
}
