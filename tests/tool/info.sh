#!/usr/bin/env bash
# sdm info over the fake driver: a device of the SDM hardware matrix with its class, and T4, V100
# and Orin as unclassified (outside the matrix, which only archives declaring it follow), each with
# what serves the golden archive's kernels there; the same in --json.
# Usage: info.sh SDM FAKE_LIBCUDA GOLDEN_DIR
set -euo pipefail
sdm=$1 fake=$2 golden=$3
source "$(dirname "$0")/lib.sh"
export SDM_CUDA_DRIVER=$fake
export SDM_FAKE_CUDA_DEVICES="NVIDIA H200,9.0,232448,132,62914560;Tesla T4,7.5,65536,40,4194304;Tesla V100-SXM2-16GB,7.0,98304,80,6291456;NVIDIA Jetson AGX Orin,8.7,166912,16,4194304"
unset SDM_FAKE_CUDA_FAIL SDM_FAKE_CUDA_MISSING SDM_FAKE_CUDA_VERSION
"$sdm" info -a "$golden/kernels.sdma" >"$work/info" 2>&1 || { cat "$work/info"; fail "sdm info"; }
expect() { grep -F -- "$1" "$work/info" >/dev/null || { cat "$work/info" >&2; fail "sdm info lacks '$1'"; }; }
expect "device 0: NVIDIA H200, compute capability 9.0, class modern"
expect "device 1: Tesla T4, compute capability 7.5, class unclassified"
expect "device 2: Tesla V100-SXM2-16GB, compute capability 7.0, class unclassified"
expect "device 3: NVIDIA Jetson AGX Orin, compute capability 8.7, class unclassified"
expect "unclassified: outside the SDM kernels' hardware matrix, which archives declaring it follow (sparse_delta_memory supports"
expect "any other archive is served here by compute capability"
expect "kernel scale: archive $golden/kernels.sdma, module kernels, sm_90a"
"$sdm" info --json -a "$golden/kernels.sdma" | python3 -c "
import json, sys
d = json.load(sys.stdin)
classes = [x['class'] for x in d['devices']]
assert classes == ['modern', 'unclassified', 'unclassified', 'unclassified'], classes
assert 'sparse_delta_memory supports' in d['devices'][1]['matrix']
" || fail "sdm info --json"
echo "ok"
