#!/usr/bin/env bash
# Installs the build into a staging prefix (meson install --strip --destdir) and checks the tree: the
# binaries stripped, the man pages (sdm, sdm-COMMAND) rendering, the shell completions, the
# documents and the licence; then builds host projects against the installed tree only: a CMake
# project (find_package(sdm), sdm::sdm), a make project (pkg-config sdm, the .pc relocatable: no
# sysroot needed), and runs them on the fake driver; with nvcc, a CMake kernel project
# (sdm_add_archive, signed) and docs/HOSTS.md's Meson kernel project (tests/install/meson_kernel_project),
# each checked to rebuild its archive when the header its kernel includes changes, and only then.
# Usage: tests/install/run.sh BUILD_DIR (meson registers it as the test "install"). Exits 77 when
# cmake, make or pkg-config is missing.
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$(dirname "$0")/../.." && pwd)
for tool in cmake make pkg-config cc c++; do
  command -v "$tool" >/dev/null || { echo "skipped: $tool is not installed"; exit 77; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
stage=$work/stage
meson install -C "$build" --no-rebuild --quiet --strip --destdir "$stage" >"$work/install.log" 2>&1 || { cat "$work/install.log"; exit 1; }
prefix=$(meson introspect "$build" --buildoptions | python3 -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"]=="prefix"))')
release=$(meson introspect "$build" --projectinfo | python3 -c 'import json,sys; print(json.load(sys.stdin)["version"])')
root=$stage$prefix
echo "installed into $root:"
(cd "$root" && find . -type f -o -type l | sort | sed 's|^\./|  |')
fail() { echo "FAIL: $*" >&2; exit 1; }
echo "== the installed tree"
for f in "$root/bin/sdm" "$(find "$root" -name 'libsdm.so.*.*' | head -1)"; do
  file -L "$f" | grep -q ", stripped" || fail "$f is not stripped: $(file -L "$f")"
done
# The installed libsdm exports no test-only entry point (those live in libsdm_testing, never
# installed), and its JIT helper is in the sdm/ folder beside it, where it looks.
libsdm_file=$(find "$root" -name 'libsdm.so.*.*' | head -1)
! nm -D --defined-only "$libsdm_file" | grep -q sdm_testing_ || fail "the installed libsdm exports $(nm -D --defined-only "$libsdm_file" | grep sdm_testing_)"
[ -z "$(find "$root" -name 'libsdm_testing*')" ] || fail "libsdm_testing is installed"
needed=$(readelf -d "$libsdm_file")  # (not readelf | grep -q: under pipefail grep's early exit fails readelf)
! grep -q libcurl <<<"$needed" || fail "the installed libsdm links libcurl (only the tool speaks HTTP: tools/oci)"
[ -x "$(dirname "$libsdm_file")/sdm/sdm-jit-helper" ] || fail "no sdm-jit-helper in $(dirname "$libsdm_file")/sdm"
file -L "$(dirname "$libsdm_file")/sdm/sdm-jit-helper" | grep -q ", stripped" || fail "sdm-jit-helper is not stripped"
[ "$(cat "$root/share/doc/sdm/LICENSE")" = "$(cat "$src/LICENSE")" ] || fail "LICENSE is not installed"
for doc in "$src"/README.md "$src"/docs/*.md; do
  cmp -s "$doc" "$root/share/doc/sdm/$(basename "$doc")" || fail "$(basename "$doc") is not installed under share/doc/sdm"
done
[ -s "$root/share/bash-completion/completions/sdm" ] && [ -s "$root/share/zsh/site-functions/_sdm" ] || fail "the shell completions are not installed"
bash -n "$root/share/bash-completion/completions/sdm" || fail "the bash completion does not parse"
if command -v help2man >/dev/null; then
  # One page per command `sdm --help` lists, and each renders (man -l, or groff without man-db).
  commands=$("$root/bin/sdm" --help | sed -n '/^Subcommands:/,$p' | sed -n 's/^  \([a-z][a-z-]*\) .*/\1/p')
  [ -n "$commands" ] || fail "no commands in sdm --help"
  for page in sdm $(printf 'sdm-%s ' $commands); do
    f=$root/share/man/man1/$page.1
    [ -f "$f" ] || fail "no man page $page(1) (tools/meson.build's sdm_commands lacks a command?)"
    if command -v man >/dev/null; then text=$(MANPAGER=cat man -l "$f" 2>&1); else text=$(groff -man -Tutf8 "$f" 2>&1); fi
    grep -q "^NAME" <<<"$text" || fail "man $page does not render: $text"  # (not echo | grep -q: under pipefail grep's early exit fails echo)
  done
  grep -q -- "--sign" <<<"$(MANPATH=$root/share/man MANPAGER=cat man sdm-pack 2>/dev/null)" || fail "man sdm-pack lacks the options"
  # EXAMPLES and ENVIRONMENT (from the README and docs/, tools/man_include.py): every page has both.
  page=$(MANPATH=$root/share/man MANPAGER=cat man sdm 2>/dev/null)
  for want in EXAMPLES ENVIRONMENT SDM_CUDA_DRIVER SDM_PROGRESS_INTERVAL "sdm import --arch sm_90"; do
    grep -q -- "$want" <<<"$page" || fail "man sdm lacks '$want'"
  done
  page=$(MANPATH=$root/share/man MANPAGER=cat man sdm-ls 2>/dev/null)
  grep -q "^EXAMPLES" <<<"$page" && grep -q "^ENVIRONMENT" <<<"$page" && grep -q -- "sdm ls kernels.sdma" <<<"$page" || fail "man sdm-ls lacks EXAMPLES or ENVIRONMENT: $page"
  echo "man pages: sdm $(printf 'sdm-%s ' $commands)"
else
  echo "no help2man: the man pages are not built"
fi
# The fake driver, installed beside libsdm as a development tool where the build installs it
# (-Dfake_driver, README "Try it without a GPU"): the installed tool runs on it; else the build's.
export SDM_FAKE_CUDA_DEVICES="NVIDIA H200,9.0,232448,132,62914560"
export SDM_CACHE_DIR=$work/cache
if meson introspect "$build" --installed | grep -q 'libcuda_fake\.so"'; then
  export SDM_CUDA_DRIVER=$(dirname "$libsdm_file")/sdm/libcuda_fake.so
  [ -f "$SDM_CUDA_DRIVER" ] || fail "the build installs the fake driver, but $SDM_CUDA_DRIVER is not there"
  file -L "$SDM_CUDA_DRIVER" | grep -q ", stripped" || fail "the installed fake driver is not stripped"
  info=$("$root/bin/sdm" info --summary 2>&1) || fail "the installed sdm info on the installed fake driver: $info"
  grep -q "device 0: NVIDIA H200 (9.0, class modern)" <<<"$info" || fail "the installed sdm info on the installed fake driver: $info"
  echo "the installed fake driver: $info"
else
  echo "this build does not install the fake driver (-Dfake_driver=disabled, or no cuda.h): the hosts run on the build's"
  export SDM_CUDA_DRIVER=$build/tests/fake_cuda/libcuda_fake.so
fi

echo "== CMake: find_package(sdm) against the installed tree"
cmake -S "$src/tests/install" -B "$work/cmake" -DCMAKE_PREFIX_PATH="$root" -DSDM_SOURCE_DIR="$src" -DSDM_RELEASE="$release" >"$work/cmake.log" 2>&1 || { cat "$work/cmake.log"; exit 1; }
cmake --build "$work/cmake" >"$work/cmake-build.log" 2>&1 || { cat "$work/cmake-build.log"; exit 1; }
grep -q "$root" "$work/cmake/CMakeCache.txt" || { echo "CMake did not find the installed sdm"; exit 1; }
"$work/cmake/c_host"
"$work/cmake/cpp_host"

echo "== make + pkg-config against the installed tree"
# sdm.pc is relocatable (prefix=${pcfiledir}/...): found in the staging tree, it names that tree.
pcdir=$(dirname "$(find "$root" -name sdm.pc | head -1)")
export PKG_CONFIG_PATH=$pcdir
grep -q 'prefix=${pcfiledir}' "$pcdir/sdm.pc" || fail "sdm.pc is not relocatable: $(head -3 "$pcdir/sdm.pc")"
echo "pkg-config --cflags --libs sdm: $(pkg-config --cflags --libs sdm)"
[ "$(pkg-config --modversion sdm)" = "$release" ] || { echo "sdm.pc says $(pkg-config --modversion sdm), the build $release"; exit 1; }
mkdir -p "$work/make"
make -s -C "$work/make" -f "$src/tests/install/Makefile" SDM_SOURCE_DIR="$src" c_host
"$work/make/c_host"
# A kernel project's archive is rebuilt when the header its kernel includes changes (nvcc's
# depfile), and only then: BUILD (a command) runs once more with nothing changed (the archive's
# mtime must stay), then after the header's constant is edited (its bytes must change).
# Usage: header_rebuild WHAT PROJECT_COPY ARCHIVE BUILD...
header_rebuild() {
  local what=$1 copy=$2 archive=$3; shift 3
  local stamp; stamp=$(stat -c %y "$archive")
  cp "$archive" "$work/before.sdma"
  "$@" >"$work/rebuild.log" 2>&1 || { cat "$work/rebuild.log"; exit 1; }
  [ "$(stat -c %y "$archive")" = "$stamp" ] || fail "$what: a build with nothing changed rebuilt the archive: $(cat "$work/rebuild.log")"
  sed -i 's/kScaleOffset = 0.0f/kScaleOffset = 1.0f/' "$copy/scale.cuh"
  grep -q 'kScaleOffset = 1.0f' "$copy/scale.cuh" || fail "$what: scale.cuh lost its constant"
  "$@" >"$work/rebuild.log" 2>&1 || { cat "$work/rebuild.log"; exit 1; }
  ! cmp -s "$archive" "$work/before.sdma" || fail "$what: editing scale.cuh did not rebuild the archive: $(cat "$work/rebuild.log")"
  echo "$what: editing scale.cuh rebuilt the archive, a build with nothing changed did not"
}
echo "== CMake: a kernel project, sdm_add_archive (nvcc + sdm pack, signed) and its kernel loaded by name"
if nvcc=$(command -v nvcc || ls "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc" 2>/dev/null); then
  # The installed tool runs from the staging tree: its libraries are there too. The project is
  # copied out of the source tree: the test edits its header.
  cp -r "$src/tests/install/kernel_project" "$work/kernels-src"
  "$root/bin/sdm" keygen -q -o "$work/release"
  cmake -S "$work/kernels-src" -B "$work/kernels" -DCMAKE_PREFIX_PATH="$root" -DSDM_NVCC="$nvcc" \
    -DSDM_SIGN_KEY="$work/release.key" >"$work/kernels.log" 2>&1 || { cat "$work/kernels.log"; exit 1; }
  cmake --build "$work/kernels" >"$work/kernels-build.log" 2>&1 || { cat "$work/kernels-build.log"; exit 1; }
  "$work/kernels/kernel_host" | tee "$work/kernel_host.out"
  grep -q "kernel scale of module scale (b64,b32,b32), image sm_90" "$work/kernel_host.out" || { echo "the kernel project's kernel"; exit 1; }
  "$root/bin/sdm" verify --trust "$work/release.pub" "$work/kernels/user_kernels.sdma" || fail "sdm_add_archive(SIGN): the archive's signature"
  "$root/bin/sdm" ls --json "$work/kernels/user_kernels.sdma" | python3 -c "
import json, sys
x = [(e['expression'], e['module'], e['symbol']) for e in json.load(sys.stdin)['name_expressions']]
assert x == [('fill<float>', 'scale', '_Z4fillIfEvPT_S0_i')], x" || fail "sdm_add_archive(NAME_EXPRESSIONS): the lowered expression is recorded"
  header_rebuild "CMake (sdm_add_archive)" "$work/kernels-src" "$work/kernels/user_kernels.sdma" cmake --build "$work/kernels" --target user_kernels
  "$root/bin/sdm" verify -q --trust "$work/release.pub" "$work/kernels/user_kernels.sdma" || fail "sdm_add_archive(SIGN): the rebuilt archive's signature"

  echo "== Meson: docs/HOSTS.md's kernel project (tests/install/meson_kernel_project: nvcc + sdm import)"
  if command -v meson >/dev/null && command -v ninja >/dev/null; then
    cp -r "$src/tests/install/meson_kernel_project" "$work/meson-src"
    PATH="$root/bin:$(dirname "$nvcc"):$PATH" meson setup "$work/meson-src" "$work/meson" >"$work/meson.log" 2>&1 || { cat "$work/meson.log"; exit 1; }
    grep -q "Program sdm found: YES ($root/bin/sdm)" "$work/meson.log" || fail "the Meson project did not find the installed sdm: $(grep 'Program sdm' "$work/meson.log")"
    ninja -C "$work/meson" >"$work/meson-build.log" 2>&1 || { cat "$work/meson-build.log"; exit 1; }
    "$root/bin/sdm" ls "$work/meson/my_kernels.sdma" | tee "$work/meson-ls.out"
    grep -Eq '^scale +scale +b64,b32,b32 +sm_90,compute_90' "$work/meson-ls.out" || fail "the Meson project's archive lacks the kernel scale for sm_90 and compute_90"
    "$root/bin/sdm" ls --json "$work/meson/my_kernels.sdma" | python3 -c "
import json, sys
x = [(e['expression'], e['symbol']) for e in json.load(sys.stdin)['name_expressions']]
assert x == [('fill<float>', '_Z4fillIfEvPT_S0_i')], x" || fail "the Meson project's name expression is recorded"
    header_rebuild "Meson (custom_target depfile)" "$work/meson-src" "$work/meson/my_kernels.sdma" ninja -C "$work/meson"
  else
    echo "no meson or ninja on PATH: the Meson kernel project is not built"
  fi
else
  echo "no nvcc: the kernel projects are not built"
fi
echo "== Rust: a host crate outside the repository (pkg-config, rpath)"
rc=0; bash "$src/bindings/rust/test_outside.sh" "$stage" "$prefix" "$build" || rc=$?
[ $rc = 0 ] || [ $rc = 77 ] || exit $rc
echo "== Go: a module vendoring bindings/go, built with pkg-config against the installed tree"
if command -v go >/dev/null; then
  "$src/bindings/go/test_vendored.sh" "$stage" "$build"
else
  echo "no go: the vendored Go host is not built"
fi
echo "install: the host projects built against the installed tree and ran"
