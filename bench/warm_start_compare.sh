#!/usr/bin/env bash
# The warm start of two libsdm builds in one run: for each module size, medians over fresh
# processes of the floor (cuModuleLoadData + cuModuleGetFunction of the cubin, read before the
# clock), the library path's floor (cuLibraryLoadData + cuLibraryGetKernel + cuKernelGetFunction),
# a hand-rolled loader, and sdm's warm start (create + mount + kernel_get,
# compressed archive, warm cache) of BEFORE and of AFTER, interleaved so that both see the same
# machine. Usage: bench/warm_start_compare.sh BEFORE_DIR AFTER_DIR [RUNS]
# Each DIR holds bench/load_bench (with its libsdm beside it); AFTER_DIR also tools/sdm and the
# bench images (ninja -C AFTER_DIR bench/load_bench bench/large.sm_90.cubin bench/gemm.sm_90.cubin bench/gemm.compute_90.ptx).
set -uo pipefail
before=$1 after=$2 runs=${3:-21}
out=${OUT:-warm-compare-out}
mkdir -p "$out"
export LD_LIBRARY_PATH="$PWD/$after/gpu-libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
sdm=$after/tools/sdm
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp tests/data/kernels.sm_90.cubin "$work/small.sm_90.cubin"
cp "$after/bench/gemm.sm_90.cubin" "$work/medium.sm_90.cubin"
cp "$after/bench/large.sm_90.cubin" "$work/large.sm_90.cubin"
declare -A kernel=([small]=scale [medium]=$(grep -o '\.entry [A-Za-z0-9_$]*' "$after/bench/gemm.compute_90.ptx" | head -1 | awk '{print $2}')
                   [large]=_Z5chainILi1024ELi1EEvPfPKfi)
for size in small medium large; do
  # No manifest source: every kernel with the signature derived from the cubin.
  "$sdm" pack -q -o "$work/$size.sdma" "$size:sm_90=$work/$size.sm_90.cubin"
done
median() { python3 -c "import statistics,sys; v=[float(x) for x in sys.argv[1:] if x!='nan']; print(f'{statistics.median(v):.0f}' if v else 'nan')" "$@"; }
ratio() { python3 -c "a,b=float('$1'),float('$2'); print(f'{a/b:.2f}x' if a==a and b==b and b>0 else 'n/a')"; }
declare -A r
for size in small medium large; do
  k=${kernel[$size]}
  for build in before after; do
    dir=${!build}
    "$dir/bench/load_bench" sdm "$work/$size.sdma" "$k" "$work/cache-$build-$size" >/dev/null  # warm its cache
  done
  floor=() library=() hand=() sdm_before=() sdm_after=()
  for _ in $(seq "$runs"); do  # interleaved: every kind of process sees the same moments of the machine
    floor+=("$("$after/bench/load_bench" raw-cubin "$work/$size.sm_90.cubin" "$k" 2>>"$out/errors.log" || echo nan)")
    library+=("$("$after/bench/load_bench" raw-library "$work/$size.sm_90.cubin" "$k" 2>>"$out/errors.log" || echo nan)")
    hand+=("$("$after/bench/load_bench" hand-rolled "$work/$size.sm_90.cubin" "$k" 2>>"$out/errors.log" || echo nan)")
    sdm_before+=("$("$before/bench/load_bench" sdm "$work/$size.sdma" "$k" "$work/cache-before-$size" 2>>"$out/errors.log" || echo nan)")
    sdm_after+=("$("$after/bench/load_bench" sdm "$work/$size.sdma" "$k" "$work/cache-after-$size" 2>>"$out/errors.log" || echo nan)")
  done
  echo "$size floor ${floor[*]}" >>"$out/raw.txt"
  echo "$size library ${library[*]}" >>"$out/raw.txt"
  echo "$size hand ${hand[*]}" >>"$out/raw.txt"
  echo "$size before ${sdm_before[*]}" >>"$out/raw.txt"
  echo "$size after ${sdm_after[*]}" >>"$out/raw.txt"
  r[floor_$size]=$(median "${floor[@]}")
  r[library_$size]=$(median "${library[@]}")
  r[hand_$size]=$(median "${hand[@]}")
  r[before_$size]=$(median "${sdm_before[@]}")
  r[after_$size]=$(median "${sdm_after[@]}")
done
{
echo "### Warm start of two builds: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1), $(nproc) cores"
echo
echo "\`bench/warm_start_compare.sh $before $after $runs\`: medians of $runs fresh processes each, interleaved. sm_90 cubins of $(stat -c %s "$work/small.sm_90.cubin") / $(stat -c %s "$work/medium.sm_90.cubin") / $(stat -c %s "$work/large.sm_90.cubin") bytes; compressed archives, warm caches."
echo
echo "| us | small | medium | large |"
echo "|---|--:|--:|--:|"
echo "| the floor: cuModuleLoadData + cuModuleGetFunction, cubin read before the clock | ${r[floor_small]} | ${r[floor_medium]} | ${r[floor_large]} |"
echo "| the library floor: cuLibraryLoadData (preserved) + cuLibraryGetKernel + cuKernelGetFunction | ${r[library_small]} | ${r[library_medium]} | ${r[library_large]} |"
echo "| a hand-rolled loader: read the file + load + get function | ${r[hand_small]} | ${r[hand_medium]} | ${r[hand_large]} |"
echo "| sdm warm start, before ($before) | ${r[before_small]} | ${r[before_medium]} | ${r[before_large]} |"
echo "| sdm warm start, after ($after) | ${r[after_small]} | ${r[after_medium]} | ${r[after_large]} |"
echo "| after / before | $(ratio ${r[after_small]} ${r[before_small]}) | $(ratio ${r[after_medium]} ${r[before_medium]}) | $(ratio ${r[after_large]} ${r[before_large]}) |"
echo "| after / the floor | $(ratio ${r[after_small]} ${r[floor_small]}) | $(ratio ${r[after_medium]} ${r[floor_medium]}) | $(ratio ${r[after_large]} ${r[floor_large]}) |"
} | tee "$out/warm_start_compare.md"
