"""The Python bindings against a real libsdm and the fake CUDA driver (tests/fake_cuda).

Run: SDM_LIBRARY=build/capi/libsdm.so SDM_CUDA_DRIVER=build/tests/fake_cuda/libcuda_fake.so \
     SDM_TOOL=build/tools/sdm python3 -m unittest discover -s bindings/python/tests
(bindings/python/run_tests.sh does it). $SDM_TOOL, the sdm tool, archives the user kernels of
tests/data (launch.cu, params.cu) with `sdm import`, as a user of ABI 1.3 would.

They test the source tree's sdm, or, from a copy of this directory with $SDM_SOURCE_ROOT naming the
source tree (for its data), the sdm that is installed (test_wheel.sh).

Every test skips when libsdm cannot be found; anything else that goes wrong fails.
"""

import array
import contextlib
import dataclasses
import ctypes
import enum
import gc
import hashlib
import inspect
import io
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import tomllib
import unittest
from pathlib import Path
from unittest import mock

if os.environ.get("SDM_SOURCE_ROOT"):
    ROOT = Path(os.environ["SDM_SOURCE_ROOT"])
else:
    ROOT = Path(__file__).resolve().parents[3]
    sys.path.insert(0, str(ROOT / "bindings" / "python"))
sys.path.insert(0, str(ROOT / "capi"))

from abigen import model, reader  # noqa: E402
import sdm  # noqa: E402
import sdm.__main__  # noqa: E402
from sdm import _capi  # noqa: E402

HEADER = reader.read_header(model.HEADER)  # the generator's reading of sdm.h, checked here against ctypes
GOLDEN = ROOT / "tests" / "golden"
ARCHIVE = GOLDEN / "kernels.sdma"
MANIFEST = tomllib.loads((ROOT / "tests" / "data" / "manifest.toml").read_text())  # what ARCHIVE was packed from

H200 = "NVIDIA H200,9.0,232448,132,62914560"
A100 = "NVIDIA A100-SXM4-80GB,8.0,166912,108,41943040"
RTX4090 = "NVIDIA GeForce RTX 4090,8.9,101376,128,75497472"
V100 = "Tesla V100-SXM2-16GB,7.0,98304,80,6291456"

lib = None


def setUpModule():
    global lib
    path = _capi.library_path()
    try:
        lib = sdm.load_library()
    except OSError as e:
        # Only a library that is not there skips; one that is there and fails to load (another
        # ABI, a broken file) is a failure.
        if "cannot open shared object file" in str(e) or "No such file" in str(e):
            raise unittest.SkipTest(f"libsdm not found ({path}); set SDM_LIBRARY") from e
        raise


# ---- the declarations against the header ----------------------------------------------------------

SCALARS = {
    "int32_t": ctypes.c_int32, "uint32_t": ctypes.c_uint32, "int64_t": ctypes.c_int64, "uint64_t": ctypes.c_uint64,
    "uint16_t": ctypes.c_uint16, "uint8_t": ctypes.c_uint8, "size_t": ctypes.c_size_t, "double": ctypes.c_double, "char": ctypes.c_char,
}


def expected(ctype):
    """What the header's `ctype` must be in ctypes, in the normal form of actual()."""
    if ctype.function is not None:
        return ("function", expected(ctype.function.ret), tuple(expected(p.type) for p in ctype.function.params))
    ctype = HEADER.resolve(ctype)
    if ctype.array is not None:
        return ("array", expected(ctype.element()), ctype.array)
    if ctype.pointers:
        return ("pointer", expected(ctype.pointee()))
    if ctype.base == "void":
        return "void"
    if ctype.base in SCALARS:
        return SCALARS[ctype.base]
    if ctype.base in HEADER.callbacks:
        return expected(model.CType("", function=HEADER.callbacks[ctype.base]))
    if ctype.base in HEADER.structs or ctype.base in HEADER.opaque:
        cls = getattr(_capi, ctype.base, None)
        return cls if cls is not None else f"(no class _capi.{ctype.base})"
    raise AssertionError(f"the test does not know the C type {ctype}")


def actual(t):
    """A ctypes type in a normal form comparable with expected()."""
    if t is None:
        return "void"
    if t is ctypes.c_char_p:
        return ("pointer", ctypes.c_char)
    if t is ctypes.c_void_p:
        return ("pointer", "void")
    if isinstance(t, type) and issubclass(t, ctypes._Pointer):
        return ("pointer", actual(t._type_))
    if isinstance(t, type) and issubclass(t, ctypes.Array):
        return ("array", actual(t._type_), t._length_)
    if isinstance(t, type) and issubclass(t, ctypes._CFuncPtr):
        return ("function", actual(t._restype_), tuple(actual(a) for a in t._argtypes_))
    return t


class DeclarationsTest(unittest.TestCase):
    """Every SDM_API function, struct and constant of sdm.h against what sdm._capi declares."""

    def test_the_header_parses_to_the_whole_abi(self):
        self.assertGreaterEqual(len(HEADER.functions), 33)
        self.assertIn("sdm_launch", HEADER.functions)
        self.assertEqual(set(HEADER.opaque), {"sdm_runtime", "sdm_error", "sdm_kernel", "sdm_kernel_list", "sdm_module_list", "sdm_warmup"})

    def test_every_function_is_bound_with_argtypes_and_restype(self):
        self.assertEqual(set(_capi.FUNCTIONS), set(HEADER.functions), "bound functions differ from sdm.h's")
        for name, function in HEADER.functions.items():
            with self.subTest(function=name):
                bound = getattr(lib, name)
                self.assertIsNotNone(bound.argtypes, f"{name}: argtypes not declared")
                self.assertEqual(len(bound.argtypes), len(function.params), f"{name}: argument count")
                for index, (param, argtype) in enumerate(zip(function.params, bound.argtypes)):
                    self.assertEqual(actual(argtype), expected(param.type),
                                     f"{name} argument {index} ({param.name}: {param.type})")
                self.assertEqual(actual(bound.restype), expected(function.ret), f"{name}: restype ({function.ret})")

    def test_every_struct_is_mirrored_field_by_field(self):
        for name, struct in HEADER.structs.items():
            with self.subTest(struct=name):
                cls = getattr(_capi, name)
                self.assertTrue(issubclass(cls, ctypes.Structure))
                declared = cls._fields_
                self.assertEqual([f[0] for f in declared], [f.name for f in struct.fields], f"{name}: field names")
                for (field_name, field_type), field in zip(declared, struct.fields):
                    self.assertEqual(actual(field_type), expected(field.type), f"{name}.{field_name} ({field.type})")
        for name in HEADER.opaque:
            self.assertEqual(getattr(_capi, name).__dict__.get("_fields_", []), [], f"{name} is opaque")

    def test_struct_layouts_match_the_pinned_numbers(self):
        # tests/abi/layout.c pins every offset and size with static asserts (LP64).
        layout = (ROOT / "tests" / "abi" / "layout.c").read_text()
        fields = re.findall(r"PIN_FIELD\((\w+), (\w+), (\d+), (\d+)\)", layout)
        sizes = re.findall(r"PIN_SIZE\((sdm_\w+), (\d+), (\d+)\)", layout)
        self.assertGreater(len(fields), 80)
        for struct, field, offset, size in fields:
            descriptor = getattr(getattr(_capi, struct), field)
            self.assertEqual((descriptor.offset, descriptor.size), (int(offset), int(size)), f"{struct}.{field}")
        for struct, size, alignment in sizes:
            cls = getattr(_capi, struct)
            self.assertEqual((ctypes.sizeof(cls), ctypes.alignment(cls)), (int(size), int(alignment)), struct)

    def test_every_constant_has_the_headers_value(self):
        values = {name: constant.value for name, constant in HEADER.constants.items()}
        for name, value in values.items():
            self.assertEqual(getattr(_capi, name, None), value, name)
        statuses = {k: v for k, v in values.items() if k == "SDM_OK" or k.startswith("SDM_ERROR_")}
        self.assertEqual({"SDM_" + s.name: int(s) for s in sdm.Status}, statuses)
        self.assertEqual({"SDM_LOG_" + s.name: int(s) for s in sdm.LogLevel},
                         {k: v for k, v in values.items() if k.startswith("SDM_LOG_")})
        self.assertEqual({"SDM_DEVICE_CLASS_" + s.name: int(s) for s in sdm.DeviceClass},
                         {k: v for k, v in values.items() if k.startswith("SDM_DEVICE_CLASS_")})
        for prefix, flags in (("SDM_JIT_", sdm.JitFlag), ("SDM_CACHE_", sdm.CacheFlag), ("SDM_PLAN_", sdm.PlanFlag),
                              ("SDM_SIGNATURES_", sdm.SignaturePolicy), ("SDM_ISOLATION_", sdm.JitIsolation)):
            self.assertEqual({prefix + f.name: int(f) for f in flags},
                             {k: v for k, v in values.items() if k.startswith(prefix)})

    def test_the_image_enums_are_the_headers_constants(self):
        for prefix, enum_type in (("SDM_IMAGE_KIND_", sdm.ImageKind), ("SDM_IMAGE_SOURCE_", sdm.ImageSource)):
            with self.subTest(enum=enum_type.__name__):
                constants = {name.removeprefix(prefix): c.value for name, c in HEADER.constants.items() if name.startswith(prefix)}
                self.assertEqual({m.name: int(m) for m in enum_type}, constants)
        # A value newer than these bindings stays a plain int.
        newer = sdm.KernelInfo._from_c(_capi.sdm_kernel_info(image_kind=9, source=42))
        self.assertEqual((type(newer.image_kind), newer.image_kind, type(newer.source), newer.source), (int, 9, int, 42))


# ---- errors and documentation ---------------------------------------------------------------------

class ErrorClassTest(unittest.TestCase):
    """Each status's SdmError subclass, and the standard exception it also is."""

    # The standard base of each status's class besides SdmError; RuntimeError for the others.
    BASES = {sdm.Status.ERROR_INVALID_ARGUMENT: ValueError, sdm.Status.ERROR_MISMATCH: ValueError,
             sdm.Status.ERROR_OUT_OF_MEMORY: MemoryError, sdm.Status.ERROR_IO: OSError,
             sdm.Status.ERROR_NOT_FOUND: LookupError, sdm.Status.ERROR_AMBIGUOUS: LookupError,
             sdm.Status.ERROR_TIMEOUT: TimeoutError}
    # Python's own names (IOError, TimeoutError) are not shadowed: sdm's classes take an Sdm prefix.
    PREFIXED = {sdm.Status.ERROR_IO: "SdmIOError", sdm.Status.ERROR_TIMEOUT: "SdmTimeoutError"}

    def test_each_status_has_its_own_class(self):
        statuses = [status for status in sdm.Status if status != sdm.Status.OK]
        for status in statuses:
            with self.subTest(status=status.name):
                cls = sdm.error_class(status)
                # Named after the status: ERROR_NOT_FOUND is NotFoundError (IOError and TimeoutError are Python's).
                name = "".join(word.capitalize() for word in status.name.split("_")[1:]) + "Error"
                self.assertEqual(cls.__name__, self.PREFIXED.get(status, name))
                self.assertIs(getattr(sdm, cls.__name__), cls)
                self.assertIn(cls.__name__, sdm.__all__)
                if status == sdm.Status.ERROR_IMAGE_REFUSED:  # the seed's ImageRefusal: not an Exception
                    self.assertEqual(cls.__bases__, (sdm.SdmBaseError,))
                    self.assertFalse(issubclass(cls, Exception))
                else:
                    self.assertEqual(cls.__bases__, (sdm.SdmError, self.BASES.get(status, RuntimeError)))
                error = cls(status, "SDM_" + status.name, "what failed", 7, "a log")
                self.assertEqual((error.status, error.code, error.message, error.native, error.log, str(error)),
                                 (status, "SDM_" + status.name, "what failed", 7, "a log", f"SDM_{status.name}: what failed"))
        self.assertEqual(len({sdm.error_class(status) for status in statuses}), len(statuses))
        self.assertFalse(issubclass(sdm.UnsupportedError, NotImplementedError))
        self.assertIs(sdm.error_class(sdm.Status.OK), sdm.SdmError)
        self.assertIs(sdm.error_class(4242), sdm.SdmError)  # a status newer than these bindings
        self.assertEqual(sdm.SdmError(4242, "SDM_ERROR_UNKNOWN", "newer").status, 4242)


class DocumentationTest(unittest.TestCase):
    """A docstring on every public name and on every method of a public class, type hints on every
    public function and method (mypy --strict checks more, but is not a dependency of the tests)."""

    @staticmethod
    def public(module):
        """(name, object) of each public name `module` defines itself, or takes from the declarations
        generated from sdm.h (_sdm_h: Status, ImageKind, ImageSource), not other modules and names
        it imports."""
        for name in dir(module):
            value = getattr(module, name)
            defined = getattr(value, "__module__", None)
            generated_enum = defined == module.__name__ + "._sdm_h" and isinstance(value, enum.EnumMeta)
            if not name.startswith("_") and not inspect.ismodule(value) and (defined == module.__name__ or generated_enum):
                yield name, value

    def test_all_lists_the_public_names(self):
        self.assertEqual(sorted(name for name, _ in self.public(sdm)), sorted(sdm.__all__))

    def test_every_public_name_has_a_docstring_and_type_hints(self):
        undocumented, unannotated = [], []

        def check(name, function, documented=True):
            if documented and not (function.__doc__ or "").strip():
                undocumented.append(name)
            signature = inspect.signature(function)
            if signature.return_annotation is inspect.Signature.empty or any(
                    p.annotation is inspect.Parameter.empty for p in signature.parameters.values()
                    if p.name not in ("self", "cls")):
                unannotated.append(name)

        for module in (sdm, sdm.__main__):
            if not (module.__doc__ or "").strip():
                undocumented.append(module.__name__)
            for name, value in self.public(module):
                if not inspect.isclass(value):
                    check(name, value)
                    continue
                if not (vars(value).get("__doc__") or "").strip():  # its own, not a base's
                    undocumented.append(name)
                for member_name, member in vars(value).items():
                    if member_name.startswith("_") and member_name != "__init__":
                        continue
                    if isinstance(member, property):
                        member = member.fget
                    elif isinstance(member, (classmethod, staticmethod)):
                        member = member.__func__
                    elif not inspect.isfunction(member):
                        continue  # an enum's members, a dataclass's defaults
                    # A constructor's docstring is its class's.
                    check(f"{name}.{member_name}", member, documented=member_name != "__init__")
        self.assertEqual(undocumented, [], "no docstring")
        self.assertEqual(unannotated, [], "missing type hints")


# ---- library-wide functions -----------------------------------------------------------------------

class VersionTest(unittest.TestCase):
    def test_versions(self):
        major, minor = sdm.abi_version()
        self.assertEqual(major, HEADER.major)
        self.assertGreaterEqual(minor, HEADER.minor)
        self.assertEqual(lib.sdm_abi_version(), (major << 16) | minor)
        self.assertRegex(sdm.version(), r"^\d+\.\d+\.\d+")

    def test_the_package_has_its_librarys_release_and_is_typed(self):
        self.assertEqual(sdm.__version__, sdm.version())
        self.assertTrue((Path(sdm.__file__).parent / "py.typed").is_file())  # PEP 561

    def test_status_and_class_names(self):
        for status in sdm.Status:
            self.assertEqual(sdm.status_string(status), "SDM_" + status.name)
        self.assertEqual(sdm.status_string(4242), "SDM_ERROR_UNKNOWN")
        self.assertEqual(sdm.device_class_name(sdm.DeviceClass.A100), "a100")
        self.assertEqual(sdm.device_class_name(77), "unsupported")
        # NULL errors read as empty; destroy functions take NULL.
        self.assertEqual(lib.sdm_error_code(None), sdm.Status.OK)
        self.assertEqual(lib.sdm_error_message(None), b"")
        lib.sdm_error_destroy(None)
        lib.sdm_runtime_destroy(None)

    def test_the_function_table_holds_the_exported_functions(self):
        minor, table = sdm.get_api()
        self.assertEqual(minor, sdm.abi_version()[1])
        self.assertEqual(table.struct_size, ctypes.sizeof(_capi.sdm_api))
        for name, _ in _capi.sdm_api._fields_[2:]:
            entry = ctypes.cast(getattr(table, name), ctypes.c_void_p).value
            self.assertEqual(entry, ctypes.cast(getattr(lib, "sdm_" + name), ctypes.c_void_p).value, name)
        self.assertEqual(table.version_string(), lib.sdm_version_string())  # callable through the table
        with self.assertRaises(sdm.UnsupportedError) as caught:
            sdm.get_api(major=2)
        self.assertEqual(caught.exception.status, sdm.Status.ERROR_UNSUPPORTED)

    def test_the_library_is_found_by_argument_then_environment_then_in_the_package(self):
        bundled = mock.patch.object(_capi, "BUNDLED_LIBRARY", __file__)  # a file that is there
        with mock.patch.dict(os.environ, {"SDM_LIBRARY": "/from/env/libsdm.so"}), bundled:
            self.assertEqual(_capi.library_path("/given/libsdm.so"), "/given/libsdm.so")
            self.assertEqual(_capi.library_path(), "/from/env/libsdm.so")
        with mock.patch.dict(os.environ, {"SDM_LIBRARY": ""}):
            with bundled:
                self.assertEqual(_capi.library_path(), __file__)
            with mock.patch.object(_capi, "BUNDLED_LIBRARY", "/nonexistent/libsdm.so.1"), \
                    mock.patch("ctypes.util.find_library", return_value=None):
                self.assertEqual(_capi.library_path(), "libsdm.so.1")
        with self.assertRaises(OSError) as caught:
            sdm.Runtime(library="/nonexistent/libsdm.so.1")
        self.assertIn("/nonexistent/libsdm.so.1", str(caught.exception))

    def test_missing_dependency_is_named(self):
        # A libsdm that is there but needs a library that is not: the message says to install the
        # dependency, not to set SDM_LIBRARY.
        cc = shutil.which("cc")
        if cc is None:
            self.skipTest("no C compiler to build a library with a missing dependency")
        with tempfile.TemporaryDirectory() as d:
            src = os.path.join(d, "empty.c")
            with open(src, "w") as f:
                f.write("int sdm_test_symbol(void) { return 0; }\n")
            dep = os.path.join(d, "libsdmtestdep.so")
            subprocess.run([cc, "-shared", "-fPIC", "-o", dep, src], check=True)
            lib = os.path.join(d, "libsdm.so.1")
            subprocess.run([cc, "-shared", "-fPIC", "-o", lib, src, "-Wl,--no-as-needed", "-L" + d, "-lsdmtestdep"], check=True)
            os.remove(dep)
            with self.assertRaises(OSError) as caught:
                _capi.load(lib)
            self.assertIn("libsdmtestdep.so", str(caught.exception))
            self.assertIn("a library it needs", str(caught.exception))
            self.assertNotIn("set SDM_LIBRARY", str(caught.exception))


# ---- runtimes on the fake driver ------------------------------------------------------------------

class FakeLaunch(ctypes.Structure):
    """sdm_fake_cuda_launch (tests/fake_cuda/sdm_fake_cuda.h)."""

    _fields_ = [("grid", ctypes.c_uint32 * 3), ("block", ctypes.c_uint32 * 3), ("smem_bytes", ctypes.c_uint32),
                ("cluster", ctypes.c_uint32 * 3), ("cooperative", ctypes.c_int32), ("priority", ctypes.c_int32),
                ("pdl", ctypes.c_int32), ("attribute_count", ctypes.c_uint32), ("attribute_ids", ctypes.c_int32 * 32),
                ("stream", ctypes.c_void_p)]

    def ids(self):
        return list(self.attribute_ids[:self.attribute_count])


_imported = {}  # cubin name: its archive, built once per run
_imported_dir = None


def imported_archive(test, cubin, matrix=False):
    """tests/data/`cubin` as `sdm import` archives it (signatures derived from the image), built
    once per run with $SDM_TOOL; with `matrix`, under a manifest that declares the SDM hardware
    matrix (so the image policy applies). Fails, naming the variable, without the tool."""
    global _imported_dir
    if (cubin, matrix) not in _imported:
        tool = os.environ.get("SDM_TOOL", "")
        if not (os.path.isfile(tool) and os.access(tool, os.X_OK)):
            test.fail(f"set SDM_TOOL to the sdm tool, build/tools/sdm (it is {tool!r}); run_tests.sh does")
        if _imported_dir is None:
            _imported_dir = Path(tempfile.mkdtemp(prefix="sdm-python-imported-"))
        path = _imported_dir / (cubin.removesuffix(".cubin") + ("-matrix" if matrix else "") + ".sdma")
        command = [tool, "import", str(ROOT / "tests" / "data" / cubin), "-o", str(path), "-q"]
        if matrix:
            manifest = _imported_dir / "matrix.toml"
            manifest.write_text('[archive]\nkernel_abi = "1.0"\nhardware_matrix = "sdm"\n')
            command += ["-m", str(manifest)]
        done = subprocess.run(command, capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            test.fail(f"sdm import {cubin} failed ({done.returncode}): {done.stderr}")
        _imported[cubin, matrix] = path
    return _imported[cubin, matrix]


def tearDownModule():
    if _imported_dir is not None:
        shutil.rmtree(_imported_dir, ignore_errors=True)


class FakeDriverTest(unittest.TestCase):
    """Each test gets its own cache directory and fake devices (the fake reads its environment at
    each cuInit, i.e. in each new runtime)."""

    devices = H200

    def setUp(self):
        self.driver = os.environ.get("SDM_CUDA_DRIVER", "")
        if not os.path.exists(self.driver):
            self.fail("set SDM_CUDA_DRIVER to the fake driver, build/tests/fake_cuda/libcuda_fake.so")
        self.tmp = Path(tempfile.mkdtemp(prefix="sdm-python-"))
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)
        environment = mock.patch.dict(os.environ, {
            "SDM_CACHE_DIR": str(self.tmp / "cache"), "SDM_FAKE_CUDA_DEVICES": self.devices,
            "SDM_FAKE_CUDA_VERSION": "13000", "SDM_FAKE_CUDA_FAIL": "", "SDM_FAKE_CUDA_MISSING": "",
            "SDM_ARCHIVE_PATH": "", "SDM_PLUGIN_PATH": "", "SDM_LOG": "off", "SDM_REQUIRE_SIGNED": "",
            "SDM_TRUSTED_KEYS": ""})
        environment.start()
        self.addCleanup(environment.stop)

    def runtime(self, **options):
        options.setdefault("flags", sdm.RuntimeFlag.NO_EMBEDDED_ARCHIVE)
        rt = sdm.Runtime(**options)
        self.addCleanup(rt.close)
        return rt

    def fake_calls(self, entry_point):
        fake = ctypes.CDLL(self.driver)  # the same handle sdm opened
        fake.sdm_fake_cuda_calls.restype = ctypes.c_int64
        fake.sdm_fake_cuda_calls.argtypes = [ctypes.c_char_p]
        return fake.sdm_fake_cuda_calls(entry_point.encode())

    def last_launch(self):
        """The fake's record of the last cuLaunchKernelEx that succeeded (sdm_fake_cuda_last_launch)."""
        fake = ctypes.CDLL(self.driver)
        fake.sdm_fake_cuda_last_launch.restype = ctypes.c_int32
        fake.sdm_fake_cuda_last_launch.argtypes = [ctypes.POINTER(FakeLaunch)]
        launch = FakeLaunch()
        self.assertEqual(fake.sdm_fake_cuda_last_launch(ctypes.byref(launch)), 0, "no launch reached the fake")
        return launch

    def record_params(self):
        """From now on in this test, the fake driver records each launch's parameter buffer."""
        environment = mock.patch.dict(os.environ, {"SDM_FAKE_CUDA_RECORD_PARAMS": "1"})
        environment.start()
        self.addCleanup(environment.stop)

    def last_params(self):
        """The kernel parameter buffer the fake driver received at the last launch (sdm_fake_cuda_last_params;
        record_params first)."""
        fake = ctypes.CDLL(self.driver)
        fake.sdm_fake_cuda_last_params.restype = ctypes.c_int32
        fake.sdm_fake_cuda_last_params.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_size_t)]
        size = ctypes.c_size_t()
        self.assertEqual(fake.sdm_fake_cuda_last_params(None, 0, ctypes.byref(size)), 0, "no launch reached the fake")
        buffer = ctypes.create_string_buffer(size.value)
        self.assertEqual(fake.sdm_fake_cuda_last_params(buffer, size.value, None), 0)
        return buffer.raw

    def arguments(self, kernel, plan, args, sizes, **options):
        """Launches; the bytes each argument reached sdm_launch with (`sizes`: each one's size)."""
        seen = []
        real = lib.sdm_launch

        def spy(handle, c_plan, stream, pointers, count, error):
            seen.extend(ctypes.string_at(pointers[i], size) for i, size in enumerate(sizes))
            return real(handle, c_plan, stream, pointers, count, error)

        with mock.patch.object(lib, "sdm_launch", side_effect=spy):
            kernel.launch(plan, args, **options)
        return seen

    @contextlib.contextmanager
    def raises(self, status, *fragments):
        """Expects the SdmError of `status`, its own subclass, whose message contains every fragment."""
        with self.assertRaises(sdm.SdmError) as caught:
            yield caught
        error = caught.exception
        self.assertEqual(error.status, status, error)
        self.assertIs(type(error), sdm.error_class(status))
        self.assertEqual(error.code, "SDM_" + status.name)
        for fragment in fragments:
            self.assertIn(fragment, error.message)


class RuntimeTest(FakeDriverTest):
    def test_create_close_and_context_manager(self):
        with sdm.Runtime() as rt:
            self.assertTrue(rt.open)
            self.assertEqual(rt.device_count(), 1)
        self.assertFalse(rt.open)
        rt.close()  # twice is fine
        with self.assertRaisesRegex(ValueError, "closed"):
            rt.device_count()
        # Garbage collection destroys an unclosed runtime.
        finalizer = sdm.Runtime()._finalizer
        gc.collect()
        self.assertFalse(finalizer.alive)

    def test_a_kernel_does_not_outlive_its_runtime(self):
        rt = self.runtime()
        rt.mount_file(ARCHIVE)
        kernel = rt.kernel(0, "scale")
        rt.close()
        with self.assertRaisesRegex(ValueError, "closed"):
            kernel.info()

    def test_bad_parameters_are_refused(self):
        with self.raises(sdm.Status.ERROR_INVALID_ARGUMENT, "log_level 9"):
            sdm.Runtime(log_level=9)
        with self.raises(sdm.Status.ERROR_INVALID_ARGUMENT, "unknown flags"):
            sdm.Runtime(flags=1 << 7)

    def test_a_struct_size_below_the_abi_is_refused(self):
        params = _capi.sdm_runtime_params(struct_size=8)
        handle = _capi.runtime_p()
        error = _capi.error_p()
        status = lib.sdm_runtime_create(ctypes.byref(params), ctypes.byref(handle), ctypes.byref(error))
        self.assertEqual(status, sdm.Status.ERROR_INVALID_ARGUMENT)
        self.assertFalse(handle, "a failed call leaves its out-parameters untouched")
        self.assertIn(b"sdm_runtime_params.struct_size is 8", lib.sdm_error_message(error))
        lib.sdm_error_destroy(error)

        rt = self.runtime()
        info = _capi.sdm_device_info(struct_size=4, ordinal=77)
        with self.raises(sdm.Status.ERROR_INVALID_ARGUMENT, "sdm_device_info.struct_size is 4"):
            sdm._call(lib, lib.sdm_device_info_get, rt._handle, 0, ctypes.byref(info))
        self.assertEqual(info.ordinal, 77)
        self.assertIn("sdm_device_info.struct_size is 4", rt.last_error().message)
        # The sizes the bindings set are accepted.
        self.assertEqual(_capi.sdm_device_info().struct_size, 312)
        sdm._call(lib, lib.sdm_device_info_get, rt._handle, 0, ctypes.byref(_capi.sdm_device_info()))

    def test_last_error(self):
        rt = self.runtime()
        self.assertIsNone(rt.last_error())
        with self.raises(sdm.Status.ERROR_NOT_FOUND):
            rt.archive_info(3)
        last = rt.last_error()
        self.assertIsInstance(last, sdm.NotFoundError)
        self.assertEqual(last.status, sdm.Status.ERROR_NOT_FOUND)
        self.assertTrue(last.message)

    def test_the_log_callback_gets_the_runtimes_messages(self):
        seen = []
        rt = self.runtime(log=lambda level, message: seen.append((level, message)), log_level=sdm.LogLevel.INFO)
        rt.mount_file(ARCHIVE)
        self.assertTrue(any(f"mounted archive {ARCHIVE}" in m for _, m in seen), seen)
        self.assertTrue(all(level == sdm.LogLevel.INFO for level, _ in seen))

    def test_failures_are_the_standard_exceptions_they_fit_and_still_sdm_errors(self):
        rt = self.runtime()
        missing = self.tmp / "none.sdma"
        with self.assertRaises(OSError) as caught:
            rt.mount_file(missing)
        self.assertIsInstance(caught.exception, sdm.SdmIOError)
        self.assertIn(str(missing), caught.exception.message)
        self.assertIsNone(caught.exception.errno)  # sdm does not pass it on
        rt.mount_file(ARCHIVE)
        failures = {LookupError: lambda: rt.kernel(0, "nonexistent"),
                    ValueError: lambda: rt.kernel(0, "scale", signature="ptr"),
                    RuntimeError: lambda: rt.kernel(5, "scale"),
                    OSError: lambda: rt.mount_file(missing)}
        for standard, fail in failures.items():
            with self.subTest(standard=standard.__name__):
                with self.assertRaises(standard):
                    fail()
                with self.assertRaises(sdm.SdmError):
                    fail()
        with self.assertRaises(ValueError):
            sdm.Runtime(log_level=9)

    def test_plugin_load_failure_names_the_file(self):
        with self.assertRaises(sdm.SdmError) as caught:
            self.runtime().load_plugin(self.tmp / "missing-plugin.so")
        self.assertIn("missing-plugin.so", caught.exception.message)


class DeviceTest(FakeDriverTest):
    devices = ";".join([H200, A100, RTX4090, V100])

    def test_device_info_comes_from_the_driver_rows(self):
        rt = self.runtime()
        self.assertEqual(rt.driver_version(), 13000)
        self.assertEqual(rt.device_count(), 4)
        h200, a100, rtx, v100 = rt.devices()
        self.assertEqual(h200, sdm.DeviceInfo(
            ordinal=0, name="NVIDIA H200", capability=(9, 0), device_class=sdm.DeviceClass.MODERN, sm_count=132,
            l2_bytes=62914560, smem_optin_bytes=232448, smem_cap_bytes=232448, smem_per_sm_bytes=233472,
            pdl_allowed=True, clusters_allowed=True, untested=False))
        self.assertEqual((a100.name, a100.device_class, a100.smem_cap_bytes, a100.pdl_allowed),
                         ("NVIDIA A100-SXM4-80GB", sdm.DeviceClass.A100, 166912, False))
        self.assertEqual((rtx.device_class, rtx.untested, rtx.clusters_allowed), (sdm.DeviceClass.RTX, True, False))
        self.assertEqual((v100.device_class, v100.supported, v100.smem_cap_bytes), (sdm.DeviceClass.UNSUPPORTED, False, 0))
        self.assertEqual([rt.device_class(i) for i in range(3)],
                         [sdm.DeviceClass.MODERN, sdm.DeviceClass.A100, sdm.DeviceClass.RTX])
        with self.raises(sdm.Status.ERROR_UNSUPPORTED_DEVICE, "device 3 (Tesla V100-SXM2-16GB)"):
            rt.device_class(3)
        with self.raises(sdm.Status.ERROR_NO_DEVICE):
            rt.device_info(4)

    def test_no_driver_is_an_error_naming_the_library_and_archives_still_work(self):
        rt = self.runtime(cuda_driver="/nonexistent/libcuda.so.1")
        with self.raises(sdm.Status.ERROR_NO_DRIVER, "/nonexistent/libcuda.so.1", "SDM_CUDA_DRIVER"):
            rt.device_count()
        rt.mount_file(ARCHIVE)
        self.assertEqual(rt.archive_count(), 1)

    def test_a_failing_driver_call_carries_its_cuda_result(self):
        os.environ["SDM_FAKE_CUDA_FAIL"] = "cuInit=999"
        with self.raises(sdm.Status.ERROR_DRIVER, "cuInit failed with CUDA_ERROR_UNKNOWN") as caught:
            self.runtime().driver_version()
        self.assertEqual(caught.exception.native, 999)


class ArchiveTest(FakeDriverTest):
    def test_mounting_the_golden_archive_lists_its_kernels(self):
        rt = self.runtime()
        self.assertEqual(rt.archives(), [])
        rt.mount_file(ARCHIVE)
        (info,) = rt.archives()
        self.assertEqual(info, sdm.ArchiveInfo(
            label=str(ARCHIVE), content_version=MANIFEST["archive"]["content_version"], size_bytes=ARCHIVE.stat().st_size,
            entry_count=11, kernel_count=len(MANIFEST["kernel"]), kernel_abi=(1, 2), format_version=(1, 0),
            embedded=False))
        # The ABI has no call that lists kernel names: the manifest the archive was packed from
        # does, and each of its kernels must be served, as declared, from this archive.
        for kernel in MANIFEST["kernel"]:
            with self.subTest(kernel=kernel["name"]):
                k = rt.kernel(0, kernel["name"], signature=kernel["signature"])
                got = k.info()
                self.assertEqual((got.name, got.module, got.signature, got.archive, got.ordinal),
                                 (kernel["name"], kernel["module"], kernel["signature"], str(ARCHIVE), 0))
                self.assertEqual((got.image_kind, got.image_sm, got.source), (1, 90, 1))  # the sm_90 cubin
                self.assertIs(got.image_kind, sdm.ImageKind.CUBIN)
                self.assertIs(got.source, sdm.ImageSource.ARCHIVE_CUBIN)
                self.assertNotEqual(k.function(), 0)

    def test_the_embedded_archive_mounts_by_default(self):
        rt = self.runtime(flags=0)
        (info,) = rt.archives()
        self.assertTrue(info.embedded)
        self.assertGreater(info.kernel_count, 0)
        self.assertEqual(rt.kernel(0, "sdm_gather_f32_i32").info().archive, info.label)

    def test_a_corrupt_archive_file_is_an_error_naming_the_file(self):
        rt = self.runtime()
        damaged = GOLDEN / "corrupt" / "header-flip.sdma"
        with self.raises(sdm.Status.ERROR_ARCHIVE_CORRUPT, str(damaged), "header checksum mismatch"):
            rt.mount_file(damaged)
        self.assertEqual(rt.archive_count(), 0)
        # Every golden corrupt file that fails at mount (some fail only when an entry is read) says
        # what its .expect file says.
        refused = 0
        for path in sorted((GOLDEN / "corrupt").glob("*.sdma")):
            with self.subTest(archive=path.name):
                try:
                    rt.mount_file(path)
                except sdm.SdmError as e:
                    refused += 1
                    self.assertIn(e.status, (sdm.Status.ERROR_ARCHIVE_CORRUPT, sdm.Status.ERROR_ARCHIVE_UNSUPPORTED))
                    self.assertIn(str(path), e.message)
                    self.assertIn(path.with_suffix(".expect").read_text(), e.message)
        self.assertGreaterEqual(refused, 10)

    def test_an_archive_of_another_kernel_abi_major_is_refused(self):
        rt = self.runtime(kernel_abi_major=2)
        with self.raises(sdm.Status.ERROR_MISMATCH, str(ARCHIVE), "kernel ABI 1.2", "built for kernel ABI 2"):
            rt.mount_file(ARCHIVE)
        self.runtime(kernel_abi_major=1).mount_file(ARCHIVE)

    def test_missing_files_and_bad_bytes(self):
        rt = self.runtime()
        with self.raises(sdm.Status.ERROR_IO, str(self.tmp / "none.sdma")):
            rt.mount_file(self.tmp / "none.sdma")
        with self.raises(sdm.Status.ERROR_ARCHIVE_CORRUPT, "archive garbage"):
            rt.mount_memory(b"not an archive".ljust(300, b"\0"), label="garbage")
        rt.mount_memory(ARCHIVE.read_bytes(), label="from memory")
        self.assertEqual(rt.archive_info(0).label, "from memory")

    def test_unmount_and_footprint(self):
        rt = self.runtime()
        rt.mount_memory(ARCHIVE.read_bytes(), label="from memory")
        before = rt.footprint()
        self.assertGreaterEqual(before["archive_memory_bytes"], ARCHIVE.stat().st_size)
        k = rt.kernel(0, "scale")
        loaded = rt.footprint()
        self.assertEqual(loaded["module_count"], 1)
        self.assertGreater(loaded["device_bytes"], 0)
        with self.raises(sdm.Status.ERROR_NOT_FOUND, "no archive mounted as elsewhere"):
            rt.unmount("elsewhere")
        self.assertEqual(rt.unmount("from memory"), 1)
        self.assertEqual(rt.archive_count(), 0)
        k.release()  # the unmounted archive's module goes with its last reference
        self.assertEqual(rt.footprint()["module_count"], 0)

    def test_reload_and_poll(self):
        rt = self.runtime()
        path = self.tmp / "kernels.sdma"

        def drop(source):  # as a deployment replaces a mapped file: beside it, then rename
            shutil.copyfile(source, self.tmp / "incoming")
            os.replace(self.tmp / "incoming", path)

        drop(ARCHIVE)
        rt.mount_file(path)
        old = rt.kernel(0, "scale")
        self.assertEqual(rt.poll_archives(), 0)
        drop(ARCHIVE)  # a new file, the same bytes: kept as it is
        self.assertEqual(rt.poll_archives(), 0)
        drop(GOLDEN / "kernels-earlier-writer.sdma")  # another version of the same kernels
        self.assertEqual(rt.poll_archives(), 1)
        self.assertEqual(rt.poll_archives(), 0)
        self.assertEqual(rt.archive_info(0).size_bytes, path.stat().st_size)
        new = rt.kernel(0, "scale")
        old.release()
        new.release()
        with self.raises(sdm.Status.ERROR_INVALID_ARGUMENT):
            new.release()  # more often than fetched
        drop(GOLDEN / "corrupt" / "header-flip.sdma")
        with self.raises(sdm.Status.ERROR_ARCHIVE_CORRUPT, str(path), "keeps serving"):
            rt.reload()
        self.assertEqual(rt.kernel(0, "scale").info().name, "scale")  # the old version still serves

    def test_preload_and_cache_stats(self):
        rt = self.runtime()
        rt.mount_file(ARCHIVE)
        rt.preload(0, ["scale"])
        rt.preload(0)
        rt.preload(0, [])
        with self.raises(sdm.Status.ERROR_NOT_FOUND, "nonexistent"):
            rt.preload(0, ["nonexistent"])
        stats = rt.cache_stats()
        self.assertIsInstance(stats, sdm.CacheStats)
        # ARCHIVE's cubins are small: decoded in memory each load, the cache untouched.
        self.assertEqual((stats.hits, stats.misses, stats.builds, stats.bytes_written), (0, 0, 0, 0))

    def test_preload_async(self):
        rt = self.runtime()
        rt.mount_file(ARCHIVE)
        seen = []
        finished = threading.Event()

        def done(status):
            seen.append(status)
            finished.set()

        with rt.preload_async(0, ["scale"], priority=2, done=done) as warmup:
            warmup.wait(60)
            done_count, total = warmup.progress()
            self.assertEqual(done_count, total)
            warmup.wait(0)  # the outcome again
            warmup.cancel()  # finished: nothing changes
        self.assertTrue(finished.is_set())  # close() waited for the callback
        self.assertEqual(seen, [sdm.Status.OK])
        with rt.preload_async(0, ["nonexistent"]) as failing:
            with self.raises(sdm.Status.ERROR_NOT_FOUND, "nonexistent"):
                failing.wait()
        with self.assertRaises(ValueError):
            rt.preload_async(0, [])
        everything = rt.preload_async(0)
        everything.wait(60)
        rt.close()  # the warm-up outlives its runtime and still answers
        everything.wait(0)
        everything.close()
        self.assertFalse(everything.open)

    def test_cache_stats_count_a_link_then_a_hit(self):
        # PTX (CUDA_FORCE_PTX_JIT=1 passes the cubins over) linked by nvJitLink goes through the
        # cache: a miss and a build in the first runtime, a hit and no build in the next.
        only_nvjitlink = sdm.JitFlag.NO_DRIVER | sdm.JitFlag.NO_PTX_COMPILER
        with mock.patch.dict(os.environ, {"CUDA_FORCE_PTX_JIT": "1"}):
            first = self.runtime(jit_flags=only_nvjitlink)
            first.mount_file(ARCHIVE)
            try:
                first.preload(0, ["scale"])
            except sdm.SdmError as e:
                if "nvJitLink was not found" in str(e):
                    self.skipTest("no nvJitLink on this machine: " + str(e).splitlines()[0])
                raise
            cold = first.cache_stats()
            self.assertEqual((cold.hits, cold.misses, cold.builds), (0, 1, 1))
            self.assertGreater(cold.bytes_written, 0)
            self.assertGreater(cold.build_milliseconds, 0)
            linked = first.kernel(0, "scale").info()
            self.assertEqual((linked.image_kind, linked.source), (sdm.ImageKind.PTX, sdm.ImageSource.NVJITLINK))
            second = self.runtime(jit_flags=only_nvjitlink)
            second.mount_file(ARCHIVE)
            second.preload(0, ["scale"])
            warm = second.cache_stats()
            self.assertEqual((warm.hits, warm.misses, warm.builds, warm.bytes_written), (1, 0, 0, 0))
            self.assertIs(second.kernel(0, "scale").info().source, sdm.ImageSource.CACHE)


def key_id(key):
    """A key's id as sdm's messages print it: the first 8 bytes of BLAKE2b-256 of "sdm key id 1"
    and the key, in hex (docs/SIGNING.md)."""
    return hashlib.blake2b(b"sdm key id 1" + key, digest_size=32).digest()[:8].hex()


class ContextsTest(FakeDriverTest):
    """The contexts a host chooses (ABI 1.2): device_contexts and RuntimeFlag.CURRENT_CONTEXT."""

    def test_device_contexts_reach_libsdm(self):
        with self.raises(sdm.Status.ERROR_INVALID_ARGUMENT, "1025", "1024"):
            self.runtime(device_contexts=[None] * 1025)
        # All primary (None), so no context is chosen and the flag does not conflict.
        rt = self.runtime(device_contexts=[None, None], flags=sdm.RuntimeFlag.CURRENT_CONTEXT)
        rt.mount_file(ARCHIVE)
        self.assertEqual(int(sdm.RuntimeFlag.CURRENT_CONTEXT), 2)


class SignatureTest(FakeDriverTest):
    """The signature policy and trusted keys (ABI 1.2) on the golden archive, which is not signed."""

    def checking(self, policy, **options):
        """A runtime of `policy`; skips where libsdm was built without libsodium, which refuses
        WARN and REQUIRE."""
        try:
            return self.runtime(signature_policy=policy, **options)
        except sdm.SdmError as e:
            if e.status == sdm.Status.ERROR_UNSUPPORTED and "libsodium" in e.message:
                self.skipTest(e.message)
            raise

    def test_require_refuses_an_unsigned_archive(self):
        rt = self.checking(sdm.SignaturePolicy.REQUIRE, trusted_keys=[])
        with self.raises(sdm.Status.ERROR_UNTRUSTED, str(ARCHIVE), "is not signed", "it trusts no key"):
            rt.mount_file(ARCHIVE)
        with self.raises(sdm.Status.ERROR_UNTRUSTED, "archive golden copy is not signed"):
            rt.mount_memory(ARCHIVE.read_bytes(), label="golden copy")
        self.assertEqual(rt.archives(), [])
        # Without trusted_keys, $SDM_TRUSTED_KEYS's keys: none here either.
        with self.raises(sdm.Status.ERROR_UNTRUSTED, "is not signed", "it trusts no key"):
            self.checking(sdm.SignaturePolicy.REQUIRE).mount_file(ARCHIVE)

    def test_the_keys_given_are_the_ones_trusted(self):
        # 32 bytes, and .pub files as sdm keygen writes them (one line), given as a Path and a str.
        given = bytes(range(32))
        in_file, upper_case = b"\x01" * 32, b"\xab" * 32
        (self.tmp / "signer.pub").write_text(f"sdm-ed25519-public {in_file.hex()}\n")
        (self.tmp / "other.pub").write_text(f"sdm-ed25519-public {upper_case.hex().upper()}")
        rt = self.checking(sdm.SignaturePolicy.REQUIRE,
                           trusted_keys=[given, self.tmp / "signer.pub", str(self.tmp / "other.pub")])
        ids = ", ".join(key_id(key) for key in (given, in_file, upper_case))
        with self.raises(sdm.Status.ERROR_UNTRUSTED, f"is not signed (it trusts {ids})"):
            rt.mount_file(ARCHIVE)

    def test_warn_mounts_an_unsigned_archive_and_says_why_and_off_does_not_look(self):
        seen = []
        rt = self.checking(sdm.SignaturePolicy.WARN, trusted_keys=[], log_level=sdm.LogLevel.WARN,
                           log=lambda level, message: seen.append((level, message)))
        rt.mount_file(ARCHIVE)
        self.assertEqual(rt.archive_count(), 1)
        self.assertTrue(any(level == sdm.LogLevel.WARN and "is not signed" in message and "mounted anyway" in message
                            for level, message in seen), seen)
        seen.clear()
        rt = self.runtime(signature_policy=sdm.SignaturePolicy.OFF, log_level=sdm.LogLevel.WARN,
                          log=lambda level, message: seen.append((level, message)))
        rt.mount_file(ARCHIVE)
        self.assertEqual(seen, [])

    def test_bad_policies_and_keys_are_refused(self):
        with self.raises(sdm.Status.ERROR_INVALID_ARGUMENT, "signature_policy 7"):
            self.runtime(signature_policy=7)
        with self.raises(sdm.Status.ERROR_INVALID_ARGUMENT, "trusted_key_count is 257", "256"):
            self.runtime(trusted_keys=[bytes(32)] * 257)
        # A key that is not one is refused before libsdm is called.
        (self.tmp / "short.pub").write_text("sdm-ed25519-public 0123\n")
        (self.tmp / "signer.key").write_text(f"sdm-ed25519-secret {'ab' * 64}\n")
        with mock.patch.object(lib, "sdm_runtime_create", side_effect=AssertionError("sdm_runtime_create was called")):
            with self.assertRaisesRegex(ValueError, r"trusted_keys\[1\] is 31 bytes; an Ed25519 public key is 32"):
                sdm.Runtime(trusted_keys=[bytes(32), bytes(31)])
            with self.assertRaisesRegex(ValueError, r"trusted_keys\[0\]: .*short\.pub is not an sdm public key"):
                sdm.Runtime(trusted_keys=[self.tmp / "short.pub"])
            with self.assertRaisesRegex(ValueError, r"signer\.key is a secret key; trust its public half"):
                sdm.Runtime(trusted_keys=[self.tmp / "signer.key"])
            with self.assertRaisesRegex(TypeError, r"trusted_keys\[0\] has type int"):
                sdm.Runtime(trusted_keys=[7])
            with self.assertRaises(FileNotFoundError):
                sdm.Runtime(trusted_keys=[self.tmp / "missing.pub"])
            with self.assertRaisesRegex(TypeError, "put the one key or path in a list"):
                sdm.Runtime(trusted_keys=bytes(32))


class KernelTest(FakeDriverTest):
    def setUp(self):
        super().setUp()
        self.rt = self.runtime()
        self.rt.mount_file(ARCHIVE)
        self.scale = self.rt.kernel(0, "scale")

    def test_fetch_errors(self):
        with self.raises(sdm.Status.ERROR_NOT_FOUND, "nonexistent"):
            self.rt.kernel(0, "nonexistent")
        with self.raises(sdm.Status.ERROR_MISMATCH, "ptr,f32,i32", "ptr,i32"):
            self.rt.kernel(0, "scale", signature="ptr, i32")
        with self.raises(sdm.Status.ERROR_NO_DEVICE):
            self.rt.kernel(5, "scale")

    def test_plan_select(self):
        plan = self.scale.plan(1 << 20)
        self.assertEqual(plan, sdm.Plan(grid=1056, block=256, smem_bytes=0, cluster=(1, 1, 1), flags=sdm.PlanFlag.PDL,
                                        blocks_per_sm=8, occupancy=8, rule=0))
        self.assertTrue(plan.pdl)
        big = self.scale.plan([1 << 25])
        self.assertEqual((big.rule, big.cluster, big.block, big.grid, big.pdl), (1, (2, 1, 1), 1024, 32768, False))
        with self.raises(sdm.Status.ERROR_NOT_FOUND, "kernel axpy has no launch plans"):
            self.rt.kernel(0, "axpy").plan(1)
        with self.raises(sdm.Status.ERROR_INVALID_ARGUMENT, "takes 1 problem parameter"):
            self.scale.plan([1, 2])
        small = _capi.sdm_plan(struct_size=8)
        with self.raises(sdm.Status.ERROR_INVALID_ARGUMENT, "sdm_plan.struct_size is 8"):
            sdm._call(lib, lib.sdm_plan_select, self.scale._handle, (ctypes.c_int64 * 1)(4096), 1, ctypes.byref(small))

    def test_launch(self):
        plan = self.scale.plan(1 << 20)
        self.scale.launch(plan, [0x7F0000000000, 2.0, 1 << 20])
        self.assertEqual(self.fake_calls("cuLaunchKernelEx"), 1)
        with self.raises(sdm.Status.ERROR_INVALID_ARGUMENT, "kernel scale takes 3 argument(s) (ptr,f32,i32), not 2"):
            self.scale.launch(plan, [0x7F0000000000, 2.0])
        with self.raises(sdm.Status.ERROR_INVALID_ARGUMENT, "not 4"):
            self.scale.launch(plan, [0x7F0000000000, 2.0, 1, 1])
        with self.assertRaises(OverflowError):
            self.scale.launch(plan, [0x7F0000000000, 2.0, 1 << 40])
        self.assertEqual(self.fake_calls("cuLaunchKernelEx"), 1)
        # A shape out of range is libsdm's to refuse (ABI 1.3), naming the dimension and its limit,
        # before the driver sees it.
        with self.raises(sdm.Status.ERROR_INVALID_ARGUMENT, "block x of 2048 (1..1024)"):
            self.scale.launch(dataclasses.replace(plan, block=2048), [0, 2.0, 16])
        # Clusters, and a ctypes value as it is.
        self.scale.launch(self.scale.plan(1 << 25), [None, ctypes.c_float(0.5), 1 << 25])
        self.assertEqual(self.fake_calls("cuLaunchKernelEx"), 2)

    def test_a_launch_the_driver_refuses_carries_its_cuda_result(self):
        os.environ["SDM_FAKE_CUDA_FAIL"] = "cuLaunchKernelEx=CUDA_ERROR_INVALID_VALUE"
        rt = self.runtime()  # a new runtime's cuInit adopts the failure
        rt.mount_file(ARCHIVE)
        scale = rt.kernel(0, "scale")
        with self.raises(sdm.Status.ERROR_DRIVER, "launching kernel scale", "CUDA_ERROR_INVALID_VALUE") as caught:
            scale.launch(scale.plan(1 << 20), [0, 2.0, 16])
        self.assertEqual(caught.exception.native, 1)  # CUDA_ERROR_INVALID_VALUE


# ---- ABI 1.3: the user's kernels, as `sdm import` archives them --------------------------------------

class CudaArray:
    """What CuPy and Numba arrays offer (version 3 of the CUDA Array Interface)."""

    def __init__(self, pointer):
        self.__cuda_array_interface__ = {"shape": (4,), "typestr": "<f4", "data": (pointer, False), "version": 3,
                                         "strides": None, "stream": 1}


class TorchLike:
    """What a PyTorch tensor offers besides the interfaces: data_ptr()."""

    def __init__(self, pointer):
        self.pointer = pointer

    def data_ptr(self):
        return self.pointer


class _NumpyComplex:
    """What sdm reads of a NumPy complex scalar (NumPy is not a dependency of the tests): its dtype
    (kind "c", itemsize, native byte order), ndim 0, tobytes(), and the __float__ that gives the real
    part alone (with a ComplexWarning), which is how 2+3j once reached a kernel as 2.0."""

    itemsize = 0
    ndim = 0

    def __init__(self, value):
        self.value = complex(value)
        self.dtype = type("dtype", (), {"kind": "c", "itemsize": self.itemsize, "isnative": True})()

    def tobytes(self):
        return struct.pack("<ff" if self.itemsize == 8 else "<dd", self.value.real, self.value.imag)

    def __complex__(self):
        return self.value

    def __float__(self):
        return self.value.real

    def __repr__(self):
        return repr(self.value)


class complex64(_NumpyComplex):  # noqa: N801  # NumPy's names
    itemsize = 8


class complex128(_NumpyComplex):  # noqa: N801
    itemsize = 16


complex64.__module__ = complex128.__module__ = "numpy"


class DLTensor(ctypes.Structure):
    """dlpack.h's DLTensor, as an exporter lays it out."""

    _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32),
                ("ndim", ctypes.c_int32), ("dtype", ctypes.c_uint8 * 4), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p), ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor)]


CAPSULE_DESTRUCTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
capsule_new = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p, CAPSULE_DESTRUCTOR)(
    ("PyCapsule_New", ctypes.pythonapi))


class DLPackArray:
    """A DLPack exporter as CuPy and PyTorch are one: __dlpack_device__, and __dlpack__ giving a
    "dltensor" capsule (or "dltensor_versioned") over its DLTensor. It records the streams it is
    asked to export on and how many of its capsules were dropped unconsumed (their destructor, where
    a real exporter calls the deleter)."""

    NAMES = {False: b"dltensor", True: b"dltensor_versioned"}  # capsules keep a pointer to their name

    def __init__(self, pointer, byte_offset=0, device_type=2, versioned=False, takes_stream=True):
        self.managed = DLManagedTensorVersioned(major=1) if versioned else DLManagedTensor()
        tensor = self.managed.dl_tensor
        tensor.data, tensor.device_type, tensor.byte_offset, tensor.ndim = pointer, device_type, byte_offset, 1
        self.device_type, self.versioned, self.takes_stream = device_type, versioned, takes_stream
        self.streams, self.released = [], 0
        self.destructor = CAPSULE_DESTRUCTOR(self.release)

    def release(self, _capsule):
        self.released += 1

    def __dlpack_device__(self):
        return (self.device_type, 0)

    def __dlpack__(self, **options):
        if options and not self.takes_stream:
            raise TypeError("__dlpack__() got an unexpected keyword argument 'stream'")
        if "stream" in options:
            self.streams.append(options["stream"])
        return capsule_new(ctypes.addressof(self.managed), self.NAMES[self.versioned], self.destructor)


class CudaStream:
    """A stream of cuda.core's protocol: __cuda_stream__() gives (version, handle)."""

    def __init__(self, handle, version=0):
        self.handle, self.version = handle, version

    def __cuda_stream__(self):
        return (self.version, self.handle)


class UserKernelsTest(FakeDriverTest):
    """tests/data/launch.cu's kernels (tests/runtime/kernel/test_launch_config.cpp has the C ABI's cases): 3-D and
    cooperative launches, priorities, attributes, plans for elements, globals, C++ names and the
    kernel listing; the arguments of derived signatures (b32, b64, opaque) and the objects of other
    CUDA libraries (arrays, streams)."""

    FILL_F = "_ZN8sdm_test4fillIfLi256EEEvPT_S1_"
    FILL_I = "_ZN8sdm_test4fillIiLi256EEEvPT_S1_"
    REDUCE = "_ZN8sdm_test6reduceIiEEvPKT_PS1_i"

    def setUp(self):
        super().setUp()
        self.archive = imported_archive(self, "launch.sm_90.cubin")
        self.rt = self.runtime()
        self.rt.mount_file(self.archive)
        self.matmul = self.rt.kernel(0, "matmul_tiled")

    # -- shapes --
    def test_3d_grids_and_blocks_reach_the_driver_as_given(self):
        self.matmul.launch(((7, 7), (16, 16)), [0, 0, 0, 100])
        launch = self.last_launch()
        self.assertEqual((list(launch.grid), list(launch.block), launch.ids()), ([7, 7, 1], [16, 16, 1], []))
        plan = sdm.Plan((4, 6, 3), (8, 4, 2), cluster=(1, 2), priority=-3)
        self.matmul.launch(plan, [0, 0, 0, 100])
        launch = self.last_launch()
        self.assertEqual((list(launch.grid), list(launch.block), list(launch.cluster)), ([4, 6, 3], [8, 4, 2], [1, 2, 1]))
        self.assertEqual((launch.priority, launch.cooperative, launch.ids()), (-3, 0, [4, 8]))  # cluster, priority
        # Missing and zero y and z are 1; ints are one dimension.
        self.matmul.launch(((3, 0, 0), (64, 0)), [0, 0, 0, 1])
        launch = self.last_launch()
        self.assertEqual((list(launch.grid), list(launch.block)), ([3, 1, 1], [64, 1, 1]))
        self.matmul.launch((5, 32), [0, 0, 0, 1])
        self.assertEqual((list(self.last_launch().grid), list(self.last_launch().block)), ([5, 1, 1], [32, 1, 1]))

    def test_a_plan_keeps_one_dimension_as_an_int_and_more_as_x_y_z(self):
        self.assertEqual(sdm.Plan(grid=(7,), block=(256, 0, 0)), sdm.Plan(7, 256))
        plan = sdm.Plan((7, 7), (16, 16), cluster=0)
        self.assertEqual((plan.grid, plan.block, plan.cluster), ((7, 7, 1), (16, 16, 1), (1, 1, 1)))
        self.assertEqual((plan.grid_dims, sdm.Plan(9, 32).grid_dims, sdm.Plan(9, 32).block_dims), ((7, 7, 1), (9, 1, 1), (32, 1, 1)))
        self.assertEqual(dataclasses.replace(plan, grid=(7, 1, 1)).grid, 7)
        self.assertEqual(hash(sdm.Plan((2, 2), 1)), hash(sdm.Plan((2, 2, 1), (1,))))
        for bad, error in ((((1, 2, 3, 4), 1), ValueError), (((), 1), ValueError), ((-1, 1), ValueError),
                           ((1, 2**32), ValueError), (("7", 1), TypeError), (((1, 2.5), 1), TypeError)):
            with self.subTest(shape=bad), self.assertRaises(error):
                sdm.Plan(*bad)
        for bad in (dict(smem_bytes=-1), dict(priority=2**31), dict(cluster=(1, 2, 3, 4))):
            with self.subTest(**bad), self.assertRaises(ValueError):
                sdm.Plan(1, 1, **bad)
        launched = self.fake_calls("cuLaunchKernelEx")
        with self.assertRaisesRegex(TypeError, r"a Plan, or \(grid, block\)"):
            self.matmul.launch((1, 2, 3), [0, 0, 0, 1])  # (grid, block, smem) would read a 3-D grid wrong
        with self.assertRaisesRegex(TypeError, r"a Plan, or \(grid, block\)"):
            self.matmul.launch([1, 32], [0, 0, 0, 1])
        self.assertEqual(self.fake_calls("cuLaunchKernelEx"), launched)

    def test_dimensions_out_of_range_are_libsdms_to_refuse_naming_the_limit(self):
        cases = [(((1, 65536), 16), "grid y of 65536 (1..65535)"), ((0, 16), "grid x of 0 (1..2147483647)"),
                 ((1, (1, 1, 65)), "block z of 65 (1..64)"),
                 ((1, (32, 32, 2)), "block 32x32x2 of 2048 threads (at most 1024)")]
        for shape, why in cases:
            with self.subTest(why=why), self.raises(sdm.Status.ERROR_INVALID_ARGUMENT, "kernel matmul_tiled cannot launch with", why):
                self.matmul.launch(shape, [0, 0, 0, 1])
        with self.raises(sdm.Status.ERROR_INVALID_ARGUMENT, "launch priority 3 is outside the context's range -5 (greatest) to 0 (least"):
            self.matmul.launch(sdm.Plan(1, 16, priority=3), [0, 0, 0, 1])

    def test_cooperative_launches_and_their_refusal(self):
        grid_sum = self.rt.kernel(0, "grid_sum")
        plan = sdm.Plan(132 * 8, 256, cooperative=True)
        self.assertTrue(plan.cooperative)
        self.assertEqual(plan.flags, sdm.PlanFlag.COOPERATIVE)
        grid_sum.launch(plan, [0, 0])
        launch = self.last_launch()
        self.assertEqual((launch.cooperative, launch.grid[0], launch.ids()), (1, 1056, [2]))  # CU_LAUNCH_ATTRIBUTE_COOPERATIVE
        self.assertFalse(dataclasses.replace(plan, cooperative=False).cooperative)
        self.assertEqual(sdm.Plan(1, 1, flags=sdm.PlanFlag.PDL, cooperative=True).flags, sdm.PlanFlag.PDL | sdm.PlanFlag.COOPERATIVE)
        launched = self.fake_calls("cuLaunchKernelEx")
        with self.raises(sdm.Status.ERROR_INVALID_ARGUMENT, "kernel grid_sum cannot launch cooperatively with grid 1057, block 256",
                         "its 1057 blocks cannot all be resident on device 0 (NVIDIA H200)", "launch at most 1056 blocks"):
            grid_sum.launch(dataclasses.replace(plan, grid=1057), [0, 0])
        with self.raises(sdm.Status.ERROR_INVALID_ARGUMENT, "its 1089 blocks cannot all be resident"):
            grid_sum.launch(sdm.Plan((33, 33), 256, cooperative=True), [0, 0])
        self.assertEqual(self.fake_calls("cuLaunchKernelEx"), launched)
        grid_sum.launch(sdm.Plan(1057, 256), [0, 0])  # not cooperative: the host's business

    def test_a_cooperative_launch_on_a_device_without_them_names_the_attribute(self):
        os.environ["SDM_FAKE_CUDA_DEVICES"] = "NVIDIA H200 (no cooperative launch),9.0,232448,132,62914560"
        rt = self.runtime()
        rt.mount_file(self.archive)
        grid_sum = rt.kernel(0, "grid_sum")
        with self.raises(sdm.Status.ERROR_INVALID_ARGUMENT, "kernel grid_sum cannot launch cooperatively on device 0",
                         "does not support cooperative launches (CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH is 0)"):
            grid_sum.launch(sdm.Plan(4, 32, cooperative=True), [0, 0])
        grid_sum.launch((4, 32), [0, 0])

    def test_launch_attributes_follow_sdms_own(self):
        scale = self.rt.kernel(0, "scale_by_table")
        plan = sdm.Plan(2, 32, priority=-1)
        # CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN (10) remote, PREFERRED_SHARED_MEMORY_CARVEOUT (14) 50 %.
        scale.launch(plan, [0, 0, 1], attributes={10: 1, 14: 50})
        self.assertEqual(self.last_launch().ids(), [8, 10, 14])  # priority first
        scale.launch(plan, [0, 0, 1], attributes=[(14, 50)])
        self.assertEqual(self.last_launch().ids(), [8, 14])
        scale.launch(plan, [0, 0, 1], attributes=[])
        self.assertEqual(self.last_launch().ids(), [8])
        with self.raises(sdm.Status.ERROR_INVALID_ARGUMENT, "is one sdm_plan sets"):
            scale.launch(plan, [0, 0, 1], attributes={2: 1})  # COOPERATIVE: Plan(cooperative=True)
        with self.raises(sdm.Status.ERROR_INVALID_ARGUMENT, "at most 16"):
            scale.launch(plan, [0, 0, 1], attributes=[(10, 1)] * 17)
        with self.assertRaisesRegex(ValueError, "holds 64"):
            scale.launch(plan, [0, 0, 1], attributes={1: bytes(65)})
        with self.assertRaises(OverflowError):
            scale.launch(plan, [0, 0, 1], attributes={10: 2**32})

    def test_plan_for_elements(self):
        scale = self.rt.kernel(0, "scale_by_table")
        plan = scale.plan_for_elements(1_000_000)
        self.assertEqual((plan.grid, plan.block, plan.rule, plan.occupancy, plan.cluster, plan.flags),
                         (977, 1024, -1, 2, (1, 1, 1), sdm.PlanFlag(0)))  # the fake suggests 1,024 threads
        self.assertEqual(self.fake_calls("cuOccupancyMaxPotentialBlockSize"), 1)
        scale.launch(plan, [0, 0, 1_000_000])
        with self.raises(sdm.Status.ERROR_INVALID_ARGUMENT, "a plan for 0 elements"):
            scale.plan_for_elements(0)
        with self.raises(sdm.Status.ERROR_INVALID_ARGUMENT, "blocks, over the grid's 2147483647 in x"):
            scale.plan_for_elements(1 << 62)
        with self.raises(sdm.Status.ERROR_INVALID_ARGUMENT, "300000 B of dynamic shared memory per block, over the 232448 B"):
            scale.plan_for_elements(10, smem_bytes=300000)
        with self.assertRaises(ValueError):
            scale.plan_for_elements(-1)

    # -- attributes, settings and occupancy (ABI 1.4) --
    def test_attributes_are_the_drivers(self):
        scale = self.rt.kernel(0, "scale_by_table")
        a = scale.attributes()
        # The fake's fixed answers (tests/fake_cuda/fake_cuda.cpp), each distinct.
        self.assertEqual((a.max_threads_per_block, a.shared_size_bytes, a.const_size_bytes, a.local_size_bytes, a.num_regs),
                         (1024, 0, 136, 24, 32))
        self.assertEqual((a.ptx_version, a.binary_version, a.cache_mode_ca), (90, 90, 1))
        self.assertEqual((a.max_dynamic_shared_size_bytes, a.preferred_shared_memory_carveout), (49152, -1))
        self.assertTrue(a.has_cluster)
        self.assertEqual((a.cluster_size_must_be_set, a.required_cluster_width, a.required_cluster_height,
                          a.required_cluster_depth, a.non_portable_cluster_size_allowed,
                          a.cluster_scheduling_policy_preference), (0, 2, 3, 4, 5, 6))
        self.assertEqual({m.name: int(m) for m in sdm.KernelSetting},
                         {"MAX_DYNAMIC_SHARED_BYTES": 1, "PREFERRED_CARVEOUT": 2})

    def test_settings_are_set_refused_past_the_limit_and_read_back(self):
        scale = self.rt.kernel(0, "scale_by_table")
        sets = self.fake_calls("cuFuncSetAttribute")
        scale.set(sdm.KernelSetting.MAX_DYNAMIC_SHARED_BYTES, 100000)
        scale.set(sdm.KernelSetting.PREFERRED_CARVEOUT, 50)
        self.assertEqual(self.fake_calls("cuFuncSetAttribute"), sets + 2)
        a = scale.attributes()
        self.assertEqual((a.max_dynamic_shared_size_bytes, a.preferred_shared_memory_carveout), (100000, 50))
        with self.raises(sdm.Status.ERROR_INVALID_ARGUMENT, "232449 B is outside 0 .. 232448 B",
                         "less the kernel's 0 B of static shared memory"):
            scale.set(sdm.KernelSetting.MAX_DYNAMIC_SHARED_BYTES, 232449)
        with self.raises(sdm.Status.ERROR_INVALID_ARGUMENT, "carveout of 101"):
            scale.set(sdm.KernelSetting.PREFERRED_CARVEOUT, 101)
        with self.assertRaises(ValueError):
            scale.set(sdm.KernelSetting.PREFERRED_CARVEOUT, 2**31)
        self.assertEqual(self.fake_calls("cuFuncSetAttribute"), sets + 2)

    def test_settings_survive_a_reload(self):
        path = self.tmp / "launch.sdma"
        shutil.copyfile(self.archive, path)
        rt = self.runtime()
        rt.mount_file(path)
        old = rt.kernel(0, "scale_by_table")
        old.set(sdm.KernelSetting.MAX_DYNAMIC_SHARED_BYTES, 65536)
        old.set(sdm.KernelSetting.PREFERRED_CARVEOUT, 25)
        # Another version of the archive: the same cubin, another archive version.
        done = subprocess.run([os.environ["SDM_TOOL"], "import", str(ROOT / "tests" / "data" / "launch.sm_90.cubin"), "-o",
                               str(self.tmp / "incoming"), "-q", "--archive-version", "2"], capture_output=True, text=True)
        self.assertEqual(done.returncode, 0, done.stderr)
        os.replace(self.tmp / "incoming", path)
        self.assertEqual(rt.reload(), 1)
        sets = self.fake_calls("cuFuncSetAttribute")
        fresh = rt.kernel(0, "scale_by_table")
        self.assertEqual(self.fake_calls("cuFuncSetAttribute"), sets + 2)
        a = fresh.attributes()
        self.assertEqual((a.max_dynamic_shared_size_bytes, a.preferred_shared_memory_carveout), (65536, 25))
        self.assertEqual(rt.kernel(0, "grid_sum").attributes().max_dynamic_shared_size_bytes, 49152)
        old.release()
        self.assertEqual(self.fake_calls("cuCtxSynchronize"), 0)  # attributes never handed the CUfunction out

    def test_occupancy_is_the_drivers(self):
        scale = self.rt.kernel(0, "scale_by_table")
        self.assertEqual(scale.max_active_blocks(256), 8)
        self.assertEqual(scale.max_active_blocks(1024, smem_bytes=100000), 2)
        self.assertEqual(scale.max_potential_block_size(), (1024, 264))
        self.assertEqual(scale.max_potential_block_size(block_threads_limit=256)[0], 256)
        with self.raises(sdm.Status.ERROR_INVALID_ARGUMENT, "a block of 0 threads"):
            scale.max_active_blocks(0)
        with self.raises(sdm.Status.ERROR_INVALID_ARGUMENT, "a block size limit of 2048 threads"):
            scale.max_potential_block_size(block_threads_limit=2048)

    # -- arguments --
    def test_untyped_parameters_take_ints_floats_and_bytes(self):
        scale = self.rt.kernel(0, "scale_by_table")  # b64,b64,b32
        self.assertEqual(scale.info().signature, "b64,b64,b32")
        sizes = [8, 8, 4]
        seen = self.arguments(scale, (1, 32), [0x7F0000000000, -1, 7], sizes)
        self.assertEqual(seen, [struct.pack("<Q", 0x7F0000000000), b"\xff" * 8, struct.pack("<i", 7)])
        seen = self.arguments(scale, (1, 32), [None, 1.5, 2.5], sizes)  # a float: f64 in a b64, f32 in a b32
        self.assertEqual(seen, [bytes(8), struct.pack("<d", 1.5), struct.pack("<f", 2.5)])
        seen = self.arguments(scale, (1, 32), [2**64 - 1, -2**63, -1], sizes)
        self.assertEqual(seen, [b"\xff" * 8, struct.pack("<q", -2**63), b"\xff" * 4])
        seen = self.arguments(scale, (1, 32), [ctypes.c_uint64(5), bytes(range(8)), 2**32 - 1], sizes)
        self.assertEqual(seen, [struct.pack("<Q", 5), bytes(range(8)), b"\xff" * 4])
        launched = self.fake_calls("cuLaunchKernelEx")
        for bad, error, fragment in (([0, 0, 2**32], OverflowError, "does not fit a b32"),
                                     ([0, 0, -2**31 - 1], OverflowError, "does not fit a b32"),
                                     ([2**64, 0, 0], OverflowError, "does not fit a b64"),
                                     ([0, 0, b"abc"], ValueError, "argument 2 (b32) is 4 byte(s)"),
                                     ([0, 0, "7"], TypeError, "not a str"),
                                     (["0", 0, 0], TypeError, "not a str")):
            with self.subTest(args=bad), self.assertRaisesRegex(error, re.escape(fragment)):
                scale.launch((1, 32), bad)
        self.assertEqual(self.fake_calls("cuLaunchKernelEx"), launched)
        # The C++ templates too, fetched by name expression: fill<float, 256>(float*, float).
        fill = self.rt.kernel(0, "sdm_test::fill<float, 256>", signature="ptr,f32")
        self.assertEqual(self.arguments(fill, (1, 256), [0x1000, 1.25], [8, 4]), [struct.pack("<Q", 0x1000), struct.pack("<f", 1.25)])
        fill_int = self.rt.kernel(0, "fill<int,256>")
        self.assertEqual(self.arguments(fill_int, (1, 256), [0x1000, -5], [8, 4]), [struct.pack("<Q", 0x1000), struct.pack("<i", -5)])

    def test_structs_by_value_and_the_narrow_untyped_parameters(self):
        rt = self.runtime()
        rt.mount_file(imported_archive(self, "params.sm_90.cubin"))
        mixed = rt.kernel(0, "mixed")  # (char, double, int, long long, Odd (3 bytes), Wide (16, aligned 8), void*)
        self.assertEqual(mixed.info().signature, "b8,b64,b32,b64,opaque:3:1,opaque:16:8,b64")

        class Wide(ctypes.Structure):
            _fields_ = [("d", ctypes.c_double), ("c", ctypes.c_char)]

        args = [-3, 2.5, 7, 1 << 40, b"xyz", Wide(1.5, b"w"), CudaArray(0x7F0000000000)]
        seen = self.arguments(mixed, (1, 1), args, [1, 8, 4, 8, 3, 16, 8])
        self.assertEqual(seen, [b"\xfd", struct.pack("<d", 2.5), struct.pack("<i", 7), struct.pack("<q", 1 << 40), b"xyz",
                                bytes(Wide(1.5, b"w")), struct.pack("<Q", 0x7F0000000000)])
        args[4], args[5] = bytearray(b"abc"), memoryview(bytes(16))
        self.assertEqual(self.arguments(mixed, (1, 1), args, [1, 8, 4, 8, 3, 16, 8])[4:6], [b"abc", bytes(16)])
        with self.assertRaisesRegex(ValueError, r"argument 4 \(opaque:3:1\) is 3 byte\(s\); the value given is 4"):
            mixed.launch((1, 1), [0, 0, 0, 0, b"abcd", bytes(16), 0])
        with self.assertRaisesRegex(TypeError, r"argument 5 \(opaque:16:8\): a int is not bytes-like"):
            mixed.launch((1, 1), [0, 0, 0, 0, b"abc", 5, 0])
        with self.assertRaisesRegex(OverflowError, "does not fit a b8"):
            mixed.launch((1, 1), [256, 0, 0, 0, b"abc", bytes(16), 0])
        # gap(int, float4, float*): a 16-byte vector by value.
        gap = rt.kernel(0, "gap")
        vector = (ctypes.c_float * 4)(1, 2, 3, 4)
        self.assertEqual(self.arguments(gap, (1, 1), [3, vector, None], [4, 16, 8])[1], bytes(vector))
        # by_struct(Pair, float*): an 8-byte struct the cubin records as b64 takes its bytes too.
        class Pair(ctypes.Structure):
            _fields_ = [("x", ctypes.c_float), ("y", ctypes.c_int32)]

        by_struct = rt.kernel(0, "by_struct")
        self.assertEqual(self.arguments(by_struct, (1, 1), [Pair(0.5, 3), 0], [8, 8])[0], bytes(Pair(0.5, 3)))
        # halves(__half, __nv_bfloat16, float*): a float would be ambiguous; bits and bytes are not.
        halves = rt.kernel(0, "halves")
        with self.assertRaisesRegex(TypeError, "ambiguous for a b16 parameter"):
            halves.launch((1, 1), [1.5, 0, 0])
        self.assertEqual(self.arguments(halves, (1, 1), [0x3E00, struct.pack("<e", 2.0), 0], [2, 2, 8])[:2],
                         [struct.pack("<H", 0x3E00), struct.pack("<e", 2.0)])

    def test_complex_scalars_reach_the_kernel_byte_exact(self):
        self.record_params()
        rt = self.runtime()
        rt.mount_file(imported_archive(self, "params.sm_90.cubin"))
        # by_struct(Pair, float*): b64,b64, the slot of a complex<float>: real, then imaginary, two f32.
        by_struct = rt.kernel(0, "by_struct")
        for value in (complex64(2 + 3j), 2 + 3j):
            with self.subTest(value=type(value).__name__):
                by_struct.launch((1, 1), [value, 0])
                self.assertEqual(self.last_params(), struct.pack("<ff", 2.0, 3.0) + bytes(8))
        # mixed(char, double, int, long long, Odd, Wide, void*): opaque:16:8 at offset 40 takes a complex<double>.
        mixed = rt.kernel(0, "mixed")
        for value in (complex128(0.1 + 1e300j), 0.1 + 1e300j):
            with self.subTest(value=type(value).__name__):
                mixed.launch((1, 1), [1, 2.5, 3, 4, b"xyz", value, 0])
                self.assertEqual(self.last_params()[40:56], struct.pack("<dd", 0.1, 1e300))
        self.assertEqual(self.last_params()[:40], b"\x01" + bytes(7) + struct.pack("<d", 2.5) + struct.pack("<i", 3) + bytes(4) +
                         struct.pack("<q", 4) + b"xyz" + bytes(5))

    def test_lossy_values_are_refused_naming_the_argument_and_both_types(self):
        rt = self.runtime()
        rt.mount_file(imported_archive(self, "params.sm_90.cubin"))
        mixed = rt.kernel(0, "mixed")  # b8,b64,b32,b64,opaque:3:1,opaque:16:8,b64
        typed = rt.kernel(0, "mixed", signature="b8,f64,i32,i64,opaque:3:1,opaque:16:8,ptr")
        good = [1, 2.5, 3, 4, b"xyz", bytes(16), 0]
        launched = self.fake_calls("cuLaunchKernelEx")
        for kernel, index, value, error, message in (
                (typed, 1, complex64(2 + 3j), TypeError, "argument 1 (f64): a numpy.complex64 (2+3j) does not convert to a f64 without losing its imaginary part"),
                (typed, 1, 2 + 3j, TypeError, "argument 1 (f64): a complex (2+3j) does not convert to a f64 without losing its imaginary part"),
                (mixed, 2, complex64(2 + 3j), TypeError, "argument 2 (b32): a numpy.complex64 (2+3j) does not convert to a b32"),
                (mixed, 1, complex128(2 + 3j), TypeError, "argument 1 (b64): a numpy.complex128 is 16 bytes and the b64 parameter 8; pass a numpy.complex64"),
                (mixed, 5, complex64(2 + 3j), TypeError, "argument 5 (opaque:16:8): a numpy.complex64 is 8 bytes and the opaque:16:8 parameter 16; pass a numpy.complex128"),
                (mixed, 4, 1j, TypeError, "argument 4 (opaque:3:1): a complex packs as two f32 (8 bytes) or two f64 (16); the opaque:3:1 parameter is 3 bytes"),
                (mixed, 1, complex(1e39, 0), OverflowError, "argument 1 (b64): 1e+39 does not fit an f32"),
                (typed, 2, 2.5, TypeError, "argument 2 (i32): a float 2.5 does not convert to a i32 without loss"),
                (typed, 2, 2**31, OverflowError, "argument 2 (i32): the int 2147483648 does not fit a i32 (-2147483648 .. 2147483647)"),
                (typed, 3, -2**63 - 1, OverflowError, "argument 3 (i64): the int -9223372036854775809 does not fit a i64"),
                (mixed, 2, 2**32, OverflowError, "argument 2 (b32): the int 4294967296 does not fit a b32"),
                (mixed, 0, 256, OverflowError, "argument 0 (b8): the int 256 does not fit a b8"),
                (mixed, 0, 1.5, TypeError, "argument 0 (b8): a float is ambiguous for a b8 parameter"),
                (mixed, 2, ctypes.c_double(1.5), TypeError, "argument 2 (b32): a ctypes.c_double is 8 byte(s); the b32 parameter is 4"),
                (typed, 6, 1.5, TypeError, "argument 6 (ptr): give a device pointer")):
            with self.subTest(index=index, value=repr(value)), self.assertRaises(error) as caught:
                kernel.launch((1, 1), good[:index] + [value] + good[index + 1:])
            self.assertIn(message, str(caught.exception))
        self.assertEqual(self.fake_calls("cuLaunchKernelEx"), launched)  # nothing reached the driver

    def test_an_image_refusal_escapes_a_generic_catch(self):
        # The seed's ImageRefusal is a BaseException, so that no `except Exception` fallback reroutes it.
        self.assertFalse(issubclass(sdm.ImageRefusedError, Exception))
        self.assertTrue(issubclass(sdm.ImageRefusedError, sdm.SdmBaseError))
        self.assertTrue(issubclass(sdm.SdmError, sdm.SdmBaseError) and issubclass(sdm.SdmError, Exception))
        rt = self.runtime()
        # An sm_90 cubin compiled from compute_80, on an H200, in an archive under the hardware matrix.
        rt.mount_file(imported_archive(self, "kernels.sm_90-from-compute_80.cubin", matrix=True))

        def with_a_fallback():
            try:
                return rt.kernel(0, "scale")
            except Exception:  # what a generic fallback does
                return None

        with self.assertRaises(sdm.ImageRefusedError) as caught:
            with_a_fallback()
        self.assertEqual((caught.exception.status, caught.exception.code), (sdm.Status.ERROR_IMAGE_REFUSED, "SDM_ERROR_IMAGE_REFUSED"))
        self.assertIn("was compiled for compute_80", caught.exception.message)
        self.assertIsInstance(rt.last_error(), sdm.ImageRefusedError)

    def test_typed_half_parameters_take_floats(self):
        # No archive declares f16 or bf16: the conversion on its own.
        self.assertEqual(sdm._kernel_argument("f16", 1.5, 0).value, 0x3E00)
        self.assertEqual(sdm._kernel_argument("bf16", 1.5, 0).value, 0x3FC0)
        self.assertEqual(sdm._kernel_argument("bf16", 1.00390625, 0).value, 0x3F80)  # a tie, to even
        self.assertEqual(sdm._kernel_argument("bf16", float("nan"), 0).value & 0x7FC0, 0x7FC0)
        with self.assertRaises(OverflowError):
            sdm._kernel_argument("f16", 1e6, 0)

    def test_device_memory_of_other_libraries_as_pointer_arguments(self):
        scale = self.rt.kernel(0, "scale_by_table")  # b64,b64,b32
        typed = self.rt.kernel(0, "scale_by_table", signature="ptr,ptr,i32")  # the same kernel, typed by the host
        sizes = [8, 8, 4]
        for kernel in (scale, typed):
            with self.subTest(signature="derived" if kernel is scale else "typed"):
                seen = self.arguments(kernel, (1, 32), [CudaArray(0x7F0000001000), TorchLike(0x7F0000002000), 4], sizes)
                self.assertEqual(seen[:2], [struct.pack("<Q", 0x7F0000001000), struct.pack("<Q", 0x7F0000002000)])
                host = (ctypes.c_float * 4)()
                seen = self.arguments(kernel, (1, 32), [ctypes.pointer(host), ctypes.c_void_p(0x10), 4], sizes)
                self.assertEqual(seen[:2], [struct.pack("<Q", ctypes.addressof(host)), struct.pack("<Q", 0x10)])
        with self.assertRaisesRegex(TypeError, r"argument 0 \(ptr\): give a device pointer.*not a float"):
            typed.launch((1, 32), [1.5, 0, 4])
        # The host's signature, which libsdm checked, converts the arguments: 3 is 3.0f in an f32.
        as_floats = self.rt.kernel(0, "scale_by_table", signature="u64, ptr, f32")
        self.assertEqual(self.arguments(as_floats, (1, 32), [1, None, 3], sizes), [struct.pack("<Q", 1), bytes(8), struct.pack("<f", 3.0)])
        self.assertEqual(self.arguments(scale, (1, 32), [1, None, 3], sizes)[2], struct.pack("<i", 3))  # b32: the int's bits
        with self.assertRaisesRegex(TypeError, "has no data pointer"):
            bad = CudaArray(0)
            bad.__cuda_array_interface__ = {"shape": (1,)}
            typed.launch((1, 32), [bad, 0, 4])

    def test_dlpack_exporters_give_their_data_on_the_launch_stream(self):
        scale = self.rt.kernel(0, "scale_by_table")
        legacy = DLPackArray(0x7F0000001000, byte_offset=256)
        versioned = DLPackArray(0x7F0000009000, versioned=True, device_type=13)  # managed memory
        seen = self.arguments(scale, (1, 32), [legacy, versioned, 4], [8, 8, 4], stream=0x5000)
        self.assertEqual(seen[:2], [struct.pack("<Q", 0x7F0000001100), struct.pack("<Q", 0x7F0000009000)])
        self.assertEqual((legacy.streams, versioned.streams), ([0x5000], [0x5000]))
        gc.collect()
        self.assertEqual((legacy.released, versioned.released), (1, 1))  # not consumed: the export is let go
        # The NULL stream is DLPack's 1, the legacy default stream; an exporter without the keyword still exports.
        old = DLPackArray(0x7F0000003000, takes_stream=False)
        seen = self.arguments(scale, (1, 32), [legacy, old, 4], [8, 8, 4])
        self.assertEqual((legacy.streams[-1], seen[1]), (1, struct.pack("<Q", 0x7F0000003000)))
        pinned = DLPackArray(0x7F0000004000, device_type=3)  # kDLCUDAHost: no stream to order on
        self.arguments(scale, (1, 32), [pinned, 0, 4], [8, 8, 4])
        self.assertEqual(pinned.streams, [])
        cpu = DLPackArray(0x1000, device_type=1)
        with self.assertRaisesRegex(TypeError, r"argument 0 \(b64\): a DLPack tensor in CPU memory \(device type 1\)"):
            scale.launch((1, 32), [cpu, 0, 4])
        self.assertEqual(cpu.streams, [])  # refused before it was asked to export

    def test_streams_of_other_libraries(self):
        scale = self.rt.kernel(0, "scale_by_table")

        class Torch:  # torch.cuda.Stream
            cuda_stream = 0x6000

        class Property:  # an early cuda.core: __cuda_stream__ as an attribute
            __cuda_stream__ = (0, 0x7000)

        class Parameter:  # the ctypes convention
            _as_parameter_ = ctypes.c_void_p(0x8000)

        for stream, handle in ((CudaStream(0x5000), 0x5000), (Torch(), 0x6000), (Property(), 0x7000),
                               (Parameter(), 0x8000), (0x9000, 0x9000), (ctypes.c_void_p(0xA000), 0xA000), (None, None)):
            with self.subTest(stream=type(stream).__name__):
                scale.launch((1, 32), [0, 0, 1], stream=stream)
                self.assertEqual(self.last_launch().stream, handle)
        with self.assertRaisesRegex(ValueError, "version 1 of the protocol"):
            scale.launch((1, 32), [0, 0, 1], stream=CudaStream(0x5000, version=1))
        with self.assertRaisesRegex(TypeError, "give None, a CUstream as an int, or a stream object"):
            scale.launch((1, 32), [0, 0, 1], stream="default")
        with self.assertRaises(ValueError):
            scale.launch((1, 32), [0, 0, 1], stream=-1)
        # The fetch's graph-capture check takes one too.
        self.assertEqual(self.rt.kernel(0, "grid_sum", stream=CudaStream(0x5000)).info().name, "grid_sum")

    # -- module globals --
    def test_globals_written_and_read_back(self):
        scale = self.rt.kernel(0, "scale_by_table")
        address, size = scale.global_get("coefficients")  # __constant__ float coefficients[16]
        self.assertNotEqual(address, 0)
        self.assertEqual(size, 64)
        self.assertEqual(scale.global_get("launches")[1], 4)  # __device__ unsigned launches
        table = array.array("f", [i * 0.5 for i in range(16)])
        scale.global_write("coefficients", table, stream=CudaStream(0x5000))
        self.assertEqual(scale.global_read("coefficients"), table.tobytes())
        self.assertEqual(struct.unpack("<f", scale.global_read("coefficients", 4, offset=60)), (7.5,))
        self.assertEqual(scale.global_read("coefficients", offset=56), table[14:].tobytes())  # the rest
        self.assertEqual(scale.global_read("coefficients", 0), b"")
        scale.global_write("coefficients", (ctypes.c_float * 2)(-1, -2), offset=8)
        scale.global_write("coefficients", struct.pack("<f", 9.0))  # read-only data
        scale.global_write("coefficients", memoryview(bytearray(struct.pack("<f", 8.0))), offset=4)
        scale.global_write("coefficients", memoryview(struct.pack("<f", 6.0)), offset=12)  # read-only, not bytes
        self.assertEqual(array.array("f", scale.global_read("coefficients", 16)).tolist(), [9.0, 8.0, -1.0, 6.0])
        scale.global_write("launches", struct.pack("<I", 41))
        self.assertEqual(scale.global_read("launches"), struct.pack("<I", 41))
        self.assertEqual(ctypes.string_at(address + 60, 4), struct.pack("<f", 7.5))  # the fake's memory is the host's
        # What is not a global, out of range, not bytes.
        with self.raises(sdm.Status.ERROR_NOT_FOUND, "(as loaded for kernel scale_by_table) defines no global variable coefficient"):
            scale.global_get("coefficient")
        with self.raises(sdm.Status.ERROR_INVALID_ARGUMENT, "grid_sum is a kernel of module launch, not a global variable"):
            scale.global_read("grid_sum", 4)
        with self.raises(sdm.Status.ERROR_INVALID_ARGUMENT, "is 64 bytes: a copy of 8 bytes at offset 60 runs past it"):
            scale.global_write("coefficients", bytes(8), offset=60)
        with self.raises(sdm.Status.ERROR_INVALID_ARGUMENT, "a copy of 8 bytes at offset 60 runs past it"):
            scale.global_read("coefficients", 8, offset=60)
        with self.assertRaisesRegex(TypeError, "data: a str is not bytes-like"):
            scale.global_write("coefficients", "0.5")
        with self.assertRaises(ValueError):
            scale.global_write("coefficients", b"x", offset=-1)
        with self.assertRaises(ValueError):
            scale.global_read("coefficients", -4)
        with self.assertRaisesRegex(ValueError, "C-contiguous"):
            scale.global_write("coefficients", memoryview(table)[::2])

    # -- names --
    def test_kernels_by_their_cpp_names(self):
        for asked, name in (("void sdm_test::fill<float, 256>(float*, float)", self.FILL_F),
                            ("sdm_test::fill<float, 256>", self.FILL_F), ("  fill < float , 256 > ", self.FILL_F),
                            ("fill<int,256>", self.FILL_I), ("sdm_test::reduce<int>(int const*, int*, int)", self.REDUCE),
                            ("reduce", self.REDUCE), (self.FILL_F, self.FILL_F), ("matmul_tiled", "matmul_tiled")):
            with self.subTest(name=asked):
                self.assertEqual(self.rt.kernel(0, asked).info().name, name)

    def test_an_ambiguous_name_lists_the_candidates(self):
        with self.raises(sdm.Status.ERROR_AMBIGUOUS, "kernel name 'fill' matches 2 kernels",
                         f"void sdm_test::fill<float, 256>(float*, float) ({self.FILL_F})",
                         f"void sdm_test::fill<int, 256>(int*, int) ({self.FILL_I})") as caught:
            self.rt.kernel(0, "fill")
        self.assertIsInstance(caught.exception, sdm.AmbiguousError)
        self.assertIsInstance(caught.exception, LookupError)
        with self.raises(sdm.Status.ERROR_INVALID_ARGUMENT, "does not parse as a C++ name: an unclosed '<'"):
            self.rt.kernel(0, "sdm_test::fill<float")
        with self.raises(sdm.Status.ERROR_NOT_FOUND, "kernel fil<float, 256> is in no mounted archive",
                         "the closest: void sdm_test::fill<"):
            self.rt.kernel(0, "fil<float, 256>")

    def test_two_modules_defining_one_name(self):
        # As two CuPy RawModules: the plain name is ambiguous, naming both; each module's own by module=.
        tool = os.environ.get("SDM_TOOL", "")
        if not os.path.isfile(tool):
            self.fail("set SDM_TOOL to the sdm tool, build/tools/sdm; run_tests.sh does")
        work = Path(tempfile.mkdtemp(prefix="sdm-python-modules-"))
        try:
            for module in ("one", "two"):
                shutil.copy(ROOT / "tests" / "data" / "kernels.sm_90.cubin", work / f"{module}.sm_90.cubin")
            archive = work / "both.sdma"
            subprocess.run([tool, "import", "-q", "-o", str(archive), str(work / "one.sm_90.cubin"), str(work / "two.sm_90.cubin")],
                           check=True, capture_output=True, timeout=300)
            self.rt.mount_file(archive)
            with self.raises(sdm.Status.ERROR_AMBIGUOUS, "is defined by 2 modules of archive", "one, two", '"one!scale" or "two!scale"') as caught:
                self.rt.kernel(0, "scale")
            self.assertIsInstance(caught.exception, sdm.AmbiguousError)
            self.assertEqual(self.rt.kernel(0, "scale", module="one").info().module, "one")
            self.assertEqual(self.rt.kernel(0, "scale", module="two").info().module, "two")
            self.assertEqual(self.rt.kernel(0, "two!scale").info().module, "two")
            with self.assertRaises(ValueError):
                sdm.qualified_name("a!b", "scale")
        finally:
            shutil.rmtree(work, ignore_errors=True)

    def test_derived_signatures_agree_with_typed_ones_of_their_layout(self):
        for signature in ("ptr,ptr,i32", "u64, ptr, f32", "b64,b64,b32"):
            with self.subTest(signature=signature):
                self.assertEqual(self.rt.kernel(0, "scale_by_table", signature=signature).info().signature, "b64,b64,b32")
        with self.raises(sdm.Status.ERROR_MISMATCH, "parameter 2 is b32 (4 bytes at offset 16)", "i64 (8 bytes at offset 16)"):
            self.rt.kernel(0, "scale_by_table", signature="ptr,ptr,i64")

    # -- the listing --
    def test_the_kernel_listing(self):
        served = self.rt.kernels()
        self.assertEqual([k.name for k in served], [self.FILL_F, self.FILL_I, self.REDUCE, "grid_sum", "matmul_tiled", "scale_by_table"])
        self.assertEqual(served[0], sdm.KernelEntry(name=self.FILL_F, demangled="void sdm_test::fill<float, 256>(float*, float)",
                                                    module="launch", signature="b64,b32", targets=("sm_90",),
                                                    archive_index=0, shadowed=False))
        self.assertEqual(served[3].demangled, "")  # extern "C"
        self.assertEqual(self.rt.kernels(0), served)
        # A second layer with the same names shadows the first.
        self.rt.mount_memory(self.archive.read_bytes(), label="overlay")
        self.assertTrue(all(k.shadowed for k in self.rt.kernels(0)))
        self.assertFalse(any(k.shadowed for k in self.rt.kernels(1)))
        self.assertEqual({k.archive_index for k in self.rt.kernels()}, {1})
        self.rt.mount_file(ARCHIVE)
        self.assertEqual(len(self.rt.kernels()), len(served) + len(MANIFEST["kernel"]))
        self.assertEqual({k.name: k.signature for k in self.rt.kernels(2)},
                         {k["name"]: k["signature"] for k in MANIFEST["kernel"]})
        with self.raises(sdm.Status.ERROR_NOT_FOUND, "there is no mounted archive 3 (3 mounted"):
            self.rt.kernels(3)
        with self.assertRaisesRegex(ValueError, "not a mount index"):
            self.rt.kernels(-1)

    def test_the_listing_is_destroyed_whatever_happens(self):
        with mock.patch.object(lib, "sdm_kernel_list_destroy", wraps=lib.sdm_kernel_list_destroy) as destroy:
            self.rt.kernels()
            self.assertEqual(destroy.call_count, 1)
            with mock.patch.object(lib, "sdm_kernel_list_get", side_effect=RuntimeError("interrupted")):
                with self.assertRaisesRegex(RuntimeError, "interrupted"):
                    self.rt.kernels()
            self.assertEqual(destroy.call_count, 2)
            with self.raises(sdm.Status.ERROR_NOT_FOUND):
                self.rt.kernels(7)  # no list made: nothing to destroy, but NULL is accepted
            self.assertLessEqual(destroy.call_count, 3)


# ---- python -m sdm info ---------------------------------------------------------------------------

class InfoTest(FakeDriverTest):
    devices = f"{H200};{V100}"

    def info(self, *args):
        """(exit status, stdout lines, stderr) of `python -m sdm info ARGS`."""
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = sdm.__main__.main(["info", *args])
        return status, out.getvalue().splitlines(), err.getvalue()

    def test_the_driver_devices_and_archives_in_the_tools_shape(self):
        status, lines, err = self.info("-a", str(ARCHIVE))
        self.assertEqual((status, err), (0, ""))
        self.assertEqual(lines[:3], [
            "driver: CUDA 13.0",
            "device 0: NVIDIA H200, compute capability 9.0, class modern, 132 SMs, 62914560 B L2, 232448 B opt-in "
            "shared memory per block, plans assume 232448 B (per SM 233472 B), PDL yes, clusters yes",
            "device 1: Tesla V100-SXM2-16GB, compute capability 7.0, class unclassified, 80 SMs, 6291456 B L2, 98304 B "
            "opt-in shared memory per block"])
        self.assertRegex(lines[3], r"^  unclassified: outside the SDM kernels' hardware matrix, .*device 1 \(Tesla V100")
        self.assertTrue(lines[4].startswith("libsdm: "), lines[4])
        self.assertEqual(lines[-1], f"archive: {ARCHIVE}, 11 entries, {len(MANIFEST['kernel'])} kernels, kernel ABI 1.2, "
                                    f"content {MANIFEST['archive']['content_version']}")

    def test_json_has_the_same_facts(self):
        status, lines, _ = self.info("--json", "-a", str(ARCHIVE))
        out = json.loads("\n".join(lines))
        self.assertEqual(status, 0)
        self.assertEqual(out["driver"], {"version": 13000, "version_text": "13.0"})
        self.assertEqual([(d["name"], d["class"]) for d in out["devices"]],
                         [("NVIDIA H200", "modern"), ("Tesla V100-SXM2-16GB", "unclassified")])
        self.assertTrue(os.path.samefile(out["libsdm"]["path"], _capi.library_path()))
        with sdm.Runtime() as rt:  # what a host's runtime mounts, then the one -a names
            embedded = rt.archives()
        self.assertEqual([(a["label"], a["embedded"]) for a in out["archives"]],
                         [(a.label, a.embedded) for a in embedded] + [(str(ARCHIVE), False)])

    def test_without_a_driver_it_says_why_and_still_lists_the_archives(self):
        os.environ["SDM_CUDA_DRIVER"] = "/nonexistent/libcuda.so.1"
        status, lines, _ = self.info("-a", str(ARCHIVE))
        self.assertEqual(status, 0)
        self.assertTrue(lines[0].startswith("driver: none: cannot load the CUDA driver /nonexistent/libcuda.so.1"), lines[0])
        self.assertFalse([line for line in lines if line.startswith(("device", "  "))])
        self.assertTrue(lines[-1].startswith(f"archive: {ARCHIVE}, "), lines[-1])

    def test_an_archive_that_cannot_be_mounted_fails_and_the_rest_is_printed(self):
        missing = self.tmp / "missing.sdma"
        status, lines, err = self.info("-a", str(missing), "-a", str(ARCHIVE))
        self.assertEqual(status, 1)
        self.assertIn(str(missing), err)
        self.assertTrue(lines[-1].startswith(f"archive: {ARCHIVE}, "), lines[-1])


if __name__ == "__main__":
    unittest.main()
