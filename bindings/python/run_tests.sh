#!/usr/bin/env bash
# Runs the Python bindings' tests against a build of sdm: libsdm and the fake CUDA driver from it.
# Usage: bindings/python/run_tests.sh [BUILD_DIR]   (default: build, relative to the repository root)
# Exits non-zero when a test fails, or when the build lacks libsdm, the fake driver or the sdm tool.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${1:-build}
[[ $build = /* ]] || build=$root/$build

library=$build/capi/libsdm.so
driver=$build/tests/fake_cuda/libcuda_fake.so
tool=$build/tools/sdm  # archives tests/data's user kernels with `sdm import`
for file in "$library" "$driver" "$tool"; do
    if [[ ! -e $file ]]; then
        echo "run_tests.sh: $file is missing: build sdm first (meson compile -C $build)" >&2
        exit 1
    fi
done

cache=$(mktemp -d)
trap 'rm -rf "$cache"' EXIT
export SDM_LIBRARY=$library SDM_CUDA_DRIVER=$driver SDM_TOOL=$tool SDM_CACHE_DIR=$cache
cd "$root"
python3 bindings/python/tests/run.py
