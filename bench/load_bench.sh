#!/usr/bin/env bash
# Loader bench on a GPU machine: medians over fresh processes, ratios against the raw
# driver and nvJitLink measured in the same run. Usage: bench/load_bench.sh BUILD_DIR
# With OLD_BUILD (a build of the tree before a change: its capi/libsdm.so.1), the warm starts are
# measured again with that libsdm in the same run, interleaved run by run with this build's.
# BUILD_DIR holds tools/sdm, bench/load_bench, bench/large.sm_90.cubin (about 2 MB) and the bench
# corpus's bench/gemm.{sm_90.cubin,compute_90.ptx} (ninja -C BUILD_DIR bench/load_bench
# bench/large.sm_90.cubin bench/gemm.sm_90.cubin bench/gemm.compute_90.ptx).
# Sizes: small (tests/data, 5.6 KB cubin), medium (the corpus GEMM, about 150 KB), large (about
# 2 MB; its fully unrolled code takes ptxas minutes, so it is timed for the cubin path only).
set -uo pipefail
build=$1
out=${OUT:-load-bench-out}
mkdir -p "$out"
export LD_LIBRARY_PATH="$PWD/$build/gpu-libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
sdm=$build/tools/sdm
lb=$build/bench/load_bench
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

median() {  # median NAME RUNS COMMAND...: the median of RUNS fresh processes, every value logged
  local name=$1 runs=$2; shift 2
  for _ in $(seq "$runs"); do "$@" || echo "nan"; done >"$out/$name.txt" 2>>"$out/errors.log"
  median_of "$out/$name.txt"
}
median_of() {  # median_of FILE: the median of its numbers, "nan" lines left out
  python3 -c "import statistics,sys; v=[float(x) for x in open('$1') if x.strip()!='nan']; print(statistics.median(v) if v else float('nan'))"
}
entries() { grep -o '\.entry [A-Za-z0-9_$]*' "$1" | awk '{print $2}'; }
# The archives have no manifest source: every kernel gets the signature derived from its image.

cp tests/data/kernels.sm_90.cubin "$work/small.sm_90.cubin"
cp tests/data/kernels.compute_90.ptx "$work/small.compute_90.ptx"
cp "$build/bench/gemm.sm_90.cubin" "$work/medium.sm_90.cubin"
cp "$build/bench/gemm.compute_90.ptx" "$work/medium.compute_90.ptx"
cp "$build/bench/large.sm_90.cubin" "$work/large.sm_90.cubin"
for size in small medium large; do
  if [ -f "$work/$size.compute_90.ptx" ]; then
    kernel=$(entries "$work/$size.compute_90.ptx" | head -1)
  else  # the large module's first kernel, as nvcc mangles it
    kernel=_Z5chainILi1024ELi1EEvPfPKfi
  fi
  "$sdm" pack -q -o "$work/$size.sdma" "$size:sm_90=$work/$size.sm_90.cubin"
  "$sdm" pack -q --store-cubins -o "$work/$size-stored.sdma" "$size:sm_90=$work/$size.sm_90.cubin"
  [ -f "$work/$size.compute_90.ptx" ] && "$sdm" pack -q -o "$work/$size-ptx.sdma" "$size:compute_90=$work/$size.compute_90.ptx"
  eval "kernel_$size=$kernel"
done
# Sixteen PTX modules with their own kernel names (renamed copies of the medium module).
images=() names=()
for i in $(seq 0 15); do
  script=""; for e in $(entries "$work/medium.compute_90.ptx"); do script+="s/\\b$e\\b/m${i}_$e/g;"; done
  sed "$script" "$work/medium.compute_90.ptx" >"$work/m$i.ptx"
  names+=($(entries "$work/m$i.ptx" | head -1 | sed "s/^/m$i:/"))
  images+=("m$i:compute_90=$work/m$i.ptx")
done
"$sdm" pack -q --prefix off -o "$work/sixteen.sdma" "${images[@]}"

declare -A r
for size in small medium large; do
  k=kernel_$size
  r[raw_$size]=$(median raw_$size 15 "$lb" raw-cubin "$work/$size.sm_90.cubin" "${!k}")
  r[hand_$size]=$(median hand_$size 15 "$lb" hand-rolled "$work/$size.sm_90.cubin" "${!k}")
  "$lb" sdm "$work/$size.sdma" "${!k}" "$work/cache-$size" >/dev/null  # warm the sdm cache
  if [ -n "${OLD_BUILD:-}" ]; then
    # The same starts with the libsdm of the tree before the change, interleaved run by run with
    # this one's (so that a drift of the machine falls on both alike).
    for kind in warm stored; do
      archive="$work/$size.sdma"; [ $kind = stored ] && archive="$work/$size-stored.sdma"
      : >"$out/sdm_${kind}_$size.txt"; : >"$out/old_${kind}_$size.txt"
      for _ in $(seq 15); do
        "$lb" sdm "$archive" "${!k}" "$work/cache-$size" >>"$out/sdm_${kind}_$size.txt" 2>>"$out/errors.log" || echo nan >>"$out/sdm_${kind}_$size.txt"
        LD_LIBRARY_PATH="$OLD_BUILD/capi:$LD_LIBRARY_PATH" "$lb" sdm "$archive" "${!k}" "$work/cache-$size" >>"$out/old_${kind}_$size.txt" 2>>"$out/errors.log" ||
          echo nan >>"$out/old_${kind}_$size.txt"
      done
      r[sdm_${kind}_$size]=$(median_of "$out/sdm_${kind}_$size.txt")
      r[old_${kind}_$size]=$(median_of "$out/old_${kind}_$size.txt")
    done
  else
    r[sdm_warm_$size]=$(median sdm_warm_$size 15 "$lb" sdm "$work/$size.sdma" "${!k}" "$work/cache-$size")
    r[sdm_stored_$size]=$(median sdm_stored_$size 15 "$lb" sdm "$work/$size-stored.sdma" "${!k}" "$work/cache-$size")
  fi
  # The same start by phase (its own runs: the debug trace costs a little).
  for _ in $(seq 9); do "$lb" sdm-phases "$work/$size.sdma" "${!k}" "$work/cache-$size"; done >"$out/phases_$size.txt" 2>>"$out/errors.log"
  [ $size = large ] && continue
  CUDA_CACHE_PATH="$work/cc-$size" "$lb" driver-ptx "$work/$size.compute_90.ptx" >/dev/null  # warm the driver's ComputeCache
  r[driver_warm_$size]=$(CUDA_CACHE_PATH="$work/cc-$size" median driver_warm_$size 15 "$lb" driver-ptx "$work/$size.compute_90.ptx")
  "$lb" sdm "$work/$size-ptx.sdma" "${!k}" "$work/ptxcache-$size" >/dev/null
  r[sdm_ptx_warm_$size]=$(median sdm_ptx_warm_$size 15 "$lb" sdm "$work/$size-ptx.sdma" "${!k}" "$work/ptxcache-$size")
  runs=7; [ $size = small ] && runs=11
  r[nvjitlink_cold_$size]=$(CUDA_CACHE_DISABLE=1 median nvjitlink_cold_$size $runs "$lb" nvjitlink "$work/$size.compute_90.ptx" 90)
  # Cold, as a host gets it by default (the archive is unsigned: the link runs in the JIT helper),
  # and with the link in the process (SDM_JIT_ISOLATION=never): what isolation costs.
  cold() { rm -rf "$work/cold"; CUDA_CACHE_DISABLE=1 "$lb" sdm "$work/$size-ptx.sdma" "${!k}" "$work/cold"; }
  r[sdm_cold_$size]=$(median sdm_cold_$size $runs cold)
  r[sdm_cold_inproc_$size]=$(SDM_JIT_ISOLATION=never median sdm_cold_inproc_$size $runs cold)
done
ptxs=(); for i in $(seq 0 15); do ptxs+=("$work/m$i.ptx"); done
r[serial16]=$(CUDA_CACHE_DISABLE=1 median serial16 1 "$lb" nvjitlink-serial 90 "${ptxs[@]}")
preload() { rm -rf "$work/pcache"; CUDA_CACHE_DISABLE=1 "$lb" sdm-preload "$work/sixteen.sdma" "$work/pcache"; }
r[preload16]=$(median preload16 3 preload)
# Where a warm start spends its time: one more run with sdm's debug log (phase timestamps).
SDM_LOG=debug "$lb" sdm "$work/small.sdma" "$kernel_small" "$work/cache-small" >"$out/warm_trace.log" 2>&1
SDM_LOG=debug "$lb" sdm "$work/small-ptx.sdma" "$kernel_small" "$work/ptxcache-small" >>"$out/warm_trace.log" 2>&1

ratio() { python3 -c "a,b=float('$1'),float('$2'); print(f'{a/b:.2f}x' if a==a and b==b and b>0 else 'n/a')"; }
{
echo "### Loader: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1), $(nproc) cores"
echo
echo "Medians of fresh processes (one load each; context creation before the clock). sm_90 cubins: small $(stat -c %s "$work/small.sm_90.cubin") B, medium $(stat -c %s "$work/medium.sm_90.cubin") B, large $(stat -c %s "$work/large.sm_90.cubin") B."
echo
echo "| measure | small us | medium us | large us | ratio small | ratio medium | ratio large | target |"
echo "|---|--:|--:|--:|--:|--:|--:|---|"
echo "| (a) the floor: cuModuleLoadData + cuModuleGetFunction of the raw cubin, read before the clock | ${r[raw_small]} | ${r[raw_medium]} | ${r[raw_large]} | | | | |"
echo "| (a) a hand-rolled loader: read the cubin file + cuModuleLoadData + cuModuleGetFunction | ${r[hand_small]} | ${r[hand_medium]} | ${r[hand_large]} | $(ratio ${r[hand_small]} ${r[raw_small]}) | $(ratio ${r[hand_medium]} ${r[raw_medium]}) | $(ratio ${r[hand_large]} ${r[raw_large]}) | |"
echo "| (a) sdm warm start: create + mount + kernel_get, compressed archive, warm cache | ${r[sdm_warm_small]} | ${r[sdm_warm_medium]} | ${r[sdm_warm_large]} | $(ratio ${r[sdm_warm_small]} ${r[raw_small]}) | $(ratio ${r[sdm_warm_medium]} ${r[raw_medium]}) | $(ratio ${r[sdm_warm_large]} ${r[raw_large]}) | <= 1.2x the floor |"
echo "| (a) sdm warm start, --store-cubins archive (served in place) | ${r[sdm_stored_small]} | ${r[sdm_stored_medium]} | ${r[sdm_stored_large]} | $(ratio ${r[sdm_stored_small]} ${r[raw_small]}) | $(ratio ${r[sdm_stored_medium]} ${r[raw_medium]}) | $(ratio ${r[sdm_stored_large]} ${r[raw_large]}) | |"
[ -n "${OLD_BUILD:-}" ] && echo "| (a) sdm warm start before the change (OLD_BUILD's libsdm), compressed | ${r[old_warm_small]} | ${r[old_warm_medium]} | ${r[old_warm_large]} | $(ratio ${r[sdm_warm_small]} ${r[old_warm_small]}) now/before | $(ratio ${r[sdm_warm_medium]} ${r[old_warm_medium]}) now/before | $(ratio ${r[sdm_warm_large]} ${r[old_warm_large]}) now/before | |"
[ -n "${OLD_BUILD:-}" ] && echo "| (a) sdm warm start before the change, --store-cubins | ${r[old_stored_small]} | ${r[old_stored_medium]} | ${r[old_stored_large]} | $(ratio ${r[sdm_stored_small]} ${r[old_stored_small]}) now/before | $(ratio ${r[sdm_stored_medium]} ${r[old_stored_medium]}) now/before | $(ratio ${r[sdm_stored_large]} ${r[old_stored_large]}) now/before | |"
echo "| (a) sdm warm start against the hand-rolled loader | | | | $(ratio ${r[sdm_warm_small]} ${r[hand_small]}) | $(ratio ${r[sdm_warm_medium]} ${r[hand_medium]}) | $(ratio ${r[sdm_warm_large]} ${r[hand_large]}) | |"
echo "| (b) driver PTX JIT, its ComputeCache warm | ${r[driver_warm_small]} | ${r[driver_warm_medium]} | | | | | |"
echo "| (b) sdm PTX, its cache warm | ${r[sdm_ptx_warm_small]} | ${r[sdm_ptx_warm_medium]} | | $(ratio ${r[driver_warm_small]} ${r[sdm_ptx_warm_small]}) faster | $(ratio ${r[driver_warm_medium]} ${r[sdm_ptx_warm_medium]}) faster | | >= 2x faster |"
echo "| (c) nvJitLink alone, cold: link + cuModuleLoadData | ${r[nvjitlink_cold_small]} | ${r[nvjitlink_cold_medium]} | | | | | |"
echo "| (c) sdm cold PTX (empty cache, CUDA_CACHE_DISABLE=1), linked in the process (SDM_JIT_ISOLATION=never) | ${r[sdm_cold_inproc_small]} | ${r[sdm_cold_inproc_medium]} | | $(ratio ${r[sdm_cold_inproc_small]} ${r[nvjitlink_cold_small]}) | $(ratio ${r[sdm_cold_inproc_medium]} ${r[nvjitlink_cold_medium]}) | | <= 1.05x |"
echo "| (c) sdm cold PTX, linked in the JIT helper (the default for an unsigned archive) | ${r[sdm_cold_small]} | ${r[sdm_cold_medium]} | | $(ratio ${r[sdm_cold_small]} ${r[sdm_cold_inproc_small]}) of in-process | $(ratio ${r[sdm_cold_medium]} ${r[sdm_cold_inproc_medium]}) of in-process | | <= 1.1x of in-process (medium) |"
echo
echo "| (d) 16 medium PTX modules, cold | us | speedup | target |"
echo "|---|--:|--:|---|"
echo "| linked and loaded one after another (nvJitLink) | ${r[serial16]} | | |"
echo "| sdm_preload (parallel links) | ${r[preload16]} | $(ratio ${r[serial16]} ${r[preload16]}) | >= 6x on 16 cores |"
echo
echo "The warm start by phase (load_bench sdm-phases, medians of 9 runs, us; create, mount and get timed apart, the"
echo "load's phases from its own debug trace; the small module is stored by the default --min-saving, the others compressed):"
echo
python3 - "$out" <<'PY'
import re, statistics, sys
out = sys.argv[1]
rows, names = {}, []
for size in ("small", "medium", "large"):
    per = {}
    for line in open(f"{out}/phases_{size}.txt"):
        head, _, trace = line.partition("|")
        for k, v in re.findall(r"(\w+)=([\d.]+)", head): per.setdefault(k, []).append(float(v))
        for phase, v in re.findall(r"(?:: |, )([^,:]+?) (\d+) us", trace):
            per.setdefault(phase, []).append(float(v))
    for k in per:
        if k not in names: names.append(k)
    rows[size] = {k: statistics.median(v) for k, v in per.items()}
print("| phase | small | medium | large |")
print("|---|--:|--:|--:|")
for k in names:
    label = {"create": "sdm_runtime_create", "mount": "sdm_archive_mount_file", "get": "sdm_kernel_get, of which:"}.get(k, "&nbsp;&nbsp;" + k)
    print(f"| {label} | " + " | ".join(f"{rows[s].get(k, float('nan')):.0f}" for s in ("small", "medium", "large")) + " |")
PY
echo
echo "Warm-start trace (SDM_LOG=debug, small module):"
echo '```'
cat "$out/warm_trace.log"
echo '```'
} | tee "$out/load_bench.md"
