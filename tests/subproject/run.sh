#!/usr/bin/env bash
# sdm as a Meson subproject: a host project (this folder's meson.build and host.c) with the source
# tree as subprojects/sdm, every optional part of sdm off, builds libsdm and a C host on it and runs
# it. That libsdm is built without the tool's dependencies: no object includes a header of CLI11,
# toml++, fmt or nlohmann-json, and libsdm needs no libfmt. Usage: tests/subproject/run.sh VERSION
# (the project's release; meson registers it as the test "subproject").
set -euo pipefail
version=$1
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$here/meson.build" "$here/host.c" "$work/"
mkdir "$work/subprojects"
ln -s "$src" "$work/subprojects/sdm"
started=$SECONDS

# buildtype plain (no -O): the point is that it builds, and unoptimized it builds fastest.
meson setup "$work/build" "$work" --buildtype=plain --force-fallback-for=sdm \
  -Dsdm:tools=disabled -Dsdm:kernels=disabled -Dsdm:tests=disabled -Dsdm:bench=disabled -Dsdm:examples=disabled -Dsdm:fake_driver=disabled \
  >"$work/setup.log" 2>&1 || { cat "$work/setup.log"; exit 1; }
grep -q "sdm tool (tools).*off (-Dtools=disabled)" "$work/setup.log" || { cat "$work/setup.log"; echo "the summary does not say the tool is off"; exit 1; }
ninja -C "$work/build" -j 1 >"$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }
echo "configured and built in $((SECONDS - started)) s"

# The host runs on the subproject's libsdm, and both agree with the header.
libsdm_dir=$work/build/subprojects/sdm/capi
ldd "$work/build/host" | grep "$libsdm_dir/libsdm.so" >/dev/null || { ldd "$work/build/host"; echo "host is not linked to the subproject's libsdm"; exit 1; }
out=$("$work/build/host")
echo "host: $out"
[[ $out == "sdm $version, C ABI "* ]] || { echo "expected sdm $version"; exit 1; }

# Nothing of the tool: no tool target, no header of its dependencies in any object, no libfmt.
[ ! -e "$work/build/subprojects/sdm/tools/sdm" ] || { echo "the sdm tool was built with -Dsdm:tools=disabled"; exit 1; }
[ -z "$(find "$work/build" -name 'libcuda_fake*')" ] || { echo "the fake driver was built with -Dsdm:fake_driver=disabled -Dsdm:tests=disabled"; exit 1; }
tool_headers=$(ninja -C "$work/build" -t deps | grep -E '/(CLI|toml\+\+|fmt|nlohmann)/' || true)
[ -z "$tool_headers" ] || { echo "libsdm's objects include the tool's dependencies:"; echo "$tool_headers" | sort -u | head; exit 1; }
if readelf -d "$libsdm_dir"/libsdm.so | grep 'NEEDED.*fmt' >/dev/null; then echo "libsdm needs libfmt"; exit 1; fi
echo "subproject: libsdm built as a subproject without the tool's dependencies; the host ran"
