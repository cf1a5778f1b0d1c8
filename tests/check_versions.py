#!/usr/bin/env python3
"""The versions other files must restate agree with the ones written once: the release (meson.build's
project version) and the ABI major, libsdm's soversion (include/sdm/sdm.h). Package manifests
cannot read meson.build, so they restate the release; this test is what keeps them from drifting.
Usage: check_versions.py RELEASE ABI_MAJOR (meson registers it as the test "versions")."""

import pathlib
import re
import sys

try:
    import tomllib
except ImportError:  # Python < 3.11
    print("skipped: needs Python 3.11 (tomllib)")
    sys.exit(77)

release, abi_major = sys.argv[1], sys.argv[2]
root = pathlib.Path(__file__).resolve().parent.parent
failures = []


def expect(what, found, wanted):
    if found != wanted:
        failures.append(f"{what} is {found!r}, expected {wanted!r}")


def toml(path):
    return tomllib.loads((root / path).read_text())


expect("bindings/rust/Cargo.toml [workspace.package] version", toml("bindings/rust/Cargo.toml")["workspace"]["package"]["version"], release)
for package in toml("bindings/rust/Cargo.lock")["package"]:
    if package["name"] in ("sdm", "sdm-sys"):
        expect(f"bindings/rust/Cargo.lock {package['name']} version", package["version"], release)
expect("bindings/julia/Project.toml version", toml("bindings/julia/Project.toml")["version"], release)
# Julia's ccall names the SONAME as a literal; it must be the ABI major's.
soname = re.search(r'^const libsdm = "(.*)"$', (root / "bindings/julia/src/Sdm.jl").read_text(), re.M)
expect("bindings/julia/src/Sdm.jl's libsdm", soname and soname.group(1), f"libsdm.so.{abi_major}")

for failure in failures:
    print("FAIL:", failure)
if failures:
    print(f"the release is {release} (meson.build) and the ABI major {abi_major} (include/sdm/sdm.h)")
    sys.exit(1)
print(f"versions: the Rust and Julia packages say {release}, Julia's SONAME libsdm.so.{abi_major}")
