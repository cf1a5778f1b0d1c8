// A C++ kernel template (mangled names; `sdm ls --demangle`, tests/tool/cli.sh).
namespace sdm_test {
template <typename T, int N>
__global__ void fill(T* p, T value) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) p[i] = value;
}
template __global__ void fill<float, 256>(float*, float);
template __global__ void fill<double, 1024>(double*, double);
}  // namespace sdm_test
