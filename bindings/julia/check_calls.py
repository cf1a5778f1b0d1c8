#!/usr/bin/env python3
"""Checks the hand-written layer of bindings/julia/src/Sdm.jl against include/sdm/sdm.h, without
a Julia toolchain.

The raw layer, src/capi.jl, is generated from the header by capi/gen_abi.py (and its --check
test keeps it current), so its ccalls are right by construction. No Julia runs the layer above
it here, and Julia reports a wrong call only when it is made, so this checks, mechanically:
- Sdm.jl includes capi.jl, makes no `ccall` of its own and defines no `sdm_*` function (every
  C call goes through the generated layer);
- every call of a raw function passes as many arguments as the C function takes, every call of
  a struct's constructor one per field, and every other `sdm_*(...)` call names a type of the
  header;
- every `sized(T; name = value, ...)` names a struct of the header and only its fields (`sized`
  would ignore a misspelt one).
Exits 1 listing each problem with its line, 0 with a one-line summary.

Usage: python3 bindings/julia/check_calls.py [--julia PATH]
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


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--julia", default=HERE / "src" / "Sdm.jl")
    options = parser.parse_args()
    try:
        header = reader.read_header(model.HEADER)
        problems = check(header, options.julia)
    except (model.AbiError, JuliaError) as e:
        print(f"check_calls: {e}", file=sys.stderr)
        return 1
    for problem in problems:
        print(f"check_calls: {options.julia}:{problem}", file=sys.stderr)
    if problems:
        print(f"check_calls: {options.julia} calls the raw layer wrongly in {len(problems)} place(s)", file=sys.stderr)
        return 1
    print(f"check_calls: {options.julia} calls capi.jl as sdm.h declares ({len(header.functions)} functions, "
          f"{len(header.structs)} structs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
