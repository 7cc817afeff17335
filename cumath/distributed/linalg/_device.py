"""What the GPU engines of the distributed matmul and solver share (cuBLASMp and cuSOLVERMp over NCCL).

- ``DeviceMatrix``: one rank's block-cyclic piece of a distributed matrix on this rank's GPU, column-major with
  the local row count as leading dimension (what both libraries read). CuPy arrays and PyTorch CUDA tensors are
  used in place where they already are column-major of the computation's dtype, else copied on the device;
  NumPy arrays and PyTorch CPU tensors are staged to device buffers (logged at INFO) and results copied back.
- ``Workspace``: device and host workspaces that grow to the largest size asked for, from the operation's
  allocator.
- ``resolve_stream``: the caller's stream, else the current stream of the operands' package.

Library handles and grids are context resources (made once per context, released by ``finalize()`` after the
operations' descriptors and before the NCCL communicator).
"""

from __future__ import annotations

import logging

import numpy as np

from ..._core import cuda
from ..._core.allocators import allocate, default_allocator
from ..._core.operand import adapter, wrap_operand
from ..._core.streams import default_stream, stream_handle
from .._operands import gather_layout
from ..distribution import BlockCyclic
from ._blocks import SUPPORTED_DTYPES, grid_order

__all__ = ["DeviceMatrix", "Result", "conjugated", "Workspace", "Descriptors", "resolve_stream", "operation_allocator",
           "grid_shape_order", "require_live", "CUDA_TYPE"]

logger = logging.getLogger(__name__)

#: cudaDataType_t of the supported dtypes (library_types.h)
CUDA_TYPE = {"float32": 0, "float64": 1, "complex64": 4, "complex128": 5}


def block_sizes(dist, global_shape) -> tuple[int, int]:
    return tuple(dist.block_sizes_for(global_shape))


class DeviceMatrix:
    """One rank's piece of a block-cyclic matrix, made ready for cuBLASMp / cuSOLVERMp on ``ctx.device_id``."""

    def __init__(self, ctx, x, dist, name: str, global_shape=None):
        if not isinstance(dist, BlockCyclic):
            raise TypeError(f"the distribution of {name} must be BlockCyclic or BlockNonCyclic, got "
                            f"{type(dist).__name__}")
        self.op = op = wrap_operand(x, name)
        if op.ndim != 2:
            raise ValueError(f"{name} must be a matrix (2-D); this rank's piece has {op.ndim} axes")
        if op.dtype not in SUPPORTED_DTYPES:
            raise TypeError(f"{name} has dtype {op.dtype}; the supported dtypes are {list(SUPPORTED_DTYPES)}")
        if op.device_id is not None and op.device_id != ctx.device_id:
            raise ValueError(f"{name} is on GPU {op.device_id}, but this rank runs on GPU {ctx.device_id} (the "
                             "device_id given to initialize): one process per GPU, operands on that GPU")
        group = ctx.process_group
        self.ctx, self.dist, self.name = ctx, dist, name
        self.global_shape, _ = gather_layout(group, op.shape, dist, name, global_shape)
        self.blocks = block_sizes(dist, self.global_shape)
        self.local_shape = tuple(op.shape)
        self.lld = max(1, self.local_shape[0])
        self.staged = op.device_id is None
        self.package = op.package
        self._copy = None  # keeps a device copy alive

    @property
    def dtype(self) -> str:
        return self.op.dtype

    def reset(self, x) -> None:
        op = wrap_operand(x, self.name)
        if tuple(op.shape) != self.local_shape or op.dtype != self.op.dtype or (op.device_id is None) != self.staged:
            where = "host" if self.staged else f"GPU {self.ctx.device_id}"
            raise ValueError(f"reset_operands: {self.name} has shape {tuple(op.shape)}, dtype {op.dtype} on "
                             f"{'host' if op.device_id is None else 'GPU'}; the planned one has "
                             f"{self.local_shape}, {self.op.dtype} on {where}")
        self.op = op

    def _column_major(self) -> bool:
        rows, cols = self.local_shape
        s0, s1 = self.op.strides
        return (rows <= 1 or s0 == 1) and (cols <= 1 or s1 == rows)

    def device_pointer(self, dtype: str, stream: int, *, copy: bool, conjugate: bool = False) -> int:
        """Address of this piece on the GPU, column-major of ``dtype``; a fresh device copy when ``copy`` (the
        library writes it), when the layout or dtype differs, or when ``conjugate`` (conjugated copy)."""
        op = self.op
        if not self.staged and not copy and not conjugate and op.dtype == dtype and self._column_major() \
                and op.ptr % 16 == 0:
            self._copy = None
            return op.ptr
        if self.staged:
            host = np.asarray(op.obj) if op.package == "numpy" else op.obj.detach().numpy()
            host = np.asfortranarray(np.conj(host) if conjugate else host, dtype=dtype)
            buf = device_buffer(self.ctx, max(host.nbytes, 1), stream)
            logger.info("staging %s (%s %s, this rank's piece) to GPU %d", self.name, dtype, self.local_shape,
                        self.ctx.device_id)
            cuda.copy(buf.device_ptr, host.ctypes.data, host.nbytes, cuda.H2D, stream, self.name)
            self._copy = (buf, host)  # the host copy lives until the stream has read it
            return buf.device_ptr
        ad = adapter(op.package)
        with ad.stream_context(op.device_id, stream):
            dst = ad.empty(self.local_shape, dtype, op.device_id, (1, 0))
            ad.copy_into(dst, conjugated(op.obj, op.package) if conjugate else op.obj)
        self._copy = dst
        return ad.pointer(dst)

    def copy_out(self, stream: int):
        """The device copy made by the last ``device_pointer(copy=True)`` (which the library overwrote) in the
        operand's package: the copy itself on GPU runs, a new host array for staged operands."""
        if not self.staged:
            return self._copy
        buf, host = self._copy
        out = np.empty(self.local_shape, dtype=host.dtype, order="F")
        cuda.copy(out.ctypes.data, buf.device_ptr, out.nbytes, cuda.D2H, stream, f"{self.name} (result)")
        cuda.synchronize(stream)
        if self.package == "torch":
            import torch

            return torch.from_numpy(out)
        return out


def conjugated(x, package: str):
    """The complex conjugate of array ``x`` of ``package`` as stored values (PyTorch's lazy conjugate resolved)."""
    x = x.conj()
    return x.resolve_conj() if package == "torch" else x


def device_buffer(ctx, nbytes: int, stream: int):
    """Device memory for staged operands and results (the CUDA runtime's stream-ordered pool)."""
    return allocate(default_allocator("numpy", ctx.device_id), nbytes, stream)


class Result:
    """A new result piece of ``shape`` (column-major) in ``package``: on the GPU for GPU packages, else a
    device buffer and its host array, copied back by ``finish()``."""

    def __init__(self, ctx, package: str, staged: bool, shape, dtype: str, stream: int):
        self.package, self.shape, self.dtype, self.stream = package, tuple(shape), dtype, stream
        if not staged:
            self.array = adapter(package).empty(self.shape, dtype, ctx.device_id, (1, 0))
            self.ptr = adapter(package).pointer(self.array)
            self.host = None
        else:
            self.host = np.empty(self.shape, dtype=dtype, order="F")
            self.buffer = device_buffer(ctx, max(self.host.nbytes, 1), stream)
            self.ptr = self.buffer.device_ptr

    def finish(self):
        if self.host is None:
            return self.array
        cuda.copy(self.host.ctypes.data, self.ptr, self.host.nbytes, cuda.D2H, self.stream, "result")
        cuda.synchronize(self.stream)
        self.buffer.free()
        if self.package == "torch":
            import torch

            return torch.from_numpy(self.host)
        return self.host


class Workspace:
    """Device and host workspaces that grow to the largest size asked for (device: the operation's allocator)."""

    def __init__(self, ctx, allocator):
        self.ctx, self.allocator = ctx, allocator
        self.device = None
        self.host = np.empty(0, dtype=np.uint8)

    def get(self, device_bytes: int, host_bytes: int, stream: int) -> tuple[int, int]:
        if self.device is None or self.device.size < device_bytes:
            if self.device is not None:
                self.device.free()
            self.device = allocate(self.allocator, max(device_bytes, 256), stream)
            logger.debug("distributed workspace: %d device bytes", device_bytes)
        if self.host.nbytes < host_bytes:
            self.host = np.empty(host_bytes, dtype=np.uint8)
        return self.device.device_ptr, (self.host.ctypes.data if host_bytes else 0)

    def free(self) -> None:
        if self.device is not None:
            self.device.free()
            self.device = None


def resolve_stream(stream, package: str, device_id: int) -> int:
    if stream is not None:
        return stream_handle(stream)
    return default_stream(package, device_id)


def operation_allocator(ctx, operand: DeviceMatrix, allocator=None):
    """The allocator of an operation's workspaces: the operands' package pool on the GPU, the CUDA runtime's
    pool for staged operands (a CPU-only PyTorch needs no CUDA)."""
    if allocator is not None:
        return allocator
    return default_allocator("numpy" if operand.staged else operand.package, ctx.device_id)


class Descriptors:
    """The matrix descriptors made on one library grid: destroyed by their operation, or at ``finalize()``
    before the grid (a context resource made right after the grid)."""

    def __init__(self, destroy):
        self.destroy = destroy
        self.live = {}  # descriptor -> its destroy function

    def add(self, desc: int, destroy=None) -> int:
        self.live[desc] = destroy or self.destroy
        return desc

    def drop(self, desc: int) -> None:
        destroy = self.live.pop(desc, None)
        if destroy is not None:
            destroy(desc)

    def release(self) -> None:
        for desc in list(self.live):
            self.drop(desc)


def require_live(ctx) -> None:
    """The library handles of ``ctx`` are gone after ``finalize()``: an operation made before must not use them."""
    from .._context import get_context
    from ...errors import InvalidStateError

    if get_context() is not ctx:
        raise InvalidStateError("this operation was made in a distributed context that finalize() has ended (its "
                                "NCCL communicator, library handles and grids are released); make a new one after "
                                "initialize()")


def grid_shape_order(dist) -> tuple[int, int, str]:
    grid = dist.process_grid
    if len(grid.shape) != 2:
        raise ValueError(f"distributed matrices need a 2-D ProcessGrid, got shape {grid.shape}")
    return grid.shape[0], grid.shape[1], grid_order(grid)
