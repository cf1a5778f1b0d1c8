// Kernels whose signatures sdm derives from their images (tests/archive/test_kernel_params.cpp, tests/tool/import.sh):
// a struct by value, __half, __nv_bfloat16, pointers, ints, a double, a 16-byte-aligned vector after
// an int (a gap in the parameter buffer), a struct of odd size, none at all. Regenerate with
// ./regenerate.sh (CUDA 13.0).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

struct Pair { float x; int y; };     // 8 bytes, aligned 4
struct Odd { char c[3]; };           // 3 bytes, aligned 1
struct Wide { double d; char c; };   // 16 bytes, aligned 8

extern "C" __global__ void by_struct(Pair p, float* out) { out[0] = p.x + p.y; }
extern "C" __global__ void halves(__half h, __nv_bfloat16 b, float* out) { out[0] = __half2float(h) + __bfloat162float(b); }
extern "C" __global__ void mixed(char c, double d, int i, long long l, Odd o, Wide w, void* p) {
    if (p) *static_cast<double*>(p) = c + d + i + l + o.c[1] + w.d;
}
extern "C" __global__ void gap(int n, float4 v, float* out) { out[n] = v.x + v.w; }
extern "C" __global__ void no_params() {}

#ifdef SDM_PARAMS_MAIN
int main() { return 0; }  // an executable whose .nv_fatbin holds the kernels above
#endif
