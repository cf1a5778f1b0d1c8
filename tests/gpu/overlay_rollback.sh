#!/usr/bin/env bash
# Issue 31 on a device: an overlay `sdm jit` links (the real nvJitLink) serves above its base and
# not above another archive; under require a signed archive older than one admitted before from
# its key is skipped, naming both versions. Usage: tests/gpu/overlay_rollback.sh BUILD_DIR
# On the GPU machine it runs on the real driver; elsewhere pass SDM_CUDA_DRIVER=<the fake driver>
# and SDM_FAKE_CUDA_DEVICES (tests/fake_cuda/sdm_fake_cuda.h). Ends with "overlay_rollback: ok".
set -euo pipefail
build=$1
sdm=$build/tools/sdm
data=tests/data
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export SDM_CACHE_DIR=$work/cache SDM_STATE_DIR=$work/state
unset SDM_ARCHIVE_PATH SDM_REQUIRE_SIGNED SDM_TRUSTED_KEYS
fail() { echo "FAIL: $*" >&2; exit 1; }
printf '[archive]\nkernel_abi = "1.0"\n[[kernel]]\nname = "scale"\nmodule = "kernels"\nsignature = "ptr,f32,i32"\n' >"$work/m.toml"
"$sdm" keygen -q -o "$work/k"
"$sdm" pack -q -m "$work/m.toml" -o "$work/base.sdma" --archive-version 3 --sign "$work/k.key" "kernels:compute_90=$data/kernels.compute_90.ptx"
"$sdm" pack -q -m "$work/m.toml" -o "$work/other.sdma" --archive-version 3 --sign "$work/k.key" "kernels:compute_80=$data/kernels.compute_80.ptx"
"$sdm" pack -q -m "$work/m.toml" -o "$work/old.sdma" --archive-version 2 --sign "$work/k.key" "kernels:compute_90=$data/kernels.compute_90.ptx"
if ! "$sdm" jit -q "$work/base.sdma" --arch 90 -o "$work/overlay.sdma" --trust "$work/k.pub" --sign "$work/k.key" 2>"$work/jit.err"; then
  cat "$work/jit.err"
  jit_error=$(cat "$work/jit.err")
  [[ $jit_error == *"nvJitLink was not found"* ]] && { echo "SKIP: no nvJitLink for sdm jit"; exit 77; }
  fail "sdm jit"
fi
listing=$("$sdm" ls "$work/overlay.sdma")
echo "${listing}" | sed -n 1,2p
info() {  # info LAYERS...: sdm info --kernel scale with those archives, under require
  local path; path=$(IFS=:; echo "$*")
  env SDM_ARCHIVE_PATH="$path" SDM_REQUIRE_SIGNED=1 SDM_TRUSTED_KEYS="$work/k.pub" "$sdm" info --kernel scale >"$work/info.txt" 2>&1 || true
  cat "$work/info.txt"
}
echo "-- base, then its overlay: the overlay's sm_90 cubin serves"
info "$work/base.sdma" "$work/overlay.sdma"
out=$(cat "$work/info.txt")
[[ $out == *"skipped archive"* ]] && fail "an overlay above its base was skipped"
[[ $out == *"overlay.sdma"* ]] || fail "the overlay is not listed"
echo "-- another archive, then the overlay: the overlay is skipped, both identities named"
info "$work/other.sdma" "$work/overlay.sdma"
out=$(cat "$work/info.txt")
[[ $out == *"is an overlay built (sdm jit) from the archive xxh3-128:"* ]] || fail "a stale overlay was not skipped"
echo "-- version 2 after version 3 of the same key: a rollback, skipped"
info "$work/old.sdma"
out=$(cat "$work/info.txt")
[[ $out == *"has version 2, older than version 3"* ]] || fail "the rollback was not refused"
echo "overlay_rollback: ok"
