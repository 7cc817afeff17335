"""Build of cumath's optional C extension (metadata lives in pyproject.toml).

``cumath._core._fast._native`` is the compiled hot path; ``optional=True``: where no compiler is found the build
goes on without it and cumath calls its native libraries through ctypes alone (``cumath/_core/_fast``).
"""

from setuptools import Extension, setup

_FAST = "cumath/_core/_fast"
# one translation unit: _native.c includes the hit paths (_hot_host.c, _hot_gpu.c, _launch.c, _table.c,
# _method.c, _rfft.c)
setup(ext_modules=[Extension("cumath._core._fast._native", [f"{_FAST}/_native.c"], optional=True,
                             depends=[f"{_FAST}/{name}.c"
                                      for name in ("_hot_host", "_hot_gpu", "_launch", "_table", "_method", "_rfft")],
                             extra_compile_args=["-O2"])])
