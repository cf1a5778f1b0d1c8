#!/usr/bin/env bash
# Prepares .device-newer/ for tests/gpu/run.sh: PTX compiled by a CUDA toolkit newer than the GPU
# machine's driver (NVRTC from PyPI's nvidia-cuda-nvrtc wheel), packed into an archive, and the
# matching nvJitLink from PyPI's nvidia-nvjitlink wheel, xz-compressed to fit a device call.
# Usage: tests/gpu/make_newer_ptx.sh BUILD_DIR [VERSION]   (run here, where pip reaches PyPI)
set -euo pipefail
build=$1 version=${2:-13.5.37}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 -m pip download -q --no-deps -d "$work" "nvidia-cuda-nvrtc==$version" "nvidia-nvjitlink==$version"
for w in "$work"/*.whl; do unzip -q -o "$w" -d "$work/x"; done
lib=$(dirname "$(find "$work/x" -name 'libnvrtc.so.*' | head -1)")
LD_LIBRARY_PATH="$lib" python3 - "$lib/libnvrtc.so.13" tests/data/kernels.cu "$work/kernels.ptx" <<'PY'
import ctypes, sys
nvrtc = ctypes.CDLL(sys.argv[1])
prog = ctypes.c_void_p()
assert nvrtc.nvrtcCreateProgram(ctypes.byref(prog), open(sys.argv[2], 'rb').read(), b"kernels.cu", 0, None, None) == 0
assert nvrtc.nvrtcCompileProgram(prog, 1, (ctypes.c_char_p * 1)(b"--gpu-architecture=compute_90")) == 0
size = ctypes.c_size_t()
nvrtc.nvrtcGetPTXSize(prog, ctypes.byref(size))
ptx = ctypes.create_string_buffer(size.value)
nvrtc.nvrtcGetPTX(prog, ptx)
open(sys.argv[3], 'wb').write(ptx.value)
PY
mkdir -p .device-newer
grep -q '^/.device-newer/' .git/info/exclude 2>/dev/null || echo "/.device-newer/" >>.git/info/exclude
"$build/tools/sdm" pack -q -m tests/data/manifest.toml -o .device-newer/newer-ptx.sdma kernels:compute_90="$work/kernels.ptx"
xz -T2 -6 -c "$(find "$work/x" -name 'libnvJitLink.so.13' | head -1)" >.device-newer/libnvJitLink.so.13.xz
grep -m1 '^\.version' "$work/kernels.ptx"
echo "ready: carry .device-newer with build-gpu (about 33 MB)"
