// Histograms with shared-memory privatization and atomics: fixed 256 bins over bytes, a
// configurable number of bins over floats in a range, and a per-block partial + merge pair.
#include <cstdint>

namespace {

// One private copy per warp reduces contention on the shared-memory atomics.
template <int BINS, int WARPS>
__device__ void byte_histogram(const uint8_t* __restrict__ data, size_t n, unsigned int* __restrict__ global_bins) {
    __shared__ unsigned int bins[WARPS][BINS];
    for (int i = threadIdx.x; i < WARPS * BINS; i += blockDim.x) (&bins[0][0])[i] = 0;
    __syncthreads();
    const int warp = (threadIdx.x / 32) % WARPS;
    const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
    // Four bytes per load where aligned.
    const size_t words = n / 4;
    const uint32_t* w = reinterpret_cast<const uint32_t*>(data);
    for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < words; i += stride) {
        const uint32_t v = __ldg(w + i);
        atomicAdd(&bins[warp][(v >> 0) & 0xff], 1u);
        atomicAdd(&bins[warp][(v >> 8) & 0xff], 1u);
        atomicAdd(&bins[warp][(v >> 16) & 0xff], 1u);
        atomicAdd(&bins[warp][(v >> 24) & 0xff], 1u);
    }
    for (size_t i = words * 4 + static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) atomicAdd(&bins[warp][data[i]], 1u);
    __syncthreads();
    for (int b = threadIdx.x; b < BINS; b += blockDim.x) {
        unsigned int sum = 0;
#pragma unroll
        for (int k = 0; k < WARPS; ++k) sum += bins[k][b];
        if (sum) atomicAdd(global_bins + b, sum);
    }
}

}  // namespace

extern "C" __global__ void __launch_bounds__(256) histogram_u8_256(const uint8_t* data, size_t n, unsigned int* bins) {
    byte_histogram<256, 8>(data, n, bins);
}

extern "C" __global__ void __launch_bounds__(512) histogram_u8_256_w4(const uint8_t* data, size_t n, unsigned int* bins) {
    byte_histogram<256, 4>(data, n, bins);
}

// Float values in [lo, hi) into `nbins` bins (dynamic shared memory, nbins * 4 bytes); values outside
// go to the first and last bins; NaNs are counted separately.
extern "C" __global__ void histogram_f32_range(const float* __restrict__ data, size_t n, float lo, float hi, int nbins,
                                               unsigned long long* __restrict__ bins, unsigned long long* __restrict__ nan_count) {
    extern __shared__ unsigned int shared_bins[];
    __shared__ unsigned int shared_nan;
    for (int i = threadIdx.x; i < nbins; i += blockDim.x) shared_bins[i] = 0;
    if (threadIdx.x == 0) shared_nan = 0;
    __syncthreads();
    const float scale = nbins / (hi - lo);
    for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += static_cast<size_t>(gridDim.x) * blockDim.x) {
        const float v = data[i];
        if (isnan(v)) {
            atomicAdd(&shared_nan, 1u);
            continue;
        }
        const int b = min(max(static_cast<int>(floorf((v - lo) * scale)), 0), nbins - 1);
        atomicAdd(&shared_bins[b], 1u);
    }
    __syncthreads();
    for (int i = threadIdx.x; i < nbins; i += blockDim.x)
        if (shared_bins[i]) atomicAdd(bins + i, static_cast<unsigned long long>(shared_bins[i]));
    if (threadIdx.x == 0 && shared_nan) atomicAdd(nan_count, static_cast<unsigned long long>(shared_nan));
}

// Two-phase variant without global atomics: each block writes its partial histogram, then one block
// per bin column sums the partials.
extern "C" __global__ void __launch_bounds__(256) histogram_u16_partial(const uint16_t* __restrict__ keys, size_t n, int bin_shift,
                                                                        unsigned int* __restrict__ partials) {
    __shared__ unsigned int bins[1024];
    for (int i = threadIdx.x; i < 1024; i += blockDim.x) bins[i] = 0;
    __syncthreads();
    for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += static_cast<size_t>(gridDim.x) * blockDim.x)
        atomicAdd(&bins[(keys[i] >> bin_shift) & 1023], 1u);
    __syncthreads();
    for (int i = threadIdx.x; i < 1024; i += blockDim.x) partials[static_cast<size_t>(blockIdx.x) * 1024 + i] = bins[i];
}

extern "C" __global__ void __launch_bounds__(256) histogram_merge(const unsigned int* __restrict__ partials, int blocks, unsigned int* __restrict__ out) {
    const int bin = blockIdx.x * blockDim.x + threadIdx.x;
    if (bin >= 1024) return;
    unsigned int sum = 0;
    for (int b = 0; b < blocks; ++b) sum += partials[static_cast<size_t>(b) * 1024 + bin];
    out[bin] = sum;
}
