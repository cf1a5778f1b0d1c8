// Two unrolled FMA chains: a module of about 310 KiB of sm_90 SASS (compressed images from 64
// KiB on are cached decoded). Its arithmetic is beside the point; its size is the point.
template <int S>
__device__ float chain(const float* in, int i, int n) {
    float acc = in[i];
#pragma unroll
    for (int k = 0; k < 640; ++k) acc = fmaf(acc, in[(i + k * S) % n], 0.5f + k * 0.001f);
    return acc;
}
extern "C" __global__ void chain1(float* out, const float* in, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) out[i] = chain<1>(in, i, n); }
extern "C" __global__ void chain2(float* out, const float* in, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) out[i] = chain<3>(in, i, n); }

