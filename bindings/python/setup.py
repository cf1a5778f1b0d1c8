"""What pyproject.toml cannot declare: the version, libsdm inside the wheel, the platform tag.

The version is sdm's release as sdm/_version.py reads it from the top-level meson.build. libsdm and
its JIT helper are copied from the Meson build directory $SDM_BUILD_DIR (default ../../build; a relative path is taken
from this directory, where pip runs the build) into the wheel's sdm/_lib, through `strip
--strip-unneeded` where strip is installed (a debugoptimized build's copy carries its debug
information: 40 MB, against 1.6 MB stripped). Both are written into setuptools' build directory,
never into the source tree.
"""

import os
import runpy
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Distribution, setup
from setuptools.command.bdist_wheel import bdist_wheel
from setuptools.command.build_py import build_py
from setuptools.errors import FileError

HERE = Path(__file__).resolve().parent
VERSION = runpy.run_path(str(HERE / "sdm" / "_version.py"))["__version__"]
# The SONAME, the name sdm._capi looks for in sdm/_lib: libsdm's soversion is the ABI major.
LIBRARY = "libsdm.so.{}".format(runpy.run_path(str(HERE / "sdm" / "_sdm_h.py"))["SDM_ABI_VERSION_MAJOR"])
HELPER = "sdm-jit-helper"


class BuildPy(build_py):
    def run(self):
        super().run()
        package = Path(self.build_lib) / "sdm"
        (package / "_version.py").write_text(
            f'"""The package\'s version: sdm\'s release, from meson.build when the wheel was built."""\n\n'
            f"__version__ = {VERSION!r}\n")
        source = HERE / (os.environ.get("SDM_BUILD_DIR") or "../../build") / "capi" / LIBRARY
        if not source.is_file():
            raise FileError(f"{source.resolve()} is missing: build sdm first (in the repository: meson setup build "
                            "&& ninja -C build), or set SDM_BUILD_DIR (default: the repository's build) to the Meson "
                            "build directory that has it")
        (package / "_lib").mkdir(exist_ok=True)
        # The project's license travels inside the package (the wheel ships libsdm's binary).
        license_file = HERE / ".." / ".." / "LICENSE"
        if license_file.is_file():
            shutil.copy(license_file, package / "LICENSE")
        else:
            print(f"setup.py: no {license_file}: the wheel goes without the project's LICENSE", file=sys.stderr)
        # libsdm, and beside it the JIT helper it starts for links it cannot fully check
        # (docs/LOADING.md, "A compiler that crashes"): libsdm looks for it in its own directory.
        helper = source.parent / HELPER
        if not helper.is_file():
            raise FileError(f"{helper.resolve()} is missing: build sdm first (ninja -C build), or set SDM_BUILD_DIR")
        for built, mode in ((source, 0o755), (helper, 0o755)):
            target = package / "_lib" / built.name
            strip = shutil.which("strip")
            if strip is None:
                print(f"setup.py: no strip program: {built} goes into the wheel as it is", file=sys.stderr)
                shutil.copy(built, target)
            else:
                subprocess.run([strip, "--strip-unneeded", "-o", str(target), str(built)], check=True)
            target.chmod(mode)


class WithLibrary(Distribution):
    """Platform-specific, as a distribution with extension modules is: built and installed as
    platform files, its wheel tagged with the platform."""

    def has_ext_modules(self):
        return True


class PlatformWheel(bdist_wheel):
    """A wheel for the platform libsdm was built for; its Python code runs on any Python 3."""

    def get_tag(self):
        return "py3", "none", super().get_tag()[2]


setup(version=VERSION, distclass=WithLibrary, cmdclass={"build_py": BuildPy, "bdist_wheel": PlatformWheel})
