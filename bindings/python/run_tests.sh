#!/usr/bin/env bash
# Runs the Python bindings' tests against a build of sdm: libsdm and the fake CUDA driver from it.
# Usage: bindings/python/run_tests.sh [BUILD_DIR]   (default: build, relative to the repository root)
# Exits non-zero when a test fails, or when the build lacks libsdm or the fake driver.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${1:-build}
[[ $build = /* ]] || build=$root/$build

library=$build/capi/libsdm.so
driver=$build/tests/fake_cuda/libcuda_fake.so
for file in "$library" "$driver"; do
    if [[ ! -e $file ]]; then
        echo "run_tests.sh: $file is missing: build sdm first (meson compile -C $build)" >&2
        exit 1
    fi
done

cache=$(mktemp -d)
trap 'rm -rf "$cache"' EXIT
export SDM_LIBRARY=$library SDM_CUDA_DRIVER=$driver SDM_CACHE_DIR=$cache
cd "$root"
# `python3 -m unittest discover -v -s bindings/python/tests`, plus a closing "N passed, N failed" line.
python3 - <<'PY'
import sys
import unittest

suite = unittest.defaultTestLoader.discover("bindings/python/tests")
result = unittest.TextTestRunner(verbosity=2).run(suite)
# A test whose subtests fail is one failed test.
failed = len({getattr(test, "test_case", test).id() for test, _ in result.failures + result.errors}
             | {test.id() for test in result.unexpectedSuccesses})
skipped = len(result.skipped)
print(f"{result.testsRun - failed - skipped} passed, {failed} failed, {skipped} skipped")
sys.exit(0 if result.wasSuccessful() and result.testsRun > 0 else 1)
PY
