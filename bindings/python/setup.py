"""What pyproject.toml cannot declare: the version, libsdm inside the wheel, the platform tag.

The version is sdm's release as sdm/_version.py reads it from the top-level meson.build (an sdist
carries it written out, and the project's LICENSE beside setup.py). libsdm and its JIT helper are
copied from a Meson build directory into the wheel's sdm/_lib, through `strip --strip-unneeded`
where strip is installed (a debugoptimized build's copy carries its debug information: 40 MB,
against 1.6 MB stripped). Both are written into setuptools' build directory, never into the source
tree. The build directory is $SDM_BUILD_DIR, a relative one taken from the directory pip (or
python -m build) was started in: pip runs this file in the source directory, so that is the shell's
$PWD, which the build inherits. Without it, the first of the repository's build-install, build-release
and build that has libsdm (an sdist has no repository around it: it needs SDM_BUILD_DIR).
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
from setuptools.command.sdist import sdist
from setuptools.errors import FileError

HERE = Path(__file__).resolve().parent
VERSION = runpy.run_path(str(HERE / "sdm" / "_version.py"))["__version__"]
# The SONAME, the name sdm._capi looks for in sdm/_lib: libsdm's soversion is the ABI major.
LIBRARY = "libsdm.so.{}".format(runpy.run_path(str(HERE / "sdm" / "_sdm_h.py"))["SDM_ABI_VERSION_MAJOR"])
HELPER = "sdm-jit-helper"
REPOSITORY = HERE.parent.parent
# The repository's LICENSE; an sdist carries its copy beside setup.py.
LICENSE = next((f for f in (HERE / "LICENSE", REPOSITORY / "LICENSE") if f.is_file()), None)
# The README's install recipe's folder, ./run.sh demo's release build, then a development one: a
# plain `pip install ./bindings/python` after the README's recipe takes the libsdm it installed.
DEFAULT_BUILD_DIRS = ("build-install", "build-release", "build")


def version_module():
    return (f'"""The package\'s version: sdm\'s release, from meson.build when the package was built."""\n\n'
            f"__version__ = {VERSION!r}\n")


def build_directory():
    """The Meson build directory whose libsdm goes into the wheel."""
    named = os.environ.get("SDM_BUILD_DIR")
    if named:
        # pip and python -m build run this file with the source directory as the current one;
        # the caller's directory survives as $PWD.
        base = Path(os.environ.get("PWD") or os.getcwd())
        directory = base / named
        if not (directory / "capi" / LIBRARY).is_file():
            raise FileError(f"SDM_BUILD_DIR={named}: {(directory / 'capi' / LIBRARY).resolve()} is missing: build sdm there "
                            f"(meson setup {named} && ninja -C {named}), or name the Meson build directory that has it "
                            "(a relative path is taken from the directory pip was run in)")
        return directory
    tried = [REPOSITORY / name for name in DEFAULT_BUILD_DIRS]
    for directory in tried:
        if (directory / "capi" / LIBRARY).is_file():
            return directory
    paths = [str(d / "capi" / LIBRARY) for d in tried]
    raise FileError(f"no libsdm to put in the wheel: neither {', '.join(paths[:-1])} nor {paths[-1]} exists. "
                    "Build sdm first (in the repository: the README's install recipe builds build-install), or set "
                    "SDM_BUILD_DIR to the Meson build directory that has it")


class BuildPy(build_py):
    def run(self):
        super().run()
        package = Path(self.build_lib) / "sdm"
        (package / "_version.py").write_text(version_module())
        source = build_directory() / "capi" / LIBRARY
        (package / "_lib").mkdir(exist_ok=True)
        # The project's license travels inside the package (the wheel ships libsdm's binary).
        if LICENSE is not None:
            shutil.copy(LICENSE, package / "LICENSE")
        else:
            print(f"setup.py: no {REPOSITORY / 'LICENSE'}: the wheel goes without the project's LICENSE", file=sys.stderr)
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


class SourceDistribution(sdist):
    """The sdist: this directory's files, with what it reads from the repository around it (the
    version, the LICENSE) written in, since an sdist is unpacked alone."""

    def make_release_tree(self, base_dir, files):
        super().make_release_tree(base_dir, files)
        version_file = Path(base_dir) / "sdm" / "_version.py"
        version_file.unlink()  # a hard link to the source tree's file: replaced, not written through
        version_file.write_text(version_module())
        if LICENSE is None:
            raise FileError(f"no {REPOSITORY / 'LICENSE'}: an sdist must carry the project's license")
        shutil.copy(LICENSE, Path(base_dir) / "LICENSE")


class WithLibrary(Distribution):
    """Platform-specific, as a distribution with extension modules is: built and installed as
    platform files, its wheel tagged with the platform."""

    def has_ext_modules(self):
        return True


class PlatformWheel(bdist_wheel):
    """A wheel for the platform libsdm was built for; its Python code runs on any Python 3."""

    def get_tag(self):
        return "py3", "none", super().get_tag()[2]


setup(version=VERSION, distclass=WithLibrary, cmdclass={"build_py": BuildPy, "sdist": SourceDistribution, "bdist_wheel": PlatformWheel})
