// The Meson kernel project's one kernel (tests/install/meson_kernel_project: nvcc and the installed
// sdm tool). Its header is a dependency of the archive.
#include "scale.cuh"
extern "C" __global__ void scale(float* p, float factor, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] = p[i] * factor + kScaleOffset;
}
// A template a host fetches by the name expression it writes ("fill<float>"), lowered by NVRTC
// when the archive is built (the README's --source and --name-expression).
template <typename T>
__global__ void fill(T* p, T value, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] = value;
}
template __global__ void fill<float>(float*, float, int);
