"""The package `csm`, with the libcsm.so of the build beside it when there is one: pip install
copies it in, so that csm.Simulation finds it wherever the package is installed. No compiler runs
here. The library is $CSM_LIBRARY, else ../build/libcsm.so (./build.sh builds it there)."""
import os
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py


class with_library(build_py):
    def run(self):
        super().run()
        here = os.path.dirname(os.path.abspath(__file__))
        lib = os.environ.get("CSM_LIBRARY") or os.path.join(here, "..", "build", "libcsm.so")
        if os.path.exists(lib):
            shutil.copy(lib, os.path.join(self.build_lib, "csm", "libcsm.so"))


setup(cmdclass={"build_py": with_library})
