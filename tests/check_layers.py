#!/usr/bin/env python3
"""The include graph against docs/ARCHITECTURE.md (the `layers_graph` test).

Checks, over every C/C++ file of the layer folders and of the folders that use them:
- the folders' order: common -> archive -> runtime -> capi -> tools; a layer includes only the
  layers before it (tests, benches and examples may include any);
- a header of another folder is included by its path from the source root ("common/result.hpp",
  "runtime/jit/cache.hpp"), one of the file's own folder bare ("result.hpp");
- inside runtime/, the folders of ARCHITECTURE.md's folder table: a file's room is its folder, so
  every file sits in a folder the table names (only the facade, runtime.hpp and runtime.cpp, sits
  directly in runtime/), and a folder includes only the folders above it in the table;
- inside archive/, the rooms of ARCHITECTURE.md's table: every file belongs to exactly one room,
  and includes only its own room's headers and those of the rooms its row allows;
- no circle: within a layer, the graph of files (x.hpp and x.cpp as one node) has no cycle;
- only runtime.cpp includes runtime.hpp inside runtime/;
- an operating system's headers (POSIX's unistd.h, fcntl.h, dlfcn.h, sys/..., Windows') only in
  the platform code: runtime/platform/, the archive layer's file_map and common/windows_text (a
  port replaces those files and nothing else in the library).
Usage: check_layers.py [SOURCE_ROOT]. Exit 0 when all holds, 1 listing every breach.
"""
import os
import re
import sys

LAYERS = ["common", "archive", "runtime", "capi", "tools"]
USERS = ["tests", "bench", "examples"]
SOURCES = (".hpp", ".cpp", ".h", ".c", ".inc", ".cu", ".cuh")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
FACADE = {"runtime.hpp", "runtime.cpp", "meson.build"}  # what may sit directly in runtime/
OS_HEADER = re.compile(r'^\s*#\s*include\s+<((?:unistd|fcntl|dlfcn|dirent|pwd|grp|poll|spawn|pthread|sched|termios|glob|libgen|'
                       r'windows|winbase|io|direct|aclapi|sddl|shlobj|knownfolders)\.h|sys/[a-z_]+\.h)>', re.M | re.I)
LIBRARY = ["common", "archive", "runtime", "capi"]  # what libsdm is built from


def platform_code(path):
    """Whether `path` is the library's platform code, where an OS's headers belong."""
    return path.startswith("runtime/platform/") or re.fullmatch(r"archive/file_map(_[a-z]+)?\.cpp|common/windows_text\.cpp", path) is not None


def table_after(architecture, marker, end):
    """The rows (lists of cells) of the Markdown table between `marker` and `end`."""
    if marker not in architecture:
        raise SystemExit(f"docs/ARCHITECTURE.md: no '{marker}' table")
    table = architecture.split(marker, 1)[1].split(end, 1)[0]
    return [[c.strip() for c in line.strip().strip("|").split("|")] for line in table.strip().splitlines()[2:]]


def runtime_folders(architecture):
    """The folders of runtime/, in include order (a folder may include those before it)."""
    folders = []
    for cells in table_after(architecture, "<!-- folders: runtime -->", "<!-- end folders -->"):
        named = re.fullmatch(r"`([a-z_]+)/`", cells[0])
        if not named:
            raise SystemExit(f"docs/ARCHITECTURE.md (runtime folders): a row whose first cell is not a `folder/`: {cells[0]}")
        folders.append(named.group(1))
    return folders


def rooms_of(architecture, folder):
    """{stem: room} and {room: allowed rooms} from the table after <!-- rooms: FOLDER -->."""
    rooms, allowed, order = {}, {}, []
    for cells in table_after(architecture, f"<!-- rooms: {folder} -->", "<!-- end rooms -->"):
        if len(cells) != 4:
            raise SystemExit(f"docs/ARCHITECTURE.md ({folder}): a row of {len(cells)} cells: {' | '.join(cells)}")
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
        dirnames[:] = sorted(d for d in dirnames if d not in ("released", "corpus", "corpora", "golden", "data"))
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


def node(path):
    """A file's node in its layer's graph: its path below the layer without the extension
    ("jit/cache" for runtime/jit/cache.hpp and .cpp alike)."""
    return os.path.splitext(path.split("/", 1)[1])[0]


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
    architecture = open(os.path.join(root, "docs", "ARCHITECTURE.md"), encoding="utf-8").read()
    breaches = []
    # Every header of a layer by its name, for a bare include that should have named its folder.
    headers = {}
    for d in LAYERS:
        for p in files_under(root, d):
            if p.endswith((".hpp", ".h", ".inc")):
                headers.setdefault(os.path.basename(p), p)
    folders = runtime_folders(architecture)
    room_of, allowed = rooms_of(architecture, "archive")
    graphs = {d: {} for d in LAYERS}

    def runtime_rank(path):
        """The runtime file's folder's place in the table (-1 for the facade, which may include any)."""
        sub = path.split("/")[1:-1]
        return folders.index(sub[0]) if len(sub) == 1 and sub[0] in folders else -1

    for p in files_under(root, "runtime"):
        sub = p.split("/")[1:-1]
        if not sub and os.path.basename(p) not in FACADE:
            breaches.append(f"{p}: only the facade (runtime.hpp, runtime.cpp) sits directly in runtime/; move it into the folder of its concept")
        elif len(sub) > 1 or (sub and sub[0] not in folders):
            breaches.append(f"{p}: runtime/{'/'.join(sub)}/ is not a folder of docs/ARCHITECTURE.md's runtime folder table "
                            f"({', '.join(f + '/' for f in folders)}); put the file in one, or add a row for a new concept")
    for f in folders:
        if not os.path.isdir(os.path.join(root, "runtime", f)):
            breaches.append(f"docs/ARCHITECTURE.md's runtime folder table names {f}/, which runtime/ does not hold")

    for top in LAYERS + USERS:
        for path in files_under(root, top):
            folder = os.path.dirname(path)
            text = open(os.path.join(root, path), encoding="utf-8", errors="replace").read()
            graph = graphs[top] if top == "runtime" or folder in LAYERS else None
            for name in INCLUDE.findall(text):
                if "/" not in name:
                    # Bare: the file's own folder (or a file beside it), never another folder's header.
                    if os.path.exists(os.path.join(root, folder, name)):
                        if graph is not None:
                            graph.setdefault(node(path), set()).add(node(os.path.join(folder, name)))
                        continue
                    owner = headers.get(name)
                    if owner:
                        breaches.append(f"{path}: #include \"{name}\" is {os.path.dirname(owner)}/'s: write \"{owner}\"")
                    continue
                layer = name.split("/", 1)[0]
                if layer not in LAYERS:
                    if layer in folders and os.path.exists(os.path.join(root, "runtime", name)):
                        breaches.append(f"{path}: #include \"{name}\": write \"runtime/{name}\"")
                    continue  # sdm/sdm.h, gsl/..., a path relative to the file
                if os.path.dirname(name) == folder:
                    breaches.append(f"{path}: #include \"{name}\" is its own folder's: write \"{os.path.basename(name)}\"")
                if top in LAYERS and LAYERS.index(layer) > LAYERS.index(top):
                    breaches.append(f"{path}: #include \"{name}\" runs back up, from {top}/ to {layer}/ (order: {' -> '.join(LAYERS)})")
                if layer != "runtime":
                    continue
                if not os.path.exists(os.path.join(root, name)) and os.path.basename(name) in headers:
                    breaches.append(f"{path}: #include \"{name}\": no such file; write \"{headers[os.path.basename(name)]}\"")
                    continue
                if top == "runtime":
                    graph.setdefault(node(path), set()).add(node(name))
                    mine, theirs = runtime_rank(path), runtime_rank(name)
                    if mine >= 0 and theirs >= mine and os.path.dirname(name) != folder:
                        breaches.append(f"{path}: #include \"{name}\": runtime/{folders[mine]}/ may include only the folders above it "
                                        f"in docs/ARCHITECTURE.md's runtime folder table ({', '.join(f + '/' for f in folders[:mine]) or 'none'})")

    stems = {node(p) for p in files_under(root, "archive") if os.path.dirname(p) == "archive"}
    for stem in sorted(stems - set(room_of)):
        breaches.append(f"archive/{stem}: in no room of docs/ARCHITECTURE.md's archive table; add it to the room it belongs to")
    for stem in sorted(set(room_of) - stems):
        breaches.append(f"docs/ARCHITECTURE.md's archive table names {stem}, which archive/ does not hold")
    for stem, targets in sorted(graphs["archive"].items()):
        mine = room_of.get(stem)
        for t in sorted(targets):
            theirs = room_of.get(t)
            if mine is None or theirs is None or theirs == mine:
                continue
            if theirs not in allowed[mine]:
                breaches.append(f"archive/{stem} (room {mine}) includes {t} (room {theirs}), which its row does not allow")

    for layer, graph in graphs.items():
        cycle = find_cycle({n: {m for m in ms if m != n} for n, ms in graph.items()})
        if cycle:
            breaches.append(f"{layer}/: a circle of includes: {' -> '.join(cycle)}")

    for top in LIBRARY:
        for path in files_under(root, top):
            if platform_code(path):
                continue
            text = open(os.path.join(root, path), encoding="utf-8", errors="replace").read()
            for header in OS_HEADER.findall(text):
                breaches.append(f"{path}: #include <{header}> is the operating system's: call runtime/platform/platform.hpp "
                                f"(or add what is missing there) so that a port replaces only the platform files")

    for n, targets in sorted(graphs["runtime"].items()):
        if "runtime" in targets and n != "runtime":
            breaches.append(f"runtime/{n} includes runtime.hpp: give it the objects it needs as arguments (docs/ARCHITECTURE.md)")

    for b in breaches:
        print(b)
    print(f"check_layers: {len(breaches)} breach(es)")
    return 1 if breaches else 0


if __name__ == "__main__":
    sys.exit(main())
