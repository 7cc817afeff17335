"""Probe (issue 4 groundwork): can a Python function compiled by numba-cuda to LTO-IR be linked into a cuFFT
plan as a load (prolog) and a store (epilog) callback on this machine? Prints what works and what fails."""
import ctypes
import sys
import time

import os

import numpy as np

if os.environ.get("PRELOAD"):  # a newer nvJitLink loaded first, so cuFFT's dlopen of the soname finds it
    ctypes.CDLL(os.environ["PRELOAD"], mode=ctypes.RTLD_GLOBAL)

sys.path.insert(0, ".")
if not hasattr(np, "row_stack"):  # numba-cuda 0.30.4 still refers to np.row_stack, removed in NumPy 2.5
    np.row_stack = np.vstack

import cupy as cp  # noqa: E402
from numba import cuda, types  # noqa: E402

from cumath._bindings import cufft  # noqa: E402
from cumath._bindings.cudart import cudaDataType as T  # noqa: E402

print("numba-cuda", __import__("numba_cuda").__version__ if "numba_cuda" in sys.modules or True else "?")
cc = cuda.get_current_device().compute_capability
print("cc", cc, "cufft version", cufft.cufftGetVersion())


def prolog(data_in, offset, user_info, shared):
    return data_in[offset] * 2


def epilog(data_out, offset, element, user_info, shared):
    data_out[offset] = element * 3


c64p = types.CPointer(types.complex64)
results = {}
keep = []
for kind, fn, sig, cbtype in (
    ("load", prolog, types.complex64(c64p, types.uint64, types.voidptr, types.voidptr), cufft.cufftXtCallbackType.CUFFT_CB_LD_COMPLEX),
    ("store", epilog, types.void(c64p, types.uint64, types.complex64, types.voidptr, types.voidptr), cufft.cufftXtCallbackType.CUFFT_CB_ST_COMPLEX),
):
    # cuFFT declares the callback as a C++ function and links against its mangled name (Itanium ABI):
    # load(void*, unsigned long long, void*, void*), store(void*, unsigned long long, float2, void*, void*).
    plain = f"cumath_{kind}_cb"
    name = f"_Z{len(plain)}{plain}Pvy" + ("S_S_" if kind == "load" else "6float2S_S_")
    name_bytes = plain.encode()  # cuFFT keeps the pointer: the bytes must outlive the plan
    keep.append(name_bytes)
    t0 = time.perf_counter()
    try:
        code, _ = cuda.compile(fn, sig, device=True, abi="c", abi_info={"abi_name": name}, output="ltoir", cc=cc)
    except Exception as exc:
        print(kind, "compile FAILED:", type(exc).__name__, exc)
        continue
    print(kind, f"compiled to {len(code)} bytes of LTO-IR in {time.perf_counter() - t0:.2f} s")
    n, batch = 1024, 8
    x = (cp.random.standard_normal((batch, n)) + 1j * cp.random.standard_normal((batch, n))).astype(cp.complex64)
    y = cp.empty_like(x)
    plan = cufft.cufftCreate()
    try:
        buf = ctypes.create_string_buffer(bytes(code), len(code))
        cufft.cufftXtSetJITCallback(plan, name_bytes, ctypes.addressof(buf), len(code), cbtype, 0)
        t0 = time.perf_counter()
        ws = cufft.cufftXtMakePlanMany(plan, 1, [n], [n], 1, n, T.CUDA_C_32F, [n], 1, n, T.CUDA_C_32F, batch,
                                       T.CUDA_C_32F)
        print(kind, f"planned (workspace {ws}) in {time.perf_counter() - t0:.2f} s")
        cufft.cufftXtExec(plan, x.data.ptr, y.data.ptr, -1)
        cp.cuda.Device().synchronize()
        ref = cp.fft.fft(x.astype(cp.complex128), axis=-1) * (2 if kind == "load" else 3)
        err = float(cp.linalg.norm(y - ref) / cp.linalg.norm(ref))
        print(kind, f"executed: relative error {err:.1e}", "OK" if err < 1e-5 else "WRONG")
        results[kind] = err
    except Exception as exc:
        print(kind, "FAILED:", type(exc).__name__, exc)
    finally:
        cufft.cufftDestroy(plan)
print("results", results)
