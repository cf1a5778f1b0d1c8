"""Reading a header: the tokenizer, the preprocessor lines sdm's headers may use, and the
declarations (capi/gen_abi.py's docstring lists the forms)."""

import re
from dataclasses import dataclass
from pathlib import Path

from .model import AbiError, CType, Constant, Field, Function, FunctionType, Header, Param, SCALARS, Section, Struct, TABLE, display, header_error


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
            i += 2
            if body[i].text == "#elif defined(_WIN32) && !defined(SDM_BUILDING_LIBRARY)":  # a Windows host's import
                i = expect(i + 1, ["#define SDM_API __declspec(dllimport)"], "the export-macro block's Windows import")
            i = expect(i, ["#else", "#define SDM_API", "#endif"], "the export-macro block's #else, #define SDM_API, #endif")
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
                self.enum(words, statement, enum_type)
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
                elif not t.own_line and struct.fields and not pending:  # the comment after a field
                    last = struct.fields[-1]
                    struct.fields[-1] = Field(last.name, last.type, last.minor, last.line, " ".join(filter(None, [last.doc, t.body])))
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

    def enum(self, words, statement, enum_type):
        texts = [w.text for w in words]
        line = words[0].line
        if texts[1] != "{" or texts[-1] != "}":
            raise self.error(line, "an enum is `enum { NAME = VALUE, ... };`, anonymous (its type is the int32_t typedef "
                             "before it, or uint32_t for flags)")
        entries, current, docs, before = [], [], {}, []
        for w in statement[2:-1]:
            if w.kind == "comment":
                # A comment on lines of its own documents the constant after it; one after a
                # constant on its line (and its continuation lines), the constant before it.
                if w.own_line or not entries and not current:
                    before.append(w.body)
                else:
                    owner = current[0] if current else entries[-1][0]
                    docs[owner.text] = " ".join(filter(None, [docs.get(owner.text), w.body]))
            elif w.text == ",":
                entries.append(current)
                current = []
            else:
                if not current and before:
                    docs[w.text], before = " ".join(before), []
                current.append(w)
        if current:
            entries.append(current)
        constants = []
        for entry in entries:
            if len(entry) < 3 or entry[0].kind != "ident" or entry[1].text != "=":
                raise self.error(entry[0].line, f"enum constant {entry[0].text} needs an explicit value (ABI rule 3)")
            value, expr, unsigned = self.value(entry[0], entry[2:])
            if enum_type is None and not unsigned:
                raise self.error(entry[0].line, f"{entry[0].text}: an enum that does not follow a `typedef int32_t NAME;` "
                                 "is a set of flags: write its values unsigned (`1u << 0`), as they bind as uint32_t")
            constant = Constant(entry[0].text, value, expr, enum_type or "uint32_t", entry[0].line, docs.get(entry[0].text, ""))
            add_constant(self.h, constant)
            self.h.items.append(constant)
            constants.append(constant)
        self.h.enums.append(tuple(constants))

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

