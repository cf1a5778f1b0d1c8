"""python -m sdm info [--json] [-a ARCHIVE]...: the tool's `sdm info`, as far as the C ABI tells it.

A wheel carries libsdm but not the sdm tool, so this is the tool's `info` over the ABI, in its line
shapes (tools/info.cpp): the driver, every visible device and its class, the libsdm loaded and the
mounted archives (the one embedded in libsdm, those of $SDM_ARCHIVE_PATH, then each -a). The
tool's other facts (the driver's path, nvJitLink, nvPTXCompiler, which archive serves each kernel,
signers, the signature policy) have no ABI call and are left out. Without a driver the archive part
is still printed, after "driver: none: <why>", and the exit status is 0; it is 1, as the tool's,
when an archive cannot be mounted or the devices cannot be read.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

import sdm


class _DlInfo(ctypes.Structure):
    _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p),
                ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]


def _library_file(library: ctypes.CDLL) -> str:
    """The file the dynamic loader opened for the CDLL `library`, which may have been named by its
    SONAME alone (dladdr on one of its functions)."""
    dladdr = ctypes.CDLL(None).dladdr
    dladdr.argtypes = [ctypes.c_void_p, ctypes.POINTER(_DlInfo)]
    info = _DlInfo()
    if dladdr(ctypes.cast(library.sdm_version_string, ctypes.c_void_p), ctypes.byref(info)) and info.dli_fname:
        return os.fsdecode(info.dli_fname)
    return library._name


def _device(rt: sdm.Runtime, ordinal: int) -> dict[str, Any]:
    """Device `ordinal` as the tool's JSON has it; the class's error says why it has none."""
    d = rt.device_info(ordinal)
    out: dict[str, Any] = {"ordinal": ordinal, "name": d.name, "capability": "{}.{}".format(*d.capability),
                           "sm_count": d.sm_count, "l2_bytes": d.l2_bytes, "smem_optin_bytes": d.smem_optin_bytes}
    try:
        out["class"] = sdm.device_class_name(rt.device_class(ordinal))
    except sdm.UnsupportedDeviceError as e:
        # Outside the SDM kernels' matrix: a user's archive is still served here, by capability.
        out.update({"class": "unclassified", "matrix": e.message})
        return out
    except sdm.SdmError as e:
        out.update({"class": "unknown", "error_class": e.message})
        return out
    out.update({"smem_cap_bytes": d.smem_cap_bytes, "smem_per_sm_bytes": d.smem_per_sm_bytes,
                "pdl": d.pdl_allowed, "clusters": d.clusters_allowed})
    return out


def _info(archives: Sequence[str]) -> tuple[dict[str, Any], int]:
    """The facts, keyed as the tool's --json keys them, and the exit status."""
    status = 0
    out: dict[str, Any]
    with sdm.Runtime(log_level=sdm.LogLevel.ERROR) as rt:
        for path in archives:
            try:
                rt.mount_file(path)
            except sdm.SdmError as e:
                print(f"python -m sdm info: {e.message}", file=sys.stderr)
                status = 1
        try:
            version = rt.driver_version()
            out = {"driver": {"version": version, "version_text": f"{version // 1000}.{version % 1000 // 10}"}}
        except sdm.SdmError as e:
            out = {"driver": {"error": e.message}}
        out["devices"] = []
        if "version" in out["driver"]:
            try:
                count = rt.device_count()
            except sdm.SdmError as e:
                out["devices_error"] = e.message
                count, status = 0, 1
            for ordinal in range(count):
                try:
                    out["devices"].append(_device(rt, ordinal))
                except sdm.SdmError as e:
                    out["devices"].append({"ordinal": ordinal, "error": e.message})
                    status = 1
        mounted = rt.archives()
        path = _library_file(rt.library)
        embedded = [a for a in mounted if a.embedded]
        out["libsdm"] = {"path": path, "embedded": f"{path} embeds {embedded[0].size_bytes} bytes of archive" if embedded
                         else f"{path}: no embedded archive mounted (a libsdm built without nvcc, or with "
                              "-Dkernels=disabled, has none)"}
        out["archives"] = [{"label": a.label, "embedded": a.embedded, "entries": a.entry_count, "kernels": a.kernel_count,
                            "kernel_abi": "{}.{}".format(*a.kernel_abi), "content_version": a.content_version}
                           for a in mounted]
    return out, status


def _print_text(out: dict[str, Any]) -> None:
    driver = out["driver"]
    print(f"driver: none: {driver['error']}" if "error" in driver else f"driver: CUDA {driver['version_text']}")
    if "devices_error" in out:
        print(f"devices: {out['devices_error']}")
    elif "version" in driver and not out["devices"]:
        print("devices: none visible")
    for d in out["devices"]:
        if "error" in d:
            print(f"device {d['ordinal']}: {d['error']}")
            continue
        line = (f"device {d['ordinal']}: {d['name']}, compute capability {d['capability']}, class {d['class']}, "
                f"{d['sm_count']} SMs, {d['l2_bytes']} B L2, {d['smem_optin_bytes']} B opt-in shared memory per block")
        if "smem_cap_bytes" in d:
            print(f"{line}, plans assume {d['smem_cap_bytes']} B (per SM {d['smem_per_sm_bytes']} B), "
                  f"PDL {'yes' if d['pdl'] else 'no'}, clusters {'yes' if d['clusters'] else 'no'}")
        elif "matrix" in d:
            print(f"{line}\n  unclassified: outside the SDM kernels' hardware matrix, which archives declaring it follow "
                  f"({d['matrix']}); any other archive is served here by compute capability")
        else:
            print(f"{line}\n  class unknown: {d['error_class']}")
    print(f"libsdm: {out['libsdm']['embedded']}")
    if not out["archives"]:
        print("archives: none mounted (pass -a ARCHIVE, or use a libsdm that embeds the SDM kernels)")
    for a in out["archives"]:
        print(f"archive: {a['label']}{' (embedded)' if a['embedded'] else ''}, {a['entries']} entries, "
              f"{a['kernels']} kernels, kernel ABI {a['kernel_abi']}, content {a['content_version']}")


def main(argv: Sequence[str] | None = None) -> int:
    """Runs `python -m sdm` with the arguments `argv` (default: the command line's); the exit status."""
    parser = argparse.ArgumentParser(prog="python -m sdm", description="sdm's Python bindings and the libsdm they load.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    info = commands.add_parser("info", help="the driver, every visible GPU and its class, and the mounted archives")
    info.add_argument("--json", action="store_true", help="machine-readable output")
    info.add_argument("-a", "--archive", action="append", default=[], metavar="ARCHIVE",
                      help="mount this archive file (repeatable; later mounts take precedence)")
    options = parser.parse_args(argv)
    try:
        out, status = _info(options.archive)
    except (OSError, sdm.SdmError) as e:  # no libsdm to load, or no runtime from it
        print(f"python -m sdm info: {e}", file=sys.stderr)
        return 1
    if options.json:
        print(json.dumps(out, indent=2))
    else:
        _print_text(out)
    return status


if __name__ == "__main__":
    sys.exit(main())
