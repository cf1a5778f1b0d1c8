#!/usr/bin/env bash
# examples/engine_host on the fake driver (meson test engine_host): 40 frames of 25 ms; a third of
# the way in, a new version of its kernels archive is renamed over the file, later a broken one.
# The host must log through its own logger, reload the new version once, refuse the broken file
# while the old version keeps serving, and end with no failed frame.
# Usage: tests/hosts/engine_host.sh BUILD_DIR   (SDM_TEST_REAL_DRIVER=1: on the machine's GPU
# instead, as tests/gpu/run.sh does; the kernels then run for real every frame)
set -euo pipefail
build=$(cd "$1" && pwd)
kernels=$build/kernels/kernels.sdma
[ -f "$kernels" ] || { echo "skipped: this build has no kernels archive (no nvcc)"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ "${SDM_TEST_REAL_DRIVER:-0}" != 1 ]; then
  export SDM_CUDA_DRIVER=$build/tests/fake_cuda/libcuda_fake.so
  export SDM_FAKE_CUDA_DEVICES="NVIDIA H200,9.0,232448,132,62914560"
fi
export SDM_CACHE_DIR=$work/cache
sdm=$build/tools/sdm
cp "$kernels" "$work/kernels.sdma"
# Version 2: the same images, another content version.
"$sdm" extract "$kernels" -C "$work/v2" >/dev/null
sed -i 's/^content_version = .*/content_version = "sdm-kernels.engine-test"/' "$work/v2/manifest.toml"
images=()
for f in "$work"/v2/sdm.*; do
  images+=("sdm:$(basename "$f" | sed -E 's/^sdm\.(.*)\.(cubin|ptx)$/\1/')=$f")
done
"$sdm" pack -q -m "$work/v2/manifest.toml" -o "$work/v2.sdma" "${images[@]}"
"$build/examples/engine_host" "$work/kernels.sdma" 40 25 >"$work/log" 2>&1 &
host=$!
sleep 0.35
cp "$work/v2.sdma" "$work/next.sdma" && mv "$work/next.sdma" "$work/kernels.sdma"
sleep 0.35
head -c 1000 "$work/v2.sdma" >"$work/next.sdma" && mv "$work/next.sdma" "$work/kernels.sdma"  # truncated
status=0
wait "$host" || status=$?
cat "$work/log"
fail() { echo "FAIL: $*"; exit 1; }
[ "$status" = 0 ] || fail "engine_host exited $status"
grep -q "reloaded 1 archive(s)" "$work/log" || fail "the new version was not reloaded"
grep -q "refused, the old one keeps serving" "$work/log" || fail "the broken file was not refused"
grep -qE "^\[ *[0-9.]+\] sdm " "$work/log" || fail "no sdm line went through the engine's logger"
grep -q "40 frames, 0 failed, 1 reload(s)" "$work/log" || fail "frames failed, or not one reload"
# Under pressure: another archive beneath the engine's (SDM_ARCHIVE_PATH), warmed up in the
# background, and a budget of 1 byte: every load evicts the idle modules loaded before it (the
# engine's kernels between two frames included), and the frames must not notice.
src=$(cd "$(dirname "$0")/../.." && pwd)
"$sdm" import -q -o "$work/other.sdma" "$src/tests/data/launch.sm_90.cubin" "$src/tests/data/names.sm_90.cubin"
cp "$kernels" "$work/kernels.sdma"
status=0
SDM_ARCHIVE_PATH=$work/other.sdma "$build/examples/engine_host" "$work/kernels.sdma" 20 10 1 >"$work/log" 2>&1 || status=$?
cat "$work/log"
[ "$status" = 0 ] || fail "engine_host under a budget exited $status"
grep -q "evicted module" "$work/log" || fail "no module was evicted under a 1-byte budget"
grep -q "20 frames, 0 failed" "$work/log" || fail "frames failed under the budget"
echo "engine_host: reloaded the new archive, refused the broken one, 40 frames without a failure; 20 more under a 1-byte budget with evictions"
