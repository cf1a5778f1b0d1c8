"""The C ABI of include/sdm/sdm.h in ctypes: its constants, its structs (same names, same field
order and types) and every SDM_API function with argtypes and restype declared.

Nothing here allocates or frees: the Pythonic layer in sdm/__init__.py owns handles and errors.
bindings/python/tests/test_sdm.py checks every declaration below against the header's text.
"""

import ctypes
import ctypes.util
import os
import threading
from ctypes import (CFUNCTYPE, POINTER, Structure, c_char, c_char_p, c_double, c_int32, c_int64, c_size_t,
                    c_uint16, c_uint32, c_uint64, c_void_p)

# ---- constants (sdm.h, pinned in tests/abi/layout.c) ----------------------------------------------

SDM_ABI_VERSION_MAJOR = 1
SDM_ABI_VERSION_MINOR = 1

SDM_OK = 0
SDM_ERROR_INVALID_ARGUMENT = 1
SDM_ERROR_OUT_OF_MEMORY = 2
SDM_ERROR_NO_DRIVER = 3
SDM_ERROR_DRIVER_TOO_OLD = 4
SDM_ERROR_DRIVER = 5
SDM_ERROR_NO_DEVICE = 6
SDM_ERROR_UNSUPPORTED_DEVICE = 7
SDM_ERROR_ARCHIVE_CORRUPT = 8
SDM_ERROR_ARCHIVE_UNSUPPORTED = 9
SDM_ERROR_IO = 10
SDM_ERROR_NOT_FOUND = 11
SDM_ERROR_UNSUPPORTED = 12
SDM_ERROR_NO_IMAGE = 13
SDM_ERROR_IMAGE_REFUSED = 14
SDM_ERROR_JIT = 15
SDM_ERROR_MISMATCH = 16
SDM_ERROR_GRAPH_CAPTURE = 17
SDM_ERROR_INTERNAL = 18

SDM_LOG_OFF = -1
SDM_LOG_DEFAULT = 0
SDM_LOG_ERROR = 1
SDM_LOG_WARN = 2
SDM_LOG_INFO = 3
SDM_LOG_DEBUG = 4

SDM_RUNTIME_NO_EMBEDDED_ARCHIVE = 1 << 0
SDM_CACHE_DISABLED = 1 << 0
SDM_CACHE_READ_ONLY = 1 << 1
SDM_JIT_NO_NVJITLINK = 1 << 0
SDM_JIT_NO_DRIVER = 1 << 1
SDM_JIT_NO_PTX_COMPILER = 1 << 2

SDM_DEVICE_CLASS_UNSUPPORTED = 0
SDM_DEVICE_CLASS_MODERN = 1
SDM_DEVICE_CLASS_A100 = 2
SDM_DEVICE_CLASS_RTX = 3

SDM_PLAN_PDL = 1 << 0

# ---- types ----------------------------------------------------------------------------------------

sdm_status = c_int32
sdm_log_level = c_int32
sdm_device_class = c_int32


class sdm_error(Structure):
    """Opaque: only ever behind a pointer."""


class sdm_runtime(Structure):
    """Opaque: only ever behind a pointer."""


class sdm_kernel(Structure):
    """Opaque: only ever behind a pointer."""


sdm_log_fn = CFUNCTYPE(None, c_void_p, sdm_log_level, c_char_p, c_size_t)


class Sized(Structure):
    """A struct that starts with `uint32_t struct_size`: a new one is zeroed with struct_size set to
    its ctypes size, the size of the struct as this binding declares it (ABI rule 4). Pass
    struct_size= to say otherwise."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if not args and "struct_size" not in kwargs:
            self.struct_size = ctypes.sizeof(self)


class sdm_chain(Sized):
    pass


sdm_chain._fields_ = [
    ("struct_size", c_uint32),
    ("type", c_uint32),
    ("next", POINTER(sdm_chain)),
]


class sdm_runtime_params(Sized):
    _fields_ = [
        ("struct_size", c_uint32),
        ("flags", c_uint32),
        ("log_fn", sdm_log_fn),
        ("log_user_data", c_void_p),
        ("log_level", sdm_log_level),
        ("reserved0", c_int32),
        ("cuda_driver", c_char_p),
        ("cuda_context", c_void_p),
        ("next", POINTER(sdm_chain)),
        ("cache_dir", c_char_p),
        ("cache_max_bytes", c_uint64),
        ("cache_flags", c_uint32),
        ("jit_flags", c_uint32),
        ("kernel_abi_major", c_uint32),  # ABI 1.1
        ("reserved1", c_uint32),
    ]


class sdm_archive_info(Sized):
    _fields_ = [
        ("struct_size", c_uint32),
        ("entry_count", c_uint32),
        ("kernel_count", c_uint32),
        ("kernel_abi_major", c_uint16),
        ("kernel_abi_minor", c_uint16),
        ("format_major", c_uint16),
        ("format_minor", c_uint16),
        ("embedded", c_uint32),
        ("size_bytes", c_uint64),
        ("label", c_char_p),
        ("content_version", c_char_p),
    ]


class sdm_device_info(Sized):
    _fields_ = [
        ("struct_size", c_uint32),
        ("ordinal", c_int32),
        ("capability_major", c_int32),
        ("capability_minor", c_int32),
        ("device_class", sdm_device_class),
        ("sm_count", c_int32),
        ("l2_bytes", c_uint64),
        ("smem_optin_bytes", c_int32),
        ("smem_cap_bytes", c_int32),
        ("smem_per_sm_bytes", c_int32),
        ("pdl_allowed", c_int32),
        ("clusters_allowed", c_int32),
        ("untested", c_int32),  # ABI 1.1
        ("name", c_char * 256),
    ]


class sdm_kernel_info(Sized):
    _fields_ = [
        ("struct_size", c_uint32),
        ("ordinal", c_int32),
        ("image_kind", c_uint32),
        ("image_sm", c_uint32),
        ("loaded_sm", c_uint32),
        ("source", c_uint32),
        ("name", c_char_p),
        ("module", c_char_p),
        ("archive", c_char_p),
        ("signature", c_char_p),
    ]


class sdm_cache_stats(Sized):
    _fields_ = [
        ("struct_size", c_uint32),
        ("reserved0", c_uint32),
        ("hits", c_uint64),
        ("misses", c_uint64),
        ("builds", c_uint64),
        ("evictions", c_uint64),
        ("bad_entries", c_uint64),
        ("bytes_written", c_uint64),
        ("build_milliseconds", c_double),
    ]


class sdm_plan(Sized):
    _fields_ = [
        ("struct_size", c_uint32),
        ("flags", c_uint32),
        ("grid", c_uint32),
        ("block", c_uint32),
        ("smem_bytes", c_uint32),
        ("cluster", c_uint32 * 3),
        ("blocks_per_sm", c_int32),
        ("occupancy", c_int32),
        ("rule", c_int32),
        ("reserved0", c_uint32),
    ]


P = POINTER
runtime_p, error_p, kernel_p = P(sdm_runtime), P(sdm_error), P(sdm_kernel)

# Every SDM_API function: name -> (restype, argtypes), in the header's order. The function table
# (sdm_api) lists the same signatures, so both are built from this one list.
FUNCTIONS = {
    "sdm_status_string": (c_char_p, [sdm_status]),
    "sdm_abi_version": (c_uint32, []),
    "sdm_version_string": (c_char_p, []),
    "sdm_error_code": (sdm_status, [error_p]),
    "sdm_error_message": (c_char_p, [error_p]),
    "sdm_error_native": (c_int32, [error_p]),
    "sdm_error_log": (c_char_p, [error_p]),
    "sdm_error_destroy": (None, [error_p]),
    "sdm_runtime_create": (sdm_status, [P(sdm_runtime_params), P(runtime_p), P(error_p)]),
    "sdm_runtime_destroy": (None, [runtime_p]),
    "sdm_runtime_last_error": (sdm_status, [runtime_p, P(error_p)]),
    "sdm_archive_mount_file": (sdm_status, [runtime_p, c_char_p, P(error_p)]),
    "sdm_archive_mount_memory": (sdm_status, [runtime_p, c_void_p, c_size_t, c_char_p, P(error_p)]),
    "sdm_runtime_reload": (sdm_status, [runtime_p, P(c_uint32), P(error_p)]),
    "sdm_runtime_poll_archives": (sdm_status, [runtime_p, P(c_uint32), P(error_p)]),
    "sdm_archive_count": (sdm_status, [runtime_p, P(c_uint32), P(error_p)]),
    "sdm_archive_info_get": (sdm_status, [runtime_p, c_uint32, P(sdm_archive_info), P(error_p)]),
    "sdm_driver_version": (sdm_status, [runtime_p, P(c_int32), P(error_p)]),
    "sdm_device_count": (sdm_status, [runtime_p, P(c_int32), P(error_p)]),
    "sdm_device_info_get": (sdm_status, [runtime_p, c_int32, P(sdm_device_info), P(error_p)]),
    "sdm_device_class_get": (sdm_status, [runtime_p, c_int32, P(sdm_device_class), P(error_p)]),
    "sdm_device_class_name": (c_char_p, [sdm_device_class]),
    "sdm_kernel_get": (sdm_status, [runtime_p, c_int32, c_char_p, c_void_p, P(kernel_p), P(error_p)]),
    "sdm_kernel_get_checked": (sdm_status, [runtime_p, c_int32, c_char_p, c_char_p, c_void_p, P(kernel_p), P(error_p)]),
    "sdm_kernel_release": (sdm_status, [runtime_p, kernel_p, P(error_p)]),
    "sdm_kernel_function": (sdm_status, [kernel_p, P(c_void_p), P(error_p)]),
    "sdm_kernel_info_get": (sdm_status, [kernel_p, P(sdm_kernel_info), P(error_p)]),
    "sdm_preload": (sdm_status, [runtime_p, c_int32, P(c_char_p), c_uint32, P(error_p)]),
    "sdm_cache_stats_get": (sdm_status, [runtime_p, P(sdm_cache_stats), P(error_p)]),
    "sdm_plan_select": (sdm_status, [kernel_p, P(c_int64), c_uint32, P(sdm_plan), P(error_p)]),
    "sdm_launch": (sdm_status, [kernel_p, P(sdm_plan), c_void_p, P(c_void_p), c_uint32, P(error_p)]),
    "sdm_plugin_load": (sdm_status, [runtime_p, c_char_p, P(error_p)]),
    # sdm_get_api, below: its signature names sdm_api.
}


def _table_entry(name):
    restype, argtypes = FUNCTIONS["sdm_" + name]
    return name, CFUNCTYPE(restype, *argtypes)


class sdm_api(Structure):
    """The function table of sdm_get_api (static in the library; read it, never build one)."""

    _fields_ = [("struct_size", c_uint32), ("abi_minor", c_uint32)] + [
        _table_entry(name) for name in (
            "status_string", "abi_version", "version_string", "error_code", "error_message", "error_native",
            "error_log", "error_destroy", "runtime_create", "runtime_destroy", "runtime_last_error",
            "archive_mount_file", "archive_mount_memory", "archive_count", "archive_info_get", "driver_version",
            "device_count", "device_info_get", "device_class_get", "device_class_name", "kernel_get",
            "kernel_function", "kernel_info_get", "preload", "cache_stats_get",
            # ABI 1.1
            "kernel_get_checked", "kernel_release", "runtime_reload", "runtime_poll_archives", "plan_select",
            "launch", "plugin_load")
    ]


FUNCTIONS["sdm_get_api"] = (sdm_status, [c_uint32, P(c_uint32), P(P(sdm_api))])

# ---- the library ----------------------------------------------------------------------------------

DEFAULT_LIBRARY = "libsdm.so.1"  # the SONAME (capi/meson.build: soversion 1)

_loaded = {}
_lock = threading.Lock()


def library_path(library=None):
    """What load() opens: `library`, else $SDM_LIBRARY, else what ctypes.util finds for "sdm", else
    libsdm.so.1 (the dynamic linker's search path)."""
    return library or os.environ.get("SDM_LIBRARY") or ctypes.util.find_library("sdm") or DEFAULT_LIBRARY


def load(library=None):
    """The CDLL of libsdm with every function of FUNCTIONS declared; one per path. Raises OSError
    when the library cannot be opened or implements another ABI major or an older minor."""
    path = library_path(library)
    with _lock:
        lib = _loaded.get(path)
        if lib is not None:
            return lib
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            raise OSError(f"cannot load libsdm from {path!r} ({e}); set SDM_LIBRARY to its path "
                          "or pass library=") from e
        lib.sdm_abi_version.restype, lib.sdm_abi_version.argtypes = c_uint32, []
        version = lib.sdm_abi_version()
        major, minor = version >> 16, version & 0xFFFF
        if major != SDM_ABI_VERSION_MAJOR or minor < SDM_ABI_VERSION_MINOR:
            raise OSError(f"{path} implements sdm ABI {major}.{minor}; these bindings need "
                          f"{SDM_ABI_VERSION_MAJOR}.{SDM_ABI_VERSION_MINOR} or a later {SDM_ABI_VERSION_MAJOR}.x")
        for name, (restype, argtypes) in FUNCTIONS.items():
            function = getattr(lib, name)
            function.restype = restype
            function.argtypes = argtypes
        _loaded[path] = lib
        return lib
