#!/usr/bin/env bash
# A transcript of hot reload: examples/hot_reload runs a 100-frame loop on one archive file while
# this script drops a new version beside it (an atomic rename, as a deployment does), then a broken
# file, then the first version again. Usage: tests/gpu/reload_transcript.sh BUILD_DIR
# On the GPU machine it runs on the real driver; elsewhere pass SDM_CUDA_DRIVER=<the fake driver>
# and SDM_FAKE_CUDA_DEVICES (tests/fake_cuda/sdm_fake_cuda.h).
set -euo pipefail
build=$1
sdm=$build/tools/sdm
data=tests/data
work=$(mktemp -d)
host=""
trap 'if [ -n "$host" ]; then kill "$host" 2>/dev/null || true; fi; rm -rf "$work"' EXIT
export SDM_CACHE_DIR=$work/cache
manifest() {  # manifest CONTENT_VERSION > toml
  printf '[archive]\nkernel_abi = "1.0"\ncontent_version = "%s"\n' "$1"
  printf '[[kernel]]\nname = "scale"\nmodule = "kernels"\nsignature = "ptr,f32,i32"\n'
  printf '[[kernel]]\nname = "axpy"\nmodule = "kernels"\nsignature = "ptr,ptr,f32,i32"\n'
}
manifest v1 >"$work/v1.toml"
manifest v2 >"$work/v2.toml"
"$sdm" pack -q -m "$work/v1.toml" -o "$work/v1.sdma" "kernels:compute_90=$data/kernels.compute_90.ptx"
"$sdm" pack -q -m "$work/v2.toml" -o "$work/v2.sdma" "kernels:sm_90=$data/kernels.sm_90.cubin"
cp "$work/v2.sdma" "$work/broken.sdma"
size=$(stat -c %s "$work/broken.sdma")
printf '\x55' | dd of="$work/broken.sdma" bs=1 seek=$((size / 2)) conv=notrunc status=none
drop() {  # drop FILE: replace the served archive atomically
  cp "$1" "$work/kernels.sdma.incoming" && mv "$work/kernels.sdma.incoming" "$work/kernels.sdma"
  echo "-- $(date -u +%T.%N | cut -c1-12) dropped $(basename "$1") as kernels.sdma"
}
cp "$work/v1.sdma" "$work/kernels.sdma"
echo "-- host: hot_reload kernels.sdma scale, 100 frames of 20 ms"
"$build/examples/hot_reload" "$work/kernels.sdma" scale 100 20 | sed "s|$work/||g" &
host=$!
sleep 0.5; drop "$work/v2.sdma"
sleep 0.5; drop "$work/broken.sdma"
sleep 0.5; drop "$work/v1.sdma"
wait $host
