"""Builds the Python package `autobatch` for pip (pyproject.toml names this
file's setuptools as the build backend): the pure-Python files of
python/autobatch and the extension autobatch._autobatch, which CMake builds
(the target autobatch_python of the top-level CMakeLists.txt).

    python3 -m venv --system-site-packages .venv
    .venv/bin/pip install --no-build-isolation .

By default the extension is built in build-pip/cmake (Release, no tests).
AUTOBATCH_CMAKE_BUILD_DIR=DIR uses an existing CMake build instead (such as
tools/setup's build/): it brings DIR's autobatch_python up to date and takes
its output, and pip's own files go to DIR/pip, so the source tree is not
written. The extension must be built for the interpreter that runs pip.
"""

import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent
GIVEN_BUILD = os.environ.get("AUTOBATCH_CMAKE_BUILD_DIR")
PIP_DIR = Path(GIVEN_BUILD).resolve() / "pip" if GIVEN_BUILD else ROOT / "build-pip"


def version():
    """The project's version, from CMakeLists.txt's project() (one source)."""
    text = (ROOT / "CMakeLists.txt").read_text()
    return re.search(r"project\(autobatch VERSION ([0-9.]+)", text).group(1)


def run(cmd):
    print(" ".join(str(c) for c in cmd), flush=True)
    subprocess.run([str(c) for c in cmd], check=True)


class CMakeBuild(build_ext):
    """Builds the extension with CMake and copies it where setuptools
    packs it."""

    def build_extension(self, ext):
        if GIVEN_BUILD:
            build_dir = Path(GIVEN_BUILD).resolve()
            if not (build_dir / "CMakeCache.txt").exists():
                sys.exit(f"AUTOBATCH_CMAKE_BUILD_DIR={GIVEN_BUILD}: not a CMake build "
                         "directory (no CMakeCache.txt)")
        else:
            build_dir = PIP_DIR / "cmake"
            generator = ["-G", "Ninja"] if shutil.which("ninja") else []
            run(["cmake", "-S", ROOT, "-B", build_dir, *generator,
                 "-DCMAKE_BUILD_TYPE=Release", "-DAUTOBATCH_TESTS=OFF", "-DAUTOBATCH_PYTHON=ON",
                 f"-DPython3_EXECUTABLE={sys.executable}"])
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(os.cpu_count() or 1)
        run(["cmake", "--build", build_dir, "--target", "autobatch_python", "--parallel", jobs])
        suffix = sysconfig.get_config_var("EXT_SUFFIX")
        built = build_dir / "python" / "autobatch" / f"_autobatch{suffix}"
        if not built.exists():
            found = sorted(p.name for p in (build_dir / "python" / "autobatch").glob("_autobatch*"))
            sys.exit(f"{built} is missing: {build_dir} builds the extension for another Python "
                     f"({', '.join(found) or 'none built'}); this one ({sys.executable}) needs "
                     f"_autobatch{suffix}")
        target = Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built, target)


PIP_DIR.mkdir(parents=True, exist_ok=True)
setup(
    version=version(),
    ext_modules=[Extension("autobatch._autobatch", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    options={"build": {"build_base": str(PIP_DIR / "setuptools")},
             "egg_info": {"egg_base": str(PIP_DIR)}},
)
