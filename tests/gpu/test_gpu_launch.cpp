// GPU test: plans and launches for real (exits 77 without a GPU). The test archive's `scale` on
// device 0: its plan from the manifest (on an H200: PDL), launched with sdm_launch and checked;
// the same without PDL; twice in a row with PDL (the second reads what the first wrote); a
// cluster plan (problems past a quarter of L2); more than 48 KiB of dynamic shared memory; and the
// argument count refused.
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "gpu_driver.hpp"
#include "sdm/sdm.h"

using sdm::gpu_test::check;
using sdm::gpu_test::Cuda;
using sdm::gpu_test::memory_calls;
using sdm::gpu_test::skipped;
using sdm::gpu_test::failures;
using sdm::gpu_test::runtime_with;

int main() {
    Cuda cuda;
    if (!cuda.open_device0()) return skipped();
    [[maybe_unused]] const auto [alloc, mfree, htod, dtoh, memset32, stream_create, stream_sync, sync] = memory_calls(cuda);
    CUstream stream = nullptr;
    stream_create(&stream, CU_STREAM_NON_BLOCKING);

    sdm_error* e = nullptr;
    sdm_runtime* rt = runtime_with(SDM_TEST_ARCHIVE, "launch", &e);
    if (rt == nullptr) return 1;
    sdm_kernel* k = nullptr;
    check(sdm_kernel_get(rt, 0, "scale", nullptr, &k, nullptr) == SDM_OK, "fetch scale");
    sdm_device_info dev{};
    dev.struct_size = sizeof dev;
    sdm_device_info_get(rt, 0, &dev, nullptr);

    std::mt19937 rng(7);
    // Runs scale(y, factor, n) `times` times with `plan` and checks y == y0 * factor^times.
    const auto run = [&](sdm_plan plan, int n, int times, const std::string& what) {
        std::vector<float> y(static_cast<size_t>(n)), out(static_cast<size_t>(n));
        std::uniform_real_distribution<float> dist(-1.f, 1.f);
        for (auto& v : y) v = dist(rng);
        CUdeviceptr dy = 0;
        alloc(&dy, y.size() * sizeof(float));
        htod(dy, y.data(), y.size() * sizeof(float));
        float factor = 3.f;
        int count = n;
        void* args[] = {&dy, &factor, &count};
        sdm_status s = SDM_OK;
        for (int t = 0; t < times && s == SDM_OK; ++t) s = sdm_launch(k, &plan, stream, args, 3, &e);
        const CUresult synced = stream_sync(stream);
        dtoh(out.data(), dy, out.size() * sizeof(float));
        mfree(dy);
        const float scale = std::pow(3.f, static_cast<float>(times));
        int bad = 0;
        for (size_t i = 0; i < y.size(); ++i)
            if (!(std::fabs(out[i] - y[i] * scale) <= 1e-5f * std::fabs(y[i] * scale) + 1e-6f)) ++bad;
        check(s == SDM_OK && synced == CUDA_SUCCESS && bad == 0,
              what + ": grid " + std::to_string(plan.grid) + ", block " + std::to_string(plan.block) + ", cluster " + std::to_string(plan.cluster[0]) +
                  ", pdl " + std::to_string(plan.flags & SDM_PLAN_PDL) + ", smem " + std::to_string(plan.smem_bytes) + ": " + std::to_string(bad) +
                  " wrong of " + std::to_string(n) + (s == SDM_OK ? "" : std::string(": ") + sdm_error_message(e)));
    };
    const auto select = [&](int64_t n) {
        sdm_plan plan{};
        plan.struct_size = sizeof plan;
        const sdm_status s = sdm_plan_select(k, &n, 1, &plan, &e);
        check(s == SDM_OK, "plan for N=" + std::to_string(n) + (s == SDM_OK ? "" : std::string(": ") + sdm_error_message(e)) + ", occupancy " +
                               std::to_string(plan.occupancy));
        return plan;
    };

    const int n = 1 << 20;
    sdm_plan plan = select(n);
    if (dev.device_class == SDM_DEVICE_CLASS_MODERN) check((plan.flags & SDM_PLAN_PDL) != 0 && plan.occupancy > 0, "the modern plan asks for PDL");
    run(plan, n, 1, "the manifest's plan");
    run(plan, n, 2, "two launches in a row, the second reading what the first wrote");
    sdm_plan plain = plan;
    plain.flags = 0;
    run(plain, n, 1, "the same without PDL");
    if (dev.device_class == SDM_DEVICE_CLASS_MODERN) {
        const int big = 1 << 25;  // past a quarter of an H200's L2 (62,914,560 B / 4 elements)
        sdm_plan clustered = select(big);
        check(clustered.cluster[0] == 2, "problems past a quarter of L2 get clusters of two");
        run(clustered, big, 1, "a cluster plan");
    }
    sdm_plan wide = plan;
    wide.smem_bytes = 100 * 1024;  // past the default 48 KiB: the limit is raised once
    run(wide, n, 2, "100 KiB of dynamic shared memory");
    float factor = 1.f;
    CUdeviceptr none = 0;
    void* two[] = {&none, &factor};
    const sdm_status refused = sdm_launch(k, &plan, stream, two, 2, &e);
    const std::string message = sdm_error_message(e);
    check(refused == SDM_ERROR_INVALID_ARGUMENT && message.find("takes 3 argument(s)") != std::string::npos,
          "a wrong argument count is refused: " + message);
    sdm_error_destroy(e);
    sdm_runtime_destroy(rt);
    std::printf("%d failure(s)\n", failures);
    return failures == 0 ? 0 : 1;
}
