#!/usr/bin/env bash
# Regenerates the nvcc outputs the tests read. They are committed so that the tests need no nvcc.
set -euo pipefail
cd "$(dirname "$0")"
for a in 80 86 90 90a 100f 120; do nvcc -cubin -arch=sm_$a -o kernels.sm_$a.cubin kernels.cu; done
for a in 80 90; do nvcc -ptx -arch=compute_$a -o kernels.compute_$a.ptx kernels.cu; done
nvcc -dlto -ltoir -arch=lto_90 -o kernels.lto_90.ltoir kernels.cu
nvcc -fatbin -arch=sm_90 -o kernels.fatbin kernels.cu
# An sm_90 cubin compiled from compute_80 PTX: the driver reports ptxVersion 80 for it, which the
# image policy refuses on a modern device (sdm's image validation tests).
nvcc -cubin -gencode arch=compute_80,code=sm_90 -o kernels.sm_90-from-compute_80.cubin kernels.cu
