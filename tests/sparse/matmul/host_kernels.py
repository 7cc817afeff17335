"""The generated SpMM kernels run on the CPU: the emitted CUDA C++ compiled by the host C++ compiler against a
small shim (a C++ thread per CUDA thread, ``__syncthreads`` a barrier of the block, ``__shared__`` storage shared
by the block's threads, blocks one after another), so the kernels' indexing, vector paths, shared-memory staging
and launch shapes are checked without a GPU. ``install(monkeypatch)`` makes the generated executor compile and
load its kernels this way; the "device" arrays are NumPy arrays (``_Package`` presents them as device memory)."""

from __future__ import annotations

import ctypes
import hashlib
import re

from helpers.host_cuda import SHIM, available, compile_host as _compile

__all__ = ["available", "host_source", "compile_host", "HostKernel", "install"]

_SHIM = SHIM + r"""
struct uint4 { unsigned x, y, z, w; };
template <class T> inline void atomicAdd(T* p, T v) { std::atomic_ref<T>(*p).fetch_add(v); }
static std::atomic<int> cumath_fault{0};
static inline bool cumath_check16(const void* p) {  // a GPU faults on a misaligned 16-byte access
  if (reinterpret_cast<unsigned long long>(p) % 16 == 0) return true;
  cumath_fault = 1;
  return false;
}
extern "C" int host_fault() { return cumath_fault.exchange(0); }
"""

_HOST_STORES = r"""
template <class T, int K> inline void store16(T* p, const T (&a)[K]) {
  if (cumath_check16(p)) std::memcpy((void*)p, (const void*)a, 16); }
"""

_KERNEL = re.compile(r'extern "C" __global__ void (?:__launch_bounds__\(\d+\) )?(\w+)\((.*?)\) \{')
_CTYPES = {"P": ctypes.c_void_p, "q": ctypes.c_longlong, "i": ctypes.c_int, "f": ctypes.c_float,
           "d": ctypes.c_double}


def host_source(source: str, operators: str = "") -> str:
    """The kernels' source made host C++: the shim, host 16-byte stores, ``operators`` (C++ definitions of the
    operator symbols the source declares), and a ``host_launch_<kernel>`` per kernel that runs a grid."""
    start = source.index("// 16-byte stores written out")
    end = source.index("template <int W, typename T> __device__ __forceinline__ void store_vec")
    src = source[:start] + _HOST_STORES + source[end:]
    load = "x.u = *reinterpret_cast<const uint4*>(p);"
    assert load in src, "the 16-byte load of load_vec changed: update host_kernels"
    src = src.replace(load, "if (!cumath_check16(p)) return; " + load)
    launchers = []
    for name, params in _KERNEL.findall(source):
        names = ", ".join(p.rsplit(" ", 1)[1] for p in params.split(", "))
        launchers.append(f"""
extern "C" void host_launch_{name}(unsigned gx, unsigned gy, unsigned bx, unsigned by, {params}) {{
  blockDim = {{bx, by, 1}}; gridDim = {{gx, gy, 1}};
  for (unsigned y = 0; y < gy; ++y) for (unsigned x = 0; x < gx; ++x) {{
    std::barrier<> bar(bx * by); cumath_barrier = &bar;
    std::vector<std::thread> ts;
    for (unsigned ty = 0; ty < by; ++ty) for (unsigned tx = 0; tx < bx; ++tx)
      ts.emplace_back([=] {{ threadIdx = {{tx, ty, 0}}; blockIdx = {{x, y, 0}}; {name}({names}); }});
    for (auto& t : ts) t.join();
  }}
}}""")
    return _SHIM + src + operators + "\n".join(launchers) + "\n"


def compile_host(source: str, operators: str = "") -> ctypes.CDLL:
    return _compile(host_source(source, operators), "host-kernels")


class HostKernel:
    """``launch(grid, block, shared_bytes, stream, *args)`` of one kernel of a host-compiled source."""

    def __init__(self, lib, name: str, arg_types: str):
        self.fn, self.fault = getattr(lib, f"host_launch_{name}"), lib.host_fault
        self.fn.argtypes = [ctypes.c_uint] * 4 + [_CTYPES[c] for c in arg_types]
        self.fn.restype = None
        self.launches = []

    def launch(self, grid, block, shared, stream, *args):
        assert block[0] * block[1] * block[2] <= 256 and grid[0] >= 1 and grid[1] >= 1 and grid[1] <= 65535
        self.launches.append((tuple(grid), tuple(block)))
        self.fn(grid[0], grid[1], block[0], block[1], *args)
        assert self.fault() == 0, "the kernel made a misaligned 16-byte access (a GPU would fault)"


class _Artifact:
    def __init__(self, data: bytes):
        self.data, self.key, self.kind = data, hashlib.sha256(data).hexdigest(), "cubin"


def install(monkeypatch, operators: str = "") -> dict:
    """The generated executor compiles with the host compiler; returns a dict that collects the loaded kernels
    by name (their ``launches`` say the grids and blocks used)."""
    from cumath._core import jit, kernels

    loaded: dict = {}
    monkeypatch.setattr(jit, "compile_source", lambda src, **kw: _Artifact(src.encode()))
    monkeypatch.setattr(jit, "link", lambda pieces, **kw: pieces[0])
    monkeypatch.setattr(kernels, "device_arch", lambda device=None: 90)

    def load_kernel(image, key, name, arg_types, **kw):
        k = HostKernel(compile_host(image.decode(), operators), name, arg_types)
        loaded[name] = k
        return k

    monkeypatch.setattr(kernels, "load_kernel", load_kernel)
    return loaded
