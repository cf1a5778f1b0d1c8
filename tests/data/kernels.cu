// Source of the real nvcc output under tests/data (regenerate with ./regenerate.sh; CUDA 13.0).
// Grid-stride loops: correct for any grid, as launch plans that cap the grid at the SM count expect.
extern "C" __global__ void scale(float* p, float factor, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) p[i] *= factor;
}
extern "C" __global__ void axpy(float* y, const float* x, float a, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) y[i] += a * x[i];
}
