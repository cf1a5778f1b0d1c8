"""The size of each struct in each ABI minor: what a host built against the header of that minor
sets struct_size to. The released minors' sizes come from probes of their headers in
tests/abi/released/, the minor in development's from sdm.h's."""

import re

from .layouts import probe
from .model import RELEASED, TABLE
from .reader import read_header


def minor_sizes(current, measured, cc):
    """{struct name: [(minor, size)]}, a pair for the minor a struct appeared in and for each minor
    that grew it, oldest first (the function table, sized by api_table.inc, left out)."""
    sizes = {}
    released = sorted(int(d.name.split(".")[1]) for d in (RELEASED.iterdir() if RELEASED.is_dir() else [])
                      if re.fullmatch(rf"{current.major}\.\d+", d.name) and (d / "sdm" / "sdm.h").is_file())
    for minor in released:
        directory = RELEASED / f"{current.major}.{minor}"
        for name, layout in probe(read_header(directory / "sdm" / "sdm.h"), directory, cc).structs.items():
            sizes.setdefault(name, {})[minor] = layout.size
    for name, layout in measured.structs.items():
        sizes.setdefault(name, {})[current.minor] = layout.size
    out = {}
    for name in current.structs:
        if name == TABLE or name not in sizes:
            continue
        pairs, previous = [], None
        for minor, size in sorted(sizes[name].items()):
            if size != previous:
                pairs.append((minor, size))
            previous = size
        out[name] = pairs
    return out
