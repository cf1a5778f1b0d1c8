#!/usr/bin/env bash
# Per-target pulls of a large library (issue 40, docs/REGISTRY.md "Per-target pulls"): the library
# imported whole (every SM and PTX it holds), pushed with --per-target to Debian's docker-registry
# on loopback, pulled by an sm_90 node (the fake driver listing one H200) with --for-devices.
# Prints the whole archive's bytes, the sm_90 share (the whole archive's stored bytes of the
# entries the sm_90 part holds: what an sm_90 device can use, by the runtime's rule), the part's
# bytes and what the pull transferred (index, manifest and layer), with the wall time of each step.
# OUT (default per-target-out) keeps the push's and pull's output and both archives' listings.
# Usage: bench/per_target_pull.sh BUILD_DIR [LIBRARY]   (default: $CUDA_HOME/lib64/libcublasLt.so.13)
set -euo pipefail
build=$(cd "$1" && pwd)
out=${OUT:-per-target-out}  # the push's and pull's output and both listings are kept here
mkdir -p "$out"
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
t=$(date +%s.%N); "$sdm" push "$work/lib.sdma" "$registry/bench/lib:v1" --plain-http --per-target >"$out/push"; push_s=$(seconds "$t")
mkdir "$work/node"
t=$(date +%s.%N)
SDM_CUDA_DRIVER=$fake SDM_FAKE_CUDA_DEVICES="NVIDIA H200,9.0,232448,132,62914560" \
  "$sdm" pull "$registry/bench/lib:v1" --plain-http --into "$work/node" --for-devices >"$out/pull"
pull_s=$(seconds "$t")
whole=$(stat -c %s "$work/lib.sdma")
part=$(stat -c %s "$work/node/lib.sdma")
moved=$(sed -n 's/.* \([0-9]*\) bytes transferred)$/\1/p' "$out/pull" | head -1)
taken=$(sed -n 's/.*; index sha256:[0-9a-f]*: \([^;]*\);.*/\1/p' "$out/pull" | head -1)
# The sm_90 share: the whole archive's stored bytes of the images the part holds (by module and
# target); and with what the whole archive needs to decode them: the entries they are coded
# against (a prefix-coded entry's reference, the dictionary; transitively) and the manifest.
"$sdm" ls --json "$work/lib.sdma" >"$out/whole.json"
"$sdm" ls --json "$work/node/lib.sdma" >"$out/part.json"
read -r share share_decodable < <(python3 - "$out/whole.json" "$out/part.json" <<'PY'
import json, sys
whole, part = (json.load(open(p))["entries"] for p in sys.argv[1:3])
held = {(e["name"], e["kind"], e["target"]) for e in part}
images = [e for e in whole if (e["name"], e["kind"], e["target"]) in held and e["kind"] != "manifest"]
needed = {e["index"] for e in images} | {e["index"] for e in whole if e["kind"] == "manifest"}
pending = [e for e in images if "ref" in e]
while pending:
    ref = whole[pending.pop()["ref"]]
    if ref["index"] not in needed:
        needed.add(ref["index"])
        if "ref" in ref:
            pending.append(ref)
print(sum(e["stored_size"] for e in images), sum(whole[i]["stored_size"] for i in needed))
PY
)
echo "#### Per-target pull: $(basename "$lib"), $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores"
echo
echo "Parts pushed ($(grep -c '^part ' "$out/push")):"
sed -n 's/^part \([^ ]*\) .* (\([0-9]*\) bytes)$/  \1 \2 B/p' "$out/push" | tr '\n' ';' | sed 's/;$/\n/'
echo
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }
echo "| library | whole archive B | sm_90 share B | share + its references + manifest B | sm_90 part B | transferred B | taken | transferred / share | transferred / (share + references + manifest) | transferred / whole | import s | push s | pull s |"
echo "|---|--:|--:|--:|--:|--:|---|--:|--:|--:|--:|--:|--:|"
echo "| $(basename "$lib") | $whole | $share | $share_decodable | $part | $moved | $taken | $(ratio "$moved" "$share") | $(ratio "$moved" "$share_decodable") | $(ratio "$moved" "$whole") | $import_s | $push_s | $pull_s |"
