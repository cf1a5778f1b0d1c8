#!/usr/bin/env python3
"""The cache on a tiny, full filesystem (docs/RELIABILITY.md): a tmpfs too small for one cache entry, then one
filled to the last kilobyte, then one that fills up after an entry was written. Each time a
process fetching a kernel that needs an nvJitLink link must be served (the linked image is used
from memory), the failed write must leave no entry and no temporary file behind, and no later
process may read a damaged entry. Needs root for mount (exits 77 otherwise).
Usage: full_fs.py BUILD_DIR   (meson test stress_full_fs)"""
import os
import subprocess
import sys
import tempfile

build = os.path.abspath(sys.argv[1])
root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
data = os.path.join(root, "tests", "data")
exe = os.path.join(build, "tests", "stress_cold_start")
work = tempfile.mkdtemp(prefix="sdm-full-fs-")
archive = os.path.join(work, "ptx.sdma")
subprocess.run([os.path.join(build, "tools", "sdm"), "pack", "-q", "-m", os.path.join(data, "manifest.toml"), "-o", archive,
                "kernels:compute_90=" + os.path.join(data, "kernels.compute_90.ptx")], check=True)
env = dict(os.environ, SDM_CUDA_DRIVER=os.path.join(build, "tests", "fake_cuda", "libcuda_fake.so"),
           SDM_FAKE_CUDA_DEVICES="NVIDIA H200,9.0,232448,132,62914560")
failures = []


def mount(size):
    d = tempfile.mkdtemp(dir=work)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", d], capture_output=True, text=True)
    if r.returncode != 0:
        print(f"skipped: cannot mount a tmpfs ({r.stderr.strip() or 'not root'}); this test needs root")
        sys.exit(77)
    return d


def fetch(cache, what):
    p = subprocess.run([exe, archive, "scale", "axpy"], input=b"g", capture_output=True, env=dict(env, SDM_CACHE_DIR=cache + "/sdm"))
    line = p.stdout.decode(errors="replace").strip()
    if p.returncode != 0 or not line.startswith("ok "):
        failures.append(f"{what}: not served (exit {p.returncode}): {line} {p.stderr.decode(errors='replace')}")
        return {}
    f = line.split()
    return {k: int(f[f.index(k) + 1]) for k in ("builds", "hits", "bad")}


def files(cache):
    return sorted(os.path.relpath(os.path.join(d, n), cache) for d, _, ns in os.walk(cache) for n in ns if not n.endswith(".lock"))


def fill(d, leave):
    st = os.statvfs(d)
    free = st.f_bavail * st.f_frsize
    with open(os.path.join(d, "filler"), "wb") as f:
        try:
            f.write(b"\0" * max(0, free - leave))
        except OSError:
            pass


mounts = []
try:
    # 1. Too small for one entry (one 4 KiB page; a linked image is larger).
    d = mount("4k"); mounts.append(d)
    s1, s2 = fetch(d, "4 KiB filesystem, first"), fetch(d, "4 KiB filesystem, second")
    left = [f for f in files(d) if f.endswith(".sdmc") or ".tmp" in f or "incoming" in f]
    print(f"4 KiB tmpfs: served twice ({s1.get('builds')} + {s2.get('builds')} links, {s1.get('bad', 0) + s2.get('bad', 0)} damaged entries read); "
          f"left behind: {left or 'nothing'}")
    if left: failures.append(f"4 KiB filesystem: a failed write left {left}")
    if s2.get("bad", 0) or s1.get("bad", 0): failures.append("4 KiB filesystem: a damaged entry was read")
    # 2. Full to the last kilobyte before the first write.
    d = mount("1m"); mounts.append(d)
    os.makedirs(d + "/sdm", mode=0o700)
    fill(d, 1024)
    s1, s2 = fetch(d, "full filesystem, first"), fetch(d, "full filesystem, second")
    left = [f for f in files(d) if f != "filler" and (f.endswith(".sdmc") or ".tmp" in f or "incoming" in f)]
    print(f"full 1 MiB tmpfs: served twice ({s1.get('builds')} + {s2.get('builds')} links, {s1.get('bad', 0) + s2.get('bad', 0)} damaged); "
          f"left behind: {left or 'nothing'}")
    if left: failures.append(f"full filesystem: a failed write left {left}")
    if s2.get("bad", 0) or s1.get("bad", 0): failures.append("full filesystem: a damaged entry was read")
    # 3. An entry written, then the filesystem filled: the entry still serves, nothing is damaged.
    d = mount("1m"); mounts.append(d)
    s1 = fetch(d, "filling filesystem, first")
    fill(d, 0)
    s2 = fetch(d, "filled filesystem, second")
    print(f"1 MiB tmpfs filled after the first write: first {s1.get('builds')} link(s), then {s2.get('hits')} cache hit(s), "
          f"{s2.get('builds')} link(s), {s2.get('bad', 0)} damaged")
    if s2.get("hits", 0) < 1 or s2.get("builds", 1) != 0: failures.append("filled filesystem: the entry written before did not serve")
    if s2.get("bad", 0): failures.append("filled filesystem: a damaged entry was read")
finally:
    for d in mounts:
        subprocess.run(["umount", d])
    subprocess.run(["rm", "-rf", work])
for f in failures:
    print("FAIL:", f)
sys.exit(1 if failures else 0)
