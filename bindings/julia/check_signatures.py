#!/usr/bin/env python3
"""Checks bindings/julia/src/Sdm.jl against include/sdm/sdm.h without a Julia toolchain.

Every SDM_API function must have one `ccall((:name, libsdm), Ret, (Args...), values...)` whose
return and argument types are what the header's types map to; every struct of the header a Julia
struct with the same fields (names and types, in order); every opaque handle a Julia type; every
constant the same value. Exits 1 listing each difference (function and argument, struct and
field), 0 with a one-line summary otherwise.

Type mapping (after resolving `const X = T` aliases of Sdm.jl and the C typedefs):
  int32_t Int32/Cint, uint32_t UInt32/Cuint, int64_t Int64, uint64_t UInt64, uint16_t UInt16,
  size_t Csize_t, double Float64, void Cvoid, char UInt8/Cchar,
  T* Ptr{T} (Ref{T} too for a ccall argument), char* also Cstring, function pointers Ptr{Cvoid},
  T[N] NTuple{N,T}, a struct or opaque handle its own name.
The header is read by bindings/python/tests/sdm_header.py, shared with the Python bindings' tests.

Usage: python3 bindings/julia/check_signatures.py [--header PATH] [--julia PATH]
"""

import argparse
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "bindings" / "python" / "tests"))

import sdm_header  # noqa: E402
from sdm_header import CType  # noqa: E402

# Julia spellings that name the same type; Clong and friends are left out: their width varies.
BUILTIN = {"Cint": "Int32", "Cuint": "UInt32", "Clonglong": "Int64", "Culonglong": "UInt64", "Cshort": "Int16",
           "Cushort": "UInt16", "Cdouble": "Float64", "Cfloat": "Float32", "Cuchar": "UInt8", "Nothing": "Cvoid"}
SCALARS = {"int32_t": "Int32", "uint32_t": "UInt32", "int64_t": "Int64", "uint64_t": "UInt64", "uint16_t": "UInt16",
           "size_t": "Csize_t", "double": "Float64", "void": "Cvoid"}
CHAR = {"UInt8", "Cchar"}
# A C field named like one of these is spelled NAME_ in Julia.
JULIA_KEYWORDS = {"baremodule", "begin", "break", "catch", "const", "continue", "do", "else", "elseif", "end",
                  "export", "false", "finally", "for", "function", "global", "if", "import", "let", "local",
                  "macro", "module", "quote", "return", "struct", "true", "try", "using", "while"}


class JuliaError(Exception):
    """Sdm.jl has something this checker cannot read."""


# ---- reading Sdm.jl ---------------------------------------------------------------------------------

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


def split_top(text):
    """Splits at commas outside (), {} and []."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text):
        depth += c in "({["
        depth -= c in ")}]"
        if c == "," and depth == 0:
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


class Julia:
    def __init__(self, path):
        self.path = path
        code = strip_julia(Path(path).read_text())
        self.aliases, self.constants = {}, {}
        for m in re.finditer(r"^\s*const\s+(\w+)\s*=\s*(.+?)\s*$", code, re.M):
            name, value = m[1], m[2]
            number = re.fullmatch(r"(?:\w+\()?\s*(-?\d+)\s*\)?", value)
            if number:
                self.constants[name] = int(number[1])
            elif re.fullmatch(r"[A-Za-z_]\w*(\{[\w\s{},]*\})?", value):
                self.aliases[name] = value
        self.opaque = set(re.findall(r"^\s*(?:mutable\s+)?struct\s+(\w+)\s+end\b", code, re.M))
        self.structs = {}
        for m in re.finditer(r"^\s*(?:mutable\s+)?struct\s+(\w+)[ \t]*(?:<:[ \t]*\w+[ \t]*)?\n(.*?)^\s*end\b",
                             code, re.M | re.S):
            self.structs[m[1]] = m[2]
        self.ccalls = {}  # name -> list of (return type, [argument types], value count)
        for m in re.finditer(r"\bccall\s*\(", code):
            parts = split_top(balanced(code, m.end() - 1))
            target = re.fullmatch(r"\(\s*:(\w+)\s*,\s*libsdm\s*\)", parts[0]) if parts else None
            if target is None or len(parts) < 3 or not (parts[2].startswith("(") and parts[2].endswith(")")):
                raise JuliaError(f"cannot read ccall({', '.join(parts[:3])}, ...): expected "
                                 "ccall((:name, libsdm), Ret, (Args...), values...)")
            self.ccalls.setdefault(target[1], []).append((parts[1], split_top(parts[2][1:-1]), len(parts) - 3))

    def fields(self, struct):
        """[(name, type)] of a struct whose body holds only `name::Type` lines."""
        fields = []
        for line in self.structs[struct].splitlines():
            if not line.strip():
                continue
            m = re.fullmatch(r"\s*(\w+)\s*::\s*(.+?)\s*", line)
            if m is None:
                raise JuliaError(f"struct {struct}: cannot read {line.strip()!r} as a field")
            fields.append((m[1], m[2]))
        return fields

    def canonical(self, text, depth=0):
        """A Julia type expression with aliases and builtin spellings resolved, without spaces."""
        if depth > 20:
            raise JuliaError(f"alias loop at {text}")
        text = text.strip()
        m = re.fullmatch(r"([A-Za-z_]\w*)\s*(?:\{(.*)\})?", text, re.S)
        if m is None:
            if re.fullmatch(r"\d+", text):
                return text
            raise JuliaError(f"cannot read the type {text!r}")
        name, args = m[1], m[2]
        if args is None:
            if name in self.aliases:
                return self.canonical(self.aliases[name], depth + 1)
            return BUILTIN.get(name, name)
        return f"{name}{{{','.join(self.canonical(a, depth + 1) for a in split_top(args))}}}"


# ---- the mapping ----------------------------------------------------------------------------------

def accepted(ctype, header, argument=False):
    """The canonical Julia spellings of the header's `ctype`."""
    if ctype.function is not None:
        return {"Ptr{Cvoid}"}
    c = header.resolve(ctype)
    if c.array is not None:
        return {f"NTuple{{{c.array},{e}}}" for e in accepted(CType(c.base), header)}
    if c.pointers == 0:
        if c.base in header.callbacks:
            return {"Ptr{Cvoid}"}
        if c.base == "char":
            return set(CHAR)
        if c.base in SCALARS:
            return {SCALARS[c.base]}
        if c.base in header.structs or c.base in header.opaque:
            return {c.base}
        raise JuliaError(f"the checker does not know the C type {c}")
    inner = accepted(CType(c.base, c.pointers - 1, c.const_base), header)
    spellings = {f"Ptr{{{i}}}" for i in inner}
    if c.base == "char" and c.pointers == 1:
        spellings.add("Cstring")
    if argument:
        spellings |= {f"Ref{{{i}}}" for i in inner}
    return spellings


def expect(spellings):
    return " or ".join(sorted(spellings))


def check(header, julia):
    problems = []
    for name, function in header.functions.items():
        calls = julia.ccalls.get(name)
        if not calls:
            problems.append(f"{name}: missing from Sdm.jl (no ccall((:{name}, libsdm), ...))")
            continue
        for ret, args, values in calls:
            if len(args) != len(function.params):
                problems.append(f"{name}: {len(args)} argument type(s) in Sdm.jl, {len(function.params)} in sdm.h")
                continue
            if values != len(args):
                problems.append(f"{name}: the ccall passes {values} value(s) for {len(args)} argument type(s)")
            got = julia.canonical(ret)
            if got not in accepted(function.ret, header):
                problems.append(f"{name}: returns {ret} in Sdm.jl; sdm.h returns {function.ret}: "
                                f"expected {expect(accepted(function.ret, header))}")
            for index, (param, arg) in enumerate(zip(function.params, args), start=1):
                spellings = accepted(param.type, header, argument=True)
                if julia.canonical(arg) not in spellings:
                    problems.append(f"{name}: argument {index} ({param.name}: {param.type}) is {arg} in Sdm.jl; "
                                    f"expected {expect(spellings)}")
    for name in sorted(set(julia.ccalls) - set(header.functions)):
        problems.append(f"{name}: Sdm.jl ccalls a function sdm.h does not declare")

    for name in header.opaque:
        if name not in julia.opaque and name not in julia.structs:
            problems.append(f"{name}: the opaque handle type is missing from Sdm.jl (mutable struct {name} end)")
    for name, fields in header.structs.items():
        if name not in julia.structs:
            problems.append(f"struct {name}: missing from Sdm.jl")
            continue
        declared = julia.fields(name)
        names = [f for f, _ in declared]
        wanted = [f.name + "_" * (f.name in JULIA_KEYWORDS) for f in fields]  # a Julia keyword takes a trailing _
        if names != wanted:
            index = next(i for i, pair in enumerate(zip(names + [None], wanted + [None])) if pair[0] != pair[1])
            problems.append(f"struct {name}: field {index + 1} is {names[index] if index < len(names) else 'missing'} "
                            f"in Sdm.jl, {wanted[index] if index < len(wanted) else 'absent'} in sdm.h "
                            f"({len(names)} fields in Sdm.jl, {len(wanted)} in sdm.h)")
            continue
        for (field_name, field_type), field in zip(declared, fields):
            spellings = accepted(field.type, header)
            if julia.canonical(field_type) not in spellings:
                problems.append(f"struct {name}: field {field_name} ({field.type}) is {field_type} in Sdm.jl; "
                                f"expected {expect(spellings)}")

    for name, value in header.constants.items():
        if julia.constants.get(name) != value:
            problems.append(f"constant {name}: {julia.constants.get(name, 'missing')} in Sdm.jl, {value} in sdm.h")
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--header", default=sdm_header.HEADER)
    parser.add_argument("--julia", default=HERE / "src" / "Sdm.jl")
    options = parser.parse_args()
    try:
        header = sdm_header.parse(options.header)
        julia = Julia(options.julia)
        problems = check(header, julia)
    except (sdm_header.HeaderError, JuliaError) as e:
        print(f"check_signatures: {e}", file=sys.stderr)
        return 1
    for problem in problems:
        print(f"check_signatures: {problem}", file=sys.stderr)
    if problems:
        print(f"check_signatures: {options.julia} differs from {options.header} in {len(problems)} place(s)",
              file=sys.stderr)
        return 1
    print(f"check_signatures: {options.julia} matches {options.header}: {len(header.functions)} functions, "
          f"{len(header.structs)} structs, {len(header.opaque)} opaque handles, {len(header.constants)} constants")
    return 0


if __name__ == "__main__":
    sys.exit(main())
