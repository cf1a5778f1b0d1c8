"""Rust: bindings/rust/sdm-sys/src/sdm_h.rs, and the sdm crate's restatements of sdm.h
(bindings/rust/sdm/src/abi.rs)."""

import re

from .model import NAMED_ENUMS, CType, Constant, NOTICE, SCALARS, member_name, sentence
from .textutil import collapse_blank_lines, joined, minor_label, rule, walk


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


def rust_declaration(h, item):
    """The Rust lines of one declaration of sdm.h (a constant, a typedef, a handle, a struct)."""
    if isinstance(item, Constant):
        return [f"pub const {item.name}: {'u32' if item.type == 'uint32_t' else item.type} = {item.expr};"]
    if item in h.aliases:
        return [f"pub type {item} = {rust_type(h, h.aliases[item])};"]
    if item in h.opaque:
        return ["", "/// Opaque: only ever behind a pointer.", "#[repr(C)]", f"pub struct {item} {{", "    _opaque: [u8; 0],",
                "    _not_send_sync_unpin: core::marker::PhantomData<(*mut u8, core::marker::PhantomPinned)>,", "}", ""]
    if item in h.callbacks:
        return rust_fn_pointer(h, 0, f"pub type {item} =", h.callbacks[item], ";")
    struct = h.structs[item]
    derives = "Debug, Clone, Copy" + (", PartialEq, Eq" if rust_integers_only(h, struct) else "")
    lines = ["", "#[repr(C)]", f"#[derive({derives})]", f"pub struct {item} {{"]
    minor = 0
    for f in struct.fields:
        if f.minor != minor:
            lines.append(f"    // {minor_label(h.major, f.minor)}")
            minor = f.minor
        comment = f" // `{f.name}` in C" if rust_name(f.name) != f.name else ""
        if f.type.function is not None:
            lines += rust_fn_pointer(h, 4, f"pub {rust_name(f.name)}:", f.type.function, ",")
        else:
            lines.append(f"    pub {rust_name(f.name)}: {rust_type(h, f.type)},{comment}")
    return lines + ["}", ""]


def rust_function(h, function):
    params, ret = rust_params(h, function.params), rust_ret(h, function.ret)
    one = f"    pub fn {function.name}({', '.join(params)}){ret};"
    if len(one) <= RUST_WIDTH:
        return [one]
    return [f"    pub fn {function.name}("] + [f"        {p}," for p in params] + [f"    ){ret};"]


def emit_rust(h, pins):
    out = [f"// {NOTICE}", "//",
           "// sdm.h in Rust, one to one: names, types, field order and values (a field named like a Rust",
           "// keyword takes a trailing `_`), re-exported by lib.rs, whose macros this uses: `sized_default!`",
           "// gives each struct its Default, and `pin_field!` and `pin_size!` pin the numbers of",
           "// tests/abi/layout.c in the layout tests at the bottom.", "",
           "use core::ffi::{c_char, c_void};"]
    declarations, functions = walk(h, lambda item: rust_declaration(h, item),
                                   lambda title: ["", rule("//", title, width=RUST_WIDTH - 20), ""] if title else [""])
    out = collapse_blank_lines(out + declarations)
    out += ["", rule("//", "defaults: zeros, struct_size set", width=RUST_WIDTH - 20), ""]
    invocation = f"sized_default!({', '.join(h.structs)});"
    out += [invocation] if len(invocation) <= RUST_WIDTH else ["sized_default!("] + [f"    {s}," for s in h.structs] + [");"]
    out += ["", rule("//", "functions", width=RUST_WIDTH - 20), "", '#[link(name = "sdm")]', 'extern "C" {']
    out += joined(functions, lambda function: rust_function(h, function)) + ["}"]
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



# ---- bindings/rust/sdm/src/abi.rs: what the sdm crate restates --------------------------------------

# The sdm crate's records that are one to one with a struct of sdm.h: (C struct, Rust name). The
# record holds every field but struct_size, the reserved ones and `next`.
RUST_RECORDS = (("sdm_plan", "Plan"),)


def rust_doc(indent, doc, suffix=""):
    """`///` lines of a header comment as a sentence, wrapped at RUST_WIDTH."""
    text = sentence(doc) + suffix
    if not text:
        return []
    lines, current = [], f"{indent}///"
    for word in text.split():
        if len(current) + 1 + len(word) > RUST_WIDTH - 20 and current != f"{indent}///":
            lines.append(current)
            current = f"{indent}///"
        current += " " + word
    return lines + [current]


def rust_record_fields(struct):
    return [f for f in struct.fields if f.name != "struct_size" and f.name != "next" and not re.fullmatch(r"reserved\d*", f.name)]


def rust_record(h, c_name, name):
    struct = h.structs[c_name]
    fields = rust_record_fields(struct)
    out = ["", f"/// `{c_name}` without its struct_size, reserved fields and extension chain (lib.rs has its methods).",
           "#[derive(Clone, Copy, Debug, PartialEq, Eq)]", f"pub struct {name} {{"]
    for f in fields:
        out += rust_doc("    ", f.doc, f" {minor_label(h.major, f.minor)}." if f.minor else "")
        out.append(f"    pub {rust_name(f.name)}: {rust_type(h, f.type)},")
    out += ["}", "", f"impl {name} {{", f"    pub(crate) fn from_raw(raw: &sys::{c_name}) -> {name} {{", f"        {name} {{"]
    out += [f"            {rust_name(f.name)}: raw.{rust_name(f.name)}," for f in fields]
    out += ["        }", "    }", "", f"    pub(crate) fn to_raw(self) -> sys::{c_name} {{", f"        sys::{c_name} {{"]
    out += [f"            {rust_name(f.name)}: self.{rust_name(f.name)}," for f in fields]
    out += ["            ..Default::default()", "        }", "    }", "}"]
    return out


def emit_rust_sdm(h):
    out = [f"// {NOTICE}", "//",
           "// The sdm crate's restatements of sdm.h (`mod abi` of lib.rs): the constants of its newtypes over",
           "// sdm.h's enums, each documented as sdm.h documents the value, and its records that are a struct",
           "// of sdm.h field for field.", "",
           "use crate::sys;", f"use crate::{{{', '.join(sorted(n.name for n in NAMED_ENUMS))}}};"]
    for named in NAMED_ENUMS:
        out += ["", f"/// The values of `{named.what}`.", f"impl {named.name} {{"]
        for constant in h.enum(named.first):
            out += rust_doc("    ", constant.doc)
            out.append(f"    pub const {member_name(named, constant)}: {named.name} = {named.name}(sys::{constant.name});")
        out.append("}")
    for c_name, name in RUST_RECORDS:
        out += rust_record(h, c_name, name)
    return "\n".join(out) + "\n"
