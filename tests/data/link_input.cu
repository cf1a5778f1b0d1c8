// A device link's input, as cuSPARSE ships its SpMMOp kernels: a kernel that calls operators the
// caller supplies at link time (declared here, defined elsewhere). Compiled with -rdc, its cubin is
// relocatable with undefined functions: the driver cannot load it alone (tests/archive/test_image.cpp,
// tests/runtime/registry/test_modules.cpp, tests/tool/import.sh).
extern __device__ int add_op(int a, int b);
extern __device__ int epilogue(int a, int b);

__global__ void fixup(int* out, const int* in, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = epilogue(add_op(out[i], in[i]), n);
}
