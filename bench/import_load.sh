#!/usr/bin/env bash
# Real libraries through sdm on the GPU (issue 16): imports cuFFT and cuBLASLt with `sdm import
# --arch sm_90 --ptx compute_90` (what an H200 can use of them), then, after one untimed run of
# each (sdm's cache and the driver's ComputeCache warm for PTX-only modules), alternates, RUNS
# times, one process each:
#   import_load_bench sdm ARCHIVE        mount + sdm_kernel_get of every kernel
#   import_load_bench driver LIBRARY 90  cuModuleLoadData of each fatbin container + cuModuleGetFunction of each kernel
# The first sdm run's column "writes" is what it added to sdm's cache (JIT outputs only).
# Usage: bench/import_load.sh BUILD_DIR WORK_DIR [RUNS]. Prints a Markdown table; exit 1 when a
# kernel did not resolve. Libraries from $CUDA_HOME/lib64 (or /usr/local/cuda/lib64).
set -euo pipefail
build=$1 work=$2 runs=${3:-3}
mkdir -p "$work"
lib64=${CUDA_HOME:-/usr/local/cuda}/lib64
status=0
echo "| library | import (s) | archive MiB | modules | kernels | first run: sdm (ms) | first run: sdm writes (KiB) | first run: driver (ms) | sdm: mount + every sdm_kernel_get (ms, median) | driver: every container + cuModuleGetFunction (ms, median) | sdm / driver | failed (sdm, driver) |"
echo "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|"
for name in libcufft.so.12 libcublasLt.so.13; do
  lib=$(ls "$lib64"/$name* 2>/dev/null | head -1 || true)
  [ -n "$lib" ] || { echo "| $name | not in $lib64 |||||||"; continue; }
  archive=$work/${name%%.*}.sdma
  start=$(date +%s.%N)
  "$build/tools/sdm" import -q --arch sm_90 --ptx compute_90 --level 3 -o "$archive" "$lib" >"$work/${name%%.*}.import.log" 2>&1 || {
    cat "$work/${name%%.*}.import.log"; status=1; continue; }
  seconds=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN {print b - a}')
  sdm_us=() driver_us=() sdm_line="" driver_line=""
  export SDM_CACHE_DIR=$work/cache
  cached() { du -sk "$SDM_CACHE_DIR" 2>/dev/null | awk '{print $1}' || echo 0; }
  before_kib=$(cached)
  "$build/bench/import_load_bench" -v sdm "$archive" >"$work/${name%%.*}.first-sdm.log" 2>&1 || status=1
  written_kib=$(( $(cached) - ${before_kib:-0} ))
  "$build/bench/import_load_bench" -v driver "$lib" 90 >"$work/${name%%.*}.first-driver.log" 2>&1 || status=1
  for ((i = 0; i < runs; ++i)); do
    sdm_line=$("$build/bench/import_load_bench" sdm "$archive") || status=1
    driver_line=$("$build/bench/import_load_bench" driver "$lib" 90) || status=1
    sdm_us+=("$(sed 's/.*us=//' <<<"$sdm_line")")
    driver_us+=("$(sed 's/.*us=//' <<<"$driver_line")")
  done
  med() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
  s=$(med "${sdm_us[@]}") d=$(med "${driver_us[@]}")
  field() { sed -n "s/.*$1=\([0-9]*\).*/\1/p" <<<"$2"; }
  first_s=$(sed -n 's/.*us=\([0-9]*\).*/\1/p' "$work/${name%%.*}.first-sdm.log" | tail -1)
  first_d=$(sed -n 's/.*us=\([0-9]*\).*/\1/p' "$work/${name%%.*}.first-driver.log" | tail -1)
  printf '| %s | %.1f | %.1f | %s | %s | %.1f | %s | %.1f | %.1f | %.1f | %.2f | %s, %s |\n' "$(basename "$lib")" "$seconds" \
    "$(awk -v b="$(stat -c %s "$archive")" 'BEGIN {print b / 1048576}')" "$(field modules "$sdm_line")" "$(field kernels "$sdm_line")" \
    "$(awk -v x="${first_s:-0}" 'BEGIN {print x / 1000}')" "$written_kib" "$(awk -v x="${first_d:-0}" 'BEGIN {print x / 1000}')" \
    "$(awk -v x="$s" 'BEGIN {print x / 1000}')" "$(awk -v x="$d" 'BEGIN {print x / 1000}')" "$(awk -v x="$s" -v y="$d" 'BEGIN {print x / y}')" \
    "$(field failed "$sdm_line")" "$(field failed "$driver_line")"
done
exit $status
