#!/usr/bin/env python3
"""Writes every file that restates sdm's C ABI, from include/sdm/sdm.h: the header is the one
description of the ABI, and everything below is derived from it.

    python3 capi/gen_abi.py           # (re)writes the files
    python3 capi/gen_abi.py --check   # writes nothing; exit 1 naming each file that is stale

The work is done by the package capi/abigen/, one module per step and per target: model.py (the
C types and the Header), reader.py (the rules below), layouts.py (LP64 layouts and the compiler's
probe), pins.py (the numbers of layout.c), sizes.py (each struct's size per minor), textutil.py
(the one walk over the header's sections the bindings' emitters share), and emit_c.py,
emit_docs.py, emit_rust.py, emit_python.py, emit_julia.py, emit_go.py. This file is its command
line.

Exit status: 0 written, or up to date; 1 (--check) stale files; 2 the header breaks a rule below
(the message names the line and the fix), or a layout probe failed. Standard library only; the
probes need a C compiler (--cc, else $CC, else cc).

Written from sdm.h (and include/sdm/sdm_testing.h, for the two test-only exports):
  capi/api_table.inc                      the initializer of sdm_get_api's table (capi.cpp)
  capi/struct_sizes.hpp                   each struct's size per minor, for capi.cpp's struct_size checks
  common/status_codes.inc                 sdm_status's errors as an X-macro list (ErrorCode, status_name)
  capi/libsdm.map                         the linker version script (and libsdm_testing.map)
  capi/sdm.def                            the Windows DLL's exports (and sdm_testing.def)
  tests/abi/symbols.txt                   the exports, compared with `nm` by check_symbols.sh
  tests/abi/layout.c                      the layout and value pins (numbers: see "Pins" below)
  docs/ABI.md                             the status table's rows, between its marker comments
  bindings/rust/sdm-sys/src/sdm_h.rs      the sys crate's declarations and layout tests
  bindings/rust/sdm/src/abi.rs            the sdm crate's constants of its enum newtypes, Plan
  bindings/python/sdm/_sdm_h.py           the ctypes declarations; the package's IntEnums
  bindings/julia/src/capi.jl              the raw ccall layer
  bindings/go/internal/rawabi/rawabi.go   the structs cgo is asked about, and their pins
  bindings/go/abi_generated.go            package sdm's Status, class and image constants, Plan

How the header is read. sdm.h keeps to a small C subset (docs/ABI.md, ABI rules 1-4), and
anything outside it is an error naming its line, never skipped:
- Preprocessor: the include guard, #include of <stdbool.h>/<stddef.h>/<stdint.h> (sdm_testing.h:
  "sdm.h"), the `extern "C"` lines under #ifdef __cplusplus, the SDM_API export-macro block, and
  `#define SDM_NAME <decimal>` constants, which bind as uint32_t (the version numbers).
- `typedef <fixed-width type> NAME;` (a scalar typedef); `typedef struct NAME NAME;` (an opaque
  handle); `typedef struct NAME {fields} NAME;` (a struct, whose first field is
  `uint32_t struct_size`); `typedef RET (*NAME)(params);` (a callback type).
- `enum { NAME = VALUE, ... };` with every value explicit, written N, -N or N << M (a `u` suffix
  allowed); a comment after a value, or on the lines before it, is its meaning (the bindings and
  docs/ABI.md's status table carry it). An enum right after a scalar typedef (comments between are fine) holds that type's
  values (`typedef int32_t sdm_status; enum {SDM_OK = 0, ...}`); any other enum is a set of
  flags and must write its values unsigned (`1u << 0`): they bind as uint32_t.
- `SDM_API RET sdm_NAME(params);` with every parameter named.
- A comment on a line of its own whose text reads `---- TITLE ----` opens a section: the
  bindings follow the header's sections.

ABI minors. Inside a struct, a comment on a line of its own that begins `ABI <major>.<minor>`
(`/* ABI 1.1 */`, `/* ABI 1.1 (a 1.0-sized struct reads as zero here): */`) says that the
fields after it, up to the next such comment, were added in that minor; fields before the first
one are 1.0. The minors must rise, and none may be newer than SDM_ABI_VERSION_MINOR. A comment
after a field on its own line (`int32_t untested; /* ... (ABI 1.1) */`) is documentation only.
The function table `sdm_api` follows the same rule: its members after struct_size and abi_minor
are the SDM_API functions without their `sdm_` prefix, each with the function's exact type, and
every function but sdm_get_api (the bootstrap, 1.0) is a member. A function belongs to the minor
of its member: that minor picks its version node in libsdm.map (SDM_1 for 1.0 and for the
test-only functions, SDM_1.N for minor N). So ABI 1.2 is: raise SDM_ABI_VERSION_MINOR to 2,
declare the function, and append its member to sdm_api under a `/* ABI 1.2 */` line.

Pins. tests/abi/layout.c must fail when sdm.h breaks a shipped layout, so its numbers do not come
from sdm.h (they would then follow any change): they come from the newest released header,
tests/abi/released/<major>.<minor>/sdm/sdm.h, compiled into a probe that prints offsetof,
sizeof, _Alignof and every constant's value (LP64; the probe refuses other platforms). What sdm.h
has beyond that release (the fields, members and constants of the minor in development, and the
size of a struct that grew) is pinned from a probe of sdm.h itself and marked `unreleased`, so
its numbers appear in every review; copying the header into tests/abi/released/ at release
turns those pins into fixed ones. SDM_ABI_VERSION_MINOR is the one value that moves: it is the
released minor, or the one after it. A released field named reserved<N> may be repurposed: the
field of sdm.h at its offset, with its size, takes its pins under the new name. Any other
released field or function keeps its name (a rename or a removal is refused), and a field or
member that is not in the release must sit below a marker newer than the release. The Rust and
Go layout tests use the same numbers; the Python tests read layout.c.

Every struct of sdm.h is also laid out here by the LP64 rules and compared with the probe of
sdm.h, so that a declaration this parser misread cannot pass unnoticed.
"""

import argparse
import os
import shlex
import shutil
import sys

from abigen.emit_c import emit_api_table, emit_layout_c, emit_module_definition, emit_status_codes, emit_struct_sizes, emit_symbols, emit_version_script
from abigen.emit_docs import emit_abi_md
from abigen.emit_go import emit_go, emit_go_enums
from abigen.emit_julia import emit_julia
from abigen.emit_python import emit_python
from abigen.emit_rust import emit_rust, emit_rust_sdm
from abigen.layouts import check_reading, probe
from abigen.model import COMMAND, HEADER, ROOT, TESTING_HEADER, AbiError, display
from abigen.pins import compute_pins
from abigen.reader import read_header
from abigen.sizes import minor_sizes


def generate(cc):
    """{path: text} of every derived file."""
    h = read_header(HEADER)
    testing = read_header(TESTING_HEADER, base=h, testing=True)
    clash = set(testing.functions) & set(h.functions)
    if clash:
        raise AbiError(f"{display(TESTING_HEADER)} declares {sorted(clash)[0]} again")
    measured = probe(h, HEADER.parent.parent, cc)
    check_reading(h, measured)
    pins = compute_pins(h, measured, cc)
    sizes = minor_sizes(h, measured, cc)
    return {
        ROOT / "capi" / "api_table.inc": emit_api_table(h),
        ROOT / "capi" / "struct_sizes.hpp": emit_struct_sizes(h, sizes, measured),
        ROOT / "common" / "status_codes.inc": emit_status_codes(h),
        ROOT / "docs" / "ABI.md": emit_abi_md(h, ROOT / "docs" / "ABI.md"),
        ROOT / "capi" / "libsdm.map": emit_version_script(h),
        ROOT / "capi" / "libsdm_testing.map": emit_version_script(h, testing),
        ROOT / "capi" / "sdm.def": emit_module_definition(h),
        ROOT / "capi" / "sdm_testing.def": emit_module_definition(h, testing),
        ROOT / "tests" / "abi" / "symbols.txt": emit_symbols(h),
        ROOT / "tests" / "abi" / "layout.c": emit_layout_c(h, pins),
        ROOT / "bindings" / "rust" / "sdm-sys" / "src" / "sdm_h.rs": emit_rust(h, pins),
        ROOT / "bindings" / "rust" / "sdm" / "src" / "abi.rs": emit_rust_sdm(h),
        ROOT / "bindings" / "python" / "sdm" / "_sdm_h.py": emit_python(h),
        ROOT / "bindings" / "julia" / "src" / "capi.jl": emit_julia(h),
        ROOT / "bindings" / "go" / "internal" / "rawabi" / "rawabi.go": emit_go(h, pins),
        ROOT / "bindings" / "go" / "abi_generated.go": emit_go_enums(h),
    }


def compiler(option):
    if option:
        return shlex.split(option)
    if os.environ.get("CC"):
        return shlex.split(os.environ["CC"])
    if shutil.which("cc") is None:
        raise AbiError("no C compiler `cc` on PATH: pass --cc or set CC (the layout pins come from a compiled probe)")
    return ["cc"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 naming each stale file")
    parser.add_argument("--cc", help="the C compiler for the layout probes (default: $CC, else cc)")
    options = parser.parse_args()
    try:
        files = generate(compiler(options.cc))
    except AbiError as e:
        print(f"gen_abi.py: {e}", file=sys.stderr)
        return 2
    stale = [path for path, text in files.items() if not path.is_file() or path.read_text() != text]
    if options.check:
        for path in stale:
            print(f"gen_abi.py: {display(path)} is stale: it differs from what include/sdm/sdm.h gives", file=sys.stderr)
        if stale:
            print(f"gen_abi.py: regenerate {'it' if len(stale) == 1 else 'them'} with `{COMMAND}` (and commit the result)",
                  file=sys.stderr)
            return 1
        print(f"gen_abi.py: {len(files)} generated files match include/sdm/sdm.h")
        return 0
    for path in stale:
        path.write_text(files[path])
        print(f"gen_abi.py: wrote {display(path)}")
    if not stale:
        print(f"gen_abi.py: {len(files)} generated files already match include/sdm/sdm.h")
    return 0


if __name__ == "__main__":
    sys.exit(main())
