#!/usr/bin/env bash
# The SDM kernels against PyTorch and the copy bandwidth, on a GPU machine with PyTorch, in one run.
# Usage: bench/kernel_bench.sh BUILD_DIR (BUILD_DIR holds bench/kernel_bench and kernels/kernels.sdma:
# ninja -C BUILD_DIR bench/kernel_bench kernels/kernels.sdma). Writes $OUT/kernel_bench.md.
set -euo pipefail
build=$1
out=${OUT:-kernel-bench-out}
mkdir -p "$out"
export LD_LIBRARY_PATH="$PWD/$build/gpu-libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
"$build/bench/kernel_bench" "$build/kernels/kernels.sdma" >"$out/sdm.tsv"
python3 bench/kernel_bench_torch.py >"$out/torch.tsv"
python3 - "$out/sdm.tsv" "$out/torch.tsv" <<'PY' | tee "$out/kernel_bench.md"
import sys
sdm = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
torch = {tuple(r[:4]): r for r in (l.rstrip("\n").split("\t") for l in open(sys.argv[2]) if l.strip())}
copy = float(sdm[0][6])
print(f"Copy bandwidth this run (1 GiB cuMemcpyDtoD, 2 bytes moved per byte copied): {copy:.0f} GB/s. B = 16,384, K = 32, uniform random indices.")
print()
print("| op | dtype | D | table | min bytes | sdm ms | sdm GB/s | sdm % of copy | torch ms | torch GB/s | torch % of copy | sdm / torch | target |")
print("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|")
for r in sdm[1:]:
    t = torch.get(tuple(r[:4]))
    tgt = ">= 80 %" if r[0] == "read" else ">= 60 %"
    tms, tgb = (float(t[5]), float(t[6])) if t else (float("nan"), float("nan"))
    print(f"| {r[0]} | {r[1]} | {r[2]} | {r[3]} GiB | {int(r[4]):,} | {float(r[5]):.3f} | {float(r[6]):.0f} | {100*float(r[6])/copy:.0f} % | {tms:.3f} | {tgb:.0f} | {100*tgb/copy:.0f} % | {tms/float(r[5]):.2f}x | {tgt} |")
PY
