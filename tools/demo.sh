#!/usr/bin/env bash
# The demo `./run.sh demo` runs after building: pack real nvcc output (tests/data, CUDA 13.0)
# into an archive, list it, verify it, damage a copy and watch verify refuse it; then the SDM
# kernels embedded in libsdm: list them, link their PTX for sm_90 with nvJitLink, print their
# plans on every hardware row, and on a GPU run and check them (examples/sdm_demo).
# Usage: tools/demo.sh BUILD_DIR
set -euo pipefail
build=$1
sdm=$build/tools/sdm
[ -x "$sdm" ] || { echo "demo.sh: $sdm was not built (-Dtools=disabled, or its dependencies not found); the demo runs it" >&2; exit 1; }
data=tests/data
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "== sdm pack: a manifest and 9 images (cubins for sm_80 .. sm_120 incl. sm_90a and sm_100f, PTX, LTO-IR, a fatbin)"
"$sdm" pack -m $data/manifest.toml -o "$work/kernels.sdma" \
  kernels:sm_80=$data/kernels.sm_80.cubin kernels:sm_86=$data/kernels.sm_86.cubin kernels:sm_90=$data/kernels.sm_90.cubin \
  kernels:sm_90a=$data/kernels.sm_90a.cubin kernels:sm_100f=$data/kernels.sm_100f.cubin kernels:sm_120=$data/kernels.sm_120.cubin \
  kernels:compute_80=$data/kernels.compute_80.ptx kernels:compute_90=$data/kernels.compute_90.ptx \
  kernels:lto_90=$data/kernels.lto_90.ltoir kernels:fatbin=$data/kernels.fatbin
echo
echo "== sdm ls"
"$sdm" ls "$work/kernels.sdma"
echo
echo "== sdm verify"
"$sdm" verify "$work/kernels.sdma"
echo
echo "== one flipped byte in a payload: sdm verify refuses it and names the entry"
cp "$work/kernels.sdma" "$work/damaged.sdma"
size=$(stat -c %s "$work/damaged.sdma")
printf '\x55' | dd of="$work/damaged.sdma" bs=1 seek=$((size - 20)) conv=notrunc status=none
"$sdm" verify "$work/damaged.sdma" || true
echo
echo "== a cubin declared for the wrong arch: sdm pack refuses it"
"$sdm" pack -q -o "$work/bad.sdma" kernels:sm_90=$data/kernels.sm_80.cubin || true
echo
echo
echo "== sdm info (the driver, every GPU and its class, nvJitLink, the archive)"
"$sdm" info -a "$work/kernels.sdma" || true
echo
kernels=$build/kernels/kernels.sdma
if [ ! -f "$kernels" ]; then
  echo "This build has no SDM kernels (no nvcc, -Dkernels=disabled, or -Dtools=disabled): libsdm embeds no archive."
  exit 0
fi
echo
echo "== the SDM kernels: the archive embedded in libsdm (the same bytes as $kernels)"
"$sdm" ls "$kernels"
echo
echo "== nvJitLink links the kernels' PTX for sm_90 (the path a GPU without a fitting cubin takes)"
"$sdm" extract "$kernels" -C "$work/ptx" sdm:compute_90 manifest >/dev/null
"$sdm" pack -q -m "$work/ptx/manifest.toml" -o "$work/ptx-only.sdma" "sdm:compute_90=$work/ptx/sdm.compute_90.ptx"
"$sdm" jit "$work/ptx-only.sdma" -o "$work/linked.sdma" --arch 90
"$sdm" ls "$work/linked.sdma" | grep -E "cubin|ptx" || true
echo
echo "== the plans on every row of the hardware matrix: the read with a 4 GiB values table (R = 1M rows of"
echo "   D = 1024 fp32), then with a 16 MiB one (R = 4096: it fits in L2, so 16 blocks per SM)"
"$sdm" plan "$kernels" sdm_gather_f32_i32 B=16384 K=32 D=1024 R=1048576
echo
"$sdm" plan "$kernels" sdm_gather_f32_i32 B=16384 K=32 D=1024 R=4096
echo
echo "== the atomic write, and the deterministic write's last step (N = B * K positions)"
"$sdm" plan "$kernels" sdm_scatter_delta_atomic_bf16_i32 B=16384 K=32 D=1024 R=1048576
echo
"$sdm" plan "$kernels" sdm_scatter_delta_grouped_bf16 N=524288 K=32 D=1024
echo
echo "== run the read and both writes, fp32 and bf16, and check them against the CPU"
"$build/examples/sdm_demo"

