#!/usr/bin/env python3
"""The multi-process cold-start stress (docs/RELIABILITY.md): 32 processes start at once on one empty cache
directory and fetch every kernel of a PTX-only archive on three fake devices (three cache keys,
each needing a real nvJitLink link): exactly one link per key among them, every process served,
no damaged entry ever read. Then ROUNDS rounds with SIGKILLs: 32 processes start on a fresh cold
cache, 8 of them chosen at random are killed at random moments in the first 60 ms (mid-link,
mid-write, holding key locks); then 32 more start on what the killed round left: every one must
be served, at most one link per key among them, no damaged entry read. Prints the figures.
Usage: cold_start.py BUILD_DIR [ROUNDS]   (meson test stress_cold_start)"""
import os
import random
import signal
import subprocess
import sys
import tempfile
import time

build = os.path.abspath(sys.argv[1])
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 10
root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
data = os.path.join(root, "tests", "data")
exe = os.path.join(build, "tests", "stress_cold_start")
KEYS = 3  # (module kernels) x (sm_90 from compute_90, sm_80 and sm_89 from compute_80)
PROCS, KILLS = 32, 8

work = tempfile.mkdtemp(prefix="sdm-cold-start-")
archive = os.path.join(work, "ptx.sdma")
subprocess.run([os.path.join(build, "tools", "sdm"), "pack", "-q", "-m", os.path.join(data, "manifest.toml"), "-o", archive,
                "kernels:compute_80=" + os.path.join(data, "kernels.compute_80.ptx"),
                "kernels:compute_90=" + os.path.join(data, "kernels.compute_90.ptx")], check=True)
env = dict(os.environ,
           SDM_CUDA_DRIVER=os.path.join(build, "tests", "fake_cuda", "libcuda_fake.so"),
           SDM_FAKE_CUDA_DEVICES="NVIDIA H200,9.0,232448,132,62914560;NVIDIA A100-SXM4-80GB,8.0,166912,108,41943040;"
                                 "NVIDIA GeForce RTX 4090,8.9,101376,128,75497472")
env.pop("SDM_CACHE_DISABLE", None)
failures = []


def wave(cache, kill=0):
    """Starts PROCS processes at once on `cache`, kills `kill` of them at random moments; the
    output lines of those that were not killed, and how many were killed mid-run."""
    e = dict(env, SDM_CACHE_DIR=cache)
    procs = [subprocess.Popen([exe, archive, "scale", "axpy"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=e)
             for _ in range(PROCS)]
    for p in procs:  # the start signal
        p.stdin.write(b"g")
    for p in procs:
        p.stdin.flush()
    victims = set(random.sample(range(PROCS), kill))
    killed = 0
    deadline = time.monotonic() + 0.06
    for i in sorted(victims, key=lambda _: random.random()):
        time.sleep(max(0.0, min(random.uniform(0, 0.06), deadline - time.monotonic())))
        if procs[i].poll() is None:
            procs[i].send_signal(signal.SIGKILL)
            killed += 1
    lines = []
    for i, p in enumerate(procs):
        out, _ = p.communicate(timeout=300)
        if i in victims and p.returncode == -signal.SIGKILL:
            continue
        lines.append((p.returncode, out.decode(errors="replace").strip()))
    return lines, killed


def check(lines, what, max_builds):
    builds = bad = 0
    for rc, line in lines:
        if rc != 0 or not line.startswith("ok "):
            failures.append(f"{what}: a process failed (exit {rc}): {line}")
            continue
        f = line.split()
        builds += int(f[f.index("builds") + 1])
        bad += int(f[f.index("bad") + 1])
    if builds > max_builds:
        failures.append(f"{what}: {builds} links for {KEYS} keys (at most {max_builds})")
    if bad:
        failures.append(f"{what}: {bad} damaged cache entries read")
    return builds, bad


start = time.monotonic()
lines, _ = wave(os.path.join(work, "cold"))
builds, bad = check(lines, "cold start", KEYS)
if builds != KEYS:
    failures.append(f"cold start: {builds} links for {KEYS} keys (exactly one per key expected)")
print(f"cold start: {PROCS} processes, {builds} nvJitLink links for {KEYS} keys, {bad} damaged entries read")
total_killed = total_after = total_leftovers = 0
for r in range(rounds):
    cache = os.path.join(work, f"kill-{r}")
    survivors, killed = wave(cache, KILLS)
    total_killed += killed
    # The killed ones' links are not counted: at most one per key among the survivors.
    survivor_links, _ = check(survivors, f"round {r} (with kills)", KEYS)
    after, _ = wave(cache)
    total_after += len(after)
    b, x = check(after, f"round {r} (after the kills)", KEYS)
    leftovers = [n for d, _, files in os.walk(cache) for n in files if not n.endswith((".sdmc", ".lock"))]
    total_leftovers += len(leftovers)
    print(f"round {r}: {killed} of {PROCS} killed in their first 60 ms ({survivor_links} of {KEYS} keys linked by the survivors); "
          f"then {len(after)} processes served, {b} links, {x} damaged entries read; {len(leftovers)} temporary file(s) left by the killed")
print(f"{rounds} rounds: {total_killed} processes killed ({total_leftovers} of them mid-write: their temporary files stayed), "
      f"{total_after} started after them, all served; {time.monotonic() - start:.1f} s")
for f in failures:
    print("FAIL:", f)
subprocess.run(["rm", "-rf", work])
sys.exit(1 if failures else 0)
