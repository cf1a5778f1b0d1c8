#!/usr/bin/env python3
"""The versions other files must restate agree with the ones written once: the release (meson.build's
project version) and the ABI major, libsdm's soversion (include/sdm/sdm.h); and so does the
project's URL (meson.build's project_url, sdm.pc's URL). Package manifests cannot read meson.build,
so they restate them; this test is what keeps them from drifting.
Usage: check_versions.py RELEASE ABI_MAJOR URL (meson registers it as the test "versions")."""

import pathlib
import re
import sys

try:
    import tomllib
except ImportError:  # Python < 3.11
    print("skipped: needs Python 3.11 (tomllib)")
    sys.exit(77)

release, abi_major, url = sys.argv[1], sys.argv[2], sys.argv[3]
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
# sdm's dependency on sdm-sys: the path in the workspace, the exact shared release once published.
expect("bindings/rust/sdm/Cargo.toml's sdm-sys version", toml("bindings/rust/sdm/Cargo.toml")["dependencies"]["sdm-sys"].get("version"), f"={release}")
expect("bindings/julia/Project.toml version", toml("bindings/julia/Project.toml")["version"], release)
# Julia's ccall names the SONAME as a literal; it must be the ABI major's.
soname = re.search(r'^const libsdm = "(.*)"$', (root / "bindings/julia/src/Sdm.jl").read_text(), re.M)
expect("bindings/julia/src/Sdm.jl's libsdm", soname and soname.group(1), f"libsdm.so.{abi_major}")

# The project's one URL: the Python and Rust manifests name it, the Go module path is its bindings/go.
python_urls = toml("bindings/python/pyproject.toml")["project"]["urls"]
for key in ("Homepage", "Repository"):
    expect(f"bindings/python/pyproject.toml [project.urls] {key}", python_urls.get(key), url)
for key in ("repository", "homepage"):
    expect(f"bindings/rust/Cargo.toml [workspace.package] {key}", toml("bindings/rust/Cargo.toml")["workspace"]["package"].get(key), url)
go_module = re.search(r"^module (\S+)$", (root / "bindings/go/go.mod").read_text(), re.M)
expect("bindings/go/go.mod's module path", go_module and go_module.group(1), url.removeprefix("https://") + "/bindings/go")

for failure in failures:
    print("FAIL:", failure)
if failures:
    print(f"the release is {release} (meson.build), the ABI major {abi_major} (include/sdm/sdm.h), the URL {url} (meson.build)")
    sys.exit(1)
print(f"versions: the Rust and Julia packages say {release}, Julia's SONAME libsdm.so.{abi_major}; "
      f"the Python and Rust manifests and the Go module path say {url}")
