// Tiled GEMM, C = alpha * A * B + beta * C (row-major), with shared-memory tiles and a register
// block per thread: fp32 in and out, and bf16 in with fp32 accumulation.
#include <cuda_bf16.h>

namespace {

template <typename T>
__device__ __forceinline__ float to_float(T v) { return static_cast<float>(v); }
template <>
__device__ __forceinline__ float to_float<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename Out>
__device__ __forceinline__ Out from_float(float v) { return static_cast<Out>(v); }
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

// Block tile BM x BN, K step BK; each thread computes TM x TN outputs.
template <typename In, typename Out, int BM, int BN, int BK, int TM, int TN>
__device__ void gemm_tile(int m, int n, int k, float alpha, const In* __restrict__ a, int lda, const In* __restrict__ b, int ldb,
                          float beta, Out* __restrict__ c, int ldc) {
    constexpr int THREADS = (BM / TM) * (BN / TN);
    __shared__ float as[BK][BM + 4];  // A stored transposed, padded against bank conflicts
    __shared__ float bs[BK][BN + 4];
    const int tid = threadIdx.x;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    const int ty = tid / (BN / TN), tx = tid % (BN / TN);
    float acc[TM][TN] = {};
    for (int k0 = 0; k0 < k; k0 += BK) {
#pragma unroll
        for (int i = tid; i < BM * BK; i += THREADS) {
            const int r = i / BK, kk = i % BK;
            const int gr = row0 + r, gk = k0 + kk;
            as[kk][r] = (gr < m && gk < k) ? to_float(a[static_cast<size_t>(gr) * lda + gk]) : 0.0f;
        }
#pragma unroll
        for (int i = tid; i < BK * BN; i += THREADS) {
            const int kk = i / BN, cidx = i % BN;
            const int gk = k0 + kk, gc = col0 + cidx;
            bs[kk][cidx] = (gk < k && gc < n) ? to_float(b[static_cast<size_t>(gk) * ldb + gc]) : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
            float ra[TM], rb[TN];
#pragma unroll
            for (int i = 0; i < TM; ++i) ra[i] = as[kk][ty * TM + i];
#pragma unroll
            for (int j = 0; j < TN; ++j) rb[j] = bs[kk][tx * TN + j];
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(ra[i], rb[j], acc[i][j]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int gr = row0 + ty * TM + i;
        if (gr >= m) continue;
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            const int gc = col0 + tx * TN + j;
            if (gc >= n) continue;
            Out* p = c + static_cast<size_t>(gr) * ldc + gc;
            const float prior = beta != 0.0f ? to_float(*p) : 0.0f;
            *p = from_float<Out>(alpha * acc[i][j] + beta * prior);
        }
    }
}

}  // namespace

extern "C" __global__ void __launch_bounds__(256) sgemm_128x128x8(int m, int n, int k, float alpha, const float* a, int lda, const float* b,
                                                                  int ldb, float beta, float* c, int ldc) {
    gemm_tile<float, float, 128, 128, 8, 8, 8>(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

extern "C" __global__ void __launch_bounds__(256) sgemm_64x64x16(int m, int n, int k, float alpha, const float* a, int lda, const float* b,
                                                                 int ldb, float beta, float* c, int ldc) {
    gemm_tile<float, float, 64, 64, 16, 4, 4>(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

extern "C" __global__ void __launch_bounds__(256) bf16gemm_128x128x16(int m, int n, int k, float alpha, const __nv_bfloat16* a, int lda,
                                                                      const __nv_bfloat16* b, int ldb, float beta, __nv_bfloat16* c, int ldc) {
    gemm_tile<__nv_bfloat16, __nv_bfloat16, 128, 128, 16, 8, 8>(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

extern "C" __global__ void __launch_bounds__(128) bf16gemm_f32out_64x32x32(int m, int n, int k, float alpha, const __nv_bfloat16* a,
                                                                           int lda, const __nv_bfloat16* b, int ldb, float beta, float* c,
                                                                           int ldc) {
    gemm_tile<__nv_bfloat16, float, 64, 32, 32, 4, 4>(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
