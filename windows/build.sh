#!/usr/bin/env bash
# sdm for Windows x86_64, cross-built here with MinGW-w64 (docs/WINDOWS.md): the dependencies
# from Debian's source packages (windows/deps.sh), then a Meson cross build into BUILD_DIR
# (default build-windows): sdm.dll and its import library sdm.dll.a, sdm-jit-helper.exe, the fake
# driver as nvcuda.dll, and the example hosts (c_host.exe, engine_host.exe, ...). -O1 without debug
# information: the tests' build, quick to compile; pass MESON_OPTIONS="-Dbuildtype=release" for
# what you ship. Usage: windows/build.sh [BUILD_DIR]; then `meson test -C BUILD_DIR` runs its tests
# under wine64.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-windows}
for tool in x86_64-w64-mingw32-g++-posix pkg-config; do
  command -v "$tool" >/dev/null || { echo "windows/build.sh: $tool is missing (apt-get install g++-mingw-w64-x86-64-posix pkg-config)" >&2; exit 1; }
done
"$root/windows/deps.sh"
if [ ! -f "$build/build.ninja" ]; then
  # shellcheck disable=SC2086
  meson setup "$build" "$root" --cross-file "$root/windows/mingw64.ini" --cross-file "$root/build-windows-deps/paths.ini" --wrap-mode=nodownload \
    -Doptimization=1 -Ddebug=false -Dstrip=false -Dwerror=true -Dtools=disabled -Dtests=disabled -Dkernels=disabled -Dbench=disabled \
    -Dnvtx=disabled -Dfake_driver=enabled -Dexamples=enabled ${MESON_OPTIONS:-} >"$root/build-windows-deps/setup.log" 2>&1 ||
    { cat "$root/build-windows-deps/setup.log" >&2; exit 1; }
fi
ninja -C "$build"
