// GPU test: the Sparse Delta Memory kernels of kernels/kernels.sdma on device 0 (exits 77 without a
// GPU), against a CPU reference, with fresh random inputs and poisoned outputs every time: the read
// (sdm_gather), the atomic write (sdm_scatter_delta_atomic) and the deterministic write
// (sdm::GroupedWrite: bitwise the same result on two runs) in fp32 (1e-5 relative) and bf16 (1e-2),
// int32 and int64 indices, duplicate indices (within and across the 2,048-key sort tiles), K = 1,
// D not a multiple of the vector width, an empty batch, and out-of-range indices reported through
// the checked mode without touching memory.
#include <climits>
#include <cmath>
#include <cstring>
#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "gpu_driver.hpp"
#include "sdm/sdm.h"
#include "sdm/sdm_kernels.hpp"

using sdm::gpu_test::check;
using sdm::gpu_test::Cuda;
using sdm::gpu_test::memory_calls;
using sdm::gpu_test::skipped;
using sdm::gpu_test::failures;

namespace {

uint16_t to_bf16(float f) {  // round to nearest even, as __float2bfloat16_rn
    uint32_t u;
    std::memcpy(&u, &f, 4);
    u += 0x7fff + ((u >> 16) & 1);
    return static_cast<uint16_t>(u >> 16);
}
float from_bf16(uint16_t h) {
    const uint32_t u = uint32_t{h} << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

}  // namespace

int main() {
    Cuda cuda;
    if (!cuda.open_device0()) return skipped();
    [[maybe_unused]] const auto [alloc, mfree, htod, dtoh, memset32, stream_create, stream_sync, sync] = memory_calls(cuda);
    sdm::RuntimeOptions options;
    options.flags = SDM_RUNTIME_NO_EMBEDDED_ARCHIVE;
    auto runtime = sdm::Runtime::create(options);
    const sdm::Status mounted = runtime ? runtime->mount_file(SDM_KERNELS_ARCHIVE) : sdm::Status(runtime.error());
    if (!mounted) {
        std::printf("FAIL: %s\n", mounted.error().message());
        return 1;
    }
    sdm_runtime* rt = runtime->get();
    sdm_error* e = nullptr;
    std::mt19937 rng(std::random_device{}());
    const auto device = [&](const void* host, size_t bytes) {
        CUdeviceptr d = 0;
        alloc(&d, bytes > 0 ? bytes : 1);
        if (bytes > 0) htod(d, host, bytes);
        return d;
    };

    // One read and one write of (dtype, index type) on B x K x D over `rows` rows; `bad` puts an
    // out-of-range index at flat position `bad` (-1: none).
    const auto run = [&](bool bf16, bool i64, int B, int K, int D, int64_t rows, int64_t bad, const std::string& what, bool unique = false) {
        const std::string v = bf16 ? "bf16" : "f32", ix = i64 ? "i64" : "i32";
        const size_t es = bf16 ? 2 : 4;
        std::uniform_real_distribution<float> dist(-1.f, 1.f);
        std::uniform_int_distribution<int64_t> pick(0, std::max<int64_t>(0, std::min<int64_t>(rows - 1, 15)));  // few rows: duplicates
        std::vector<float> values(static_cast<size_t>(rows) * D), w(static_cast<size_t>(B) * K), delta(static_cast<size_t>(B) * D);
        std::vector<int64_t> idx(static_cast<size_t>(B) * K);
        for (auto& x : values) x = dist(rng);
        for (auto& x : w) x = dist(rng);
        for (auto& x : delta) x = dist(rng);
        for (auto& x : idx) x = pick(rng);
        if (unique) {  // every pair its own row: rows >= B * K
            std::vector<int64_t> all(static_cast<size_t>(rows));
            for (int64_t i = 0; i < rows; ++i) all[static_cast<size_t>(i)] = i;
            std::shuffle(all.begin(), all.end(), rng);
            std::copy(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(idx.size()), idx.begin());
        }
        if (bad >= 0 && static_cast<size_t>(bad) < idx.size()) idx[static_cast<size_t>(bad)] = rows + 7;
        // The device's view of the values (bf16 rounds them) is the reference's input too.
        std::vector<uint16_t> values16(values.size()), delta16(delta.size());
        for (size_t i = 0; i < values.size(); ++i) values[i] = bf16 ? from_bf16(values16[i] = to_bf16(values[i])) : values[i];
        for (size_t i = 0; i < delta.size(); ++i) delta[i] = bf16 ? from_bf16(delta16[i] = to_bf16(delta[i])) : delta[i];
        std::vector<int32_t> idx32(idx.begin(), idx.end());
        CUdeviceptr dv = bf16 ? device(values16.data(), values16.size() * 2) : device(values.data(), values.size() * 4);
        CUdeviceptr di = i64 ? device(idx.data(), idx.size() * 8) : device(idx32.data(), idx32.size() * 4);
        CUdeviceptr dw = device(w.data(), w.size() * 4);
        CUdeviceptr dd = bf16 ? device(delta16.data(), delta16.size() * 2) : device(delta.data(), delta.size() * 4);
        std::vector<uint8_t> poison(static_cast<size_t>(B) * D * es, 0xff);  // NaN in both dtypes
        CUdeviceptr dout = device(poison.data(), poison.size());
        const int no_error = INT_MAX;
        CUdeviceptr derr = device(&no_error, sizeof no_error);
        const double tol = bf16 ? 1e-2 : 1e-5;
        // Element i of a device buffer copied back, as a float.
        const auto element = [bf16](const std::vector<uint8_t>& bytes, size_t i) {
            float f;
            if (bf16) {
                uint16_t h;
                std::memcpy(&h, bytes.data() + i * 2, 2);
                f = from_bf16(h);
            } else {
                std::memcpy(&f, bytes.data() + i * 4, 4);
            }
            return f;
        };

        // The read.
        sdm_kernel* g = nullptr;
        if (sdm_kernel_get(rt, 0, ("sdm_gather_" + v + "_" + ix).c_str(), nullptr, &g, &e) != SDM_OK) {
            check(false, what + ": " + sdm_error_message(e));
            return;
        }
        sdm_plan plan{};
        plan.struct_size = sizeof plan;
        const int64_t problem[] = {B, K, D, rows};
        check(sdm_plan_select(g, problem, 4, &plan, &e) == SDM_OK, what + ": gather plan" + (plan.grid ? "" : std::string(": ") + sdm_error_message(e)));
        int64_t nrows = rows;
        void* gargs[] = {&dv, &nrows, &di, &dw, &dout, &B, &K, &D, &derr};
        const sdm_status launched = sdm_launch(g, &plan, nullptr, gargs, 9, &e);
        const CUresult synced = sync();
        std::vector<uint8_t> out(poison.size());
        dtoh(out.data(), dout, out.size());
        int err = 0;
        dtoh(&err, derr, sizeof err);
        int wrong = 0;
        for (int b = 0; b < B; ++b)
            for (int d = 0; d < D; ++d) {
                double ref = 0, mag = 0;
                for (int j = 0; j < K; ++j) {
                    const int64_t r = idx[static_cast<size_t>(b) * K + j];
                    if (r < 0 || r >= rows) continue;
                    ref += double(w[static_cast<size_t>(b) * K + j]) * values[static_cast<size_t>(r) * D + d];
                    mag += std::fabs(double(w[static_cast<size_t>(b) * K + j]) * values[static_cast<size_t>(r) * D + d]);
                }
                const size_t o = static_cast<size_t>(b) * D + d;
                const float got = element(out, o);
                if (!(std::fabs(got - ref) <= tol * (mag + 1e-3))) ++wrong;
            }
        const int want_err = bad >= 0 && bad < int64_t{B} * K ? static_cast<int>(bad) : INT_MAX;
        check(launched == SDM_OK && synced == CUDA_SUCCESS && wrong == 0 && err == want_err,
              what + ": sdm_gather_" + v + "_" + ix + " B=" + std::to_string(B) + " K=" + std::to_string(K) + " D=" + std::to_string(D) + " grid " +
                  std::to_string(plan.grid) + ": " + std::to_string(wrong) + " wrong of " + std::to_string(B * D) + ", error slot " + std::to_string(err));

        // The write: V += lr * w * delta, each pair's row.
        sdm_kernel* s = nullptr;
        if (sdm_kernel_get(rt, 0, ("sdm_scatter_delta_atomic_" + v + "_" + ix).c_str(), nullptr, &s, &e) != SDM_OK) {
            check(false, what + ": " + sdm_error_message(e));
            return;
        }
        check(sdm_plan_select(s, problem, 4, &plan, &e) == SDM_OK, what + ": scatter plan");
        htod(derr, &no_error, sizeof no_error);
        float lr = 0.5f;
        void* sargs[] = {&dv, &nrows, &di, &dw, &dd, &lr, &B, &K, &D, &derr};
        const sdm_status slaunched = sdm_launch(s, &plan, nullptr, sargs, 10, &e);
        const CUresult ssynced = sync();
        std::vector<uint8_t> after(values.size() * es);
        dtoh(after.data(), dv, after.size());
        dtoh(&err, derr, sizeof err);
        // Sized, then copied into: GCC 12 -O3 warns a false -Wfree-nonheap-object on the range constructor here.
        std::vector<double> ref(values.size()), mag(values.size(), 0.0), adds(values.size(), 0.0);
        std::copy(values.begin(), values.end(), ref.begin());
        for (size_t q = 0; q < idx.size(); ++q) {
            const int64_t r = idx[q];
            if (r < 0 || r >= rows) continue;
            const size_t b = q / static_cast<size_t>(K);
            for (int d = 0; d < D; ++d) {
                const double add = double(lr) * w[q] * delta[b * static_cast<size_t>(D) + static_cast<size_t>(d)];
                ref[static_cast<size_t>(r) * D + d] += add;
                mag[static_cast<size_t>(r) * D + d] += std::fabs(add);
                adds[static_cast<size_t>(r) * D + d] += 1;
            }
        }
        wrong = 0;
        for (size_t i = 0; i < values.size(); ++i) {
            const float got = element(after, i);
            // bf16 rounds at every atomic add, to within half a step (2^-9) of a value never above
            // |V0| + the adds' magnitudes: allow a step (2^-8) of that per add, and one for the start.
            const double allowed = bf16 ? (adds[i] + 1) * (std::fabs(values[i]) + mag[i]) / 256.0 + 1e-6 : 1e-5 * (std::fabs(ref[i]) + mag[i]) + 1e-6;
            if (!(std::fabs(got - ref[i]) <= allowed)) ++wrong;
        }
        check(slaunched == SDM_OK && ssynced == CUDA_SUCCESS && wrong == 0 && err == want_err,
              what + ": sdm_scatter_delta_atomic_" + v + "_" + ix + ": " + std::to_string(wrong) + " wrong of " + std::to_string(values.size()) +
                  ", error slot " + std::to_string(err));

        // The deterministic write, twice from the same start: the same bits both times. It sums a
        // row's adds in fp32 and rounds once, so bf16 is within one step of |V0| + the adds.
        auto grouped = sdm::GroupedWrite::get(*runtime, 0, v, ix);
        if (!grouped) {
            check(false, what + ": " + grouped.error().message());
            return;
        }
        CUdeviceptr ws = 0;
        alloc(&ws, std::max<uint64_t>(1, sdm::GroupedWrite::workspace_bytes(B, K)));
        std::vector<uint8_t> first;
        for (int round = 0; round < 2; ++round) {
            if (bf16) htod(dv, values16.data(), values16.size() * 2);
            else htod(dv, values.data(), values.size() * 4);
            htod(derr, &no_error, sizeof no_error);
            const sdm::Status launched_det = grouped->launch(nullptr, dv, rows, di, dw, dd, lr, B, K, D, ws, derr);
            const CUresult synced_det = sync();
            dtoh(after.data(), dv, after.size());
            dtoh(&err, derr, sizeof err);
            wrong = 0;
            for (size_t i = 0; i < values.size(); ++i) {
                const float got = element(after, i);
                const double allowed = bf16 ? (std::fabs(values[i]) + mag[i]) / 256.0 + 1e-6 : 1e-5 * (std::fabs(ref[i]) + mag[i]) + 1e-6;
                if (!(std::fabs(got - ref[i]) <= allowed)) ++wrong;
            }
            check(launched_det.ok() && synced_det == CUDA_SUCCESS && wrong == 0 && err == want_err,
                  what + ": deterministic write " + v + "_" + ix + " round " + std::to_string(round) + ": " +
                      (launched_det.ok() ? "" : std::string(launched_det.error().message()) + "; ") + std::to_string(wrong) + " wrong of " +
                      std::to_string(values.size()) + ", error slot " + std::to_string(err));
            if (round == 0) first = after;
            else check(first == after, what + ": deterministic write " + v + "_" + ix + ": the second run gives the first run's bits");
        }
        mfree(ws);
        for (const CUdeviceptr d : {dv, di, dw, dd, dout, derr}) mfree(d);
    };

    for (const bool bf16 : {false, true})
        for (const bool i64 : {false, true}) {
            run(bf16, i64, 257, 32, 256, 1000, -1, "duplicates");
            run(bf16, i64, 700, 32, 64, 16, -1, "22,400 positions on 16 rows (duplicates across sort tiles and merge passes)");
            run(bf16, i64, 64, 8, 256, 1024, -1, "unique rows (no duplicates: the write's bound is one rounding)", true);
            run(bf16, i64, 64, 1, 1024, 300, -1, "K = 1");
            run(bf16, i64, 33, 5, 13, 50, -1, "D not a multiple of the vector width");
            run(bf16, i64, 40, 8, 4096, 64, -1, "D = 4096");
            run(bf16, i64, 0, 8, 256, 16, -1, "an empty batch");
            run(bf16, i64, 50, 4, 64, 20, 77, "an index out of range, reported");
        }
    std::printf("%d failure(s)\n", failures);
    return failures == 0 ? 0 : 1;
}
