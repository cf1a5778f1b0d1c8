"""The C ABI of include/sdm/sdm.h in ctypes, and the loading of libsdm.

The declarations (constants, structs, every SDM_API function's argtypes and restype in FUNCTIONS)
are generated from the header into sdm/_sdm_h.py by capi/gen_abi.py and re-exported here; this
module opens the library and declares them on it. Nothing here allocates or frees: the Pythonic
layer in sdm/__init__.py owns handles and errors.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading
from ctypes import c_uint32

from ._sdm_h import *  # noqa: F401,F403 (the ABI's names are this module's)
from ._sdm_h import FUNCTIONS, SDM_ABI_VERSION_MAJOR, SDM_ABI_VERSION_MINOR

# ---- the library ----------------------------------------------------------------------------------

DEFAULT_LIBRARY = f"libsdm.so.{SDM_ABI_VERSION_MAJOR}"  # the SONAME: libsdm's soversion is the ABI major
# The copy a wheel carries (setup.py puts it there; a source tree has none): the libsdm these
# bindings were packaged with, found before any other libsdm on the machine.
BUNDLED_LIBRARY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_lib", DEFAULT_LIBRARY)

_loaded: dict[str, ctypes.CDLL] = {}
_lock = threading.Lock()


def library_path(library: str | None = None) -> str:
    """What load() opens: `library`, else $SDM_LIBRARY, else BUNDLED_LIBRARY when the package
    carries it, else what ctypes.util finds for "sdm", else DEFAULT_LIBRARY, the SONAME (the
    dynamic linker's search path)."""
    return (library or os.environ.get("SDM_LIBRARY")
            or (BUNDLED_LIBRARY if os.path.exists(BUNDLED_LIBRARY) else None)
            or ctypes.util.find_library("sdm") or DEFAULT_LIBRARY)


def load(library: str | None = None) -> ctypes.CDLL:
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
            # The loader names the object it could not open first: libsdm itself (not found), or
            # one of the libraries libsdm needs (found, but its dependency is missing).
            failed = str(e).split(":", 1)[0].strip()
            if failed and os.path.basename(failed) != os.path.basename(path) and failed != path:
                raise OSError(f"libsdm at {path!r} was found but a library it needs does not load ({e}); "
                              "install it: libsdm needs libzstd, libxxhash, liblz4 and libsodium "
                              "(Debian: libzstd1 libxxhash0 liblz4-1 libsodium23)") from e
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
