#!/usr/bin/env python3
"""The README's host examples cannot rot: each fenced block that follows a line
`<!-- example: PATH -->` must be PATH's text (between its `README begin` and `README end` comment
lines when it has them, dedented), and PATH is a file the tests compile or run. Usage:
readme_examples.py SOURCE_ROOT. Exit 1 naming each block that differs, and the first line that does."""
import re
import sys
import textwrap
from pathlib import Path

root = Path(sys.argv[1])
readme = (root / "README.md").read_text().splitlines()
failures, checked = [], 0
for i, line in enumerate(readme):
    m = re.fullmatch(r"<!-- example: (\S+) -->", line.strip())
    if not m:
        continue
    if i + 1 >= len(readme) or not readme[i + 1].startswith("```"):
        failures.append(f"README.md:{i + 1}: {m.group(1)}: no fenced block right after the marker")
        continue
    end = next(j for j in range(i + 2, len(readme)) if readme[j].startswith("```"))
    block = readme[i + 2:end]
    text = (root / m.group(1)).read_text().splitlines()
    begin = [k for k, t in enumerate(text) if "README begin" in t]
    stop = [k for k, t in enumerate(text) if "README end" in t]
    if begin:
        text = textwrap.dedent("\n".join(text[begin[0] + 1:stop[0]])).splitlines()
    checked += 1
    if block != text:
        first = next((k for k, (a, b) in enumerate(zip(block, text)) if a != b), min(len(block), len(text)))
        failures.append(f"README.md:{i + 3 + first}: the example from {m.group(1)} differs from the file at its line {first + 1}: "
                        f"README {block[first] if first < len(block) else '(ends)'!r}, file {text[first] if first < len(text) else '(ends)'!r}")
for f in failures:
    print(f, file=sys.stderr)
print(f"readme_examples: {checked} examples checked, {len(failures)} differ")
sys.exit(1 if failures or checked == 0 else 0)
