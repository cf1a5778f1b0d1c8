#!/usr/bin/env bash
# The package as pip installs it: bindings/python into a fresh venv (pip builds the wheel with
# build isolation, setuptools fetched from PyPI), with BUILD_DIR's libsdm inside. Then, outside the
# repository and with neither SDM_LIBRARY nor LD_LIBRARY_PATH, the installed package must load its
# own libsdm (stripped; the wheel tagged for this platform), have the release meson.build declares,
# run `python -m sdm info` (and --json) and pass the unit tests, against the fake CUDA driver.
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

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 -m venv "$tmp/venv" || fail "python3 -m venv failed (Debian: apt-get install python3-venv)"
python=$tmp/venv/bin/python
if ! SDM_BUILD_DIR=$build "$python" -m pip install --quiet --no-cache-dir "$here" >"$tmp/pip.log" 2>&1; then
    cat "$tmp/pip.log" >&2
    fail "pip could not build and install $here (its output is above); the build fetches setuptools from PyPI, so this machine must reach PyPI (or the index PIP_INDEX_URL names)"
fi

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

meson_version=$("$python" -c 'import json, sys; print(json.load(open(sys.argv[1]))["version"])' "$build/meson-info/intro-projectinfo.json")
version=$("$python" -c 'import sdm; print(sdm.__version__)')
[[ $version == "$meson_version" ]] || fail "sdm.__version__ is $version; the build's Meson project version is $meson_version"
platform=$("$python" -c 'import sysconfig; print(sysconfig.get_platform().replace("-", "_").replace(".", "_"))')
tag=$(sed -n 's/^Tag: //p' "$(dirname "$package")/sdm-$version.dist-info/WHEEL")
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
echo "wheel: ok"
