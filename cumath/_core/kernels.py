"""CUDA C++ kernels of cumath's own: compiled through :mod:`cumath._core.jit`, loaded once, launched cheaply.

``get_kernel(source, name, arg_types)`` returns a ``Kernel`` for the current (or given) GPU:

- the source is compiled with NVRTC for the device's compute capability to a CUBIN (to PTX for the
  newest architecture NVRTC knows when the GPU is newer than NVRTC; the driver then JIT-compiles it), the image
  content-addressed and cached in memory and on disk by :func:`cumath._core.jit.compile_source`, so other
  processes reuse it;
- the module is loaded once per CUDA context (the primary context the runtime, CuPy or PyTorch made
  current) and kept for the life of the process; :func:`load_kernel` does the same for an image built
  elsewhere (a CUBIN linked by :func:`cumath._core.jit.link`);
- ``Kernel.launch(grid, block, shared_mem, stream, *args)`` packs the arguments with one precompiled
  ``struct`` into a buffer whose ``void *[]`` was built once, then calls ``cuLaunchKernel``.

Argument codes (``arg_types``): ``"P"`` pointer (an int address), ``"i"``/``"I"`` 32-bit int/unsigned,
``"q"``/``"Q"`` 64-bit, ``"f"`` float, ``"d"`` double. Names are extern "C" names, or C++ name expressions
(``"axpy<float>"``) that NVRTC lowers.
"""

from __future__ import annotations

import ctypes
import struct
import threading

from .._bindings._loader import once
from . import jit

__all__ = ["Kernel", "get_kernel", "load_kernel", "ArgPacker", "device_arch"]

_ARG_FORMATS = {"P": "Q", "i": "i4x", "I": "I4x", "q": "q", "Q": "Q", "f": "f4x", "d": "d"}
_SLOT = 8  # every argument gets an 8-byte slot, aligned to 8

_lock = threading.RLock()
_modules: dict[tuple[int, str], int] = {}  # (context, key) -> CUmodule
_kernels: dict[tuple[int, str, str, str], "Kernel"] = {}  # (context, key, name, arg_types) -> Kernel


# ---------------------------------------------------------------------------------------- packing


class ArgPacker:
    """Packs launch arguments into a fixed buffer and keeps the ``void *[]`` that points into it."""

    __slots__ = ("arg_types", "_struct", "_buffer", "params", "nargs")

    def __init__(self, arg_types: str):
        bad = [c for c in arg_types if c not in _ARG_FORMATS]
        if bad:
            raise ValueError(f"unknown kernel argument code(s) {bad!r}; use {', '.join(_ARG_FORMATS)}")
        self.arg_types = arg_types
        self.nargs = len(arg_types)
        self._struct = struct.Struct("<" + "".join(_ARG_FORMATS[c] for c in arg_types))
        self._buffer = ctypes.create_string_buffer(max(self._struct.size, _SLOT))
        base = ctypes.addressof(self._buffer)
        self.params = (ctypes.c_void_p * max(self.nargs, 1))(*[base + _SLOT * i for i in range(self.nargs)])

    def pack(self, args) -> None:
        if len(args) != self.nargs:
            raise TypeError(f"the kernel takes {self.nargs} arguments ({self.arg_types!r}), {len(args)} given")
        try:
            self._struct.pack_into(self._buffer, 0, *args)
        except struct.error as exc:
            raise TypeError(f"kernel arguments {args!r} do not fit the types {self.arg_types!r}: {exc}") from None

    def raw(self) -> bytes:
        return self._buffer.raw[: self._struct.size]


# --------------------------------------------------------------------------------------- devices


def _current_context(device_id: int | None) -> tuple[int, int]:
    """(context, device) current on this thread, making the device's primary context current if needed."""
    from .._bindings import cuda as drv
    from . import cuda as rt

    if device_id is not None:
        rt.require_device(device_id)
    drv.cuInit(0)
    ctx = drv.cuCtxGetCurrent()
    if ctx and (device_id is None or drv.cuCtxGetDevice() == device_id):
        return ctx, drv.cuCtxGetDevice()
    # No context (a fresh thread, or nothing initialised the runtime yet), or another device's: let the
    # runtime make the device's primary context current, as CuPy and PyTorch do.
    from .._bindings import cudart

    if device_id is None:
        rt.require_device(0)
        device_id = cudart.cudaGetDevice()
    rt.set_device(device_id)
    cudart.cudaFree(0)
    ctx = drv.cuCtxGetCurrent()
    if not ctx:
        raise RuntimeError(f"no CUDA context became current for GPU {device_id}")
    return ctx, device_id


def device_arch(device_id: int) -> int:
    """Compute capability of a GPU as an int (9.0 -> 90)."""
    from .._bindings import cudart

    major = cudart.cudaDeviceGetAttribute(cudart.cudaDeviceAttr.cudaDevAttrComputeCapabilityMajor, device_id)
    minor = cudart.cudaDeviceGetAttribute(cudart.cudaDeviceAttr.cudaDevAttrComputeCapabilityMinor, device_id)
    return 10 * major + minor


# --------------------------------------------------------------------------------------- kernels


class Kernel:
    """A loaded kernel function of one context. ``launch`` is the hot path: pack, then cuLaunchKernel."""

    __slots__ = ("name", "function", "device_id", "key", "arg_types", "_packer", "_launch", "_lock",
                 "__weakref__")

    def __init__(self, name: str, function: int, device_id: int, key: str, arg_types: str):
        from .._bindings import cuda as drv

        self.name = name
        self.function = function
        self.device_id = device_id
        self.key = key
        self.arg_types = arg_types
        self._packer = ArgPacker(arg_types)
        self._launch = drv.cuLaunchKernel
        self._lock = threading.Lock()

    def launch(self, grid, block, shared_mem: int, stream: int, *args) -> None:
        """Launch on ``stream`` (an int handle). ``grid``/``block`` are ints or (x, y, z) tuples."""
        gx, gy, gz = (grid, 1, 1) if isinstance(grid, int) else (tuple(grid) + (1, 1))[:3]
        bx, by, bz = (block, 1, 1) if isinstance(block, int) else (tuple(block) + (1, 1))[:3]
        packer = self._packer
        with self._lock:  # the buffer is shared; the driver copies the values during the call
            packer.pack(args)
            self._launch(self.function, gx, gy, gz, bx, by, bz, shared_mem, stream, packer.params, None)

    def attribute(self, attrib: int) -> int:
        from .._bindings import cuda as drv

        return drv.cuFuncGetAttribute(attrib, self.function)

    def set_attribute(self, attrib: int, value: int) -> None:
        """cuFuncSetAttribute (e.g. 8, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, above 48 KiB)."""
        from .._bindings import cuda as drv

        drv.cuFuncSetAttribute(self.function, attrib, value)

    def max_active_blocks_per_sm(self, block: int, shared_mem: int = 0) -> int:
        from .._bindings import cuda as drv

        return drv.cuOccupancyMaxActiveBlocksPerMultiprocessor(self.function, block, shared_mem)

    def __repr__(self) -> str:
        return f"Kernel({self.name!r}, device {self.device_id}, args {self.arg_types!r})"


def get_kernel(source: str, name: str, arg_types: str, *, options=(), device_id: int | None = None) -> Kernel:
    """The kernel ``name`` of ``source`` loaded on GPU ``device_id`` (the current one by default)."""
    ctx, device_id = _current_context(device_id)
    names = (name,) if ("<" in name or "::" in name) else ()
    art = jit.compile_source(source, cc=device_arch(device_id), options=options, names=names, name="cumath_kernel.cu",
                             what=f"the kernel {name}")
    return _load(ctx, device_id, art.data, art.kind, art.key, name, art.lowered.get(name, name), arg_types)


def load_kernel(image: bytes, key: str, name: str, arg_types: str, *, kind: str = "cubin",
                device_id: int | None = None) -> Kernel:
    """The kernel ``name`` (its symbol) of an image built elsewhere (e.g. linked by nvJitLink), loaded once
    per context under ``key`` (a content address of ``image``)."""
    ctx, device_id = _current_context(device_id)
    return _load(ctx, device_id, image, kind, key, name, name, arg_types)


def _load(ctx, device_id, image, kind, key, name, symbol, arg_types) -> Kernel:
    from .._bindings import cuda as drv

    def make() -> Kernel:
        module = _modules.get((ctx, key))
        if module is None:
            module = drv.cuModuleLoadData(image + (b"\0" if kind == "ptx" and not image.endswith(b"\0") else b""))
            _modules[(ctx, key)] = module
        return Kernel(name, drv.cuModuleGetFunction(module, symbol), device_id, key, arg_types)

    return once(_kernels, (ctx, key, name, arg_types), _lock, make)

