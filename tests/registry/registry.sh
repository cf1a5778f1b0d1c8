#!/usr/bin/env bash
# sdm push and sdm pull against a real registry (Debian's docker-registry on loopback): by tag
# and by digest, byte-identical; --into replacing an older archive by rename; a failed pull
# leaving the old archive; a referrer pushed with --subject found by the fallback tag schema;
# a signature required by --trust and by SDM_REQUIRE_SIGNED. Then interop with skopeo (Debian)
# and the oras Python package (PyPI, in a venv of the test).
# Then a fleet's round: an overlay `sdm jit` built, pushed as a referrer of its base, pulled with
# --for-devices for the GPUs the (fake) driver lists, served above its base; a running host
# (examples/hot_reload) picking up a pull into the file it serves; a rollback refused.
# Usage: registry.sh SDM DATA_DIR [FAKE_LIBCUDA]
set -euo pipefail
sdm=$1 data=$2 fake=${3:-}
source "$(dirname "$0")/../tool/lib.sh"
source "$(dirname "$0")/lib.sh"
start_registry
unset SDM_REQUIRE_SIGNED SDM_TRUSTED_KEYS
export DOCKER_CONFIG=$work/docker  # no credentials of the machine's user
has() { local want=$1; shift; "$@" >"$work/has" 2>&1 || { cat "$work/has"; fail "failed: $*"; }; grep -q -- "$want" "$work/has" || { cat "$work/has"; fail "'$*' lacks '$want'"; }; }

"$sdm" pack -q -m "$data/manifest.toml" -o "$work/v1.sdma" kernels:sm_80="$data/kernels.sm_80.cubin" kernels:compute_80="$data/kernels.compute_80.ptx"
"$sdm" pack -q -m "$data/manifest.toml" -o "$work/v2.sdma" kernels:sm_90a="$data/kernels.sm_90a.cubin" kernels:compute_90="$data/kernels.compute_90.ptx"

# Push by tag: one line, REGISTRY/REPOSITORY@DIGEST.
"$sdm" push "$work/v1.sdma" "$registry/fleet/kernels:v1" --plain-http >"$work/push1"
ref1=$(cat "$work/push1")
case $ref1 in "$registry/fleet/kernels@sha256:"*) ;; *) fail "push printed '$ref1'";; esac
digest1=${ref1#*@}
# Pushing the same bytes again is the same digest (canonical manifest, blobs skipped).
[ "$("$sdm" push "$work/v1.sdma" "$registry/fleet/kernels:v1" --plain-http)" = "$ref1" ] || fail "a second push gave another digest"
"$sdm" push "$work/v2.sdma" "$registry/fleet/kernels:v2" --plain-http >/dev/null

# TLS by default: a plain-HTTP registry is refused, and the message says what to do.
expect_fail "--plain-http" "$sdm" push "$work/v1.sdma" "$registry/fleet/kernels:v1"
expect_fail "--plain-http" "$sdm" pull "$registry/fleet/kernels:v1" -o "$work/x.sdma"

# Pull by tag and by digest: byte-identical.
"$sdm" pull -q "$registry/fleet/kernels:v1" --plain-http -o "$work/by-tag.sdma"
cmp "$work/v1.sdma" "$work/by-tag.sdma"
"$sdm" pull -q "$ref1" --plain-http -o "$work/by-digest.sdma"
cmp "$work/v1.sdma" "$work/by-digest.sdma"

# --into DIR: REPOSITORY-NAME.sdma, replaced by rename (a new inode), nothing else left there.
mkdir "$work/watched"
"$sdm" pull -q "$registry/fleet/kernels:v1" --plain-http --into "$work/watched"
cmp "$work/v1.sdma" "$work/watched/kernels.sdma"
inode=$(stat -c %i "$work/watched/kernels.sdma")
"$sdm" pull -q "$registry/fleet/kernels:v2" --plain-http --into "$work/watched"
cmp "$work/v2.sdma" "$work/watched/kernels.sdma"
[ "$(stat -c %i "$work/watched/kernels.sdma")" != "$inode" ] || fail "--into wrote in place instead of renaming"
[ "$(ls -A "$work/watched")" = kernels.sdma ] || fail "--into left: $(ls -A "$work/watched")"

# A failed pull leaves the old archive and nothing else: an unknown tag, a digest the registry lacks.
expect_fail "MANIFEST_UNKNOWN" "$sdm" pull "$registry/fleet/kernels:v3" --plain-http --into "$work/watched"
grep -qF "check the reference" "$work/err" || fail "no fix in: $(cat "$work/err")"
expect_fail "nothing was written" "$sdm" pull "$registry/fleet/kernels@sha256:$(printf '0%.0s' $(seq 64))" --plain-http --into "$work/watched"
cmp "$work/v2.sdma" "$work/watched/kernels.sdma"
[ "$(ls -A "$work/watched")" = kernels.sdma ] || fail "a failed pull left: $(ls -A "$work/watched")"

# A name that would be a path never reaches a request.
expect_fail "distribution spec's grammar" "$sdm" pull "$registry/../etc:v1" --plain-http --into "$work/watched"
expect_fail "distribution spec's grammar" "$sdm" push "$work/v1.sdma" "$registry/Fleet/kernels:v1" --plain-http
expect_fail "names no registry" "$sdm" pull "kernels:v1" --into "$work/watched"

# The signature under the host's policy, before the archive appears.
"$sdm" keygen -q -o "$work/k1"
"$sdm" keygen -q -o "$work/k2"
cp "$work/v1.sdma" "$work/signed.sdma"
"$sdm" sign -q "$work/signed.sdma" --key "$work/k1.key"
"$sdm" push "$work/signed.sdma" "$registry/fleet/kernels:signed" --plain-http >"$work/push-signed"
skopeo inspect --raw --tls-verify=false "docker://$registry/fleet/kernels:signed" >"$work/signed-manifest" 2>"$work/skopeo-err" ||
  { cat "$work/skopeo-err"; fail "skopeo inspect"; }
id1=$("$sdm" ls --json "$work/signed.sdma" | python3 -c 'import json,sys; print(json.load(sys.stdin)["signers"][0])')
grep -qF "\"io.sdm.signers\":\"$id1\"" "$work/signed-manifest" || fail "no signer annotation: $(cat "$work/signed-manifest")"
expect_fail "was not replaced" "$sdm" pull "$registry/fleet/kernels:v1" --plain-http --into "$work/watched" --trust "$work/k1.pub"
"$sdm" pull -q "$registry/fleet/kernels:signed" --plain-http --into "$work/watched" --trust "$work/k1.pub"
cmp "$work/signed.sdma" "$work/watched/kernels.sdma"
expect_fail "not mounted" env SDM_REQUIRE_SIGNED=1 SDM_TRUSTED_KEYS="$work/k2.pub" "$sdm" pull "$registry/fleet/kernels:signed" --plain-http --into "$work/watched"
cmp "$work/signed.sdma" "$work/watched/kernels.sdma"
SDM_REQUIRE_SIGNED=1 SDM_TRUSTED_KEYS="$work/k1.pub" "$sdm" pull -q "$registry/fleet/kernels:signed" --plain-http -o "$work/env-signed.sdma"

# A referrer: pushed with --subject, listed by the fallback tag schema (distribution 2.8 has no referrers API).
"$sdm" push "$work/v2.sdma" "$registry/fleet/kernels:v1-overlay" --plain-http --subject "$digest1" >"$work/push-overlay"
overlay=$(cat "$work/push-overlay"); overlay=${overlay#*@}
skopeo inspect --raw --tls-verify=false "docker://$registry/fleet/kernels:sha256-${digest1#sha256:}" >"$work/index" 2>"$work/skopeo-err" ||
  { cat "$work/skopeo-err"; fail "no fallback index tag"; }
grep -qF "$overlay" "$work/index" || fail "the fallback index lacks the referrer: $(cat "$work/index")"
skopeo inspect --raw --tls-verify=false "docker://$registry/fleet/kernels@$overlay" >"$work/overlay-manifest"
grep -qF "\"subject\":{\"digest\":\"$digest1\"" "$work/overlay-manifest" || fail "no subject: $(cat "$work/overlay-manifest")"
expect_fail "not sha256" "$sdm" push "$work/v2.sdma" "$registry/fleet/kernels:x" --plain-http --subject v1

# sdm lock records what a tag names; pull --locked gets that digest after the tag moved on.
"$sdm" lock -q "$registry/fleet/kernels:v1" "$registry/fleet/kernels:v2" --plain-http --lock-file "$work/sdm.lock"
grep -qF "\"digest\": \"$digest1\"" "$work/sdm.lock" || fail "the lock lacks $digest1: $(cat "$work/sdm.lock")"
grep -qF '"content_version": "tests.1"' "$work/sdm.lock" || fail "the lock lacks the content version: $(cat "$work/sdm.lock")"
"$sdm" push "$work/v2.sdma" "$registry/fleet/kernels:v1" --plain-http >/dev/null  # the tag moves
"$sdm" pull -q "$registry/fleet/kernels:v1" --plain-http --locked --lock-file "$work/sdm.lock" -o "$work/locked.sdma"
cmp "$work/v1.sdma" "$work/locked.sdma"
"$sdm" pull -q "$registry/fleet/kernels:v1" --plain-http -o "$work/unlocked.sdma"
cmp "$work/v2.sdma" "$work/unlocked.sdma"
expect_fail "sdm lock $registry/fleet/kernels:v9 adds it" "$sdm" pull "$registry/fleet/kernels:v9" --plain-http --locked --lock-file "$work/sdm.lock" -o "$work/x.sdma"
expect_fail "does not exist" "$sdm" pull "$registry/fleet/kernels:v1" --plain-http --locked --lock-file "$work/none.lock" -o "$work/x.sdma"
printf '{"lock_version": 1, "archives": [{"reference": "%s/../x:v1", "digest": "%s", "content_version": ""}]}' "$registry" "$digest1" >"$work/bad.lock"
expect_fail "distribution spec's grammar" "$sdm" pull "$registry/fleet/kernels:v1" --plain-http --locked --lock-file "$work/bad.lock" -o "$work/x.sdma"
# A lock's pinned overlays are checked as digests given on the command line.
printf '{"lock_version": 1, "archives": [{"reference": "%s/fleet/kernels:v1", "digest": "%s", "content_version": "", "overlays": "x"}]}' "$registry" "$digest1" >"$work/bad.lock"
expect_fail "are not a list of at most 64" "$sdm" pull "$registry/fleet/kernels:v1" --plain-http --locked --lock-file "$work/bad.lock" -o "$work/x.sdma"
printf '{"lock_version": 1, "archives": [{"reference": "%s/fleet/kernels:v1", "digest": "%s", "content_version": "", "overlays": [{"digest": "sha256:../x", "targets": "sm_90"}]}]}' "$registry" "$digest1" >"$work/bad.lock"
expect_fail "lacks a sha256 \"digest\"" "$sdm" pull "$registry/fleet/kernels:v1" --plain-http --locked --lock-file "$work/bad.lock" -o "$work/x.sdma"
[ ! -e "$work/x.sdma" ] || fail "a refused lock wrote a file"
"$sdm" push "$work/v1.sdma" "$registry/fleet/kernels:v1" --plain-http >/dev/null  # back, for what follows

# skopeo reads what sdm pushed: the manifest by tag, with sdm's artifactType and annotations.
skopeo inspect --raw --tls-verify=false "docker://$registry/fleet/kernels:v1" >"$work/manifest"
for want in '"artifactType":"application/vnd.sdm.archive.v1"' '"mediaType":"application/vnd.sdm.archive.layer.v1"' \
            '"org.opencontainers.image.version":"tests.1"' '"io.sdm.targets":"compute_80,sm_80"' '"io.sdm.kernel-abi":'; do
  grep -qF -- "$want" "$work/manifest" || fail "skopeo's manifest lacks $want: $(cat "$work/manifest")"
done
[ "sha256:$(sha256sum <"$work/manifest" | cut -c1-64)" = "$digest1" ] || fail "the manifest skopeo read is not $digest1"

# oras (PyPI) pulls what sdm pushed and pushes what sdm pulls.
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install -q oras >"$work/pip.log" 2>&1 || { cat "$work/pip.log"; fail "pip install oras failed: PyPI unreachable? (the interop test needs the oras package)"; }
cat >"$work/oras_client.py" <<'PY'
import os, sys
import oras.client
action, registry, target = sys.argv[1:4]
client = oras.client.OrasClient(hostname=registry, insecure=True)
if action == "pull":
    print("\n".join(client.pull(target=target, outdir=sys.argv[4])))
else:
    # oras-py sets no artifactType: the config's media type is then the artifact type (the image spec's rule).
    os.chdir(os.path.dirname(sys.argv[4]))
    with open("config.json", "w") as f:
        f.write("{}")
    client.push(target=target, files=[os.path.basename(sys.argv[4]) + ":" + sys.argv[5]],
                manifest_config="config.json:" + sys.argv[6], manifest_annotations={"org.opencontainers.image.version": "oras.1"},
                disable_path_validation=True)
PY
oras() { "$work/venv/bin/python" "$work/oras_client.py" "$@" >"$work/oras.log" 2>&1 || { cat "$work/oras.log"; fail "oras $*"; }; }
mkdir "$work/oras-out"
oras pull "$registry" "$registry/fleet/kernels:v1" "$work/oras-out"
cmp "$work/v1.sdma" "$work/oras-out/kernels.sdma"
mkdir "$work/oras-in" && cp "$work/v2.sdma" "$work/oras-in/from-oras.sdma"
oras push "$registry" "$registry/fleet/oras:v2" "$work/oras-in/from-oras.sdma" application/vnd.sdm.archive.layer.v1 application/vnd.sdm.archive.v1
"$sdm" pull -q "$registry/fleet/oras:v2" --plain-http -o "$work/from-oras.sdma"
cmp "$work/v2.sdma" "$work/from-oras.sdma"
# Another artifact type is refused, naming what sdm wants, and writes nothing.
oras push "$registry" "$registry/fleet/oras:other" "$work/oras-in/from-oras.sdma" application/vnd.sdm.archive.layer.v1 application/vnd.example.other
expect_fail "artifactType" "$sdm" pull "$registry/fleet/oras:other" --plain-http -o "$work/other.sdma"
[ ! -e "$work/other.sdma" ] || fail "a refused pull wrote a file"
# The referrers index is a list of candidates, never a grant (docs/REGISTRY.md, "Overlays for the
# node's GPUs"): an attacker who may push adds an unsigned overlay and one signed for another base.
# crafted_index BASE_DIGEST LISTED COUNT: the fallback referrers tag of BASE_DIGEST made an index
# that lists the manifest LISTED COUNT times (what anyone who may push can store there).
crafted_index() {
  python3 - "$registry" "$@" <<'PY' || fail "could not store a crafted index"
import json, sys, urllib.request
registry, base, listed, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
m = urllib.request.urlopen(urllib.request.Request(f"http://{registry}/v2/fleet/sdmk/manifests/{listed}", headers={"Accept": "application/vnd.oci.image.manifest.v1+json"})).read()
entry = {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": listed, "size": len(m), "artifactType": "application/vnd.sdm.archive.v1",
         "annotations": json.loads(m)["annotations"]}
index = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": [entry] * count}).encode()
req = urllib.request.Request(f"http://{registry}/v2/fleet/sdmk/manifests/sha256-{base[7:]}", data=index, method="PUT",
                             headers={"Content-Type": "application/vnd.oci.image.index.v1+json"})
urllib.request.urlopen(req)
PY
}
h200=(env SDM_FAKE_CUDA_DEVICES="NVIDIA H200,9.0,232448,132,62914560")
overlay_tests() {
  local base_digest=${base_ref#*@} evil good other node listed
  "$sdm" jit -q "$work/base5.sdma" --arch 90 -o "$work/evil.sdma"  # unsigned: anyone can build it
  evil=$("$sdm" push "$work/evil.sdma" "$registry/fleet/sdmk:evil" --plain-http --subject "$base_digest"); evil=${evil#*@}
  "$sdm" pack -q -m "$data/manifest.toml" -o "$work/base6.sdma" --archive-version 6 --sign "$work/fleet.key" kernels:compute_90="$data/kernels.compute_90.ptx"
  "$sdm" jit -q "$work/base6.sdma" --arch 90 -o "$work/other6.sdma" --trust "$work/fleet.pub" --sign "$work/fleet.key"
  other=$("$sdm" push "$work/other6.sdma" "$registry/fleet/sdmk:other6" --plain-http --subject "$base_digest"); other=${other#*@}
  good=$(cat "$work/overlay-ref"); good=${good#*@}
  # Unpinned and no key trusted: nothing from the index is installed, and the reason is said.
  node=$work/node-default; mkdir "$node"
  "${h200[@]}" "$sdm" pull "$registry/fleet/sdmk:v5" --plain-http --into "$node" --for-devices >"$work/out"
  grep -qF "installs only overlays pinned" "$work/out" || { cat "$work/out"; fail "an unpinned pull without a key"; }
  [ "$(ls -A "$node")" = sdmk.sdma ] || fail "an unpinned, unsigned pull installed: $(ls -A "$node")"
  # Signed: the newest candidate (the other base's v6, signed) fails its base check and is skipped;
  # the next one, the fleet's, is installed; the unsigned one is never fetched. One per target.
  node=$work/node-signed; mkdir "$node"
  "${h200[@]}" "$sdm" pull "$registry/fleet/sdmk:v5" --plain-http --into "$node" --for-devices --trust "$work/fleet.pub" >"$work/out" 2>"$work/out-err"
  grep -qF "overlay $other for sm_90 skipped" "$work/out-err" && grep -qF "is not an overlay of" "$work/out-err" || { cat "$work/out-err"; fail "the other base's overlay"; }
  [ "$(ls "$node" | grep -c overlay)" = 1 ] && [ -e "$node/sdmk.overlay-${good:7:12}.sdma" ] || fail "the signed pull installed: $(ls -A "$node")"
  cmp "$work/overlay90.sdma" "$node/sdmk.overlay-${good:7:12}.sdma"
  # Pinned by digest: installed without a signature (the operator chose it), only that one.
  node=$work/node-pinned; mkdir "$node"
  "${h200[@]}" "$sdm" pull "$base_ref" --plain-http --into "$node" --for-devices --overlay "$evil" >"$work/out"
  [ "$(ls -A "$node" | tr '\n' ' ')" = "sdmk.overlay-${evil:7:12}.sdma sdmk.sdma " ] || fail "the pinned pull installed: $(ls -A "$node")"
  expect_fail "two pinned overlays serve sm_90" "${h200[@]}" "$sdm" pull "$base_ref" --plain-http --into "$node" --for-devices --overlay "$evil" --overlay "$good"
  mkdir "$work/node-v4"
  expect_fail "not of the archive pulled" "${h200[@]}" "$sdm" pull "$registry/fleet/sdmk:v4" --plain-http --into "$work/node-v4" --for-devices --overlay "$evil"
  expect_fail "is not sha256" "${h200[@]}" "$sdm" pull "$base_ref" --plain-http -o "$work/x.sdma" --for-devices --overlay v1
  # sdm lock --overlays: two overlays for sm_90 in the index is for the operator to settle.
  expect_fail "two overlays are listed for sm_90" "$sdm" lock -q "$registry/fleet/sdmk:v5" --overlays --plain-http --lock-file "$work/o.lock"
  "$sdm" jit -q "$work/base4.sdma" --arch 90 -o "$work/overlay4.sdma" --trust "$work/fleet.pub" --sign "$work/fleet.key"
  local base4; base4=$("$sdm" pull -q "$registry/fleet/sdmk:v4" --plain-http -o "$work/b4.sdma" && skopeo inspect --raw --tls-verify=false "docker://$registry/fleet/sdmk:v4" | sha256sum | cut -c1-64)
  listed=$("$sdm" push "$work/overlay4.sdma" "$registry/fleet/sdmk:v4-sm90" --plain-http --subject "sha256:$base4"); listed=${listed#*@}
  "$sdm" lock "$registry/fleet/sdmk:v4" --overlays --plain-http --lock-file "$work/o.lock" >"$work/out"
  grep -qF "overlay $listed (sm_90)" "$work/out" || { cat "$work/out"; fail "sdm lock --overlays"; }
  # Then an attacker adds an unsigned overlay of v4; the locked pull installs only the pinned one.
  "$sdm" jit -q "$work/base4.sdma" --arch 90 -o "$work/evil4.sdma"
  "$sdm" push "$work/evil4.sdma" "$registry/fleet/sdmk:evil4" --plain-http --subject "sha256:$base4" >/dev/null
  node=$work/node-locked; mkdir "$node"
  "${h200[@]}" "$sdm" pull "$registry/fleet/sdmk:v4" --plain-http --locked --lock-file "$work/o.lock" --into "$node" --for-devices >"$work/out"
  [ "$(ls -A "$node" | tr '\n' ' ')" = "sdmk.overlay-${listed:7:12}.sdma sdmk.sdma " ] || fail "the locked pull installed: $(ls -A "$node")"
  # A referrers index that lists too many manifests (the same one 257 times, as a push may write
  # any index to the tag) is refused, and one listed twice is one candidate.
  crafted_index "$base_digest" "$good" 257
  node=$work/node-many; mkdir "$node"
  expect_fail "lists 257 manifests, more than the 256" "${h200[@]}" "$sdm" pull "$registry/fleet/sdmk:v5" --plain-http --into "$node" --for-devices --trust "$work/fleet.pub"
  crafted_index "$base_digest" "$good" 2
  node=$work/node-twice; mkdir "$node"
  "${h200[@]}" "$sdm" pull "$registry/fleet/sdmk:v5" --plain-http --into "$node" --for-devices --trust "$work/fleet.pub" >"$work/out"
  [ "$(grep -c "^overlay " "$work/out")" = 1 ] || { cat "$work/out"; fail "a digest listed twice"; }
}
# A fleet's round (docs/REGISTRY.md, "Fleets"): build once per GPU type, push, pull on nodes.
if [ -n "$fake" ]; then
  export SDM_STATE_DIR=$work/state SDM_CACHE_DIR=$work/cache SDM_CUDA_DRIVER=$fake
  "$sdm" keygen -q -o "$work/fleet"
  "$sdm" pack -q -m "$data/manifest.toml" -o "$work/base5.sdma" --archive-version 5 --sign "$work/fleet.key" kernels:compute_90="$data/kernels.compute_90.ptx"
  "$sdm" pack -q -m "$data/manifest.toml" -o "$work/base4.sdma" --archive-version 4 --sign "$work/fleet.key" kernels:compute_90="$data/kernels.compute_90.ptx"
  base_ref=$("$sdm" push "$work/base5.sdma" "$registry/fleet/sdmk:v5" --plain-http)
  "$sdm" push "$work/base4.sdma" "$registry/fleet/sdmk:v4" --plain-http >/dev/null
  if "$sdm" jit -q "$work/base5.sdma" --arch 90 -o "$work/overlay90.sdma" --trust "$work/fleet.pub" --sign "$work/fleet.key" 2>"$work/jit.err"; then
    "$sdm" push "$work/overlay90.sdma" "$registry/fleet/sdmk:v5-sm90" --plain-http --subject "${base_ref#*@}" >"$work/overlay-ref"
    mkdir "$work/node"
    # A node with an H200: the base and its sm_90 overlay, both checked before they appear.
    SDM_FAKE_CUDA_DEVICES="NVIDIA H200,9.0,232448,132,62914560" \
      "$sdm" pull "$registry/fleet/sdmk:v5" --plain-http --into "$work/node" --for-devices --trust "$work/fleet.pub" >"$work/pull-node"
    cat "$work/pull-node"
    cmp "$work/base5.sdma" "$work/node/sdmk.sdma"
    overlay_file=$(ls "$work/node" | grep overlay || true)
    [ -n "$overlay_file" ] || fail "--for-devices pulled no overlay: $(ls -A "$work/node")"
    cmp "$work/overlay90.sdma" "$work/node/$overlay_file"
    # A running host's layers: the overlay's cubin serves above its base (no JIT on this node).
    SDM_FAKE_CUDA_DEVICES="NVIDIA H200,9.0,232448,132,62914560" SDM_ARCHIVE_PATH="$work/node/sdmk.sdma:$work/node/$overlay_file" \
      "$sdm" info --kernel scale >"$work/info-node"
    grep -qF "kernel scale: archive $work/node/$overlay_file, module kernels, sm_90" "$work/info-node" || { cat "$work/info-node"; fail "the pulled overlay does not serve"; }
    # A node of another GPU: no overlay for it, only the base.
    mkdir "$work/node86"
    SDM_FAKE_CUDA_DEVICES="NVIDIA RTX A6000,8.6,101376,84,6291456" \
      "$sdm" pull "$registry/fleet/sdmk:v5" --plain-http --into "$work/node86" --for-devices --trust "$work/fleet.pub" >"$work/pull-86"
    grep -qF "no overlay holds a cubin for this machine's GPUs (sm_86)" "$work/pull-86" || { cat "$work/pull-86"; fail "an sm_86 node"; }
    [ "$(ls -A "$work/node86")" = sdmk.sdma ] || fail "an sm_86 node got: $(ls -A "$work/node86")"
    overlay_tests
    # A running host picks up a pull into the file it serves (examples/hot_reload polls once a frame).
    hot=$(dirname "$sdm")/../examples/hot_reload
    if [ -x "$hot" ]; then
      mkdir "$work/live"
      "$sdm" pull -q "$registry/fleet/sdmk:v4" --plain-http --into "$work/live"
      SDM_FAKE_CUDA_DEVICES="NVIDIA H200,9.0,232448,132,62914560" "$hot" "$work/live/sdmk.sdma" scale 100 20 >"$work/live.log" 2>&1 &
      host=$!
      sleep 0.5
      "$sdm" pull -q "$registry/fleet/sdmk:v5" --plain-http --into "$work/live"
      wait $host || { cat "$work/live.log"; fail "the host of the live pull"; }
      cat "$work/live.log"
      live=$(cat "$work/live.log")
      [[ $live == *"reloaded 1 archive(s)"* ]] || fail "the running host did not pick up the pulled archive"
    fi
    # The lock records the archive version the registry shows.
    "$sdm" lock -q "$registry/fleet/sdmk:v5" --plain-http --lock-file "$work/fleet.lock"
    grep -qF '"archive_version": 5' "$work/fleet.lock" || { cat "$work/fleet.lock"; fail "the lock lacks the archive version"; }
    # Version 4 after version 5 of the same key: a rollback, refused before anything is replaced.
    expect_fail "has version 4, older than version 5" "$sdm" pull "$registry/fleet/sdmk:v4" --plain-http --into "$work/node" --trust "$work/fleet.pub"
    cmp "$work/base5.sdma" "$work/node/sdmk.sdma"
  elif ! grep -q "nvJitLink was not found" "$work/jit.err"; then
    cat "$work/jit.err"; fail "sdm jit"
  fi
  unset SDM_STATE_DIR SDM_CUDA_DRIVER
fi
echo "registry: ok"
