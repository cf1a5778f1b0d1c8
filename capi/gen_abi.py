#!/usr/bin/env python3
"""Writes every file that restates sdm's C ABI, from include/sdm/sdm.h: the header is the one
description of the ABI, and everything below is derived from it.

    python3 capi/gen_abi.py           # (re)writes the files
    python3 capi/gen_abi.py --check   # writes nothing; exit 1 naming each file that is stale

Exit status: 0 written, or up to date; 1 (--check) stale files; 2 the header breaks a rule below
(the message names the line and the fix), or a layout probe failed. Standard library only; the
probes need a C compiler (--cc, else $CC, else cc).

Written from sdm.h (and include/sdm/sdm_testing.h, for the two test-only exports):
  capi/api_table.inc                      the initializer of sdm_get_api's table (capi.cpp)
  capi/libsdm.map                         the linker version script
  tests/abi/symbols.txt                   the exports, compared with `nm` by check_symbols.sh
  tests/abi/layout.c                      the layout and value pins (numbers: see "Pins" below)
  bindings/rust/sdm-sys/src/sdm_h.rs      the sys crate's declarations and layout tests
  bindings/python/sdm/_sdm_h.py           the ctypes declarations
  bindings/julia/src/capi.jl              the raw ccall layer
  bindings/go/internal/rawabi/rawabi.go   the structs cgo is asked about, and their pins

How the header is read. sdm.h keeps to a small C subset (docs/ABI.md, ABI rules 1-4), and
anything outside it is an error naming its line, never skipped:
- Preprocessor: the include guard, #include of <stdbool.h>/<stddef.h>/<stdint.h> (sdm_testing.h:
  "sdm.h"), the `extern "C"` lines under #ifdef __cplusplus, the SDM_API export-macro block, and
  `#define SDM_NAME <decimal>` constants, which bind as uint32_t (the version numbers).
- `typedef <fixed-width type> NAME;` (a scalar typedef); `typedef struct NAME NAME;` (an opaque
  handle); `typedef struct NAME {fields} NAME;` (a struct, whose first field is
  `uint32_t struct_size`); `typedef RET (*NAME)(params);` (a callback type).
- `enum { NAME = VALUE, ... };` with every value explicit, written N, -N or N << M (a `u` suffix
  allowed). An enum right after a scalar typedef (comments between are fine) holds that type's
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
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HEADER = ROOT / "include" / "sdm" / "sdm.h"
TESTING_HEADER = ROOT / "include" / "sdm" / "sdm_testing.h"
RELEASED = ROOT / "tests" / "abi" / "released"
COMMAND = "python3 capi/gen_abi.py"
NOTICE = f"Generated by capi/gen_abi.py from include/sdm/sdm.h: do not edit by hand; run `{COMMAND}`."
TABLE = "sdm_api"


class AbiError(Exception):
    """The header breaks a rule of this generator, or a probe failed; the message says where and
    what to do."""


def header_error(path, line, message):
    return AbiError(f"{display(path)}:{line}: {message}")


def display(path):
    path = Path(path)
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


# ---- the model -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Scalar:
    """A C scalar type: its LP64 size (= its alignment), and its spelling in each binding."""

    size: int
    rust: str
    julia: str
    ctypes: str
    integer: bool = True


SCALARS = {
    "int8_t": Scalar(1, rust="i8", julia="Int8", ctypes="c_int8"),
    "uint8_t": Scalar(1, rust="u8", julia="UInt8", ctypes="c_uint8"),
    "int16_t": Scalar(2, rust="i16", julia="Int16", ctypes="c_int16"),
    "uint16_t": Scalar(2, rust="u16", julia="UInt16", ctypes="c_uint16"),
    "int32_t": Scalar(4, rust="i32", julia="Int32", ctypes="c_int32"),
    "uint32_t": Scalar(4, rust="u32", julia="UInt32", ctypes="c_uint32"),
    "int64_t": Scalar(8, rust="i64", julia="Int64", ctypes="c_int64"),
    "uint64_t": Scalar(8, rust="u64", julia="UInt64", ctypes="c_uint64"),
    "size_t": Scalar(8, rust="usize", julia="Csize_t", ctypes="c_size_t"),
    "float": Scalar(4, rust="f32", julia="Float32", ctypes="c_float", integer=False),
    "double": Scalar(8, rust="f64", julia="Float64", ctypes="c_double", integer=False),
    "char": Scalar(1, rust="c_char", julia="UInt8", ctypes="c_char"),
}
POINTER_SIZE = 8  # LP64


@dataclass(frozen=True)
class FunctionType:
    ret: "CType"
    params: tuple  # of Param (names may be None: the table's members name none)


@dataclass(frozen=True)
class CType:
    """A C type. const[0]: the base type is const; const[i]: the i-th `*` is (`* const`); so
    `void* const*` is base "void", const (False, True, False). array: the element count of an
    array field. function: the signature of a function-pointer field (base "")."""

    base: str
    const: tuple = (False,)
    array: int | None = None
    function: FunctionType | None = None

    @property
    def pointers(self):
        return len(self.const) - 1

    def pointee(self):
        """The type one `*` refers to."""
        return CType(self.base, self.const[:-1])

    def element(self):
        return CType(self.base, self.const)

    def __str__(self):
        if self.function is not None:
            return f"{self.function.ret} (*)({', '.join(str(p.type) for p in self.function.params)})"
        text = ("const " if self.const[0] else "") + self.base
        for const in self.const[1:]:
            text += "* const" if const else "*"
        return text + (f"[{self.array}]" if self.array is not None else "")


@dataclass(frozen=True)
class Param:
    name: str | None
    type: CType


@dataclass(frozen=True)
class Field:
    name: str
    type: CType
    minor: int  # the ABI minor that added it (its marker)
    line: int


@dataclass
class Struct:
    name: str
    fields: list
    line: int

    def field(self, name):
        return next((f for f in self.fields if f.name == name), None)


@dataclass(frozen=True)
class Constant:
    name: str
    value: int
    expr: str   # the value as written, without suffixes: "1 << 2", "-1", "18"
    type: str   # its C type: a scalar typedef's name, or uint32_t
    line: int


@dataclass(frozen=True)
class Function:
    name: str
    ret: CType
    params: tuple  # of Param
    line: int
    testing: bool = False


@dataclass(frozen=True)
class Section:
    title: str


@dataclass
class Header:
    """What one header declares; `items` in header order (Section, Constant, str (the name of a
    scalar typedef, opaque handle, callback or struct), Function)."""

    path: Path
    items: list = field(default_factory=list)
    constants: dict = field(default_factory=dict)  # name -> Constant
    aliases: dict = field(default_factory=dict)    # scalar typedef -> CType
    opaque: list = field(default_factory=list)
    callbacks: dict = field(default_factory=dict)  # name -> FunctionType
    structs: dict = field(default_factory=dict)    # name -> Struct
    functions: dict = field(default_factory=dict)  # name -> Function
    minors: dict = field(default_factory=dict)     # function name -> the ABI minor that added it

    @property
    def major(self):
        return self.constants["SDM_ABI_VERSION_MAJOR"].value

    @property
    def minor(self):
        return self.constants["SDM_ABI_VERSION_MINOR"].value

    def resolve(self, ctype):
        """`ctype` with a scalar typedef replaced by what it names (sdm_status -> int32_t)."""
        if ctype.base in self.aliases and ctype.array is None:
            return CType(self.aliases[ctype.base].base, ctype.const, ctype.array)
        return ctype

    def known(self, name):
        return (name in SCALARS or name == "void" or name in self.aliases or name in self.opaque
                or name in self.callbacks or name in self.structs)

    def table(self):
        """The function table's function members, in order."""
        return [f for f in self.structs[TABLE].fields if f.type.function is not None]


# ---- reading a header ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Token:
    kind: str   # ident, number, string, punct, comment, directive
    text: str
    line: int
    own_line: bool = False  # a comment with nothing but blanks before it on its line

    @property
    def body(self):
        """A comment's text without its delimiters and the leading `*` of continuation lines."""
        text = self.text[2:-2] if self.text.startswith("/*") else self.text[2:]
        return " ".join(re.sub(r"^\s*\*(?!/)", "", line).strip() for line in text.splitlines()).strip()


_TOKEN = re.compile(r"""(?P<comment>/\*.*?\*/|//[^\n]*)
                      | (?P<ident>[A-Za-z_]\w*)
                      | (?P<number>(?:0[xX][0-9a-fA-F]+|\d+)[uU]?)
                      | (?P<string>"[^"\n]*")
                      | (?P<punct><<|[{}()\[\];,*=|\-~+])
                      | (?P<space>\s+)""", re.S | re.X)
_DIRECTIVE = re.compile(r"[ \t]*#[^\n]*")


def tokenize(path, text):
    tokens, pos, line = [], 0, 1
    while pos < len(text):
        line_start = text.rfind("\n", 0, pos) + 1
        at_line_start = not text[line_start:pos].strip()
        m = _DIRECTIVE.match(text, pos) if at_line_start else None
        if m:
            directive = re.sub(r"/\*.*?\*/|//.*", "", m.group()).strip()
            if directive.endswith("\\"):
                raise header_error(path, line, "a preprocessor line continued with `\\`: write it on one line")
            tokens.append(Token("directive", " ".join(directive.split()), line))
            pos = m.end()
            continue
        m = _TOKEN.match(text, pos)
        if m is None:
            raise header_error(path, line, f"unexpected character {text[pos]!r}")
        if m.lastgroup != "space":
            tokens.append(Token(m.lastgroup, m.group(), line, m.lastgroup == "comment" and at_line_start))
        line += m.group().count("\n")
        pos = m.end()
    return tokens


_STANDARD_INCLUDES = {"<stdbool.h>", "<stddef.h>", "<stdint.h>"}


def strip_preprocessor(path, tokens, header):
    """The tokens without the preprocessor structure sdm's headers use (guard, includes,
    extern "C", the SDM_API block); `#define SDM_NAME <decimal>` becomes a constant of `header`."""
    out, i = [], 0
    directives = [t for t in tokens if t.kind == "directive"]
    guard = re.fullmatch(r"#ifndef (\w+)", directives[0].text) if directives else None
    if guard is None or len(directives) < 2 or directives[1].text != f"#define {guard[1]}":
        raise header_error(path, 1, "expected an include guard (#ifndef NAME / #define NAME) first")
    if directives[-1].text != "#endif" or any(t.kind != "comment" for t in tokens[tokens.index(directives[-1]) + 1:]):
        raise header_error(path, directives[-1].line, "expected the include guard's #endif last")
    body = tokens[tokens.index(directives[1]) + 1:tokens.index(directives[-1])]

    def expect(index, texts, what):
        got = [t.text for t in body[index:index + len(texts)]]
        if got != texts:
            line = body[index].line if index < len(body) else body[-1].line
            raise header_error(path, line, f"expected {what}, found {' '.join(got) or 'the end'}")
        return index + len(texts)

    while i < len(body):
        t = body[i]
        if t.kind != "directive":
            out.append(t)
            i += 1
            continue
        text = t.text
        if m := re.fullmatch(r"#include (<[\w.]+>|\"sdm\.h\")", text):
            if m[1] not in _STANDARD_INCLUDES and m[1] != '"sdm.h"':
                raise header_error(path, t.line, f"{text}: sdm's headers include only {', '.join(sorted(_STANDARD_INCLUDES))} (ABI rule 1)")
            i += 1
        elif text == "#ifdef __cplusplus":
            if [b.text for b in body[i + 1:i + 4]] == ["extern", '"C"', "{"]:
                i = expect(i + 4, ["#endif"], "#endif after extern \"C\" {")
            else:
                i = expect(i + 1, ["}", "#endif"], "extern \"C\" { or } under #ifdef __cplusplus")
        elif text == "#if defined(SDM_BUILDING_LIBRARY) && defined(__GNUC__)":
            if not body[i + 1].text.startswith("#define SDM_API "):
                raise header_error(path, body[i + 1].line, "expected #define SDM_API ... in the export-macro block")
            i = expect(i + 2, ["#else", "#define SDM_API", "#endif"], "the export-macro block's #else, #define SDM_API, #endif")
        elif m := re.fullmatch(r"#define (SDM_\w+) (\d+)", text):
            add_constant(header, Constant(m[1], int(m[2]), m[2], "uint32_t", t.line))
            header.items.append(header.constants[m[1]])
            i += 1
        else:
            raise header_error(path, t.line, f"gen_abi.py does not understand `{text}`: sdm.h's preprocessor lines are the "
                               "guard, the standard includes, extern \"C\", the SDM_API block and #define SDM_NAME <decimal>")
    return out


def add_constant(header, constant):
    if constant.name in header.constants:
        raise header_error(header.path, constant.line, f"{constant.name} is defined twice")
    header.constants[constant.name] = constant


class Reader:
    """Reads the declarations of one header (preprocessor lines already gone)."""

    def __init__(self, header, tokens, base=None):
        self.h, self.tokens, self.i = header, tokens, 0
        self.base = base  # the header this one includes (sdm_testing.h: sdm.h), for its types

    def error(self, line, message):
        return header_error(self.h.path, line, message)

    def known(self, name):
        return self.h.known(name) or (self.base is not None and self.base.known(name))

    def statement(self):
        """The tokens up to the next `;` outside braces, the `;` excluded, comments kept."""
        start, depth = self.i, 0
        while self.i < len(self.tokens):
            t = self.tokens[self.i]
            self.i += 1
            if t.kind == "punct" and t.text in "{}":
                depth += 1 if t.text == "{" else -1
            elif t.text == ";" and depth == 0:
                return self.tokens[start:self.i - 1]
        raise self.error(self.tokens[start].line, f"the declaration starting with `{self.tokens[start].text}` has no `;`")

    def read(self):
        enum_type = None  # the scalar typedef just read: an enum right after it holds its values
        while self.i < len(self.tokens):
            t = self.tokens[self.i]
            if t.kind == "comment":
                title = re.fullmatch(r"-{3,}\s*(.*?)\s*-{3,}", t.body)
                if title and t.own_line:
                    self.h.items.append(Section(title[1]))
                self.i += 1
                continue
            statement = self.statement()
            words = [x for x in statement if x.kind != "comment"]
            if words[0].text == "typedef":
                enum_type = self.typedef(words, statement)
            elif words[0].text == "enum":
                self.enum(words, enum_type)
                enum_type = None
            elif words[0].text == "SDM_API":
                self.function(words)
                enum_type = None
            else:
                raise self.error(t.line, f"gen_abi.py does not understand the declaration `{' '.join(w.text for w in words[:6])} ...`: "
                                 "sdm.h declares typedefs, enums and SDM_API functions only (capi/gen_abi.py lists the forms)")

    # -- typedefs --

    def typedef(self, words, statement):
        texts = [w.text for w in words]
        line = words[0].line
        if texts[1] == "struct" and "{" in texts:
            return self.struct(words, statement)
        if texts[1] == "struct":
            if len(texts) != 4 or texts[2] != texts[3]:
                raise self.error(line, f"`{' '.join(texts)}`: an opaque handle is `typedef struct NAME NAME;`")
            self.h.opaque.append(texts[2])
            self.h.items.append(texts[2])
            return None
        if "(" in texts:
            name, ctype = self.declaration(words[1:], named=True)
            if ctype.function is None:
                raise self.error(line, f"`{' '.join(texts)}`: a callback type is `typedef RET (*NAME)(params);`")
            self.h.callbacks[name] = ctype.function
            self.h.items.append(name)
            return None
        if len(texts) != 3 or texts[1] not in SCALARS or not SCALARS[texts[1]].integer:
            raise self.error(line, f"`{' '.join(texts)}`: a typedef names a fixed-width integer type (ABI rule 3), "
                             "an opaque struct, a struct or a callback")
        self.h.aliases[texts[2]] = CType(texts[1])
        self.h.items.append(texts[2])
        return texts[2]

    def struct(self, words, statement):
        texts = [w.text for w in words]
        line = words[0].line
        name = texts[2]
        if texts[3] != "{" or texts[-2] != "}" or texts[-1] != name:
            raise self.error(line, f"struct {name}: write it `typedef struct {name} {{ ... }} {name};`")
        # The body with its comments, for the minor markers: between the `{` and the last `}`.
        opening = next(k for k, t in enumerate(statement) if t.text == "{")
        closing = max(k for k, t in enumerate(statement) if t.text == "}")
        body = statement[opening + 1:closing]
        self.h.structs[name] = struct = Struct(name, [], line)  # known inside (sdm_chain's `next`)
        minor, pending = 0, []
        for t in body + [Token("punct", ";", line)]:
            if t.kind == "comment":
                marker = re.match(r"ABI (\d+)\.(\d+)\b", t.body)
                if marker and t.own_line:
                    minor = self.marker(name, t, int(marker[1]), int(marker[2]), minor)
            elif t.text == ";":
                if pending:
                    field_name, ctype = self.declaration(pending, named=True)
                    if struct.field(field_name):
                        raise self.error(pending[0].line, f"{name}.{field_name} is declared twice")
                    struct.fields.append(Field(field_name, ctype, minor, pending[0].line))
                pending = []
            else:
                pending.append(t)
        first = struct.fields[0] if struct.fields else None
        if first is None or first.name != "struct_size" or first.type != CType("uint32_t"):
            raise self.error(line, f"struct {name} must start with `uint32_t struct_size;` (ABI rule 4)")
        self.h.items.append(name)
        return None

    def marker(self, struct, token, major, minor, previous):
        if major != self.h.major:
            raise self.error(token.line, f"`{token.text}` in {struct}: ABI {major}.{minor} is not of this header's major {self.h.major}")
        if minor <= previous:
            raise self.error(token.line, f"`{token.text}` in {struct}: the minors of a struct's markers must rise (after 1.{previous})")
        if minor > self.h.minor:
            raise self.error(token.line, f"`{token.text}` in {struct}: newer than SDM_ABI_VERSION_MINOR ({self.h.minor}); "
                             f"raise SDM_ABI_VERSION_MINOR to {minor} with the first addition of ABI {major}.{minor}")
        return minor

    # -- enums --

    def enum(self, words, enum_type):
        texts = [w.text for w in words]
        line = words[0].line
        if texts[1] != "{" or texts[-1] != "}":
            raise self.error(line, "an enum is `enum { NAME = VALUE, ... };`, anonymous (its type is the int32_t typedef "
                             "before it, or uint32_t for flags)")
        entries, current = [], []
        for w in words[2:-1]:
            if w.text == ",":
                entries.append(current)
                current = []
            else:
                current.append(w)
        if current:
            entries.append(current)
        for entry in entries:
            if len(entry) < 3 or entry[0].kind != "ident" or entry[1].text != "=":
                raise self.error(entry[0].line, f"enum constant {entry[0].text} needs an explicit value (ABI rule 3)")
            value, expr, unsigned = self.value(entry[0], entry[2:])
            if enum_type is None and not unsigned:
                raise self.error(entry[0].line, f"{entry[0].text}: an enum that does not follow a `typedef int32_t NAME;` "
                                 "is a set of flags: write its values unsigned (`1u << 0`), as they bind as uint32_t")
            constant = Constant(entry[0].text, value, expr, enum_type or "uint32_t", entry[0].line)
            add_constant(self.h, constant)
            self.h.items.append(constant)

    def value(self, name, tokens):
        texts = [t.text for t in tokens]
        numbers = [re.fullmatch(r"(0[xX][0-9a-fA-F]+|\d+)([uU]?)", t) for t in texts]
        unsigned = any(m and m[2] for m in numbers)
        if len(texts) == 1 and numbers[0]:
            return int(numbers[0][1], 0), numbers[0][1], unsigned
        if len(texts) == 2 and texts[0] == "-" and numbers[1]:
            return -int(numbers[1][1], 0), "-" + numbers[1][1], unsigned
        if len(texts) == 3 and numbers[0] and texts[1] == "<<" and numbers[2]:
            return int(numbers[0][1], 0) << int(numbers[2][1], 0), f"{numbers[0][1]} << {numbers[2][1]}", unsigned
        raise self.error(name.line, f"{name.text} = {' '.join(texts)}: gen_abi.py reads values written N, -N or N << M")

    # -- functions and declarations --

    def function(self, words):
        line = words[0].line
        texts = [w.text for w in words]
        if "(" not in texts:
            raise self.error(line, f"`{' '.join(texts)}`: SDM_API declares functions only")
        open_paren = texts.index("(")
        name = texts[open_paren - 1]
        if texts[-1] != ")" or not name.startswith("sdm_"):
            raise self.error(line, f"`{' '.join(texts)}`: expected SDM_API RET sdm_NAME(params);")
        if name in self.h.functions:
            raise self.error(line, f"{name} is declared twice")
        ret = self.type(words[1:open_paren - 1], line)
        params = self.params(words[open_paren + 1:-1], line, named=True)
        self.h.functions[name] = Function(name, ret, params, line)
        self.h.items.append(self.h.functions[name])

    def params(self, words, line, named):
        groups, current, depth = [], [], 0
        for w in words:
            depth += (w.text == "(") - (w.text == ")")
            if w.text == "," and depth == 0:
                groups.append(current)
                current = []
            else:
                current.append(w)
        groups.append(current)
        if [[w.text for w in g] for g in groups] == [["void"]]:
            return ()
        if any(not g for g in groups):
            raise self.error(line, "an empty parameter: write (void) for none")
        return tuple(Param(*self.declaration(g, named)) for g in groups)

    def declaration(self, words, named):
        """(name, CType) of a field, a parameter or a callback typedef. named: True, the name is
        required; None, it may be left out (the table's members)."""
        texts = [w.text for w in words]
        line = words[0].line
        if "(" in texts:
            k = texts.index("(")
            close = texts.index(")", k)
            inner = texts[k + 1:close]
            if not inner or inner[0] != "*" or len(inner) > 2 or texts[close + 1:close + 2] != ["("] or texts[-1] != ")":
                raise self.error(line, f"`{' '.join(texts)}`: a function pointer is written RET (*NAME)(params)")
            name = inner[1] if len(inner) == 2 else None
            if named and name is None:
                raise self.error(line, f"`{' '.join(texts)}` names nothing")
            ret = self.type(words[:k], line)
            params = self.params(words[close + 2:-1], line, named=None)
            return name, CType("", function=FunctionType(ret, params))
        array = None
        if texts[-1] == "]":
            if len(texts) < 4 or texts[-3] != "[" or not re.fullmatch(r"\d+", texts[-2]):
                raise self.error(line, f"`{' '.join(texts)}`: an array field is TYPE NAME[N]")
            array, words, texts = int(texts[-2]), words[:-3], texts[:-3]
        identifiers = [t for t in texts if t not in ("const", "struct", "*")]
        name = None
        if named or (named is None and len(identifiers) == 2):
            if len(identifiers) != 2 or texts[-1] != identifiers[-1]:
                raise self.error(line, f"`{' '.join(texts)}`: a field or a parameter is written TYPE NAME (every "
                                 "parameter of an SDM_API function is named, for the bindings)")
            name, words = texts[-1], words[:-1]
        ctype = self.type(words, line)
        return name, CType(ctype.base, ctype.const, array)

    def type(self, words, line):
        texts = [w.text for w in words]
        i, base_const = 0, False
        if texts[i:i + 1] == ["const"]:
            base_const, i = True, i + 1
        if texts[i:i + 1] == ["struct"]:
            i += 1
        if i >= len(texts) or not re.fullmatch(r"[A-Za-z_]\w*", texts[i]):
            raise self.error(line, f"`{' '.join(texts)}`: expected a type")
        base = texts[i]
        i += 1
        if texts[i:i + 1] == ["const"]:
            base_const, i = True, i + 1
        const = [base_const]
        for t in texts[i:]:
            if t == "*":
                const.append(False)
            elif t == "const" and len(const) > 1:
                const[-1] = True
            else:
                raise self.error(line, f"`{' '.join(texts)}`: unexpected `{t}` (ABI rule 3: fixed-width types, no `long`, "
                                 "`unsigned`, bitfields or unions)")
        if not self.known(base):
            raise self.error(line, f"unknown type `{base}`: sdm.h uses the fixed-width types of <stdint.h>, size_t, float, double, "
                             "char, void and its own typedefs, each declared before its use")
        return CType(base, tuple(const))


def read_header(path, base=None, testing=False):
    """The Header of sdm.h (or of a released copy; `base`: the header sdm_testing.h includes)."""
    header = Header(Path(path))
    try:
        text = Path(path).read_text()
    except OSError as e:
        raise AbiError(f"cannot read {display(path)}: {e.strerror}") from e
    tokens = strip_preprocessor(header.path, tokenize(header.path, text), header)
    if base is None:
        for name in ("SDM_ABI_VERSION_MAJOR", "SDM_ABI_VERSION_MINOR"):
            if name not in header.constants:
                raise header_error(path, 1, f"no #define {name}")
    Reader(header, tokens, base).read()
    if testing:
        if header.structs or header.aliases or header.opaque or header.callbacks or header.constants:
            raise header_error(path, 1, "sdm_testing.h declares functions only: gen_abi.py exports them and binds nothing else")
        header.functions = {n: Function(f.name, f.ret, f.params, f.line, testing=True) for n, f in header.functions.items()}
        return header
    check_table(header)
    return header


def check_table(header):
    """The function table lists every function but sdm_get_api, each with its exact type; each
    function takes its member's minor."""
    path = header.path
    table = header.structs.get(TABLE)
    if table is None:
        raise header_error(path, 1, f"no struct {TABLE} (the function table of sdm_get_api)")
    plain = [f for f in table.fields if f.type.function is None]
    if [(f.name, f.type) for f in plain] != [("struct_size", CType("uint32_t")), ("abi_minor", CType("uint32_t"))]:
        raise header_error(path, table.line, f"{TABLE}'s members are uint32_t struct_size, uint32_t abi_minor, then function "
                           "pointers only (gen_abi.py fills struct_size and abi_minor)")
    if table.fields[:2] != plain:
        raise header_error(path, table.line, f"{TABLE} starts with struct_size and abi_minor")
    for member in header.table():
        function = header.functions.get("sdm_" + member.name)
        if function is None:
            raise header_error(path, member.line, f"{TABLE}.{member.name} has no function sdm_{member.name}: declare it "
                               "with SDM_API before the table")
        want = FunctionType(function.ret, tuple(Param(None, p.type) for p in function.params))
        if member.type.function != want:
            raise header_error(path, member.line, f"{TABLE}.{member.name} is {member.type}, but sdm_{member.name} is "
                               f"{CType('', function=want)}: write the member with the function's exact type")
        header.minors[function.name] = member.minor
    header.minors["sdm_get_api"] = 0
    missing = [f for f in header.functions.values() if f.name not in header.minors]
    if missing:
        raise header_error(path, missing[0].line, f"{missing[0].name} is not in {TABLE}: append `{missing[0].name[4:]}` to "
                           "the table, below the marker of the minor that adds it")
    if "sdm_get_api" not in header.functions:
        raise header_error(path, 1, "no sdm_get_api")


# ---- layouts -------------------------------------------------------------------------------------

@dataclass
class Layout:
    size: int
    align: int
    fields: dict  # name -> (offset, size)


def lp64_size_align(header, ctype):
    if ctype.array is not None:
        size, align = lp64_size_align(header, ctype.element())
        return size * ctype.array, align
    if ctype.function is not None or ctype.pointers or ctype.base in header.callbacks:
        return POINTER_SIZE, POINTER_SIZE
    ctype = header.resolve(ctype)
    if ctype.base in SCALARS:
        return SCALARS[ctype.base].size, SCALARS[ctype.base].size
    if ctype.base in header.structs:
        layout = lp64_layout(header, header.structs[ctype.base])
        return layout.size, layout.align
    raise AbiError(f"{display(header.path)}: `{ctype}` has no size (an opaque handle or void by value)")


def lp64_layout(header, struct):
    offset, align, fields = 0, 1, {}
    for f in struct.fields:
        size, field_align = lp64_size_align(header, f.type)
        offset = (offset + field_align - 1) // field_align * field_align
        fields[f.name] = (offset, size)
        offset += size
        align = max(align, field_align)
    return Layout((offset + align - 1) // align * align, align, fields)


@dataclass
class Probe:
    """What the C compiler says of a header: constant values, scalar typedef and struct layouts."""

    values: dict   # name -> int
    scalars: dict  # name -> (size, align)
    structs: dict  # name -> Layout


def probe(header, include_dir, cc):
    lines = ["#include <stdio.h>", "#include <stddef.h>", "#include <sdm/sdm.h>", "",
             "#if !(defined(__LP64__) && (defined(__x86_64__) || defined(__aarch64__)))",
             '#error "the pins are LP64 numbers (x86_64 and aarch64 Linux): run capi/gen_abi.py there"',
             "#endif", "", "int main(void) {"]
    for name in header.constants:
        lines.append(f'    printf("value {name} %lld\\n", (long long)({name}));')
    for name in header.aliases:
        lines.append(f'    printf("scalar {name} %zu %zu\\n", sizeof({name}), _Alignof({name}));')
    for struct in header.structs.values():
        lines.append(f'    printf("struct {struct.name} %zu %zu\\n", sizeof({struct.name}), _Alignof({struct.name}));')
        for f in struct.fields:
            lines.append(f'    printf("field {struct.name} {f.name} %zu %zu\\n", offsetof({struct.name}, {f.name}), '
                         f'sizeof((({struct.name}*)0)->{f.name}));')
    lines += ["    return 0;", "}", ""]
    with tempfile.TemporaryDirectory(prefix="gen_abi.") as tmp:
        source, program = Path(tmp) / "probe.c", Path(tmp) / "probe"
        source.write_text("\n".join(lines))
        command = cc + ["-std=c11", "-Wall", "-Werror", "-I", str(include_dir), "-o", str(program), str(source)]
        try:
            built = subprocess.run(command, capture_output=True, text=True)
        except OSError as e:
            raise AbiError(f"cannot run the C compiler {cc[0]!r} ({e.strerror}): pass --cc or set CC") from e
        if built.returncode != 0:
            raise AbiError(f"the layout probe of {display(header.path)} does not compile ({shlex.join(command)}):\n{built.stderr}")
        ran = subprocess.run([str(program)], capture_output=True, text=True)
        if ran.returncode != 0:
            raise AbiError(f"the layout probe of {display(header.path)} failed (exit {ran.returncode}): {ran.stderr}")
    result = Probe({}, {}, {})
    for line in ran.stdout.splitlines():
        kind, *rest = line.split()
        if kind == "value":
            result.values[rest[0]] = int(rest[1])
        elif kind == "scalar":
            result.scalars[rest[0]] = (int(rest[1]), int(rest[2]))
        elif kind == "struct":
            result.structs[rest[0]] = Layout(int(rest[1]), int(rest[2]), {})
        else:
            result.structs[rest[0]].fields[rest[1]] = (int(rest[2]), int(rest[3]))
    return result


def check_reading(header, measured):
    """The parser's reading of the header agrees with the compiler's: a field or value misread
    or skipped shows here."""
    for name, constant in header.constants.items():
        if measured.values[name] != constant.value:
            raise header_error(header.path, constant.line, f"{name}: read as {constant.value}, the compiler says "
                               f"{measured.values[name]}: gen_abi.py misreads this value")
    for struct in header.structs.values():
        computed, compiled = lp64_layout(header, struct), measured.structs[struct.name]
        if (computed.size, computed.align, computed.fields) != (compiled.size, compiled.align, compiled.fields):
            raise header_error(header.path, struct.line, f"struct {struct.name}: read as {computed}, the compiler lays it "
                               f"out as {compiled}: gen_abi.py misreads a field of it")


# ---- pins ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Pin:
    name: str
    numbers: tuple
    released: bool  # from the released header; else from sdm.h (the minor in development)
    minor: int = 0  # a field's minor (its marker in sdm.h)
    note: str = ""


@dataclass
class StructPins:
    name: str
    fields: list
    size: Pin


@dataclass
class Pins:
    release: str    # "1.1"
    values: list    # of Pin (numbers: (value,))
    scalars: list   # of Pin (numbers: (size, align))
    structs: list   # of StructPins


def newest_release(header):
    versions = []
    for directory in RELEASED.iterdir() if RELEASED.is_dir() else []:
        m = re.fullmatch(r"(\d+)\.(\d+)", directory.name)
        if m and (directory / "sdm" / "sdm.h").is_file() and int(m[1]) == header.major:
            versions.append((int(m[2]), directory))
    if not versions:
        raise AbiError(f"no released header of ABI {header.major}.x in {display(RELEASED)}/<major>.<minor>/sdm/sdm.h: "
                       "the pins are taken from the newest one")
    minor, directory = max(versions)
    return f"{header.major}.{minor}", minor, directory


def compute_pins(current, measured, cc):
    release, release_minor, directory = newest_release(current)
    released = read_header(directory / "sdm" / "sdm.h")
    if (released.major, released.minor) != (current.major, release_minor):
        raise AbiError(f"{display(directory)}/sdm/sdm.h declares ABI {released.major}.{released.minor}, not {release}")
    if current.minor not in (release_minor, release_minor + 1):
        raise header_error(current.path, current.constants["SDM_ABI_VERSION_MINOR"].line,
                           f"SDM_ABI_VERSION_MINOR is {current.minor}, the newest release {release}: it is the released minor or the "
                           f"next one (copy the header of {current.major}.{current.minor - 1} to {display(RELEASED)} first)")
    old = probe(released, directory, cc)
    for name in released.functions:
        if name not in current.functions:
            raise header_error(current.path, 1, f"{name} of the released {release} header is gone: a released function is never "
                               "removed (hosts built against it fail to load)")

    values = []
    for name, constant in current.constants.items():
        if name == "SDM_ABI_VERSION_MINOR":
            values.append(Pin(name, (current.minor,), current.minor == release_minor))
        elif name in old.values:
            values.append(Pin(name, (old.values[name],), True))
        else:
            values.append(Pin(name, (constant.value,), False))
    values += [Pin(name, (value,), True) for name, value in old.values.items() if name not in current.constants]
    scalars = [Pin(name, old.scalars[name], True) if name in old.scalars else Pin(name, measured.scalars[name], False)
               for name in current.aliases]
    scalars += [Pin(name, numbers, True) for name, numbers in old.scalars.items() if name not in current.aliases]

    structs = []
    for name, struct in current.structs.items():
        now = measured.structs[name]
        if name not in released.structs:
            fields = [Pin(f.name, now.fields[f.name], False, f.minor) for f in struct.fields]
            structs.append(StructPins(name, fields, Pin(name, (now.size, now.align), False)))
            continue
        then = old.structs[name]
        fields, taken = [], set()
        for f in released.structs[name].fields:
            numbers = then.fields[f.name]
            if struct.field(f.name) is None and re.fullmatch(r"reserved\d*", f.name):
                heir = next((g for g in struct.fields if now.fields[g.name] == numbers and g.name not in then.fields), None)
                if heir is not None:
                    fields.append(Pin(heir.name, numbers, True, heir.minor, f"{f.name} in {release}"))
                    taken.add(heir.name)
                    continue
            now_field = struct.field(f.name)
            fields.append(Pin(f.name, numbers, True, now_field.minor if now_field else f.minor))
        for f in struct.fields:
            if f.name in then.fields or f.name in taken:
                continue
            replaced = next((g for g in released.structs[name].fields
                             if struct.field(g.name) is None and then.fields[g.name] == now.fields[f.name]), None)
            if replaced is not None:
                raise header_error(current.path, f.line, f"{name}.{f.name} takes the place of {replaced.name} of the released "
                                   f"{release} header: a released field keeps its name (hosts that use it would stop compiling); "
                                   "only a field named reserved<N> may be repurposed")
            if f.minor <= release_minor:
                raise header_error(current.path, f.line, f"{name}.{f.name} is not in the released {release} header: what is added "
                                   f"after a release goes at the end of the struct, below a `/* ABI {current.major}."
                                   f"{release_minor + 1} */` line (and SDM_ABI_VERSION_MINOR becomes {release_minor + 1})")
            fields.append(Pin(f.name, now.fields[f.name], False, f.minor))
        gone = [p.name for p in fields if p.released and struct.field(p.name) is None]
        if gone:
            raise header_error(current.path, struct.line, f"{name}.{gone[0]} of the released {release} header is gone: a released "
                               "field is never removed (hosts built against it read and write it)")
        grew = any(not p.released for p in fields)
        size = Pin(name, (now.size, now.align) if grew else (then.size, then.align), not grew)
        structs.append(StructPins(name, fields, size))
    for name, struct in released.structs.items():
        if name not in current.structs:
            then = old.structs[name]
            fields = [Pin(f.name, then.fields[f.name], True, f.minor) for f in struct.fields]
            structs.append(StructPins(name, fields, Pin(name, (then.size, then.align), True)))
    return Pins(release, values, scalars, structs)


# ---- small helpers for the emitters --------------------------------------------------------------

def sections(header):
    """header.items grouped by section: [(title or None, [items])]."""
    groups = [(None, [])]
    for item in header.items:
        if isinstance(item, Section):
            groups.append((item.title, []))
        else:
            groups[-1][1].append(item)
    return [(title, items) for title, items in groups if items]


def rule(prefix, title, width=100, suffix=""):
    """A section heading in the bindings' style: `# ---- title ------...`."""
    text = f"{prefix} ---- {title} "
    return text + "-" * max(3, width - len(text) - len(suffix)) + suffix


def minor_label(major, minor):
    return f"ABI {major}.{minor}"


def collapse_blank_lines(lines, keep=1):
    """`lines` with at most `keep` blank lines in a row, none first or last."""
    out = []
    for line in lines:
        if line == "" and (not out or out[-keep:] == [""] * keep):
            continue
        out.append(line)
    while out and out[-1] == "":
        out.pop()
    return out


# ---- capi/api_table.inc ----------------------------------------------------------------------------

def emit_api_table(h):
    out = [f"/* {NOTICE}", " *", " * The members of sdm_get_api's table (capi.cpp), designated in the header's order so that a",
           " * member out of place does not compile. */"]
    minor = 0
    for f in h.structs[TABLE].fields:
        if f.minor != minor:
            out.append(f"        /* {minor_label(h.major, f.minor)} */")
            minor = f.minor
        value = {"struct_size": f"sizeof({TABLE})", "abi_minor": "SDM_ABI_VERSION_MINOR"}.get(f.name, "sdm_" + f.name)
        out.append(f"        .{f.name} = {value},")
    return "\n".join(out) + "\n"


# ---- capi/libsdm.map -------------------------------------------------------------------------------

def version_node(major, minor):
    return f"SDM_{major}" if minor == 0 else f"SDM_{major}.{minor}"


def emit_version_script(h, testing=None):
    """libsdm.map (the functions of sdm.h), or with `testing` libsdm_testing.map (and sdm_testing.h's)."""
    nodes = {}
    for name in h.functions:
        nodes.setdefault(h.minors[name], []).append(name)
    if testing is not None:
        nodes.setdefault(0, []).extend(testing.functions)
        what = [" * The exported symbols of libsdm_testing, the test-only build of libsdm that the tests which force",
                " * hardware rows link: the functions of sdm.h and sdm_testing.h. It is never installed. Each"]
    else:
        what = [" * The exported symbols of libsdm: the functions of sdm.h and nothing else (the test-only functions",
                " * of sdm_testing.h live in libsdm_testing, never installed). Each"]
    out = [f"/* {NOTICE}", " *"] + what + [
           f" * is in the version node of the ABI minor that added it ({version_node(h.major, 0)}: 1.0"
           + (" and the test-only functions" if testing is not None else "") + ";",
           f" * {version_node(h.major, 1)}, ...: later minors), so that a host linked against a newer function",
           " * refuses to load with an older libsdm instead of failing at its first call. tests/abi/symbols.txt",
           " * lists libsdm's; a test compares. */"]
    previous = None
    for minor in sorted(nodes):
        node = version_node(h.major, minor)
        if previous is not None:
            out.append(f"/* {minor_label(h.major, minor)}: functions added in {h.major}.{minor} (a host linked against them needs "
                       f"a {h.major}.{minor} libsdm). */")
        out += [f"{node} {{", "  global:"] + [f"    {name};" for name in sorted(nodes[minor])]
        if previous is None:
            out += ["  local:", "    *;", "};"]
        else:
            out.append(f"}} {previous};")
        previous = node
    return "\n".join(out) + "\n"


# ---- tests/abi/symbols.txt -------------------------------------------------------------------------

def emit_symbols(h):
    out = [f"# {NOTICE}", "# The functions libsdm exports (tests/abi/check_symbols.sh compares them with nm's list): sdm.h's, no test-only one."]
    return "\n".join(out + sorted(h.functions)) + "\n"


# ---- tests/abi/layout.c ----------------------------------------------------------------------------

def emit_layout_c(h, pins):
    def note(pin):
        notes = ([] if pin.released else ["unreleased"]) + ([pin.note] if pin.note else [])
        return f" /* {'; '.join(notes)} */" if notes else ""

    out = [f"/* {NOTICE}", " *",
           " * Pins the layout of every public struct in sdm.h and the value of every constant, as literal",
           " * numbers, so that a change which moves, resizes or reorders a field, or renumbers a constant,",
           " * fails to compile. Hosts bind these by hand (Go, Julia, ctypes) or from a bindgen run made once;",
           " * a moved field breaks them silently at run time, so it must break here first.",
           " *",
           f" * The numbers are those of the newest released header, tests/abi/released/{pins.release}/sdm/sdm.h",
           " * (gen_abi.py compiles a probe of it), never of sdm.h itself, which they could then never fail.",
           f" * What sdm.h adds after {pins.release} (the minor in development) is pinned from sdm.h and marked",
           " * `unreleased`, as is the size of a struct that grew; releasing the minor (copying its header to",
           " * tests/abi/released/) fixes those numbers too. A shipped layout never changes: a failure here",
           " * is an ABI break to undo in sdm.h, not a number to update.",
           " *",
           " * Built as C11 and run as a test (main returns 0); it needs no library. */",
           "#include <sdm/sdm.h>", "",
           "#include <stddef.h>", "",
           "#define PIN_FIELD(type, field, offset, size)                                                              \\",
           "    _Static_assert(offsetof(type, field) == (offset), #type \".\" #field \" moved\");                         \\",
           "    _Static_assert(sizeof(((type*)0)->field) == (size), #type \".\" #field \" changed size\")",
           "#define PIN_SIZE(type, size, align)                                                                       \\",
           "    _Static_assert(sizeof(type) == (size), \"sizeof(\" #type \") changed\");                                  \\",
           "    _Static_assert(_Alignof(type) == (align), \"_Alignof(\" #type \") changed\")",
           "#define PIN_VALUE(name, value) _Static_assert((name) == (value), #name \" was renumbered\")", "",
           rule("/*", "values: the same on every platform", suffix=" */"), ""]
    for pin in pins.values:
        out.append(f"PIN_VALUE({pin.name}, {pin.numbers[0]});{note(pin)}")
    out.append("")
    for pin in pins.scalars:
        out.append(f"PIN_SIZE({pin.name}, {pin.numbers[0]}, {pin.numbers[1]});{note(pin)}")
    out += ["", rule("/*", "layouts: LP64 (x86_64 and aarch64 Linux)", suffix=" */"), "",
            "#if defined(__LP64__) && (defined(__x86_64__) || defined(__aarch64__))"]
    for struct in pins.structs:
        out.append("")
        minor = 0
        for pin in struct.fields:
            if pin.minor != minor:
                out.append(f"/* {minor_label(h.major, pin.minor)} */")
                minor = pin.minor
            out.append(f"PIN_FIELD({struct.name}, {pin.name}, {pin.numbers[0]}, {pin.numbers[1]});{note(pin)}")
        out.append(f"PIN_SIZE({struct.name}, {struct.size.numbers[0]}, {struct.size.numbers[1]});{note(struct.size)}")
    out += ["", "#else",
            "#error \"layout.c pins the LP64 layout of x86_64 and aarch64; teach capi/gen_abi.py this platform's probe before building on it\"",
            "#endif", "", "int main(void) { return 0; }"]
    return "\n".join(out) + "\n"


# ---- Rust: bindings/rust/sdm-sys/src/sdm_h.rs ------------------------------------------------------

RUST_KEYWORDS = {"as", "break", "const", "continue", "crate", "else", "enum", "extern", "false", "fn", "for", "if", "impl", "in",
                 "let", "loop", "match", "mod", "move", "mut", "pub", "ref", "return", "self", "Self", "static", "struct",
                 "super", "trait", "true", "type", "unsafe", "use", "where", "while", "async", "await", "dyn", "abstract",
                 "become", "box", "do", "final", "macro", "override", "priv", "typeof", "unsized", "virtual", "yield", "try"}
RUST_WIDTH = 120  # bindings/rust/rustfmt.toml


def rust_name(name):
    return name + "_" if name in RUST_KEYWORDS else name


def rust_type(h, ctype):
    if ctype.function is not None:
        return f"Option<{rust_fn(h, ctype.function)}>"
    if ctype.array is not None:
        return f"[{rust_type(h, ctype.element())}; {ctype.array}]"
    if ctype.pointers:
        return ("*const " if ctype.const[-2] else "*mut ") + rust_type(h, ctype.pointee())
    if ctype.base == "void":
        return "c_void"
    return SCALARS[ctype.base].rust if ctype.base in SCALARS else ctype.base


def rust_params(h, params):
    return [(f"{rust_name(p.name)}: " if p.name else "") + rust_type(h, p.type) for p in params]


def rust_ret(h, ret):
    return "" if ret == CType("void") else f" -> {rust_type(h, ret)}"


def rust_fn(h, ft):
    return f'unsafe extern "C" fn({", ".join(rust_params(h, ft.params))}){rust_ret(h, ft.ret)}'


def rust_fn_pointer(h, indent, head, ft, end):
    """`head Option<unsafe extern "C" fn(...)>end` laid out as rustfmt does at max_width 120."""
    params, ret = rust_params(h, ft.params), rust_ret(h, ft.ret)
    fn = f'unsafe extern "C" fn({", ".join(params)}){ret}'
    pad, pad4, pad8 = " " * indent, " " * (indent + 4), " " * (indent + 8)
    one = f"{pad}{head} Option<{fn}>{end}"
    if len(one) <= RUST_WIDTH:
        return [one]
    if len(f"{pad4}Option<{fn}>{end}") <= RUST_WIDTH:
        return [f"{pad}{head}", f"{pad4}Option<{fn}>{end}"]
    if len(f"{pad4}{fn},") <= RUST_WIDTH:
        return [f"{pad}{head} Option<", f"{pad4}{fn},", f"{pad}>{end}"]
    return ([f"{pad}{head} Option<", f'{pad4}unsafe extern "C" fn('] + [f"{pad8}{p}," for p in params]
            + [f"{pad4}){ret},", f"{pad}>{end}"])


def rust_integers_only(h, struct):
    """Whether every field is an integer or an array of integers (such a struct derives Eq)."""
    for f in struct.fields:
        ctype = h.resolve(f.type.element() if f.type.array else f.type)
        if f.type.function or ctype.pointers or ctype.base not in SCALARS or not SCALARS[ctype.base].integer:
            return False
    return True


def emit_rust(h, pins):
    out = [f"// {NOTICE}", "//",
           "// sdm.h in Rust, one to one: names, types, field order and values (a field named like a Rust",
           "// keyword takes a trailing `_`), re-exported by lib.rs, whose macros this uses: `sized_default!`",
           "// gives each struct its Default, and `pin_field!` and `pin_size!` pin the numbers of",
           "// tests/abi/layout.c in the layout tests at the bottom.", "",
           "use core::ffi::{c_char, c_void};"]
    sized = []
    functions = []
    for title, items in sections(h):
        block = []
        for item in items:
            if isinstance(item, Constant):
                block.append(f"pub const {item.name}: {'u32' if item.type == 'uint32_t' else item.type} = {item.expr};")
            elif isinstance(item, Function):
                functions.append((title, item))
            elif item in h.aliases:
                block.append(f"pub type {item} = {rust_type(h, h.aliases[item])};")
            elif item in h.opaque:
                block += ["", "/// Opaque: only ever behind a pointer.", "#[repr(C)]", f"pub struct {item} {{",
                          "    _opaque: [u8; 0],",
                          "    _not_send_sync_unpin: core::marker::PhantomData<(*mut u8, core::marker::PhantomPinned)>,", "}", ""]
            elif item in h.callbacks:
                ft = h.callbacks[item]
                lines = rust_fn_pointer(h, 0, f"pub type {item} =", ft, ";")
                block += lines
            else:
                struct = h.structs[item]
                derives = "Debug, Clone, Copy" + (", PartialEq, Eq" if rust_integers_only(h, struct) else "")
                block += ["", "#[repr(C)]", f"#[derive({derives})]", f"pub struct {item} {{"]
                minor = 0
                for f in struct.fields:
                    if f.minor != minor:
                        block.append(f"    // {minor_label(h.major, f.minor)}")
                        minor = f.minor
                    comment = f" // `{f.name}` in C" if rust_name(f.name) != f.name else ""
                    if f.type.function is not None:
                        block += rust_fn_pointer(h, 4, f"pub {rust_name(f.name)}:", f.type.function, ",")
                    else:
                        block.append(f"    pub {rust_name(f.name)}: {rust_type(h, f.type)},{comment}")
                block += ["}", ""]
                sized.append(item)
        if block:
            out += ["", rule("//", title, width=RUST_WIDTH - 20), ""] if title else [""]
            out += block
    out = collapse_blank_lines(out)
    out += ["", rule("//", "defaults: zeros, struct_size set", width=RUST_WIDTH - 20), ""]
    invocation = f"sized_default!({', '.join(sized)});"
    out += [invocation] if len(invocation) <= RUST_WIDTH else ["sized_default!("] + [f"    {s}," for s in sized] + [");"]
    out += ["", rule("//", "functions", width=RUST_WIDTH - 20), "", '#[link(name = "sdm")]', 'extern "C" {']
    previous = None
    for title, function in functions:
        if previous is not None and title != previous:
            out.append("")
        previous = title
        params = rust_params(h, function.params)
        ret = rust_ret(h, function.ret)
        one = f"    pub fn {function.name}({', '.join(params)}){ret};"
        if len(one) <= RUST_WIDTH:
            out.append(one)
        else:
            out += [f"    pub fn {function.name}("] + [f"        {p}," for p in params] + [f"    ){ret};"]
    out.append("}")
    out += emit_rust_layout_tests(h, pins)
    return "\n".join(collapse_blank_lines(out)) + "\n"


def emit_rust_layout_tests(h, pins):
    out = ["", rule("//", "layout: the numbers of tests/abi/layout.c", width=RUST_WIDTH - 20), "",
           '#[cfg(all(test, target_pointer_width = "64", any(target_arch = "x86_64", target_arch = "aarch64")))]',
           "mod layout {", "    use super::*;", "    use core::mem::{align_of, size_of};", "", "    #[test]", "    fn values() {"]
    for pin in pins.values:
        out.append(f"        assert_eq!({pin.name}, {pin.numbers[0]});")
    for pin in pins.scalars:
        out.append(f"        assert_eq!((size_of::<{pin.name}>(), align_of::<{pin.name}>()), ({pin.numbers[0]}, {pin.numbers[1]}));")
    out.append("    }")
    for struct in pins.structs:
        out += ["", "    #[test]", f"    fn {struct.name.removeprefix('sdm_')}() {{"]
        for pin in struct.fields:
            out.append(f"        pin_field!({struct.name}, {rust_name(pin.name)}, {pin.numbers[0]}, {pin.numbers[1]});")
        out += [f"        pin_size!({struct.name}, {struct.size.numbers[0]}, {struct.size.numbers[1]});", "    }"]
    out.append("}")
    return out


# ---- Python: bindings/python/sdm/_sdm_h.py ---------------------------------------------------------

PYTHON_WIDTH = 120


def wrap_words(words, first_prefix, prefix, width, separator=", ", last=""):
    """Lines of `words` joined by separator, the first starting with first_prefix, the others
    with prefix, each at most width long where possible."""
    lines, current = [], first_prefix
    for k, word in enumerate(words):
        piece = word + (separator.rstrip() if k < len(words) - 1 else last)
        candidate = current + ("" if current in (first_prefix, prefix) else " ") + piece
        if len(candidate) > width and current not in (first_prefix, prefix):
            lines.append(current)
            candidate = prefix + piece
        current = candidate
    lines.append(current)
    return lines


def python_type(h, ctype, used):
    if ctype.function is not None:
        used.add("CFUNCTYPE")
        ft = ctype.function
        ret = "None" if ft.ret == CType("void") else python_type(h, ft.ret, used)
        return f"CFUNCTYPE({', '.join([ret] + [python_type(h, p.type, used) for p in ft.params])})"
    if ctype.array is not None:
        return f"{python_type(h, ctype.element(), used)} * {ctype.array}"
    if ctype.pointers:
        inner = ctype.pointee()
        if inner.pointers == 0 and inner.base in ("char", "void"):
            used.add("c_char_p" if inner.base == "char" else "c_void_p")
            return "c_char_p" if inner.base == "char" else "c_void_p"
        if inner.pointers == 0 and inner.base in h.opaque:
            return f"{inner.base.removeprefix('sdm_')}_p"
        return f"P({python_type(h, inner, used)})"
    if ctype.base in SCALARS:
        used.add(SCALARS[ctype.base].ctypes)
        return SCALARS[ctype.base].ctypes
    return ctype.base


def emit_python(h):
    used = {"POINTER", "Structure"}
    body = ["", "P = POINTER", "", "", "class Sized(Structure):",
            '    """A struct that starts with `uint32_t struct_size`: a new one is zeroed with struct_size set to',
            "    its ctypes size, the size of the struct as this binding declares it (ABI rule 4). Pass",
            '    struct_size= to say otherwise."""', "",
            "    def __init__(self, *args: Any, **kwargs: Any) -> None:", "        super().__init__(*args, **kwargs)",
            '        if not args and "struct_size" not in kwargs:', "            self.struct_size = ctypes.sizeof(self)", "", ""]
    functions = []
    for title, items in sections(h):
        block = []
        for item in items:
            if isinstance(item, Constant):
                block.append(f"{item.name} = {item.expr}")
            elif isinstance(item, Function):
                functions.append(item)
            elif item in h.aliases:
                block.append(f"{item} = {python_type(h, h.aliases[item], used)}")
            elif item in h.opaque:
                block += ["", "", f"class {item}(Structure):", '    """Opaque: only ever behind a pointer."""', "", "",
                          f"{item.removeprefix('sdm_')}_p = P({item})", "", ""]
            elif item in h.callbacks:
                block.append(f"{item} = {python_type(h, CType('', function=h.callbacks[item]), used)}")
            else:
                block += python_struct(h, h.structs[item], used)
        if block:
            body += (["", "", rule("#", title, width=PYTHON_WIDTH - 20), ""] if title else [""]) + block
    body += ["", "", "# Every SDM_API function: name -> (restype, argtypes), in the header's order.", "FUNCTIONS = {"]
    for function in functions:
        ret = "None" if function.ret == CType("void") else python_type(h, function.ret, used)
        args = [python_type(h, p.type, used) for p in function.params]
        one = f'    "{function.name}": ({ret}, [{", ".join(args)}]),'
        if len(one) <= PYTHON_WIDTH:
            body.append(one)
        else:
            first = f'    "{function.name}": ({ret}, ['
            body += wrap_words(args, first, " " * len(first), PYTHON_WIDTH, last="]),")
    body.append("}")
    names = sorted(used - {"P"})
    imports = wrap_words(names, "from ctypes import (", " " * 20, PYTHON_WIDTH, last=")")
    head = ['"""' + NOTICE, "",
            "The C ABI of include/sdm/sdm.h in ctypes: its constants, its structs (same names, same field order and",
            "types; every struct a Sized) and every SDM_API function's restype and argtypes (FUNCTIONS). sdm._capi",
            'loads the library with them; nothing here allocates or frees."""', "", "import ctypes"] + imports + ["from typing import Any"]
    return "\n".join(collapse_blank_lines(head + body, keep=2)) + "\n"


def python_struct(h, struct, used):
    """The Sized class of `struct`; one that points to its own type gets its _fields_ after it."""
    self_reference = any(f.type.base == struct.name for f in struct.fields)
    indent = " " * (4 if self_reference else 8)
    lines, minor = [], 0
    for f in struct.fields:
        if f.minor != minor:
            lines.append(f"{indent}# {minor_label(h.major, f.minor)}")
            minor = f.minor
        one = f'{indent}("{f.name}", {python_type(h, f.type, used)}),'
        if len(one) <= PYTHON_WIDTH or f.type.function is None:
            lines.append(one)
            continue
        call = python_type(h, f.type, used)
        first = f'{indent}("{f.name}", CFUNCTYPE('
        lines += wrap_words(split_arguments(call[len("CFUNCTYPE("):-1]), first, " " * len(first), PYTHON_WIDTH, last=")),")
    if self_reference:
        return ["", "", f"class {struct.name}(Sized):", "    pass", "", "", f"{struct.name}._fields_ = ["] + lines + ["]", "", ""]
    return ["", "", f"class {struct.name}(Sized):", "    _fields_ = ["] + lines + ["    ]", "", ""]


def split_arguments(text):
    """`text` split at the commas outside parentheses."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text):
        depth += (c == "(") - (c == ")")
        if c == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    return parts + [text[start:].strip()]


# ---- Julia: bindings/julia/src/capi.jl -------------------------------------------------------------

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


def emit_julia(h):
    out = [f"# {NOTICE}", "#",
           "# The raw C ABI, one to one, included by Sdm.jl (which defines `libsdm`): every constant a `const`,",
           "# every struct an isbits struct with the header's fields in order (a field named like a Julia keyword",
           "# takes a trailing `_`), every opaque handle a `mutable struct`, and every SDM_API function a Julia",
           "# function of the same name around one `ccall`."]
    functions = []
    for title, items in sections(h):
        block = []
        for item in items:
            if isinstance(item, Constant):
                block.append(f"const {item.name} = {julia_constant(h, item)}")
            elif isinstance(item, Function):
                functions.append((title, item))
            elif item in h.aliases:
                block.append(f"const {item} = {julia_type(h, h.aliases[item])}")
            elif item in h.opaque:
                block += ["", "# Opaque: only ever behind a Ptr.", f"mutable struct {item} end", ""]
            elif item in h.callbacks:
                block += ["", f"# {CType('', function=h.callbacks[item])}", f"const {item} = Ptr{{Cvoid}}", ""]
            else:
                block += ["", f"struct {item}"]
                for f in h.structs[item].fields:
                    comment = f"  # `{f.name}`, a Julia keyword" if julia_name(f.name) != f.name else ""
                    block.append(f"    {julia_name(f.name)}::{julia_type(h, f.type)}{comment}")
                block += ["end", ""]
        if block:
            out += (["", rule("#", title, width=JULIA_WIDTH - 20), ""] if title else [""]) + block
    out += ["", rule("#", "functions: one per SDM_API function", width=JULIA_WIDTH - 20), ""]
    previous = None
    for title, function in functions:
        if previous is not None and title != previous:
            out.append("")
        previous = title
        out += julia_function(h, function)
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


# ---- Go: bindings/go/internal/rawabi/rawabi.go -----------------------------------------------------

def go_map(name, doc, entries):
    """A function returning map[string]Layout, its values aligned as gofmt aligns them."""
    width = max(len(f'"{key}":') for key, _ in entries)
    lines = [f"// {doc}", f"func {name}() map[string]Layout {{", "\treturn map[string]Layout{"]
    lines += [f'\t\t{(chr(34) + key + chr(34) + ":").ljust(width)} {value},' for key, value in entries]
    return lines + ["\t}", "}"]


def emit_go(h, pins):
    structs = list(h.structs)
    out = ["// Code generated by capi/gen_abi.py from include/sdm/sdm.h. DO NOT EDIT.",
           f"// Regenerate with `{COMMAND}`.", "", "package rawabi", "", "// #include <sdm/sdm.h>", 'import "C"', "",
           'import "unsafe"', "", "// Layout is a struct's size and alignment.", "type Layout struct{ Size, Align uintptr }", ""]
    out += go_map("Layouts", "Layouts is every public struct of sdm.h as cgo sees it, by C name.",
                  [(s, f"{{unsafe.Sizeof(C.{s}{{}}), unsafe.Alignof(C.{s}{{}})}}") for s in structs])
    out.append("")
    out += go_map("Pinned", "Pinned is every struct's size and alignment as tests/abi/layout.c pins them (LP64).",
                  [(s.name, f"{{Size: {s.size.numbers[0]}, Align: {s.size.numbers[1]}}}") for s in pins.structs])
    return "\n".join(out) + "\n"


# ---- all of it -----------------------------------------------------------------------------------

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
    return {
        ROOT / "capi" / "api_table.inc": emit_api_table(h),
        ROOT / "capi" / "libsdm.map": emit_version_script(h),
        ROOT / "capi" / "libsdm_testing.map": emit_version_script(h, testing),
        ROOT / "tests" / "abi" / "symbols.txt": emit_symbols(h),
        ROOT / "tests" / "abi" / "layout.c": emit_layout_c(h, pins),
        ROOT / "bindings" / "rust" / "sdm-sys" / "src" / "sdm_h.rs": emit_rust(h, pins),
        ROOT / "bindings" / "python" / "sdm" / "_sdm_h.py": emit_python(h),
        ROOT / "bindings" / "julia" / "src" / "capi.jl": emit_julia(h),
        ROOT / "bindings" / "go" / "internal" / "rawabi" / "rawabi.go": emit_go(h, pins),
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
