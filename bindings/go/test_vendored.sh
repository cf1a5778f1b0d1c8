#!/usr/bin/env bash
# The package as another module uses it: a host module outside the repository requires the
# binding by its module path (go.mod's: the repository's bindings/go) at the release's version,
# with no replace directive. It resolves through a GOPROXY this test writes (make_proxy.py: a
# file:// proxy holding bindings/go as that version, as a tag bindings/go/vX.Y.Z would publish
# it). The host builds from the module cache (-mod=mod), then vendors the module (go mod vendor)
# and builds with -mod=vendor, cgo finding libsdm only through the installed sdm.pc of a staging
# tree. Each binary mounts tests/golden/kernels.sdma, fetches kernel scale, plans and launches it
# on the fake CUDA driver.
# Usage: bindings/go/test_vendored.sh STAGE_ROOT [BUILD_DIR]
#   STAGE_ROOT: the --destdir that `meson install` staged sdm into (it holds usr/local/...).
#   BUILD_DIR:  the Meson build directory, for its fake driver and the release's version (default:
#               build; absolute or relative to the repository root).
# sdm.pc's Libs carry the rpath of its libsdm: the host runs without LD_LIBRARY_PATH.
# Needs Go >= 1.19, pkg-config and python3; no network (the one proxy is the file:// one, GOSUMDB=off). Ends with "go vendored: ok"; exits
# non-zero on any failure.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
fail() { echo "test_vendored.sh: FAIL: $*" >&2; exit 1; }
stage=$(cd "${1:?usage: test_vendored.sh STAGE_ROOT [BUILD_DIR]}" && pwd)
build=${2:-build}
[[ $build == /* ]] || build=$root/$build
driver=$build/tests/fake_cuda/libcuda_fake.so

command -v go >/dev/null || fail "no go on PATH (Debian: apt-get install golang-go)"
command -v pkg-config >/dev/null || fail "no pkg-config on PATH (Debian: apt-get install pkgconf)"
[[ -e $driver ]] || fail "no $driver: configure the build with its tests"
pc=$(find "$stage" -name sdm.pc -path '*/pkgconfig/*')
[[ -n $pc ]] || fail "no sdm.pc under $stage: stage it with meson install --destdir $stage"
[[ $pc != *$'\n'* ]] || fail "more than one sdm.pc under $stage: $pc"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Only the staged sdm.pc says where sdm is: not CGO_* flags, not the build, not a libsdm installed
# on this machine. Nor may the caller's environment add archives or plugins, or set a cache or a
# signature policy.
unset CGO_CFLAGS CGO_CPPFLAGS CGO_LDFLAGS LD_LIBRARY_PATH GOFLAGS SDM_ARCHIVE_PATH SDM_PLUGIN_PATH SDM_CACHE_DISABLE \
      SDM_CACHE_MAX_BYTES SDM_LOG SDM_REQUIRE_SIGNED SDM_TRUSTED_KEYS
pc_dir=$(dirname "$pc")
# sdm.pc is relocatable: found in the staging tree, it names that tree (no sysroot).
unset PKG_CONFIG_SYSROOT_DIR
export PKG_CONFIG_PATH=$pc_dir PKG_CONFIG_LIBDIR=$pc_dir
export CGO_ENABLED=1 GOTOOLCHAIN=local GOWORK=off GOPATH=$tmp/gopath GOCACHE=$tmp/go-build
flags=$(pkg-config --cflags --libs sdm) || fail "pkg-config cannot read $pc"
[[ $flags == *"-I$stage/"* ]] || fail "pkg-config --cflags --libs sdm points outside $stage: $flags"
lib_dir=$(pkg-config --libs-only-L sdm | sed 's/^ *-L//; s/ *$//')
lib_dir=$(cd "$lib_dir" 2>/dev/null && pwd -P) || fail "sdm.pc gives a library directory that is missing: is $stage the --destdir sdm was staged into?"
[[ -e $lib_dir/libsdm.so.1 ]] || fail "no libsdm.so.1 in $lib_dir, the directory sdm.pc gives"

module=$(sed -n 's/^module //p' "$here/go.mod")
[[ -n $module ]] || fail "$here/go.mod names no module"
release=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["version"])' "$build/meson-info/intro-projectinfo.json") ||
    fail "no release version in $build/meson-info: is $build a Meson build directory?"
version=v$release
python3 "$here/make_proxy.py" "$here" "$module" "$version" "$tmp/proxy" || fail "make_proxy.py could not write the module proxy"
# -modcacherw: the module cache is left writable, so that the trap can remove it.
export GOPROXY=file://$tmp/proxy GOSUMDB=off GOFLAGS="-mod=mod -modcacherw"

host=$tmp/host
mkdir "$host"
cat >"$host/go.mod" <<EOF
module example.com/sdmhost

go 1.19

require $module $version
EOF
cat >"$host/main.go" <<EOF
// A host of the vendored package: mount, fetch, plan and launch on the fake driver.
package main

import (
	"fmt"
	"os"

	sdm "$module"
)

func main() {
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// README begin (docs/HOSTS.md's Go host: tests/tool/readme_examples.py checks the copy)
func run(archive string) error {
	if err := sdm.CheckABI(); err != nil {
		return err
	}
	rt, err := sdm.NewRuntime(&sdm.Options{NoEmbeddedArchive: true, LogLevel: sdm.LogOff})
	if err != nil {
		return err
	}
	defer rt.Close()
	if err := rt.MountFile(archive); err != nil {
		return err
	}
	scale, err := rt.KernelChecked(0, "scale", "ptr,f32,i32")
	if err != nil {
		return err
	}
	plan, err := scale.Plan(1 << 20)
	if err != nil {
		return err
	}
	if err := scale.Launch(plan, nil, sdm.DevicePtr(0x7f0000000000), float32(2), int32(1<<20)); err != nil {
		return err
	}
	fmt.Printf("libsdm %s: kernel scale, grid %d x block %d\n", sdm.Version(), plan.Grid, plan.Block)
	return nil
}
// README end
EOF
cd "$host"
export SDM_CUDA_DRIVER=$driver SDM_FAKE_CUDA_DEVICES="NVIDIA H200,9.0,232448,132,62914560" SDM_CACHE_DIR=$tmp/cache

# From the module cache, which the proxy fills.
go build -o "$tmp/sdmhost-mod" . || fail "go build of a host requiring $module $version through GOPROXY=$GOPROXY"
dir=$(go list -f '{{.Dir}}' "$module")
[[ $dir == "$GOPATH/pkg/mod/$module@$version" ]] || fail "the build used $dir, not $module@$version from the proxy"
sums=$(cat go.sum)
[[ $sums == *"$module $version h1:"* ]] || fail "go.sum records no hash of $module $version: $sums"
"$tmp/sdmhost-mod" "$root/tests/golden/kernels.sdma" || fail "the host built from the module cache failed"

# Vendored, with no proxy at all.
go mod vendor || fail "go mod vendor"
[[ -e vendor/$module/sdm.go ]] || fail "go mod vendor did not copy the package into vendor/$module"
export GOFLAGS=-mod=vendor GOPROXY=off
dir=$(go list -f '{{.Dir}}' "$module")
[[ $dir == "$host/vendor/$module" ]] || fail "the build would use $dir, not the vendored copy"
go vet ./...
go build -o "$tmp/sdmhost" . || fail "go build against $stage (pkg-config: $flags)"

linked=$(ldd "$tmp/sdmhost")
loaded=$(awk '$1 == "libsdm.so.1" && $2 == "=>" {print $3}' <<<"$linked")
[[ -n $loaded && $loaded -ef $lib_dir/libsdm.so.1 ]] || fail "the host does not load $lib_dir/libsdm.so.1 (through sdm.pc's rpath): $linked"
"$tmp/sdmhost" "$root/tests/golden/kernels.sdma"
echo "go vendored: ok"
