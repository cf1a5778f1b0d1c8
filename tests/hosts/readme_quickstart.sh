#!/usr/bin/env bash
# The README's install recipe, quick start and "Try it without a GPU", as a new user runs them: in
# a fresh `git clone` of the source tree (its HEAD: commit what you want tested), with HOME a
# directory of the test's own (the recipe installs into $HOME/.local), the commands of the blocks
# marked `<!-- test: install -->`, `quickstart` and `no-gpu` taken from the clone's README.md by
# tests/tool/readme_examples.py and run as written, one shell for all three (their exports carry
# over), `pip install` included. Then checks what the README says they give.
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
unset LD_LIBRARY_PATH PYTHONPATH VIRTUAL_ENV

script=$work/readme.sh
echo 'set -euxo pipefail' >"$script"
for block in install quickstart no-gpu; do
  echo "# README.md: <!-- test: $block -->" >>"$script"
  python3 "$src/tests/tool/readme_examples.py" --commands "$block" "$work/sdm/README.md" >>"$script" ||
    fail "the clone's README.md has no block marked <!-- test: $block -->"
done
echo "== the README's commands (from the clone's README.md)"
cat "$script"
log=$work/readme.log
status=0
(cd "$work/sdm" && HOME=$work/home CUDA_HOME=$work/cuda PATH=$path bash "$script") >"$log" 2>&1 || status=$?
echo "== their output"
cat "$log"
[ "$status" -eq 0 ] || fail "the README's commands stopped with status $status (the output above)"

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
built_tests=$(find "$build" -type f -executable \( -name 'test_*' -o -name 'replay_fuzz_*' -o -name 'c_host' -o -name '*_bench' \))
[ -z "$built_tests" ] || fail "the install recipe built what it does not install: $built_tests"
[ -f "$work/sdm/curand.sdma" ] || fail "the quick start wrote no curand.sdma"
text=$(cat "$log")
grep -q "match --kernel '\*generate\*'" <<<"$text" || fail "sdm ls --kernel printed no match line"
grep -q "device 0: NVIDIA H200 (9.0, class modern): [1-9][0-9]* kernels served" <<<"$text" ||
  fail "sdm info on the fake driver did not serve the H200 (the output above)"
grep -q "NVIDIA H200" <<<"$(sed -n '/^+ python -m sdm info/,$p' "$log")" || fail "python -m sdm info did not list the fake H200"
echo "readme_quickstart: ok"
