"""The small-GEMM kernel run on the CPU: its generated CUDA C++ compiled by the host C++ compiler against a small
shim (a C++ thread per CUDA thread, ``__syncthreads`` a barrier of the block, ``__shared__`` storage shared by the
block, blocks one after another, half and bfloat16 conversions in C++), so the kernel's indexing, panels, tails
and conversions are checked without a GPU. ``HostGemm(problem)`` compiles one variant and runs it on NumPy
arrays through the same launch shape and arguments as the GPU launch."""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile

from cumath.linalg.advanced import _small_gemm as sg

_SHIM = r"""
#include <barrier>
#include <cmath>
#include <cstring>
#include <thread>
#include <vector>
#define CUMATH_HOST 1
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
static inline float cumath_host_to_float(unsigned short x, int conv) {
  if (conv == 1) { _Float16 h; std::memcpy(&h, &x, 2); return (float)h; }
  unsigned int u = ((unsigned int)x) << 16; float f; std::memcpy(&f, &u, 4); return f;
}
static inline unsigned short cumath_host_from_float(float f, int conv) {
  if (conv == 1) { _Float16 h = (_Float16)f; unsigned short x; std::memcpy(&x, &h, 2); return x; }
  unsigned int u; std::memcpy(&u, &f, 4);
  u += 0x7FFFu + ((u >> 16) & 1u);  // round to nearest even
  return (unsigned short)(u >> 16);
}
"""

_LAUNCHER = r"""
extern "C" void host_launch(unsigned gx, unsigned gy, unsigned gz, unsigned bx, const void* A, const void* B,
                            const void* C, void* D, ACC alpha, ACC beta, const long long* s) {
  blockDim = {bx, 1, 1}; gridDim = {gx, gy, gz};
  for (unsigned z = 0; z < gz; ++z) for (unsigned y = 0; y < gy; ++y) for (unsigned x = 0; x < gx; ++x) {
    std::barrier<> bar(bx); cumath_barrier = &bar;
    std::vector<std::thread> ts;
    for (unsigned t = 0; t < bx; ++t)
      ts.emplace_back([=] { threadIdx = {t, 0, 0}; blockIdx = {x, y, z};
        cumath_small_gemm((const ELEM_IN*)A, (const ELEM_IN*)B, (const ELEM_OUT*)C, (ELEM_OUT*)D, alpha, beta,
                          s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7], s[8], s[9], s[10], s[11], s[12], s[13],
                          s[14]); });
    for (auto& t : ts) t.join();
  }
}
"""


def available() -> bool:
    return shutil.which("g++") is not None


_LIBS: dict = {}


def compile_host(source: str) -> ctypes.CDLL:
    text = _SHIM + source + _LAUNCHER
    key = hashlib.sha256(text.encode()).hexdigest()[:24]
    lib = _LIBS.get(key)
    if lib is None:
        folder = os.path.join(tempfile.gettempdir(), f"cumath-small-gemm-{os.getuid()}")
        os.makedirs(folder, exist_ok=True)
        so = os.path.join(folder, f"{key}.so")
        if not os.path.exists(so):
            cpp = os.path.join(folder, f"{key}.cpp")
            with open(cpp, "w") as f:
                f.write(text)
            subprocess.run(["g++", "-std=c++20", "-O1", "-ffp-contract=off", "-shared", "-fPIC", "-pthread",
                            "-Wno-unknown-pragmas", "-o", so + ".tmp", cpp], check=True, capture_output=True,
                           text=True)
            os.replace(so + ".tmp", so)
        lib = _LIBS[key] = ctypes.CDLL(so)
    return lib


class HostGemm:
    """One variant of the kernel for ``problem``, compiled for the host; ``run(a, b, c, d, alpha, beta)`` with
    NumPy arrays whose data pointers are the operands' (the problem's strides describe them)."""

    def __init__(self, problem: sg.SmallProblem):
        self.problem = problem
        self.defines = sg.variant_defines(problem)
        self.grid, self.block = sg.launch_shape(problem, self.defines)
        lib = compile_host(sg.render(self.defines))
        acc = ctypes.c_double if self.defines["ACC"] == "double" else ctypes.c_float
        self.fn = lib.host_launch
        self.fn.argtypes = [ctypes.c_uint] * 4 + [ctypes.c_void_p] * 4 + [acc, acc, ctypes.c_void_p]
        self.fn.restype = None
        self._static = (ctypes.c_longlong * 15)(*sg.static_args(problem))

    def run(self, a_ptr: int, b_ptr: int, c_ptr: int, d_ptr: int, alpha: float, beta: float) -> None:
        gx, gy, gz = self.grid
        self.fn(gx, gy, gz, self.block, a_ptr, b_ptr, c_ptr or None, d_ptr, alpha, beta, self._static)
