#!/usr/bin/env bash
# Per-target pulls (docs/REGISTRY.md, "Per-target pulls") against a real registry (Debian's
# docker-registry on loopback): a signed archive of many GPU targets pushed with --per-target
# (refused without --sign, or with a key that did not sign it); the index skopeo reads; a pull
# without --for-devices installing the whole archive; an sm_90 node and an sm_86 node (the fake
# driver) each installing only its part, checked by the archive's targets, serving `scale`, and
# transferring no more than the part and its metadata; nodes of two targets or of a target without
# a part installing the whole archive and saying why; the lock pinning the index's digest and the
# parts through it; a rollback refused on a part.
# Usage: per_target.sh SDM DATA_DIR FAKE_LIBCUDA
set -euo pipefail
sdm=$1 data=$2 fake=$3
source "$(dirname "$0")/../tool/lib.sh"
source "$(dirname "$0")/lib.sh"
start_registry
unset SDM_REQUIRE_SIGNED SDM_TRUSTED_KEYS SDM_ARCHIVE_PATH
export DOCKER_CONFIG=$work/docker SDM_STATE_DIR=$work/state SDM_CACHE_DIR=$work/cache SDM_CUDA_DRIVER=$fake
h200="NVIDIA H200,9.0,232448,132,62914560" a6000="NVIDIA RTX A6000,8.6,101376,84,6291456" rtx4090="NVIDIA GeForce RTX 4090,8.9,101376,128,75497472"
# An archive's images as sorted "module:target" lines.
images() { "$sdm" ls --json "$1" | python3 -c 'import json, sys
print("\n".join(sorted(e["name"] + ":" + e["target"] for e in json.load(sys.stdin)["entries"] if e["kind"] != "manifest")))'; }
# The bytes a pull printed it transferred, and the size a push printed for a part.
transferred() { sed -n 's/.* \([0-9]*\) bytes transferred)$/\1/p' "$1"; }
part_size() { sed -n "s/^part $2 .* (\([0-9]*\) bytes)\$/\1/p" "$1"; }

"$sdm" keygen -q -o "$work/k"
"$sdm" keygen -q -o "$work/other"
# Two modules: `kernels` for seven SMs and three virtual archs, `params` for sm_80 and sm_90 (an
# sm_75 part lists no `params` kernel: it holds none of its images).
pack() {  # pack OUTPUT VERSION
  "$sdm" pack -q -m "$data/manifest.toml" -o "$1" --archive-version "$2" --sign "$work/k.key" \
    kernels:sm_75="$data/kernels.sm_75.cubin" kernels:sm_80="$data/kernels.sm_80.cubin" kernels:sm_86="$data/kernels.sm_86.cubin" \
    kernels:sm_90="$data/kernels.sm_90.cubin" kernels:sm_90a="$data/kernels.sm_90a.cubin" kernels:sm_100f="$data/kernels.sm_100f.cubin" \
    kernels:sm_120="$data/kernels.sm_120.cubin" kernels:compute_75="$data/kernels.compute_75.ptx" kernels:compute_80="$data/kernels.compute_80.ptx" \
    kernels:compute_90="$data/kernels.compute_90.ptx" params:sm_80="$data/params.sm_80.cubin" params:sm_90="$data/params.sm_90.cubin"
}
pack "$work/v3.sdma" 3
pack "$work/v2.sdma" 2
whole_size=$(stat -c %s "$work/v3.sdma")

# A signed archive's parts are signed too: without --sign, or with a key that did not sign it, refused.
expect_fail "add --sign KEY" "$sdm" push "$work/v3.sdma" "$registry/fleet/multi:v3" --plain-http --per-target
expect_fail "signs parts only of an archive it signed" "$sdm" push "$work/v3.sdma" "$registry/fleet/multi:v3" --plain-http --per-target --sign "$work/other.key"
expect_fail "--per-target" "$sdm" push "$work/v3.sdma" "$registry/fleet/multi:v3" --plain-http --sign "$work/k.key"
"$sdm" pack -q -m "$data/manifest.toml" -o "$work/unsigned.sdma" kernels:sm_90="$data/kernels.sm_90.cubin"
expect_fail "sign it first" "$sdm" push "$work/unsigned.sdma" "$registry/fleet/multi:x" --plain-http --per-target --sign "$work/k.key"

"$sdm" push "$work/v3.sdma" "$registry/fleet/multi:v3" --plain-http --per-target --sign "$work/k.key" >"$work/push"
cat "$work/push"
[ "$(grep -c '^part ' "$work/push")" = 6 ] || fail "expected parts for sm_75, sm_80, sm_86, sm_90, sm_100, sm_120"
# A client that reads no index (an older sdm) pulls the whole archive by the digest push printed for it.
whole_ref=$(sed -n 's/^whole \([^ ]*\) ([0-9]* bytes)$/\1/p' "$work/push")
[ -n "$whole_ref" ] || fail "push printed no line for the whole archive"
"$sdm" pull -q "$whole_ref" --plain-http -o "$work/by-whole-digest.sdma"
cmp "$work/v3.sdma" "$work/by-whole-digest.sdma"
index_ref=$(tail -n 1 "$work/push")
case $index_ref in "$registry/fleet/multi@sha256:"*) ;; *) fail "push printed '$index_ref' last";; esac
index_digest=${index_ref#*@}

# The index as another client reads it: an OCI index of sdm's artifact type, its digest the one printed.
skopeo inspect --raw --tls-verify=false "docker://$registry/fleet/multi:v3" >"$work/index" 2>"$work/skopeo-err" || { cat "$work/skopeo-err"; fail "skopeo inspect"; }
[ "sha256:$(sha256sum <"$work/index" | cut -c1-64)" = "$index_digest" ] || fail "the index skopeo read is not $index_digest"
for want in '"mediaType":"application/vnd.oci.image.index.v1+json"' '"artifactType":"application/vnd.sdm.archive.v1"' \
            '"io.sdm.part-target":"all"' '"io.sdm.part-target":"sm_90"' '"io.sdm.part-target":"sm_86"' '"io.sdm.archive-version":"3"'; do
  grep -qF -- "$want" "$work/index" || fail "the index lacks $want: $(cat "$work/index")"
done

# Without --for-devices: the whole archive, as before.
"$sdm" pull "$registry/fleet/multi:v3" --plain-http -o "$work/whole.sdma" --trust "$work/k.pub" >"$work/pull-whole"
cmp "$work/v3.sdma" "$work/whole.sdma"
grep -qF "index $index_digest: the whole archive;" "$work/pull-whole" || fail "the pull does not say it took the whole archive: $(cat "$work/pull-whole")"

# An sm_90 node: only its part (the images an sm_90 device can use), signed, serving scale.
node() {  # node DIR DEVICES: pulls the tag with --for-devices into DIR as a node with those GPUs
  mkdir -p "$1"
  SDM_FAKE_CUDA_DEVICES=$2 "$sdm" pull "$registry/fleet/multi:v3" --plain-http --into "$1" --for-devices --trust "$work/k.pub" >"$1.out"
  cat "$1.out"
}
node "$work/node90" "$h200"
grep -qF "index $index_digest: part sm_90;" "$work/node90.out" || fail "the sm_90 node did not take its part"
[ "$(images "$work/node90/multi.sdma" | tr '\n' ' ')" = \
  "kernels:compute_75 kernels:compute_80 kernels:compute_90 kernels:sm_90 kernels:sm_90a params:sm_90 " ] || fail "the sm_90 part holds: $(images "$work/node90/multi.sdma")"
"$sdm" verify -q "$work/node90/multi.sdma" --trust "$work/k.pub"
[ "$("$sdm" ls --json "$work/node90/multi.sdma" | python3 -c 'import json, sys; print(json.load(sys.stdin)["archive_version"])')" = 3 ] || fail "the part lost the archive version"
SDM_FAKE_CUDA_DEVICES=$h200 SDM_ARCHIVE_PATH="$work/node90/multi.sdma" "$sdm" info --kernel scale >"$work/info90"
grep -qF "kernel scale: archive $work/node90/multi.sdma, module kernels, sm_90a" "$work/info90" || { cat "$work/info90"; fail "the sm_90 part does not serve scale"; }
# What it transferred: the part, its manifest and the index; no more.
part90=$(part_size "$work/push" sm_90) moved90=$(transferred "$work/node90.out")
echo "sm_90 node: transferred $moved90 bytes; part $part90 bytes; whole archive $whole_size bytes"
[ -n "$moved90" ] && [ "$moved90" -le $((part90 + 16384)) ] || fail "the sm_90 node transferred ${moved90:-?} bytes for a $part90-byte part"
[ "$moved90" -lt "$whole_size" ] || fail "the sm_90 node transferred as much as the whole archive"

# An sm_86 node: the sm_80 and sm_86 cubins and the PTX up to compute_80.
node "$work/node86" "$a6000"
grep -qF "index $index_digest: part sm_86;" "$work/node86.out" || fail "the sm_86 node did not take its part"
[ "$(images "$work/node86/multi.sdma" | tr '\n' ' ')" = "kernels:compute_75 kernels:compute_80 kernels:sm_80 kernels:sm_86 params:sm_80 " ] ||
  fail "the sm_86 part holds: $(images "$work/node86/multi.sdma")"
SDM_FAKE_CUDA_DEVICES=$a6000 SDM_ARCHIVE_PATH="$work/node86/multi.sdma" "$sdm" info --kernel scale >"$work/info86"
grep -qF "kernel scale: archive $work/node86/multi.sdma, module kernels, sm_86" "$work/info86" || { cat "$work/info86"; fail "the sm_86 part does not serve scale"; }
part86=$(part_size "$work/push" sm_86) moved86=$(transferred "$work/node86.out")
[ -n "$moved86" ] && [ "$moved86" -le $((part86 + 16384)) ] || fail "the sm_86 node transferred ${moved86:-?} bytes for a $part86-byte part"

# GPUs of two targets, or of a target without a part: the whole archive, and why.
node "$work/mixed" "$h200;$a6000"
grep -qF "the whole archive: this machine's GPUs are of 2 targets (sm_86, sm_90)" "$work/mixed.out" || fail "a node of two targets"
cmp "$work/v3.sdma" "$work/mixed/multi.sdma"
node "$work/node89" "$rtx4090"
grep -qF "the whole archive: the index has no part for sm_89 (parts: sm_100, sm_120, sm_75, sm_80, sm_86, sm_90)" "$work/node89.out" || fail "a node without a part"
cmp "$work/v3.sdma" "$work/node89/multi.sdma"

# The lock records the index's digest; after the tag moved on, --locked pulls that index (its
# bytes hashed) and the part it lists by digest.
"$sdm" lock -q "$registry/fleet/multi:v3" --plain-http --lock-file "$work/sdm.lock"
grep -qF "\"digest\": \"$index_digest\"" "$work/sdm.lock" || fail "the lock lacks the index digest: $(cat "$work/sdm.lock")"
grep -qF '"archive_version": 3' "$work/sdm.lock" || fail "the lock lacks the archive version: $(cat "$work/sdm.lock")"
"$sdm" push "$work/v2.sdma" "$registry/fleet/multi:v3" --plain-http --per-target --sign "$work/k.key" >/dev/null  # the tag moves
mkdir "$work/locked"
SDM_FAKE_CUDA_DEVICES=$h200 "$sdm" pull "$registry/fleet/multi:v3" --plain-http --locked --lock-file "$work/sdm.lock" --for-devices \
  -o "$work/locked/multi.sdma" >"$work/locked.out"
grep -qF "index $index_digest: part sm_90;" "$work/locked.out" || fail "--locked did not pull the locked index: $(cat "$work/locked.out")"
cmp "$work/node90/multi.sdma" "$work/locked/multi.sdma"

# The parts carry the archive's version: the sm_90 node, at version 3, refuses version 2's part.
expect_fail "has version 2, older than version 3" env SDM_FAKE_CUDA_DEVICES="$h200" \
  "$sdm" pull "$registry/fleet/multi:v3" --plain-http --into "$work/node90" --for-devices --trust "$work/k.pub"
cmp "$work/locked/multi.sdma" "$work/node90/multi.sdma" || fail "the refused pull changed the installed part"
echo "per-target pulls: ok"
