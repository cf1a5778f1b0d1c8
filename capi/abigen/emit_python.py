"""Python: bindings/python/sdm/_sdm_h.py."""

from .model import NAMED_ENUMS, CType, Constant, NOTICE, SCALARS
from .textutil import collapse_blank_lines, minor_label, rule, walk


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


def python_declaration(h, item, used):
    """The ctypes lines of one declaration of sdm.h; `used` collects the ctypes names they need."""
    if isinstance(item, Constant):
        return [f"{item.name} = {item.expr}"]
    if item in h.aliases:
        return [f"{item} = {python_type(h, h.aliases[item], used)}"]
    if item in h.opaque:
        return ["", "", f"class {item}(Structure):", '    """Opaque: only ever behind a pointer."""', "", "",
                f"{item.removeprefix('sdm_')}_p = P({item})", "", ""]
    if item in h.callbacks:
        return [f"{item} = {python_type(h, CType('', function=h.callbacks[item]), used)}"]
    return python_struct(h, h.structs[item], used)


def python_named_enums(h):
    """The IntEnum of each NamedEnum, a member's comment the header's."""
    out = ["", "", rule("#", "the enums the sdm package names", width=PYTHON_WIDTH - 20)]
    for named in NAMED_ENUMS:
        prefix = named.python_prefix
        out += ["", "", f"class {named.name}(enum.IntEnum):",
                f'    """{named.what} (sdm.h): its constants without the {prefix} prefix."""', ""]
        for constant in h.enum(named.first):
            if constant.doc:
                out += wrap_words(constant.doc.split(), "    # ", "    # ", PYTHON_WIDTH, separator=" ")
            out.append(f"    {constant.name.removeprefix(prefix)} = {constant.name}")
    return out


def emit_python(h):
    used = {"POINTER", "Structure"}
    body = ["", "P = POINTER", "", "", "class Sized(Structure):",
            '    """A struct that starts with `uint32_t struct_size`: a new one is zeroed with struct_size set to',
            "    its ctypes size, the size of the struct as this binding declares it (ABI rule 4). Pass",
            '    struct_size= to say otherwise."""', "",
            "    def __init__(self, *args: Any, **kwargs: Any) -> None:", "        super().__init__(*args, **kwargs)",
            '        if not args and "struct_size" not in kwargs:', "            self.struct_size = ctypes.sizeof(self)", "", ""]
    declarations, functions = walk(h, lambda item: python_declaration(h, item, used),
                                   lambda title: ["", "", rule("#", title, width=PYTHON_WIDTH - 20), ""] if title else [""])
    body += declarations
    body += python_named_enums(h)
    body += ["", "", "# Every SDM_API function: name -> (restype, argtypes), in the header's order.", "FUNCTIONS = {"]
    for function in (f for group in functions for f in group):
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
            'loads the library with them; nothing here allocates or frees. Status, ImageKind and ImageSource are',
            'the enums the sdm package names, each member commented as sdm.h comments its value."""', "",
            "import ctypes", "import enum"] + imports + ["from typing import Any"]
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

