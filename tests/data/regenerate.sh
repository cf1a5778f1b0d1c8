#!/usr/bin/env bash
# Regenerates the nvcc outputs the tests read. They are committed so that the tests need no nvcc.
set -euo pipefail
cd "$(dirname "$0")"
for a in 75 80 86 87 90 90a 100f 120; do nvcc -cubin -arch=sm_$a -o kernels.sm_$a.cubin kernels.cu; done
for a in 75 80 90; do nvcc -ptx -arch=compute_$a -o kernels.compute_$a.ptx kernels.cu; done
nvcc -dlto -ltoir -arch=lto_90 -o kernels.lto_90.ltoir kernels.cu
nvcc -fatbin -arch=sm_90 -o kernels.fatbin kernels.cu
# An sm_90 cubin compiled from compute_80 PTX: the driver reports ptxVersion 80 for it, which the
# image policy refuses on a modern device (sdm's image validation tests).
nvcc -cubin -gencode arch=compute_80,code=sm_90 -o kernels.sm_90-from-compute_80.cubin kernels.cu
# A kernel whose name is 16 KiB long (format 1.1 names, end to end): extern "C", so the symbol is
# the name itself.
python3 -c "
name = 'long_' + 'x' * (16384 - 5)
print('extern \"C\" __global__ void %s(float* p, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) p[i] *= 2.0f; }' % name)
" >kernels_long.cu
nvcc -cubin -arch=sm_90 -o kernels_long.sm_90.cubin kernels_long.cu
rm kernels_long.cu
