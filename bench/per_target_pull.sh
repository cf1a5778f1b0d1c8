#!/usr/bin/env bash
# Per-target pulls of a large library (issue 40, docs/REGISTRY.md "Per-target pulls"): the library
# imported whole (every SM and PTX it holds), pushed with --per-target to Debian's docker-registry
# on loopback, pulled by an sm_90 node (the fake driver listing one H200) with --for-devices.
# Prints the whole archive's bytes, the sm_90 share (the whole archive's stored bytes of the
# entries the sm_90 part holds: what an sm_90 device can use, by the runtime's rule), the part's
# bytes and what the pull transferred (index, manifest and layer), with the wall time of each step.
# Usage: bench/per_target_pull.sh BUILD_DIR [LIBRARY]   (default: $CUDA_HOME/lib64/libcublasLt.so.13)
set -euo pipefail
build=$(cd "$1" && pwd)
lib=${2:-${CUDA_HOME:-/usr/local/cuda}/lib64/libcublasLt.so.13}
sdm=$build/tools/sdm fake=$build/tests/fake_cuda/libcuda_fake.so
source "$(dirname "$0")/../tests/tool/lib.sh"
source "$(dirname "$0")/../tests/registry/lib.sh"
start_registry
export DOCKER_CONFIG=$work/docker SDM_STATE_DIR=$work/state SDM_CACHE_DIR=$work/cache
unset SDM_REQUIRE_SIGNED SDM_TRUSTED_KEYS
seconds() { local start=$1; python3 -c 'import sys, time; print(f"{time.time() - float(sys.argv[1]):.1f}")' "$start"; }

t=$(date +%s.%N); "$sdm" import -q -o "$work/lib.sdma" "$lib" 2>"$work/import.log" || { tail -5 "$work/import.log"; fail "sdm import $lib"; }
import_s=$(seconds "$t")
t=$(date +%s.%N); "$sdm" push "$work/lib.sdma" "$registry/bench/lib:v1" --plain-http --per-target >"$work/push"; push_s=$(seconds "$t")
mkdir "$work/node"
t=$(date +%s.%N)
SDM_CUDA_DRIVER=$fake SDM_FAKE_CUDA_DEVICES="NVIDIA H200,9.0,232448,132,62914560" \
  "$sdm" pull "$registry/bench/lib:v1" --plain-http --into "$work/node" --for-devices >"$work/pull"
pull_s=$(seconds "$t")
whole=$(stat -c %s "$work/lib.sdma")
part=$(stat -c %s "$work/node/lib.sdma")
moved=$(sed -n 's/.* \([0-9]*\) bytes transferred)$/\1/p' "$work/pull" | head -1)
taken=$(sed -n 's/.*; index sha256:[0-9a-f]*: \([^;]*\);.*/\1/p' "$work/pull" | head -1)
# The sm_90 share: the whole archive's stored bytes of the entries the part holds (by module and target).
"$sdm" ls --json "$work/lib.sdma" >"$work/whole.json"
"$sdm" ls --json "$work/node/lib.sdma" >"$work/part.json"
share=$(python3 - "$work/whole.json" "$work/part.json" <<'PY'
import json, sys
whole, part = (json.load(open(p))["entries"] for p in sys.argv[1:3])
held = {(e["name"], e["kind"], e["target"]) for e in part}
print(sum(e["stored_size"] for e in whole if (e["name"], e["kind"], e["target"]) in held and e["kind"] != "manifest"))
PY
)
echo "#### Per-target pull: $(basename "$lib"), $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores"
echo
echo "Parts pushed ($(grep -c '^part ' "$work/push")):"
sed -n 's/^part \([^ ]*\) .* (\([0-9]*\) bytes)$/  \1 \2 B/p' "$work/push" | tr '\n' ';' | sed 's/;$/\n/'
echo
echo "| library | whole archive B | sm_90 share B | sm_90 part B | transferred B | taken | transferred / share | transferred / whole | import s | push s | pull s |"
echo "|---|--:|--:|--:|--:|---|--:|--:|--:|--:|--:|"
echo "| $(basename "$lib") | $whole | $share | $part | $moved | $taken | $(awk -v a="$moved" -v b="$share" 'BEGIN { printf "%.3fx", a / b }') | $(awk -v a="$moved" -v b="$whole" 'BEGIN { printf "%.3f", a / b }') | $import_s | $push_s | $pull_s |"
