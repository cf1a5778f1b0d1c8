#!/usr/bin/env bash
# The SDM kernels' plans with 4, 8 and 16 blocks of 256 threads per SM in every rule, with blocks
# of 128 and 512 threads (2,048 threads per SM), and the manifest's plans without PDL, each packed
# from the same cubins and timed with bench/kernel_bench: the measurement behind those choices.
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
for variant in 4 8 16 block128 block512 no-pdl; do
  case $variant in
    no-pdl) grep -v '^  pdl = ' kernels/manifest.toml >"$w/m.toml" ;;
    block128) sed -E "s/block = 256/block = 128/; s/blocks_per_sm = [0-9]+/blocks_per_sm = 16/" kernels/manifest.toml >"$w/m.toml" ;;
    block512) sed -E "s/block = 256/block = 512/; s/blocks_per_sm = [0-9]+/blocks_per_sm = 4/" kernels/manifest.toml >"$w/m.toml" ;;
    *) sed -E "s/blocks_per_sm = [0-9]+/blocks_per_sm = $variant/" kernels/manifest.toml >"$w/m.toml" ;;
  esac
  "$b/tools/sdm" pack -q -m "$w/m.toml" -o "$w/k.sdma" "${imgs[@]}"
  case $variant in
    block*) echo "== ${variant#block} threads per block, 2048 threads per SM" ;;
    no-pdl) echo "== the manifest's plans without PDL" ;;
    *) echo "== $variant blocks per SM" ;;
  esac
  "$b/bench/kernel_bench" "$w/k.sdma" 11 | awk -F'\t' 'NR==1{copy=$7} NR>1{printf "%s-%s-D%s-%sM:%.0f%%(%.3fms) ", $1, $2, $3, $4, 100*$7/copy, $6} END{print ""}'
done
