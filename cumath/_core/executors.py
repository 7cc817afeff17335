"""How an operation runs, chosen once when it is planned: where its operands live versus where its engine runs.

    operands on   engine on   executor kind        what crosses the bus
    host          CPU         "host"               nothing
    GPU           GPU         "device"             nothing
    host          GPU         "host_to_device"     operands in, results out, through plan-owned device mirrors
    GPU           CPU         "device_to_host"     operands out, results in, through plan-owned host mirrors

A domain writes the executors of its engine's own space and builds the crossing ones from the mirrors below
(:class:`DeviceMirror`, :class:`HostMirror`): buffers owned by the plan, in a fixed memory order, whose every
copy across the bus is logged with its size (``_core/cuda.copy``), as is every reordering copy made on the way.
``kind_of`` names the kind, ``choose`` picks a domain's factory for it.
"""

from __future__ import annotations

import logging
import math

import numpy as np

from . import cuda
from .allocators import allocate
from .dtypes import ITEMSIZE
from .layout import dense_strides, inverse_perm, is_identity
from .logging import format_bytes
from .operand import Operand, adapter

__all__ = ["kind_of", "choose", "DeviceMirror", "HostMirror", "host_array"]

logger = logging.getLogger(__name__)

KINDS = {(False, False): "host", (True, True): "device", (False, True): "host_to_device",
         (True, False): "device_to_host"}


def kind_of(operands_on_gpu: bool, engine_on_gpu: bool) -> str:
    """The executor kind for operands in one space and an engine in another."""
    return KINDS[bool(operands_on_gpu), bool(engine_on_gpu)]


def choose(factories: dict, operands_on_gpu: bool, engine_on_gpu: bool, *args, **kwargs):
    """Build the executor of the right kind: ``factories[kind](*args, **kwargs)``."""
    kind = kind_of(operands_on_gpu, engine_on_gpu)
    factory = factories.get(kind)
    if factory is None:  # pragma: no cover - a domain that lacks a kind says so in its own checks
        raise ValueError(f"this operation has no {kind.replace('_', '-')} execution")
    return factory(*args, **kwargs)


def host_array(shape, dtype: str, perm=None):
    """A new NumPy array of ``shape`` whose memory runs in the order ``perm`` (outermost first)."""
    if perm is None or is_identity(perm):
        return np.empty(shape, dtype=dtype)
    return np.empty([shape[p] for p in perm], dtype=dtype).transpose(inverse_perm(perm))


def _ptr(x) -> int:
    return x.__array_interface__["data"][0]


class DeviceMirror:
    """A device buffer of the plan holding a host operand (or receiving a result) dense in the order ``perm``.

    ``upload(op)`` copies a host operand of any layout in (reordering it on the host first when its layout is
    not the mirror's); ``download(target)`` copies the buffer out into a host array of any layout. Copies are
    queued on the given stream; a download waits for it before the host reads the data.
    """

    def __init__(self, shape, dtype: str, perm, allocator, stream, what: str = "operand"):
        self.shape, self.dtype, self.what = tuple(shape), dtype, what
        self.perm = tuple(range(len(shape))) if perm is None else tuple(perm)
        self.strides = dense_strides(self.shape, self.perm)
        self.nbytes = math.prod(self.shape) * ITEMSIZE[dtype]
        self.buf = allocate(allocator, max(1, self.nbytes), stream)
        self.ptr = self.buf.device_ptr

    def _matches(self, op: Operand) -> bool:
        """Whether ``op``'s memory already runs in the mirror's order (size-1 axes may have any stride)."""
        return op.strides == self.strides or self.nbytes == 0 or op.is_dense_in(self.perm)

    def upload(self, op: Operand, stream) -> None:
        """Copy the host operand ``op`` (the mirror's shape and dtype, any layout) into the buffer."""
        if tuple(op.shape) != self.shape or op.dtype != self.dtype:
            raise ValueError(f"the {self.what} has shape {list(op.shape)} and dtype {op.dtype}; its staging buffer "
                             f"holds shape {list(self.shape)} and dtype {self.dtype}")
        keep = None
        if self._matches(op):
            src = op.ptr
        else:  # reordered by the operand's own package (NumPy has no bfloat16 or FP8 dtypes)
            pkg = adapter(op.package)
            keep = pkg.empty(self.shape, self.dtype, None, self.perm)
            pkg.copy_into(keep, op.obj)
            src = pkg.pointer(keep)
            if logger.isEnabledFor(logging.INFO):
                logger.info("host copy of the %s into the staging layout (%s)", self.what, format_bytes(self.nbytes))
        if self.nbytes:
            cuda.copy(self.ptr, src, self.nbytes, cuda.H2D, stream, self.what)
        del keep  # pageable host memory: the copy has read it when cudaMemcpyAsync returns

    def download(self, target, stream, wait: bool = True) -> None:
        """Copy the buffer into the host array ``target`` (a NumPy array or a CPU tensor's NumPy view)."""
        if self.nbytes == 0:
            return
        t_strides = tuple(s // target.itemsize for s in target.strides)
        if t_strides == self.strides:
            cuda.copy(_ptr(target), self.ptr, self.nbytes, cuda.D2H, stream, self.what)
            if wait:
                cuda.synchronize(stream)
            return
        tmp = host_array(self.shape, self.dtype, self.perm)
        cuda.copy(_ptr(tmp), self.ptr, self.nbytes, cuda.D2H, stream, self.what)
        cuda.synchronize(stream)
        np.copyto(target, tmp)
        if logger.isEnabledFor(logging.INFO):
            logger.info("host copy of the %s out of the staging layout (%s)", self.what, format_bytes(self.nbytes))

    def download_into(self, ptr: int, stream, wait: bool = True) -> None:
        """Copy the buffer to host memory at ``ptr`` that has the mirror's layout (dense in ``perm``): a new
        host array the caller made in that order, of any package (no view of it needed)."""
        if self.nbytes:
            cuda.copy(ptr, self.ptr, self.nbytes, cuda.D2H, stream, self.what)
            if wait:
                cuda.synchronize(stream)

    def free(self) -> None:
        buf, self.buf = self.buf, None
        if buf is not None:
            buf.free()


class HostMirror:
    """A host array of the plan holding a GPU operand (or a result bound for the GPU) dense in ``perm``.

    ``fetch(op, pkg)`` copies a GPU operand in (reordered on the GPU by its package first when its layout is
    not the mirror's); ``store(target, pkg)`` copies the array out into a GPU array of the package.
    ``operand`` is the mirror as an Operand, for the host engine.
    """

    def __init__(self, shape, dtype: str, perm=None, what: str = "operand"):
        from .frameworks.numpy import wrap

        self.shape, self.dtype, self.what = tuple(shape), dtype, what
        self.perm = tuple(range(len(shape))) if perm is None else tuple(perm)
        self.array = host_array(self.shape, dtype, self.perm)
        self.operand = wrap(self.array)
        self.nbytes = self.array.nbytes

    def fetch(self, op: Operand, pkg, stream, wait: bool = True) -> None:
        src, keep = op.ptr, None
        if not op.is_dense_in(self.perm):
            keep = pkg.empty(self.shape, self.dtype, op.device_id, self.perm)
            pkg.copy_into(keep, op.obj)
            src = pkg.pointer(keep)
        if self.nbytes:
            cuda.copy(self.operand.ptr, src, self.nbytes, cuda.D2H, stream, self.what)
        if wait:
            cuda.synchronize(stream)
        del keep

    def store(self, target, pkg, device_id, stream, source=None, wait: bool = True) -> None:
        """Copy ``source`` (default: the mirror's array; any host array of the mirror's shape) into the GPU
        array ``target`` of package ``pkg``."""
        src = self.array if source is None else source
        perm = tuple(np.argsort([-s for s in src.strides], kind="stable")) if src.ndim else ()
        dense_src = tuple(s // src.itemsize for s in src.strides) == dense_strides(self.shape, perm)
        t_strides = pkg_strides(target, pkg)
        t_op_perm = tuple(np.argsort([-s for s in t_strides], kind="stable")) if src.ndim else ()
        if dense_src and t_op_perm == perm and (t_strides == dense_strides(self.shape, perm) or src.size <= 1):
            if src.nbytes:
                cuda.copy(pkg.pointer(target), _ptr(src), src.nbytes, cuda.H2D, stream, self.what)
        else:
            tmp = pkg.empty(self.shape, self.dtype, device_id, perm if dense_src else None)
            if not dense_src:
                src = np.ascontiguousarray(src)
            if src.nbytes:
                cuda.copy(pkg.pointer(tmp), _ptr(src), src.nbytes, cuda.H2D, stream, self.what)
            pkg.copy_into(target, tmp)
        if wait:
            cuda.synchronize(stream)


def pkg_strides(x, pkg=None) -> tuple:
    """Element strides of a GPU array of the package whose adapter is ``pkg``: the adapter's ``array_strides``
    where it has one (JAX arrays have no strides), else a PyTorch tensor's ``stride()`` or NumPy-style byte
    strides (CuPy)."""
    own = getattr(pkg, "array_strides", None)
    if own is not None:
        return tuple(own(x))
    stride = getattr(x, "stride", None)
    if callable(stride):  # torch
        return tuple(stride())
    return tuple(s // x.itemsize for s in x.strides)
