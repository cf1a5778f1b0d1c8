#!/usr/bin/env python3
"""No function of the library's or the tool's folders is longer than a reader can hold (the
`function_length` test): at most LIMIT lines from its first line to its closing brace, lambdas
inside it counted with it. Functions are found by Universal Ctags (Debian: universal-ctags), which
reports where each ends. Usage: check_function_length.py [SOURCE_ROOT] [LIMIT]. Exit 0 when all
fit, 1 listing the longest first, 77 (skipped) without Universal Ctags.
"""
import json
import os
import shutil
import subprocess
import sys

FOLDERS = ["common", "archive", "runtime", "capi", "tools"]


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
    limit = int(sys.argv[2]) if len(sys.argv) > 2 else 120
    ctags = shutil.which("ctags")
    version = subprocess.run([ctags, "--version"], capture_output=True, text=True).stdout if ctags else ""
    if "Universal Ctags" not in version:
        print("check_function_length: skipped: Universal Ctags is not installed (Debian: apt-get install universal-ctags)")
        return 77
    files = []
    for folder in FOLDERS:
        for dirpath, _, filenames in os.walk(os.path.join(root, folder)):
            files += [os.path.join(dirpath, f) for f in sorted(filenames) if f.endswith((".cpp", ".hpp", ".c", ".h"))]
    out = subprocess.run([ctags, "--output-format=json", "--languages=C++,C", "--map-C++=+.h", "--kinds-C++=f", "--kinds-C=f",
                          "--fields=+ne", "-o", "-"] + files, capture_output=True, text=True, check=True).stdout
    long = []
    for line in out.splitlines():
        tag = json.loads(line)
        if tag.get("_type") != "tag" or "end" not in tag or tag["name"].startswith("__anon"):
            continue
        length = tag["end"] - tag["line"] + 1
        if length > limit:
            scope = tag.get("scope", "")
            long.append((length, os.path.relpath(tag["path"], root), tag["line"], (scope + "::" if scope else "") + tag["name"]))
    for length, path, line, name in sorted(long, reverse=True):
        print(f"{path}:{line}: {name} is {length} lines (at most {limit}): cut it into named phases")
    print(f"check_function_length: {len(long)} function(s) over {limit} lines in {', '.join(FOLDERS)}")
    return 1 if long else 0


if __name__ == "__main__":
    sys.exit(main())
