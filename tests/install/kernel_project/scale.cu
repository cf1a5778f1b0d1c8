// A user's kernel project's one kernel (tests/install/kernel_project: sdm_add_archive from the
// installed CMake package). Its header is a dependency of the archive.
#include "scale.cuh"
extern "C" __global__ void scale(float* p, float factor, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] = p[i] * factor + kScaleOffset;
}
