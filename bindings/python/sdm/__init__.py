"""Python bindings of sdm, the CUDA kernel-archive runtime, over its C ABI (include/sdm/sdm.h).

ctypes only: no compiler, no dependency. The raw ABI is in sdm._capi (every function declared with
argtypes and restype, every struct mirrored); this module is the Pythonic layer:

    with sdm.Runtime() as rt:
        rt.mount_file("kernels.sdma")
        info = rt.device_info(0)
        kernel = rt.kernel(0, "scale", signature="ptr,f32,i32")
        plan = kernel.plan(n)
        kernel.launch(plan, [device_pointer, 2.0, n])
        fill = rt.kernel(0, "sdm_test::fill<float, 256>")    # a C++ name expression (ABI 1.3)
        fill.launch(((8, 8), (16, 16)), [array, 1.5], stream=stream)   # (grid, block), 3-D too

Kernel arguments follow the kernel's signature: numbers as Python numbers, device pointers as ints
or as the arrays themselves (__cuda_array_interface__, DLPack, data_ptr()), structs passed by value
as bytes or ctypes structures; streams as ints or stream objects (__cuda_stream__, .cuda_stream).

Failures raise SdmError with the status, its name and sdm's message: the subclass of the status
(error_class), which also derives from the standard exception it fits (NotFoundError: LookupError,
SdmIOError: OSError). An image refusal raises ImageRefusedError, which, as in the seed, is a
BaseException and not an Exception: no generic fallback catches it (SdmBaseError catches all). libsdm is found through `library=`, else $SDM_LIBRARY, else the copy a wheel
carries (sdm/_lib/libsdm.so.1), else ctypes.util.find_library("sdm"), else libsdm.so.1. `python -m
sdm info` shows the libsdm found, the driver, the devices and the mounted archives. __version__ is
the package's: sdm's release.
"""

from __future__ import annotations

import ctypes
import enum
import math
import operator
import os
import re
import struct
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, SupportsFloat, SupportsIndex, TypeVar, Union

from . import _capi
from ._capi import DeviceClass, ImageKind, ImageSource, KernelSetting, Status, error_p, kernel_p, runtime_p  # generated from sdm.h: _sdm_h.py
from ._version import __version__

__all__ = [
    "SdmBaseError", "SdmError", "InvalidArgumentError", "OutOfMemoryError", "NoDriverError", "DriverTooOldError", "DriverError",
    "NoDeviceError", "UnsupportedDeviceError", "ArchiveCorruptError", "ArchiveUnsupportedError", "SdmIOError",
    "NotFoundError", "UnsupportedError", "NoImageError", "ImageRefusedError", "JitError", "MismatchError",
    "GraphCaptureError", "InternalError", "UntrustedError", "AmbiguousError", "SdmTimeoutError", "CancelledError", "error_class",
    "Status", "LogLevel", "DeviceClass", "ImageKind", "ImageSource", "RuntimeFlag", "CacheFlag", "JitFlag", "PlanFlag",
    "SignaturePolicy", "JitIsolation", "Runtime", "Kernel", "Warmup", "ArchiveInfo", "DeviceInfo", "KernelInfo", "CacheStats", "Plan",
    "KernelEntry", "KernelAttributes", "KernelSetting",
    "load_library", "abi_version", "version", "status_string", "device_class_name", "get_api", "qualified_name",
]


class LogLevel(enum.IntEnum):
    """sdm_log_level: how much a runtime logs, and the level of each message its log callback gets."""

    OFF = _capi.SDM_LOG_OFF          # nothing, whatever $SDM_LOG says
    DEFAULT = _capi.SDM_LOG_DEFAULT  # $SDM_LOG, else WARN
    ERROR = _capi.SDM_LOG_ERROR
    WARN = _capi.SDM_LOG_WARN
    INFO = _capi.SDM_LOG_INFO
    DEBUG = _capi.SDM_LOG_DEBUG


class RuntimeFlag(enum.IntFlag):
    """sdm_runtime_params.flags."""

    NO_EMBEDDED_ARCHIVE = _capi.SDM_RUNTIME_NO_EMBEDDED_ARCHIVE
    CURRENT_CONTEXT = _capi.SDM_RUNTIME_CURRENT_CONTEXT  # ABI 1.2: the calling thread's current CUDA context
    RELOAD_ANY_CONTRACT = _capi.SDM_RUNTIME_RELOAD_ANY_CONTRACT  # ABI 1.4: a reload may change fetched kernels' signatures


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
    COOPERATIVE = _capi.SDM_PLAN_COOPERATIVE  # ABI 1.3: grid-wide sync; refused unless the whole grid fits at once


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

_ERROR_CLASSES: dict[int, type[SdmBaseError]] = {}  # filled by the subclasses' `status=`


class SdmBaseError(BaseException):
    """Every failed sdm call: SdmError, or ImageRefusedError. `status` (a Status), `code` (its name,
    "SDM_ERROR_IO"), `message` (names the thing and the fix), `native` (the CUresult or nvJitLink
    result, else 0), `log` (a JIT log). Catch this to catch all of them, an image refusal included."""

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


class SdmError(SdmBaseError, Exception):
    """A failed sdm call, but an image refusal (ImageRefusedError, which is not an Exception).

    sdm raises the subclass of the status (error_class), named after it (ERROR_NOT_FOUND:
    NotFoundError; ERROR_IO: SdmIOError, since IOError would shadow Python's alias of OSError), and
    each subclass also derives from the standard exception it fits: `except OSError` catches a
    missing archive file. A status newer than these bindings raises SdmError itself."""


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


class ImageRefusedError(SdmBaseError, status=Status.ERROR_IMAGE_REFUSED):
    """sdm refused the image it loaded on a modern GPU (compiled for an older arch): the message
    names the image, the device and the fix. As the seed's ImageRefusal, a BaseException and not an
    Exception, so that no `except Exception` (nor `except sdm.SdmError`) fallback swallows it and
    goes on with another route: catch it by name, or as SdmBaseError."""


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


class AmbiguousError(SdmError, LookupError, status=Status.ERROR_AMBIGUOUS):
    """A kernel name (a C++ spelling, a name expression such as "fill") matches several kernels
    (ABI 1.3): the message lists them; fetch one by a fuller spelling ("fill<int, 256>") or its
    mangled name (Runtime.kernels() lists both)."""


class SdmTimeoutError(SdmError, TimeoutError, status=Status.ERROR_TIMEOUT):
    """The deadline passed before the work finished (ABI 1.5: Warmup.wait); the work goes on.
    Named so as not to shadow the builtin TimeoutError, which it derives from."""


class CancelledError(SdmError, RuntimeError, status=Status.ERROR_CANCELLED):
    """The work was cancelled before it finished (ABI 1.5: a cancelled warm-up). An Exception, unlike
    asyncio.CancelledError: nothing here is a task being torn down."""


def error_class(status: int) -> type[SdmBaseError]:
    """The class sdm raises for `status` (an SdmError subclass, or ImageRefusedError); SdmError itself for SDM_OK and for a status
    these bindings do not know."""
    return _ERROR_CLASSES.get(status, SdmError)


def _adopt(lib: ctypes.CDLL, status: int, error: ctypes._Pointer[_capi.sdm_error]) -> SdmBaseError:
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
    """Calls `function(*args, &error)`; raises the status's error (error_class) on a status other than SDM_OK."""
    error = error_p()
    status = function(*args, ctypes.byref(error))
    if status != _capi.SDM_OK:
        raise _adopt(lib, status, error)


# ---- library-wide functions -----------------------------------------------------------------------

def qualified_name(module: str, name: str) -> str:
    """The module-qualified spelling of kernel `name` of `module`: "MODULE!NAME" (ABI 1.4)."""
    if not module or "!" in module or "/" in module or ":" in module:
        raise ValueError(f"module {module!r} is not a module name sdm can qualify by (non-empty, without '!', '/' or ':')")
    return f"{module}!{name}"


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
class KernelAttributes:
    """What the driver says of a fetched kernel's function (sdm_kernel_attributes, ABI 1.4: the
    cuFuncGetAttribute set). Sizes in bytes; versions major * 10 + minor (90 for 9.0). The cluster
    fields are read on devices of capability 9.0 and later (has_cluster), else 0."""

    max_threads_per_block: int
    shared_size_bytes: int        # static shared memory per block
    const_size_bytes: int
    local_size_bytes: int         # per thread
    num_regs: int                 # per thread
    ptx_version: int
    binary_version: int
    cache_mode_ca: int
    max_dynamic_shared_size_bytes: int      # as set now (48 KiB unless raised)
    preferred_shared_memory_carveout: int   # percent of L1 as shared memory; -1: no preference
    has_cluster: bool
    cluster_size_must_be_set: int
    required_cluster_width: int
    required_cluster_height: int
    required_cluster_depth: int
    non_portable_cluster_size_allowed: int
    cluster_scheduling_policy_preference: int

    @classmethod
    def _from_c(cls, c: _capi.sdm_kernel_attributes) -> KernelAttributes:
        return cls(c.max_threads_per_block, c.shared_size_bytes, c.const_size_bytes, c.local_size_bytes, c.num_regs,
                   c.ptx_version, c.binary_version, c.cache_mode_ca, c.max_dynamic_shared_size_bytes,
                   c.preferred_shared_memory_carveout, bool(c.flags & _capi.SDM_KERNEL_ATTRIBUTES_CLUSTER),
                   c.cluster_size_must_be_set, c.required_cluster_width, c.required_cluster_height,
                   c.required_cluster_depth, c.non_portable_cluster_size_allowed, c.cluster_scheduling_policy_preference)


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


# What a launch dimension may be: an int (x), or a sequence of 1 to 3 ints (x, y, z).
_Dims = Union[SupportsIndex, Sequence[SupportsIndex]]

_UINT32_MAX = 2**32 - 1


def _dims(value: _Dims, what: str) -> tuple[int, int, int]:
    """`value` (an int, or 1 to 3 ints) as (x, y, z), each a uint32; a y or z missing or 0 is 1.
    The limits of each dimension are libsdm's to check: its messages name them."""
    items: list[object] = list(value) if isinstance(value, Sequence) and not isinstance(value, (str, bytes)) else [value]
    if not 1 <= len(items) <= 3:
        raise ValueError(f"{what} has {len(items)} dimensions: give an int, or 1 to 3 ints (x, y, z)")
    dims = []
    for axis, item in zip("xyz", items):
        try:
            number = operator.index(item)  # type: ignore[arg-type]  # refused below when it is not one
        except TypeError:
            raise TypeError(f"{what} {axis} is a {type(item).__name__}, not an int") from None
        if not 0 <= number <= _UINT32_MAX:
            raise ValueError(f"{what} {axis} of {number} is not a count (0 .. {_UINT32_MAX})")
        dims.append(number)
    dims += [1] * (3 - len(dims))
    return dims[0], dims[1] or 1, dims[2] or 1


def _shape(dims: tuple[int, int, int]) -> int | tuple[int, int, int]:
    """How a Plan keeps a grid or block: an int in one dimension, else (x, y, z)."""
    return dims[0] if dims[1:] == (1, 1) else dims


def _int_in(value: SupportsIndex, low: int, high: int, what: str) -> int:
    number = operator.index(value)
    if not low <= number <= high:
        raise ValueError(f"{what} of {number} is out of range ({low} .. {high})")
    return number


@dataclass(frozen=True, init=False)
class Plan:
    """A launch plan (sdm_plan): Kernel.plan() and Kernel.plan_for_elements() return one, a host
    makes its own, dataclasses.replace() changes one.

    grid and block are an int or 1 to 3 ints, (x, y, z) (ABI 1.3): a y or z left out or 0 is 1. A
    plan keeps each as an int in one dimension and as (x, y, z) otherwise, so Plan(grid=(7,)) ==
    Plan(grid=7); grid_dims and block_dims are always (x, y, z). cluster likewise, always kept as
    (x, y, z) (0: 1). cooperative=True and pdl=True set their PlanFlag in flags (False clears it,
    None leaves flags as given). priority is the launch's (CU_LAUNCH_ATTRIBUTE_PRIORITY) within the
    context's stream priority range, 0: the stream's own. A count past uint32 raises ValueError
    here; the launch limits (a block of at most 1,024 threads, ...) are libsdm's to check."""

    grid: int | tuple[int, int, int]   # blocks: x, or (x, y, z)
    block: int | tuple[int, int, int]  # threads per block: x, or (x, y, z)
    smem_bytes: int = 0
    cluster: tuple[int, int, int] = (1, 1, 1)  # blocks per cluster; (1, 1, 1): no clusters
    flags: PlanFlag = PlanFlag(0)
    blocks_per_sm: int = 1       # what the plan aims for
    occupancy: int = 0           # blocks per SM the driver says fit
    rule: int = -1               # the manifest's rule that chose it; -1: a plugin, plan_for_elements (or by hand)
    priority: int = 0            # ABI 1.3: the launch's priority; 0: the stream's

    def __init__(self, grid: _Dims, block: _Dims, smem_bytes: int = 0, cluster: _Dims = (1, 1, 1),
                 flags: int = PlanFlag(0), blocks_per_sm: int = 1, occupancy: int = 0, rule: int = -1,
                 priority: int = 0, *, cooperative: bool | None = None, pdl: bool | None = None) -> None:
        plan_flags = PlanFlag(int(flags))
        for wanted, flag in ((cooperative, PlanFlag.COOPERATIVE), (pdl, PlanFlag.PDL)):
            if wanted is not None:
                plan_flags = plan_flags | flag if wanted else plan_flags & ~flag
        cluster_dims = _dims(cluster, "cluster")
        set_field = object.__setattr__  # the dataclass is frozen
        set_field(self, "grid", _shape(_dims(grid, "grid")))
        set_field(self, "block", _shape(_dims(block, "block")))
        set_field(self, "smem_bytes", _int_in(smem_bytes, 0, _UINT32_MAX, "smem_bytes"))
        set_field(self, "cluster", (cluster_dims[0] or 1, cluster_dims[1], cluster_dims[2]))
        set_field(self, "flags", plan_flags)
        set_field(self, "blocks_per_sm", _int_in(blocks_per_sm, -2**31, 2**31 - 1, "blocks_per_sm"))
        set_field(self, "occupancy", _int_in(occupancy, -2**31, 2**31 - 1, "occupancy"))
        set_field(self, "rule", _int_in(rule, -2**31, 2**31 - 1, "rule"))
        set_field(self, "priority", _int_in(priority, -2**31, 2**31 - 1, "priority"))

    @property
    def pdl(self) -> bool:
        """Whether the plan launches with programmatic dependent launch (PlanFlag.PDL)."""
        return bool(self.flags & PlanFlag.PDL)

    @property
    def cooperative(self) -> bool:
        """Whether the launch is cooperative (PlanFlag.COOPERATIVE, ABI 1.3): libsdm refuses it
        unless the device supports cooperative launches and the whole grid can be resident at once,
        and its message gives the figures."""
        return bool(self.flags & PlanFlag.COOPERATIVE)

    @property
    def grid_dims(self) -> tuple[int, int, int]:
        """The grid as (x, y, z), whichever way it was given."""
        return self.grid if isinstance(self.grid, tuple) else (self.grid, 1, 1)

    @property
    def block_dims(self) -> tuple[int, int, int]:
        """The block as (x, y, z), whichever way it was given."""
        return self.block if isinstance(self.block, tuple) else (self.block, 1, 1)

    @classmethod
    def _from_c(cls, c: _capi.sdm_plan) -> Plan:
        return cls((c.grid, c.grid_y, c.grid_z), (c.block, c.block_y, c.block_z), c.smem_bytes, tuple(c.cluster),
                   PlanFlag(c.flags), c.blocks_per_sm, c.occupancy, c.rule, c.priority)

    def _to_c(self) -> _capi.sdm_plan:
        (gx, gy, gz), (bx, by, bz) = self.grid_dims, self.block_dims
        return _capi.sdm_plan(flags=int(self.flags), grid=gx, block=bx, smem_bytes=self.smem_bytes,
                              cluster=(ctypes.c_uint32 * 3)(*self.cluster), blocks_per_sm=self.blocks_per_sm,
                              occupancy=self.occupancy, rule=self.rule, grid_y=gy, grid_z=gz, block_y=by, block_z=bz,
                              priority=self.priority)


@dataclass(frozen=True)
class KernelEntry:
    """A kernel a mounted archive lists (sdm_kernel_entry, ABI 1.3): what Runtime.kernels() returns."""

    name: str                 # what the archive lists: a C++ kernel's mangled symbol
    demangled: str            # as c++filt prints it; "" for an extern "C" name (or one that does not demangle)
    module: str
    signature: str            # "ptr,f32,i32", or derived from the image by `sdm import`: "b64,b32"
    targets: tuple[str, ...]  # the module's images: ("sm_90", "sm_80", "compute_90")
    archive_index: int        # the archive listing it, in mount order (Runtime.archive_info)
    shadowed: bool            # listing one archive: a newer mounted archive lists the name and serves it

    @classmethod
    def _from_c(cls, c: _capi.sdm_kernel_entry) -> KernelEntry:
        return cls(_text(c.name), _text(c.demangled), _text(c.module), _text(c.signature),
                   tuple(t for t in _text(c.targets).split(",") if t), c.archive_index, bool(c.shadowed))


# ---- streams and device memory from other CUDA libraries -----------------------------------------

def _stream_handle(stream: object, what: str = "stream") -> int | None:
    """The CUstream `stream` stands for, as an int (None: NULL, the context's default stream): None,
    an int, or another library's stream object: __cuda_stream__ (cuda.core's protocol, a method or
    an attribute giving (version, handle)), .cuda_stream (PyTorch), _as_parameter_ (the ctypes
    convention), a ctypes.c_void_p."""
    for _ in range(4):  # an _as_parameter_ may hold another
        if stream is None:
            return None
        if isinstance(stream, int):
            handle = stream
        elif getattr(stream, "__cuda_stream__", None) is not None:
            info = getattr(stream, "__cuda_stream__")
            if callable(info):
                info = info()
            if not (isinstance(info, tuple) and len(info) == 2):
                raise TypeError(f"{what}: {type(stream).__name__}.__cuda_stream__ gave {info!r}, not (version, handle)")
            if info[0] != 0:
                raise ValueError(f"{what}: {type(stream).__name__}.__cuda_stream__ speaks version {info[0]} of the "
                                 "protocol; these bindings know version 0")
            handle = operator.index(info[1])
        elif getattr(stream, "cuda_stream", None) is not None:
            handle = operator.index(getattr(stream, "cuda_stream"))
        elif isinstance(stream, ctypes.c_void_p):
            handle = stream.value or 0
        elif getattr(stream, "_as_parameter_", None) is not None:
            stream = getattr(stream, "_as_parameter_")
            continue
        else:
            try:
                handle = operator.index(stream)  # type: ignore[arg-type]  # refused below when it is not one
            except TypeError:
                raise TypeError(f"{what}: give None, a CUstream as an int, or a stream object (__cuda_stream__, "
                                f".cuda_stream, _as_parameter_), not a {type(stream).__name__}") from None
        if not 0 <= handle < 2**64:
            raise ValueError(f"{what}: {handle} is not a CUstream handle")
        return handle
    raise TypeError(f"{what}: _as_parameter_ nests too deeply")


class _DLTensor(ctypes.Structure):
    """DLPack's DLTensor (dlpack.h): the head of the struct a "dltensor" capsule points to."""

    _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32),
                ("ndim", ctypes.c_int32), ("dtype", ctypes.c_uint32), ("shape", ctypes.c_void_p),
                ("strides", ctypes.c_void_p), ("byte_offset", ctypes.c_uint64)]


class _DLManagedTensorVersioned(ctypes.Structure):
    """DLPack 1.x's DLManagedTensorVersioned: what a "dltensor_versioned" capsule points to."""

    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p), ("flags", ctypes.c_uint64), ("dl_tensor", _DLTensor)]


# DLDeviceType values a kernel can address: kDLCUDA, kDLCUDAHost (pinned), kDLCUDAManaged.
_DLPACK_KERNEL_DEVICES = {2: "CUDA", 3: "CUDA host", 13: "CUDA managed"}
_DLPACK_DEVICE_NAMES = {1: "CPU", 4: "OpenCL", 7: "Vulkan", 8: "Metal", 9: "VPI", 10: "ROCm", 11: "ROCm host",
                        12: "ext_dev", 14: "oneAPI", 15: "WebGPU", 16: "Hexagon"}
# Prototypes of their own, so that nothing here changes the shared ctypes.pythonapi's.
_capsule_name = ctypes.PYFUNCTYPE(ctypes.c_char_p, ctypes.py_object)(("PyCapsule_GetName", ctypes.pythonapi))
_capsule_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi))


def _dlpack_device_check(device_type: int, what: str) -> None:
    if device_type not in _DLPACK_KERNEL_DEVICES:
        name = _DLPACK_DEVICE_NAMES.get(device_type, "unknown")
        raise TypeError(f"{what}: a DLPack tensor in {name} memory (device type {device_type}) cannot be a kernel's "
                        "pointer: give one in CUDA device, pinned host or managed memory")


def _dlpack_pointer(value: object, stream: int | None, what: str) -> int:
    """The device address of DLPack exporter `value`: its DLTensor's data plus byte_offset. The
    capsule is not consumed (not renamed), so dropping it releases the export, as DLPack has a
    consumer that did not take the tensor do; the memory stays `value`'s, which the caller keeps
    alive until the kernel is done with it. A CUDA exporter gets the launch's stream (1, the legacy
    default stream, for NULL), for it to make the data ready in that stream's order."""
    device = getattr(value, "__dlpack_device__", None)
    device_type = int(device()[0]) if callable(device) else None
    if device_type is not None:
        _dlpack_device_check(device_type, what)
    export = getattr(value, "__dlpack__")
    if device_type in (2, 13):  # kDLCUDA, kDLCUDAManaged: stream-ordered
        try:
            capsule = export(stream=stream or 1)
        except TypeError:  # an exporter that predates the stream keyword
            capsule = export()
    else:
        capsule = export()
    if type(capsule).__name__ != "PyCapsule":
        raise TypeError(f"{what}: {type(value).__name__}.__dlpack__() returned a {type(capsule).__name__}, not a capsule")
    name = _capsule_name(capsule)
    if name == b"dltensor":
        tensor = _DLTensor.from_address(_capsule_pointer(capsule, name))
    elif name == b"dltensor_versioned":
        tensor = _DLManagedTensorVersioned.from_address(_capsule_pointer(capsule, name)).dl_tensor
    else:
        raise TypeError(f"{what}: {type(value).__name__}.__dlpack__() returned a capsule named {name!r}, not an "
                        "unconsumed DLPack tensor (dltensor)")
    _dlpack_device_check(tensor.device_type, what)
    return (int(tensor.data or 0) + int(tensor.byte_offset)) % 2**64


def _device_pointer(value: object, stream: int | None, what: str) -> int | None:
    """The device address `value` stands for, by the first protocol it has: __cuda_array_interface__
    (CuPy, Numba, PyTorch: data[0]), DLPack's __dlpack__, a data_ptr() method (PyTorch), a ctypes
    pointer; None for an object with none of them."""
    interface = getattr(value, "__cuda_array_interface__", None)
    if interface is not None:
        try:
            return operator.index(interface["data"][0])
        except (TypeError, KeyError, IndexError):
            raise TypeError(f"{what}: the __cuda_array_interface__ of {type(value).__name__} has no data pointer "
                            "(data: (pointer, read_only))") from None
    if callable(getattr(value, "__dlpack__", None)):
        return _dlpack_pointer(value, stream, what)
    data_ptr = getattr(value, "data_ptr", None)
    if callable(data_ptr):
        return operator.index(data_ptr())
    if isinstance(value, ctypes._Pointer):
        return ctypes.cast(value, ctypes.c_void_p).value or 0
    return None


def _buffer(value: object, what: str) -> memoryview:
    """`value`'s bytes, without a copy: bytes, bytearray, memoryview, array.array, a ctypes
    structure, union or array, anything else of the buffer protocol; C-contiguous."""
    try:
        view = memoryview(value)  # type: ignore[arg-type]  # refused below when it has no buffer
    except TypeError:
        raise TypeError(f"{what}: a {type(value).__name__} is not bytes-like (bytes, bytearray, memoryview, "
                        "array.array, a ctypes structure or array)") from None
    if not view.c_contiguous:
        raise ValueError(f"{what}: the buffer is not C-contiguous")
    return view


# ---- kernel arguments -----------------------------------------------------------------------------

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

# The untyped parameters of a signature derived from an image (`sdm import`; docs/FORMAT.md,
# "Derived signatures"): a value of that many bits whose type the image does not say.
_BITS_TYPES: dict[str, tuple[type[ctypes._SimpleCData[Any]], int]] = {
    "b8": (ctypes.c_uint8, 8), "b16": (ctypes.c_uint16, 16), "b32": (ctypes.c_uint32, 32), "b64": (ctypes.c_uint64, 64),
}


def _is_float(value: object) -> bool:
    """A float rather than an int: a float (numpy.float64 too), or a number with __float__ but no
    __index__ (numpy.float32, decimal.Decimal); not a complex."""
    return _complex_width(value) is None and (
        isinstance(value, float) or (not hasattr(value, "__index__") and hasattr(value, "__float__")))


def _complex_width(value: object) -> int | None:
    """The bytes of a complex scalar of a fixed width (NumPy's complex64: 8, complex128: 16, a 0-d
    array of them too), 0 for a Python complex (no width of its own: it takes the parameter's), None
    for anything else."""
    dtype = getattr(value, "dtype", None)
    if getattr(dtype, "kind", None) == "c" and getattr(value, "ndim", 0) == 0:
        return int(dtype.itemsize)  # type: ignore[union-attr]  # a NumPy dtype
    return 0 if isinstance(value, complex) else None


def _type_name(value: object) -> str:
    """`value`'s type as a message names it: "float", "numpy.complex64"."""
    t = type(value)
    return t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__name__}"


def _param_size(kind: str) -> int:
    """The bytes of a parameter of signature type `kind`."""
    if kind.startswith("opaque:"):
        return int(kind.split(":")[1])
    return {"b8": 1, "b16": 2, "f16": 2, "bf16": 2, "b32": 4, "i32": 4, "u32": 4, "f32": 4}.get(kind, 8)


def _f32(value: float, what: str) -> float:
    """`value` as an f32 rounds it (as a C cast does); a finite value past the f32 range, which
    would arrive as an infinity, is refused."""
    if math.isfinite(value) and abs(value) > _F32_MAX:
        raise OverflowError(f"{what}: {value!r} does not fit an f32 (largest finite {_F32_MAX!r})")
    return value


_F32_MAX = struct.unpack("<f", b"\xff\xff\x7f\x7f")[0]


def _complex_argument(kind: str, value: Any, what: str) -> ctypes.Array[ctypes.c_char]:
    """A complex scalar for a parameter of its size, byte-exact: real part, then imaginary part.
    NumPy complex64 (8 bytes: complex<float>) goes to a b64 or opaque:8 parameter, complex128 (16:
    complex<double>) to an opaque:16 one; a Python complex takes the parameter's width, two f32 in 8
    bytes (each part rounded as a float to an f32 parameter is) or two f64 in 16. Anything else
    would lose a part, or the imaginary part altogether (a real parameter), and is refused."""
    width = _complex_width(value)
    size = _param_size(kind)
    fits = kind == "b64" or kind.startswith("opaque:")
    if not fits:
        raise TypeError(f"{what}: a {_type_name(value)} {value!r} does not convert to a {kind} without losing its imaginary part; "
                        "a complex goes to a complex parameter (b64 or opaque:8 for complex<float>, opaque:16 for complex<double>)")
    if width and width != size:
        wanted = {8: "numpy.complex64", 16: "numpy.complex128"}.get(size)
        raise TypeError(f"{what}: a {_type_name(value)} is {width} bytes and the {kind} parameter {size}; "
                        + (f"pass a {wanted} (or a Python complex)" if wanted else "a complex of its size does not exist"))
    if width:
        if value.dtype.isnative:
            return (ctypes.c_char * size).from_buffer_copy(value.tobytes())
        value = complex(value)  # another byte order: its parts, packed in the host's
    if size not in (8, 16):
        raise TypeError(f"{what}: a {_type_name(value)} packs as two f32 (8 bytes) or two f64 (16); the {kind} parameter is {size} bytes")
    number = complex(value)
    parts = (_f32(number.real, what), _f32(number.imag, what)) if size == 8 else (number.real, number.imag)
    return (ctypes.c_char * size).from_buffer_copy(struct.pack("<ff" if size == 8 else "<dd", *parts))


def _integer(kind: str, value: Any, what: str) -> int:
    """`value` as an int for an integer parameter; a float or a complex is refused, not truncated."""
    if _complex_width(value) is not None or _is_float(value):
        raise TypeError(f"{what}: a {_type_name(value)} {value!r} does not convert to a {kind} without loss; "
                        "pass an int (int(x) if truncating is what you mean)")
    return operator.index(value)


def _bytes_argument(value: object, size: int, what: str) -> ctypes.Array[ctypes.c_char]:
    """A copy of bytes-like `value`, which must be `size` bytes."""
    view = _buffer(value, what)
    if view.nbytes != size:
        raise ValueError(f"{what} is {size} byte(s); the value given is {view.nbytes}")
    return (ctypes.c_char * size).from_buffer_copy(view)


def _half_bits(value: SupportsFloat, kind: str) -> int:
    """The bits of `value` as an f16 (IEEE binary16), or as a bf16 (the upper half of its f32,
    rounded to nearest even)."""
    if kind == "f16":
        return int(struct.unpack("<H", struct.pack("<e", float(value)))[0])
    bits = int(struct.unpack("<I", struct.pack("<f", float(value)))[0])
    if bits & 0x7FFFFFFF > 0x7F800000:  # NaN: keep it one
        return (bits >> 16) | 0x40
    return (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16


def _bits_argument(kind: str, value: object, what: str) -> ctypes._CData:
    """A value for an untyped parameter (b8, b16, b32, b64): an int of that many bits (signed or
    unsigned), a float as f32 (b32) or f64 (b64), or that many bytes."""
    ctype, bits = _BITS_TYPES[kind]
    if _is_float(value):
        if bits == 32:
            return ctypes.c_float(_f32(float(value), what))  # type: ignore[arg-type]  # _is_float: it has __float__
        if bits == 64:
            return ctypes.c_double(float(value))  # type: ignore[arg-type]
        raise TypeError(f"{what}: a {_type_name(value)} is ambiguous for a {kind} parameter ({'f16 or bf16' if bits == 16 else 'one byte'}): "
                        f"pass its bits as an int or {bits // 8} byte(s) (struct.pack('<e', x) for an f16), or a ctypes value")
    if hasattr(value, "__index__"):
        number = operator.index(value)
        if not -(1 << (bits - 1)) <= number < 1 << bits:
            raise OverflowError(f"{what}: the {_type_name(value)} {number} does not fit a {kind} ({bits} bits: "
                                f"{-(1 << (bits - 1))} .. {(1 << bits) - 1})")
        return ctype(number & ((1 << bits) - 1))
    if isinstance(value, (bytes, bytearray, memoryview, ctypes.Structure, ctypes.Union, ctypes.Array)):
        return _bytes_argument(value, bits // 8, what)
    pointer = " or a device pointer (an array object)" if bits == 64 else ""
    raise TypeError(f"{what}: give an int, a float{pointer}, {bits // 8} byte(s) or a ctypes value, "
                    f"not a {_type_name(value)}")


def _kernel_argument(kind: str | None, value: Any, index: int, stream: int | None = None) -> ctypes._CData:
    """A ctypes value for kernel parameter `index` of signature type `kind`, packed by the
    parameter's layout; a conversion that would lose anything is refused, naming the argument's
    index and both types (TypeError; OverflowError for a number out of range):
    - ptr: an int, None (NULL), or an object of device memory (__cuda_array_interface__, DLPack,
      data_ptr(), a ctypes pointer); DLPack exporters get `stream`;
    - i32 u32 i64 u64: an int, range-checked (a float is refused, not truncated); f32 f64 f16
      bf16: a real number (a float rounds to an f32 as a C cast does; past its range is refused);
    - b8 b16 b32 b64 (derived signatures): an int of that width, signed or unsigned; a float for b32
      (as f32) and b64 (as f64); that many bytes; for b64 what a ptr takes too;
    - opaque:SIZE:ALIGN: SIZE bytes (bytes, bytearray, memoryview, a ctypes structure, ...);
    - a complex (NumPy complex64/complex128, Python complex): byte-exact to a parameter of its
      size, b64 or opaque:8 (complex<float>), opaque:16 (complex<double>); see _complex_argument;
    - a ctypes value as it is, when it is the parameter's size."""
    what = f"argument {index} ({kind})"
    if isinstance(value, ctypes._SimpleCData):
        if kind is not None and ctypes.sizeof(value) != _param_size(kind):
            raise TypeError(f"{what}: a {_type_name(value)} is {ctypes.sizeof(value)} byte(s); the {kind} parameter is {_param_size(kind)}")
        return value
    if kind is not None and _complex_width(value) is not None:
        return _complex_argument(kind, value, what)
    if kind is not None and kind.startswith("opaque:"):
        return _bytes_argument(value, _param_size(kind), what)
    if kind in ("ptr", "b64") and not isinstance(value, int):
        if value is None:
            return ctypes.c_void_p(0)
        pointer = _device_pointer(value, stream, what)
        if pointer is not None:
            if not 0 <= pointer < 2**64:
                raise OverflowError(f"{what}: {pointer} is not a device address")
            return ctypes.c_void_p(pointer)
        if kind == "ptr" and not hasattr(value, "__index__"):
            raise TypeError(f"{what}: give a device pointer as an int, None, or an object of device memory "
                            "(__cuda_array_interface__, __dlpack__, data_ptr(): a CuPy array, a PyTorch tensor), "
                            f"not a {_type_name(value)}")
    if kind in _BITS_TYPES:
        return _bits_argument(kind, value, what)
    if kind in ("f16", "bf16"):
        return ctypes.c_uint16(_half_bits(value, kind))
    if kind not in _PARAM_TYPES:
        raise TypeError(f"argument {index}: the signature's type {kind!r} is unknown to these bindings; "
                        "pass a ctypes value")
    ctype, bounds = _PARAM_TYPES[kind]
    if bounds is None:
        return ctype(_f32(float(value), what) if kind == "f32" else float(value))
    number = _integer(kind, value, what)
    if not bounds[0] <= number <= bounds[1]:
        raise OverflowError(f"{what}: the {_type_name(value)} {number} does not fit a {kind} ({bounds[0]} .. {bounds[1]})")
    return ctype(number)


class _CUlaunchAttribute(ctypes.Structure):
    """cuda.h's CUlaunchAttribute: an id, padding to 8 bytes, a 64-byte value (a union)."""

    _fields_ = [("id", ctypes.c_uint32), ("pad", ctypes.c_uint32), ("value", ctypes.c_uint64 * 8)]


# What Kernel.launch(attributes=...) takes: CUlaunchAttributeID values and their values.
_Attributes = Union[Mapping[int, Any], Iterable[tuple[int, Any]]]


def _launch_attributes(attributes: _Attributes) -> tuple[ctypes.Array[_CUlaunchAttribute], int]:
    """(array, count): CUlaunchAttribute values of (id, value) pairs. An int value fills the union's
    first 4 bytes (the int or unsigned of most attributes: memSyncDomain, sharedMemCarveout, ...), a
    bytes-like one (at most 64 bytes: a struct such as accessPolicyWindow) its first bytes."""
    pairs = list(attributes.items() if isinstance(attributes, Mapping) else attributes)
    array = (_CUlaunchAttribute * max(len(pairs), 1))()
    for index, (attribute, value) in enumerate(pairs):
        what = f"launch attribute {index}"
        array[index].id = _int_in(attribute, 0, _UINT32_MAX, f"{what}'s id")
        if hasattr(value, "__index__"):
            number = operator.index(value)
            if not -2**31 <= number <= _UINT32_MAX:
                raise OverflowError(f"{what}: {number} fits neither an int nor an unsigned")
            raw = struct.pack("<I", number & _UINT32_MAX)
        else:
            view = _buffer(value, f"{what}'s value")
            if view.nbytes > 64:
                raise ValueError(f"{what}: its value is {view.nbytes} bytes; a CUlaunchAttributeValue holds 64")
            raw = view.tobytes()
        ctypes.memmove(ctypes.addressof(array[index].value), raw, len(raw))
    return array, len(pairs)


def _signature_types(signature: str) -> list[str]:
    """The parameter types of a signature ("ptr, f32,i32"): spaces ignored, as libsdm reads it."""
    return [t for t in "".join(signature.split()).split(",") if t]


class Kernel:
    """A kernel a Runtime fetched (Runtime.kernel). Valid while its runtime is open, or after a
    reload replaced its archive, until release(). Its launch arguments convert by the signature
    given to Runtime.kernel (which libsdm checked against the kernel's), else by the kernel's own:
    a host that says "ptr,ptr,f32" for a kernel `sdm import` archived as "b64,b64,b32" passes 3 as
    3.0f, and a float where a pointer goes is a TypeError."""

    def __init__(self, runtime: Runtime, handle: ctypes._Pointer[_capi.sdm_kernel], signature: str | None = None) -> None:
        self.runtime = runtime
        self._kernel = handle
        self._signature: list[str] | None = _signature_types(signature) if signature is not None else None

    @property
    def _handle(self) -> ctypes._Pointer[_capi.sdm_kernel]:
        self.runtime._handle  # raises once the runtime is closed: the kernel went with it
        return self._kernel

    def _call(self, name: str, *args: Any) -> None:
        _call(self.runtime.library, getattr(self.runtime.library, name), self._handle, *args)

    def info(self) -> KernelInfo:
        """What the kernel is: its name, module, archive, signature, image and where that came from."""
        c = _capi.sdm_kernel_info()
        self._call("sdm_kernel_info_get", ctypes.byref(c))
        return KernelInfo._from_c(c)

    def function(self) -> int:
        """The CUfunction's address, for hosts that launch it themselves."""
        function = ctypes.c_void_p()
        self._call("sdm_kernel_function", ctypes.byref(function))
        return function.value or 0

    # -- attributes, settings and occupancy (ABI 1.4) --
    def attributes(self) -> KernelAttributes:
        """The driver's attributes of the kernel's function (registers, static, constant and local
        memory, versions, the dynamic shared memory limit, the carveout, clusters). Unlike
        function(), it does not hand the CUfunction out: a reload's retirement of the module still
        waits only for the streams sdm launched on."""
        c = _capi.sdm_kernel_attributes()
        self._call("sdm_kernel_attributes_get", ctypes.byref(c))
        return KernelAttributes._from_c(c)

    def set(self, setting: KernelSetting | int, value: int) -> None:
        """Sets `setting` (KernelSetting.MAX_DYNAMIC_SHARED_BYTES: bytes; PREFERRED_CARVEOUT: 0 .. 100
        percent, -1 for none) on the kernel's function and records it for the kernel's name on its
        device: the kernel fetched again after a reload gets it too. A value past the device's
        limit is InvalidArgumentError naming both, and nothing is recorded."""
        self._call("sdm_kernel_set", int(setting), _int_in(value, -2**31, 2**31 - 1, "value"))

    def max_active_blocks(self, block_threads: int, smem_bytes: int = 0) -> int:
        """Blocks of `block_threads` threads and `smem_bytes` of dynamic shared memory that fit on
        one multiprocessor at once (the driver's occupancy calculator); 0 when none does."""
        blocks = ctypes.c_int32()
        self._call("sdm_kernel_max_active_blocks", _int_in(block_threads, 0, _UINT32_MAX, "block_threads"),
                   _int_in(smem_bytes, 0, _UINT32_MAX, "smem_bytes"), ctypes.byref(blocks))
        return blocks.value

    def max_potential_block_size(self, smem_bytes: int = 0, block_threads_limit: int = 0) -> tuple[int, int]:
        """(block size of the highest occupancy, the fewest blocks that reach it on the device) for
        `smem_bytes` of dynamic shared memory per block, blocks of at most `block_threads_limit`
        threads (0: the kernel's own limit): cuOccupancyMaxPotentialBlockSize."""
        block, min_grid = ctypes.c_int32(), ctypes.c_int32()
        self._call("sdm_kernel_max_potential_block_size", _int_in(smem_bytes, 0, _UINT32_MAX, "smem_bytes"),
                   _int_in(block_threads_limit, 0, _UINT32_MAX, "block_threads_limit"), ctypes.byref(block),
                   ctypes.byref(min_grid))
        return block.value, min_grid.value

    def plan(self, problem: int | Sequence[int]) -> Plan:
        """The launch plan for `problem`, the kernel's problem parameters in manifest order (an int
        for one, or a sequence)."""
        values = [problem] if isinstance(problem, int) else list(problem)
        array = (ctypes.c_int64 * max(len(values), 1))(*values)
        c = _capi.sdm_plan()
        self._call("sdm_plan_select", array, len(values), ctypes.byref(c))
        return Plan._from_c(c)

    def plan_for_elements(self, elements: int, smem_bytes: int = 0) -> Plan:
        """A plan for a kernel without plan rules (ABI 1.3): one thread per element, in blocks of the
        size the driver's occupancy calculator suggests for the kernel with `smem_bytes` of dynamic
        shared memory, as many blocks as cover the elements (rule -1; occupancy: the driver's
        blocks per SM). Change it with dataclasses.replace before launching if need be."""
        c = _capi.sdm_plan()
        self._call("sdm_plan_for_elements", _int_in(elements, 0, 2**64 - 1, "elements"),
                   _int_in(smem_bytes, 0, _UINT32_MAX, "smem_bytes"), ctypes.byref(c))
        return Plan._from_c(c)

    def launch(self, plan: Plan | tuple[_Dims, _Dims], args: Sequence[Any], stream: object = None, *,
               attributes: _Attributes | None = None) -> None:
        """Launches with `plan` on `stream`.

        plan: a Plan, or (grid, block), each an int or up to 3 ints, (x, y, z) (ABI 1.3; a Plan also
        carries dynamic shared memory, clusters, cooperative and a priority). stream: None (the
        device's context current on this thread), a CUstream as an int, or a stream object
        (__cuda_stream__, .cuda_stream, _as_parameter_). args follow the kernel's signature (ptr:
        an int, None or an array object of device memory, by __cuda_array_interface__, DLPack or
        data_ptr(); numbers as Python numbers; for a signature derived from the image, b32 an int
        or a float (f32), b64 an int, a float (f64) or a pointer, opaque:SIZE:ALIGN SIZE bytes;
        ctypes values as they are). Device memory must stay allocated until the kernel has run:
        sdm keeps no reference past the call. attributes (optional): more CUlaunchAttributes for
        cuLaunchKernelEx, as {id: value} or (id, value) pairs of cuda.h's CUlaunchAttributeID and
        an int (the value's first 4 bytes) or bytes (at most 64); not the ones a Plan sets."""
        if not isinstance(plan, Plan):
            if not (isinstance(plan, tuple) and len(plan) == 2):
                raise TypeError("plan: give a Plan, or (grid, block) with each an int or up to 3 ints "
                                "(a Plan for dynamic shared memory, clusters, cooperative or a priority)")
            plan = Plan(plan[0], plan[1])
        handle = _stream_handle(stream)
        if self._signature is None:
            self._signature = _signature_types(self.info().signature)
        values = []
        for index, value in enumerate(args):
            kind = self._signature[index] if index < len(self._signature) else None
            if kind is None and not isinstance(value, ctypes._SimpleCData):
                # More arguments than the signature has: sdm refuses the count, naming both, before
                # it reads any, so a placeholder holds the place.
                value = ctypes.c_int64(0)
            values.append(_kernel_argument(kind, value, index, handle))
        pointers = (ctypes.c_void_p * max(len(values), 1))(*[ctypes.addressof(v) for v in values])
        c = plan._to_c()
        chain: _capi.sdm_launch_attributes | None = None
        if attributes is not None:
            extra, count = _launch_attributes(attributes)  # both live until sdm_launch returns
            chain = _capi.sdm_launch_attributes(type=_capi.SDM_CHAIN_LAUNCH_ATTRIBUTES,
                                                attributes=ctypes.cast(extra, ctypes.c_void_p), count=count)
            c.next = ctypes.cast(ctypes.pointer(chain), ctypes.POINTER(_capi.sdm_chain))
        self._call("sdm_launch", ctypes.byref(c), handle, pointers, len(values))

    # -- module globals (ABI 1.3) --
    def global_get(self, name: str) -> tuple[int, int]:
        """(device address, size in bytes) of the __device__ or __constant__ variable `name` of
        the kernel's module, as loaded for its device and context (a C++ variable in a namespace
        by its mangled symbol). NotFoundError when the module defines none; InvalidArgumentError
        for a kernel's name. The global belongs to the image the kernel's module loaded: after a
        reload, fetch the kernel again for the new image's."""
        address, size = ctypes.c_uint64(), ctypes.c_uint64()
        self._call("sdm_global_get", name.encode(), ctypes.byref(address), ctypes.byref(size))
        return address.value, size.value

    def global_write(self, name: str, data: object, offset: int = 0, stream: object = None) -> None:
        """Copies bytes-like `data` (bytes, bytearray, memoryview, array.array, a ctypes array or
        structure) to the global `name` at byte `offset`, on `stream` (None: the context's default
        stream), as cuMemcpyHtoDAsync does. bytes and writable data are read in place (other
        read-only buffers through a copy): pageable memory is staged before the call returns
        (CUDA's rule), while pinned memory must stay as it is until the stream has done the copy. A
        range past the global's size is InvalidArgumentError."""
        view = _buffer(data, "data")
        handle = _stream_handle(stream)
        position = _int_in(offset, 0, 2**64 - 1, "offset")
        source: object
        if isinstance(data, bytes):
            source = data  # ctypes passes a bytes object's own buffer
        elif view.readonly:
            source = view.tobytes()
        else:
            source = (ctypes.c_char * view.nbytes).from_buffer(view)
        self._call("sdm_global_write", name.encode(), position, source, view.nbytes, handle)

    def global_read(self, name: str, size: int | None = None, offset: int = 0, stream: object = None) -> bytes:
        """`size` bytes (None: the rest of the global) of the global `name` from byte `offset`, on
        `stream` (None: the context's default stream), as cuMemcpyDtoHAsync does. The copy is into
        pageable memory, for which CUDA returns only once it is done, after the work queued before
        it on `stream`; ordering it after work on other streams is the caller's job."""
        position = _int_in(offset, 0, 2**64 - 1, "offset")
        if size is None:
            size = max(self.global_get(name)[1] - position, 0)
        count = _int_in(size, 0, 2**63 - 1, "size")
        handle = _stream_handle(stream)
        buffer = ctypes.create_string_buffer(max(count, 1))
        self._call("sdm_global_read", name.encode(), position, buffer, count, handle)
        return buffer.raw[:count]

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


def _destroy_warmup(lib: ctypes.CDLL, handle: ctypes._Pointer[_capi.sdm_warmup], _done_callback: object) -> None:
    # The done callback rides along so that it outlives the warm-up that may call it; the call
    # waits for it (ctypes releases the GIL during it, so the callback's thread can take it).
    lib.sdm_warmup_destroy(handle)


class Warmup:
    """A background warm-up (sdm_preload_async, ABI 1.5), made by Runtime.preload_async. A context
    manager; close() (or garbage collection) cancels what has not started, waits for the loads
    under way and for the done callback, and frees it. It may outlive its runtime, whose close()
    cancels it. Every method may be called from any thread; the done callback must not close its
    own Warmup."""

    def __init__(self, library: ctypes.CDLL, handle: ctypes._Pointer[_capi.sdm_warmup], done_callback: object) -> None:
        self.library = library
        self._warmup = handle
        self._finalizer = weakref.finalize(self, _destroy_warmup, library, handle, done_callback)

    @property
    def _handle(self) -> ctypes._Pointer[_capi.sdm_warmup]:
        if not self._finalizer.alive:
            raise ValueError("the sdm warm-up is closed")
        return self._warmup

    def _call(self, name: str, *args: Any) -> None:
        _call(self.library, getattr(self.library, name), self._handle, *args)

    def progress(self) -> tuple[int, int]:
        """(modules finished, modules to load); the total is 0 until the warm-up listed its modules."""
        done, total = ctypes.c_uint32(), ctypes.c_uint32()
        self._call("sdm_warmup_progress", ctypes.byref(done), ctypes.byref(total))
        return done.value, total.value

    def wait(self, timeout: float | None = None) -> None:
        """Waits for the warm-up to finish, at most `timeout` seconds (None: without a deadline; 0:
        only looks). Returns when it loaded everything; raises its first failure, CancelledError
        when it was cancelled, SdmTimeoutError when the deadline came first (it goes on)."""
        if timeout is None:
            while True:  # sdm's deadline is a uint32 of milliseconds: about 49 days at a time
                try:
                    self._call("sdm_warmup_wait", 0xFFFFFFFF)
                    return
                except SdmTimeoutError:
                    continue
        if timeout < 0:
            raise ValueError(f"timeout {timeout} is negative")
        self._call("sdm_warmup_wait", min(int(math.ceil(timeout * 1000)), 0xFFFFFFFF))

    def cancel(self) -> None:
        """Skips the modules not started; those loading finish. Returns at once."""
        self._call("sdm_warmup_cancel")

    @property
    def open(self) -> bool:
        """Whether the warm-up is still open (neither closed nor collected)."""
        return self._finalizer.alive

    def close(self) -> None:
        """Cancels it if it still runs, waits for its loads under way and its done callback, and frees it. Idempotent."""
        self._finalizer()

    def __enter__(self) -> Warmup:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        if not self.open:
            return "<sdm.Warmup closed>"
        done, total = self.progress()
        return f"<sdm.Warmup {done}/{total} modules>"


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

    def last_error(self) -> SdmBaseError | None:
        """A copy of the last error any call on this runtime reported (the SdmError subclass or
        ImageRefusedError sdm would raise for it), or None."""
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

    def footprint(self) -> dict[str, int]:
        """What the runtime holds now (ABI 1.5): device bytes of the loaded modules, host bytes,
        read-ahead, references, archives and the kernel cache, as a dict of sdm_footprint's
        fields."""
        f = _capi.sdm_footprint()
        self._call("sdm_footprint_get", ctypes.byref(f))
        names = [field[0] for field in f._fields_]
        return {name: int(getattr(f, name)) for name in names if name not in ("struct_size", "reserved0")}

    def unmount(self, label: str) -> int:
        """Unmounts the archive mounted as `label` (its path, or the label given) and the
        overlays on it (ABI 1.5); the number that went. Kernels fetched from it keep working
        until released."""
        count = ctypes.c_uint32()
        self._call("sdm_archive_unmount", label.encode(), ctypes.byref(count))
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
    def kernel(self, ordinal: int, name: str, stream: object = None, signature: str | None = None, *, module: str | None = None) -> Kernel:
        """Kernel `name` on device `ordinal`, loading its module on first use. `name` is what an
        archive lists (a C++ kernel's mangled symbol) or, ABI 1.3, a C++ spelling of it: the
        declaration as c++filt prints it, or a name expression as CuPy takes it
        ("sdm_test::fill<float, 256>", "fill<int,256>", or "reduce" when one kernel has that name);
        several matches raise AmbiguousError listing them. With `signature` ("ptr,f32,i32"), a
        kernel declaring another raises MismatchError; a signature derived from the image
        ("b64,b32", from `sdm import`) agrees with every typed one of its layout (b32: i32, u32 or
        f32; b64: ptr, i64, u64 or f64), and the Kernel's launch arguments convert by it. `stream`
        (an int or a stream object, as launch takes) is checked for graph capture before any JIT.
        ABI 1.4: `module` names the kernel within that module (CuPy's RawModule.get_function), as
        the name "MODULE!NAME" does; a name several modules define raises AmbiguousError naming
        them, never one module's kernel for another's. A name expression recorded at build time
        (`sdm import --source --name-expression`) is found as its author wrote it."""
        if module is not None:
            name = qualified_name(module, name)
        handle = kernel_p()
        stream_handle = _stream_handle(stream)
        if signature is None:
            self._call("sdm_kernel_get", ordinal, name.encode(), stream_handle, ctypes.byref(handle))
        else:
            self._call("sdm_kernel_get_checked", ordinal, name.encode(), signature.encode(), stream_handle,
                       ctypes.byref(handle))
        return Kernel(self, handle, signature)

    def kernels(self, archive: int | None = None) -> list[KernelEntry]:
        """The kernels of mounted archive `archive` (its index in mount order; each entry says
        whether a newer archive shadows it), or, None, every kernel the runtime serves (each name
        once, from the newest archive listing it): a snapshot sorted by name (ABI 1.3). An index
        past the mounted archives raises NotFoundError."""
        if archive is None:
            index = _capi.SDM_LIST_SERVED
        else:
            index = operator.index(archive)
            if not 0 <= index < _capi.SDM_LIST_SERVED:
                raise ValueError(f"archive {index} is not a mount index (0, 1, ...); None lists what the runtime serves")
        listing = _capi.kernel_list_p()
        self._call("sdm_kernel_list_create", index, ctypes.byref(listing))
        try:
            count = ctypes.c_uint32()
            _call(self.library, self.library.sdm_kernel_list_count, listing, ctypes.byref(count))
            entries = []
            for position in range(count.value):
                entry = _capi.sdm_kernel_entry()
                _call(self.library, self.library.sdm_kernel_list_get, listing, position, ctypes.byref(entry))
                entries.append(KernelEntry._from_c(entry))  # copies the strings, which the list owns
            return entries
        finally:
            self.library.sdm_kernel_list_destroy(listing)

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

    def preload_async(self, ordinal: int, names: Iterable[str] | None = None, priority: int = 0,
                      done: Callable[[Status | int], object] | None = None) -> Warmup:
        """Starts loading the modules preload() would load, in the background (ABI 1.5), and returns
        at once; across pending warm-ups a higher `priority` goes first. `done(status)` is called
        once, on one of sdm's threads, when it finishes. A name that selects nothing is the warm-up's
        outcome (Warmup.wait raises it), not this call's. An empty list of names is a ValueError
        (sdm's count of 0 means every kernel; pass None for that)."""
        encoded = [n.encode() for n in names] if names is not None else []
        if names is not None and not encoded:
            raise ValueError("preload_async: an empty list of names would warm up nothing; pass None for every kernel")
        callback: object = None
        if done is not None:
            def forward(_user_data: int | None, status: int, _warmup: object) -> None:
                try:
                    done(_known(Status, status))
                except Exception:  # noqa: BLE001 (it cannot propagate into sdm's thread)
                    pass
            callback = _capi.sdm_warmup_done_fn(forward)
        handle = _capi.warmup_p()
        array = (ctypes.c_char_p * len(encoded))(*encoded) if encoded else None
        self._call("sdm_preload_async", ordinal, array, len(encoded), priority,
                   callback if callback is not None else _capi.sdm_warmup_done_fn(), None, ctypes.byref(handle))
        return Warmup(self.library, handle, callback)

    def cache_stats(self) -> CacheStats:
        """The runtime's kernel-cache counters."""
        c = _capi.sdm_cache_stats()
        self._call("sdm_cache_stats_get", ctypes.byref(c))
        return CacheStats(c.hits, c.misses, c.builds, c.evictions, c.bad_entries, c.bytes_written,
                          c.build_milliseconds)

    def load_plugin(self, path: _PathLike) -> None:
        """Loads a plan-provider plugin (sdm_plugin.h)."""
        self._call("sdm_plugin_load", _path(path))
