// A user's kernel project's one kernel (tests/install/kernel_project: sdm_add_archive from the
// installed CMake package). Its header is a dependency of the archive.
#include "scale.cuh"
extern "C" __global__ void scale(float* p, float factor, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] = p[i] * factor + kScaleOffset;
}
// A template fetched by the name expression its users write ("fill<float>"), lowered by NVRTC at
// build time (sdm_add_archive NAME_EXPRESSIONS).
template <typename T>
__global__ void fill(T* p, T value, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] = value;
}
template __global__ void fill<float>(float*, float, int);
