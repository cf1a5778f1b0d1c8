// The read staged through shared memory by the copy layer (kernels/sdm_copy.cuh), for
// bench/kernel_bench to weigh against the direct read of kernels/sdm_kernels.cu. Built twice for
// sm_90: as is (the modern side: bulk copies completing on an mbarrier) and with
// -DSDM_FORCE_PORTABLE (the portable side: cp.async), so one GPU measures both.
//
// A block of 256 threads takes work items (b, slice of 1 KiB of the row) in turn; for each, it
// stages up to 32 gathered rows of the slice at a time (two stages, one filling while the other is
// summed), each thread summing 4 bytes of the slice (one fp32 or two bf16) over the rows. Needs
// the slice to be 16-byte aligned: D * sizeof(T) a multiple of 16. Dynamic shared memory:
// 2 * 32 * slice bytes.
#include <cuda_bf16.h>
#include <stdint.h>

#include "../kernels/sdm_copy.cuh"
#include "../kernels/sdm_rows.cuh"

namespace {

using sdm_rows::to_float;

template <typename T, typename I>
__device__ void gather_staged(const T* __restrict__ V, int64_t rows, const I* __restrict__ idx, const float* __restrict__ w, T* __restrict__ out,
                              int B, int K, int D) {
    extern __shared__ __align__(128) unsigned char smem[];
    __shared__ uint64_t bars[2];
    constexpr int per_thread = 4 / sizeof(T);
    const int slice = min(D, static_cast<int>(blockDim.x) * per_thread);  // elements
    const int slices = D / slice;
    const uint32_t bytes = static_cast<uint32_t>(slice * sizeof(T));
    const int kchunks = (K + 31) / 32;
    sdm_copy::Stage stage[2] = {sdm_copy::Stage(&bars[0]), sdm_copy::Stage(&bars[1])};
    __syncthreads();
    const int64_t items = static_cast<int64_t>(B) * slices;
    const int64_t mine = items > blockIdx.x ? (items - blockIdx.x + gridDim.x - 1) / gridDim.x : 0;
    const int64_t fills = mine * kchunks;
    const auto item_of = [&](int64_t f) { return blockIdx.x + (f / kchunks) * static_cast<int64_t>(gridDim.x); };
    const auto issue = [&](int64_t f) {
        const int64_t item = item_of(f);
        const int64_t b = item / slices;
        const int so = static_cast<int>(item % slices) * slice, j0 = static_cast<int>(f % kchunks) * 32;
        stage[f & 1].gather(smem + (f & 1) * 32 * bytes, bytes, min(32, K - j0), [&](int j) -> const void* {
            const I r = idx[b * K + j0 + j];
            return r >= 0 && static_cast<int64_t>(r) < rows ? V + static_cast<int64_t>(r) * D + so : nullptr;
        });
    };
    if (fills > 0) issue(0);
    float acc[per_thread] = {};
    const int col = static_cast<int>(threadIdx.x) * per_thread;
    for (int64_t f = 0; f < fills; ++f) {
        if (f + 1 < fills) {
            issue(f + 1);
            stage[f & 1].template wait<1>();
        } else {
            stage[f & 1].template wait<0>();
        }
        const int64_t item = item_of(f);
        const int64_t b = item / slices;
        const int so = static_cast<int>(item % slices) * slice, j0 = static_cast<int>(f % kchunks) * 32;
        const int count = min(32, K - j0);
        if (col < slice) {
            const T* buf = reinterpret_cast<const T*>(smem + (f & 1) * 32 * bytes);
            for (int j = 0; j < count; ++j) {
                const I r = idx[b * K + j0 + j];
                if (r < 0 || static_cast<int64_t>(r) >= rows) continue;
                const float wj = w[b * K + j0 + j];
#pragma unroll
                for (int e = 0; e < per_thread; ++e) acc[e] += wj * to_float(buf[j * slice + col + e]);
            }
            if (j0 + count == K) {
#pragma unroll
                for (int e = 0; e < per_thread; ++e) out[b * D + so + col + e] = sdm_rows::from_float<T>(acc[e]), acc[e] = 0.f;
            }
        }
        __syncthreads();  // the stage is read before it is refilled
    }
}

}  // namespace

extern "C" __global__ void sdm_gather_staged_f32_i32(const float* V, int64_t rows, const int32_t* idx, const float* w, float* out, int B, int K,
                                                     int D) {
    gather_staged<float, int32_t>(V, rows, idx, w, out, B, K, D);
}
extern "C" __global__ void sdm_gather_staged_bf16_i32(const __nv_bfloat16* V, int64_t rows, const int32_t* idx, const float* w,
                                                      __nv_bfloat16* out, int B, int K, int D) {
    gather_staged<__nv_bfloat16, int32_t>(V, rows, idx, w, out, B, K, D);
}
