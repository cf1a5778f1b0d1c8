#!/usr/bin/env python3
"""The EXAMPLES and ENVIRONMENT sections of the man pages, as a help2man --include file, taken from
README.md and the docs/ beside it so each fact is written once: ENVIRONMENT from the table under
"## Environment" of docs/HOSTS.md (which tests/tool/env_documented.py checks against the table of
runtime/platform/settings.cpp), EXAMPLES for sdm(1) from the blocks the README marks `<!-- test: quickstart -->`
and `no-gpu` (which the test readme_quickstart runs), for sdm-COMMAND(1) from that command's lines
in the block under "## The `sdm` command" of docs/TOOL.md. Usage: man_include.py README COMMAND
(empty: sdm(1)); writes to stdout."""
import re
import sys
from pathlib import Path

readme = Path(sys.argv[1])
lines = readme.read_text().splitlines()
command = sys.argv[2]


def roff(text):
    """Markdown inline text as roff: code spans bold, links as their text."""
    text = text.replace("\\", "\\e")
    text = re.sub(r"\[([^\]]+)\]\([^)]+\)", r"\1", text)
    text = re.sub(r"`([^`]+)`", r"\\fB\1\\fR", text)
    return text.replace("'", "\\(aq")


def section(title, lines):
    start = lines.index(title) + 1
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("## ")), len(lines))
    return lines[start:end]


def first_block(body, after=None):
    """The fenced block right after the line `after`, else the first one of body."""
    i = body.index(after) + 1 if after else next(i for i, l in enumerate(body) if l.startswith("```"))
    end = next(j for j in range(i + 1, len(body)) if body[j].startswith("```"))
    return body[i + 1:end]


def literal(block):
    out = [".nf"]
    for line in block:
        out.append(("\\&" if line.startswith((".", "'")) else "") + line.replace("\\", "\\e").replace("\u2026", "\\[u2026]"))
    return out + [".fi"]


out = ["[EXAMPLES]"]
if not command:
    out += literal(first_block(lines, "<!-- test: quickstart -->") + first_block(lines, "<!-- test: no-gpu -->"))
    out.append("The README (share/doc/sdm/README.md) explains each step.")
else:
    examples, keep = [], False
    for line in first_block(section("## The `sdm` command", (readme.parent / "docs" / "TOOL.md").read_text().splitlines())):
        if line.startswith("sdm "):
            keep = line.startswith(f"sdm {command} ") or line == f"sdm {command}"
        if keep:
            examples.append(line)
    if not examples:
        sys.exit(f"man_include.py: no line for sdm {command} in docs/TOOL.md's \"The `sdm` command\" block")
    out += literal(examples)

out += ["", "[ENVIRONMENT]", "libsdm and the tool read these; a host's API setting wins over each (the tool sets none)."]
rows = [l for l in section("## Environment", (readme.parent / "docs" / "HOSTS.md").read_text().splitlines()) if l.startswith("| `")]
if not rows:
    sys.exit("man_include.py: no rows in docs/HOSTS.md's Environment table")
for row in rows:
    name, meaning = (cell.strip() for cell in row.strip("|").split("|", 1))
    out += [".TP", ".B " + name.strip("`"), roff(meaning.rstrip("|").strip())]
print("\n".join(out))
