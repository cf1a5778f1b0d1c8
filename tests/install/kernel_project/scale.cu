// A user's kernel project's one kernel (tests/install/kernel_project: sdm_add_archive from the
// installed CMake package).
extern "C" __global__ void scale(float* p, float factor, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] *= factor;
}
