"""Build of cumath's optional C extension (metadata lives in pyproject.toml).

``cumath._core._fast._native`` is the compiled hot path; ``optional=True``: where no compiler is found the build
goes on without it and cumath calls its native libraries through ctypes alone (``cumath/_core/_fast``).
"""

from setuptools import Extension, setup

_FAST = "cumath/_core/_fast"
# one translation unit: _native.c includes the hit paths (_hot_host.c, _hot_gpu.c, _launch.c)
setup(ext_modules=[Extension("cumath._core._fast._native", [f"{_FAST}/_native.c"], optional=True,
                             depends=[f"{_FAST}/_hot_host.c", f"{_FAST}/_hot_gpu.c", f"{_FAST}/_launch.c"],
                             extra_compile_args=["-O2"])])
