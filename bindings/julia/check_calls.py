#!/usr/bin/env python3
"""Checks bindings/julia's calls against include/sdm/sdm.h, without a Julia toolchain: no Julia
runs here, and Julia reports a wrong call only when it is made.

The raw layer, src/capi.jl, is generated from the header by capi/gen_abi.py (and its --check test
keeps it current with the generator). Its ccalls are checked here against the header's
prototypes with a C-to-Julia type table of this file's own, not the generator's mapping, so a
mistake in the generator's mapping shows too:
- every function of sdm.h has exactly one ccall in capi.jl, of its own symbol, inside a Julia
  function of the same name taking one parameter per C parameter, and every ccall names a
  function of sdm.h;
- the ccall's return type and each argument type agree with the prototype's: a fixed-width
  integer or float of the same size and kind (Int32/Cint for int32_t, Csize_t/UInt64 for size_t,
  Float32 for float, ...), Cstring (or Ptr{UInt8}) for char*, Ptr{T} for T* with T agreeing, a
  struct or opaque handle by its own name, a typedef by its own name (whose `const` in capi.jl
  must agree with the C type it names) or the type it names, a callback as Ptr{Cvoid}; and as
  many types as arguments passed.
A built-in self-test feeds the checker capi.jl with wrong types and counts (a return, an argument,
a pointee, a dropped argument, a typedef's definition) and fails if any goes unnoticed.

The layer above it, Sdm.jl, is checked mechanically:
- Sdm.jl includes capi.jl, makes no `ccall` of its own and defines no `sdm_*` function (every
  C call goes through the generated layer);
- every call of a raw function passes as many arguments as the C function takes, every call of
  a struct's constructor one per field, and every other `sdm_*(...)` call names a type of the
  header;
- every `sized(T; name = value, ...)` names a struct of the header and only its fields (`sized`
  would ignore a misspelt one).
Exits 1 listing each problem with its line, 0 with a one-line summary.

Usage: python3 bindings/julia/check_calls.py [--julia PATH] [--capi PATH]
"""

import argparse
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "capi"))

from abigen import emit_julia, model, reader  # noqa: E402


class JuliaError(Exception):
    """Sdm.jl has something this checker cannot read."""


def strip_julia(text):
    """`text` with comments removed and string literals emptied (""), newlines kept."""
    out, i, n = [], 0, len(text)
    while i < n:
        if text.startswith("#=", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("#=", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("=#", i):
                    depth, i = depth - 1, i + 2
                else:
                    out.append("\n" if text[i] == "\n" else "")
                    i += 1
        elif text[i] == "#":
            while i < n and text[i] != "\n":
                i += 1
        elif text.startswith('"""', i):
            end = text.find('"""', i + 3)
            if end < 0:
                raise JuliaError("unterminated triple-quoted string")
            out.append('""' + "\n" * text.count("\n", i, end))
            i = end + 3
        elif text[i] == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            out.append('""')
            i += 1
        elif text[i] == "'" and re.match(r"'(\\.|[^\\'])'", text[i:i + 4]):
            end = text.index("'", i + 1 + (text[i + 1] == "\\") + 1)
            out.append("' '")
            i = end + 1
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def split_top(text, separator=","):
    """Splits at `separator` outside (), {} and []."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text):
        depth += c in "({["
        depth -= c in ")}]"
        if c == separator and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def balanced(text, start):
    """The text inside the parentheses opening at text[start]."""
    depth = 0
    for i in range(start, len(text)):
        depth += text[i] == "("
        depth -= text[i] == ")"
        if depth == 0:
            return text[start + 1:i]
    raise JuliaError(f"unbalanced parentheses from {text[start:start + 60]!r}")


def check(header, path):
    text = Path(path).read_text()
    code = strip_julia(text)
    problems = []

    def line(offset):
        return code.count("\n", 0, offset) + 1

    if len(re.findall(r'(?m)^include\("capi\.jl"\)$', text)) != 1:
        problems.append('1: Sdm.jl must include("capi.jl"), the generated raw layer, once')
    for m in re.finditer(r"\bccall\s*\(", code):
        problems.append(f"{line(m.start())}: a ccall of its own: call the raw function of capi.jl instead (regenerate it "
                        f"with `{model.COMMAND}` if the header gained one)")
    for m in re.finditer(r"(?m)^\s*function\s+(sdm_\w+)\s*\(|^\s*(sdm_\w+)\s*\([^()]*\)\s*=(?!=)", code):
        problems.append(f"{line(m.start())}: defines {m[1] or m[2]}: the sdm_* names are capi.jl's")

    scalar_types = set(header.aliases) | set(header.callbacks)
    for m in re.finditer(r"(?<![\w.:])(sdm_\w+)\s*\(", code):
        name = m[1]
        arguments = split_top(balanced(code, m.end() - 1))
        if name in header.functions:
            wanted, what = len(header.functions[name].params), "argument(s)"
        elif name in header.structs:
            wanted, what = len(header.structs[name].fields), "field(s)"
        elif name in scalar_types:
            wanted, what = 1, "value"
        else:
            problems.append(f"{line(m.start())}: calls {name}, which sdm.h does not declare")
            continue
        if len(arguments) != wanted:
            problems.append(f"{line(m.start())}: {name} takes {wanted} {what} (sdm.h), the call passes {len(arguments)}")

    for m in re.finditer(r"(?<!function )\bsized\s*\(", code):  # calls, not its definition
        positional, *keywords = split_top(balanced(code, m.end() - 1), ";")
        struct = header.structs.get(positional.strip())
        if struct is None:
            problems.append(f"{line(m.start())}: sized({positional}): not a struct of sdm.h")
            continue
        fields = {emit_julia.julia_name(f.name) for f in struct.fields}
        for keyword in split_top(keywords[0]) if keywords else []:
            name = keyword.split("=", 1)[0].strip()
            if name not in fields:
                problems.append(f"{line(m.start())}: sized({struct.name}; {name} = ...): {struct.name} has no field {name}")
    return problems


# C's scalars by size and kind, written here rather than taken from the generator's table.
C_SCALARS = {
    "int8_t": (1, "signed"), "uint8_t": (1, "unsigned"), "int16_t": (2, "signed"), "uint16_t": (2, "unsigned"),
    "int32_t": (4, "signed"), "uint32_t": (4, "unsigned"), "int64_t": (8, "signed"), "uint64_t": (8, "unsigned"),
    "size_t": (8, "unsigned"), "float": (4, "float"), "double": (8, "float"), "char": (1, "char"),
}
# Julia's, on x86_64 and aarch64 Linux (LP64). A char is any one-byte integer.
JULIA_SCALARS = {
    "Int8": (1, "signed"), "UInt8": (1, "unsigned"), "Int16": (2, "signed"), "UInt16": (2, "unsigned"),
    "Int32": (4, "signed"), "UInt32": (4, "unsigned"), "Int64": (8, "signed"), "UInt64": (8, "unsigned"),
    "Cint": (4, "signed"), "Cuint": (4, "unsigned"), "Clong": (8, "signed"), "Culong": (8, "unsigned"),
    "Clonglong": (8, "signed"), "Culonglong": (8, "unsigned"), "Csize_t": (8, "unsigned"), "Cssize_t": (8, "signed"),
    "Cchar": (1, "char"), "Float32": (4, "float"), "Cfloat": (4, "float"), "Float64": (8, "float"), "Cdouble": (8, "float"),
}


def agrees(header, julia_consts, ctype, julia):
    """Why the Julia type `julia` cannot stand for the C type `ctype` in a ccall, or None."""
    julia = julia.strip()
    if ctype.function is not None:
        return None if julia == "Ptr{Cvoid}" else f"{julia} for a function pointer (Ptr{{Cvoid}})"
    if ctype.pointers:
        if ctype.pointers == 1 and ctype.base == "char" and julia in ("Cstring", "Ptr{UInt8}", "Ptr{Cchar}"):
            return None
        inner = re.fullmatch(r"Ptr\{(.*)\}", julia)
        if inner is None:
            return f"{julia} for the pointer {ctype}"
        why = agrees(header, julia_consts, ctype.pointee(), inner[1])
        return None if why is None else f"{julia} for {ctype}: {why}"
    base = ctype.base
    if base == "void":
        return None if julia == "Cvoid" else f"{julia} for void"
    if base in header.callbacks:
        if julia == base and julia_consts.get(base) == "Ptr{Cvoid}":
            return None
        return None if julia == "Ptr{Cvoid}" else f"{julia} for the callback {base} (Ptr{{Cvoid}})"
    if base in header.structs or base in header.opaque:
        return None if julia == base else f"{julia} for {base}"
    if base in header.aliases:
        if julia == base:  # the typedef's own name: its definition must agree
            if base not in julia_consts:
                return f"{base} has no `const {base} = ...` in capi.jl"
            why = agrees(header, julia_consts, header.aliases[base], julia_consts[base])
            return None if why is None else f"capi.jl's const {base} = {julia_consts[base]}: {why}"
        return agrees(header, julia_consts, header.resolve(ctype), julia)
    if base in C_SCALARS:
        size, kind = C_SCALARS[base]
        found = JULIA_SCALARS.get(julia)
        if found is None:
            return f"{julia} for {base}, which is {size} byte(s)"
        if found[0] != size or (found[1] != kind and "char" not in (kind, found[1])) or \
                ("char" in (kind, found[1]) and size != 1):
            return f"{julia} ({found[0]} byte(s), {found[1]}) for {base} ({size} byte(s), {kind})"
        return None
    return f"{julia} for {ctype}, a type this checker does not know"


def check_ccalls(header, path, text=None):
    """capi.jl's ccalls against sdm.h's prototypes; the problems found, each with its line."""
    code = strip_julia(Path(path).read_text() if text is None else text)
    problems = []

    def line(offset):
        return code.count("\n", 0, offset) + 1

    julia_consts = {m[1]: m[2].strip() for m in re.finditer(r"(?m)^const (\w+) = (.+)$", code)}
    seen = {}
    wrappers = list(re.finditer(r"(?m)^(\w+)\(([^()]*)\)\s*=\s*ccall\s*\(", code))
    for m in wrappers:
        where = line(m.start())
        wrapper, parameters = m[1], split_top(m[2])
        parts = split_top(balanced(code, m.end() - 1))
        symbol = re.fullmatch(r"\(:(\w+),\s*libsdm\)", parts[0]) if parts else None
        if symbol is None or len(parts) < 3 or not (parts[2].startswith("(") and parts[2].endswith(")")):
            problems.append(f"{where}: a ccall this checker cannot read: ccall({', '.join(parts)[:80]})")
            continue
        name, returned, types, arguments = symbol[1], parts[1], split_top(parts[2][1:-1]), parts[3:]
        function = header.functions.get(name)
        if function is None:
            problems.append(f"{where}: ccall of {name}, which sdm.h does not declare")
            continue
        seen[name] = seen.get(name, 0) + 1
        if wrapper != name:
            problems.append(f"{where}: {wrapper} calls {name}: the wrapper must have the C function's name")
        wanted = len(function.params)
        if not (len(types) == len(arguments) == len(parameters) == wanted):
            problems.append(f"{where}: {name} takes {wanted} argument(s) (sdm.h); the wrapper has {len(parameters)} "
                            f"parameter(s), the ccall {len(types)} type(s) and {len(arguments)} argument(s)")
        why = agrees(header, julia_consts, function.ret, returned)
        if why is not None:
            problems.append(f"{where}: {name} returns {function.ret} (sdm.h); the ccall says {why}")
        for index, (param, julia) in enumerate(zip(function.params, types)):
            why = agrees(header, julia_consts, param.type, julia)
            if why is not None:
                problems.append(f"{where}: {name}'s argument {index + 1} ({param.name}) is {param.type} (sdm.h); "
                                f"the ccall says {why}")
    wrapped = {m.end() - 1 for m in wrappers}
    for m in re.finditer(r"\bccall\s*\(", code):
        if m.end() - 1 not in wrapped:
            problems.append(f"{line(m.start())}: a ccall that is not the body of a `name(args) = ccall(...)` wrapper")
    for name in header.functions:
        if seen.get(name, 0) != 1:
            problems.append(f"0: sdm.h's {name} has {seen.get(name, 0)} ccall(s) in capi.jl, not one")
    return problems


# Wrong declarations the checker must notice: (what, the text in capi.jl, what replaces it).
SELF_TEST = [
    ("a return type", "sdm_abi_version() = ccall((:sdm_abi_version, libsdm), UInt32, ())",
     "sdm_abi_version() = ccall((:sdm_abi_version, libsdm), Int32, ())"),
    ("an argument's pointee", "(:sdm_error_destroy, libsdm), Cvoid, (Ptr{sdm_error},)",
     "(:sdm_error_destroy, libsdm), Cvoid, (Ptr{sdm_runtime},)"),
    ("a pointer for a value", "(:sdm_status_string, libsdm), Cstring, (sdm_status,)",
     "(:sdm_status_string, libsdm), Cstring, (Ptr{sdm_status},)"),
    ("a dropped argument type", "(Ptr{sdm_runtime}, Ptr{Ptr{sdm_error}}), runtime, last)",
     "(Ptr{sdm_runtime},), runtime, last)"),
    ("a typedef's definition", "const sdm_status = Int32", "const sdm_status = UInt64"),
]


def self_test(header, path):
    """The names of the wrong declarations check_ccalls misses."""
    text = Path(path).read_text()
    missed = []
    for what, right, wrong in SELF_TEST:
        if text.count(right) != 1:
            missed.append(f"{what} (capi.jl no longer has {right!r} once: update SELF_TEST)")
        elif not check_ccalls(header, path, text.replace(right, wrong)):
            missed.append(what)
    return missed


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--julia", default=HERE / "src" / "Sdm.jl")
    parser.add_argument("--capi", default=HERE / "src" / "capi.jl")
    options = parser.parse_args()
    try:
        header = reader.read_header(model.HEADER)
        problems = check(header, options.julia)
        ccall_problems = check_ccalls(header, options.capi)
        missed = self_test(header, options.capi)
    except (model.AbiError, JuliaError) as e:
        print(f"check_calls: {e}", file=sys.stderr)
        return 1
    for problem in problems:
        print(f"check_calls: {options.julia}:{problem}", file=sys.stderr)
    for problem in ccall_problems:
        print(f"check_calls: {options.capi}:{problem}", file=sys.stderr)
    for what in missed:
        print(f"check_calls: self-test: a capi.jl with {what} wrong passed the ccall check", file=sys.stderr)
    if problems:
        print(f"check_calls: {options.julia} calls the raw layer wrongly in {len(problems)} place(s)", file=sys.stderr)
    if ccall_problems:
        print(f"check_calls: {options.capi}'s ccalls disagree with sdm.h in {len(ccall_problems)} place(s)", file=sys.stderr)
    if problems or ccall_problems or missed:
        return 1
    print(f"check_calls: {options.capi}'s {len(header.functions)} ccalls match sdm.h's prototypes (return and argument "
          f"types, counts; self-test: {len(SELF_TEST)} wrong declarations caught); {options.julia} calls capi.jl as "
          f"sdm.h declares ({len(header.structs)} structs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
