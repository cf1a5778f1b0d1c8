// The SDM kernels' bench (bench/kernel_bench.sh drives it; GPU only). For each dtype (fp32, bf16),
// D (256, 1024, 4096) and values table (32 MiB: inside L2; 1 GiB; 8 GiB), with B = 16,384 and
// K = 32, uniformly random int32 indices: the median time, through sdm_launch with the manifest's
// plans, of the read (sdm_gather), the atomic write (sdm_scatter_delta_atomic) and the
// deterministic write (sdm::GroupedWrite: keys, merge passes, grouped apply, all timed), and the
// bytes each must move at least (read: the B*K gathered rows and the output; write: each B*K row
// read and written back, and the deltas). With the two cubins of bench/gather_staged.cu, also the
// read staged through shared memory by the copy layer's modern side (read-bulk) and portable side
// (read-cp.async). First the device-to-device copy bandwidth of a 1 GiB cuMemcpyDtoD (2 bytes moved
// per byte copied). One line per measurement, tab-separated:
//   copy  -  -  -  bytes  ms  GB/s
//   op  dtype  D  table_MiB  bytes  ms  GB/s
#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include <cuda.h>
#include <dlfcn.h>

#include "cuda_driver.hpp"
#include "sdm/sdm.h"
#include "sdm/sdm_kernels.hpp"

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: kernel_bench KERNELS_ARCHIVE [REPS [STAGED_BULK_CUBIN STAGED_CP_ASYNC_CUBIN]]\n");
        return 2;
    }
    const int reps = argc > 2 ? std::atoi(argv[2]) : 15;
    sdm_host::CudaDriver cu;
    if (!cu.open()) return 77;
    const auto retain = cu.get<decltype(&cuDevicePrimaryCtxRetain)>("cuDevicePrimaryCtxRetain");
    const auto push = cu.get<decltype(&cuCtxPushCurrent)>("cuCtxPushCurrent");
    const auto alloc = cu.get<decltype(&cuMemAlloc)>("cuMemAlloc");
    const auto mfree = cu.get<decltype(&cuMemFree)>("cuMemFree");
    const auto htod = cu.get<decltype(&cuMemcpyHtoD)>("cuMemcpyHtoD");
    const auto dtod = cu.get<decltype(&cuMemcpyDtoD)>("cuMemcpyDtoD");
    const auto memset32 = cu.get<decltype(&cuMemsetD32)>("cuMemsetD32");
    const auto event_create = cu.get<decltype(&cuEventCreate)>("cuEventCreate");
    const auto event_record = cu.get<decltype(&cuEventRecord)>("cuEventRecord");
    const auto event_sync = cu.get<decltype(&cuEventSynchronize)>("cuEventSynchronize");
    const auto elapsed = cu.get<decltype(&cuEventElapsedTime)>("cuEventElapsedTime");
    const auto load_module = cu.get<decltype(&cuModuleLoad)>("cuModuleLoad");
    const auto get_function = cu.get<decltype(&cuModuleGetFunction)>("cuModuleGetFunction");
    const auto set_attribute = cu.get<decltype(&cuFuncSetAttribute)>("cuFuncSetAttribute");
    const auto launch_kernel = cu.get<decltype(&cuLaunchKernel)>("cuLaunchKernel");
    const auto occupancy = cu.get<decltype(&cuOccupancyMaxActiveBlocksPerMultiprocessor)>("cuOccupancyMaxActiveBlocksPerMultiprocessor");
    const auto attribute = cu.get<decltype(&cuDeviceGetAttribute)>("cuDeviceGetAttribute");
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

    sdm::RuntimeOptions options;
    options.flags = SDM_RUNTIME_NO_EMBEDDED_ARCHIVE;
    auto runtime = sdm::Runtime::create(options);
    const sdm::Status mounted = runtime ? runtime->mount_file(argv[1]) : sdm::Status(runtime.error());
    if (!mounted) {
        std::fprintf(stderr, "kernel_bench: %s\n", mounted.error().message());
        return 1;
    }
    sdm_runtime* rt = runtime->get();
    sdm_error* e = nullptr;
    // The staged reads (bench/gather_staged.cu), loaded by the driver directly.
    struct Staged {
        const char* op;
        CUmodule module = nullptr;
    };
    std::vector<Staged> staged;
    if (argc > 4) staged = {{"read-bulk"}, {"read-cp.async"}};
    for (size_t i = 0; i < staged.size(); ++i)
        if (load_module(&staged[i].module, argv[3 + i]) != CUDA_SUCCESS) {
            std::fprintf(stderr, "kernel_bench: cannot load %s\n", argv[3 + i]);
            return 1;
        }
    int sms = 0;
    attribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0);
    int B = 16384, K = 32;
    std::mt19937_64 rng(1);
    CUdeviceptr workspace = 0;
    alloc(&workspace, sdm::GroupedWrite::workspace_bytes(B, K));
    for (const bool bf16 : {false, true})
        for (const int table_mib : {32, 1024, 8192})
            for (int D : {256, 1024, 4096}) {
                const size_t es = bf16 ? 2 : 4;
                const int64_t rows = static_cast<int64_t>((size_t{1} << 20) * table_mib / (static_cast<size_t>(D) * es));
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
                const int64_t problem[] = {B, K, D, rows};
                CUdeviceptr no_check = 0;
                int64_t nrows = rows;
                float lr = 1e-3f;
                const size_t rows_moved = static_cast<size_t>(B) * K * D * es;
                const size_t read_bytes = rows_moved + static_cast<size_t>(B) * D * es, write_bytes = 2 * rows_moved + static_cast<size_t>(B) * D * es;
                const auto report = [&](const char* op, size_t bytes, double ms) {
                    std::printf("%s\t%s\t%d\t%d\t%zu\t%.4f\t%.1f\n", op, v.c_str(), D, table_mib, bytes, ms, bytes / ms / 1e6);
                    std::fflush(stdout);
                };
                for (const bool write : {false, true}) {
                    sdm_kernel* k = nullptr;
                    const std::string name = (write ? "sdm_scatter_delta_atomic_" : "sdm_gather_") + v + "_i32";
                    sdm_plan plan{};
                    plan.struct_size = sizeof plan;
                    if (sdm_kernel_get(rt, 0, name.c_str(), nullptr, &k, &e) != SDM_OK || sdm_plan_select(k, problem, 4, &plan, &e) != SDM_OK) {
                        std::fprintf(stderr, "kernel_bench: %s: %s\n", name.c_str(), sdm_error_message(e));
                        return 1;
                    }
                    void* gargs[] = {&dv, &nrows, &di, &dw, &dout, &B, &K, &D, &no_check};
                    void* sargs[] = {&dv, &nrows, &di, &dw, &ddelta, &lr, &B, &K, &D, &no_check};
                    const double ms = time_ms([&] { (void)sdm_launch(k, &plan, nullptr, write ? sargs : gargs, write ? 10u : 9u, nullptr); });
                    report(write ? "write" : "read", write ? write_bytes : read_bytes, ms);
                }
                auto grouped = sdm::GroupedWrite::get(*runtime, 0, v, "i32");
                if (!grouped) {
                    std::fprintf(stderr, "kernel_bench: %s\n", grouped.error().message());
                    return 1;
                }
                report("write-det", write_bytes, time_ms([&] {
                           (void)grouped->launch(nullptr, dv, rows, di, dw, ddelta, lr, B, K, D, workspace, 0);
                       }));
                for (const Staged& st : staged) {
                    CUfunction f = nullptr;
                    const std::string name = "sdm_gather_staged_" + v + "_i32";
                    const unsigned smem = 2 * 32 * static_cast<unsigned>(std::min<size_t>(static_cast<size_t>(D) * es, 1024));
                    int per_sm = 0;
                    if (get_function(&f, st.module, name.c_str()) != CUDA_SUCCESS ||
                        set_attribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, static_cast<int>(smem)) != CUDA_SUCCESS ||
                        occupancy(&per_sm, f, 256, smem) != CUDA_SUCCESS) {
                        std::fprintf(stderr, "kernel_bench: %s: cannot set up %s\n", st.op, name.c_str());
                        return 1;
                    }
                    void* args[] = {&dv, &nrows, &di, &dw, &dout, &B, &K, &D};
                    const unsigned grid = static_cast<unsigned>(std::max(1, per_sm) * sms);
                    report(st.op, read_bytes, time_ms([&] { (void)launch_kernel(f, grid, 1, 1, 256, 1, 1, smem, nullptr, args, nullptr); }));
                }
                for (const CUdeviceptr d : {dv, di, dw, dout, ddelta}) mfree(d);
            }
    mfree(workspace);
    return 0;
}
