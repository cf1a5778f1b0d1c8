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
# A device link's input (link_input.cu: a kernel calling operators defined elsewhere, as cuSPARSE's
# SpMMOp kernels do): a relocatable cubin with undefined functions, and a fatbin of it and its PTX.
nvcc -cubin -rdc=true -arch=sm_90 -o link_input.sm_90.cubin link_input.cu
nvcc -fatbin -rdc=true -gencode 'arch=compute_90,code=[sm_90,compute_90]' -o fatbin/link_input.fatbin link_input.cu
# Fatbins (tests/archive/test_fatbin.cpp): sm_80 and sm_90 cubins and compute_90 PTX under each
# -compress-mode nvcc 13.0 offers (default and balance write the same bytes), the cubins LZ4'd too
# (-compress-all), an LTO-IR entry (encoded by nvcc), a/f variants; and the host binaries they sit
# in: a shared library (.nv_fatbin), an -rdc object (__nv_relfatbin) and a static archive whose
# second member has a long name (the GNU long-name table) and -lineinfo (the source file recorded).
mkdir -p fatbin
gencode=(-gencode arch=compute_80,code=sm_80 -gencode 'arch=compute_90,code=[sm_90,compute_90]')
for m in default size speed balance none; do nvcc -fatbin "${gencode[@]}" -compress-mode=$m -o fatbin/kernels.$m.fatbin kernels.cu; done
nvcc -fatbin "${gencode[@]}" -compress-mode=speed -Xfatbin -compress-all -o fatbin/kernels.speed-all.fatbin kernels.cu
nvcc -fatbin -gencode arch=compute_90,code=lto_90 -o fatbin/kernels.lto_90.fatbin kernels.cu
nvcc -fatbin -gencode arch=compute_90a,code=sm_90a -gencode arch=compute_100f,code=compute_100f -o fatbin/kernels.variants.fatbin kernels.cu
nvcc -shared -Xcompiler -fPIC -cudart none -arch=sm_90 -o fatbin/libkernels.so kernels.cu
nvcc -c -rdc=true -arch=sm_90 -o fatbin/kernels.rdc.o kernels.cu
tmp=$(mktemp -d)
nvcc -c -arch=sm_80 -o "$tmp/kernels.o" kernels.cu
nvcc -c -lineinfo -arch=sm_90 -o "$tmp/kernels_compiled_with_line_info.o" kernels.cu
rm -f fatbin/libkernels.a
ar rcs fatbin/libkernels.a "$tmp/kernels.o" "$tmp/kernels_compiled_with_line_info.o"
rm -r "$tmp"
# Derived signatures (tests/archive/test_kernel_params.cpp, tests/tool/import.sh): params.cu as a cubin and
# PTX of the same kernels, and in each host binary `sdm import` reads: a fatbin, a shared library, a
# static archive and an executable.
nvcc -cubin -arch=sm_90 -o params.sm_90.cubin params.cu
nvcc -cubin -arch=sm_80 -o params.sm_80.cubin params.cu
nvcc -ptx -arch=compute_90 -o params.compute_90.ptx params.cu
nvcc -fatbin -gencode arch=compute_80,code=sm_80 -gencode 'arch=compute_90,code=[sm_90,compute_90]' -o fatbin/params.fatbin params.cu
nvcc -shared -Xcompiler -fPIC -cudart none -arch=sm_90 -o fatbin/libparams.so params.cu
nvcc -DSDM_PARAMS_MAIN -cudart shared -arch=sm_90 -o fatbin/params_exe params.cu
tmp=$(mktemp -d)
nvcc -c -arch=sm_90 -o "$tmp/params.o" params.cu
rm -f fatbin/libparams.a
ar rcs fatbin/libparams.a "$tmp/params.o"
rm -r "$tmp"
# A C++ kernel template's instantiations: mangled names (sdm ls --demangle).
nvcc -cubin -arch=sm_90 -o templates.sm_90.cubin templates.cu
# Kernels named the way CuPy users write them (tests/runtime/kernel/test_kernel_names.cpp): typedefs, literals,
# an enumerator, default arguments, a pack, thrust's complex and libcu++'s mdspan.
nvcc -cubin -arch=sm_90 -o names.sm_90.cubin names.cu
# A module of about 310 KiB (tests/runtime/registry/test_modules.cpp: compressed images from 64 KiB on are cached decoded).
nvcc -cubin -arch=sm_90 -O3 -o chains.sm_90.cubin chains.cu
# Kernels launched the way their authors wrote them (tests/runtime/kernel/test_launch_config.cpp, tests/gpu): a 2-D
# tiled matmul, a cooperative grid.sync() kernel, a __constant__ table and a __device__ counter,
# and templates looked up by their C++ names.
nvcc -cubin -arch=sm_90 -o launch.sm_90.cubin launch.cu
# Kernels as CuPy users write them (tests/runtime/kernel/test_module_names.cpp, tests/gpu/test_gpu_user_names.cpp):
# two modules of one source, the second defining test_sum too.
nvcc -cubin -arch=sm_90 -o user_names.sm_90.cubin user_names.cu
nvcc -cubin -arch=sm_90 -DSECOND -o user_names_second.sm_90.cubin user_names.cu
