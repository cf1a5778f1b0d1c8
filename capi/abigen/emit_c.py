"""The C side: capi/api_table.inc, the version scripts, tests/abi/symbols.txt, tests/abi/layout.c."""

from .model import NOTICE, TABLE, AbiError, display
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

def emit_module_definition(h, testing=None):
    """sdm.def, the Windows DLL's exports (the version script's functions, without its version
    nodes: PE exports have none), or with `testing` sdm_testing.def."""
    library = "sdm_testing" if testing is not None else "sdm"
    names = sorted(h.functions) + (sorted(testing.functions) if testing is not None else [])
    out = [f"; {NOTICE}", f"; The exports of {library}.dll (Windows hosts, docs/WINDOWS.md): the functions of sdm.h"
           + (" and sdm_testing.h." if testing is not None else " and nothing else."), f"LIBRARY {library}.dll", "EXPORTS"]
    return "\n".join(out + ["    " + n for n in names]) + "\n"


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



# ---- common/status_codes.inc -----------------------------------------------------------------------

def emit_status_codes(h):
    """The X-macro list of sdm_status's error values for common/ (which does not include sdm.h):
    ErrorCode's enumerators, status_name's table, and capi.cpp's static_asserts expand it."""
    out = [f"/* {NOTICE}", " *",
           " * sdm_status's errors, in value order: SDM_STATUS_CODE(code, value, status), `code` the ErrorCode",
           " * enumerator (common/result.hpp), `status` the name sdm.h gives the value. The includer defines",
           " * SDM_STATUS_CODE; each entry's comment is sdm.h's. */"]
    statuses = [c for c in h.enum("SDM_OK") if c.value != 0]
    values = [c.value for c in statuses]
    if values != list(range(1, len(values) + 1)):
        raise AbiError(f"{display(h.path)}: the sdm_status errors are not 1, 2, ... in order ({values}): ErrorCode and "
                       "sdm_status_string index them so")
    for constant in statuses:
        code = constant.name.removeprefix("SDM_ERROR_").lower()
        entry = f"SDM_STATUS_CODE({code}, {constant.value}, {constant.name})"
        out.append(f"{entry}{' ' * max(1, 64 - len(entry))}/* {constant.doc} */" if constant.doc else entry)
    return "\n".join(out) + "\n"


# ---- capi/struct_sizes.hpp -------------------------------------------------------------------------

def size_constant(struct, major, minor):
    """kRuntimeParamsSize_1_0 for sdm_runtime_params at 1.0."""
    return "k" + "".join(w.capitalize() for w in struct.removeprefix("sdm_").split("_")) + f"Size_{major}_{minor}"


def emit_struct_sizes(h, sizes, measured):
    out = [f"// {NOTICE}", "//",
           "// The size of each struct of sdm.h in the ABI minor it appeared in and in each minor that grew it:",
           "// what a host built against that minor's header sets struct_size to (the released headers of",
           "// tests/abi/released/, and sdm.h for the minor in development). capi.cpp refuses a struct_size",
           "// below a struct's first size, and reads the members of a later minor only within its size. The",
           "// static_asserts hold each size to sdm.h: it ends where the next minor's first field begins.",
           "#pragma once", "", "#include <cstddef>", "", "#include \"sdm/sdm.h\"", "", "namespace sdm::capi {", ""]
    asserts = []
    for name, pairs in sizes.items():
        struct, layout = h.structs[name], measured.structs[name]
        for k, (minor, size) in enumerate(pairs):
            constant = size_constant(name, h.major, minor)
            out.append(f"inline constexpr size_t {constant} = {size};")
            later = next((f for f in struct.fields if layout.fields[f.name][0] >= size), None)
            end = f"offsetof({name}, {later.name})" if later is not None else f"sizeof({name})"
            asserts.append(f'static_assert({constant} == {end}, "{name} of ABI {h.major}.{minor}");')
    out += [""] + asserts + ["", "}  // namespace sdm::capi"]
    return "\n".join(out) + "\n"
