#!/usr/bin/env bash
# What a link in the JIT helper costs against the same link in the process (docs/LOADING.md, "A
# compiler that crashes"), cold: nvJitLink's own cache off (CUDA_CACHE_DISABLE=1), the small PTX
# module (tests/data) and the medium one (the bench corpus's GEMM). Each figure is the median of
# fresh `sdm jit -j 1` runs of one module for sm_90, which link with nvJitLink in the tool itself
# (SDM_JIT_ISOLATION=never) or in the helper, the tool started again (always); the same archive
# is read and the same overlay written either way. Needs no GPU.
# Usage: bench/jit_isolation.sh BUILD_DIR [RUNS]   (BUILD_DIR has tools/sdm and bench/gemm.compute_90.ptx:
#        ninja -C BUILD_DIR tools/sdm bench/gemm.compute_90.ptx)
set -uo pipefail
build=$1 runs=${2:-9}
sdm=$build/tools/sdm
out=${OUT:-jit-isolation-out}
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export CUDA_CACHE_DISABLE=1
export LD_LIBRARY_PATH="$PWD/$build/gpu-libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
"$sdm" pack -q -o "$work/small.sdma" "small:compute_90=tests/data/kernels.compute_90.ptx"
"$sdm" pack -q -o "$work/medium.sdma" "medium:compute_90=$build/bench/gemm.compute_90.ptx"
# median NAME COMMAND...: the median wall time in ms of RUNS fresh runs, each logged.
median() {
  local name=$1; shift
  for _ in $(seq "$runs"); do
    local t0 t1
    t0=$(date +%s%N)
    "$@" >/dev/null 2>>"$out/errors.log" || { echo nan; continue; }
    t1=$(date +%s%N)
    echo "$(( (t1 - t0) / 1000 ))"
  done >"$out/$name.txt"
  python3 -c "import statistics; v=[float(x)/1000 for x in open('$out/$name.txt') if x.strip()!='nan']; print(f'{statistics.median(v):.1f}' if v else 'nan')"
}
declare -A r
for size in small medium; do
  for policy in never always; do
    # Interleaved would be fairer for drifting machines; a warm-up run of each first instead.
    SDM_JIT_ISOLATION=$policy "$sdm" jit -q -j 1 --arch 90 -o "$work/o.sdma" "$work/$size.sdma" >/dev/null 2>&1
    r[${size}_$policy]=$(SDM_JIT_ISOLATION=$policy median "${size}_$policy" "$sdm" jit -q -j 1 --arch 90 -o "$work/o.sdma" "$work/$size.sdma")
  done
done
ratio() { python3 -c "a,b=float('$1'),float('$2'); print(f'{a/b:.2f}x' if a==a and b==b and b>0 else 'n/a')"; }
{
echo "### The JIT helper: $(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -n), $(nproc) cores, $runs runs each"
echo
echo "Cold \`sdm jit -j 1 --arch 90\` of one PTX module (nvJitLink's cache off), medians of fresh processes; PTX: small $(stat -c %s tests/data/kernels.compute_90.ptx) B, medium $(stat -c %s "$build/bench/gemm.compute_90.ptx") B."
echo
echo "| module | in the process ms | in the JIT helper ms | helper / in-process | target |"
echo "|---|--:|--:|--:|---|"
echo "| small | ${r[small_never]} | ${r[small_always]} | $(ratio "${r[small_always]}" "${r[small_never]}") | |"
echo "| medium | ${r[medium_never]} | ${r[medium_always]} | $(ratio "${r[medium_always]}" "${r[medium_never]}") | <= 1.10x |"
} | tee "$out/jit_isolation.md"
