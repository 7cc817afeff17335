"""Kernels of cumath's own run on the CPU in tests: the CUDA C++ they are generated as, compiled by the host C++
compiler against a small shim (a C++ thread per CUDA thread, ``__syncthreads`` a barrier of the block,
``__shared__`` storage shared by the block's threads, blocks run one after another by a launcher the test
module writes), so indexing, tails and shared-memory staging are checked without a GPU."""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile

#: what every host-run kernel source starts with (a launcher sets blockDim, gridDim and cumath_barrier)
SHIM = r"""
#include <atomic>
#include <barrier>
#include <cmath>
#include <cstring>
#include <thread>
#include <vector>
struct cumath_dim3 { unsigned x, y, z; };
static thread_local cumath_dim3 threadIdx, blockIdx;
static cumath_dim3 blockDim, gridDim;
static std::barrier<>* cumath_barrier = nullptr;
static inline void __syncthreads() { cumath_barrier->arrive_and_wait(); }
#define __global__
#define __device__
#define __forceinline__ inline
#define __restrict__ __restrict
#define __launch_bounds__(x)
#define __shared__ static
"""


def available() -> bool:
    return shutil.which("g++") is not None


_LIBS: dict = {}


def compile_host(text: str, tag: str, flags=()) -> ctypes.CDLL:
    """``text`` (a whole C++ translation unit) built as a shared library once per content, cached under the
    temporary folder ``cumath-<tag>-<uid>``, and loaded."""
    key = hashlib.sha256(text.encode() + repr(tuple(flags)).encode()).hexdigest()[:24]
    lib = _LIBS.get(key)
    if lib is None:
        folder = os.path.join(tempfile.gettempdir(), f"cumath-{tag}-{os.getuid()}")
        os.makedirs(folder, exist_ok=True)
        so = os.path.join(folder, f"{key}.so")
        if not os.path.exists(so):
            cpp = os.path.join(folder, f"{key}.cpp")
            with open(cpp, "w") as f:
                f.write(text)
            subprocess.run(["g++", "-std=c++20", "-O1", *flags, "-shared", "-fPIC", "-pthread",
                            "-Wno-unknown-pragmas", "-o", so + ".tmp", cpp], check=True, capture_output=True,
                           text=True)
            os.replace(so + ".tmp", so)
        lib = _LIBS[key] = ctypes.CDLL(so)
    return lib
