#!/usr/bin/env bash
# Runs the Rust bindings' tests against a Meson build of sdm, through its fake CUDA driver; then
# packages both crates as a registry would take them (cargo package --workspace --offline: sdm-sys
# first, and sdm verified against the packaged sdm-sys through cargo's temporary local registry),
# checking that each package lists only sources, manifests and the README, no build output.
# Usage: bindings/rust/run_tests.sh [BUILD_DIR [CARGO_TEST_ARGS...]]
#   BUILD_DIR: the Meson build directory, absolute or relative to the repository root (default: build).
# Exits non-zero when a test or the packaging fails, or the build lacks libsdm.so, the fake driver or the sdm tool.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-build}
[[ $build == /* ]] || build=$root/$build
shift $(( $# > 0 ? 1 : 0 ))

# Rust installs into ~/.cargo/bin, which a non-login shell may not have on PATH.
command -v cargo >/dev/null || [[ ! -x $HOME/.cargo/bin/cargo ]] || export PATH=$HOME/.cargo/bin:$PATH
command -v cargo >/dev/null || { echo "skipped: no cargo (install Rust: https://rustup.rs)"; exit 77; }
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$build/cargo-target}  # build output beside the Meson build's
lib_dir=$build/capi
fake=$build/tests/fake_cuda/libcuda_fake.so
# libsdm.so is missing for a moment while Meson relinks it: wait a little before giving up.
[[ -d $lib_dir ]] && for _ in $(seq 60); do [[ -e $lib_dir/libsdm.so ]] && break; sleep 2; done
[[ -e $lib_dir/libsdm.so ]] || { echo "run_tests.sh: no $lib_dir/libsdm.so: build sdm first (meson compile -C $build)" >&2; exit 1; }
[[ -e $fake ]] || { echo "run_tests.sh: no $fake: configure the build with its tests" >&2; exit 1; }
[[ -x $build/tools/sdm ]] || { echo "run_tests.sh: no $build/tools/sdm: build sdm first (meson compile -C $build)" >&2; exit 1; }

cache=$(mktemp -d)
trap 'rm -rf "$cache"' EXIT
export SDM_LIB_DIR=$lib_dir                 # sdm-sys/build.rs: link search path and rpath
export LD_LIBRARY_PATH=$lib_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export SDM_CUDA_DRIVER=$fake                # the tests' driver; they set its devices themselves
export SDM_CACHE_DIR=$cache/sdm-cache
export SDM_TOOL=$build/tools/sdm           # tests/launch_config.rs: `sdm import` of tests/data/launch.sm_90.cubin
# Nothing from the caller's environment may add archives or plugins, change the cache, or set a
# signature policy (the tests mount unsigned archives).
unset SDM_ARCHIVE_PATH SDM_PLUGIN_PATH SDM_CACHE_DISABLE SDM_CACHE_MAX_BYTES SDM_LOG SDM_REQUIRE_SIGNED SDM_TRUSTED_KEYS

cd "$here"
cargo test --offline -j1 --no-fail-fast "$@"

# --allow-dirty: what is checked is the package, not whether the checkout is committed.
for crate in sdm-sys sdm; do
    listed=$(cargo package --offline --allow-dirty --list -p "$crate")
    unexpected=$(grep -vE '^(Cargo\.toml|Cargo\.toml\.orig|Cargo\.lock|\.cargo_vcs_info\.json|README\.md|build\.rs|(src|tests|examples)/[A-Za-z0-9_/]+\.rs)$' <<<"$listed" || true)
    [[ -z $unexpected ]] || { echo "run_tests.sh: cargo package of $crate would ship more than its sources:" $unexpected >&2; exit 1; }
    grep -Fx src/lib.rs <<<"$listed" >/dev/null || { echo "run_tests.sh: cargo package of $crate lists no src/lib.rs" >&2; exit 1; }
done
version=$(sed -n 's/^version = "\([^"]*\)".*/\1/p' Cargo.toml)
rm -f "$CARGO_TARGET_DIR"/package/sdm-*.crate
# A package of the same version left by an earlier run would be verified in place of this tree's:
# cargo keeps the sources it extracted from its temporary registry in CARGO_HOME, so the packaging
# gets a CARGO_HOME of its own.
rm -rf "$CARGO_TARGET_DIR/package"
CARGO_HOME=$cache/cargo-home cargo package --workspace --offline --allow-dirty -j1
for crate in sdm-sys sdm; do
    [[ -f $CARGO_TARGET_DIR/package/$crate-$version.crate ]] || { echo "run_tests.sh: cargo package wrote no $crate-$version.crate" >&2; exit 1; }
done
echo "cargo package: sdm-sys-$version.crate and sdm-$version.crate, verified offline"
