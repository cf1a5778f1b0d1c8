#!/usr/bin/env bash
# Builds a host crate outside the repository (outside_host/, copied to a temporary directory, its
# path dependencies on sdm and sdm-sys made absolute) against an installed sdm that sdm-sys finds
# through pkg-config alone, then runs it with LD_LIBRARY_PATH unset: it must load the installed
# libsdm through the rpath its build.rs took from sdm-sys (DEP_SDM_LIB_DIR).
# Usage: bindings/rust/test_outside.sh DESTDIR PREFIX [BUILD_DIR]
#   DESTDIR: the staging root given to `meson install --destdir` ("" or / for an installed sdm)
#   PREFIX: the build's prefix (/usr/local); sdm.pc is looked for under DESTDIR/PREFIX
#   BUILD_DIR: a Meson build with its tests: the host then also fetches kernel scale of
#     tests/golden/kernels.sdma through its fake CUDA driver
# Exits 77 when cargo or pkg-config is missing.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
(( $# == 2 || $# == 3 )) || { echo "usage: $0 DESTDIR PREFIX [BUILD_DIR]" >&2; exit 2; }
destdir=${1%/}
prefix=$2
build=${3:-}

# Rust installs into ~/.cargo/bin, which a non-login shell may not have on PATH.
command -v cargo >/dev/null || [[ ! -x $HOME/.cargo/bin/cargo ]] || export PATH=$HOME/.cargo/bin:$PATH
command -v cargo >/dev/null || { echo "skipped: no cargo (install Rust: https://rustup.rs)"; exit 77; }
command -v pkg-config >/dev/null || { echo "skipped: pkg-config is not installed"; exit 77; }
installed=$destdir$prefix
pc=$(find "$installed" -name sdm.pc -path '*/pkgconfig/*' 2>/dev/null | head -1)
[[ -n $pc ]] || { echo "test_outside.sh: no pkgconfig/sdm.pc under $installed: install sdm there first" >&2; exit 1; }

# Nothing but pkg-config may tell sdm-sys where libsdm is, and nothing but the rpath may tell the
# loader; no caller's flags may add an rpath of their own.
unset SDM_LIB_DIR LD_LIBRARY_PATH PKG_CONFIG PKG_CONFIG_LIBDIR RUSTFLAGS CARGO_ENCODED_RUSTFLAGS CARGO_BUILD_RUSTFLAGS
PKG_CONFIG_PATH=$(dirname "$pc")
export PKG_CONFIG_PATH
unset PKG_CONFIG_SYSROOT_DIR  # sdm.pc is relocatable: found under DESTDIR, it names DESTDIR's tree
# The host lists what sdm mounts by itself: nothing from the caller's environment.
unset SDM_ARCHIVE_PATH SDM_PLUGIN_PATH SDM_CACHE_DISABLE SDM_CACHE_MAX_BYTES SDM_LOG SDM_REQUIRE_SIGNED SDM_TRUSTED_KEYS
echo "pkg-config --libs-only-L --libs-only-l sdm: $(pkg-config --libs-only-L --libs-only-l sdm)"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$here/outside_host" "$work/host"
sed -i "s|path = \"\.\./|path = \"$here/|" "$work/host/Cargo.toml"
grep -q "path = \"$here/sdm\"" "$work/host/Cargo.toml" || { echo "test_outside.sh: outside_host/Cargo.toml names no ../sdm" >&2; exit 1; }
# A target directory of its own: nothing built for the repository's tests (SDM_LIB_DIR) is reused.
export CARGO_TARGET_DIR=$work/target
echo "== cargo build --offline of a host crate in $work/host"
cargo build --offline -j1 --manifest-path "$work/host/Cargo.toml" >"$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }
host=$CARGO_TARGET_DIR/debug/sdm-outside-host

check_loaded() {  # the output of a run: libsdm came from the installed tree
  local want
  want=$(realpath "$installed")
  grep -q "loaded from $want/" <<<"$1" || { echo "test_outside.sh: the host did not load libsdm from $want" >&2; exit 1; }
}
echo "== the host, LD_LIBRARY_PATH unset"
out=$("$host")
echo "$out"
check_loaded "$out"
if [[ -n $build ]]; then
  build=$(cd "$build" && pwd)
  echo "== the host on the fake driver: kernel scale of tests/golden/kernels.sdma"
  out=$(SDM_CUDA_DRIVER=$build/tests/fake_cuda/libcuda_fake.so SDM_FAKE_CUDA_DEVICES="NVIDIA H200,9.0,232448,132,62914560" \
        SDM_CACHE_DIR=$work/cache "$host" "$root/tests/golden/kernels.sdma" scale)
  echo "$out"
  check_loaded "$out"
  grep -q "^kernel scale (ptr,f32,i32) on device 0: cubin sm_90 from the archive cubin" <<<"$out" \
    || { echo "test_outside.sh: the host did not fetch kernel scale" >&2; exit 1; }
fi
echo "outside: a host crate outside the repository built against the installed sdm through pkg-config and ran without LD_LIBRARY_PATH"
