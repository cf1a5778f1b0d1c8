// The SDM kernels, end to end (./run.sh demo runs it on a GPU): the archive embedded in libsdm, the
// read (sdm_gather), the atomic write (sdm_scatter_delta_atomic, through the C ABI) and the
// deterministic write (sdm::GroupedWrite of sdm_kernels.hpp: three kernels, run twice to show the
// same bits) in fp32 and bf16 on device 0, each checked against a CPU reference, with what ran
// where: the image, the plan and the time. Without a GPU it says so and exits 0 (tools/demo.sh
// shows the rest then).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <cuda.h>
#include "cuda_driver.hpp"
#include "sdm/sdm.h"
#include "sdm/sdm_kernels.hpp"

namespace {

uint16_t bf16(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return static_cast<uint16_t>((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}
float f32(uint16_t h) {
    const uint32_t u = uint32_t{h} << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}
const char* source_name(uint32_t s) {
    static const char* names[] = {"?", "archive cubin", "cache", "nvJitLink", "driver JIT", "fatbin", "nvPTXCompiler"};
    return s < 7 ? names[s] : "?";
}

}  // namespace

int main() {
    auto runtime = sdm::Runtime::create();
    if (!runtime) {
        std::printf("%s\n", runtime.error().message());
        return 1;
    }
    sdm_runtime* rt = runtime->get();
    sdm_error* e = nullptr;
    sdm_archive_info a{};
    a.struct_size = sizeof a;
    if (sdm_archive_info_get(rt, 0, &a, nullptr) != SDM_OK || a.embedded == 0) {
        std::printf("this libsdm embeds no archive (it was built without nvcc)\n");
        return 1;
    }
    std::printf("embedded archive: %s, %u kernels, content %s\n", a.label, a.kernel_count, a.content_version);
    int32_t devices = 0;
    if (sdm_device_count(rt, &devices, &e) != SDM_OK || devices == 0) {
        std::printf("no GPU here (%s): launching the kernels needs one\n", e ? sdm_error_message(e) : "no CUDA device");
        sdm_error_destroy(e);
        return 0;
    }
    sdm_device_info dev{};
    dev.struct_size = sizeof dev;
    sdm_device_info_get(rt, 0, &dev, nullptr);
    std::printf("device 0: %s, compute capability %d.%d, class %s, %d SMs\n", dev.name, dev.capability_major, dev.capability_minor,
                sdm_device_class_name(dev.device_class), dev.sm_count);

    sdm_host::CudaDriver cu;
    if (!cu.open() || !cu.make_current(0)) {
        std::printf("the CUDA driver would not make device 0 current\n");
        return 1;
    }
    const auto alloc = cu.get<decltype(&cuMemAlloc)>("cuMemAlloc");
    const auto mfree = cu.get<decltype(&cuMemFree)>("cuMemFree");
    const auto htod = cu.get<decltype(&cuMemcpyHtoD)>("cuMemcpyHtoD");
    const auto dtoh = cu.get<decltype(&cuMemcpyDtoH)>("cuMemcpyDtoH");
    const auto sync = cu.get<decltype(&cuCtxSynchronize)>("cuCtxSynchronize");

    int B = 4096, K = 32, D = 1024;
    const int64_t rows = 100000;
    std::mt19937 rng(2026);
    std::uniform_real_distribution<float> dist(-1.f, 1.f);
    std::uniform_int_distribution<int32_t> pick(0, static_cast<int32_t>(rows - 1));
    int failures = 0, checks = 0;
    for (const bool half : {false, true}) {
        const size_t es = half ? 2 : 4;
        std::vector<float> V(static_cast<size_t>(rows) * D), w(static_cast<size_t>(B) * K), delta(static_cast<size_t>(B) * D);
        std::vector<int32_t> idx(w.size());
        for (auto& x : V) x = dist(rng);
        for (auto& x : w) x = dist(rng);
        for (auto& x : delta) x = dist(rng);
        for (auto& x : idx) x = pick(rng);
        std::vector<uint16_t> V16(V.size()), delta16(delta.size());
        for (size_t i = 0; i < V.size(); ++i) V[i] = half ? f32(V16[i] = bf16(V[i])) : V[i];
        for (size_t i = 0; i < delta.size(); ++i) delta[i] = half ? f32(delta16[i] = bf16(delta[i])) : delta[i];
        CUdeviceptr dV = 0, di = 0, dw = 0, dd = 0, dout = 0, none = 0;
        alloc(&dV, V.size() * es);
        alloc(&di, idx.size() * 4);
        alloc(&dw, w.size() * 4);
        alloc(&dd, delta.size() * es);
        alloc(&dout, static_cast<size_t>(B) * D * es);
        htod(dV, half ? static_cast<const void*>(V16.data()) : V.data(), V.size() * es);
        htod(di, idx.data(), idx.size() * 4);
        htod(dw, w.data(), w.size() * 4);
        htod(dd, half ? static_cast<const void*>(delta16.data()) : delta.data(), delta.size() * es);
        int64_t nrows = rows;
        float lr = 0.01f;
        const std::string v = half ? "bf16" : "f32";
        CUdeviceptr workspace = 0;
        alloc(&workspace, sdm::GroupedWrite::workspace_bytes(B, K));
        std::vector<uint8_t> first_det;
        for (int step = 0; step < 4; ++step) {  // read, atomic write, deterministic write (twice)
            const int op = step < 2 ? step : 2;
            const bool write = op > 0;
            htod(dV, half ? static_cast<const void*>(V16.data()) : V.data(), V.size() * es);  // every op starts from V
            const std::string name = op == 0 ? "sdm_gather_" + v + "_i32" : op == 1 ? "sdm_scatter_delta_atomic_" + v + "_i32" : "sdm_scatter_delta_grouped_" + v;
            sdm_kernel* k = nullptr;
            sdm_kernel_info info{};
            info.struct_size = sizeof info;
            sdm_plan plan{};
            plan.struct_size = sizeof plan;
            const int64_t problem[] = {B, K, D, rows}, grouped_problem[] = {int64_t{B} * K, K, D};
            if (sdm_kernel_get(rt, 0, name.c_str(), nullptr, &k, &e) != SDM_OK || sdm_kernel_info_get(k, &info, nullptr) != SDM_OK ||
                sdm_plan_select(k, op == 2 ? grouped_problem : problem, op == 2 ? 3 : 4, &plan, &e) != SDM_OK) {
                std::printf("%s: %s\n", name.c_str(), sdm_error_message(e));
                return 1;
            }
            void* gargs[] = {&dV, &nrows, &di, &dw, &dout, &B, &K, &D, &none};
            void* sargs[] = {&dV, &nrows, &di, &dw, &dd, &lr, &B, &K, &D, &none};
            const auto start = std::chrono::steady_clock::now();
            sdm_status s = SDM_OK;
            if (op < 2) {
                s = sdm_launch(k, &plan, nullptr, write ? sargs : gargs, write ? 10 : 9, &e);
            } else {
                auto grouped = sdm::GroupedWrite::get(*runtime, 0, v, "i32");
                const sdm::Status launched = grouped ? grouped->launch(nullptr, dV, rows, di, dw, dd, lr, B, K, D, workspace, 0) : sdm::Status(grouped.error());
                if (!launched) std::printf("%s: %s\n", name.c_str(), launched.error().message());
                s = launched.code();
            }
            const CUresult synced = sync();
            const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
            // Check against the CPU.
            int wrong = 0;
            if (!write) {
                std::vector<uint8_t> out(static_cast<size_t>(B) * D * es);
                dtoh(out.data(), dout, out.size());
                for (int b = 0; b < B; ++b)
                    for (int d = 0; d < D; ++d) {
                        double ref = 0, mag = 0;
                        for (int j = 0; j < K; ++j) {
                            const double t = double(w[static_cast<size_t>(b) * K + j]) * V[static_cast<size_t>(idx[static_cast<size_t>(b) * K + j]) * D + d];
                            ref += t, mag += std::fabs(t);
                        }
                        float got;
                        const size_t o = static_cast<size_t>(b) * D + d;
                        if (half) {
                            uint16_t h;
                            std::memcpy(&h, out.data() + o * 2, 2);
                            got = f32(h);
                        } else {
                            std::memcpy(&got, out.data() + o * 4, 4);
                        }
                        if (!(std::fabs(got - ref) <= (half ? 1e-2 : 1e-5) * (mag + 1e-3))) ++wrong;
                    }
            } else {
                std::vector<uint8_t> after(V.size() * es);
                dtoh(after.data(), dV, after.size());
                std::vector<double> ref(V.begin(), V.end()), mag(V.size(), 0), adds(V.size(), 0);
                for (size_t q = 0; q < idx.size(); ++q)
                    for (int d = 0; d < D; ++d) {
                        const size_t o = static_cast<size_t>(idx[q]) * D + d;
                        const double t = double(lr) * w[q] * delta[q / K * static_cast<size_t>(D) + d];
                        ref[o] += t, mag[o] += std::fabs(t), adds[o] += 1;
                    }
                for (size_t i = 0; i < V.size(); ++i) {
                    float got;
                    if (half) {
                        uint16_t h;
                        std::memcpy(&h, after.data() + i * 2, 2);
                        got = f32(h);
                    } else {
                        std::memcpy(&got, after.data() + i * 4, 4);
                    }
                    // bf16: the atomic write rounds at every add, the deterministic one once.
                    const double steps = op == 1 ? adds[i] + 1 : 1;
                    const double allowed = half ? steps * (std::fabs(V[i]) + mag[i]) / 256.0 + 1e-6 : 1e-5 * (std::fabs(ref[i]) + mag[i]) + 1e-6;
                    if (!(std::fabs(got - ref[i]) <= allowed)) ++wrong;
                }
                if (step == 2) first_det = after;
                else if (step == 3 && first_det != after) wrong = -1;  // the two deterministic runs differ
            }
            const bool ok = s == SDM_OK && synced == CUDA_SUCCESS && wrong == 0;
            failures += ok ? 0 : 1;
            ++checks;
            const std::string verdict = ok ? (step == 3 ? "matches the CPU reference and the first run, bit for bit" : "matches the CPU reference")
                                           : wrong < 0 ? "WRONG: the two runs differ" : "WRONG: " + std::to_string(wrong) + " values";
            std::printf("%-32s %s: image %s sm_%u from %s; plan grid %u x %u threads (rule %d, occupancy %d/SM%s); %.0f us incl. launch; %s\n",
                        name.c_str(), op == 0 ? "out = sum w*V[idx]" : op == 1 ? "V[idx] += lr*w*delta" : "the same, deterministic",
                        info.image_kind == 1 ? "cubin" : "PTX", info.loaded_sm, source_name(info.source), plan.grid, plan.block, plan.rule,
                        plan.occupancy, (plan.flags & SDM_PLAN_PDL) != 0 ? ", PDL" : "", us, verdict.c_str());
        }
        for (const CUdeviceptr p : {dV, di, dw, dd, dout, workspace}) mfree(p);
    }
    std::printf("%s (%d checks)\n", failures == 0 ? "all checks passed" : "some checks FAILED", checks);
    return failures == 0 ? 0 : 1;
}
