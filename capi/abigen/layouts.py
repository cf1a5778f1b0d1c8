"""Layouts: the LP64 rules applied to the model, and the C compiler's probe of a header that they
are checked against."""

import shlex
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .model import AbiError, POINTER_SIZE, SCALARS, display, header_error


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

