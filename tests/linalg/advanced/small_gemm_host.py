"""The small-GEMM kernel run on the CPU: its generated CUDA C++ compiled by the host C++ compiler against a small
shim (a C++ thread per CUDA thread, ``__syncthreads`` a barrier of the block, ``__shared__`` storage shared by the
block, blocks one after another, half and bfloat16 conversions in C++), so the kernel's indexing, panels, tails
and conversions are checked without a GPU. ``HostGemm(problem)`` compiles one variant and runs it on NumPy
arrays through the same launch shape and arguments as the GPU launch."""

from __future__ import annotations

import ctypes

from cumath.linalg.advanced import _small_gemm as sg
from helpers.host_cuda import SHIM, available, compile_host

__all__ = ["HostGemm", "available", "compile_kernel"]

_CONVERSIONS = r"""
#define CUMATH_HOST 1
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


def compile_kernel(source: str) -> ctypes.CDLL:
    """One variant's source (``_small_gemm.render``) built for the host, with ``host_launch`` running a grid."""
    return compile_host(SHIM + _CONVERSIONS + source + _LAUNCHER, "small-gemm", ("-ffp-contract=off",))


class HostGemm:
    """One variant of the kernel for ``problem``, compiled for the host; ``run(a, b, c, d, alpha, beta)`` with
    NumPy arrays whose data pointers are the operands' (the problem's strides describe them)."""

    def __init__(self, problem: sg.SmallProblem):
        self.problem = problem
        self.defines = sg.variant_defines(problem)
        self.grid, self.block = sg.launch_shape(problem, self.defines)
        lib = compile_kernel(sg.render(self.defines))
        acc = ctypes.c_double if self.defines["ACC"] == "double" else ctypes.c_float
        self.fn = lib.host_launch
        self.fn.argtypes = [ctypes.c_uint] * 4 + [ctypes.c_void_p] * 4 + [acc, acc, ctypes.c_void_p]
        self.fn.restype = None
        self._static = (ctypes.c_longlong * 15)(*sg.static_args(problem))

    def run(self, a_ptr: int, b_ptr: int, c_ptr: int, d_ptr: int, alpha: float, beta: float) -> None:
        gx, gy, gz = self.grid
        self.fn(gx, gy, gz, self.block, a_ptr, b_ptr, c_ptr or None, d_ptr, alpha, beta, self._static)
