// Row-wise fused softmax and layer normalization: one warp (short rows) or one block (long rows)
// per row, warp-shuffle reductions, fp32 and bf16 storage with fp32 math.
#include <cuda_bf16.h>

#include <cfloat>

namespace {

__device__ __forceinline__ float load(const float* p) { return *p; }
__device__ __forceinline__ float load(const __nv_bfloat16* p) { return __bfloat162float(*p); }
__device__ __forceinline__ void store(float* p, float v) { *p = v; }
__device__ __forceinline__ void store(__nv_bfloat16* p, float v) { *p = __float2bfloat16_rn(v); }

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

// Block reductions over up to 32 warps; `scratch` holds 32 floats.
template <bool MAX>
__device__ float block_reduce(float v, float* scratch) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = MAX ? warp_max(v) : warp_sum(v);
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    const int warps = (blockDim.x + 31) >> 5;
    v = lane < warps ? scratch[lane] : (MAX ? -FLT_MAX : 0.0f);
    v = MAX ? warp_max(v) : warp_sum(v);
    __syncthreads();
    return v;
}

// One warp per row, the row held in registers (cols <= 32 * PER_LANE).
template <typename T, int PER_LANE>
__device__ void softmax_warp(const T* in, T* out, const unsigned char* mask, int rows, int cols, float scale) {
    const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    const int lane = threadIdx.x & 31;
    if (row >= rows) return;
    float v[PER_LANE];
    float mx = -FLT_MAX;
#pragma unroll
    for (int i = 0; i < PER_LANE; ++i) {
        const int c = lane + 32 * i;
        const bool keep = c < cols && (mask == nullptr || mask[static_cast<size_t>(row) * cols + c]);
        v[i] = keep ? load(in + static_cast<size_t>(row) * cols + c) * scale : -FLT_MAX;
        mx = fmaxf(mx, v[i]);
    }
    mx = warp_max(mx);
    float sum = 0.0f;
#pragma unroll
    for (int i = 0; i < PER_LANE; ++i) {
        v[i] = v[i] == -FLT_MAX ? 0.0f : __expf(v[i] - mx);
        sum += v[i];
    }
    sum = warp_sum(sum);
    const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
#pragma unroll
    for (int i = 0; i < PER_LANE; ++i) {
        const int c = lane + 32 * i;
        if (c < cols) store(out + static_cast<size_t>(row) * cols + c, v[i] * inv);
    }
}

// One block per row, any length: three passes over global memory.
template <typename T>
__device__ void softmax_block(const T* in, T* out, int cols, float scale) {
    __shared__ float scratch[32];
    const T* x = in + static_cast<size_t>(blockIdx.x) * cols;
    T* y = out + static_cast<size_t>(blockIdx.x) * cols;
    float mx = -FLT_MAX;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) mx = fmaxf(mx, load(x + c) * scale);
    mx = block_reduce<true>(mx, scratch);
    float sum = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) sum += __expf(load(x + c) * scale - mx);
    sum = block_reduce<false>(sum, scratch);
    const float inv = 1.0f / sum;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) store(y + c, __expf(load(x + c) * scale - mx) * inv);
}

// LayerNorm with optional residual add: y = (x + r - mean) / sqrt(var + eps) * gamma + beta. Welford-free
// two-moment form in fp32; also writes mean and rstd for the backward pass.
template <typename T, int PER_THREAD>
__device__ void layernorm(const T* x, const T* residual, const T* gamma, const T* beta, T* y, float* mean_out, float* rstd_out, int cols,
                          float eps) {
    __shared__ float scratch[32];
    const size_t base = static_cast<size_t>(blockIdx.x) * cols;
    float v[PER_THREAD];
    float s = 0.0f, s2 = 0.0f;
#pragma unroll
    for (int i = 0; i < PER_THREAD; ++i) {
        const int c = threadIdx.x + i * blockDim.x;
        v[i] = 0.0f;
        if (c < cols) {
            v[i] = load(x + base + c);
            if (residual != nullptr) v[i] += load(residual + base + c);
        }
        s += v[i];
        s2 += v[i] * v[i];
    }
    s = block_reduce<false>(s, scratch);
    s2 = block_reduce<false>(s2, scratch);
    const float mean = s / cols;
    const float var = fmaxf(s2 / cols - mean * mean, 0.0f);
    const float rstd = rsqrtf(var + eps);
#pragma unroll
    for (int i = 0; i < PER_THREAD; ++i) {
        const int c = threadIdx.x + i * blockDim.x;
        if (c < cols) store(y + base + c, (v[i] - mean) * rstd * load(gamma + c) + load(beta + c));
    }
    if (threadIdx.x == 0) {
        if (mean_out != nullptr) mean_out[blockIdx.x] = mean;
        if (rstd_out != nullptr) rstd_out[blockIdx.x] = rstd;
    }
}

}  // namespace

extern "C" __global__ void softmax_warp_f32_1k(const float* in, float* out, const unsigned char* mask, int rows, int cols, float scale) {
    softmax_warp<float, 32>(in, out, mask, rows, cols, scale);
}
extern "C" __global__ void softmax_warp_bf16_1k(const __nv_bfloat16* in, __nv_bfloat16* out, const unsigned char* mask, int rows, int cols,
                                                float scale) {
    softmax_warp<__nv_bfloat16, 32>(in, out, mask, rows, cols, scale);
}
extern "C" __global__ void softmax_warp_f32_128(const float* in, float* out, const unsigned char* mask, int rows, int cols, float scale) {
    softmax_warp<float, 4>(in, out, mask, rows, cols, scale);
}
extern "C" __global__ void softmax_block_f32(const float* in, float* out, int cols, float scale) { softmax_block<float>(in, out, cols, scale); }
extern "C" __global__ void softmax_block_bf16(const __nv_bfloat16* in, __nv_bfloat16* out, int cols, float scale) {
    softmax_block<__nv_bfloat16>(in, out, cols, scale);
}
extern "C" __global__ void __launch_bounds__(1024) layernorm_f32(const float* x, const float* residual, const float* gamma, const float* beta,
                                                                 float* y, float* mean, float* rstd, int cols, float eps) {
    layernorm<float, 8>(x, residual, gamma, beta, y, mean, rstd, cols, eps);
}
extern "C" __global__ void __launch_bounds__(1024) layernorm_bf16(const __nv_bfloat16* x, const __nv_bfloat16* residual,
                                                                  const __nv_bfloat16* gamma, const __nv_bfloat16* beta, __nv_bfloat16* y,
                                                                  float* mean, float* rstd, int cols, float eps) {
    layernorm<__nv_bfloat16, 8>(x, residual, gamma, beta, y, mean, rstd, cols, eps);
}
