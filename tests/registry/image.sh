#!/usr/bin/env bash
# sdm push --image (docs/REGISTRY.md, "Pods: the image variant") against a real registry (Debian's
# docker-registry on loopback), read back by the tools a node's runtime stands for: skopeo (Debian)
# sees an image (an index of linux/amd64 and linux/arm64 manifests whose configs are image
# configs) and copies each platform's image into an OCI layout, umoci (Debian) unpacks it as a
# runtime unpacks an image volume, the archive lies at sdm/NAME.sdma byte-identical and read-only,
# and a host (the fake driver, an H200) serves from that path. Pushing the same archive twice gives
# the same digest; sdm lock records the index; sdm pull refuses it, naming the artifact tag to pull.
# No Kubernetes cluster runs here: skopeo + umoci is the mount's unpacking, not the kubelet's.
# Usage: image.sh SDM DATA_DIR FAKE_LIBCUDA
set -euo pipefail
sdm=$1 data=$2 fake=$3
source "$(dirname "$0")/../tool/lib.sh"
source "$(dirname "$0")/lib.sh"
for tool in skopeo umoci; do
  command -v "$tool" >/dev/null || { echo "SKIP: $tool is absent (Debian: apt-get install $tool; ./run.sh installs it)"; exit 77; }
done
start_registry
unset SDM_REQUIRE_SIGNED SDM_TRUSTED_KEYS
export DOCKER_CONFIG=$work/docker  # no credentials of the machine's user
"$sdm" pack -q -m "$data/manifest.toml" -o "$work/v1.sdma" kernels:sm_90="$data/kernels.sm_90.cubin" kernels:compute_90="$data/kernels.compute_90.ptx"
"$sdm" pack -q -m "$data/manifest.toml" -o "$work/v2.sdma" kernels:sm_80="$data/kernels.sm_80.cubin"
repo=$registry/fleet/kernels

# One line, the index's digest; the same archive pushes the same digest, another archive another one.
ref=$("$sdm" push "$work/v1.sdma" "$repo:v1-image" --image --plain-http)
case $ref in "$repo@sha256:"*) ;; *) fail "push --image printed '$ref'";; esac
digest=${ref#*@}
[ "$("$sdm" push "$work/v1.sdma" "$repo:again" --image --plain-http)" = "$ref" ] || fail "a second push --image gave another digest"
[ "$("$sdm" push "$work/v2.sdma" "$repo:v2-image" --image --plain-http)" != "$ref" ] || fail "another archive pushed the same digest"
expect_fail "excludes" "$sdm" push "$work/v1.sdma" "$repo:x" --image --subject "$digest" --plain-http

# skopeo sees an image: the index (its digest what sdm printed), each platform's manifest with an image config.
skopeo inspect --raw --tls-verify=false "docker://$repo:v1-image" >"$work/index"
[ "sha256:$(sha256sum <"$work/index" | cut -c1-64)" = "$digest" ] || fail "the index skopeo read is not $digest"
for want in '"mediaType":"application/vnd.oci.image.index.v1+json"' '"io.sdm.archive-path":"sdm/kernels.sdma"' \
            '"org.opencontainers.image.version":"tests.1"' '"io.sdm.targets":"compute_90,sm_90"'; do
  grep -qF -- "$want" "$work/index" || fail "the index lacks $want: $(cat "$work/index")"
done
for arch in amd64 arm64; do
  manifest=$(python3 -c 'import json, sys; print(next(m["digest"] for m in json.load(open(sys.argv[1]))["manifests"] if m["platform"] == {"architecture": sys.argv[2], "os": "linux"}))' "$work/index" "$arch")
  skopeo inspect --raw --tls-verify=false "docker://$repo@$manifest" >"$work/manifest-$arch"
  for want in '"config":{"digest":"sha256:' '"mediaType":"application/vnd.oci.image.config.v1+json"' '"mediaType":"application/vnd.oci.image.layer.v1.tar"'; do
    grep -qF -- "$want" "$work/manifest-$arch" || fail "the $arch manifest lacks $want: $(cat "$work/manifest-$arch")"
  done
  skopeo inspect --tls-verify=false --override-arch "$arch" "docker://$repo:v1-image" >"$work/inspect-$arch"
  python3 - "$work/inspect-$arch" "$arch" <<'PY' || fail "skopeo inspect of $arch: $(cat "$work/inspect-$arch")"
import json, sys
seen = json.load(open(sys.argv[1]))
assert seen["Architecture"] == sys.argv[2] and seen["Os"] == "linux", seen
assert seen["Labels"]["io.sdm.archive-path"] == "sdm/kernels.sdma", seen["Labels"]
assert len(seen["Layers"]) == 1, seen["Layers"]
PY
  # As a runtime mounts it: copied into an OCI layout, unpacked; the archive alone, read-only, byte-identical.
  skopeo copy -q --src-tls-verify=false --override-arch "$arch" "docker://$repo:v1-image" "oci:$work/oci-$arch:v1" >"$work/copy.log" 2>&1 ||
    { cat "$work/copy.log"; fail "skopeo copy of $arch"; }
  umoci raw unpack --rootless --image "$work/oci-$arch:v1" "$work/rootfs-$arch" >"$work/umoci.log" 2>&1 || { cat "$work/umoci.log"; fail "umoci raw unpack of $arch"; }
  cmp "$work/v1.sdma" "$work/rootfs-$arch/sdm/kernels.sdma"
  [ "$(cd "$work/rootfs-$arch" && find . | sort | tr '\n' ' ')" = ". ./sdm ./sdm/kernels.sdma " ] || fail "the $arch image holds: $(cd "$work/rootfs-$arch" && find .)"
  [ "$(stat -c %a "$work/rootfs-$arch/sdm" "$work/rootfs-$arch/sdm/kernels.sdma" | tr '\n' ' ')" = "555 444 " ] || fail "modes: $(stat -c '%a %n' "$work/rootfs-$arch"/sdm*)"
done

# A host serves from the unpacked image, as a pod's container from its image volume.
SDM_CUDA_DRIVER=$fake SDM_FAKE_CUDA_DEVICES="NVIDIA H200,9.0,232448,132,62914560" SDM_ARCHIVE_PATH="$work/rootfs-amd64/sdm/kernels.sdma" \
  "$sdm" info --kernel scale >"$work/info"
grep -qF "kernel scale: archive $work/rootfs-amd64/sdm/kernels.sdma, module kernels, sm_90" "$work/info" || { cat "$work/info"; fail "the image's archive does not serve"; }

# sdm lock pins the index (what a pod's image volume names by digest); sdm pull refuses it and says what to pull.
"$sdm" lock -q "$repo:v1-image" --plain-http --lock-file "$work/sdm.lock"
grep -qF "\"digest\": \"$digest\"" "$work/sdm.lock" || fail "the lock lacks $digest: $(cat "$work/sdm.lock")"
grep -qF '"content_version": "tests.1"' "$work/sdm.lock" || fail "the lock lacks the content version: $(cat "$work/sdm.lock")"
expect_fail "pull the tag sdm push wrote without --image" "$sdm" pull "$repo:v1-image" --plain-http -o "$work/pulled.sdma"
grep -qF "nothing was written" "$work/err" || fail "no 'nothing was written' in: $(cat "$work/err")"
[ ! -e "$work/pulled.sdma" ] || fail "a refused pull wrote a file"
# Beside it, under another tag, the artifact a host pulls.
"$sdm" push "$work/v1.sdma" "$repo:v1" --plain-http >/dev/null
"$sdm" pull -q "$repo:v1" --plain-http -o "$work/pulled.sdma"
cmp "$work/v1.sdma" "$work/pulled.sdma"
echo "registry image: ok"
