// Source of the real nvcc output under tests/data (regenerate with ./regenerate.sh; CUDA 13.0).
extern "C" __global__ void scale(float* p, float factor, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] *= factor;
}
extern "C" __global__ void axpy(float* y, const float* x, float a, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] += a * x[i];
}
