"""The C side: capi/api_table.inc, the version scripts, tests/abi/symbols.txt, tests/abi/layout.c."""

from .model import NOTICE, TABLE
from .textutil import minor_label, rule


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

