#!/usr/bin/env bash
# The GPU tests under NVIDIA's compute-sanitizer, on the GPU machine (docs/GPU_TESTS.md):
#   tests/gpu/sanitize.sh BUILD_DIR
# memcheck over every GPU test binary (device memory errors, and leaks of device memory at exit);
# racecheck and synccheck over the SDM kernels' test (shared-memory races and barrier misuse in
# kernels/). Each run is cut at SANITIZE_TIMEOUT seconds (150; exit 124). Logs under $OUT (or
# ./gpu-out) as sanitize-TOOL-NAME.log; prints a summary table last.
set -uo pipefail
build=${1:-build-gpu}
out=${OUT:-gpu-out}
mkdir -p "$out"
export LD_LIBRARY_PATH="$PWD/$build/gpu-libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
sanitizer=$(command -v compute-sanitizer || echo "${CUDA_HOME:-/usr/local/cuda}/bin/compute-sanitizer")
if [ ! -x "$sanitizer" ]; then
  echo "compute-sanitizer not found (CUDA_HOME/bin); nothing run"
  exit 77
fi
results=()
run() {  # run TOOL NAME BINARY [ARGS...]
  local tool=$1 name=$2; shift 2
  local log="$out/sanitize-$tool-$name.log"
  echo "== $tool $name: $*"
  timeout "${SANITIZE_TIMEOUT:-150}" "$sanitizer" --tool "$tool" --error-exitcode 99 --print-limit 20 ${SANITIZE_EXTRA:-} "$@" >"$log" 2>&1
  local rc=$?
  tail -n 5 "$log"
  results+=("$tool $name $rc $(grep -Eo '(ERROR SUMMARY: [0-9]+|RACECHECK SUMMARY: [0-9]+ hazards)' "$log" | tail -1 | grep -Eo '[0-9]+' || echo '?')")
}
for t in device context contexts load launch graphs user_kernels hostile kernels; do
  # (--report-api-errors no: the tests ask for what must fail, a missing device, no current
  # context, on purpose; sdm's answers to those are what they check.)
  [ -x "$build/tests/test_gpu_$t" ] && run memcheck "$t" --leak-check full --report-api-errors no "$build/tests/test_gpu_$t"
done
[ -x "$build/tests/test_gpu_kernels" ] && run racecheck kernels "$build/tests/test_gpu_kernels"
[ -x "$build/tests/test_gpu_kernels" ] && run synccheck kernels "$build/tests/test_gpu_kernels"
echo
echo "| tool | test | exit | errors |"
echo "|---|---|---|---|"
for r in "${results[@]}"; do
  set -- $r
  echo "| $1 | $2 | $3 | $4 |"
done | tee "$out/sanitize-summary.md"
grep -q "| [^|]* | [^|]* | [1-9]" "$out/sanitize-summary.md" && exit 1
exit 0
