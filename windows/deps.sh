#!/usr/bin/env bash
# The Windows build's dependencies, from Debian's source packages (never another download):
# - zstd, xxHash, Microsoft GSL and Catch2, each unpacked into subprojects/NAME with our Meson build
#   (subprojects/packagefiles/NAME), where the cross build's fallbacks find them;
# - lz4 and libsodium, built with MinGW-w64 into build-windows-deps/ (static libraries and their
#   pkg-config files, which windows/mingw64.ini points Meson at).
# libsdm's other dependencies are the CUDA toolkit's headers. Adds a deb-src entry for apt when
# none is configured (as root). Usage: windows/deps.sh (windows/build.sh runs it).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cache=$root/build-windows-deps/sources
prefix=$root/build-windows-deps
host=x86_64-w64-mingw32
mkdir -p "$cache"
# Debian source package -> the wrap's folder in subprojects/
declare -A folder=([libzstd]=zstd [xxhash]=xxhash [ms-gsl]=gsl [catch2]=catch2)
fetch() {  # fetch SOURCE_PACKAGE: the path of its upstream tarball in the cache
  (cd "$cache" && ls "$1"_*.orig.tar.* >/dev/null 2>&1 || apt-get source --download-only -qq "$1" >/dev/null 2>&1) ||
    { echo "windows/deps.sh: apt-get source $1 failed (is deb.debian.org reachable?)" >&2; exit 1; }
  ls "$cache/$1"_*.orig.tar.* | grep -v '\.asc$' | head -1
}

if ! grep -rqs "deb-src\|Types:.*deb-src" /etc/apt/sources.list /etc/apt/sources.list.d/; then
  sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "windows/deps.sh: apt has no deb-src entry; add one for your release (as root) and rerun" >&2; exit 1; }
    sudo=(sudo)
  fi
  . /etc/os-release
  "${sudo[@]}" tee /etc/apt/sources.list.d/sdm-deb-src.sources >/dev/null <<SRC
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: ${VERSION_CODENAME} ${VERSION_CODENAME}-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
  "${sudo[@]}" apt-get update -qq
fi

for source in "${!folder[@]}"; do
  dest=$root/subprojects/${folder[$source]}
  if [ -f "$dest/.debian-source" ]; then continue; fi
  tarball=$(fetch "$source")
  rm -rf "$dest" && mkdir -p "$dest"
  tar -xf "$tarball" -C "$dest" --strip-components=1
  cp -r "$root/subprojects/packagefiles/${folder[$source]}/." "$dest/"
  basename "$tarball" >"$dest/.debian-source"
  echo "subprojects/${folder[$source]}: $(basename "$tarball")"
done

# lz4: its four library sources, compiled and archived (its Makefile assumes a native build).
if [ ! -f "$prefix/lib/liblz4.a" ]; then
  work=$prefix/work/lz4 && rm -rf "$work" && mkdir -p "$work" "$prefix/lib/pkgconfig" "$prefix/include"
  tar -xf "$(fetch lz4)" -C "$work" --strip-components=1
  version=$(sed -n 's/^#define LZ4_VERSION_MAJOR *\([0-9]*\).*/\1/p;s/^#define LZ4_VERSION_MINOR *\([0-9]*\).*/\1/p;s/^#define LZ4_VERSION_RELEASE *\([0-9]*\).*/\1/p' "$work/lib/lz4.h" | paste -sd.)
  for c in lz4 lz4hc lz4frame xxhash; do $host-gcc-posix -O2 -c "$work/lib/$c.c" -o "$work/$c.o"; done
  $host-ar rcs "$prefix/lib/liblz4.a" "$work"/*.o
  cp "$work/lib/lz4.h" "$work/lib/lz4hc.h" "$work/lib/lz4frame.h" "$prefix/include/"
  printf 'prefix=%s\nName: liblz4\nDescription: lz4 (Debian source, MinGW-w64)\nVersion: %s\nLibs: -L${prefix}/lib -llz4\nCflags: -I${prefix}/include\n' "$prefix" "$version" >"$prefix/lib/pkgconfig/liblz4.pc"
  echo "build-windows-deps: liblz4 $version"
fi

# libsodium: its own configure (made by autogen.sh: Debian's upstream tarball is the git tree),
# for the MinGW host, static.
if [ ! -f "$prefix/lib/libsodium.a" ]; then
  work=$prefix/work/libsodium && rm -rf "$work" && mkdir -p "$work"
  tar -xf "$(fetch libsodium)" -C "$work" --strip-components=1
  (cd "$work" && ./autogen.sh -s >autogen.log 2>&1 && ./configure -q --host=$host --prefix="$prefix" --disable-shared --enable-static --disable-pie \
      CC=$host-gcc-posix >configure.log 2>&1 && make -s -j"$(nproc)" >make.log 2>&1 && make -s install >install.log 2>&1) ||
    { tail -20 "$work"/*.log >&2; echo "windows/deps.sh: libsodium did not build (its logs above)" >&2; exit 1; }
  echo "build-windows-deps: libsodium $(sed -n 's/^Version: //p' "$prefix/lib/pkgconfig/libsodium.pc")"
fi

# Where the cross build finds them (an absolute path: Meson 1.0 does not expand @DIRNAME@ here).
printf "# written by windows/deps.sh\n[properties]\npkg_config_libdir = '%s/lib/pkgconfig'\n" "$prefix" >"$prefix/paths.ini"
