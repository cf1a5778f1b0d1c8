#!/usr/bin/env bash
# The SDM kernels' plans with 4, 8 and 16 blocks per SM (the manifest's choice is 8), each packed
# from the same cubins and timed with bench/kernel_bench: the measurement behind that choice.
# Usage (GPU machine): bench/kernel_plan_variants.sh BUILD_DIR. Prints % of copy bandwidth per case.
set -euo pipefail
b=${1:-build-gpu}
export LD_LIBRARY_PATH=$PWD/$b/gpu-libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
imgs=()
for f in "$b"/kernels/sdm.*.cubin "$b"/kernels/sdm.*.ptx; do
  imgs+=("sdm:$(basename "$f" | sed -E 's/^sdm\.(.*)\.(cubin|ptx)$/\1/')=$f")
done
for bps in 4 8 16; do
  sed "s/blocks_per_sm = 8/blocks_per_sm = $bps/" kernels/manifest.toml >"$w/m$bps.toml"
  "$b/tools/sdm" pack -q -m "$w/m$bps.toml" -o "$w/k$bps.sdma" "${imgs[@]}"
  echo "== blocks_per_sm $bps"
  "$b/bench/kernel_bench" "$w/k$bps.sdma" 11 | awk -F'\t' 'NR==1{copy=$7} NR>1{printf "%s-%s-D%s-%sG:%.0f%% ", $1, $2, $3, $4, 100*$7/copy} END{print ""}'
done
