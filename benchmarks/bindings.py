"""CUDA runtime and driver per-call benchmark: the calls on cumath's hot paths through ctypes and cuda-bindings.

cumath calls the CUDA runtime, the driver, NVRTC and nvJitLink through ``cuda-bindings`` (NVIDIA's Cython
binding). This script times, for each call that sits on a hot path (the current device, event record/query,
stream query and synchronisation, memset/memcpy async, pointer attributes, stream-ordered alloc/free, a kernel
launch), three routes in one process on the same handles:

  ctypes         the C function bound with ctypes (argtypes set, outputs by reference, the status tested), the
                 way cumath bound it before; its own small table below, over the libcudart / libcuda cumath loads
  cuda.bindings  the same function of ``cuda.bindings.runtime`` / ``.driver`` (the returned tuple unpacked, the
                 status tested)
  cumath         cumath's wrapper (``cumath._bindings.cudart`` / ``.cuda``): cuda.bindings plus the status
                 check that raises cumath's error class

Without a GPU every runtime call fails fast (cudaErrorInsufficientDriver): that times the binding overhead alone,
and the ``cumath`` row then includes raising and catching its CUDARuntimeError (about 1 us). With a GPU the calls
run on a real stream, event and buffer and succeed. Driver cases need libcuda (a GPU machine).

    python benchmarks/bindings.py                 # every case
    python benchmarks/bindings.py --case runtime --quick
"""

from __future__ import annotations

import ctypes
import os
import sys
from ctypes import POINTER, byref, c_int, c_size_t, c_uint, c_void_p

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import Bench, Skip, gpu_count, need  # noqa: E402

from cumath.errors import CumathError  # noqa: E402

bench = Bench("bindings", __doc__, fresh_cache=False)

# The ctypes route: signatures of cuda_runtime_api.h / cuda.h (CUDA 13).
_RT = {
    "cudaGetDevice": (c_int, [POINTER(c_int)]),
    "cudaGetDeviceCount": (c_int, [POINTER(c_int)]),
    "cudaDriverGetVersion": (c_int, [POINTER(c_int)]),
    "cudaStreamQuery": (c_int, [c_void_p]),
    "cudaStreamSynchronize": (c_int, [c_void_p]),
    "cudaEventRecord": (c_int, [c_void_p, c_void_p]),
    "cudaEventQuery": (c_int, [c_void_p]),
    "cudaMemsetAsync": (c_int, [c_void_p, c_int, c_size_t, c_void_p]),
    "cudaMemcpyAsync": (c_int, [c_void_p, c_void_p, c_size_t, c_int, c_void_p]),
    "cudaPointerGetAttributes": (c_int, [c_void_p, c_void_p]),
    "cudaMallocAsync": (c_int, [POINTER(c_void_p), c_size_t, c_void_p]),
    "cudaFreeAsync": (c_int, [c_void_p, c_void_p]),
}
_DRV = {
    "cuCtxGetCurrent": (c_int, [POINTER(c_void_p)]),
    "cuLaunchKernel": (c_int, [c_void_p, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_void_p,
                               c_void_p, c_void_p]),
}


def _ctypes_table(library: str, table: dict):
    from cumath._bindings._loader import load_library

    lib = load_library(library)
    out = {}
    for name, (res, args) in table.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = res, args
        out[name] = fn
    return out


class _Handles:
    """A stream, an event and two device buffers when a GPU is there; made-up handles otherwise."""

    def __init__(self):
        from cumath._bindings import cudart

        self.gpu = gpu_count() > 0
        if self.gpu:
            cudart.cudaSetDevice(0)
            self.stream = cudart.cudaStreamCreateWithFlags(cudart.cudaStreamNonBlocking)
            self.event = cudart.cudaEventCreateWithFlags(cudart.cudaEventDisableTiming)
            self.a, self.b = cudart.cudaMalloc(1 << 20), cudart.cudaMalloc(1 << 20)
        else:
            self.stream, self.event, self.a, self.b = 0x5000, 0x6000, 0x10000, 0x20000


_H = None


def handles() -> _Handles:
    global _H
    if _H is None:
        _H = _Handles()
    return _H


def _quiet(fn):
    """``fn`` with cumath's error (raised on every call without a GPU) caught."""
    def call():
        try:
            fn()
        except CumathError:
            pass
    return call


def _runtime_fns(call: str):
    """(ctypes, cuda.bindings, cumath) callables of one runtime call."""
    from cuda.bindings import runtime as rt

    from cumath._bindings import cudart

    h = handles()
    L = _ctypes_table("cudart", _RT)
    n, p = c_int(), c_void_p()
    attrs = ctypes.create_string_buffer(256)  # struct cudaPointerAttributes is 88 bytes
    d2d = rt.cudaMemcpyKind.cudaMemcpyDeviceToDevice
    routes = {
        "get-device": (lambda: L["cudaGetDevice"](byref(n)) or n.value,
                       lambda: rt.cudaGetDevice()[1],
                       cudart.cudaGetDevice),
        "driver-get-version": (lambda: L["cudaDriverGetVersion"](byref(n)) or n.value,
                               lambda: rt.cudaDriverGetVersion()[1],
                               cudart.cudaDriverGetVersion),
        "get-device-count": (lambda: L["cudaGetDeviceCount"](byref(n)) or n.value,
                             lambda: rt.cudaGetDeviceCount()[1],
                             cudart.cudaGetDeviceCount),
        "stream-query": (lambda: L["cudaStreamQuery"](h.stream),
                         lambda: rt.cudaStreamQuery(h.stream)[0],
                         lambda: cudart.cudaStreamQuery(h.stream)),
        "stream-synchronize": (lambda: L["cudaStreamSynchronize"](h.stream),
                               lambda: rt.cudaStreamSynchronize(h.stream)[0],
                               lambda: cudart.cudaStreamSynchronize(h.stream)),
        "event-record": (lambda: L["cudaEventRecord"](h.event, h.stream),
                         lambda: rt.cudaEventRecord(h.event, h.stream)[0],
                         lambda: cudart.cudaEventRecord(h.event, h.stream)),
        "event-query": (lambda: L["cudaEventQuery"](h.event),
                        lambda: rt.cudaEventQuery(h.event)[0],
                        lambda: cudart.cudaEventQuery(h.event)),
        "memset-async": (lambda: L["cudaMemsetAsync"](h.a, 0, 256, h.stream),
                         lambda: rt.cudaMemsetAsync(h.a, 0, 256, h.stream)[0],
                         lambda: cudart.cudaMemsetAsync(h.a, 0, 256, h.stream)),
        "memcpy-async": (lambda: L["cudaMemcpyAsync"](h.b, h.a, 256, 3, h.stream),
                         lambda: rt.cudaMemcpyAsync(h.b, h.a, 256, d2d, h.stream)[0],
                         lambda: cudart.cudaMemcpyAsync(h.b, h.a, 256, 3, h.stream)),
        "pointer-attributes": (lambda: L["cudaPointerGetAttributes"](attrs, h.a),
                               lambda: rt.cudaPointerGetAttributes(h.a)[1],
                               lambda: cudart.cudaPointerGetAttributes(h.a)),
        "malloc-free-async": (lambda: (L["cudaMallocAsync"](byref(p), 256, h.stream),
                                       L["cudaFreeAsync"](p.value, h.stream)),
                              lambda: rt.cudaFreeAsync(rt.cudaMallocAsync(256, h.stream)[1] or 0, h.stream),
                              lambda: cudart.cudaFreeAsync(cudart.cudaMallocAsync(256, h.stream), h.stream)),
    }
    c, b, w = routes[call]
    return {"ctypes": c, "cuda.bindings": b, "cumath": w if h.gpu or call in SUCCEED_WITHOUT_GPU else _quiet(w)}


def runtime_case(case, call: str):
    need("cuda.bindings.runtime")
    import cuda.bindings

    fns = _runtime_fns(call)
    h = handles()
    case.note(f"cuda-bindings {cuda.bindings.__version__}")
    if h.gpu:
        case.note("a GPU: the calls succeed on a real stream, event and buffer")
    elif call in SUCCEED_WITHOUT_GPU:
        case.note("no GPU: the call succeeds (it returns 0 without a driver), so cumath against cuda.bindings is the "
                  "wrapper's own cost; libcudart's cudaDriverGetVersion does more work without a driver than the "
                  "runtime linked into cuda-bindings, so the ctypes row is not binding overhead alone here")
    else:
        case.note("no GPU: every call fails fast with cudaErrorInsufficientDriver (binding overhead only); the cumath "
                  "row includes raising and catching its CUDARuntimeError")
    case.time(fns, rounds=case.rounds(7, 3), target=0.05)
    case.ratio("cuda.bindings", "ctypes")
    case.ratio("cumath", "ctypes")
    if h.gpu or call in SUCCEED_WITHOUT_GPU:
        case.ratio("cumath", "cuda.bindings")


SUCCEED_WITHOUT_GPU = ("driver-get-version",)
RUNTIME_CALLS = ("driver-get-version", "get-device", "get-device-count", "stream-query", "stream-synchronize",
                 "event-record", "event-query", "memset-async", "memcpy-async", "pointer-attributes",
                 "malloc-free-async")

for _call in RUNTIME_CALLS:
    bench.case(f"runtime/{_call}", f"cudart {_call}: ctypes, cuda-bindings, cumath's wrapper")(
        lambda case, _c=_call: runtime_case(case, _c))


def _gpu_or_skip():
    if gpu_count() == 0:
        raise Skip("needs a GPU (libcuda)")


@bench.case("driver/ctx-get-current", "cuCtxGetCurrent: ctypes, cuda-bindings, cumath's wrapper", gpu=True)
def ctx_case(case):
    _gpu_or_skip()
    from cuda.bindings import driver

    from cumath._bindings import cuda as drv

    handles()
    L = _ctypes_table("cuda", _DRV)
    ctx = c_void_p()
    drv.cuInit(0)
    case.time({"ctypes": lambda: L["cuCtxGetCurrent"](byref(ctx)) or ctx.value,
               "cuda.bindings": lambda: int(driver.cuCtxGetCurrent()[1]),
               "cumath": drv.cuCtxGetCurrent}, rounds=case.rounds(7, 3), target=0.05)
    case.ratio("cuda.bindings", "ctypes")
    case.ratio("cumath", "ctypes")


@bench.case("driver/launch", "cuLaunchKernel of a 1-block kernel: ctypes, cuda-bindings, cumath's Kernel.launch",
            gpu=True)
def launch_case(case):
    _gpu_or_skip()
    from cuda.bindings import driver

    from cumath._core.kernels import get_kernel

    h = handles()
    k = get_kernel('extern "C" __global__ void touch(float* y, int n) { if (threadIdx.x < n) y[threadIdx.x] = 1; }',
                   "touch", "Pi", device_id=0)
    L = _ctypes_table("cuda", _DRV)
    k._packer.pack((h.a, 32))
    params = k._packer.params
    addr = ctypes.addressof(params)
    from cumath._bindings import cudart

    sync = lambda: cudart.cudaStreamSynchronize(h.stream)  # noqa: E731
    case.time({"ctypes": lambda: L["cuLaunchKernel"](k.function, 1, 1, 1, 32, 1, 1, 0, h.stream, params, None),
               "cuda.bindings": lambda: driver.cuLaunchKernel(k.function, 1, 1, 1, 32, 1, 1, 0, h.stream, addr, 0),
               "cumath Kernel.launch": lambda: k.launch(1, 32, 0, h.stream, h.a, 32)},
              rounds=case.rounds(7, 3), target=0.05, sync=sync)
    case.note("Kernel.launch also packs its two arguments into the parameter buffer")
    case.ratio("cuda.bindings", "ctypes")
    case.ratio("cumath Kernel.launch", "ctypes")


if __name__ == "__main__":
    sys.exit(bench.main())
