// Source of tests/data/launch.* (regenerate.sh): kernels launched the way their authors wrote them
// (tests/runtime/kernel/test_launch_config.cpp with the fake driver, tests/gpu/test_gpu_user_kernels.cpp on a GPU):
// a 2-D tiled matrix multiply, a cooperative kernel using grid.sync(), a kernel reading a
// __constant__ table, a __device__ counter, and C++ templates fetched by their C++ spelling.
#include <cooperative_groups.h>

namespace cg = cooperative_groups;

constexpr int kTile = 16;

// C = A * B for row-major n x n matrices; blocks of kTile x kTile threads, a grid of
// ceil(n / kTile) x ceil(n / kTile) blocks.
extern "C" __global__ void matmul_tiled(const float* a, const float* b, float* c, int n) {
    __shared__ float as[kTile][kTile];
    __shared__ float bs[kTile][kTile];
    const int row = blockIdx.y * kTile + threadIdx.y, col = blockIdx.x * kTile + threadIdx.x;
    float sum = 0.f;
    for (int t = 0; t < n; t += kTile) {
        as[threadIdx.y][threadIdx.x] = row < n && t + threadIdx.x < n ? a[row * n + t + threadIdx.x] : 0.f;
        bs[threadIdx.y][threadIdx.x] = col < n && t + threadIdx.y < n ? b[(t + threadIdx.y) * n + col] : 0.f;
        __syncthreads();
        for (int k = 0; k < kTile; ++k) sum += as[threadIdx.y][k] * bs[k][threadIdx.x];
        __syncthreads();
    }
    if (row < n && col < n) c[row * n + col] = sum;
}

// Every block adds its index into partial[blockIdx.x], the grid waits (grid.sync()), then block 0
// sums the partials into *total: correct only when every block is resident at once.
extern "C" __global__ void grid_sum(int* partial, int* total) {
    cg::grid_group grid = cg::this_grid();
    if (threadIdx.x == 0) partial[blockIdx.x] = static_cast<int>(blockIdx.x);
    grid.sync();
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        int sum = 0;
        for (unsigned i = 0; i < gridDim.x; ++i) sum += partial[i];
        *total = sum;
    }
}

__constant__ float coefficients[16];
__device__ unsigned int launches;

// out[i] = coefficients[i % 16] * in[i]; counts its launches in `launches`.
extern "C" __global__ void scale_by_table(const float* in, float* out, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i == 0) atomicAdd(&launches, 1u);
    if (i < n) out[i] = coefficients[i % 16] * in[i];
}

namespace sdm_test {
template <typename T, int N>
__global__ void fill(T* p, T value) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) p[i] = value;
}
template __global__ void fill<float, 256>(float*, float);
template __global__ void fill<int, 256>(int*, int);

template <typename T>
__global__ void reduce(const T* in, T* out, int n) {
    T sum = 0;
    for (int i = threadIdx.x; i < n; i += blockDim.x) sum += in[i];
    atomicAdd(out, sum);
}
template __global__ void reduce<int>(const int*, int*, int);
}  // namespace sdm_test
