// The Sparse Delta Memory kernels: the memory read and the sparse delta write (an atomic variant and
// a deterministic one), for fp32 and bf16 values (fp32 accumulation) and int32 / int64 indices.
//
//   sdm_gather_<v>_<i>:  out[b, :] = sum_j w[b, j] * V[idx[b, j], :]
//   sdm_scatter_delta_atomic_<v>_<i>:  V[idx[b, j], :] += lr * w[b, j] * delta[b, :]
//   the deterministic write, three steps on one stream (docs/KERNELS.md; sdm::scatter_delta_grouped):
//     sdm_group_keys_<i>           keys[p] = idx[p] << shift | p for the n = B*K flat positions,
//                                  sorted within tiles of 2,048
//     sdm_group_merge              one merge pass of sorted runs of `width` keys (repeat, doubling)
//     sdm_scatter_delta_grouped_<v>  for each distinct index, in position order, the sum of its
//                                  lr * w * delta rows in fp32, added to V once: bitwise the same
//                                  result on every run, whatever the duplicates
//
// Layout: V is rows x D, row-major; idx and w are B x K; out and delta are B x D. w and lr are fp32.
// Every kernel is a grid-stride loop over rows (any grid is correct; the plans cap it). Columns go
// 16 bytes at a time (4 fp32 or 8 bf16 per thread), with a scalar tail when D is not a multiple of
// that. `error` (may be null): with it, an index outside [0, rows) is not dereferenced; the first
// offending flat position b*K+j is stored there (atomicMin; the host initialises it to INT_MAX), so
// a bad index is reported instead of corrupting memory. The deterministic write never applies an
// index outside [0, rows), with or without `error`.
#include <cuda_bf16.h>
#include <stdint.h>

#include "sdm_copy.cuh"
#include "sdm_rows.cuh"

namespace {

using namespace sdm_rows;

template <typename T, typename I>
__device__ void gather(const T* __restrict__ V, int64_t rows, const I* __restrict__ idx, const float* __restrict__ w, T* __restrict__ out,
                       int B, int K, int D, int* error) {
    using Vc = Vec<T>;
    const RowLayout l(D, Vc::n);
    if (l.idle()) return;
    for (int64_t b = static_cast<int64_t>(blockIdx.x) * l.per_block + l.sub; b < B; b += static_cast<int64_t>(gridDim.x) * l.per_block) {
        const I* row_idx = idx + b * K;
        const float* row_w = w + b * K;
        for (int c = l.lane; c < l.chunks; c += l.lanes) {
            if (l.vector) {
                float acc[Vc::n] = {};
                int j = 0;
                for (; j + 4 <= K; j += 4) {  // four independent loads in flight
                    typename Vc::type v[4];
                    float wj[4];
                    bool ok[4];
#pragma unroll
                    for (int u = 0; u < 4; ++u) {
                        const I r = row_idx[j + u];
                        ok[u] = usable(r, rows, error, b * K + j + u);
                        wj[u] = row_w[j + u];
                        if (ok[u]) v[u] = __ldg(reinterpret_cast<const typename Vc::type*>(V + static_cast<int64_t>(r) * D) + c);
                    }
#pragma unroll
                    for (int u = 0; u < 4; ++u)
                        if (ok[u]) Vc::add(acc, v[u], wj[u]);
                }
                for (; j < K; ++j) {
                    const I r = row_idx[j];
                    if (!usable(r, rows, error, b * K + j)) continue;
                    Vc::add(acc, __ldg(reinterpret_cast<const typename Vc::type*>(V + static_cast<int64_t>(r) * D) + c), row_w[j]);
                }
                reinterpret_cast<typename Vc::type*>(out + b * D)[c] = Vc::pack(acc);
            } else {
                float s = 0.f;
                for (int j = 0; j < K; ++j) {
                    const I r = row_idx[j];
                    if (usable(r, rows, error, b * K + j)) s += row_w[j] * to_float(V[static_cast<int64_t>(r) * D + c]);
                }
                out[b * D + c] = from_float<T>(s);
            }
        }
    }
}

template <typename T, typename I>
__device__ void scatter_atomic(T* V, int64_t rows, const I* __restrict__ idx, const float* __restrict__ w, const T* __restrict__ delta, float lr,
                               int B, int K, int D, int* error) {
    // Laid out as the read: each (b, j) pair is a row of work.
    using Vc = Vec<T>;
    const RowLayout l(D, Vc::n);
    if (l.idle()) return;
    const int64_t pairs = static_cast<int64_t>(B) * K;
    for (int64_t p = static_cast<int64_t>(blockIdx.x) * l.per_block + l.sub; p < pairs; p += static_cast<int64_t>(gridDim.x) * l.per_block) {
        const I r = idx[p];
        if (!usable(r, rows, error, p)) continue;
        const float scale = lr * w[p];
        T* dst = V + static_cast<int64_t>(r) * D;
        const T* src = delta + (p / K) * D;
        for (int c = l.lane; c < l.chunks; c += l.lanes) {
            if (l.vector) atomic_add_chunk(dst + c * Vc::n, src + c * Vc::n, scale);
            else atomic_add(dst + c, scale * to_float(src[c]));
        }
    }
}

// ---- the deterministic write -------------------------------------------------------------------
// A key is (index << shift) | p for flat position p < n, shift = the bits of n - 1: keys are
// distinct, and sorted they group equal indices in position order. An unusable index (outside
// [0, rows), or not below the all-ones index) becomes the all-ones index: sorted last, never applied.
__device__ inline int key_shift(int n) { return n > 1 ? 64 - __clzll(static_cast<long long>(n - 1)) : 1; }
constexpr int kTile = 2048;  // keys one block sorts in shared memory

template <typename I>
__device__ void group_keys(const I* __restrict__ idx, int64_t rows, int n, uint64_t* __restrict__ keys, int* error) {
    __shared__ uint64_t tile[kTile];
    sdm_copy::pdl_wait();
    sdm_copy::pdl_launch_dependents();
    const int shift = key_shift(n);
    const uint64_t bad = ~0ull >> shift;
    for (int64_t base = static_cast<int64_t>(blockIdx.x) * kTile; base < n; base += static_cast<int64_t>(gridDim.x) * kTile) {
        for (int i = threadIdx.x; i < kTile; i += blockDim.x) {
            const int64_t p = base + i;
            uint64_t k = ~0ull;  // padding past n: sorts last, never stored
            if (p < n) {
                const I v = idx[p];
                const bool ok = v >= 0 && static_cast<uint64_t>(v) < static_cast<uint64_t>(rows) && static_cast<uint64_t>(v) < bad;
                if (!ok && error != nullptr) atomicMin(error, static_cast<int>(p));
                k = ((ok ? static_cast<uint64_t>(v) : bad) << shift) | static_cast<uint64_t>(p);
            }
            tile[i] = k;
        }
        __syncthreads();
        for (int size = 2; size <= kTile; size <<= 1) {  // bitonic sort, ascending
            for (int stride = size >> 1; stride > 0; stride >>= 1) {
                for (int i = threadIdx.x; i < kTile / 2; i += blockDim.x) {
                    const int lo = 2 * i - (i & (stride - 1));
                    const uint64_t a = tile[lo], b = tile[lo + stride];
                    if ((a > b) == ((lo & size) == 0)) tile[lo] = b, tile[lo + stride] = a;
                }
                __syncthreads();
            }
        }
        for (int i = threadIdx.x; i < kTile && base + i < n; i += blockDim.x) keys[base + i] = tile[i];
        __syncthreads();
    }
}

// Merges each pair of sorted runs of `width` keys of `in` into `out`: a key's place is its rank in
// its own run plus its rank in the other run (a binary search; the keys are distinct).
__device__ void group_merge(const uint64_t* __restrict__ in, uint64_t* __restrict__ out, int n, int width) {
    sdm_copy::pdl_wait();
    sdm_copy::pdl_launch_dependents();
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        const uint64_t k = in[i];
        const int64_t run = i / width, base = (run & ~1LL) * width;
        const bool left = (run & 1) == 0;
        const int64_t other = left ? base + width : base;
        int64_t lo = other, hi = left ? (base + 2LL * width < n ? base + 2LL * width : n) : base + width;
        if (hi < lo) hi = lo;
        while (lo < hi) {
            const int64_t mid = (lo + hi) / 2;
            if (in[mid] < k) lo = mid + 1;
            else hi = mid;
        }
        out[base + (i - (left ? base : base + width)) + (lo - other)] = k;
    }
}

// Each group of equal indices (sorted keys) is one row of work: its lanes sum lr * w[p] * delta[p / K]
// over the group in position order in fp32, then add the sum to the row once.
template <typename T>
__device__ void scatter_grouped(T* V, const uint64_t* __restrict__ keys, int n, const float* __restrict__ w, const T* __restrict__ delta,
                                float lr, int K, int D) {
    sdm_copy::pdl_wait();
    sdm_copy::pdl_launch_dependents();
    using Vc = Vec<T>;
    const RowLayout l(D, Vc::n);
    if (l.idle()) return;
    const int shift = key_shift(n);
    const uint64_t mask = (1ull << shift) - 1, bad = ~0ull >> shift;
    for (int64_t s = static_cast<int64_t>(blockIdx.x) * l.per_block + l.sub; s < n; s += static_cast<int64_t>(gridDim.x) * l.per_block) {
        const uint64_t r = keys[s] >> shift;
        if (r == bad || (s > 0 && keys[s - 1] >> shift == r)) continue;  // not the first of its group
        T* dst = V + static_cast<int64_t>(r) * D;
        for (int c = l.lane; c < l.chunks; c += l.lanes) {
            if (l.vector) {
                float acc[Vc::n] = {};
                for (int64_t t = s; t < n && keys[t] >> shift == r; ++t) {
                    const int64_t p = static_cast<int64_t>(keys[t] & mask);
                    Vc::add(acc, reinterpret_cast<const typename Vc::type*>(delta + (p / K) * D)[c], lr * w[p]);
                }
                typename Vc::type* d = reinterpret_cast<typename Vc::type*>(dst) + c;
                float sum[Vc::n] = {};
                Vc::add(sum, *d, 1.f);
#pragma unroll
                for (int e = 0; e < Vc::n; ++e) sum[e] += acc[e];
                *d = Vc::pack(sum);
            } else {
                float acc = 0.f;
                for (int64_t t = s; t < n && keys[t] >> shift == r; ++t) {
                    const int64_t p = static_cast<int64_t>(keys[t] & mask);
                    acc += lr * w[p] * to_float(delta[(p / K) * D + c]);
                }
                dst[c] = from_float<T>(to_float(dst[c]) + acc);
            }
        }
    }
}

}  // namespace

#define SDM_KERNELS(V, VT, I, IT)                                                                                                      \
    extern "C" __global__ void sdm_gather_##V##_##I(const VT* V_, int64_t rows, const IT* idx, const float* w, VT* out, int B, int K, int D, \
                                                  int* error) {                                                                       \
        gather<VT, IT>(V_, rows, idx, w, out, B, K, D, error);                                                                         \
    }                                                                                                                                  \
    extern "C" __global__ void sdm_scatter_delta_atomic_##V##_##I(VT* V_, int64_t rows, const IT* idx, const float* w, const VT* delta,   \
                                                                 float lr, int B, int K, int D, int* error) {                        \
        scatter_atomic<VT, IT>(V_, rows, idx, w, delta, lr, B, K, D, error);                                                           \
    }

SDM_KERNELS(f32, float, i32, int32_t)
SDM_KERNELS(f32, float, i64, int64_t)
SDM_KERNELS(bf16, __nv_bfloat16, i32, int32_t)
SDM_KERNELS(bf16, __nv_bfloat16, i64, int64_t)

extern "C" __global__ void sdm_group_keys_i32(const int32_t* idx, int64_t rows, int n, uint64_t* keys, int* error) {
    group_keys<int32_t>(idx, rows, n, keys, error);
}
extern "C" __global__ void sdm_group_keys_i64(const int64_t* idx, int64_t rows, int n, uint64_t* keys, int* error) {
    group_keys<int64_t>(idx, rows, n, keys, error);
}
extern "C" __global__ void sdm_group_merge(const uint64_t* in, uint64_t* out, int n, int width) { group_merge(in, out, n, width); }
extern "C" __global__ void sdm_scatter_delta_grouped_f32(float* V, const uint64_t* keys, int n, const float* w, const float* delta, float lr,
                                                         int K, int D) {
    scatter_grouped<float>(V, keys, n, w, delta, lr, K, D);
}
extern "C" __global__ void sdm_scatter_delta_grouped_bf16(__nv_bfloat16* V, const uint64_t* keys, int n, const float* w,
                                                          const __nv_bfloat16* delta, float lr, int K, int D) {
    scatter_grouped<__nv_bfloat16>(V, keys, n, w, delta, lr, K, D);
}
