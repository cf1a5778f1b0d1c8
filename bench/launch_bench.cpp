// The launch bench's measuring program (bench/launch_bench.sh drives it).
//   launch_bench select ARCHIVE KERNEL N [CALLS]   ns per sdm_plan_select memo hit (median of 9 runs)
//   launch_bench launch ARCHIVE KERNEL [LAUNCHES]  launches per second of an argument-less kernel:
//       raw cuLaunchKernel of its CUfunction against sdm_launch with its plan, interleaved rounds,
//       each round LAUNCHES launches on one stream then a synchronize; prints the medians and ratio
// A driver is needed for both (the fake driver does for `select`: the memo hit touches no driver).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <cuda.h>
#include <dlfcn.h>

#include "cuda_driver.hpp"
#include "sdm/sdm.h"

namespace {

int fail(const std::string& what, sdm_error* e = nullptr) {
    std::fprintf(stderr, "launch_bench: %s%s%s\n", what.c_str(), e ? ": " : "", e ? sdm_error_message(e) : "");
    return 1;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 4) return fail("usage: see the comment at the top of bench/launch_bench.cpp");
    const std::string mode = argv[1];
    sdm_runtime* rt = nullptr;
    sdm_error* e = nullptr;
    sdm_runtime_params p{};
    p.struct_size = sizeof p;
    p.flags = SDM_RUNTIME_NO_EMBEDDED_ARCHIVE;
    if (sdm_runtime_create(&p, &rt, &e) != SDM_OK || sdm_archive_mount_file(rt, argv[2], &e) != SDM_OK) return fail("start", e);
    sdm_kernel* k = nullptr;
    if (sdm_kernel_get(rt, 0, argv[3], nullptr, &k, &e) != SDM_OK) return fail("kernel", e);
    using Clock = std::chrono::steady_clock;

    if (mode == "select") {
        const int64_t n = argc > 4 ? std::atoll(argv[4]) : 1 << 20;
        const long calls = argc > 5 ? std::atol(argv[5]) : 2000000;
        sdm_plan plan{};
        plan.struct_size = sizeof plan;
        if (sdm_plan_select(k, &n, 1, &plan, &e) != SDM_OK) return fail("plan", e);  // the miss: fills the memo
        std::vector<double> runs;
        for (int r = 0; r < 9; ++r) {
            const auto start = Clock::now();
            for (long i = 0; i < calls; ++i) (void)sdm_plan_select(k, &n, 1, &plan, nullptr);
            runs.push_back(std::chrono::duration<double, std::nano>(Clock::now() - start).count() / static_cast<double>(calls));
        }
        std::printf("%.1f\n", median(runs));
        return 0;
    }
    if (mode == "launch") {
        const long launches = argc > 4 ? std::atol(argv[4]) : 20000;
        sdm_host::CudaDriver cu;
        if (!cu.open() || !cu.make_current(0)) return fail("no CUDA driver or device");
        const auto stream_create = cu.get<decltype(&cuStreamCreate)>("cuStreamCreate");
        const auto sync = cu.get<decltype(&cuStreamSynchronize)>("cuStreamSynchronize");
        const auto raw_launch = cu.get<decltype(&cuLaunchKernel)>("cuLaunchKernel");
        CUstream stream = nullptr;
        stream_create(&stream, CU_STREAM_NON_BLOCKING);
        const int64_t n = 32;
        sdm_plan plan{};
        plan.struct_size = sizeof plan;
        if (sdm_plan_select(k, &n, 1, &plan, &e) != SDM_OK) return fail("plan", e);
        void* function = nullptr;
        sdm_kernel_function(k, &function, nullptr);
        const auto f = static_cast<CUfunction>(function);
        const auto round = [&](bool through_sdm) {
            const auto start = Clock::now();
            for (long i = 0; i < launches; ++i) {
                if (through_sdm) (void)sdm_launch(k, &plan, stream, nullptr, 0, nullptr);
                else (void)raw_launch(f, plan.grid, 1, 1, plan.block, 1, 1, plan.smem_bytes, stream, nullptr, nullptr);
            }
            sync(stream);
            return static_cast<double>(launches) / std::chrono::duration<double>(Clock::now() - start).count();
        };
        if (sdm_launch(k, &plan, stream, nullptr, 0, &e) != SDM_OK) return fail("sdm_launch", e);
        round(false);  // warm both paths
        round(true);
        std::vector<double> raw, sdm;
        for (int r = 0; r < 15; ++r) {
            raw.push_back(round(false));
            sdm.push_back(round(true));
        }
        std::printf("%.0f %.0f %.3f\n", median(raw), median(sdm), median(sdm) / median(raw));
        return 0;
    }
    return fail("unknown mode " + mode);
}
