"""Python bindings of sdm, the CUDA kernel-archive runtime, over its C ABI (include/sdm/sdm.h).

ctypes only: no compiler, no dependency. The raw ABI is in sdm._capi (every function declared with
argtypes and restype, every struct mirrored); this module is the Pythonic layer:

    with sdm.Runtime() as rt:
        rt.mount_file("kernels.sdma")
        info = rt.device_info(0)
        kernel = rt.kernel(0, "scale", signature="ptr,f32,i32")
        plan = kernel.plan(n)
        kernel.launch(plan, [device_pointer, 2.0, n])

Failures raise SdmError with the status, its name and sdm's message: the subclass of the status
(error_class), which also derives from the standard exception it fits (NotFoundError: LookupError,
SdmIOError: OSError). libsdm is found through `library=`, else $SDM_LIBRARY, else the copy a wheel
carries (sdm/_lib/libsdm.so.1), else ctypes.util.find_library("sdm"), else libsdm.so.1. `python -m
sdm info` shows the libsdm found, the driver, the devices and the mounted archives. __version__ is
the package's: sdm's release.
"""

from __future__ import annotations

import ctypes
import enum
import operator
import os
import re
import weakref
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, SupportsFloat, SupportsIndex, TypeVar, Union

from . import _capi
from ._capi import error_p, kernel_p, runtime_p
from ._version import __version__

__all__ = [
    "SdmError", "InvalidArgumentError", "OutOfMemoryError", "NoDriverError", "DriverTooOldError", "DriverError",
    "NoDeviceError", "UnsupportedDeviceError", "ArchiveCorruptError", "ArchiveUnsupportedError", "SdmIOError",
    "NotFoundError", "UnsupportedError", "NoImageError", "ImageRefusedError", "JitError", "MismatchError",
    "GraphCaptureError", "InternalError", "UntrustedError", "error_class",
    "Status", "LogLevel", "DeviceClass", "ImageKind", "ImageSource", "RuntimeFlag", "CacheFlag", "JitFlag", "PlanFlag",
    "SignaturePolicy", "JitIsolation", "Runtime", "Kernel", "ArchiveInfo", "DeviceInfo", "KernelInfo", "CacheStats", "Plan",
    "load_library", "abi_version", "version", "status_string", "device_class_name", "get_api",
]


class Status(enum.IntEnum):
    """sdm_status: SDM_OK and SDM_ERROR_* without the SDM_ prefix."""

    OK = _capi.SDM_OK
    ERROR_INVALID_ARGUMENT = _capi.SDM_ERROR_INVALID_ARGUMENT
    ERROR_OUT_OF_MEMORY = _capi.SDM_ERROR_OUT_OF_MEMORY
    ERROR_NO_DRIVER = _capi.SDM_ERROR_NO_DRIVER
    ERROR_DRIVER_TOO_OLD = _capi.SDM_ERROR_DRIVER_TOO_OLD
    ERROR_DRIVER = _capi.SDM_ERROR_DRIVER
    ERROR_NO_DEVICE = _capi.SDM_ERROR_NO_DEVICE
    ERROR_UNSUPPORTED_DEVICE = _capi.SDM_ERROR_UNSUPPORTED_DEVICE
    ERROR_ARCHIVE_CORRUPT = _capi.SDM_ERROR_ARCHIVE_CORRUPT
    ERROR_ARCHIVE_UNSUPPORTED = _capi.SDM_ERROR_ARCHIVE_UNSUPPORTED
    ERROR_IO = _capi.SDM_ERROR_IO
    ERROR_NOT_FOUND = _capi.SDM_ERROR_NOT_FOUND
    ERROR_UNSUPPORTED = _capi.SDM_ERROR_UNSUPPORTED
    ERROR_NO_IMAGE = _capi.SDM_ERROR_NO_IMAGE
    ERROR_IMAGE_REFUSED = _capi.SDM_ERROR_IMAGE_REFUSED
    ERROR_JIT = _capi.SDM_ERROR_JIT
    ERROR_MISMATCH = _capi.SDM_ERROR_MISMATCH
    ERROR_GRAPH_CAPTURE = _capi.SDM_ERROR_GRAPH_CAPTURE
    ERROR_INTERNAL = _capi.SDM_ERROR_INTERNAL
    ERROR_UNTRUSTED = _capi.SDM_ERROR_UNTRUSTED


class LogLevel(enum.IntEnum):
    """sdm_log_level: how much a runtime logs, and the level of each message its log callback gets."""

    OFF = _capi.SDM_LOG_OFF          # nothing, whatever $SDM_LOG says
    DEFAULT = _capi.SDM_LOG_DEFAULT  # $SDM_LOG, else WARN
    ERROR = _capi.SDM_LOG_ERROR
    WARN = _capi.SDM_LOG_WARN
    INFO = _capi.SDM_LOG_INFO
    DEBUG = _capi.SDM_LOG_DEBUG


class DeviceClass(enum.IntEnum):
    """sdm_device_class: the hardware class plans are chosen for (sdm.h lists each class's GPUs);
    device_class_name() gives its name."""

    UNSUPPORTED = _capi.SDM_DEVICE_CLASS_UNSUPPORTED
    MODERN = _capi.SDM_DEVICE_CLASS_MODERN
    A100 = _capi.SDM_DEVICE_CLASS_A100
    RTX = _capi.SDM_DEVICE_CLASS_RTX


# sdm.h has no constants for these two, only the values in its comments on sdm_kernel_info.
class ImageKind(enum.IntEnum):
    """sdm_kernel_info.image_kind: the kind of the archive image a kernel's module was loaded from."""

    CUBIN = 1
    PTX = 2
    LTO_IR = 3
    FATBIN = 4


class ImageSource(enum.IntEnum):
    """sdm_kernel_info.source: what produced the image the driver loaded."""

    ARCHIVE_CUBIN = 1  # the archive's cubin (decoded when compressed)
    CACHE = 2          # the kernel cache: what an earlier load built or decoded
    NVJITLINK = 3      # linked by nvJitLink
    DRIVER_JIT = 4     # the driver's own JIT
    FATBIN = 5         # the archive's fatbinary
    PTX_COMPILER = 6   # compiled by nvPTXCompiler (ABI 1.1)


class RuntimeFlag(enum.IntFlag):
    """sdm_runtime_params.flags."""

    NO_EMBEDDED_ARCHIVE = _capi.SDM_RUNTIME_NO_EMBEDDED_ARCHIVE
    CURRENT_CONTEXT = _capi.SDM_RUNTIME_CURRENT_CONTEXT  # ABI 1.2: the calling thread's current CUDA context


class CacheFlag(enum.IntFlag):
    """sdm_runtime_params.cache_flags."""

    DISABLED = _capi.SDM_CACHE_DISABLED
    READ_ONLY = _capi.SDM_CACHE_READ_ONLY


class JitFlag(enum.IntFlag):
    """sdm_runtime_params.jit_flags: the JIT backends the host forbids."""

    NO_NVJITLINK = _capi.SDM_JIT_NO_NVJITLINK
    NO_DRIVER = _capi.SDM_JIT_NO_DRIVER
    NO_PTX_COMPILER = _capi.SDM_JIT_NO_PTX_COMPILER


class PlanFlag(enum.IntFlag):
    """sdm_plan.flags."""

    PDL = _capi.SDM_PLAN_PDL


class SignaturePolicy(enum.IntEnum):
    """Which archives a runtime mounts (ABI 1.2; docs/SIGNING.md). A policy other than DEFAULT is
    the host's: $SDM_REQUIRE_SIGNED cannot weaken it."""

    DEFAULT = _capi.SDM_SIGNATURES_DEFAULT  # $SDM_REQUIRE_SIGNED (1: REQUIRE, warn: WARN), else OFF
    OFF = _capi.SDM_SIGNATURES_OFF          # signatures are not looked at
    WARN = _capi.SDM_SIGNATURES_WARN        # an archive without a valid trusted signature mounts; the log says why
    REQUIRE = _capi.SDM_SIGNATURES_REQUIRE  # such an archive is refused: UntrustedError


class JitIsolation(enum.IntEnum):
    """Where PTX and LTO-IR links run (ABI 1.2; docs/LOADING.md, "A compiler that crashes"): in
    sdm-jit-helper, a process of their own whose crash or hang is a JitError, or in this one."""

    DEFAULT = _capi.SDM_ISOLATION_DEFAULT  # $SDM_JIT_ISOLATION (auto, always, never), else AUTO
    AUTO = _capi.SDM_ISOLATION_AUTO        # isolate LTO-IR, and PTX of archives no trusted key signed
    ALWAYS = _capi.SDM_ISOLATION_ALWAYS    # isolate every link
    NEVER = _capi.SDM_ISOLATION_NEVER      # link in this process (a watchdog bounds the wait only)


_Enum = TypeVar("_Enum", bound=enum.IntEnum)


def _known(enum_type: type[_Enum], value: int) -> _Enum | int:
    """`value` as a member of `enum_type`, or the plain int when a newer library returns more."""
    try:
        return enum_type(value)
    except ValueError:
        return value


def _text(value: bytes | None) -> str:
    return value.decode("utf-8", "replace") if value is not None else ""


# ---- errors ---------------------------------------------------------------------------------------

_ERROR_CLASSES: dict[int, type[SdmError]] = {}  # filled by the subclasses' `status=`


class SdmError(Exception):
    """A failed sdm call. `status` (a Status), `code` (its name, "SDM_ERROR_IO"), `message` (names
    the thing and the fix), `native` (the CUresult or nvJitLink result, else 0), `log` (a JIT log).

    sdm raises the subclass of the status (error_class), named after it (ERROR_NOT_FOUND:
    NotFoundError; ERROR_IO: SdmIOError, since IOError would shadow Python's alias of OSError), and
    each subclass also derives from the standard exception it fits: `except OSError` catches a
    missing archive file. A status newer than these bindings raises SdmError itself."""

    def __init__(self, status: int, code: str, message: str, native: int = 0, log: str = "") -> None:
        super().__init__(f"{code}: {message}")
        self.status = _known(Status, status)
        self.code = code
        self.message = message
        self.native = native
        self.log = log

    def __init_subclass__(cls, status: Status | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if status is not None:
            _ERROR_CLASSES[status] = cls


class InvalidArgumentError(SdmError, ValueError, status=Status.ERROR_INVALID_ARGUMENT):
    """A NULL handle, a struct_size too small, a bad value."""


class OutOfMemoryError(SdmError, MemoryError, status=Status.ERROR_OUT_OF_MEMORY):
    """sdm ran out of memory."""


class NoDriverError(SdmError, RuntimeError, status=Status.ERROR_NO_DRIVER):
    """libcuda.so.1 (or $SDM_CUDA_DRIVER) could not be loaded."""


class DriverTooOldError(SdmError, RuntimeError, status=Status.ERROR_DRIVER_TOO_OLD):
    """The driver lacks a CUDA version or entry point sdm needs."""


class DriverError(SdmError, RuntimeError, status=Status.ERROR_DRIVER):
    """A driver call failed: `native` is its CUresult."""


class NoDeviceError(SdmError, RuntimeError, status=Status.ERROR_NO_DEVICE):
    """No such device ordinal, or no CUDA device at all."""


class UnsupportedDeviceError(SdmError, RuntimeError, status=Status.ERROR_UNSUPPORTED_DEVICE):
    """The device is outside the hardware matrix."""


class ArchiveCorruptError(SdmError, RuntimeError, status=Status.ERROR_ARCHIVE_CORRUPT):
    """An archive failed a check (checksum, range, structure)."""


class ArchiveUnsupportedError(SdmError, RuntimeError, status=Status.ERROR_ARCHIVE_UNSUPPORTED):
    """An archive needs a newer sdm (format, feature, codec)."""


class SdmIOError(SdmError, OSError, status=Status.ERROR_IO):
    """The operating system refused (open, read, mmap): a missing file too, but not only, hence
    OSError and not FileNotFoundError; sdm does not pass the errno on (`errno` is None)."""


class NotFoundError(SdmError, LookupError, status=Status.ERROR_NOT_FOUND):
    """No such kernel, mounted archive or launch plan (a missing file is SdmIOError). LookupError,
    not KeyError: KeyError's str() would quote the message."""


class UnsupportedError(SdmError, RuntimeError, status=Status.ERROR_UNSUPPORTED):
    """This build or platform lacks the feature (signatures without libsodium, an ABI major it does
    not implement). Not NotImplementedError, which says the code is unfinished or abstract: this is
    how libsdm was built, and a caller's fallback for unimplemented methods must not swallow it."""


class NoImageError(SdmError, RuntimeError, status=Status.ERROR_NO_IMAGE):
    """No image of a module fits the device."""


class ImageRefusedError(SdmError, RuntimeError, status=Status.ERROR_IMAGE_REFUSED):
    """A loaded image failed validation."""


class JitError(SdmError, RuntimeError, status=Status.ERROR_JIT):
    """A JIT backend failed: `log` has its log, `native` the nvJitLink result."""


class MismatchError(SdmError, ValueError, status=Status.ERROR_MISMATCH):
    """Declared metadata disagrees (arch, kernel ABI version, signature)."""


class GraphCaptureError(SdmError, RuntimeError, status=Status.ERROR_GRAPH_CAPTURE):
    """The work would JIT while the stream captures a CUDA graph."""


class InternalError(SdmError, RuntimeError, status=Status.ERROR_INTERNAL):
    """A broken invariant inside sdm: please report it."""


class UntrustedError(SdmError, RuntimeError, status=Status.ERROR_UNTRUSTED):
    """The signature policy refused an archive (unsigned, an unknown key, a bad signature)."""


def error_class(status: int) -> type[SdmError]:
    """The SdmError subclass sdm raises for `status`; SdmError itself for SDM_OK and for a status
    these bindings do not know."""
    return _ERROR_CLASSES.get(status, SdmError)


def _adopt(lib: ctypes.CDLL, status: int, error: ctypes._Pointer[_capi.sdm_error]) -> SdmError:
    """The error of `status` and the sdm_error `error` (may be NULL), which it destroys."""
    try:
        code = _text(lib.sdm_status_string(status))
        if not error:
            return error_class(status)(status, code, code)
        return error_class(status)(status, code, _text(lib.sdm_error_message(error)), lib.sdm_error_native(error),
                                   _text(lib.sdm_error_log(error)))
    finally:
        lib.sdm_error_destroy(error)


def _call(lib: ctypes.CDLL, function: Callable[..., int], *args: Any) -> None:
    """Calls `function(*args, &error)`; raises the status's SdmError on a status other than SDM_OK."""
    error = error_p()
    status = function(*args, ctypes.byref(error))
    if status != _capi.SDM_OK:
        raise _adopt(lib, status, error)


# ---- library-wide functions -----------------------------------------------------------------------

def load_library(library: str | None = None) -> ctypes.CDLL:
    """The ctypes CDLL of libsdm (sdm._capi.load), `library` or else found in the order the
    module's docstring gives."""
    return _capi.load(library)


def abi_version(library: str | None = None) -> tuple[int, int]:
    """(major, minor) of the ABI the library implements."""
    version = load_library(library).sdm_abi_version()
    return version >> 16, version & 0xFFFF


def version(library: str | None = None) -> str:
    """The library's release, "MAJOR.MINOR.PATCH" (sdm's project version)."""
    return _text(load_library(library).sdm_version_string())


def status_string(status: int, library: str | None = None) -> str:
    """The name of a status ("SDM_ERROR_NO_DRIVER"), "SDM_ERROR_UNKNOWN" for values it does not know."""
    return _text(load_library(library).sdm_status_string(int(status)))


def device_class_name(device_class: int, library: str | None = None) -> str:
    """"modern", "a100", "rtx" or "unsupported"."""
    return _text(load_library(library).sdm_device_class_name(int(device_class)))


def get_api(major: int = _capi.SDM_ABI_VERSION_MAJOR, minor: int = _capi.SDM_ABI_VERSION_MINOR,
            library: str | None = None) -> tuple[int, _capi.sdm_api]:
    """(minor, table): sdm_get_api's function table (an sdm._capi.sdm_api) for ABI `major`, and the
    minor the library implements. A major it does not implement raises UnsupportedError."""
    lib = load_library(library)
    implemented = ctypes.c_uint32(minor)
    table = ctypes.POINTER(_capi.sdm_api)()
    status = lib.sdm_get_api(major, ctypes.byref(implemented), ctypes.byref(table))
    if status != _capi.SDM_OK:
        code = _text(lib.sdm_status_string(status))
        raise error_class(status)(status, code, f"sdm_get_api({major}) failed: {code}")
    return implemented.value, table.contents


# ---- plain data -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class ArchiveInfo:
    """A mounted archive (sdm_archive_info)."""

    label: str               # the path, or the label given to mount_memory
    content_version: str     # from the manifest, "" without one
    size_bytes: int
    entry_count: int
    kernel_count: int
    kernel_abi: tuple[int, int]      # (major, minor)
    format_version: tuple[int, int]  # (major, minor)
    embedded: bool                   # the archive embedded in libsdm

    @classmethod
    def _from_c(cls, c: _capi.sdm_archive_info) -> ArchiveInfo:
        return cls(_text(c.label), _text(c.content_version), c.size_bytes, c.entry_count, c.kernel_count,
                   (c.kernel_abi_major, c.kernel_abi_minor), (c.format_major, c.format_minor), bool(c.embedded))


@dataclass(frozen=True)
class DeviceInfo:
    """A CUDA device (sdm_device_info), supported or not."""

    ordinal: int
    name: str
    capability: tuple[int, int]      # (major, minor)
    device_class: DeviceClass | int  # UNSUPPORTED outside the hardware matrix
    sm_count: int
    l2_bytes: int
    smem_optin_bytes: int      # the device's own opt-in shared memory per block
    smem_cap_bytes: int        # what the class's plans assume (0 when unsupported)
    smem_per_sm_bytes: int     # smem_cap_bytes + 1,024 reserved per block (0 when unsupported)
    pdl_allowed: bool
    clusters_allowed: bool
    untested: bool             # a class this release has not tested (rtx)

    @property
    def supported(self) -> bool:
        """Whether the device is in the hardware matrix (a class other than UNSUPPORTED)."""
        return self.device_class != DeviceClass.UNSUPPORTED

    @classmethod
    def _from_c(cls, c: _capi.sdm_device_info) -> DeviceInfo:
        return cls(c.ordinal, _text(c.name), (c.capability_major, c.capability_minor),
                   _known(DeviceClass, c.device_class), c.sm_count, c.l2_bytes, c.smem_optin_bytes,
                   c.smem_cap_bytes, c.smem_per_sm_bytes, bool(c.pdl_allowed), bool(c.clusters_allowed),
                   bool(c.untested))


@dataclass(frozen=True)
class KernelInfo:
    """What a fetched kernel is (sdm_kernel_info)."""

    name: str
    module: str
    archive: str      # the serving archive's label
    signature: str    # "ptr,f32,i32"
    ordinal: int
    image_kind: ImageKind | int
    image_sm: int                # the chosen image's arch (90 for sm_90 / compute_90)
    loaded_sm: int               # the cubin's or the JIT target's SM
    source: ImageSource | int

    @classmethod
    def _from_c(cls, c: _capi.sdm_kernel_info) -> KernelInfo:
        return cls(_text(c.name), _text(c.module), _text(c.archive), _text(c.signature), c.ordinal,
                   _known(ImageKind, c.image_kind), c.image_sm, c.loaded_sm, _known(ImageSource, c.source))


@dataclass(frozen=True)
class CacheStats:
    """A runtime's kernel-cache counters since its creation (sdm_cache_stats)."""

    hits: int
    misses: int
    builds: int             # JIT links run
    evictions: int
    bad_entries: int        # damaged entries found and removed
    bytes_written: int
    build_milliseconds: float


@dataclass(frozen=True)
class Plan:
    """A launch plan (sdm_plan): Kernel.plan() returns one; dataclasses.replace() changes one."""

    grid: int
    block: int
    smem_bytes: int = 0
    cluster: tuple[int, int, int] = (1, 1, 1)  # blocks per cluster; (1, 1, 1): no clusters
    flags: PlanFlag = PlanFlag(0)
    blocks_per_sm: int = 1       # what the plan aims for
    occupancy: int = 0           # blocks per SM the driver says fit
    rule: int = -1               # the manifest's rule that chose it; -1: a plugin (or by hand)

    @property
    def pdl(self) -> bool:
        """Whether the plan launches with programmatic dependent launch (PlanFlag.PDL)."""
        return bool(self.flags & PlanFlag.PDL)

    @classmethod
    def _from_c(cls, c: _capi.sdm_plan) -> Plan:
        return cls(c.grid, c.block, c.smem_bytes, tuple(c.cluster), PlanFlag(c.flags), c.blocks_per_sm,
                   c.occupancy, c.rule)

    def _to_c(self) -> _capi.sdm_plan:
        return _capi.sdm_plan(flags=int(self.flags), grid=self.grid, block=self.block, smem_bytes=self.smem_bytes,
                              cluster=(ctypes.c_uint32 * 3)(*self.cluster), blocks_per_sm=self.blocks_per_sm,
                              occupancy=self.occupancy, rule=self.rule)


# ---- kernels --------------------------------------------------------------------------------------

# Kernel parameter types of a manifest signature (archive/manifest.hpp ParamType): ctypes type and
# the integer range, None for floats.
_PARAM_TYPES: dict[str, tuple[type[ctypes._SimpleCData[Any]], tuple[int, int] | None]] = {
    "ptr": (ctypes.c_void_p, (0, 2**64 - 1)),
    "i32": (ctypes.c_int32, (-2**31, 2**31 - 1)),
    "u32": (ctypes.c_uint32, (0, 2**32 - 1)),
    "i64": (ctypes.c_int64, (-2**63, 2**63 - 1)),
    "u64": (ctypes.c_uint64, (0, 2**64 - 1)),
    "f32": (ctypes.c_float, None),
    "f64": (ctypes.c_double, None),
}


def _kernel_argument(kind: str | None, value: Any, index: int) -> ctypes._SimpleCData[Any]:
    """A ctypes value for kernel parameter `index` of signature type `kind`: an int (device
    pointers too) or a float, range-checked; a ctypes value is passed as it is."""
    if isinstance(value, ctypes._SimpleCData):
        return value
    if kind not in _PARAM_TYPES:
        raise TypeError(f"argument {index}: the signature's type {kind!r} is unknown to these bindings; "
                        "pass a ctypes value")
    ctype, bounds = _PARAM_TYPES[kind]
    if bounds is None:
        return ctype(float(value))
    value = 0 if value is None and kind == "ptr" else value
    number = operator.index(value)
    if not bounds[0] <= number <= bounds[1]:
        raise OverflowError(f"argument {index}: {number} does not fit a {kind}")
    return ctype(number)


class Kernel:
    """A kernel a Runtime fetched (Runtime.kernel). Valid while its runtime is open, or after a
    reload replaced its archive, until release()."""

    def __init__(self, runtime: Runtime, handle: ctypes._Pointer[_capi.sdm_kernel]) -> None:
        self.runtime = runtime
        self._kernel = handle
        self._signature: list[str] | None = None

    @property
    def _handle(self) -> ctypes._Pointer[_capi.sdm_kernel]:
        self.runtime._handle  # raises once the runtime is closed: the kernel went with it
        return self._kernel

    def info(self) -> KernelInfo:
        """What the kernel is: its name, module, archive, signature, image and where that came from."""
        c = _capi.sdm_kernel_info()
        _call(self.runtime.library, self.runtime.library.sdm_kernel_info_get, self._handle, ctypes.byref(c))
        return KernelInfo._from_c(c)

    def function(self) -> int:
        """The CUfunction's address, for hosts that launch it themselves."""
        function = ctypes.c_void_p()
        _call(self.runtime.library, self.runtime.library.sdm_kernel_function, self._handle, ctypes.byref(function))
        return function.value or 0

    def plan(self, problem: int | Sequence[int]) -> Plan:
        """The launch plan for `problem`, the kernel's problem parameters in manifest order (an int
        for one, or a sequence)."""
        values = [problem] if isinstance(problem, int) else list(problem)
        array = (ctypes.c_int64 * max(len(values), 1))(*values)
        c = _capi.sdm_plan()
        _call(self.runtime.library, self.runtime.library.sdm_plan_select, self._handle, array, len(values),
              ctypes.byref(c))
        return Plan._from_c(c)

    def launch(self, plan: Plan, args: Sequence[SupportsIndex | SupportsFloat | ctypes._SimpleCData[Any] | None],
               stream: int | None = None) -> None:
        """Launches with `plan` (a Plan) on `stream` (a CUstream as an int; None: the device's
        context current on this thread). `args` follow the kernel's signature: device pointers as
        ints, numbers as Python numbers (or ctypes values)."""
        if self._signature is None:
            self._signature = [t.strip() for t in self.info().signature.split(",") if t.strip()]
        values = []
        for index, value in enumerate(args):
            kind = self._signature[index] if index < len(self._signature) else None
            if kind is None and not isinstance(value, ctypes._SimpleCData):
                # More arguments than the signature has: sdm refuses the count, naming both, before
                # it reads any, so a placeholder holds the place.
                value = ctypes.c_int64(0)
            values.append(_kernel_argument(kind, value, index))
        pointers = (ctypes.c_void_p * max(len(values), 1))(*[ctypes.cast(ctypes.pointer(v), ctypes.c_void_p)
                                                              for v in values])
        c = plan._to_c()
        _call(self.runtime.library, self.runtime.library.sdm_launch, self._handle, ctypes.byref(c), stream,
              pointers, len(values))

    def release(self) -> None:
        """Drops the reference the fetch took (matters across reloads only)."""
        self.runtime.release(self)


# ---- the runtime ----------------------------------------------------------------------------------

# What a path argument may be: what os.fsencode takes.
_PathLike = Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]


def _path(value: _PathLike | None) -> bytes | None:
    return os.fsencode(value) if value is not None else None


_PUBLIC_KEY = re.compile(rb"sdm-ed25519-public ([0-9a-fA-F]{64})")


def _trusted_key(key: object, index: int) -> bytes:
    """Entry `index` of Runtime(trusted_keys=...) as its 32 bytes: an Ed25519 public key as bytes,
    or the path (str or os.PathLike) of the .pub file `sdm keygen` wrote."""
    if isinstance(key, (str, os.PathLike)):
        with open(key, "rb") as file:
            text = file.read().rstrip(b"\r\n")  # line ends after the key, as libsdm reads key files
        if text.startswith(b"sdm-ed25519-secret "):
            raise ValueError(f"trusted_keys[{index}]: {os.fsdecode(key)} is a secret key; trust its public half "
                             "(the .pub file sdm keygen wrote beside it)")
        match = _PUBLIC_KEY.fullmatch(text)
        if match is None:
            raise ValueError(f"trusted_keys[{index}]: {os.fsdecode(key)} is not an sdm public key (one line: "
                             "'sdm-ed25519-public' and 64 hex digits, as sdm keygen writes)")
        return bytes.fromhex(match[1].decode())
    if not isinstance(key, (bytes, bytearray, memoryview)):
        raise TypeError(f"trusted_keys[{index}] has type {type(key).__name__}: "
                        "give a key's 32 bytes or a .pub file's path")
    raw = bytes(key)
    if len(raw) != 32:
        raise ValueError(f"trusted_keys[{index}] is {len(raw)} bytes; an Ed25519 public key is 32 "
                         "(a .pub file's path is a str or a pathlib.Path)")
    return raw


def _destroy(lib: ctypes.CDLL, handle: ctypes._Pointer[_capi.sdm_runtime], _log_callback: object) -> None:
    # The log callback rides along so that it outlives the runtime that may call it.
    lib.sdm_runtime_destroy(handle)


class Runtime:
    """An sdm runtime: mounted archives, devices, loaded kernels. A context manager; close() (or
    garbage collection) destroys it, and with it every Kernel it handed out. Every method may be
    called from any thread, except close() (not concurrently with other calls).

    Options (sdm_runtime_params): flags (RuntimeFlag.NO_EMBEDDED_ARCHIVE, CURRENT_CONTEXT), log (a callable(level,
    message), called on the thread that logs; None: warnings and errors go to stderr), log_level,
    cuda_driver (libcuda's path; None: $SDM_CUDA_DRIVER, else libcuda.so.1), cuda_context (a
    CUcontext the host owns, as an int, for the device it belongs to), device_contexts (ABI 1.2: one
    CUcontext per device ordinal as ints, None for a device's primary context; at most 1024), cache_dir, cache_max_bytes, cache_flags (CacheFlag),
    jit_flags (JitFlag: backends the host forbids), kernel_abi_major (0: any), signature_policy
    (SignaturePolicy), trusted_keys (the Ed25519 public keys whose signatures it trusts, at most
    256: each 32 bytes, or the path of a .pub file; None: those of $SDM_TRUSTED_KEYS; a list, even
    an empty one, replaces them), jit_isolation (JitIsolation), jit_time_limit (seconds, 0:
    $SDM_JIT_TIME_LIMIT, else 120) and jit_memory_limit (bytes of an isolated link's address
    space, 0: $SDM_JIT_MEMORY_LIMIT, else 8 GiB)."""

    def __init__(self, *, library: str | None = None, flags: int = 0,
                 log: Callable[[LogLevel | int, str], object] | None = None, log_level: int = LogLevel.DEFAULT,
                 cuda_driver: _PathLike | None = None, cuda_context: int | None = None,
                 device_contexts: Iterable[int | None] | None = None,
                 cache_dir: _PathLike | None = None, cache_max_bytes: int = 0, cache_flags: int = 0, jit_flags: int = 0,
                 kernel_abi_major: int = 0, signature_policy: int = SignaturePolicy.DEFAULT,
                 trusted_keys: Iterable[bytes | bytearray | memoryview | str | os.PathLike[str]] | None = None,
                 jit_isolation: int = JitIsolation.DEFAULT, jit_time_limit: float = 0, jit_memory_limit: int = 0) -> None:
        self.library = load_library(library)
        if isinstance(trusted_keys, (str, bytes, bytearray, memoryview, os.PathLike)):
            # Iterated, one key or path would read as its characters or bytes.
            raise TypeError("trusted_keys is a sequence of keys: put the one key or path in a list")
        keys = None
        if trusted_keys is not None:
            flat = b"".join(_trusted_key(key, index) for index, key in enumerate(trusted_keys))
            # At least one byte, so that no keys is not NULL, which would mean $SDM_TRUSTED_KEYS.
            keys = (ctypes.c_uint8 * max(len(flat), 1)).from_buffer_copy(flat or b"\0")
        log_callback: object = None
        if log is not None:
            def forward(_user_data: int | None, level: int, message: bytes | None, length: int) -> None:
                log(_known(LogLevel, level), (message or b"")[:length].decode("utf-8", "replace"))
            log_callback = _capi.sdm_log_fn(forward)
        params = _capi.sdm_runtime_params(
            flags=int(flags), log_level=int(log_level), cuda_driver=_path(cuda_driver), cuda_context=cuda_context,
            cache_dir=_path(cache_dir), cache_max_bytes=cache_max_bytes, cache_flags=int(cache_flags),
            jit_flags=int(jit_flags), kernel_abi_major=kernel_abi_major, signature_policy=int(signature_policy),
            jit_isolation=int(jit_isolation), jit_time_limit_ms=int(round(jit_time_limit * 1000)), jit_memory_limit_bytes=int(jit_memory_limit))
        contexts = None
        if device_contexts is not None:
            given = list(device_contexts)
            contexts = (ctypes.c_void_p * max(len(given), 1))(*given)  # copied by sdm_runtime_create
            params.device_contexts = ctypes.cast(contexts, ctypes.POINTER(ctypes.c_void_p))
            params.device_context_count = len(given)
        if keys is not None:
            params.trusted_keys = ctypes.cast(keys, ctypes.POINTER(ctypes.c_uint8))  # copied by sdm_runtime_create
            params.trusted_key_count = len(flat) // 32
        if log_callback is not None:
            params.log_fn = log_callback
        handle = runtime_p()
        _call(self.library, self.library.sdm_runtime_create, ctypes.byref(params), ctypes.byref(handle))
        self._runtime = handle
        self._finalizer = weakref.finalize(self, _destroy, self.library, handle, log_callback)

    # -- lifetime --
    @property
    def open(self) -> bool:
        """Whether the runtime is still open (neither closed nor collected)."""
        return self._finalizer.alive

    @property
    def _handle(self) -> ctypes._Pointer[_capi.sdm_runtime]:
        if not self._finalizer.alive:
            raise ValueError("the sdm runtime is closed")
        return self._runtime

    def close(self) -> None:
        """Destroys the runtime (unloading its modules); its Kernels are invalid after. Idempotent."""
        self._finalizer()

    def __enter__(self) -> Runtime:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<sdm.Runtime {'open' if self.open else 'closed'}>"

    def _call(self, name: str, *args: Any) -> None:
        _call(self.library, getattr(self.library, name), self._handle, *args)

    def last_error(self) -> SdmError | None:
        """An SdmError copy of the last error any call on this runtime reported, or None."""
        last = error_p()
        if self.library.sdm_runtime_last_error(self._handle, ctypes.byref(last)) != _capi.SDM_OK:
            return None
        return _adopt(self.library, self.library.sdm_error_code(last), last)

    # -- archives --
    def mount_file(self, path: _PathLike) -> None:
        """Mounts an archive file (mapped read-only); later mounts take precedence."""
        self._call("sdm_archive_mount_file", _path(path))

    def mount_memory(self, data: bytes | bytearray | memoryview, label: str | None = None) -> None:
        """Mounts an archive from a bytes-like object (copied); `label` names it in messages."""
        copy = bytes(data)
        self._call("sdm_archive_mount_memory", copy, len(copy), label.encode() if label is not None else None)

    def reload(self) -> int:
        """Remounts every mounted archive file; the number replaced."""
        count = ctypes.c_uint32()
        self._call("sdm_runtime_reload", ctypes.byref(count))
        return count.value

    def poll_archives(self) -> int:
        """Remounts the archive files changed on disk (one stat each); the number replaced."""
        count = ctypes.c_uint32()
        self._call("sdm_runtime_poll_archives", ctypes.byref(count))
        return count.value

    def archive_count(self) -> int:
        """How many archives are mounted."""
        count = ctypes.c_uint32()
        self._call("sdm_archive_count", ctypes.byref(count))
        return count.value

    def archive_info(self, index: int) -> ArchiveInfo:
        """Mounted archive `index` in mount order; NotFoundError past the end."""
        c = _capi.sdm_archive_info()
        self._call("sdm_archive_info_get", index, ctypes.byref(c))
        return ArchiveInfo._from_c(c)

    def archives(self) -> list[ArchiveInfo]:
        """Every mounted archive, in mount order."""
        return [self.archive_info(i) for i in range(self.archive_count())]

    # -- driver and devices --
    def driver_version(self) -> int:
        """The CUDA driver's version (12080 for 12.8); loads the driver if needed."""
        value = ctypes.c_int32()
        self._call("sdm_driver_version", ctypes.byref(value))
        return value.value

    def device_count(self) -> int:
        """How many CUDA devices are visible (0 is a success); NoDriverError without a driver."""
        value = ctypes.c_int32()
        self._call("sdm_device_count", ctypes.byref(value))
        return value.value

    def device_info(self, ordinal: int) -> DeviceInfo:
        """Device `ordinal`, supported or not."""
        c = _capi.sdm_device_info()
        self._call("sdm_device_info_get", ordinal, ctypes.byref(c))
        return DeviceInfo._from_c(c)

    def devices(self) -> list[DeviceInfo]:
        """Every visible device, by ordinal."""
        return [self.device_info(i) for i in range(self.device_count())]

    def device_class(self, ordinal: int) -> DeviceClass | int:
        """The device's DeviceClass; UnsupportedDeviceError outside the hardware matrix."""
        value = _capi.sdm_device_class()
        self._call("sdm_device_class_get", ordinal, ctypes.byref(value))
        return _known(DeviceClass, value.value)

    # -- kernels --
    def kernel(self, ordinal: int, name: str, stream: int | None = None, signature: str | None = None) -> Kernel:
        """Kernel `name` on device `ordinal`, loading its module on first use. With `signature`
        ("ptr,f32,i32"), a kernel declaring another raises MismatchError. `stream` (an int) is
        checked for graph capture before any JIT."""
        handle = kernel_p()
        if signature is None:
            self._call("sdm_kernel_get", ordinal, name.encode(), stream, ctypes.byref(handle))
        else:
            self._call("sdm_kernel_get_checked", ordinal, name.encode(), signature.encode(), stream,
                       ctypes.byref(handle))
        return Kernel(self, handle)

    def release(self, kernel: Kernel) -> None:
        """Drops the reference kernel() took (sdm_kernel_release)."""
        if kernel.runtime is not self:
            raise ValueError("the kernel belongs to another runtime")
        self._call("sdm_kernel_release", kernel._handle)

    def preload(self, ordinal: int, names: Iterable[str] | None = None) -> None:
        """Loads eagerly the modules of `names`, or of every kernel of every mounted archive when
        `names` is None (an empty list loads nothing)."""
        if names is None:
            self._call("sdm_preload", ordinal, None, 0)
            return
        encoded = [n.encode() for n in names]
        if encoded:  # a count of 0 would mean every kernel
            self._call("sdm_preload", ordinal, (ctypes.c_char_p * len(encoded))(*encoded), len(encoded))

    def cache_stats(self) -> CacheStats:
        """The runtime's kernel-cache counters."""
        c = _capi.sdm_cache_stats()
        self._call("sdm_cache_stats_get", ctypes.byref(c))
        return CacheStats(c.hits, c.misses, c.builds, c.evictions, c.bad_entries, c.bytes_written,
                          c.build_milliseconds)

    def load_plugin(self, path: _PathLike) -> None:
        """Loads a plan-provider plugin (sdm_plugin.h)."""
        self._call("sdm_plugin_load", _path(path))
