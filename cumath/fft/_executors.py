"""How an FFT runs, chosen once when it is planned: where the data lives versus where the engine runs.

- HostExecutor: host operand, CPU engine (FFTW or SciPy) on the caller's arrays.
- DeviceExecutor: GPU operand, cuFFT on the caller's arrays (one package copy where cuFFT cannot describe
  the layout, and for C2R, whose input cuFFT overwrites).
- HostToDeviceExecutor: host operand, cuFFT; staged through device buffers owned by the plan.
- DeviceToHostExecutor: GPU operand, CPU engine; staged through host buffers owned by the plan.
"""

from __future__ import annotations

import logging
import math
import os
import platform
import sys

import numpy as np

from .._core import cuda
from .._core.dtypes import ITEMSIZE
from .._core.frameworks.numpy import view as host_view
from .._core.layout import dense_strides, natural_perm
from .._core.logging import format_bytes
from .._core.operand import Operand, adapter
from ..memory import allocate
from ._traits import cufft_embed

__all__ = ["make_executor"]

logger = logging.getLogger(__name__)

_REFCOUNTS = platform.python_implementation() == "CPython"
_getrefcount = sys.getrefcount


def _embed(geom, extents, shape, strides):
    return cufft_embed(extents, [strides[a] for a in geom.axes],
                       [(shape[b], strides[b]) for b in geom.batch_axes])


# ----------------------------------------------------------------------------------------------- CPU engines

def cpu_engine(requested: str):
    """The CPU engine to use: FFTW, then MKL's FFTW interface, then SciPy (for 'auto')."""
    from .._bindings import fftw
    from ..errors import LibraryNotFoundError

    if requested == "auto":
        requested = os.environ.get("CUMATH_FFT_CPU_ENGINE", "auto")
    order = {"auto": ("fftw", "mkl", "scipy"), "fftw": ("fftw",), "mkl": ("mkl",), "scipy": ("scipy",)}.get(requested)
    if order is None:
        raise ValueError(f"CUMATH_FFT_CPU_ENGINE={requested!r} is not supported; use auto, fftw, mkl or scipy")
    last = None
    for engine in order:
        if engine == "scipy":
            return engine
        try:
            fftw.get_fftw("double", engine).version  # loads the library
            return engine
        except LibraryNotFoundError as exc:
            last = exc
    raise last


def _cpu_backend(geom, in_strides, out_strides, execution, options, log, auto_threads=True):
    engine = cpu_engine(options.cpu_engine)
    if engine == "scipy":
        from ._backends.scipy import ScipyPlan

        return ScipyPlan(geom.fft_type, geom, in_strides, out_strides, execution.num_threads, log)
    from ._backends.fftw import FFTWPlan

    precision = {"float32": "single", "float64": "double"}[geom.precision]
    return FFTWPlan(geom.fft_type, precision, engine, geom.transform_dims(in_strides, out_strides),
                    geom.batch_dims(in_strides, out_strides), ITEMSIZE[geom.in_dtype], ITEMSIZE[geom.out_dtype],
                    geom.inplace, execution.num_threads, options.planning_effort, log, auto_threads)


class HostExecutor:
    """Host operand, CPU engine, working on the caller's arrays."""

    def __init__(self, geom, op: Operand, execution, options, log, auto_threads=True):
        self.geom = geom
        self.adapter = adapter(op.package)
        self._in_buf = None
        in_strides = op.strides
        if geom.fft_type == "C2R":  # FFTW's C2R overwrites its input: work on a copy owned by the plan
            self._in_buf = np.empty(geom.in_shape, dtype=geom.in_dtype)
            self._in_ptr = self._in_buf.__array_interface__["data"][0]
            in_strides = dense_strides(geom.in_shape, range(len(geom.in_shape)))
        self.out_strides = in_strides if geom.inplace else dense_strides(geom.out_shape, geom.out_perm)
        self.backend = _cpu_backend(geom, in_strides, self.out_strides, execution, options, log, auto_threads)
        self.nbytes = self._in_buf.nbytes if self._in_buf is not None else 0
        self._new_out = self.adapter.empty_factory(geom.out_shape, geom.out_dtype, None, geom.out_perm)
        self._pointer = self.adapter.pointer
        self._run = self.backend.execute
        # The last NumPy result, reused as the next one once the caller holds no reference to it (nor to a
        # view of it): no allocation and, for large results, no fresh pages to fault in. NumPy only, where
        # every view holds a Python reference to its base; CPython only (reference counts).
        self._recycle = op.package == "numpy" and not geom.inplace and _REFCOUNTS
        self._last = None
        self._last_ptr = 0
        if self._recycle:
            self.nbytes += math.prod(geom.out_shape) * ITEMSIZE[geom.out_dtype]

    def prepare(self, sign):
        if hasattr(self.backend, "prepare"):
            self.backend.prepare(sign)

    def execute(self, op, sign, stream):
        if self.geom.inplace:
            self._run(op.ptr, op.ptr, sign)
            return op.obj
        out = self._last
        if out is not None and _getrefcount(out) == 3:  # self._last, out, and the call's argument
            out_ptr = self._last_ptr
        else:
            out = self._new_out()
            out_ptr = self._pointer(out)
            if self._recycle:
                self._last, self._last_ptr = out, out_ptr
        if self._in_buf is None:
            self._run(op.ptr, out_ptr, sign)
        else:
            np.copyto(self._in_buf, host_view(op))
            self._run(self._in_ptr, out_ptr, sign)
        return out

    def release_workspace(self):
        self._last = None

    def free(self):
        self._last = None
        self.backend.free()


# ----------------------------------------------------------------------------------------------- GPU engine

def _gpu_plan(geom, in_strides, out_strides, device_id, stream, allocator, log, callbacks=()):
    from ._backends.cufft import CufftPlan

    in_ext, out_ext = geom.extents
    in_layout = _embed(geom, in_ext, geom.in_shape, in_strides)
    out_layout = _embed(geom, out_ext, geom.out_shape, out_strides)
    return CufftPlan(geom.sizes, in_layout, out_layout, geom.in_dtype, geom.out_dtype, device_id, stream,
                     allocator, log, callbacks)


def _gpu_plan_with_callbacks(geom, in_strides, out_strides, device_id, stream, allocator, log, callbacks,
                             fusion, overwrite=False):
    """(cuFFT plan, separate passes or None): callbacks are fused into cuFFT or run as passes of their own
    (``fft/_separate.py``), as ``fusion`` ('auto', 'fused', 'separate') decides per callback. The passes
    index the declared layouts ``in_strides``/``out_strides``; cuFFT reads what the prolog pass writes."""
    passes = None
    if callbacks:
        from ..errors import LibraryError, LibraryNotFoundError
        from ._separate import CallbackPasses, split_callbacks

        fused, separate = split_callbacks(callbacks, geom, fusion, log)
        if separate:
            try:
                passes = CallbackPasses(separate, geom, in_strides, out_strides, device_id, stream, allocator,
                                        overwrite, log)
            except (LibraryError, LibraryNotFoundError) as exc:
                if fusion != "auto":
                    raise
                log.warning("could not build the separate callback pass(es), so they are fused into cuFFT "
                            "instead: %s", exc)
                fused = callbacks
            else:
                in_strides = passes.plan_in_strides
        callbacks = fused
    try:
        return _gpu_plan(geom, in_strides, out_strides, device_id, stream, allocator, log, callbacks), passes
    except BaseException:
        if passes is not None:
            passes.free()
        raise


def _c2r_in_place_ok(geom, in_strides, overwrite_input: bool) -> bool:
    """Whether cuFFT's C2R may work on the operand itself (it overwrites its input): only when the caller
    allows it and the operand is dense in the canonical order (batch axes outermost)."""
    return overwrite_input and tuple(in_strides) == dense_strides(geom.in_shape, geom.canonical_perm)


def _device_layouts(geom, in_strides, in_fixed: bool, overwrite_input: bool = False):
    """Choose the device-side memory orders: (input perm or None to keep ``in_strides``, output perm)."""
    in_ext, out_ext = geom.extents
    in_perm = None
    c2r_copy = geom.fft_type == "C2R" and not _c2r_in_place_ok(geom, in_strides, overwrite_input)
    if not in_fixed or c2r_copy or _embed(geom, in_ext, geom.in_shape, in_strides) is None:
        in_perm = natural_perm(in_strides)
        if geom.fft_type == "C2R" or _embed(geom, in_ext, geom.in_shape,
                                            dense_strides(geom.in_shape, in_perm)) is None:
            in_perm = geom.canonical_perm
    out_perm = geom.out_perm
    if geom.inplace:
        out_perm = in_perm
    elif _embed(geom, out_ext, geom.out_shape, dense_strides(geom.out_shape, out_perm)) is None:
        out_perm = geom.canonical_perm
    return in_perm, out_perm


def device_strides(geom, op_strides, host_operand: bool, overwrite_input: bool = False):
    """Strides (in elements) of the arrays cuFFT reads and writes for an operand with ``op_strides``: what
    a callback's ``offset`` indexes (``FFT.get_input_layout`` / ``get_output_layout``)."""
    in_perm, out_perm = _device_layouts(geom, op_strides, in_fixed=not host_operand,
                                        overwrite_input=overwrite_input)
    in_strides = tuple(op_strides) if in_perm is None else dense_strides(geom.in_shape, in_perm)
    out_strides = in_strides if geom.inplace else dense_strides(geom.out_shape, out_perm)
    return tuple(in_strides), tuple(out_strides)


class DeviceExecutor:
    """GPU operand, cuFFT on the caller's arrays."""

    def __init__(self, geom, op: Operand, execution, options, log, stream, allocator, in_fixed=True,
                 callbacks=()):
        self.geom = geom
        self.adapter = adapter(op.package)
        self.device_id = execution.device_id
        self.log = log
        self.callbacks = callbacks
        self.in_perm, self.out_perm = _device_layouts(geom, op.strides, in_fixed=in_fixed,
                                                      overwrite_input=options.overwrite_input)
        # cuFFT needs an R2C input aligned to its complex type; other operands are (copies are fresh arrays)
        direct_r2c = geom.fft_type == "R2C" and self.in_perm is None
        self._misaligned = 2 * ITEMSIZE[geom.in_dtype] - 1 if direct_r2c else 0
        self._copying = None  # the executor for misaligned operands: a dense, aligned copy (made on first use)
        self._args = (execution, options, log, stream, allocator)
        if self.in_perm is not None and not geom.inplace and geom.fft_type != "C2R":
            log.info("the operand's layout %s cannot be described to cuFFT: it is copied to a dense one per "
                     "execution", list(op.strides))
        in_strides = op.strides if self.in_perm is None else dense_strides(geom.in_shape, self.in_perm)
        out_strides = in_strides if geom.inplace else dense_strides(geom.out_shape, self.out_perm)
        self.in_strides = tuple(in_strides)
        self.natural_copy = not geom.inplace and tuple(self.out_perm) != tuple(geom.out_perm)
        if self.natural_copy:
            log.info("the natural result layout cannot be described to cuFFT: the result is computed in the "
                     "optimized layout and copied")
        # a separate C2R prolog may write over the operand where cuFFT would have read (and destroyed) it
        overwrite = geom.fft_type == "C2R" and self.in_perm is None
        self.backend, self.passes = _gpu_plan_with_callbacks(
            geom, in_strides, out_strides, self.device_id, stream, allocator, log, callbacks,
            options.callback_fusion, overwrite)
        passes = self.passes
        self._prolog = passes is not None and passes.prolog is not None
        self._epilog = passes.run_epilog if passes is not None and passes.epilog is not None else None
        self.nbytes = self.backend.workspace_size + (passes.nbytes if passes is not None else 0)
        self._simple = self.in_perm is None and not geom.inplace and not self.natural_copy and not self._prolog
        self._new_out = self.adapter.empty_factory(geom.out_shape, geom.out_dtype, self.device_id, self.out_perm)
        self._pointer = self.adapter.pointer
        self._run = self.backend.execute

    def prepare(self, sign):
        pass

    def execute(self, op, sign, stream):
        if op.ptr & self._misaligned:
            if self.callbacks:  # a copy would change the layout the callbacks index with their offset
                raise ValueError(f"the R2C operand at {op.ptr:#x} is not aligned to its complex type, and this "
                                 f"plan has callbacks: cuFFT cannot read it in place and a copy would change "
                                 f"the layout the callbacks see; pass an operand aligned to "
                                 f"{self._misaligned + 1} bytes")
            if self._copying is None:
                self.log.info("the R2C operand at %#x is not aligned to its complex type: cuFFT reads a copy",
                              op.ptr)
                self._copying = DeviceExecutor(self.geom, op, *self._args, in_fixed=False)
            return self._copying.execute(op, sign, stream)
        if self._simple:  # the hot path: cuFFT reads the operand and writes a new array of its package
            out = self._new_out()
            out_ptr = self._pointer(out)
            self._run(op.ptr, out_ptr, sign, stream)
            if self._epilog is not None:
                self._epilog(out_ptr, stream)
            return out
        geom, A = self.geom, self.adapter
        if self.in_perm is not None and not (self._prolog and op.strides == self.in_strides):
            work = A.empty(geom.in_shape, geom.in_dtype, self.device_id, self.in_perm)
            A.copy_into(work, op.obj)
            in_ptr = A.pointer(work)
        else:  # cuFFT reads the operand, or a separate prolog reads it in the layout it declares
            work, in_ptr = op.obj, op.ptr
        if geom.inplace:
            out, out_ptr = work, in_ptr
        else:
            out = A.empty(geom.out_shape, geom.out_dtype, self.device_id, self.out_perm)
            out_ptr = A.pointer(out)
        if self._prolog:
            in_ptr = self.passes.run_prolog(in_ptr, stream)
        self.backend.execute(in_ptr, out_ptr, sign, stream)
        if self._epilog is not None:
            self._epilog(out_ptr, stream)
        if geom.inplace:
            if work is not op.obj:
                A.copy_into(op.obj, work)
            return op.obj
        if self.natural_copy:
            res = A.empty(geom.out_shape, geom.out_dtype, self.device_id, geom.out_perm)
            A.copy_into(res, out)
            return res
        return out

    def release_workspace(self):
        self.backend.release_workspace()
        if self._copying is not None:
            self._copying.release_workspace()

    def free(self):
        self.backend.free()
        if self.passes is not None:
            self.passes.free()
        if self._copying is not None:
            self._copying.free()


class HostToDeviceExecutor:
    """Host operand, cuFFT: the plan owns device buffers; input and result cross the bus once each."""

    def __init__(self, geom, op: Operand, execution, options, log, stream, allocator, callbacks=()):
        self.geom = geom
        self.adapter = adapter(op.package)
        self.device_id = execution.device_id
        cuda.set_device(self.device_id)
        self.in_perm, self.out_perm = _device_layouts(geom, op.strides, in_fixed=False)
        self.in_strides = dense_strides(geom.in_shape, self.in_perm)
        out_strides = self.in_strides if geom.inplace else dense_strides(geom.out_shape, self.out_perm)
        self.in_bytes = math.prod(geom.in_shape) * ITEMSIZE[geom.in_dtype]
        self.out_bytes = math.prod(geom.out_shape) * ITEMSIZE[geom.out_dtype]
        self.d_in = self.d_out = self.passes = None
        self.backend, self.passes = _gpu_plan_with_callbacks(
            geom, self.in_strides, out_strides, self.device_id, stream, allocator, log, callbacks,
            options.callback_fusion)
        try:
            self.d_in = allocate(allocator, self.in_bytes, stream)
            self.d_out = self.d_in if geom.inplace else allocate(allocator, self.out_bytes, stream)
        except BaseException:  # a failed plan releases what it created
            self.free()
            raise
        self.nbytes = self.backend.workspace_size + self.in_bytes + (0 if geom.inplace else self.out_bytes)
        if self.passes is not None:
            self.nbytes += self.passes.nbytes
        log.info("host operand on GPU %d: staging buffers of %s in and %s out", self.device_id,
                 format_bytes(self.in_bytes), format_bytes(0 if geom.inplace else self.out_bytes))

    def prepare(self, sign):
        pass

    def execute(self, op, sign, stream):
        geom, A = self.geom, self.adapter
        src = host_view(op)
        if op.strides == self.in_strides:
            host_in = op.ptr
        else:
            tmp = np.empty([geom.in_shape[p] for p in self.in_perm], dtype=geom.in_dtype)
            np.copyto(tmp, src.transpose(self.in_perm))
            host_in = tmp.__array_interface__["data"][0]
            logger.info("host copy of the operand into the staging layout (%s)", format_bytes(self.in_bytes))
        cuda.copy(self.d_in.device_ptr, host_in, self.in_bytes, cuda.H2D, stream, "FFT operand")
        passes = self.passes
        in_ptr = self.d_in.device_ptr
        if passes is not None and passes.prolog is not None:
            in_ptr = passes.run_prolog(in_ptr, stream)
        self.backend.execute(in_ptr, self.d_out.device_ptr, sign, stream)
        if passes is not None and passes.epilog is not None:
            passes.run_epilog(self.d_out.device_ptr, stream)
        out_perm = self.in_perm if geom.inplace else self.out_perm
        target = op.obj if geom.inplace else None
        direct = (not geom.inplace and tuple(out_perm) == tuple(geom.out_perm)) or (
            geom.inplace and op.strides == self.in_strides)
        if direct:
            res = target if target is not None else A.empty(geom.out_shape, geom.out_dtype, None, out_perm)
            cuda.copy(A.pointer(res), self.d_out.device_ptr, self.out_bytes, cuda.D2H, stream, "FFT result")
            cuda.synchronize(stream)
            return res
        tmp = np.empty([geom.out_shape[p] for p in out_perm], dtype=geom.out_dtype)
        cuda.copy(tmp.__array_interface__["data"][0], self.d_out.device_ptr, self.out_bytes, cuda.D2H, stream,
                  "FFT result")
        cuda.synchronize(stream)
        res = target if target is not None else A.empty(geom.out_shape, geom.out_dtype, None, geom.out_perm)
        dst = res if op.package == "numpy" else np.asarray(res)
        np.copyto(dst.transpose(out_perm), tmp)
        return res

    def release_workspace(self):
        self.backend.release_workspace()

    def free(self):
        self.backend.free()
        if self.passes is not None:
            self.passes.free()
        for buf in (self.d_in, self.d_out):
            if buf is not None:
                buf.free()


class DeviceToHostExecutor:
    """GPU operand, CPU engine: staged through host buffers."""

    def __init__(self, geom, op: Operand, execution, options, log, stream, auto_threads=True):
        self.geom = geom
        self.adapter = adapter(op.package)
        self.device_id = op.device_id
        self.in_perm = natural_perm(op.strides)
        self.h_in = np.empty([geom.in_shape[p] for p in self.in_perm], dtype=geom.in_dtype).transpose(
            np.argsort(self.in_perm))
        host_op = adapter("numpy").wrap(self.h_in)
        self.host = HostExecutor(geom, host_op, execution, options, log, auto_threads)
        self.host_op = host_op
        self.nbytes = self.h_in.nbytes + self.host.nbytes

    def prepare(self, sign):
        self.host.prepare(sign)

    def execute(self, op, sign, stream):
        geom, A = self.geom, self.adapter
        src = op.obj
        if not op.is_dense_in(self.in_perm):
            src = A.empty(geom.in_shape, geom.in_dtype, self.device_id, self.in_perm)
            A.copy_into(src, op.obj)
        cuda.copy(self.host_op.ptr, A.pointer(src), self.h_in.nbytes, cuda.D2H, stream, "FFT operand")
        cuda.synchronize(stream)
        h_out = self.host.execute(self.host_op, sign, None)
        out_perm = natural_perm(h_out.strides)
        target = op.obj if geom.inplace else A.empty(geom.out_shape, geom.out_dtype, self.device_id, out_perm)
        if geom.inplace and not op.is_dense_in(self.in_perm):
            tmp = A.empty(geom.out_shape, geom.out_dtype, self.device_id, out_perm)
            cuda.copy(A.pointer(tmp), h_out.__array_interface__["data"][0], h_out.nbytes, cuda.H2D, stream,
                      "FFT result")
            A.copy_into(target, tmp)
        else:
            cuda.copy(A.pointer(target), h_out.__array_interface__["data"][0], h_out.nbytes, cuda.H2D, stream,
                      "FFT result")
        cuda.synchronize(stream)
        return target

    def release_workspace(self):
        pass

    def free(self):
        self.host.free()


def make_executor(geom, op, execution, options, log, stream=None, allocator=None, auto_threads=True,
                  callbacks=()):
    """Pick the executor for (where the operand lives, where the work runs). ``callbacks``: cuFFT LTO
    callbacks (GPU execution only)."""
    on_gpu = execution.name == "cuda"
    if on_gpu:
        if op.device_id is None:
            return HostToDeviceExecutor(geom, op, execution, options, log, stream, allocator, callbacks)
        return DeviceExecutor(geom, op, execution, options, log, stream, allocator, callbacks=callbacks)
    if op.device_id is None:
        return HostExecutor(geom, op, execution, options, log, auto_threads)
    return DeviceToHostExecutor(geom, op, execution, options, log, stream, auto_threads)
