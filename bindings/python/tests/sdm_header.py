"""A model of include/sdm/sdm.h for the bindings' checks: its SDM_API functions, typedefs, structs
and enum constants, read from the header's text.

sdm.h keeps to a small C subset (ABI rules 1-3 of shared/ABI.md: fixed-width types, opaque handles,
no unions or bitfields, no function-like macros), so a few regular expressions read it whole. The
parser fails loudly on anything it does not understand rather than skip it, so that a check built
on it cannot pass by seeing nothing. Used by bindings/python/tests/test_sdm.py and
bindings/julia/check_signatures.py.
"""

import re
from dataclasses import dataclass, field
from pathlib import Path

HEADER = Path(__file__).resolve().parents[3] / "include" / "sdm" / "sdm.h"


class HeaderError(Exception):
    """The header has a construct this parser does not read."""


@dataclass(frozen=True)
class CType:
    """A C type as written, `const` dropped (neither ctypes nor ccall sees it).

    base: the type name ("int32_t", "char", "void", "sdm_runtime", "sdm_log_fn");
    pointers: the pointer depth; const_base: `const` qualifies the base ("const char*");
    array: the element count of an array field (char name[256]), else None;
    function: for a function-pointer field, its signature, else None.
    """

    base: str
    pointers: int = 0
    const_base: bool = False
    array: int | None = None
    function: "FunctionType | None" = None

    def __str__(self):
        if self.function is not None:
            return f"{self.function.ret} (*)({', '.join(str(p) for p in self.function.params)})"
        text = ("const " if self.const_base else "") + self.base + "*" * self.pointers
        return text + (f"[{self.array}]" if self.array is not None else "")


@dataclass(frozen=True)
class FunctionType:
    ret: CType
    params: tuple


@dataclass(frozen=True)
class Param:
    name: str
    type: CType


@dataclass(frozen=True)
class Function:
    name: str
    ret: CType
    params: tuple  # of Param


@dataclass(frozen=True)
class Field:
    name: str
    type: CType


@dataclass
class Header:
    functions: dict = field(default_factory=dict)   # name -> Function, in header order
    structs: dict = field(default_factory=dict)     # name -> list of Field, in declaration order
    opaque: list = field(default_factory=list)      # opaque handle types (sdm_runtime, ...)
    aliases: dict = field(default_factory=dict)     # typedef name -> CType (sdm_status -> int32_t)
    callbacks: dict = field(default_factory=dict)   # function-pointer typedefs -> FunctionType
    constants: dict = field(default_factory=dict)   # enum constants and #define numbers -> int

    def resolve(self, ctype):
        """`ctype` with scalar typedefs replaced by what they name (sdm_status -> int32_t)."""
        while ctype.base in self.aliases and ctype.array is None and ctype.function is None:
            target = self.aliases[ctype.base]
            ctype = CType(target.base, target.pointers + ctype.pointers, target.const_base or ctype.const_base)
        return ctype


def _strip_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def _split_top(text, sep=","):
    """Splits at `sep` outside parentheses."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text):
        depth += c == "("
        depth -= c == ")"
        if c == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


_FN_POINTER = re.compile(r"^(?P<ret>.+?)\(\s*\*\s*(?P<name>\w*)\s*\)\s*\((?P<params>.*)\)$", re.S)


def parse_declaration(text, named):
    """(name, CType) of one declaration: a parameter or a struct field. `named`: whether it must
    name something; None: it may (parameters of a function-pointer type)."""
    text = " ".join(text.split())
    m = _FN_POINTER.match(text)
    if m:
        return m["name"] or None, CType("", function=_function_type(m["ret"], m["params"]))
    array = None
    m = re.match(r"^(.*?)\[\s*(\d+)\s*\]$", text)
    if m:
        text, array = m[1], int(m[2])
    tokens = re.findall(r"[A-Za-z_]\w*|\*|\S", text)
    for t in tokens:
        if t != "*" and not re.fullmatch(r"[A-Za-z_]\w*", t):
            raise HeaderError(f"unexpected {t!r} in declaration {text!r}")
    star = tokens.index("*") if "*" in tokens else len(tokens)
    const_base = "const" in tokens[:star]
    tokens = [t for t in tokens if t not in ("const", "struct")]
    words = [t for t in tokens if t != "*"]
    name = None
    if named or (named is None and len(words) == 2):
        if len(words) < 2 or tokens[-1] == "*":
            raise HeaderError(f"declaration {text!r} names nothing")
        name = words.pop()
    if len(words) != 1:
        raise HeaderError(f"declaration {text!r}: expected one type name, got {words}")
    return name, CType(words[0], tokens.count("*"), const_base, array)


def _function_type(ret, params):
    _, ret_type = parse_declaration(ret, named=False)
    params = _split_top(params)
    if params == ["void"]:
        params = []
    return FunctionType(ret_type, tuple(parse_declaration(p, named=None)[1] for p in params))


def _evaluate(expr, name):
    expr = re.sub(r"\b(\d+)[uU]\b", r"\1", expr.strip())
    if not re.fullmatch(r"[\d\s()<>|+\-~]+", expr):
        raise HeaderError(f"cannot evaluate the value of {name}: {expr!r}")
    return int(eval(expr, {"__builtins__": {}}))  # digits and operators only, checked above


def parse(path=HEADER):
    raw = Path(path).read_text()
    header = Header()
    for m in re.finditer(r"^\s*#\s*define\s+(SDM_\w+)\s+(\d+)\s*$", raw, re.M):
        header.constants[m[1]] = int(m[2])
    text = _strip_comments(raw)
    text = re.sub(r"^\s*#.*$", " ", text, flags=re.M)  # preprocessor lines (SDM_API's own #define)

    for m in re.finditer(r"typedef\s+struct\s+(\w+)\s+(\w+)\s*;", text):
        if m[1] != m[2]:
            raise HeaderError(f"opaque typedef struct {m[1]} {m[2]}: the names differ")
        header.opaque.append(m[2])
    for m in re.finditer(r"typedef\s+struct\s+(\w+)\s*\{(.*?)\}\s*(\w+)\s*;", text, re.S):
        if m[1] != m[3]:
            raise HeaderError(f"typedef struct {m[1]} {{...}} {m[3]}: the names differ")
        fields = []
        for decl in m[2].split(";"):
            if decl.strip():
                name, ctype = parse_declaration(decl, named=True)
                fields.append(Field(name, ctype))
        header.structs[m[3]] = fields
    for m in re.finditer(r"typedef\s+([A-Za-z_]\w*)\s+([A-Za-z_]\w*)\s*;", text):
        if m[1] != "struct":
            header.aliases[m[2]] = CType(m[1])
    for m in re.finditer(r"typedef\s+([^;{}]*?)\(\s*\*\s*(\w+)\s*\)\s*\(([^;]*?)\)\s*;", text):
        header.callbacks[m[2]] = _function_type(m[1], m[3])
    for m in re.finditer(r"\benum\s*\{(.*?)\}\s*;", text, re.S):
        for entry in _split_top(m[1]):
            name, _, value = entry.partition("=")
            if not value:
                raise HeaderError(f"enum constant {name.strip()} has no explicit value (ABI rule 3)")
            header.constants[name.strip()] = _evaluate(value, name.strip())
    for m in re.finditer(r"\bSDM_API\s+([^;(]+?)\s*\b(sdm_\w+)\s*\(([^;]*?)\)\s*;", text, re.S):
        _, ret = parse_declaration(m[1], named=False)
        params = _split_top(m[3])
        if params == ["void"]:
            params = []
        header.functions[m[2]] = Function(m[2], ret, tuple(Param(*parse_declaration(p, named=True)) for p in params))

    # Cross-checks, so that a regular expression gone blind cannot pass for an empty header: every
    # SDM_API line became a function, and the function table lists each function but itself.
    api_lines = len(re.findall(r"\bSDM_API\b", text))
    if api_lines != len(header.functions):
        raise HeaderError(f"{path}: {api_lines} SDM_API declarations but {len(header.functions)} parsed")
    table = {f.name for f in header.structs.get("sdm_api", []) if f.type.function is not None}
    missing = {"sdm_" + n for n in table} ^ (set(header.functions) - {"sdm_get_api"})
    if not table or missing:
        raise HeaderError(f"{path}: the functions and the sdm_api table disagree: {sorted(missing)}")
    return header
