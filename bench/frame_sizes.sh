#!/usr/bin/env bash
# What a frame size costs and gains (issue 41), on the GPU machine: one library imported at the
# default level with `--frame-size` 0 (one frame per image), 1, 2 and 4 MiB; each archive's bytes,
# and sdm's time to fetch every kernel (EAGER) and 50 kernels spread over the library (LAZY), one
# process per figure, interleaved, medians of RUNS.
# Usage: bench/frame_sizes.sh BUILD_DIR [RUNS [LIBRARY]]   (BUILD_DIR: tools/sdm, bench/scale_load_bench)
set -uo pipefail
build=$1 runs=${2:-3} lib=${3:-${CUDA_HOME:-/usr/local/cuda}/lib64/libcublasLt.so.13}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export LD_LIBRARY_PATH="$PWD/$build/gpu-libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
bench=$build/bench/scale_load_bench
sizes=(0 1048576 2097152 4194304)
for fs in "${sizes[@]}"; do
  "$build/tools/sdm" import -q --arch sm_90 --ptx compute_90 --frame-size "$fs" -o "$work/$fs.sdma" "$lib" >/dev/null 2>&1 || { echo "import failed"; exit 1; }
done
"$build/tools/sdm" ls --json "$work/0.sdma" | python3 -c '
import json, sys
k = [x["name"] for x in json.load(sys.stdin)["kernels"]]
step = max(1, len(k) // 50)
print("\n".join(k[::step][:50]))' >"$work/50"
export SDM_CACHE_DIR=$work/cache
us_of() { sed -n 's/.*us=\([0-9]*\).*/\1/p' <<<"$1"; }
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print (NR ? a[int((NR+1)/2)] : "nan")}'; }
declare -A v=()
for fs in "${sizes[@]}"; do CUDA_MODULE_LOADING=EAGER "$bench" sdm "$work/$fs.sdma" >/dev/null 2>&1; done
for ((i = 0; i < runs; ++i)); do
  for fs in "${sizes[@]}"; do
    v[e$fs]+=" $(us_of "$(CUDA_MODULE_LOADING=EAGER "$bench" sdm "$work/$fs.sdma")")"
    v[l$fs]+=" $(us_of "$(CUDA_MODULE_LOADING=LAZY "$bench" sdm "$work/$fs.sdma" "$work/50")")"
  done
done
echo "#### $(basename "$lib"), default level, medians of $runs"
echo
echo "| --frame-size | archive B | / one frame | EAGER ms | / one frame | LAZY 50 kernels ms | / one frame |"
echo "|---|--:|--:|--:|--:|--:|--:|"
for fs in "${sizes[@]}"; do
  b=$(stat -c %s "$work/$fs.sdma") b0=$(stat -c %s "$work/0.sdma")
  e=$(median ${v[e$fs]}) e0=$(median ${v[e0]}) l=$(median ${v[l$fs]}) l0=$(median ${v[l0]})
  awk -v fs="$fs" -v b="$b" -v b0="$b0" -v e="$e" -v e0="$e0" -v l="$l" -v l0="$l0" \
    'BEGIN { printf "| %s | %d | %.3fx | %.1f | %.2fx | %.1f | %.2fx |\n", fs, b, b / b0, e / 1000, e / e0, l / 1000, l / l0 }'
done
