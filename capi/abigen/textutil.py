"""Helpers every emitter shares: the walk over the header's sections, headings, blank lines,
wrapping."""

from .model import Function, Section


def sections(header):
    """header.items grouped by section: [(title or None, [items])]."""
    groups = [(None, [])]
    for item in header.items:
        if isinstance(item, Section):
            groups.append((item.title, []))
        else:
            groups[-1][1].append(item)
    return [(title, items) for title, items in groups if items]


def walk(header, declare, heading):
    """One walk over the header's sections for a binding: the lines of each section's declarations
    (`declare(item)` gives an item's lines, a function's aside), under `heading(title)` (None:
    the declarations before the first section) where the section declares anything, and the
    functions, grouped by section: (lines, [[Function]])."""
    lines, functions = [], []
    for title, items in sections(header):
        block = [line for item in items if not isinstance(item, Function) for line in declare(item)]
        if block:
            lines += heading(title) + block
        in_section = [item for item in items if isinstance(item, Function)]
        if in_section:
            functions.append(in_section)
    return lines, functions


def joined(groups, render):
    """The lines `render(item)` gives for each item of each group, a blank line between groups."""
    out = []
    for k, group in enumerate(groups):
        out += ([""] if k else []) + [line for item in group for line in render(item)]
    return out


def rule(prefix, title, width=100, suffix=""):
    """A section heading in the bindings' style: `# ---- title ------...`."""
    text = f"{prefix} ---- {title} "
    return text + "-" * max(3, width - len(text) - len(suffix)) + suffix


def minor_label(major, minor):
    return f"ABI {major}.{minor}"


def collapse_blank_lines(lines, keep=1):
    """`lines` with at most `keep` blank lines in a row, none first or last."""
    out = []
    for line in lines:
        if line == "" and (not out or out[-keep:] == [""] * keep):
            continue
        out.append(line)
    while out and out[-1] == "":
        out.pop()
    return out

