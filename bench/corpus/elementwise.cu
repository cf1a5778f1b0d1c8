// Templated elementwise kernels (grid-stride, vectorized where the type allows) instantiated for
// several element types and operations: the pattern that makes real kernel libraries large.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

namespace ew {

template <typename T>
struct Math {
    static __device__ __forceinline__ float to(T v) { return static_cast<float>(v); }
    static __device__ __forceinline__ T from(float v) { return static_cast<T>(v); }
};
template <>
struct Math<__half> {
    static __device__ __forceinline__ float to(__half v) { return __half2float(v); }
    static __device__ __forceinline__ __half from(float v) { return __float2half_rn(v); }
};
template <>
struct Math<__nv_bfloat16> {
    static __device__ __forceinline__ float to(__nv_bfloat16 v) { return __bfloat162float(v); }
    static __device__ __forceinline__ __nv_bfloat16 from(float v) { return __float2bfloat16_rn(v); }
};
template <>
struct Math<double> {
    static __device__ __forceinline__ double to(double v) { return v; }
    static __device__ __forceinline__ double from(double v) { return v; }
};

struct Add {
    template <typename F> __device__ F operator()(F a, F b) const { return a + b; }
};
struct Mul {
    template <typename F> __device__ F operator()(F a, F b) const { return a * b; }
};
struct Axpby {
    float alpha, beta;
    template <typename F> __device__ F operator()(F a, F b) const { return F(alpha) * a + F(beta) * b; }
};
struct Relu {
    template <typename F> __device__ F operator()(F a) const { return a > F(0) ? a : F(0); }
};
struct Gelu {  // tanh approximation
    template <typename F> __device__ F operator()(F x) const {
        const F c = F(0.7978845608028654), k = F(0.044715);
        return F(0.5) * x * (F(1) + tanh(c * (x + k * x * x * x)));
    }
};
struct Silu {
    template <typename F> __device__ F operator()(F x) const { return x / (F(1) + exp(-x)); }
};

template <typename T, typename Op, int VEC>
__global__ void binary(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ out, size_t n, Op op) {
    using M = Math<T>;
    const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x * VEC;
    for (size_t base = (static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x) * VEC; base < n; base += stride) {
        if (base + VEC <= n) {
#pragma unroll
            for (int i = 0; i < VEC; ++i) out[base + i] = M::from(op(M::to(a[base + i]), M::to(b[base + i])));
        } else {
            for (size_t i = base; i < n; ++i) out[i] = M::from(op(M::to(a[i]), M::to(b[i])));
        }
    }
}

template <typename T, typename Op, int VEC>
__global__ void unary(const T* __restrict__ a, T* __restrict__ out, size_t n, Op op) {
    using M = Math<T>;
    const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x * VEC;
    for (size_t base = (static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x) * VEC; base < n; base += stride) {
        if (base + VEC <= n) {
#pragma unroll
            for (int i = 0; i < VEC; ++i) out[base + i] = M::from(op(M::to(a[base + i])));
        } else {
            for (size_t i = base; i < n; ++i) out[i] = M::from(op(M::to(a[i])));
        }
    }
}

// Broadcast a row vector over a matrix (bias add) with a strided output.
template <typename T, typename Op>
__global__ void broadcast_rows(const T* __restrict__ m, const T* __restrict__ row, T* __restrict__ out, int rows, int cols, Op op) {
    using M = Math<T>;
    for (int r = blockIdx.y; r < rows; r += gridDim.y)
        for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < cols; c += gridDim.x * blockDim.x)
            out[static_cast<size_t>(r) * cols + c] = M::from(op(M::to(m[static_cast<size_t>(r) * cols + c]), M::to(row[c])));
}

template <typename To, typename From>
__global__ void cast(const From* __restrict__ in, To* __restrict__ out, size_t n) {
    for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += static_cast<size_t>(gridDim.x) * blockDim.x)
        out[i] = Math<To>::from(Math<From>::to(in[i]));
}

#define SDM_BINARY(T, V)                                                                         \
    template __global__ void binary<T, Add, V>(const T*, const T*, T*, size_t, Add);             \
    template __global__ void binary<T, Mul, V>(const T*, const T*, T*, size_t, Mul);             \
    template __global__ void binary<T, Axpby, V>(const T*, const T*, T*, size_t, Axpby);         \
    template __global__ void unary<T, Relu, V>(const T*, T*, size_t, Relu);                      \
    template __global__ void unary<T, Gelu, V>(const T*, T*, size_t, Gelu);                      \
    template __global__ void unary<T, Silu, V>(const T*, T*, size_t, Silu);                      \
    template __global__ void broadcast_rows<T, Add>(const T*, const T*, T*, int, int, Add);      \
    template __global__ void broadcast_rows<T, Mul>(const T*, const T*, T*, int, int, Mul);

SDM_BINARY(float, 4)
SDM_BINARY(double, 2)
SDM_BINARY(__half, 8)
SDM_BINARY(__nv_bfloat16, 8)

template __global__ void cast<float, __half>(const __half*, float*, size_t);
template __global__ void cast<__half, float>(const float*, __half*, size_t);
template __global__ void cast<float, __nv_bfloat16>(const __nv_bfloat16*, float*, size_t);
template __global__ void cast<__nv_bfloat16, float>(const float*, __nv_bfloat16*, size_t);
template __global__ void cast<double, float>(const float*, double*, size_t);
template __global__ void cast<float, int32_t>(const int32_t*, float*, size_t);
template __global__ void cast<int32_t, float>(const float*, int32_t*, size_t);

}  // namespace ew
