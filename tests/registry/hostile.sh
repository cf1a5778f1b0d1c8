#!/usr/bin/env bash
# sdm pull against a hostile registry (hostile_registry.py on loopback): wrong digests, lying
# sizes, endless and stalled bodies, redirect loops and redirects out of http(s), huge manifests,
# a huge declared layer, other bytes for a digest, a path in a name. Each is a clear error naming
# the registry and what to do, writes nothing into the target directory, and leaves an old archive
# in place. Bounded time: the server ends every endless answer after 20 s; sdm must stop long before.
# Indexes of sdm push --per-target that lie: too many entries, a bad digest, a part of other targets.
# Usage: hostile.sh SDM DATA_DIR FAKE_LIBCUDA
set -euo pipefail
sdm=$1 data=$2 fake=$3
source "$(dirname "$0")/../tool/lib.sh"
export DOCKER_CONFIG=$work/docker
"$sdm" pack -q -m "$data/manifest.toml" -o "$work/a.sdma" kernels:sm_80="$data/kernels.sm_80.cubin"
"$sdm" pack -q -m "$data/manifest.toml" -o "$work/old.sdma" kernels:sm_90a="$data/kernels.sm_90a.cubin"
python3 "$(dirname "$0")/hostile_registry.py" "$work/a.sdma" "$work/port" "$work/stolen" &
server=$!
trap 'status=$?; kill "$server" 2>/dev/null; wait "$server" 2>/dev/null || true; rm -rf "$work"; exit $status' EXIT
for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.1; done
registry=127.0.0.1:$(cat "$work/port")
mkdir "$work/target"
cp "$work/old.sdma" "$work/target/good.sdma"

# A sanity check: the server's honest answer pulls.
"$sdm" pull -q "$registry/good:v1" --plain-http --into "$work/target"
cmp "$work/a.sdma" "$work/target/good.sdma"
cp "$work/old.sdma" "$work/target/good.sdma"

hostile() {  # hostile CASE SUBSTRING [REF-SUFFIX [FLAG]]: the pull fails saying SUBSTRING; the target is untouched
  local case=$1 want=$2 suffix=${3:-:v1} flags=("${@:4}")
  cp "$work/old.sdma" "$work/target/$case.sdma"
  expect_fail "$want" "$sdm" pull "$registry/$case$suffix" --plain-http --stall-timeout 2 --into "$work/target" "${flags[@]}"
  grep -qF "$registry/$case" "$work/err" || fail "$case: the error does not name the registry: $(cat "$work/err")"
  grep -qF "nothing was written" "$work/err" || fail "$case: the error does not say nothing was written: $(cat "$work/err")"
  cmp "$work/old.sdma" "$work/target/$case.sdma" || fail "$case: the old archive was changed"
  sed 's/^/  /' "$work/err"
  rm "$work/target/$case.sdma"
  [ "$(ls -A "$work/target")" = good.sdma ] || fail "$case: left in the target: $(ls -A "$work/target")"
}
hostile wrong-digest "hashes to sha256:"
hostile long-length "Content-Length is larger"
hostile short-body "ended before its Content-Length"
hostile endless "runs past the"
hostile redirect-loop "redirect loop"
hostile redirect-file "Unsupported protocol"
hostile huge-manifest "Content-Length is larger"
hostile endless-manifest "runs past the 4194304 bytes"
hostile huge-layer "the layer declares 4611686018427387904 bytes"
hostile slow "nothing arrived for 2 s"
hostile other-bytes "the registry answered other bytes" "@sha256:$(printf '0%.0s' $(seq 64))"
hostile index-too-many "lists 65 entries, more than the 64 sdm reads"
hostile index-bad-digest "entry 0's digest is not sha256:"
# The part is downloaded, then refused for its images (an sm_90 node: the fake driver's H200).
export SDM_FAKE_CUDA_DEVICES="NVIDIA H200,9.0,232448,132,62914560"
hostile part-wrong-targets "which cannot serve sm_90" :v1 --for-devices --driver "$fake"
# A path in a name is refused before any request.
expect_fail "distribution spec's grammar" "$sdm" pull "$registry/../../etc/passwd:v1" --plain-http --into "$work/target"
expect_fail "distribution spec's grammar" "$sdm" pull "$registry/good/..:v1" --plain-http --into "$work/target"
expect_fail "is not [A-Za-z0-9_]" "$sdm" pull "$registry/good:../x" --plain-http --into "$work/target"
[ "$(ls -A "$work/target")" = good.sdma ] || fail "left in the target: $(ls -A "$work/target")"

# Credentials from the Docker config: none is a 401 that says to log in; the Bearer token flow
# and Basic with them; a wrong password is said; a token realm that is not http(s) is refused.
expect_fail "log in first" "$sdm" pull "$registry/bearer:v1" --plain-http -o "$work/bearer.sdma"
expect_fail "log in first" "$sdm" pull "$registry/basic:v1" --plain-http -o "$work/basic.sdma"
mkdir -p "$DOCKER_CONFIG"
printf '{"auths": {"%s": {"auth": "%s"}}}' "$registry" "$(printf 'user:secret' | base64)" >"$DOCKER_CONFIG/config.json"
"$sdm" pull -q "$registry/bearer:v1" --plain-http -o "$work/bearer.sdma"
cmp "$work/a.sdma" "$work/bearer.sdma"
"$sdm" pull -q "$registry/basic:v1" --plain-http -o "$work/basic.sdma"
cmp "$work/a.sdma" "$work/basic.sdma"
expect_fail "not an https URL" "$sdm" pull "$registry/bad-realm:v1" --plain-http -o "$work/bad-realm.sdma"
# A realm on another host that the registry itself named gets the credentials (Docker Hub's way).
"$sdm" pull -q "$registry/bearer-other-host:v1" --plain-http -o "$work/other-host.sdma"
cmp "$work/a.sdma" "$work/other-host.sdma"
# A blob redirected to another origin that answers 401 with a realm on itself gets nothing: the
# pull fails naming the origin, and the thief's realm was never asked.
hostile redirect-401 "which answered 401 asking for credentials"
grep -qF "http://localhost:" "$work/err" || fail "the error does not name the other origin: $(cat "$work/err")"
[ ! -e "$work/stolen" ] || fail "credentials were sent where a redirect led: $(cat "$work/stolen")"
printf '{"auths": {"http://%s/v1/": {"username": "user", "password": "wrong"}}}' "$registry" >"$work/wrong.json"
expect_fail "are not accepted" "$sdm" pull "$registry/basic:v1" --plain-http --registry-config "$work/wrong.json" -o "$work/wrong.sdma"
printf '{"auths": {"%s": {"auth": "not base64!"}}}' "$registry" >"$work/broken.json"
expect_fail "is not base64" "$sdm" pull "$registry/basic:v1" --plain-http --registry-config "$work/broken.json" -o "$work/wrong.sdma"
[ ! -e "$work/wrong.sdma" ] && [ ! -e "$work/bad-realm.sdma" ] || fail "a refused pull wrote a file"
echo "hostile registry: ok"
