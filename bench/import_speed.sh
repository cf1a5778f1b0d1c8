#!/usr/bin/env bash
# The default `sdm import` of a large library (issue 27): wall time, peak memory and archive size
# against the bytes the library itself stores for the same images (its fatbins' payloads), for
# `--arch sm_90 --ptx compute_90`, with -j JOBS (default: every core) and again at --level 3.
# Usage: bench/import_speed.sh BUILD_DIR [LIBRARY...]   (default: cuBLASLt, the largest)
set -uo pipefail
build=$1; shift
out=${OUT:-import-speed-out}
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export LD_LIBRARY_PATH="$PWD/$build/gpu-libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
lib64=${CUDA_HOME:-/usr/local/cuda}/lib64
libs=("$@"); [ ${#libs[@]} -gt 0 ] || libs=("$lib64"/libcublasLt.so.13)
{
echo "#### sdm import: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores"
echo
echo "| library | options | wall s | peak RSS MiB | archive B | the library's stored bytes for these images | archive / stored | target |"
echo "|---|---|--:|--:|--:|--:|--:|---|"
for lib in "${libs[@]}"; do
  for opts in "" "--level 3"; do
    log=$work/import.log
    # Peak RSS of the import, from the kernel's accounting of the waited-for child.
    python3 - "$build/tools/sdm" "$work/out.sdma" "$lib" $opts >"$work/measure" 2>"$log" <<'PY'
import resource, subprocess, sys, time
sdm, out, lib, *opts = sys.argv[1:]
t = time.monotonic()
r = subprocess.run([sdm, "import", "--arch", "sm_90", "--ptx", "compute_90", *opts, "-o", out, lib], capture_output=True, text=True)
wall = time.monotonic() - t
sys.stderr.write(r.stdout + r.stderr)
print(f"{wall:.1f} {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024:.0f} {r.returncode}")
PY
    read -r wall rss rc <"$work/measure"
    stored=$(sed -n 's/.* imported (\([0-9]*\) bytes as the containers store them).*/\1/p' "$log" | head -1)
    size=$(stat -c %s "$work/out.sdma" 2>/dev/null || echo 0)
    [ "$rc" = 0 ] || { cat "$log"; }
    echo "| $(basename "$lib") | ${opts:-(default)} | $wall | $rss | $size | ${stored:-?} | $(awk -v a="$size" -v b="${stored:-0}" 'BEGIN { if (b > 0) printf "%.3fx", a / b; else print "n/a" }') | $([ -z "$opts" ] && echo '<= 60 s (16 cores), <= 2 GB, <= 0.85x') |"
  done
done
} | tee "$out/import_speed.md"
