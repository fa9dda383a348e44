"""Installs the pure-Python package and records where the library was built: the build
directory of this checkout ($CFUSER_BUILD_DIR, else ../build), written to
cfuser/_install_info.py so that an installed cfuser finds libcfuser.so there (rule 3 of
cfuser/_capi.py). Nothing is compiled."""
import os

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))


class BuildPyRecordingBuildDir(build_py):
    def run(self):
        super().run()
        build_dir = os.path.abspath(os.environ.get("CFUSER_BUILD_DIR") or os.path.join(HERE, os.pardir, "build"))
        target = os.path.join(self.build_lib, "cfuser", "_install_info.py")
        with open(target, "w") as f:
            f.write('"""Written by setup.py at install time."""\n')
            f.write(f"BUILD_DIR = {build_dir!r}\n")


setup(cmdclass={"build_py": BuildPyRecordingBuildDir})
