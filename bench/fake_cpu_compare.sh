#!/usr/bin/env bash
# sdm's own CPU cost, before and after a change, on the fake driver (no GPU): the same bench binary
# driving two libsdm builds over the same archives of a real CUDA library. The fake driver's loads
# cost next to nothing, so what is measured is sdm's own work (mount, manifest, selection, decoding,
# the registry, the handles). Usage:
#   bench/fake_cpu_compare.sh BEFORE_LIBDIR AFTER_BUILD [RUNS] [LIBRARY]
# BEFORE_LIBDIR holds the libsdm.so.1 before the change (e.g. build-gpu/old/capi); AFTER_BUILD is a
# build (e.g. build-gpu) with tools/sdm, bench/scale_load_bench, tests/fake_cuda/libcuda_fake.so and
# capi/libsdm.so.1. LIBRARY defaults to $CUDA_HOME/lib64/libcublasLt.so.13.
# Per archive (stored cubins at level 3, and compressed at the default level): instructions under
# valgrind --tool=callgrind (one run each: the count barely moves between runs) and wall time of
# `scale_load_bench sdm` (every kernel fetched), medians of RUNS interleaved fresh processes.
set -uo pipefail
before=$1 after=$2 runs=${3:-7}
lib=${4:-${CUDA_HOME:-/usr/local/cuda}/lib64/libcublasLt.so.13}
out=${OUT:-fake-cpu-out}
mkdir -p "$out"
export LD_LIBRARY_PATH="$PWD/$after/gpu-libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export SDM_CUDA_DRIVER="$PWD/$after/tests/fake_cuda/libcuda_fake.so"
export SDM_FAKE_CUDA_DEVICES="NVIDIA H200,9.0,232448,132,62914560"
bench=$after/bench/scale_load_bench
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
name=$(basename "$lib" | sed 's/\.so.*//')
"$after/tools/sdm" import -q --arch sm_90 --ptx compute_90 --level 3 --store-cubins -o "$work/stored.sdma" "$lib" 2>>"$out/import.log" || exit 1
"$after/tools/sdm" import -q --arch sm_90 --ptx compute_90 -o "$work/compressed.sdma" "$lib" 2>>"$out/import.log" || exit 1
us_of() { sed -n 's/.* us=\([0-9.]*\).*/\1/p' <<<"$1"; }
median() { python3 -c "import statistics,sys; v=[float(x) for x in sys.argv[1:] if x]; print(f'{statistics.median(v)/1000:.1f}' if v else 'nan')" "$@"; }
instructions() {  # instructions LIBDIR ARCHIVE: callgrind's total Ir of one run
  local file=$work/callgrind.$RANDOM
  LD_LIBRARY_PATH="$1:$LD_LIBRARY_PATH" valgrind --tool=callgrind --callgrind-out-file="$file" "$bench" sdm "$2" >/dev/null 2>"$file.log" || { echo nan; return; }
  sed -n 's/^summary: \([0-9]*\).*/\1/p' "$file" | head -1
}
echo "| $name, fake driver | archive | before | after | after / before |"
echo "|---|---|--:|--:|--:|"
for kind in stored compressed; do
  a=$work/$kind.sdma
  declare -a tb=() ta=()
  for _ in $(seq "$runs"); do  # interleaved: both see the same machine
    tb+=("$(us_of "$(LD_LIBRARY_PATH="$before:$LD_LIBRARY_PATH" "$bench" sdm "$a")")")
    ta+=("$(us_of "$(LD_LIBRARY_PATH="$PWD/$after/capi:$LD_LIBRARY_PATH" "$bench" sdm "$a")")")
  done
  printf '%s\n' "${tb[@]}" >"$out/${kind}_before_us.txt"
  printf '%s\n' "${ta[@]}" >"$out/${kind}_after_us.txt"
  mb=$(median "${tb[@]}") ma=$(median "${ta[@]}")
  ib=$(instructions "$before" "$a") ia=$(instructions "$PWD/$after/capi" "$a")
  ratio() { python3 -c "a,b=float('$1'),float('$2'); print(f'{a/b:.3f}x' if a==a and b==b and b>0 else 'n/a')"; }
  echo "| every kernel fetched: wall ms, median of $runs | $kind ($(stat -c %s "$a") B) | $mb | $ma | $(ratio "$ma" "$mb") |"
  echo "| every kernel fetched: instructions (callgrind, one run) | $kind | $ib | $ia | $(ratio "$ia" "$ib") |"
done
