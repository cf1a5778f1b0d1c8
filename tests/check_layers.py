#!/usr/bin/env python3
"""The include graph against docs/ARCHITECTURE.md (the `layers_graph` test).

Checks, over every C/C++ file of the layer folders and of the folders that use them:
- the folders' order: common -> archive -> runtime -> capi -> tools; a layer includes only the
  layers before it (tests, benches and examples may include any);
- a header of another folder is included by its folder's name ("common/result.hpp"), one of the
  file's own folder bare ("result.hpp");
- inside runtime/ and archive/, the rooms of ARCHITECTURE.md's tables: every file belongs to
  exactly one room, and includes only its own room's headers and those of the rooms its row
  allows;
- no circle: within a folder, the graph of files (x.hpp and x.cpp as one node) has no cycle;
- only runtime.cpp includes runtime.hpp inside runtime/.
Usage: check_layers.py [SOURCE_ROOT]. Exit 0 when all holds, 1 listing every breach.
"""
import os
import re
import sys

LAYERS = ["common", "archive", "runtime", "capi", "tools"]
USERS = ["tests", "bench", "examples"]
SOURCES = (".hpp", ".cpp", ".h", ".c", ".inc", ".cu", ".cuh")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def rooms_of(architecture, folder):
    """{stem: room} and {room: allowed rooms} from the table after <!-- rooms: FOLDER -->."""
    marker = f"<!-- rooms: {folder} -->"
    if marker not in architecture:
        raise SystemExit(f"docs/ARCHITECTURE.md: no '{marker}' table")
    table = architecture.split(marker, 1)[1].split("<!-- end rooms -->", 1)[0]
    rooms, allowed, order = {}, {}, []
    for line in table.strip().splitlines()[2:]:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 4:
            raise SystemExit(f"docs/ARCHITECTURE.md ({folder}): a row of {len(cells)} cells: {line}")
        room, files, _, may = cells
        order.append(room)
        allowed[room] = {r.strip() for r in may.split(",") if r.strip()}
        for stem in re.findall(r"`([^`]+)`", files):
            if stem in rooms:
                raise SystemExit(f"docs/ARCHITECTURE.md ({folder}): {stem} is in two rooms ({rooms[stem]}, {room})")
            rooms[stem] = room
    for room, may in allowed.items():
        for other in may:
            if other not in allowed:
                raise SystemExit(f"docs/ARCHITECTURE.md ({folder}): room {room} may include an unknown room {other}")
            if order.index(other) >= order.index(room):
                raise SystemExit(f"docs/ARCHITECTURE.md ({folder}): room {room} may include {other}, which is not below it")
    return rooms, allowed


def files_under(root, top):
    for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
        dirnames[:] = [d for d in dirnames if d not in ("released", "corpus", "corpora", "golden", "data")]
        for f in sorted(filenames):
            if f.endswith(SOURCES):
                yield os.path.relpath(os.path.join(dirpath, f), root)


def find_cycle(graph):
    """A cycle of `graph` (node -> set of nodes) as a list, or None."""
    state, stack = {}, []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state:
                found = visit(m)
                if found:
                    return found
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state:
            found = visit(n)
            if found:
                return found
    return None


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
    architecture = open(os.path.join(root, "docs", "ARCHITECTURE.md"), encoding="utf-8").read()
    breaches = []
    headers = {d: {f for f in os.listdir(os.path.join(root, d)) if f.endswith((".hpp", ".h", ".inc"))} for d in LAYERS}
    rooms = {d: rooms_of(architecture, d) for d in ("runtime", "archive")}
    graphs = {d: {} for d in LAYERS}

    for top in LAYERS + USERS:
        for path in files_under(root, top):
            folder = os.path.dirname(path)
            text = open(os.path.join(root, path), encoding="utf-8", errors="replace").read()
            stem = os.path.splitext(os.path.basename(path))[0]
            for name in INCLUDE.findall(text):
                if "/" not in name:
                    # Bare: the file's own folder (or a file beside it), never another layer's header.
                    if os.path.exists(os.path.join(root, folder, name)):
                        if folder in rooms or folder in LAYERS:
                            graphs[folder].setdefault(stem, set()).add(os.path.splitext(name)[0])
                        continue
                    owner = [d for d in LAYERS if name in headers[d]]
                    if owner:
                        breaches.append(f"{path}: #include \"{name}\" is {owner[0]}/'s: write \"{owner[0]}/{name}\"")
                    continue
                target_folder, _, target = name.rpartition("/")
                if target_folder not in LAYERS:
                    continue  # sdm/sdm.h, gsl/..., a path relative to the file
                if target_folder == folder:
                    breaches.append(f"{path}: #include \"{name}\" is its own folder's: write \"{target}\"")
                if top in LAYERS and LAYERS.index(target_folder) > LAYERS.index(top):
                    breaches.append(f"{path}: #include \"{name}\" runs back up, from {top}/ to {target_folder}/ (order: {' -> '.join(LAYERS)})")

    for folder, (room_of, allowed) in rooms.items():
        stems = {os.path.splitext(os.path.basename(p))[0] for p in files_under(root, folder) if os.path.dirname(p) == folder}
        for stem in sorted(stems - set(room_of)):
            breaches.append(f"{folder}/{stem}: in no room of docs/ARCHITECTURE.md's {folder} table; add it to the room it belongs to")
        for stem in sorted(set(room_of) - stems):
            breaches.append(f"docs/ARCHITECTURE.md's {folder} table names {stem}, which {folder}/ does not hold")
        for stem, targets in sorted(graphs[folder].items()):
            mine = room_of.get(stem)
            for t in sorted(targets):
                theirs = room_of.get(t)
                if mine is None or theirs is None or theirs == mine:
                    continue
                if theirs not in allowed[mine]:
                    breaches.append(f"{folder}/{stem} (room {mine}) includes {t} (room {theirs}), which its row does not allow")

    for folder, graph in graphs.items():
        cycle = find_cycle({n: {m for m in ms if m != n} for n, ms in graph.items()})
        if cycle:
            breaches.append(f"{folder}/: a circle of includes: {' -> '.join(cycle)}")

    hub = sorted(p for p in files_under(root, "runtime") if '"runtime.hpp"' in open(os.path.join(root, p), encoding="utf-8").read()
                 and os.path.basename(p) != "runtime.cpp")
    for p in hub:
        breaches.append(f"{p} includes runtime.hpp: give it the rooms it needs as arguments (docs/ARCHITECTURE.md)")

    for b in breaches:
        print(b)
    print(f"check_layers: {len(breaches)} breach(es)")
    return 1 if breaches else 0


if __name__ == "__main__":
    sys.exit(main())
