#!/usr/bin/env bash
# The C host example and the C++ engine host, built for Windows (windows/build.sh), run under
# wine64 against the fake driver built as nvcuda.dll: c_host lists the fake H200 with an archive
# mounted; engine_host runs 40 frames of the SDM kernels (the archive the Linux build packed, the
# same bytes on every OS: $SDM_TEST_KERNELS_ARCHIVE) with a background warm-up and no failure, then
# 20 more under a 1-byte device-memory budget. Usage: tests/windows/hosts.sh BUILD_DIR (meson
# registers it as the test "windows_hosts" of a Windows build). Exits 77 without wine64.
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$(dirname "$0")/../.." && pwd)
wine=${WINE:-/usr/lib/wine/wine64}
[ -x "$wine" ] || { echo "skipped: no wine64 at $wine (apt-get install wine64)"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# A prefix of the test's own (made on first use, a few seconds; not the caller's, which another
# test may be making at the same moment), sdm.dll found through WINEPATH, Unix paths seen through
# Wine's Z: drive.
export WINEPREFIX=$work/prefix WINEDEBUG=-all
export WINEPATH="Z:${build//\//\\}\\capi"
export SDM_CUDA_DRIVER=$build/tests/fake_cuda/nvcuda.dll
export SDM_FAKE_CUDA_DEVICES="NVIDIA H200,9.0,232448,132,62914560"
export SDM_CACHE_DIR=$work/cache
[ -f "$SDM_CUDA_DRIVER" ] || fail "no fake driver at $SDM_CUDA_DRIVER"

out=$("$wine" "$build/examples/c_host.exe" "$src/tests/golden/kernels.sdma" 2>&1) || fail "c_host.exe exited $?: $out"
echo "$out"
grep -q "^0: NVIDIA H200 (9.0) class modern, 132 SMs" <<<"$out" || fail "c_host.exe did not list the fake H200"
[ -z "$(grep -i "error\|cannot" <<<"$out")" ] || fail "c_host.exe reported an error"

# No driver given and none installed (Wine has no nvcuda.dll): a clear error naming it, no crash.
out=$(env -u SDM_CUDA_DRIVER "$wine" "$build/examples/c_host.exe" 2>&1) || true
grep -q "SDM_ERROR_NO_DRIVER: cannot load the CUDA driver nvcuda.dll" <<<"$out" || fail "c_host.exe without a driver: $out"

# Hostile paths: a directory and a missing file are refused, naming what they are.
out=$("$wine" "$build/examples/c_host.exe" "$work" 2>&1) || true
grep -q "is a directory, not a regular file" <<<"$out" || fail "c_host.exe mounting a directory: $out"
out=$("$wine" "$build/examples/c_host.exe" "$work/absent.sdma" 2>&1) || true
grep -qi "cannot open.*absent.sdma" <<<"$out" || fail "c_host.exe mounting a missing file: $out"

archive=${SDM_TEST_KERNELS_ARCHIVE:-}
if [ -z "$archive" ] || [ ! -f "$archive" ]; then
  echo "c_host.exe ran; engine_host.exe skipped: no SDM kernels archive (SDM_TEST_KERNELS_ARCHIVE, from a Linux build with nvcc)"
  exit 0
fi
"$wine" "$build/examples/engine_host.exe" "$archive" 40 10 >"$work/log" 2>&1 || { cat "$work/log"; fail "engine_host.exe exited $?"; }
tail -4 "$work/log"
grep -q "40 frames, 0 failed" "$work/log" || { cat "$work/log"; fail "engine_host.exe: frames failed"; }
grep -q "background warm-up finished: SDM_OK" "$work/log" || { cat "$work/log"; fail "engine_host.exe: the warm-up did not finish"; }
"$wine" "$build/examples/engine_host.exe" "$archive" 20 5 1 >"$work/log" 2>&1 || { cat "$work/log"; fail "engine_host.exe under a budget exited $?"; }
grep -q "20 frames, 0 failed" "$work/log" || { cat "$work/log"; fail "engine_host.exe under a 1-byte budget: frames failed"; }
echo "windows hosts: c_host.exe listed the fake H200; engine_host.exe ran 40 frames, then 20 under a 1-byte budget, without a failure"
