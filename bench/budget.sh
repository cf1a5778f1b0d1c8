#!/usr/bin/env bash
# A real library's modules under a device-memory budget (issue 43), on the GPU machine: cuBLASLt
# (or LIBRARY) imported with `sdm import --arch sm_90 --ptx none` (cubins only: every module's
# device bytes known), then bench/budget_bench with no budget, and with 1/2, 1/4 and 1/10 of what
# sdm_footprint counted without one. Each row: the budget, what sdm counted at the end, the device
# memory cuMemGetInfo showed (the highest after any module, and at the end), the modules evicted,
# every fetch's time against no budget, a module's first load and a reload's median.
# Usage: bench/budget.sh BUILD_DIR [LIBRARY]
set -uo pipefail
build=$1
lib=${2:-${CUDA_HOME:-/usr/local/cuda}/lib64/libcublasLt.so.13}
out=${OUT:-budget-out}
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export LD_LIBRARY_PATH="$PWD/$build/gpu-libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export SDM_CACHE_DIR=$work/cache
"$build/tools/sdm" import -q --arch sm_90 --ptx none -o "$work/lib.sdma" "$lib" >"$out/budget.import.log" 2>&1 || { cat "$out/budget.import.log"; exit 1; }
field() { sed -n "s/.* $1=\([0-9]*\).*/\1/p" <<<" $2"; }
mib() { awk -v a="$1" 'BEGIN { printf "%.1f", a / 1048576 }'; }
base=$("$build/bench/budget_bench" "$work/lib.sdma" 0) || { echo "$base"; exit 1; }
echo "$base" | tee "$out/budget.log"
d=$(field sdm_device_bytes "$base") t0=$(field fetch_us "$base")
{
echo "## $(basename "$lib"): $(field modules "$base") modules, $(field kernels "$base") kernels, sdm counts $(mib "$d") MiB without a budget; one cuMemGetInfo (the budget's meter reads it twice per load, resolve and unload) takes $(sed -n 's/.* cuMemGetInfo_us_median=\([0-9.]*\).*/\1/p' <<<"$base") µs; the largest module alone takes $(mib "$(field largest_module_bytes "$base")") MiB of device memory"
echo
echo "| budget (MiB) | sdm counts (MiB) | cuMemGetInfo max (MiB) | at the end (MiB) | evicted | every fetch (ms) | vs no budget | first load (µs, median) | reload (µs, median) |"
echo "|--:|--:|--:|--:|--:|--:|--:|--:|--:|"
for div in 0 2 4 10; do
  if [ "$div" = 0 ]; then b=0 line=$base; else
    b=$((d / div))
    line=$("$build/bench/budget_bench" "$work/lib.sdma" "$b") || { echo "$line"; continue; }
    echo "$line" >>"$out/budget.log"
  fi
  t=$(field fetch_us "$line")
  printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$([ "$b" = 0 ] && echo none || mib "$b")" "$(mib "$(field sdm_device_bytes "$line")")" \
    "$(mib "$(field dev_bytes_max "$line")")" "$(mib "$(field dev_bytes_end "$line")")" "$(field evicted "$line")" \
    "$(awk -v a="$t" 'BEGIN { printf "%.1f", a / 1000 }')" "$(awk -v a="$t" -v b="$t0" 'BEGIN { printf "%.2fx", a / b }')" \
    "$(field first_load_us_median "$line")" "$(field reload_us_median "$line")"
done
} | tee "$out/budget.md"
# The engine host's frame loop (16 ms frames) while the whole library warms up behind it
# (SDM_ARCHIVE_PATH: the library's archive beneath the engine's kernels), with no budget and with a
# quarter: its worst frame's work, during the warm-up and overall.
if [ -x "$build/examples/engine_host" ] && [ -f "$build/kernels/kernels.sdma" ]; then
  {
  echo
  echo "| engine host, $(basename "$lib") warming up behind 16 ms frames | frames | worst frame (ms) | worst while warming (ms) | evictions logged | reloads logged |"
  echo "|---|--:|--:|--:|--:|--:|"
  for b in 0 $((d / 4)); do
    SDM_ARCHIVE_PATH=$work/lib.sdma "$build/examples/engine_host" "$build/kernels/kernels.sdma" 400 16 "$b" >"$out/engine-budget-$b.log" 2>&1
    rc=$?
    w=$(sed -n 's/.*worst frame: \([0-9.]*\) ms of work (\([0-9.]*\) ms while.*/\1 \2/p' "$out/engine-budget-$b.log")
    printf '| budget %s (exit %s; %s) | 400 | %s | %s | %s | %s |\n' "$([ "$b" = 0 ] && echo none || echo "$(mib "$b") MiB")" "$rc" \
      "$(grep -o '[0-9]* module(s) loaded in the background' "$out/engine-budget-$b.log" | head -1)" ${w:-n/a n/a} \
      "$(grep -c 'evicted module' "$out/engine-budget-$b.log")" "$(grep -c 'reloaded module' "$out/engine-budget-$b.log")"
  done
  } | tee -a "$out/budget.md"
fi
