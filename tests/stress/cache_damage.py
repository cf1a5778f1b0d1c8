#!/usr/bin/env python3
"""The cache under attack in place (docs/RELIABILITY.md): for SECONDS, 32 host processes at a time
fetch every kernel of an archive on four fake devices (decoded cubins and an nvJitLink output go
through one shared cache), while damagers rewrite the cache's entries in place: truncate, flip
bytes, append garbage, rename garbage over them. The fake driver logs the XXH3-128 of every image
it is handed (SDM_FAKE_CUDA_IMAGE_LOG); each must be one of the archive's images or what nvJitLink
made of its PTX in an undamaged reference run. Then the damage stops, one more wave runs, and the
cache must hold no more than its cap.

Must hold: every host exits 0 (no crash, no failed fetch), 0 images served that are not the
archive's, the cache within its cap after the run. Prints the figures.
Usage: cache_damage.py BUILD_DIR [SECONDS]   (meson test stress_cache_damage, also under ASan)"""
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time

build = os.path.abspath(sys.argv[1])
seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 20
root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
data = os.path.join(root, "tests", "data")
sdm = os.path.join(build, "tools", "sdm")
host = os.path.join(build, "tests", "stress_cold_start")
HOSTS, DAMAGERS = 32, 4
CAP = 1536 * 1024  # an image up to a quarter of it (384 KiB) is cached

work = tempfile.mkdtemp(prefix="sdm-cache-damage-")
cache = os.path.join(work, "cache")
# The sm_90 cubin with 300 KiB of incompressible bytes after its ELF extent (which the driver never
# reads): a cache entry of more than 256 KiB, the size sdm used to map instead of reading.
big = os.path.join(work, "kernels.sm_90.cubin")
with open(os.path.join(data, "kernels.sm_90.cubin"), "rb") as f, open(big, "wb") as out:
    out.write(f.read() + random.Random(1).randbytes(300 * 1024))
archive = os.path.join(work, "k.sdma")
subprocess.run([sdm, "pack", "-q", "--prefix", "off", "--dict", "off", "-m", os.path.join(data, "manifest.toml"), "-o", archive,
                "kernels:sm_90=" + big, "kernels:sm_80=" + os.path.join(data, "kernels.sm_80.cubin"),
                "kernels:compute_80=" + os.path.join(data, "kernels.compute_80.ptx")], check=True)
# The archive's cubins as the driver reads them: their XXH3-128, as `sdm ls --json` prints it.
plain = os.path.join(work, "plain.sdma")
subprocess.run([sdm, "pack", "-q", "--store", "-o", plain, "kernels:sm_90=" + os.path.join(data, "kernels.sm_90.cubin"),
                "kernels:sm_80=" + os.path.join(data, "kernels.sm_80.cubin")], check=True)
# (Packed without a manifest, the archive still has one: the kernels with their derived signatures.)
cubins = {e["xxh3_128"] for e in json.loads(subprocess.run([sdm, "ls", "--json", plain], check=True, capture_output=True).stdout)["entries"]
          if e["kind"] == "cubin"}

env = dict(os.environ,
           SDM_CUDA_DRIVER=os.path.join(build, "tests", "fake_cuda", "libcuda_fake.so"),
           SDM_FAKE_CUDA_DEVICES="NVIDIA H200,9.0,232448,132,62914560;NVIDIA A100-SXM4-80GB,8.0,166912,108,41943040;"
                                 "NVIDIA GeForce RTX 5090,12.0,101376,170,100663296;NVIDIA H100 80GB HBM3,9.0,232448,132,52428800",
           SDM_CACHE_DIR=cache, SDM_CACHE_MAX_BYTES=str(CAP))
env.pop("SDM_CACHE_DISABLE", None)
failures = []


def run_host(image_log):
    p = subprocess.run([host, archive, "scale", "axpy"], input=b"g", capture_output=True, timeout=300,
                       env=dict(env, SDM_FAKE_CUDA_IMAGE_LOG=image_log))
    return p.returncode, (p.stdout + p.stderr).decode(errors="replace").strip()


# The reference run, undamaged: what nvJitLink makes of the PTX for sm_120.
reference_log = os.path.join(work, "reference.log")
rc, out = run_host(reference_log)
if rc != 0:
    print("FAIL: the reference run:", out)
    sys.exit(1)
expected = set(open(reference_log).read().split())
if not cubins <= expected:
    failures.append(f"the reference run did not load the archive's cubins {sorted(cubins - expected)}")
subprocess.run(["rm", "-rf", cache])

stop = threading.Event()
damage = {"truncate": 0, "flip": 0, "append": 0, "rename": 0}
lock = threading.Lock()


def damager(seed):
    rng = random.Random(seed)
    while not stop.is_set():
        entries = [os.path.join(d, n) for d, _, files in os.walk(cache) for n in files if n.endswith(".sdmc")]
        if not entries:
            time.sleep(0.001)
            continue
        path = rng.choice(entries)
        how = rng.choice(list(damage))
        try:
            if how == "truncate":
                os.truncate(path, rng.randrange(0, max(1, os.path.getsize(path))))
            elif how == "flip":
                with open(path, "r+b") as f:
                    f.seek(rng.randrange(0, max(1, os.path.getsize(path))))
                    f.write(bytes([rng.randrange(256)]))
            elif how == "append":
                with open(path, "ab") as f:
                    f.write(rng.randbytes(rng.randrange(1, 65536)))
            else:
                tmp = path + ".garbage"
                with open(tmp, "wb") as f:
                    f.write(rng.randbytes(rng.randrange(1, 400000)))
                os.chmod(tmp, 0o600)
                os.rename(tmp, path)
            with lock:
                damage[how] += 1
        except OSError:
            pass  # the entry went meanwhile (evicted, renamed): try another
        time.sleep(rng.uniform(0, 0.002))


stress_log = os.path.join(work, "stress.log")
results = {"hosts": 0, "failed": 0, "bad": 0, "builds": 0}


def hosts_loop(deadline):
    while time.monotonic() < deadline:
        rc, out = run_host(stress_log)
        with lock:
            results["hosts"] += 1
            if rc == 0 and out.startswith("ok "):
                f = out.split()
                results["bad"] += int(f[f.index("bad") + 1])
                results["builds"] += int(f[f.index("builds") + 1])
            else:
                results["failed"] += 1
                if len(failures) < 10:
                    failures.append(f"a host failed (exit {rc}): {out[:500]}")


start = time.monotonic()
damagers = [threading.Thread(target=damager, args=(i,)) for i in range(DAMAGERS)]
for d in damagers:
    d.start()
deadline = start + seconds
workers = [threading.Thread(target=hosts_loop, args=(deadline,)) for _ in range(HOSTS)]
for w in workers:
    w.start()
for w in workers:
    w.join()
stop.set()
for d in damagers:
    d.join()
# Damage over: one more wave heals what is left, and the cap must hold.
final = [threading.Thread(target=lambda: results.__setitem__("final", run_host(stress_log))) for _ in range(1)]
for t in final:
    t.start()
for t in final:
    t.join()
if results["final"][0] != 0:
    failures.append("the host after the damage failed: " + results["final"][1])
served = open(stress_log).read().split() if os.path.exists(stress_log) else []
changed = [h for h in served if h not in expected]
if changed:
    failures.append(f"{len(changed)} images handed to the driver were not the archive's: {sorted(set(changed))[:5]}")
stats = json.loads(subprocess.run([sdm, "cache", "stats", "--json", "--dir", cache], check=True, capture_output=True, env=env).stdout)
if stats["bytes"] > CAP:
    failures.append(f"the cache holds {stats['bytes']} bytes after the run, over its cap of {CAP}")
print(f"{seconds:.0f} s: {results['hosts']} host processes ({HOSTS} at a time), {results['failed']} failed; "
      f"damage in place: {damage['truncate']} truncations, {damage['flip']} flipped bytes, {damage['append']} appends, "
      f"{damage['rename']} garbage files renamed over entries; {results['bad']} damaged entries found and refused, "
      f"{results['builds']} images rebuilt; {len(served)} images handed to the driver, {len(changed)} not the archive's; "
      f"cache after: {stats['entries']} entries, {stats['bytes']} bytes of a {CAP}-byte cap ({stats['temporaries']} temporaries); "
      f"{time.monotonic() - start:.1f} s")
for f in failures:
    print("FAIL:", f)
subprocess.run(["rm", "-rf", work])
sys.exit(1 if failures else 0)
