// GPU test (exits 77 without a GPU): a user's kernels launched the way their authors wrote them,
// through the C ABI, from the archive `sdm import` made of tests/data/launch.sm_90.cubin
// (launch.cu; the build makes it, SDM_TEST_USER_ARCHIVE): a 2-D tiled matrix multiply checked
// against a host result; a cooperative kernel using grid.sync() over the most blocks that fit,
// and one block more refused with the figures; a kernel reading a __constant__ table sdm wrote,
// and a __device__ counter read back; templated kernels fetched by their C++ spelling; a plan for
// elements; the cooperative attribute and a priority passed to the driver.
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gpu_driver.hpp"
#include "sdm/sdm.h"

using sdm::gpu_test::check;
using sdm::gpu_test::Cuda;
using sdm::gpu_test::memory_calls;
using sdm::gpu_test::skipped;
using sdm::gpu_test::failures;
using sdm::gpu_test::runtime_with;

#ifndef SDM_TEST_USER_ARCHIVE
#error "define SDM_TEST_USER_ARCHIVE as the path of the archive sdm import made of tests/data/launch.sm_90.cubin"
#endif

int main() {
    Cuda cuda;
    if (!cuda.open_device0()) return skipped();
    [[maybe_unused]] const auto [alloc, mfree, htod, dtoh, memset32, stream_create, stream_sync, sync] = memory_calls(cuda);
    CUstream stream = nullptr;
    stream_create(&stream, CU_STREAM_NON_BLOCKING);

    sdm_error* e = nullptr;
    sdm_runtime* rt = runtime_with(SDM_TEST_USER_ARCHIVE, "user", &e);
    if (rt == nullptr) return 1;
    const auto get = [&](const char* name, const char* signature) {
        sdm_kernel* k = nullptr;
        const sdm_status s = sdm_kernel_get_checked(rt, 0, name, signature, nullptr, &k, &e);
        check(s == SDM_OK, std::string("fetch ") + name + " checked against (" + (signature ? signature : "") + ")" +
                               (s == SDM_OK ? "" : std::string(": ") + sdm_error_message(e)));
        return s == SDM_OK ? k : nullptr;
    };
    const auto message = [&] { return e != nullptr ? std::string(": ") + sdm_error_message(e) : std::string(); };
    sdm_device_info dev{};
    dev.struct_size = sizeof dev;
    sdm_device_info_get(rt, 0, &dev, nullptr);

    // 1. A 2-D tiled matrix multiply: blocks of 16x16 threads, a grid of ceil(n/16) x ceil(n/16).
    sdm_kernel* matmul = nullptr;
    // extern "C" __global__ void matmul_tiled(const float* a, const float* b, float* c, int n), imported
    // by `sdm import` with the signature derived from the cubin (b64,b64,b64,b32): the typed check agrees.
    const sdm_status fetched = sdm_kernel_get_checked(rt, 0, "matmul_tiled", "ptr,ptr,ptr,i32", stream, &matmul, &e);
    check(fetched == SDM_OK, "fetch matmul_tiled checked against (ptr,ptr,ptr,i32)" + message());
    if (fetched == SDM_OK) {
        const int n = 333;  // not a multiple of the tile: the edges are checked too
        std::mt19937 rng(11);
        std::uniform_real_distribution<float> dist(-1.f, 1.f);
        std::vector<float> a(n * n), b(n * n), c(n * n, std::nanf("")), want(n * n, 0.f);
        for (auto& v : a) v = dist(rng);
        for (auto& v : b) v = dist(rng);
        for (int i = 0; i < n; ++i)
            for (int k = 0; k < n; ++k)
                for (int j = 0; j < n; ++j) want[i * n + j] += a[i * n + k] * b[k * n + j];
        CUdeviceptr da = 0, db = 0, dc = 0;
        const size_t bytes = sizeof(float) * n * n;
        alloc(&da, bytes), alloc(&db, bytes), alloc(&dc, bytes);
        htod(da, a.data(), bytes), htod(db, b.data(), bytes);
        // README begin (docs/HOSTS.md's user kernel: tests/tool/readme_examples.py checks the copy)
        sdm_plan plan{};  // zero fields are the defaults: cluster 1x1x1, y and z 1, the stream's priority
        plan.struct_size = sizeof plan;
        plan.grid = plan.grid_y = (n + 15) / 16;  // a 2-D grid of 16x16 tiles
        plan.block = plan.block_y = 16;
        int count = n;
        void* args[] = {&da, &db, &dc, &count};
        const sdm_status s = sdm_launch(matmul, &plan, stream, args, 4, &e);
        // README end
        const CUresult synced = stream_sync(stream);
        dtoh(c.data(), dc, bytes);
        int bad = 0;
        for (int i = 0; i < n * n; ++i) bad += !(std::fabs(c[i] - want[i]) <= 1e-3f);
        check(s == SDM_OK && synced == CUDA_SUCCESS && bad == 0, "matmul_tiled " + std::to_string(n) + "x" + std::to_string(n) + " on a grid of " +
                                                                    std::to_string(plan.grid) + "x" + std::to_string(plan.grid_y) + " blocks of 16x16: " +
                                                                    std::to_string(bad) + " wrong against the host" + message());
        mfree(da), mfree(db), mfree(dc);
    }

    // 2. grid.sync(): every block resident at once. The most blocks that fit, then one more.
    if (sdm_kernel* grid_sum = get("grid_sum", "ptr,ptr")) {
        sdm_plan plan{};
        plan.struct_size = sizeof plan;
        plan.flags = SDM_PLAN_COOPERATIVE;
        plan.block = 256;
        // The limit from the refusal itself: a grid far too large names it.
        plan.grid = 1u << 20;
        CUdeviceptr partial = 0, total = 0;
        alloc(&partial, sizeof(int) * (1u << 20)), alloc(&total, sizeof(int));
        void* args[] = {&partial, &total};
        const sdm_status refused = sdm_launch(grid_sum, &plan, stream, args, 2, &e);
        const std::string why = e != nullptr ? sdm_error_message(e) : "";
        check(refused == SDM_ERROR_INVALID_ARGUMENT && why.find("cannot all be resident") != std::string::npos,
              "a cooperative grid of 2^20 blocks is refused with the figures: " + why);
        sdm_error_destroy(e);
        e = nullptr;
        const size_t at = why.find("launch at most ");
        const uint32_t most = at == std::string::npos ? 0 : static_cast<uint32_t>(std::stoul(why.substr(at + 15)));
        check(most >= static_cast<uint32_t>(dev.sm_count), "the most co-resident blocks (" + std::to_string(most) + ") are at least one per SM");
        plan.grid = most;
        memset32(total, 0, 1);
        plan.priority = -1;  // a higher priority than the stream's, within H200's range
        const sdm_status s = sdm_launch(grid_sum, &plan, stream, args, 2, &e);
        const CUresult synced = stream_sync(stream);
        int result = -1;
        dtoh(&result, total, sizeof result);
        const long long expect = static_cast<long long>(most) * (most - 1) / 2;
        check(s == SDM_OK && synced == CUDA_SUCCESS && result == static_cast<int>(expect),
              "grid_sum cooperative over " + std::to_string(most) + " blocks with priority -1: " + std::to_string(result) + " (want " + std::to_string(expect) + ")" +
                  message());
        plan.grid = most + 1;
        const sdm_status over = sdm_launch(grid_sum, &plan, stream, args, 2, &e);
        check(over == SDM_ERROR_INVALID_ARGUMENT, "one block more is refused before the driver" + message());
        sdm_error_destroy(e);
        e = nullptr;
        mfree(partial), mfree(total);
    }

    // 3. A __constant__ table written through sdm, a __device__ counter read back through sdm.
    if (sdm_kernel* table = get("scale_by_table", "ptr,ptr,i32")) {
        float coefficients[16];
        for (int i = 0; i < 16; ++i) coefficients[i] = 1.5f + static_cast<float>(i);
        uint64_t address = 0, bytes = 0;
        const sdm_status found = sdm_global_get(table, "coefficients", &address, &bytes, &e);  // (before the message reads bytes)
        check(found == SDM_OK && bytes == 64 && address != 0, "global coefficients found: " + std::to_string(bytes) + " bytes" + message());
        check(sdm_global_write(table, "coefficients", 0, coefficients, sizeof coefficients, stream, &e) == SDM_OK, "coefficients written on the stream" + message());
        const unsigned zero = 0;
        check(sdm_global_write(table, "launches", 0, &zero, sizeof zero, stream, &e) == SDM_OK, "launches zeroed" + message());
        const int n = 1 << 20;
        std::vector<float> in(n), out(n);
        for (int i = 0; i < n; ++i) in[i] = static_cast<float>(i % 97) - 40.f;
        CUdeviceptr din = 0, dout = 0;
        alloc(&din, sizeof(float) * n), alloc(&dout, sizeof(float) * n);
        htod(din, in.data(), sizeof(float) * n);
        sdm_plan plan{};
        plan.struct_size = sizeof plan;
        const sdm_status shaped = sdm_plan_for_elements(table, n, 0, &plan, &e);
        check(shaped == SDM_OK && plan.block >= 32 && uint64_t{plan.grid} * plan.block >= static_cast<uint64_t>(n),
              "a plan for 2^20 elements: grid " + std::to_string(plan.grid) + ", block " + std::to_string(plan.block) + " (occupancy " +
                  std::to_string(plan.occupancy) + ")" + message());
        int count = n;
        void* args[] = {&din, &dout, &count};
        sdm_status s = SDM_OK;
        for (int t = 0; t < 3 && s == SDM_OK; ++t) s = sdm_launch(table, &plan, stream, args, 3, &e);
        unsigned launches = 0;
        const sdm_status read = sdm_global_read(table, "launches", 0, &launches, sizeof launches, stream, &e);
        const CUresult synced = stream_sync(stream);
        dtoh(out.data(), dout, sizeof(float) * n);
        int bad = 0;
        for (int i = 0; i < n; ++i) bad += out[i] != coefficients[i % 16] * in[i];
        check(s == SDM_OK && read == SDM_OK && synced == CUDA_SUCCESS && bad == 0 && launches == 3,
              "scale_by_table read the table sdm wrote: " + std::to_string(bad) + " wrong; the counter read back through sdm: " + std::to_string(launches) +
                  " launches" + message());
        check(sdm_global_get(table, "grid_sum", &address, &bytes, &e) == SDM_ERROR_INVALID_ARGUMENT, "a kernel's name is not a global" + message());
        sdm_error_destroy(e);
        e = nullptr;
        mfree(din), mfree(dout);
    }

    // 4. Templates by their C++ spelling: fill<float, 256>, reduce<int> (a name expression, a
    // declaration as c++filt prints it).
    if (sdm_kernel* fill = get("sdm_test::fill<float, 256>", "ptr,f32")) {
        CUdeviceptr d = 0;
        alloc(&d, sizeof(float) * 256);
        float value = 2.5f;
        void* args[] = {&d, &value};
        sdm_plan plan{};
        plan.struct_size = sizeof plan;
        plan.grid = 2;
        plan.block = 128;
        const sdm_status s = sdm_launch(fill, &plan, stream, args, 2, &e);
        stream_sync(stream);
        std::vector<float> out(256);
        dtoh(out.data(), d, sizeof(float) * 256);
        int bad = 0;
        for (float v : out) bad += v != 2.5f;
        check(s == SDM_OK && bad == 0, "fill<float, 256> fetched by its name expression filled 256 floats: " + std::to_string(bad) + " wrong" + message());
        mfree(d);
    }
    if (sdm_kernel* reduce = get("sdm_test::reduce<int>(int const*, int*, int)", "ptr,ptr,i32")) {
        const int n = 10000;
        std::vector<int> in(n);
        long long want = 0;
        for (int i = 0; i < n; ++i) want += in[i] = i % 7 - 3;
        CUdeviceptr din = 0, dout = 0;
        alloc(&din, sizeof(int) * n), alloc(&dout, sizeof(int));
        htod(din, in.data(), sizeof(int) * n);
        memset32(dout, 0, 1);
        int count = n;
        void* args[] = {&din, &dout, &count};
        sdm_plan plan{};
        plan.struct_size = sizeof plan;
        plan.grid = 1;
        plan.block = 256;
        const sdm_status s = sdm_launch(reduce, &plan, stream, args, 3, &e);
        stream_sync(stream);
        int got = 0;
        dtoh(&got, dout, sizeof got);
        check(s == SDM_OK && got == want, "reduce<int> fetched by its declaration: " + std::to_string(got) + " (want " + std::to_string(want) + ")" + message());
        mfree(din), mfree(dout);
    }
    sdm_kernel* none = nullptr;
    check(sdm_kernel_get(rt, 0, "fill", nullptr, &none, &e) == SDM_ERROR_AMBIGUOUS, "\"fill\" names two instantiations: ambiguous" + message());
    sdm_error_destroy(e);
    sdm_runtime_destroy(rt);
    std::printf("%d failure(s)\n", failures);
    return failures == 0 ? 0 : 1;
}
