#!/usr/bin/env bash
# The SDM kernels against PyTorch and the copy bandwidth, on a GPU machine with PyTorch, in one run.
# Usage: bench/kernel_bench.sh BUILD_DIR (BUILD_DIR holds bench/kernel_bench, kernels/kernels.sdma and
# the staged-read cubins: ninja -C BUILD_DIR bench/kernel_bench kernels/kernels.sdma
# bench/gather_staged.bulk.sm_90.cubin bench/gather_staged.cp_async.sm_90.cubin). Writes
# $OUT/kernel_bench.md.
set -euo pipefail
build=$1
out=${OUT:-kernel-bench-out}
mkdir -p "$out"
export LD_LIBRARY_PATH="$PWD/$build/gpu-libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
"$build/bench/kernel_bench" "$build/kernels/kernels.sdma" 15 "$build/bench/gather_staged.bulk.sm_90.cubin" \
  "$build/bench/gather_staged.cp_async.sm_90.cubin" >"$out/sdm.tsv"
python3 bench/kernel_bench_torch.py >"$out/torch.tsv"
python3 - "$out/sdm.tsv" "$out/torch.tsv" <<'PY' | tee "$out/kernel_bench.md"
import sys
sdm = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
torch = {tuple(r[:4]): r for r in (l.rstrip("\n").split("\t") for l in open(sys.argv[2]) if l.strip())}
copy = float(sdm[0][6])
print(f"Copy bandwidth this run (1 GiB cuMemcpyDtoD, 2 bytes moved per byte copied): {copy:.0f} GB/s. B = 16,384, K = 32, uniform random indices.")
print("read / write: sdm_gather / sdm_scatter_delta_atomic; write-det: the deterministic write (keys, merge passes, grouped apply, all timed);")
print("read-bulk / read-cp.async: the read staged through shared memory by the copy layer's modern / portable side (bench/gather_staged.cu).")
print()
print("| op | dtype | D | table | min bytes | sdm ms | sdm GB/s | sdm % of copy | torch ms | torch GB/s | torch % of copy | sdm / torch | target |")
print("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|")
for r in sdm[1:]:
    tgt = ">= 80 %" if r[0].startswith("read") else ">= 60 %"
    t = torch.get(("read" if r[0].startswith("read") else "write",) + tuple(r[1:4]))  # PyTorch's op of the same kind
    mib = int(r[3])
    table = f"{mib // 1024} GiB" if mib >= 1024 else f"{mib} MiB"
    tms, tgb = (float(t[5]), float(t[6])) if t else (float("nan"), float("nan"))
    print(f"| {r[0]} | {r[1]} | {r[2]} | {table} | {int(r[4]):,} | {float(r[5]):.3f} | {float(r[6]):.0f} | {100*float(r[6])/copy:.0f} % | {tms:.3f} | {tgb:.0f} | {100*tgb/copy:.0f} % | {tms/float(r[5]):.2f}x | {tgt} |")
PY
