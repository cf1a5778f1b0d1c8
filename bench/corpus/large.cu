// A large module for the loader bench (about 2 MB of sm_90 SASS): fully unrolled FMA chains in
// many instantiations. Its arithmetic is beside the point; its size is the point.
template <int R, int S>
__global__ void chain(float* out, const float* in, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float acc = in[i];
#pragma unroll
    for (int k = 0; k < R; ++k) acc = fmaf(acc, in[(i + k * S) % n], 0.5f + k * 0.001f);
    out[i] = acc;
}

#define SDM_CHAIN(R, S) template __global__ void chain<R, S>(float*, const float*, int);
SDM_CHAIN(1024, 1) SDM_CHAIN(1024, 2) SDM_CHAIN(1024, 3) SDM_CHAIN(1024, 5)
SDM_CHAIN(1024, 7) SDM_CHAIN(1024, 11) SDM_CHAIN(1024, 13) SDM_CHAIN(1024, 17)
