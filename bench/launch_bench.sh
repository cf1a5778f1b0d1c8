#!/usr/bin/env bash
# The launch bench on a GPU machine: sdm_launch against raw cuLaunchKernel for an empty
# kernel (launches per second, medians of interleaved rounds, ratio), and the sdm_plan_select memo
# hit (ns per call). Usage: bench/launch_bench.sh BUILD_DIR (BUILD_DIR holds bench/launch_bench,
# bench/empty.sm_90.cubin, tools/sdm: ninja -C BUILD_DIR bench/launch_bench bench/empty.sm_90.cubin).
set -euo pipefail
build=$1
out=${OUT:-launch-bench-out}
mkdir -p "$out"
export LD_LIBRARY_PATH="$PWD/$build/gpu-libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat >"$work/m.toml" <<'TOML'
[archive]
kernel_abi = "1.0"
[[kernel]]
name = "empty"
module = "empty"
signature = ""
problem = ["N"]
  [[kernel.plan]]
  class = "modern"
  block = 32
  grid = "ceil_div(N, block)"
TOML
"$build/tools/sdm" pack -q -m "$work/m.toml" -o "$work/empty.sdma" "empty:sm_90=$build/bench/empty.sm_90.cubin"
read -r raw sdm ratio < <("$build/bench/launch_bench" launch "$work/empty.sdma" empty 20000)
select_ns=$("$build/bench/launch_bench" select "$work/empty.sdma" empty 32)
{
echo "### Launch: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"
echo
echo "Empty kernel, grid 1 x 32 threads, 20,000 launches per round on one stream then a synchronize; medians of 15 interleaved rounds."
echo
echo "| measure | value | target |"
echo "|---|--:|---|"
echo "| raw cuLaunchKernel, launches/s | $raw | |"
echo "| sdm_launch (cuLaunchKernelEx), launches/s | $sdm | |"
echo "| sdm_launch / raw | $ratio | >= 0.97 |"
echo "| sdm_plan_select, memo hit, ns per call | $select_ns | <= 100 |"
} | tee "$out/launch_bench.md"
