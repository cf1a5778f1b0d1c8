// sdm_rows.cuh: the pieces the SDM kernels share: 16-byte vectors of fp32 / bf16 values with fp32
// accumulation, the checked-mode index test, how a block lays rows of work over its threads, and
// the atomic vector reductions of the write.
#pragma once
#include <cuda_bf16.h>
#include <stdint.h>

namespace sdm_rows {

template <typename T>
struct Vec;
template <>
struct Vec<float> {
    static constexpr int n = 4;
    using type = float4;
    __device__ static void add(float* acc, type v, float w) {
        acc[0] += w * v.x, acc[1] += w * v.y, acc[2] += w * v.z, acc[3] += w * v.w;
    }
    __device__ static type pack(const float* acc) { return make_float4(acc[0], acc[1], acc[2], acc[3]); }
};
template <>
struct Vec<__nv_bfloat16> {
    static constexpr int n = 8;
    using type = uint4;
    __device__ static void add(float* acc, type v, float w) {
        const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&v);
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const float2 f = __bfloat1622float2(h[i]);
            acc[2 * i] += w * f.x, acc[2 * i + 1] += w * f.y;
        }
    }
    __device__ static type pack(const float* acc) {
        type out;
        __nv_bfloat162* h = reinterpret_cast<__nv_bfloat162*>(&out);
#pragma unroll
        for (int i = 0; i < 4; ++i) h[i] = __floats2bfloat162_rn(acc[2 * i], acc[2 * i + 1]);
        return out;
    }
};

__device__ inline float to_float(float v) { return v; }
__device__ inline float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T>
__device__ inline T from_float(float v);
template <>
__device__ inline float from_float<float>(float v) { return v; }
template <>
__device__ inline __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

// Whether index v of position p may be used; reports the first bad position otherwise.
template <typename I>
__device__ inline bool usable(I v, int64_t rows, int* error, int64_t p) {
    if (error == nullptr) return true;
    if (v >= 0 && static_cast<int64_t>(v) < rows) return true;
    atomicMin(error, static_cast<int>(p < INT32_MAX ? p : INT32_MAX - 1));
    return false;
}

// How a block spreads rows of work (a gathered row, or a (b, j) pair's update) over its threads:
// 16-byte chunks when every row starts on a 16-byte boundary (D a multiple of the vector width n),
// else one column per chunk; `lanes` threads per row (one chunk each per step), `per_block` rows
// per block; this thread is lane `lane` of row slot `sub`.
struct RowLayout {
    bool vector;
    int chunks, lanes, per_block, sub, lane;
    __device__ RowLayout(int D, int n) {
        vector = D % n == 0;
        chunks = vector ? D / n : D;
        lanes = chunks < static_cast<int>(blockDim.x) ? chunks : static_cast<int>(blockDim.x);
        per_block = lanes > 0 ? static_cast<int>(blockDim.x) / lanes : 0;
        sub = lanes > 0 ? static_cast<int>(threadIdx.x) / lanes : 0;
        lane = lanes > 0 ? static_cast<int>(threadIdx.x) % lanes : 0;
    }
    __device__ bool idle() const { return lanes == 0 || sub >= per_block; }
};

__device__ inline void atomic_add(float* p, float v) { atomicAdd(p, v); }
__device__ inline void atomic_add(__nv_bfloat16* p, float v) { atomicAdd(p, __float2bfloat16_rn(v)); }

// dst[0..n) += scale * src[0..n) for one 16-byte chunk (16-byte aligned): one vector reduction on
// Hopper and later (red.global.add of a float4, or of four bf16x2), element or pair atomics before.
__device__ inline void atomic_add_chunk(float* dst, const float* src, float scale) {
    const float4 d = *reinterpret_cast<const float4*>(src);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    atomicAdd(reinterpret_cast<float4*>(dst), make_float4(scale * d.x, scale * d.y, scale * d.z, scale * d.w));
#else
    atomicAdd(dst, scale * d.x), atomicAdd(dst + 1, scale * d.y), atomicAdd(dst + 2, scale * d.z), atomicAdd(dst + 3, scale * d.w);
#endif
}
__device__ inline void atomic_add_chunk(__nv_bfloat16* dst, const __nv_bfloat16* src, float scale) {
    const uint4 raw = *reinterpret_cast<const uint4*>(src);
    const __nv_bfloat162* in = reinterpret_cast<const __nv_bfloat162*>(&raw);
    __nv_bfloat162 add[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const float2 f = __bfloat1622float2(in[i]);
        add[i] = __floats2bfloat162_rn(scale * f.x, scale * f.y);
    }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    const unsigned* u = reinterpret_cast<const unsigned*>(add);
    asm volatile("red.global.add.noftz.v4.bf16x2 [%0], {%1, %2, %3, %4};" ::"l"(dst), "r"(u[0]), "r"(u[1]), "r"(u[2]), "r"(u[3]) : "memory");
#else
#pragma unroll
    for (int i = 0; i < 4; ++i) atomicAdd(reinterpret_cast<__nv_bfloat162*>(reinterpret_cast<void*>(dst)) + i, add[i]);
#endif
}

}  // namespace sdm_rows
