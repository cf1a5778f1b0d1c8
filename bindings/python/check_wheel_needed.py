#!/usr/bin/env python3
"""Every NEEDED of every ELF file in a repaired wheel is a file the wheel carries, the ELF
interpreter, or a library on the allow list of auditwheel's own policy for the wheel's manylinux
tag; and neither the CUDA driver nor nvJitLink (nor nvPTXCompiler) is in the wheel: libsdm opens
them at run time, so one wheel serves every CUDA major.
Usage: check_wheel_needed.py WHEEL PLATFORM_TAG UNPACK_DIR   (run by the Python that has auditwheel;
test_wheel.sh runs it). Prints each ELF file's NEEDED; exits 1 naming each one that is neither."""

import importlib.resources
import json
import os
import re
import subprocess
import sys
import zipfile

wheel, platform, unpacked = sys.argv[1:]
zipfile.ZipFile(wheel).extractall(unpacked)
# auditwheel's policies are named without the architecture (manylinux_2_35, alias manylinux2014...).
policies = json.loads((importlib.resources.files("auditwheel.policy") / "manylinux-policy.json").read_text())
matching = [p for p in policies if platform in (f"{name}_x86_64" for name in (p["name"], *p["aliases"]))]
if len(matching) != 1:
    sys.exit(f"auditwheel's manylinux-policy.json has no policy for {platform}")
allowed = set(matching[0]["lib_whitelist"])

elves = []
for directory, _, names in os.walk(unpacked):
    for name in names:
        path = os.path.join(directory, name)
        with open(path, "rb") as f:
            if f.read(4) == b"\x7fELF":
                elves.append(path)
bundled = {os.path.basename(path) for path in elves}
failures = [f"{name} is in the wheel: the system's must be used" for name in sorted(bundled)
            if re.match(r"lib(cuda|nvJitLink|nvptxcompiler)", name, re.IGNORECASE)]
if not elves:
    failures.append("the wheel has no ELF file: where is libsdm?")

for path in sorted(elves):
    where = os.path.relpath(path, unpacked)
    headers = subprocess.run(["readelf", "-l", "-W", path], capture_output=True, text=True, check=True).stdout
    dynamic = subprocess.run(["readelf", "-d", "-W", path], capture_output=True, text=True, check=True).stdout
    # The dynamic loader is glibc's, as auditwheel counts it: an executable names it as its
    # interpreter; a shared object may need it by name (ld-linux-x86-64.so.2) for its symbols.
    interpreter = re.search(r"program interpreter: ([^\]]+)\]", headers)
    loader = {os.path.basename(interpreter[1])} if interpreter else set()
    loader.add("ld-linux-x86-64.so.2")
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dynamic)
    print(f"{where}: NEEDED {', '.join(needed) or 'nothing'}")
    failures += [f"{where} needs {name}: neither in the wheel nor on {platform}'s allow list"
                 for name in needed if name not in bundled | allowed | loader]

for failure in failures:
    print("FAIL:", failure)
sys.exit(1 if failures else 0)
