#!/usr/bin/env bash
# The nvPTXCompiler backend on the GPU machine. CI machines lack libnvptxcompiler_static.a, so a
# libsdm with it linked in is built elsewhere (docs/GPU_TESTS.md: -Dptx_compiler=enabled with
# -Dptx_compiler_home pointing at a toolkit that has it) and travels as .device-ptxc/bundle.tar.xz
# (libsdm, tests/test_ptxcompiler, tests/test_gpu_load, stripped). Usage: run_ptxcompiler.sh GPU_BUILD_DIR
set -uo pipefail
libs=$1/gpu-libs
out=${OUT:-gpu-out}
mkdir -p "$out" build-ptxc
tar -C build-ptxc -xJf .device-ptxc/bundle.tar.xz || exit 1
export LD_LIBRARY_PATH="$PWD/$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
status=0
echo "== ptxcompiler: build-ptxc/tests/test_ptxcompiler"
build-ptxc/tests/test_ptxcompiler 2>&1 | tee "$out/ptxcompiler.log" | tail -3 || status=1
echo "== gpu-load with nvPTXCompiler: build-ptxc/tests/test_gpu_load"
build-ptxc/tests/test_gpu_load >"$out/gpu-load-ptxc.log" 2>&1 || status=1
grep -E "nvPTXCompiler|driver JIT|failure" "$out/gpu-load-ptxc.log"
exit $status
