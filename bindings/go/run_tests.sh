#!/usr/bin/env bash
# Runs the Go bindings' tests against a Meson build of sdm, through its fake CUDA driver.
# Usage: bindings/go/run_tests.sh [BUILD_DIR [GO_TEST_ARGS...]]
#   BUILD_DIR: the Meson build directory, absolute or relative to the repository root (default: build).
# Needs Go >= 1.19 (Debian 12: apt-get install golang-go) and pkg-config (pkgconf). No network:
# GOPROXY=off. cgo finds libsdm through a temporary sdm.pc that describes BUILD_DIR.
# Exits non-zero when a test fails or the build lacks libsdm.so, the fake driver or the sdm tool.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-build}
[[ $build == /* ]] || build=$root/$build
shift $(( $# > 0 ? 1 : 0 ))

command -v go >/dev/null || { echo "run_tests.sh: no go on PATH (Debian: apt-get install golang-go)" >&2; exit 1; }
command -v pkg-config >/dev/null || { echo "run_tests.sh: no pkg-config on PATH, which cgo needs (Debian: apt-get install pkgconf)" >&2; exit 1; }
lib_dir=$build/capi
fake=$build/tests/fake_cuda/libcuda_fake.so
# libsdm.so is missing for a moment while Meson relinks it: wait a little before giving up.
[[ -d $lib_dir ]] && for _ in $(seq 60); do [[ -e $lib_dir/libsdm.so ]] && break; sleep 2; done
[[ -e $lib_dir/libsdm.so ]] || { echo "run_tests.sh: no $lib_dir/libsdm.so: build sdm first (meson compile -C $build)" >&2; exit 1; }
[[ -e $fake ]] || { echo "run_tests.sh: no $fake: configure the build with its tests" >&2; exit 1; }
[[ -x $build/tools/sdm ]] || { echo "run_tests.sh: no $build/tools/sdm: build sdm first (meson compile -C $build)" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The package says `#cgo pkg-config: sdm`. Not the build's meson-uninstalled/sdm-uninstalled.pc:
# its Cflags add libsdm's private include directories (and CUDA's), which would hide a public
# header that fails on its own, and its Libs no rpath. This one gives the public header and the
# build's libsdm, with an rpath so that the test binaries find it.
mkdir "$tmp/pkgconfig"
cat >"$tmp/pkgconfig/sdm.pc" <<EOF
Name: sdm
Description: sdm as built in $build, for the Go tests
Version: 0
Cflags: -I$root/include
Libs: -L$lib_dir -Wl,-rpath,$lib_dir -lsdm
EOF
export PKG_CONFIG_PATH=$tmp/pkgconfig PKG_CONFIG_LIBDIR=$tmp/pkgconfig
unset PKG_CONFIG_SYSROOT_DIR
export CGO_ENABLED=1
# A libsdm that the caller's LD_LIBRARY_PATH names would win over the rpath (a RUNPATH).
export LD_LIBRARY_PATH=$lib_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export GOFLAGS=-mod=mod GOPROXY=off GOTOOLCHAIN=local
export GOCACHE=${GOCACHE:-$tmp/go-build}
export SDM_CUDA_DRIVER=$fake                # the tests' driver; they set its devices themselves
export SDM_CACHE_DIR=$tmp/sdm-cache
export SDM_TOOL=$build/tools/sdm           # launch_test.go: `sdm import` of tests/data/launch.sm_90.cubin
# Nothing from the caller's environment may add archives or plugins, change the cache, or set a
# signature policy (the tests mount unsigned archives).
unset SDM_ARCHIVE_PATH SDM_PLUGIN_PATH SDM_CACHE_DISABLE SDM_CACHE_MAX_BYTES SDM_LOG SDM_REQUIRE_SIGNED SDM_TRUSTED_KEYS

cd "$here"
go vet ./...
go test -p 1 -count=1 "$@" ./...
