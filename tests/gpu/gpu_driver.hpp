// The few driver calls the GPU tests make themselves (through examples/cuda_driver.hpp, as a host
// makes them), and the tests' check-and-count.
#pragma once

#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <string>
#include <vector>

#include "cuda_driver.hpp"
#include "sdm/sdm.h"

namespace sdm::gpu_test {

inline int failures = 0;
inline void check(bool ok, const std::string& what) {
    std::printf("%s: %s\n", ok ? "ok" : "FAIL", what.c_str());
    if (!ok) ++failures;
}

// A runtime without the embedded archive, with a fresh cache of its own (/tmp/sdm-gpu-TAG-XXXXXX)
// and `archive` mounted; null (the error in *e, FAIL printed) when either fails.
inline sdm_runtime* runtime_with(const char* archive, const char* tag, sdm_error** e) {
    std::string pattern = std::string("/tmp/sdm-gpu-") + tag + "-XXXXXX";
    const char* made = ::mkdtemp(pattern.data());
    const std::string cache = made != nullptr ? made : "/tmp";
    sdm_runtime_params p{};
    p.struct_size = sizeof p;
    p.flags = SDM_RUNTIME_NO_EMBEDDED_ARCHIVE;
    p.cache_dir = cache.c_str();
    sdm_runtime* rt = nullptr;
    if (sdm_runtime_create(&p, &rt, e) != SDM_OK || sdm_archive_mount_file(rt, archive, e) != SDM_OK) {
        std::printf("FAIL: %s\n", sdm_error_message(*e));
        sdm_runtime_destroy(rt);
        return nullptr;
    }
    return rt;
}

// The driver for the tests' own calls (examples/cuda_driver.hpp).
struct Cuda : sdm_host::CudaDriver {
    // Loads libcuda, initialises it and makes device 0's primary context current; false when
    // there is no driver or device (the test then exits 77: skipped).
    bool open_device0() { return open() && make_current(0); }
};

// What a test prints and returns without a driver or device: 77, Meson's "skipped".
inline int skipped() {
    std::printf("skipped: no CUDA driver or device\n");
    return 77;
}

// The memory and stream calls the tests make around their launches, looked up once.
struct MemoryCalls {
    decltype(&cuMemAlloc) alloc;
    decltype(&cuMemFree) mfree;
    decltype(&cuMemcpyHtoD) htod;
    decltype(&cuMemcpyDtoH) dtoh;
    decltype(&cuMemsetD32) memset32;
    decltype(&cuStreamCreate) stream_create;
    decltype(&cuStreamSynchronize) stream_sync;
    decltype(&cuCtxSynchronize) sync;
};
inline MemoryCalls memory_calls(sdm_host::CudaDriver& cuda) {
    return {cuda.get<decltype(&cuMemAlloc)>("cuMemAlloc"),       cuda.get<decltype(&cuMemFree)>("cuMemFree"),
            cuda.get<decltype(&cuMemcpyHtoD)>("cuMemcpyHtoD"),   cuda.get<decltype(&cuMemcpyDtoH)>("cuMemcpyDtoH"),
            cuda.get<decltype(&cuMemsetD32)>("cuMemsetD32"),     cuda.get<decltype(&cuStreamCreate)>("cuStreamCreate"),
            cuda.get<decltype(&cuStreamSynchronize)>("cuStreamSynchronize"), cuda.get<decltype(&cuCtxSynchronize)>("cuCtxSynchronize")};
}

// The test kernel `scale` (tests/data/kernels.cu: y *= factor) over 2^20 floats through sdm_launch
// in the context current now, every element checked; the plan is the manifest's, or one block of
// 256 threads per 256 elements for an archive whose manifest gives none. Checked under `what`.
inline void check_scale(sdm_host::CudaDriver& cuda, const sdm_kernel* k, const std::string& what) {
    [[maybe_unused]] const auto [alloc, mfree, htod, dtoh, memset32, stream_create, stream_sync, sync] = memory_calls(cuda);
    const int n = 1 << 20;
    std::vector<float> y(n), out(n, std::nanf(""));
    for (int i = 0; i < n; ++i) y[i] = static_cast<float>(i % 1000) * 0.25f - 100.f;
    CUdeviceptr dy = 0;
    bool ok = alloc(&dy, n * sizeof(float)) == CUDA_SUCCESS && htod(dy, y.data(), n * sizeof(float)) == CUDA_SUCCESS;
    sdm_plan plan{};
    plan.struct_size = sizeof plan;
    const int64_t problem = n;
    if (sdm_plan_select(k, &problem, 1, &plan, nullptr) != SDM_OK) {
        plan = sdm_plan{};
        plan.struct_size = sizeof plan;
        plan.grid = (n + 255) / 256;
        plan.block = 256;
        plan.cluster[0] = plan.cluster[1] = plan.cluster[2] = 1;
    }
    float factor = 3.f;
    int count = n;
    void* args[] = {&dy, &factor, &count};
    sdm_error* e = nullptr;
    ok = ok && sdm_launch(k, &plan, nullptr, args, 3, &e) == SDM_OK;
    ok = ok && sync() == CUDA_SUCCESS && dtoh(out.data(), dy, n * sizeof(float)) == CUDA_SUCCESS;
    int bad = 0;
    for (int i = 0; i < n; ++i) bad += !(std::fabs(out[i] - y[i] * 3.f) <= 1e-6f * std::fabs(y[i] * 3.f) + 1e-7f);
    if (dy != 0) mfree(dy);
    check(ok && bad == 0, what + ": scale ran, " + std::to_string(bad) + " wrong" + (e != nullptr ? std::string(": ") + sdm_error_message(e) : ""));
    sdm_error_destroy(e);
}

}  // namespace sdm::gpu_test
