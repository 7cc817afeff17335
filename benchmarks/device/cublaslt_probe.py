"""A self-contained cuBLASLt probe (ctypes, float32): every algorithm its heuristic offers for one GEMM, timed.

Used by benchmarks/matmul_tall_skinny.py and sweep_memory_bound.py to see why cuBLASLt's own choice is slow
for tall-skinny shapes and whether another of its algorithms (its "autotuning") does better. Values from
cublasLt.h / cublas_api.h / library_types.h of the nvidia-cublas 13.1.2.11 wheel. Independent of
cumath's cuBLASLt binding on purpose (a probe that keeps working while that binding changes).

    probe(formulation, ptrs, dims, alpha, beta, stream, timer) -> dict
"""

from __future__ import annotations

import ctypes
from ctypes import POINTER, byref, c_float, c_int, c_int32, c_int64, c_size_t, c_uint64, c_void_p

CUBLAS_COMPUTE_32F = 68
CUDA_R_32F = 0
DESC_TRANSA, DESC_TRANSB = 3, 4
LAYOUT_ORDER = 1
ORDER_COL, ORDER_ROW = 0, 1
PREF_MAX_WORKSPACE_BYTES = 1
CFG_ID, CFG_TILE_ID, CFG_SPLITK_NUM, CFG_STAGES_ID = 0, 1, 2, 6

TILES = ("UNDEFINED 8x8 8x16 16x8 8x32 16x16 32x8 8x64 16x32 32x16 64x8 32x32 32x64 64x32 32x128 64x64 128x32 "
         "64x128 128x64 64x256 128x128 256x64 64x512 128x256 256x128 512x64 64x96 96x64 96x128 128x160 160x128 "
         "192x128 128x192 128x96 32x256 256x32").split()
STAGES = ("UNDEFINED 16x1 16x2 16x3 16x4 16x5 16x6 32x1 32x2 32x3 32x4 32x5 32x6 64x1 64x2 64x3 64x4 64x5 64x6 "
          "128x1 128x2 128x3 128x4 128x5 128x6 32x10 8x4 16x10 8x5 8x3 8xAUTO 16xAUTO 32xAUTO 64xAUTO 128xAUTO "
          "256xAUTO 768xAUTO").split()


class Algo(ctypes.Structure):
    _fields_ = [("data", c_uint64 * 8)]


class HeuristicResult(ctypes.Structure):
    _fields_ = [("algo", Algo), ("workspaceSize", c_size_t), ("state", c_int), ("wavesCount", c_float),
                ("reserved", c_int * 4)]


_lib = None
_handle = None


def _lt():
    global _lib, _handle
    if _lib is None:
        import os
        import sys

        sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
        from cumath._bindings._loader import load_library, loaded_libraries

        load_library("cublasLt")
        # own function objects: argtypes set here must not change those of cumath's binding
        lib = ctypes.CDLL(loaded_libraries()["cublasLt"])
        P, R, A_ = c_void_p, POINTER(HeuristicResult), POINTER(Algo)
        for name, args in {
            "cublasLtCreate": [POINTER(c_void_p)],
            "cublasLtMatmulDescCreate": [POINTER(c_void_p), c_int, c_int],
            "cublasLtMatmulDescSetAttribute": [P, c_int, P, c_size_t],
            "cublasLtMatmulDescDestroy": [P],
            "cublasLtMatrixLayoutCreate": [POINTER(c_void_p), c_int, c_uint64, c_uint64, c_int64],
            "cublasLtMatrixLayoutSetAttribute": [P, c_int, P, c_size_t],
            "cublasLtMatrixLayoutDestroy": [P],
            "cublasLtMatmulPreferenceCreate": [POINTER(c_void_p)],
            "cublasLtMatmulPreferenceSetAttribute": [P, c_int, P, c_size_t],
            "cublasLtMatmulPreferenceDestroy": [P],
            "cublasLtMatmulAlgoGetHeuristic": [P, P, P, P, P, P, P, c_int, R, POINTER(c_int)],
            "cublasLtMatmulAlgoConfigGetAttribute": [A_, c_int, P, c_size_t, POINTER(c_size_t)],
            "cublasLtMatmul": [P, P, P, P, P, P, P, P, P, P, P, P, A_, P, c_size_t, P],
        }.items():
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = c_int, args
        _lib = lib
        h = c_void_p()
        _ok(_lib.cublasLtCreate(byref(h)), "cublasLtCreate")
        _handle = h
    return _lib


def _ok(status, what):
    if status != 0:
        raise RuntimeError(f"{what} failed with cuBLAS status {status}")


def _layout(rows, cols, ld, order):
    lay = c_void_p()
    _ok(_lt().cublasLtMatrixLayoutCreate(byref(lay), CUDA_R_32F, c_uint64(rows), c_uint64(cols), c_int64(ld)),
        "cublasLtMatrixLayoutCreate")
    o = c_int32(order)
    _ok(_lt().cublasLtMatrixLayoutSetAttribute(lay, LAYOUT_ORDER, byref(o), ctypes.sizeof(o)), "layout order")
    return lay


def _cfg(algo, attr):
    v = c_uint64(0)
    written = c_size_t()
    _lt().cublasLtMatmulAlgoConfigGetAttribute(byref(algo), attr, byref(v), 4, byref(written))
    return int(v.value & 0xFFFFFFFF)


def describe(algo) -> dict:
    tile, stages = _cfg(algo, CFG_TILE_ID), _cfg(algo, CFG_STAGES_ID)
    return {"algo_id": _cfg(algo, CFG_ID), "tile": TILES[tile] if tile < len(TILES) else f"id {tile}",
            "stages": STAGES[stages] if stages < len(STAGES) else f"id {stages}",
            "splitk": _cfg(algo, CFG_SPLITK_NUM)}


def probe(a_layout, b_layout, c_layout, ptrs, alpha, beta, stream, workspace, workspace_size, timer,
          requested=32, trans=(0, 0)) -> dict:
    """Time every heuristic algorithm for D = alpha op(A) op(B) + beta C; layouts are (rows, cols, ld, order).

    ``ptrs`` = (A, B, C, D) device addresses; ``timer(fn)`` returns seconds per call. Returns the heuristic's
    first choice and the fastest algorithm, each with its tile/stages/split-k, and all timings."""
    lib = _lt()
    desc = c_void_p()
    _ok(lib.cublasLtMatmulDescCreate(byref(desc), CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate")
    for attr, value in ((DESC_TRANSA, trans[0]), (DESC_TRANSB, trans[1])):
        v = c_int32(value)
        _ok(lib.cublasLtMatmulDescSetAttribute(desc, attr, byref(v), 4), "trans")
    la, lb, lc = _layout(*a_layout), _layout(*b_layout), _layout(*c_layout)
    pref = c_void_p()
    _ok(lib.cublasLtMatmulPreferenceCreate(byref(pref)), "cublasLtMatmulPreferenceCreate")
    ws = c_uint64(workspace_size)
    _ok(lib.cublasLtMatmulPreferenceSetAttribute(pref, PREF_MAX_WORKSPACE_BYTES, byref(ws), 8), "workspace")
    results = (HeuristicResult * requested)()
    count = c_int()
    status = lib.cublasLtMatmulAlgoGetHeuristic(_handle, desc, la, lb, lc, lc, pref, requested, results, byref(count))
    out = {"heuristic_status": status, "count": count.value, "algos": []}
    a_, b_ = c_float(alpha), c_float(beta)
    A, B, C, D = ptrs
    for i in range(count.value if status == 0 else 0):
        r = results[i]
        if r.state != 0 or r.workspaceSize > workspace_size:
            continue

        def run(r=r):
            s = lib.cublasLtMatmul(_handle, desc, byref(a_), A, la, B, lb, byref(b_), C, lc, D, lc, byref(r.algo),
                                   workspace, workspace_size, stream)
            if s != 0:
                raise RuntimeError(f"cublasLtMatmul failed with status {s}")

        try:
            seconds = timer(run)
        except RuntimeError as exc:
            out["algos"].append({"rank": i, "error": str(exc), **describe(r.algo)})
            continue
        out["algos"].append({"rank": i, "us": seconds * 1e6, "waves": r.wavesCount, "workspace": r.workspaceSize,
                             **describe(r.algo)})
    timed = [a for a in out["algos"] if "us" in a]
    if timed:
        out["first"] = timed[0] if timed[0]["rank"] == 0 else None
        out["best"] = min(timed, key=lambda a: a["us"])
    for lay in (la, lb, lc):
        lib.cublasLtMatrixLayoutDestroy(lay)
    lib.cublasLtMatmulPreferenceDestroy(pref)
    lib.cublasLtMatmulDescDestroy(desc)
    return out
