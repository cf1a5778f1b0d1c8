#!/usr/bin/env bash
# The README's install recipe and quick start (an archive, "Try it without a GPU", the C and the
# Python host), as a new user runs them: in a fresh `git clone` of the source tree (its HEAD: commit
# what you want tested), with HOME a directory of the test's own (the recipe installs into
# $HOME/.local), the commands of the blocks marked `<!-- test: install -->`, `quickstart`,
# `no-gpu`, `c-host` and `python-host` taken from the clone's README.md by
# tests/tool/readme_examples.py and run as written, one shell for all (their exports carry over),
# `pip install` and the hosts' compilation included. What a block prints last must be the block
# the README marks `<!-- output: NAME -->` for it, line for line; then the test checks what the
# README says the commands give.
# Fast where it can be without checking less: the compiler cache (ccache) and pip's cache are the
# caller's, not the fresh HOME's (the install then costs a link and the man pages, not a build).
# The toolkit is seen through CUDA_HOME as a view without bin/ (and nvcc off PATH): the install
# then builds no SDM kernels, which would take most of the test's time (nvcc for nine targets);
# everything else the recipe builds and installs is built and installed.
# Usage: tests/hosts/readme_quickstart.sh SOURCE_ROOT (meson registers it as the test
# "readme_quickstart"). Exits 77 only without git or without the CUDA toolkit (cuda.h, cuRAND);
# pip needs PyPI (or the index PIP_INDEX_URL names) for setuptools.
set -euo pipefail
src=$(cd "$1" && pwd)
cuda=${CUDA_HOME:-/usr/local/cuda}
command -v git >/dev/null || { echo "skipped: git is not installed"; exit 77; }
[ -f "$cuda/include/cuda.h" ] && [ -e "$cuda/lib64/libcurand.so.10" ] ||
  { echo "skipped: no CUDA toolkit at $cuda (cuda.h, lib64/libcurand.so.10)"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
[ -z "$(git -C "$src" status --porcelain --untracked-files=no)" ] ||
  echo "note: $src has uncommitted changes; the clone has its HEAD, $(git -C "$src" rev-parse --short HEAD), without them"
git clone --quiet "$src" "$work/sdm"
mkdir "$work/home" "$work/cuda"
for entry in "$cuda"/*; do
  [ "$(basename "$entry")" = bin ] || ln -s "$entry" "$work/cuda/"
done
path=
IFS=: read -ra dirs <<<"$PATH"
for dir in "${dirs[@]}"; do
  [ -x "$dir/nvcc" ] || path=${path:+$path:}$dir
done
# Nothing of the caller's sdm settings (a driver, archives, a cache) reaches the user's shell.
for var in $(compgen -e | grep '^SDM_' || true); do unset "$var"; done
unset LD_LIBRARY_PATH PYTHONPATH VIRTUAL_ENV PKG_CONFIG_PATH
# The caches of what the recipe compiles and downloads stay the caller's (their default places
# are under HOME): only these, nothing of sdm's own (its kernel cache starts empty).
if command -v ccache >/dev/null; then
  export CCACHE_DIR=${CCACHE_DIR:-$(ccache --get-config cache_dir)} CCACHE_BASEDIR=$work
fi
export PIP_CACHE_DIR=${PIP_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pip}

# Each block's stdout goes to $work/out/BLOCK, then to the log (a group, not a subshell: its
# exports carry over to the next block).
script=$work/readme.sh
blocks="install quickstart no-gpu c-host python-host"
mkdir "$work/out"
echo 'set -euxo pipefail' >"$script"
for block in $blocks; do
  echo "# README.md: <!-- test: $block -->" >>"$script"
  echo "{" >>"$script"
  python3 "$src/tests/tool/readme_examples.py" --commands "$block" "$work/sdm/README.md" >>"$script" ||
    fail "the clone's README.md has no block marked <!-- test: $block -->"
  echo "} >'$work/out/$block'; cat '$work/out/$block'" >>"$script"
done
echo "== the README's commands (from the clone's README.md)"
cat "$script"
log=$work/readme.log
status=0
(cd "$work/sdm" && HOME=$work/home CUDA_HOME=$work/cuda PATH=$path bash "$script") >"$log" 2>&1 || status=$?
echo "== their output"
cat "$log"
if [ "$status" -ne 0 ]; then
  for block in $blocks; do [ ! -f "$work/out/$block" ] || { echo "== stdout of $block"; cat "$work/out/$block"; }; done
  fail "the README's commands stopped with status $status (the output above)"
fi

echo "== what they printed, against the README's <!-- output: NAME --> blocks"
for block in $blocks; do
  expected=$(python3 "$src/tests/tool/readme_examples.py" --output "$block" "$work/sdm/README.md" 2>/dev/null) || continue
  lines=$(wc -l <<<"$expected")
  got=$(tail -n "$lines" "$work/out/$block")
  [ "$got" = "$expected" ] || fail "$block printed last
$got
where the README shows
$expected"
  echo "$block: as the README shows ($lines lines)"
done

echo "== what they gave"
prefix=$work/home/.local
build=$work/sdm/build-install
[ -x "$prefix/bin/sdm" ] || fail "no $prefix/bin/sdm"
[ -n "$(find "$prefix" -name 'libsdm.so.*')" ] || fail "no libsdm under $prefix"
[ -f "$prefix/include/sdm/sdm.h" ] || fail "no sdm.h under $prefix/include"
[ -f "$prefix/lib/pkgconfig/sdm.pc" ] && [ -f "$prefix/lib/cmake/sdm/sdmConfig.cmake" ] || fail "no sdm.pc or CMake package under $prefix/lib"
[ -f "$prefix/lib/sdm/libcuda_fake.so" ] || fail "no fake driver at $prefix/lib/sdm/libcuda_fake.so"
if command -v help2man >/dev/null; then [ -f "$prefix/share/man/man1/sdm.1" ] || fail "no man page sdm(1)"; fi
# The recipe builds what installs, no tests, benches or examples.
built_tests=$(find "$build" -type f -executable \( -name 'test_*' -o -name 'replay_fuzz_*' -o -name 'c_host' -o -name 'quickstart' -o -name '*_bench' \))
[ -z "$built_tests" ] || fail "the install recipe built what it does not install: $built_tests"
[ -f "$work/sdm/curand.sdma" ] || fail "the quick start wrote no curand.sdma"
text=$(cat "$log")
grep -q "match --kernel '\*generate\*'" <<<"$text" || fail "sdm ls --kernel printed no match line"
grep -q "device 0: NVIDIA H200 (9.0, class modern): [1-9][0-9]* kernels served" <<<"$text" ||
  fail "sdm info on the fake driver did not serve the H200 (the output above)"
# pkg-config finds the installed sdm as the README's exports set it up, and the C host built with
# its flags runs without LD_LIBRARY_PATH (the rpath in Libs).
grep -q -- "-lsdm" "$work/out/install" || fail "pkg-config --cflags --libs sdm printed no -lsdm: $(tail -1 "$work/out/install")"
[ -x "$work/sdm/quickstart" ] || fail "the C host was not built"
# pip install took the recipe's libsdm (build-install) without SDM_BUILD_DIR.
[ -n "$(find "$work/home/sdm-venv" -path '*/site-packages/sdm/_lib/libsdm.so.1')" ] ||
  fail "pip install ./bindings/python put no libsdm into the package"
echo "readme_quickstart: ok"
