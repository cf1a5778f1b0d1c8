// The SDM kernels' bench (bench/kernel_bench.sh drives it; GPU only). For each dtype (fp32, bf16),
// D (256, 1024, 4096) and values table (1 GiB, 8 GiB), with B = 16,384 and K = 32, uniformly random
// int32 indices: the median time of sdm_gather and sdm_scatter_delta_atomic through sdm_launch, and
// the bytes each must move at least (read: the B*K gathered rows and the output; write: each B*K
// row read and written back, and the deltas). Also the device-to-device copy bandwidth of a 1 GiB
// cuMemcpyDtoD (2 bytes moved per byte copied). One line per measurement, tab-separated:
//   copy  -  -  -  bytes  ms  GB/s
//   op  dtype  D  table_GiB  bytes  ms  GB/s
#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include <cuda.h>
#include <dlfcn.h>

#include "sdm/sdm.h"

namespace {

template <typename F>
F fn(void* lib, const char* name) {
    using GetProc = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
    static GetProc gpa = reinterpret_cast<GetProc>(dlsym(lib, "cuGetProcAddress_v2"));
    void* f = nullptr;
    gpa(name, &f, 12000, 0, nullptr);
    return reinterpret_cast<F>(f);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: kernel_bench KERNELS_ARCHIVE [REPS]\n");
        return 2;
    }
    const int reps = argc > 2 ? std::atoi(argv[2]) : 15;
    void* lib = dlopen("libcuda.so.1", RTLD_NOW);
    if (lib == nullptr || fn<decltype(&cuInit)>(lib, "cuInit")(0) != CUDA_SUCCESS) return 77;
    const auto retain = fn<decltype(&cuDevicePrimaryCtxRetain)>(lib, "cuDevicePrimaryCtxRetain");
    const auto push = fn<decltype(&cuCtxPushCurrent)>(lib, "cuCtxPushCurrent");
    const auto alloc = fn<decltype(&cuMemAlloc)>(lib, "cuMemAlloc");
    const auto mfree = fn<decltype(&cuMemFree)>(lib, "cuMemFree");
    const auto htod = fn<decltype(&cuMemcpyHtoD)>(lib, "cuMemcpyHtoD");
    const auto dtod = fn<decltype(&cuMemcpyDtoD)>(lib, "cuMemcpyDtoD");
    const auto memset32 = fn<decltype(&cuMemsetD32)>(lib, "cuMemsetD32");
    const auto event_create = fn<decltype(&cuEventCreate)>(lib, "cuEventCreate");
    const auto event_record = fn<decltype(&cuEventRecord)>(lib, "cuEventRecord");
    const auto event_sync = fn<decltype(&cuEventSynchronize)>(lib, "cuEventSynchronize");
    const auto elapsed = fn<decltype(&cuEventElapsedTime)>(lib, "cuEventElapsedTime");
    CUcontext ctx = nullptr;
    retain(&ctx, 0);
    push(ctx);
    CUevent start = nullptr, stop = nullptr;
    event_create(&start, CU_EVENT_DEFAULT);
    event_create(&stop, CU_EVENT_DEFAULT);
    const auto time_ms = [&](auto&& body) {
        body();  // warm
        std::vector<float> ms;
        for (int r = 0; r < reps; ++r) {
            event_record(start, nullptr);
            body();
            event_record(stop, nullptr);
            event_sync(stop);
            float t = 0;
            elapsed(&t, start, stop);
            ms.push_back(t);
        }
        std::sort(ms.begin(), ms.end());
        return static_cast<double>(ms[ms.size() / 2]);
    };

    // The copy bandwidth of this run.
    const size_t copy_bytes = size_t{1} << 30;
    CUdeviceptr a = 0, b = 0;
    alloc(&a, copy_bytes);
    alloc(&b, copy_bytes);
    memset32(a, 0x3f800000u, copy_bytes / 4);
    const double copy_ms = time_ms([&] { dtod(b, a, copy_bytes); });
    std::printf("copy\t-\t-\t-\t%zu\t%.4f\t%.1f\n", 2 * copy_bytes, copy_ms, 2.0 * copy_bytes / copy_ms / 1e6);
    mfree(a);
    mfree(b);

    sdm_runtime_params p{};
    p.struct_size = sizeof p;
    p.flags = SDM_RUNTIME_NO_EMBEDDED_ARCHIVE;
    sdm_runtime* rt = nullptr;
    sdm_error* e = nullptr;
    if (sdm_runtime_create(&p, &rt, &e) != SDM_OK || sdm_archive_mount_file(rt, argv[1], &e) != SDM_OK) {
        std::fprintf(stderr, "kernel_bench: %s\n", sdm_error_message(e));
        return 1;
    }
    int B = 16384, K = 32;
    std::mt19937_64 rng(1);
    for (const bool bf16 : {false, true})
        for (const int table_gib : {1, 8})
            for (int D : {256, 1024, 4096}) {
                const size_t es = bf16 ? 2 : 4;
                const int64_t rows = static_cast<int64_t>((size_t{1} << 30) * table_gib / (static_cast<size_t>(D) * es));
                std::vector<int32_t> idx(static_cast<size_t>(B) * K);
                std::uniform_int_distribution<int64_t> pick(0, rows - 1);
                for (auto& x : idx) x = static_cast<int32_t>(pick(rng));
                std::vector<float> w(idx.size(), 0.5f);
                CUdeviceptr dv = 0, di = 0, dw = 0, dout = 0, ddelta = 0;
                alloc(&dv, static_cast<size_t>(rows) * D * es);
                alloc(&di, idx.size() * 4);
                alloc(&dw, w.size() * 4);
                alloc(&dout, static_cast<size_t>(B) * D * es);
                alloc(&ddelta, static_cast<size_t>(B) * D * es);
                memset32(dv, bf16 ? 0x3f803f80u : 0x3f800000u, static_cast<size_t>(rows) * D * es / 4);
                memset32(ddelta, bf16 ? 0x3c003c00u : 0x3a800000u, static_cast<size_t>(B) * D * es / 4);
                htod(di, idx.data(), idx.size() * 4);
                htod(dw, w.data(), w.size() * 4);
                const std::string v = bf16 ? "bf16" : "f32";
                const int64_t problem[] = {B, K, D};
                CUdeviceptr no_check = 0;
                int64_t nrows = rows;
                float lr = 1e-3f;
                for (const bool write : {false, true}) {
                    sdm_kernel* k = nullptr;
                    const std::string name = (write ? "sdm_scatter_delta_atomic_" : "sdm_gather_") + v + "_i32";
                    sdm_plan plan{};
                    plan.struct_size = sizeof plan;
                    if (sdm_kernel_get(rt, 0, name.c_str(), nullptr, &k, &e) != SDM_OK || sdm_plan_select(k, problem, 3, &plan, &e) != SDM_OK) {
                        std::fprintf(stderr, "kernel_bench: %s: %s\n", name.c_str(), sdm_error_message(e));
                        return 1;
                    }
                    void* gargs[] = {&dv, &nrows, &di, &dw, &dout, &B, &K, &D, &no_check};
                    void* sargs[] = {&dv, &nrows, &di, &dw, &ddelta, &lr, &B, &K, &D, &no_check};
                    const double ms = time_ms([&] { (void)sdm_launch(k, &plan, nullptr, write ? sargs : gargs, write ? 10u : 9u, nullptr); });
                    const size_t rows_moved = static_cast<size_t>(B) * K * D * es;
                    const size_t bytes = write ? 2 * rows_moved + static_cast<size_t>(B) * D * es : rows_moved + static_cast<size_t>(B) * D * es;
                    std::printf("%s\t%s\t%d\t%d\t%zu\t%.4f\t%.1f\n", write ? "write" : "read", v.c_str(), D, table_gib, bytes, ms, bytes / ms / 1e6);
                    std::fflush(stdout);
                }
                for (const CUdeviceptr d : {dv, di, dw, dout, ddelta}) mfree(d);
            }
    sdm_runtime_destroy(rt);
    return 0;
}
