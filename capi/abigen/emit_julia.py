"""Julia: bindings/julia/src/capi.jl."""

import textwrap

from .model import NAMED_ENUMS, CType, Constant, NOTICE, SCALARS
from .textutil import collapse_blank_lines, joined, rule, walk


JULIA_KEYWORDS = {"baremodule", "begin", "break", "catch", "const", "continue", "do", "else", "elseif", "end", "export",
                  "false", "finally", "for", "function", "global", "if", "import", "let", "local", "macro", "module",
                  "quote", "return", "struct", "true", "try", "using", "while"}
JULIA_WIDTH = 120


def julia_name(name):
    return name + "_" if name in JULIA_KEYWORDS else name


def julia_type(h, ctype, argument=False):
    """Its Julia spelling; `argument`: in a ccall's signature, where a `char*` is a Cstring
    (which also takes a Ptr{UInt8} and C_NULL)."""
    if ctype.function is not None:
        return "Ptr{Cvoid}"
    if ctype.array is not None:
        return f"NTuple{{{ctype.array},{julia_type(h, ctype.element())}}}"
    if ctype.pointers:
        if argument and ctype.pointers == 1 and ctype.base == "char":
            return "Cstring"
        return f"Ptr{{{julia_type(h, ctype.pointee())}}}"
    if ctype.base == "void":
        return "Cvoid"
    return SCALARS[ctype.base].julia if ctype.base in SCALARS else ctype.base


def julia_constant(h, constant):
    if constant.name.startswith("SDM_ABI_VERSION_"):
        return str(constant.value)  # plain Ints, as abi_version() returns them
    return f"{julia_type(h, h.resolve(CType(constant.type)))}({constant.value})"


def julia_declaration(h, item):
    """The Julia lines of one declaration of sdm.h."""
    if isinstance(item, Constant):
        named = any(item in h.enum(n.first) for n in NAMED_ENUMS)  # a status, an image kind or source: its meaning
        comment = [f"# {line}" for line in textwrap.wrap(item.doc, JULIA_WIDTH - 2)] if named else []
        return comment + [f"const {item.name} = {julia_constant(h, item)}"]
    if item in h.aliases:
        return [f"const {item} = {julia_type(h, h.aliases[item])}"]
    if item in h.opaque:
        return ["", "# Opaque: only ever behind a Ptr.", f"mutable struct {item} end", ""]
    if item in h.callbacks:
        return ["", f"# {CType('', function=h.callbacks[item])}", f"const {item} = Ptr{{Cvoid}}", ""]
    lines = ["", f"struct {item}"]
    for f in h.structs[item].fields:
        comment = f"  # `{f.name}`, a Julia keyword" if julia_name(f.name) != f.name else ""
        lines.append(f"    {julia_name(f.name)}::{julia_type(h, f.type)}{comment}")
    return lines + ["end", ""]


def emit_julia(h):
    out = [f"# {NOTICE}", "#",
           "# The raw C ABI, one to one, included by Sdm.jl (which defines `libsdm`): every constant a `const`,",
           "# every struct an isbits struct with the header's fields in order (a field named like a Julia keyword",
           "# takes a trailing `_`), every opaque handle a `mutable struct`, and every SDM_API function a Julia",
           "# function of the same name around one `ccall`."]
    declarations, functions = walk(h, lambda item: julia_declaration(h, item),
                                   lambda title: ["", rule("#", title, width=JULIA_WIDTH - 20), ""] if title else [""])
    out += declarations
    out += ["", rule("#", "functions: one per SDM_API function", width=JULIA_WIDTH - 20), ""]
    out += joined(functions, lambda function: julia_function(h, function))
    return "\n".join(collapse_blank_lines(out)) + "\n"


def julia_function(h, function):
    names = [julia_name(p.name) for p in function.params]
    types = [julia_type(h, p.type, argument=True) for p in function.params]
    ret = julia_type(h, function.ret, argument=True)
    signature = "(" + ", ".join(types) + ("," if len(types) == 1 else "") + ")"
    values = "".join(", " + n for n in names)
    head = f"{function.name}({', '.join(names)}) ="
    call = f"ccall((:{function.name}, libsdm), {ret}, {signature}{values})"
    if len(f"{head} {call}") <= JULIA_WIDTH:
        return [f"{head} {call}"]
    if len(f"    {call}") <= JULIA_WIDTH:
        return [head, f"    {call}"]
    tail = f"          {signature}{values})"
    if len(tail) <= JULIA_WIDTH:
        return [head, f"    ccall((:{function.name}, libsdm), {ret},", tail]
    return [head, f"    ccall((:{function.name}, libsdm), {ret},", f"          {signature},", f"          {', '.join(names)})"]

