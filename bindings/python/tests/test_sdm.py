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

import gen_abi  # noqa: E402
import sdm  # noqa: E402
import sdm.__main__  # noqa: E402
from sdm import _capi  # noqa: E402

HEADER = gen_abi.read_header(gen_abi.HEADER)  # the generator's reading of sdm.h, checked here against ctypes
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
        return expected(gen_abi.CType("", function=HEADER.callbacks[ctype.base]))
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
        self.assertEqual(set(HEADER.opaque), {"sdm_runtime", "sdm_error", "sdm_kernel", "sdm_kernel_list"})

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

    def test_the_image_enums_have_the_values_of_the_headers_comments(self):
        # sdm.h gives these values only in its comments on sdm_kernel_info's members.
        text = gen_abi.HEADER.read_text()
        for member, enum_type in (("image_kind", sdm.ImageKind), ("source", sdm.ImageSource)):
            with self.subTest(member=member):
                comment = re.search(rf"uint32_t {member};\s*/\*(.*?)\*/", text, re.DOTALL)[1]
                values = re.findall(r"(\d+) ([^,(]+)", comment)
                self.assertEqual([int(number) for number, _ in values], [int(m) for m in enum_type])
        kinds = re.search(r"uint32_t image_kind;\s*/\*(.*?)\(", text)[1]
        self.assertEqual([name.strip().upper().replace("-", "_") for name in re.findall(r"\d+ ([^,]+)", kinds)],
                         [m.name for m in sdm.ImageKind])
        # A value newer than these bindings stays a plain int.
        newer = sdm.KernelInfo._from_c(_capi.sdm_kernel_info(image_kind=9, source=42))
        self.assertEqual((type(newer.image_kind), newer.image_kind, type(newer.source), newer.source), (int, 9, int, 42))


# ---- errors and documentation ---------------------------------------------------------------------

class ErrorClassTest(unittest.TestCase):
    """Each status's SdmError subclass, and the standard exception it also is."""

    # The standard base of each status's class besides SdmError; RuntimeError for the others.
    BASES = {sdm.Status.ERROR_INVALID_ARGUMENT: ValueError, sdm.Status.ERROR_MISMATCH: ValueError,
             sdm.Status.ERROR_OUT_OF_MEMORY: MemoryError, sdm.Status.ERROR_IO: OSError,
             sdm.Status.ERROR_NOT_FOUND: LookupError, sdm.Status.ERROR_AMBIGUOUS: LookupError}

    def test_each_status_has_its_own_class(self):
        statuses = [status for status in sdm.Status if status != sdm.Status.OK]
        for status in statuses:
            with self.subTest(status=status.name):
                cls = sdm.error_class(status)
                # Named after the status: ERROR_NOT_FOUND is NotFoundError (IOError is Python's).
                name = "".join(word.capitalize() for word in status.name.split("_")[1:]) + "Error"
                self.assertEqual(cls.__name__, "SdmIOError" if status == sdm.Status.ERROR_IO else name)
                self.assertIs(getattr(sdm, cls.__name__), cls)
                self.assertIn(cls.__name__, sdm.__all__)
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
        """(name, object) of each public name `module` defines itself (not the modules and names it imports)."""
        for name in dir(module):
            value = getattr(module, name)
            if not name.startswith("_") and not inspect.ismodule(value) and getattr(value, "__module__", None) == module.__name__:
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


def imported_archive(test, cubin):
    """tests/data/`cubin` as `sdm import` archives it (signatures derived from the image), built
    once per run with $SDM_TOOL; fails, naming the variable, without the tool."""
    global _imported_dir
    if cubin not in _imported:
        tool = os.environ.get("SDM_TOOL", "")
        if not (os.path.isfile(tool) and os.access(tool, os.X_OK)):
            test.fail(f"set SDM_TOOL to the sdm tool, build/tools/sdm (it is {tool!r}); run_tests.sh does")
        if _imported_dir is None:
            _imported_dir = Path(tempfile.mkdtemp(prefix="sdm-python-imported-"))
        path = _imported_dir / (cubin.split(".")[0] + ".sdma")
        done = subprocess.run([tool, "import", str(ROOT / "tests" / "data" / cubin), "-o", str(path), "-q"],
                              capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            test.fail(f"sdm import {cubin} failed ({done.returncode}): {done.stderr}")
        _imported[cubin] = path
    return _imported[cubin]


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
