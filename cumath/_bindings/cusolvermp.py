"""ctypes bindings of cuSOLVERMp (libcusolverMp), 1:1 with the C functions cumath uses.

Signatures and enum values were read from ``cusolverMp.h`` of the ``nvidia-cusolvermp-cu13`` 0.9.1 wheel
(CUSOLVERMP_VERSION 901). Statuses are ``cusolverStatus_t`` (from ``cusolver``), raised as ``CUSOLVERMpError``.
Grids are made from an NCCL communicator; matrices are 2-D block-cyclic descriptors of each rank's column-major
local part; pivots are ``int64_t`` on the device; ``info`` is a device ``int``.

Nothing is loaded at import time. Handles, grids, descriptors, pointers and streams are Python ints.
"""

from __future__ import annotations

import enum
from ctypes import POINTER, byref, c_int, c_int32, c_int64, c_size_t, c_uint32, c_void_p

from ..errors import CUSOLVERMpError
from . import nccl
from ._loader import LazyFunctions
from ._status import make_checker
from .cusolver import cusolverStatus_t

__all__ = ["CUSOLVERMP_VERSION", "TABLE", "GridMapping", "check", "cusolverMpCreate", "cusolverMpDestroy",
           "cusolverMpSetStream", "cusolverMpGetVersion", "cusolverMpCreateDeviceGrid", "cusolverMpDestroyGrid",
           "cusolverMpCreateMatrixDesc", "cusolverMpDestroyMatrixDesc", "cusolverMpGetrf_bufferSize",
           "cusolverMpGetrf", "cusolverMpGetrs_bufferSize", "cusolverMpGetrs", "cusolverMpNUMROC"]

CUSOLVERMP_VERSION = 901  # of the header the values below were read from (0.9.1)


class GridMapping(enum.IntEnum):
    """cusolverMpGridMapping_t."""

    COL_MAJOR = 0
    ROW_MAJOR = 1


_p_void = POINTER(c_void_p)
_p_size = POINTER(c_size_t)
_i64 = c_int64

TABLE = {
    # handle, deviceId, stream
    "cusolverMpCreate": (c_int, [_p_void, c_int, c_void_p]),
    "cusolverMpDestroy": (c_int, [c_void_p]),
    "cusolverMpSetStream": (c_int, [c_void_p, c_void_p]),
    "cusolverMpGetVersion": (c_int, [c_void_p, POINTER(c_int)]),
    # handle, grid, comm, numRowDevices, numColDevices, mapping
    "cusolverMpCreateDeviceGrid": (c_int, [c_void_p, _p_void, c_void_p, c_int32, c_int32, c_int]),
    "cusolverMpDestroyGrid": (c_int, [c_void_p]),
    # desc, grid, dataType, M, N, MB, NB, RSRC, CSRC, LLD
    "cusolverMpCreateMatrixDesc": (c_int, [_p_void, c_void_p, c_int, _i64, _i64, _i64, _i64, c_uint32, c_uint32,
                                           _i64]),
    "cusolverMpDestroyMatrixDesc": (c_int, [c_void_p]),
    # handle, M, N, d_A, IA, JA, descA, d_ipiv, computeType, dwork size out, hwork size out
    "cusolverMpGetrf_bufferSize": (c_int, [c_void_p, _i64, _i64, c_void_p, _i64, _i64, c_void_p, c_void_p, c_int,
                                           _p_size, _p_size]),
    # ..., computeType, d_work, dsize, h_work, hsize, info
    "cusolverMpGetrf": (c_int, [c_void_p, _i64, _i64, c_void_p, _i64, _i64, c_void_p, c_void_p, c_int, c_void_p,
                                c_size_t, c_void_p, c_size_t, c_void_p]),
    # handle, trans, N, NRHS, d_A, IA, JA, descA, d_ipiv, d_B, IB, JB, descB, computeType, sizes out
    "cusolverMpGetrs_bufferSize": (c_int, [c_void_p, c_int, _i64, _i64, c_void_p, _i64, _i64, c_void_p, c_void_p,
                                           c_void_p, _i64, _i64, c_void_p, c_int, _p_size, _p_size]),
    "cusolverMpGetrs": (c_int, [c_void_p, c_int, _i64, _i64, c_void_p, _i64, _i64, c_void_p, c_void_p, c_void_p,
                                _i64, _i64, c_void_p, c_int, c_void_p, c_size_t, c_void_p, c_size_t, c_void_p]),
    "cusolverMpNUMROC": (_i64, [_i64, _i64, c_uint32, c_uint32, c_uint32]),
}

# libcusolverMp needs cuBLAS(Lt), cuSOLVER, NCCL and cuBLASMp: loaded first (see cublasmp)
_L = LazyFunctions("cusolvermp", TABLE, depends=("cudart", "cublasLt", "cublas", "cusolver", "nccl",
                                                  "cublasmp"), check=lambda: nccl.require("cuSOLVERMp"))
check = make_checker(CUSOLVERMpError, cusolverStatus_t)


def cusolverMpCreate(device_id: int, stream: int) -> int:
    obj = c_void_p()
    check(_L.cusolverMpCreate(byref(obj), device_id, stream))
    return obj.value or 0


def cusolverMpDestroy(handle: int) -> None:
    check(_L.cusolverMpDestroy(handle))


def cusolverMpSetStream(handle: int, stream: int) -> None:
    check(_L.cusolverMpSetStream(handle, stream))


def cusolverMpGetVersion(handle: int) -> int:
    v = c_int(0)
    check(_L.cusolverMpGetVersion(handle, byref(v)))
    return v.value


def cusolverMpCreateDeviceGrid(handle: int, comm: int, nprow: int, npcol: int, mapping: int) -> int:
    """A grid of ``nprow x npcol`` ranks of NCCL communicator ``comm`` (collective)."""
    obj = c_void_p()
    check(_L.cusolverMpCreateDeviceGrid(handle, byref(obj), comm, nprow, npcol, int(mapping)))
    return obj.value or 0


def cusolverMpDestroyGrid(grid: int) -> None:
    check(_L.cusolverMpDestroyGrid(grid))


def cusolverMpCreateMatrixDesc(grid: int, dtype: int, m: int, n: int, mb: int, nb: int, rsrc: int, csrc: int,
                               lld: int) -> int:
    obj = c_void_p()
    check(_L.cusolverMpCreateMatrixDesc(byref(obj), grid, int(dtype), m, n, mb, nb, rsrc, csrc, lld))
    return obj.value or 0


def cusolverMpDestroyMatrixDesc(desc: int) -> None:
    check(_L.cusolverMpDestroyMatrixDesc(desc))


def cusolverMpGetrf_bufferSize(handle: int, m: int, n: int, a: int, ia: int, ja: int, desc_a: int, ipiv: int,
                               compute_type: int) -> tuple[int, int]:
    dev, host = c_size_t(0), c_size_t(0)
    check(_L.cusolverMpGetrf_bufferSize(handle, m, n, a, ia, ja, desc_a, ipiv, int(compute_type), byref(dev),
                                        byref(host)))
    return dev.value, host.value


def cusolverMpGetrf(handle: int, m: int, n: int, a: int, ia: int, ja: int, desc_a: int, ipiv: int, compute_type: int,
                    d_work: int, d_size: int, h_work: int, h_size: int, info: int) -> None:
    """LU with partial pivoting of sub(A), in place; ``ipiv`` (device int64) and ``info`` (device int) out."""
    check(_L.cusolverMpGetrf(handle, m, n, a, ia, ja, desc_a, ipiv, int(compute_type), d_work, d_size, h_work, h_size,
                             info), f"LU of a {m}x{n} matrix")


def cusolverMpGetrs_bufferSize(handle: int, trans: int, n: int, nrhs: int, a: int, ia: int, ja: int, desc_a: int,
                               ipiv: int, b: int, ib: int, jb: int, desc_b: int, compute_type: int) -> tuple[int, int]:
    dev, host = c_size_t(0), c_size_t(0)
    check(_L.cusolverMpGetrs_bufferSize(handle, int(trans), n, nrhs, a, ia, ja, desc_a, ipiv, b, ib, jb, desc_b,
                                        int(compute_type), byref(dev), byref(host)))
    return dev.value, host.value


def cusolverMpGetrs(handle: int, trans: int, n: int, nrhs: int, a: int, ia: int, ja: int, desc_a: int, ipiv: int,
                    b: int, ib: int, jb: int, desc_b: int, compute_type: int, d_work: int, d_size: int, h_work: int,
                    h_size: int, info: int) -> None:
    """Solve op(A) X = B with the factors of ``cusolverMpGetrf``; B is overwritten by X."""
    check(_L.cusolverMpGetrs(handle, int(trans), n, nrhs, a, ia, ja, desc_a, ipiv, b, ib, jb, desc_b,
                             int(compute_type), d_work, d_size, h_work, h_size, info), f"solve with {nrhs} columns")


def cusolverMpNUMROC(n: int, nb: int, iproc: int, isrcproc: int, nprocs: int) -> int:
    return int(_L.cusolverMpNUMROC(n, nb, iproc, isrcproc, nprocs))
