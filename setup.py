"""Build of cumath's optional C extension (metadata lives in pyproject.toml).

``cumath._core._fast._native`` is the compiled hot path; ``optional=True``: where no compiler is found the build
goes on without it and cumath calls its native libraries through ctypes alone (``cumath/_core/_fast``).
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("cumath._core._fast._native", ["cumath/_core/_fast/_native.c"], optional=True,
                             extra_compile_args=["-O2"])])
