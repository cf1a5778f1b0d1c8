#!/usr/bin/env bash
# The GPU tests, run on the GPU machine from a build folder carried there (docs/GPU_TESTS.md):
#   tests/gpu/run.sh BUILD_DIR
# Writes every log under $OUT (or ./gpu-out) and prints a summary table last.
set -uo pipefail
build=${1:-build-gpu}
out=${OUT:-gpu-out}
mkdir -p "$out"
# Libraries the build links that the GPU machine's image may lack travel in BUILD_DIR/gpu-libs.
export LD_LIBRARY_PATH="$PWD/$build/gpu-libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
results=()
run() {  # run NAME COMMAND...: log to $out/NAME.log, record the exit status
  local name=$1; shift
  echo "== $name: $*"
  "$@" >"$out/$name.log" 2>&1
  local rc=$?
  cat "$out/$name.log"
  results+=("$name $rc")
}
{ nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; } >"$out/nvidia-smi.log" 2>&1
cat "$out/nvidia-smi.log"
run sdm-info "$build/tools/sdm" info --libsdm "$build/capi/libsdm.so.1" -a tests/golden/kernels.sdma
run sdm-info-json "$build/tools/sdm" info --json -a tests/golden/kernels.sdma
run gpu-device "$build/tests/test_gpu_device"
run gpu-context "$build/tests/test_gpu_context"
run gpu-load "$build/tests/test_gpu_load"
run gpu-load-forced-ptx env CUDA_FORCE_PTX_JIT=1 "$build/tests/test_gpu_load" --forced-ptx
run gpu-contexts "$build/tests/test_gpu_contexts"
[ -x "$build/tests/test_gpu_signing" ] && run gpu-signing "$build/tests/test_gpu_signing"
run gpu-launch "$build/tests/test_gpu_launch"
run gpu-graphs "$build/tests/test_gpu_graphs"
run gpu-user-kernels "$build/tests/test_gpu_user_kernels"
run gpu-attributes "$build/tests/test_gpu_attributes"
[ -x "$build/tests/test_gpu_user_names" ] && run gpu-user-names "$build/tests/test_gpu_user_names"
run gpu-hostile "$build/tests/test_gpu_hostile"
# Why sdm checks images first: the same 64-byte header handed to the real driver by hand, in a
# process of its own. Its exit is recorded, not judged (a signal here is the driver's crash).
"$build/tests/test_gpu_hostile" --raw-driver >"$out/raw-driver-hostile.log" 2>&1
echo "raw driver on the hostile header: exit $? (128+11 = SIGSEGV)" | tee -a "$out/raw-driver-hostile.log"
"$build/tests/test_gpu_hostile" --raw-driver-fatbin >"$out/raw-driver-hostile-fatbin.log" 2>&1
echo "raw driver on a fatbin holding the hostile header: exit $? (128+11 = SIGSEGV)" | tee -a "$out/raw-driver-hostile-fatbin.log"
[ -x "$build/tests/test_gpu_kernels" ] && run gpu-kernels "$build/tests/test_gpu_kernels"
# Layers on the real device: the newest archive with an image serves, an older one the rest.
layers=$(mktemp -d)
printf '[archive]\nkernel_abi = "1.2"\n[[kernel]]\nname = "scale"\nmodule = "kernels"\nsignature = "ptr,f32,i32"\n' >"$layers/m.toml"
"$build/tools/sdm" pack -q -m "$layers/m.toml" -o "$layers/old-arch.sdma" "kernels:compute_80=tests/data/kernels.compute_80.ptx"
run sdm-info-layers env SDM_ARCHIVE_PATH="tests/golden/kernels.sdma:$layers/old-arch.sdma:$layers/missing.sdma" "$build/tools/sdm" info
# Real libraries (issue 16): cuFFT and cuBLASLt imported with sdm import, every module loaded and
# every kernel resolved through sdm_kernel_get, against the driver loading their fatbins itself.
[ -x "$build/bench/import_load_bench" ] && run import-load bash bench/import_load.sh "$build" /tmp/sdm-import-load 3
# Loading at scale (issue 27): the toolkit's biggest libraries, sdm against the driver's module and
# library paths on the same bytes, EAGER and LAZY (several minutes: SDM_GPU_SKIP_SCALE_LOAD=1 leaves
# it for a call of its own, bench/scale_load.sh BUILD_DIR).
[ -x "$build/bench/scale_load_bench" ] && [ -z "${SDM_GPU_SKIP_SCALE_LOAD:-}" ] && run scale-load bash bench/scale_load.sh "$build" 3
# Overlays bound to their base (sdm jit with the real nvJitLink), and a rollback refused (issue 31).
run overlay-rollback bash tests/gpu/overlay_rollback.sh "$build"
# Hot reload with a host running: a new version, a broken file, the first version again.
run reload-transcript bash tests/gpu/reload_transcript.sh "$build"
# The case users hit most: PTX from a toolkit newer than the driver. When .device-newer/ travels
# (docs/GPU_TESTS.md: PTX compiled by CUDA 13.5's NVRTC, and the nvidia-nvjitlink 13.5 library),
# the same test runs again with that nvJitLink and that PTX.
if [ -f .device-newer/libnvJitLink.so.13.xz ] && [ -f .device-newer/newer-ptx.sdma ]; then
  xz -dc .device-newer/libnvJitLink.so.13.xz >/tmp/libnvJitLink.so.13
  run gpu-load-newer-ptx env SDM_NVJITLINK=/tmp/libnvJitLink.so.13 SDM_TEST_NEWER_PTX_ARCHIVE=.device-newer/newer-ptx.sdma \
    "$build/tests/test_gpu_load"
fi
# The hosts on the GPU: the smallest C host, and the engine-style host (its own
# context and logger, the SDM kernels every frame, a new archive and a broken one dropped in).
[ -x "$build/examples/c_host" ] && run c-host "$build/examples/c_host" "$build/kernels/kernels.sdma"
# The README's quick-start hosts, in C and Python: on a GPU they must find y = x * 2.
[ -x "$build/examples/quickstart" ] && run quickstart-c "$build/examples/quickstart" tests/golden/kernels.sdma
run quickstart-python env SDM_LIBRARY="$build/capi/libsdm.so.1" PYTHONPATH=bindings/python python3 examples/quickstart.py tests/golden/kernels.sdma
[ -x "$build/examples/engine_host" ] && run engine-host env SDM_TEST_REAL_DRIVER=1 bash tests/hosts/engine_host.sh "$build"
# The hosts of docs/HOSTS.md on the GPU: PyTorch tensors through the Python binding, and a Rust host
# with a raw device pointer and stream (built beforehand: docs/GPU_TESTS.md).
run torch-scale env SDM_LIBRARY="$build/capi/libsdm.so.1" python3 examples/torch_scale.py
run torch-user-kernels env SDM_LIBRARY="$build/capi/libsdm.so.1" python3 tests/gpu/torch_user_kernels.py "$build"
[ -x bindings/rust/target/release/examples/raw_pointer ] &&
  run rust-raw-pointer env LD_LIBRARY_PATH="$PWD/$build/capi:$LD_LIBRARY_PATH" bindings/rust/target/release/examples/raw_pointer tests/golden/kernels.sdma
# The fake-driver suites too: the same binaries on this machine's libc and libstdc++.
run capi-fake "$build/tests/test_capi"
run hostile-fake "$build/tests/test_hostile_runtime"
run cpp-wrapper "$build/tests/test_cpp_wrapper"
echo
echo "| test | exit |"
echo "|---|---|"
status=0
for r in "${results[@]}"; do
  set -- $r
  echo "| $1 | $2 |"
  [ "$2" = 0 ] || status=1
done | tee "$out/summary.md"
grep -q "| [^|]* | [1-9]" "$out/summary.md" && exit 1
exit 0
