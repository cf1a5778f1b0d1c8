"""The pins of tests/abi/layout.c: the numbers of the newest released header, and of sdm.h for
what it adds after that release."""

import re
from dataclasses import dataclass

from .model import AbiError, RELEASED, display, header_error
from .reader import read_header
from .layouts import probe


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

