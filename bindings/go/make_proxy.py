#!/usr/bin/env python3
"""Writes a Go module proxy (GOPROXY=file://PROXY_DIR) holding one module directory as one version,
in the layout proxy.golang.org serves: MODULE/@v/list, VERSION.info, VERSION.mod and VERSION.zip,
whose entries are named MODULE@VERSION/PATH. That is what a tag bindings/go/VERSION of the
repository would publish; test_vendored.sh resolves the binding through it, with no replace.
Usage: make_proxy.py MODULE_DIR MODULE_PATH VERSION PROXY_DIR"""

import json
import os
import sys
import zipfile

source, module, version, proxy = sys.argv[1:]
if module != module.lower():
    sys.exit(f"{module}: upper case in a module path is escaped in a proxy (!x), which this writer does not do")
at = os.path.join(proxy, module, "@v")
os.makedirs(at)
with open(os.path.join(at, "list"), "w") as f:
    f.write(version + "\n")
with open(os.path.join(at, version + ".info"), "w") as f:
    json.dump({"Version": version, "Time": "2026-01-01T00:00:00Z"}, f)
with open(os.path.join(source, "go.mod")) as f, open(os.path.join(at, version + ".mod"), "w") as out:
    out.write(f.read())
# Every file of the module's directory, as `go mod download` would unpack it.
with zipfile.ZipFile(os.path.join(at, version + ".zip"), "w", zipfile.ZIP_DEFLATED) as z:
    for directory, subdirectories, names in os.walk(source):
        subdirectories[:] = sorted(d for d in subdirectories if d != "__pycache__")
        for name in sorted(names):
            path = os.path.join(directory, name)
            z.write(path, f"{module}@{version}/{os.path.relpath(path, source)}")
print(f"make_proxy.py: {module} {version} in {proxy}")
