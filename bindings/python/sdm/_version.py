"""The package's version: sdm's release, the `version:` of project() in the top-level meson.build.

The source tree reads it from there. An installed package has no meson.build beside it, so the
wheel's build (setup.py, which takes the wheel's version from this module) replaces this file in
the wheel with the value.
"""

import re
from pathlib import Path


def _read(meson_build: Path) -> str:
    match = re.search(r"^project\([^)]*?\bversion:\s*'([^']+)'", meson_build.read_text(), re.MULTILINE)
    if match is None:
        raise RuntimeError(f"{meson_build} declares no project version")
    return match[1]


__version__ = _read(Path(__file__).resolve().parents[3] / "meson.build")
