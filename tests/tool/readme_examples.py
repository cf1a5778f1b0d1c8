#!/usr/bin/env python3
"""The examples of the README and docs/ cannot rot.

readme_examples.py SOURCE_ROOT: in README.md and docs/*.md, each fenced block that follows a line
`<!-- example: PATH -->` must be PATH's text (between its `README begin` and `README end` comment
lines when it has them, dedented), and PATH is a file the tests compile or run; in README.md, each
line `<!-- test: NAME -->` must be followed by a fenced block too (the commands
tests/hosts/readme_quickstart.sh runs), and so must each `<!-- output: NAME -->` (what those
commands print last), whose NAME must be a test block's. Exit 1 naming each block that differs or
is missing, and the first line that differs.

readme_examples.py --commands NAME README: prints the commands of the block marked
`<!-- test: NAME -->`, exactly as the README has them (exit 1 when there is no such block).
readme_examples.py --output NAME README: the same for the block marked `<!-- output: NAME -->`.
"""
import re
import sys
import textwrap
from pathlib import Path

def fenced_block(lines, i):
    """The lines of the fenced block right after line i (a marker), or None when none follows."""
    if i + 1 >= len(lines) or not lines[i + 1].startswith("```"):
        return None
    end = next((j for j in range(i + 2, len(lines)) if lines[j].startswith("```")), None)
    return None if end is None else lines[i + 2:end]


def markers(lines, kind):
    """(line index, argument) of each `<!-- KIND: ARGUMENT -->` line."""
    for i, line in enumerate(lines):
        m = re.fullmatch(rf"<!-- {kind}: (\S+) -->", line.strip())
        if m:
            yield i, m.group(1)


if sys.argv[1] in ("--commands", "--output"):
    kind = "test" if sys.argv[1] == "--commands" else "output"
    name, readme = sys.argv[2], Path(sys.argv[3]).read_text().splitlines()
    found = [fenced_block(readme, i) for i, marker in markers(readme, kind) if marker == name]
    if not found or found[0] is None:
        sys.exit(f"{sys.argv[3]}: no fenced block after a line <!-- {kind}: {name} -->")
    print("\n".join(found[0]))
    sys.exit(0)

root = Path(sys.argv[1])
readme = (root / "README.md").read_text().splitlines()
failures, checked = [], 0
tests = {name for _, name in markers(readme, "test")}
for kind in ("test", "output"):
    for i, name in markers(readme, kind):
        if fenced_block(readme, i) is None:
            failures.append(f"README.md:{i + 1}: {kind} {name}: no fenced block right after the marker")
        elif kind == "output" and name not in tests:
            failures.append(f"README.md:{i + 1}: output {name}: no block <!-- test: {name} --> prints it")
documents = [root / "README.md"] + sorted((root / "docs").glob("*.md"))
examples = [(document, i, path, lines) for document in documents
            for lines in [document.read_text().splitlines()] for i, path in markers(lines, "example")]
for document, i, path, lines in examples:
    where = document.relative_to(root)
    block = fenced_block(lines, i)
    if block is None:
        failures.append(f"{where}:{i + 1}: {path}: no fenced block right after the marker")
        continue
    text = (root / path).read_text().splitlines()
    begin = [k for k, t in enumerate(text) if "README begin" in t]
    stop = [k for k, t in enumerate(text) if "README end" in t]
    if begin:
        text = textwrap.dedent("\n".join(text[begin[0] + 1:stop[0]])).splitlines()
    checked += 1
    if block != text:
        first = next((k for k, (a, b) in enumerate(zip(block, text)) if a != b), min(len(block), len(text)))
        failures.append(f"{where}:{i + 3 + first}: the example from {path} differs from the file at its line {first + 1}: "
                        f"{where.name} {block[first] if first < len(block) else '(ends)'!r}, file {text[first] if first < len(text) else '(ends)'!r}")
for f in failures:
    print(f, file=sys.stderr)
print(f"readme_examples: {checked} examples checked, {len(failures)} differ or lack their block")
sys.exit(1 if failures or checked == 0 else 0)
