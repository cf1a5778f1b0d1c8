// Matrix transpose through a padded shared-memory tile (coalesced reads and writes), for element
// sizes 1-16 bytes, plus a batched out-of-place permute of the last two axes of a 3-D tensor.
#include <cuda_fp16.h>

#include <cstdint>

namespace {

constexpr int TILE = 32;
constexpr int ROWS = 8;  // block is TILE x ROWS threads; each thread moves TILE / ROWS elements

template <typename T>
__device__ void transpose_tile(const T* __restrict__ in, T* __restrict__ out, int rows, int cols, size_t batch_stride) {
    __shared__ T tile[TILE][TILE + 1];
    in += blockIdx.z * batch_stride;
    out += blockIdx.z * batch_stride;
    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
#pragma unroll
    for (int j = 0; j < TILE; j += ROWS)
        if (x < cols && y + j < rows) tile[threadIdx.y + j][threadIdx.x] = in[static_cast<size_t>(y + j) * cols + x];
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;
    y = blockIdx.x * TILE + threadIdx.y;
#pragma unroll
    for (int j = 0; j < TILE; j += ROWS)
        if (x < rows && y + j < cols) out[static_cast<size_t>(y + j) * rows + x] = tile[threadIdx.x][threadIdx.y + j];
}

// In-place transpose of square matrices: blocks on the diagonal swap within their tile, the others
// swap a pair of tiles.
template <typename T>
__device__ void transpose_square_inplace(T* m, int n) {
    __shared__ T a[TILE][TILE + 1];
    __shared__ T b[TILE][TILE + 1];
    const int bx = blockIdx.x, by = blockIdx.y;
    if (bx > by) return;
    const int tx = threadIdx.x, ty = threadIdx.y;
#pragma unroll
    for (int j = 0; j < TILE; j += ROWS) {
        const int r = by * TILE + ty + j, c = bx * TILE + tx;
        if (r < n && c < n) a[ty + j][tx] = m[static_cast<size_t>(r) * n + c];
        const int r2 = bx * TILE + ty + j, c2 = by * TILE + tx;
        if (bx != by && r2 < n && c2 < n) b[ty + j][tx] = m[static_cast<size_t>(r2) * n + c2];
    }
    __syncthreads();
#pragma unroll
    for (int j = 0; j < TILE; j += ROWS) {
        const int r = bx * TILE + ty + j, c = by * TILE + tx;
        if (r < n && c < n) m[static_cast<size_t>(r) * n + c] = a[tx][ty + j];
        const int r2 = by * TILE + ty + j, c2 = bx * TILE + tx;
        if (bx != by && r2 < n && c2 < n) m[static_cast<size_t>(r2) * n + c2] = b[tx][ty + j];
    }
}

}  // namespace

extern "C" __global__ void __launch_bounds__(256) transpose_u8(const uint8_t* in, uint8_t* out, int rows, int cols, size_t batch_stride) {
    transpose_tile(in, out, rows, cols, batch_stride);
}
extern "C" __global__ void __launch_bounds__(256) transpose_f16(const __half* in, __half* out, int rows, int cols, size_t batch_stride) {
    transpose_tile(in, out, rows, cols, batch_stride);
}
extern "C" __global__ void __launch_bounds__(256) transpose_f32(const float* in, float* out, int rows, int cols, size_t batch_stride) {
    transpose_tile(in, out, rows, cols, batch_stride);
}
extern "C" __global__ void __launch_bounds__(256) transpose_f64(const double* in, double* out, int rows, int cols, size_t batch_stride) {
    transpose_tile(in, out, rows, cols, batch_stride);
}
extern "C" __global__ void __launch_bounds__(256) transpose_f32x4(const float4* in, float4* out, int rows, int cols, size_t batch_stride) {
    transpose_tile(in, out, rows, cols, batch_stride);
}
extern "C" __global__ void __launch_bounds__(256) transpose_inplace_f32(float* m, int n) { transpose_square_inplace(m, n); }
extern "C" __global__ void __launch_bounds__(256) transpose_inplace_f64(double* m, int n) { transpose_square_inplace(m, n); }
