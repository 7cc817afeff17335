"""How an FFT runs, chosen once when it is planned (``_core.executors.choose``): where the operand lives
versus where the engine runs.

- HostExecutor ("host"): host operand, CPU engine (``_backends`` registry) on the caller's arrays.
- DeviceExecutor ("device"): GPU operand, cuFFT on the caller's arrays (one package copy where cuFFT cannot
  describe the layout, and for C2R, whose input cuFFT overwrites).
- HostToDeviceExecutor ("host_to_device"): host operand, cuFFT, through plan-owned device mirrors.
- DeviceToHostExecutor ("device_to_host"): GPU operand, CPU engine, through plan-owned host mirrors.

Every executor has ``prepare(sign)``, ``execute(op, sign, stream)`` (returns the result),
``release_workspace()``, ``free()`` and ``nbytes``. The hot paths call the engine's raw native function.
"""

from __future__ import annotations

import functools
import logging
import math
import os
from dataclasses import dataclass

import numpy as np

from .._core import cuda
from .._core.dtypes import ITEMSIZE
from .._core._fast import dev_runner, hot_runner, native_pointer
from .._core.executors import DeviceMirror, HostMirror, choose
from .._core.plan_cache import hot_numpy
from .._core.frameworks.numpy import from_pointer, pointer as host_pointer, strided_empty, view as host_view
from .._core.layout import dense_strides, natural_perm
from .._core.logging import format_bytes
from .._core.operand import Operand, adapter
from .._core.overlap import has_negative_stride
from .._core.recycle import Recycler, compiled_reuse
from ..memory import default_allocator
from ._backends import cpu_backend, cpu_engine
from ._traits import cufft_layout, device_layouts, device_strides

# device_strides (fft/_traits) and cpu_engine (fft/_backends) stay importable from here for cumath._info, the
# benchmarks and the callback tests
__all__ = ["Setup", "make_executor", "device_strides", "cpu_engine"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Setup:
    """What an executor is built from besides the geometry and the operand."""

    execution: object  # ExecutionCPU / ExecutionCUDA
    options: object  # FFTOptions
    log: logging.Logger
    stream: int | None = None
    auto_threads: bool = True  # the CPU thread count is cumath's choice
    callbacks: tuple = ()  # cuFFT LTO callbacks (fft/_callbacks.AttachedCallback), GPU execution only
    reuse_results: bool = True  # a stateful plan's compiled runner may reuse dropped results (_core/recycle.py)

    def allocator(self, package: str):
        return self.options.allocator or default_allocator(package, self.execution.device_id)


class _Kept:
    """A fixed result buffer with a Recycler's interface (the host mirror a staged CPU plan writes)."""

    nbytes = held_bytes = 0

    def __init__(self, op: Operand):
        self._pair = (op.obj, op.ptr)

    def take(self, stream=None):
        return self._pair

    def clear(self) -> None:
        pass


# ----------------------------------------------------------------------------------------------- CPU engines

def _check_fits_in_memory(geom) -> None:
    """A clear MemoryError, before any planning, for a result larger than the machine's memory (an operand with
    zero strides can describe a transform of billions of points in a few bytes)."""
    need = math.prod(geom.out_shape) * ITEMSIZE[geom.out_dtype]
    try:
        have = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return
    if need > have:
        raise MemoryError(f"the result of this FFT ({list(geom.out_shape)} {geom.out_dtype}) would take "
                          f"{format_bytes(need)}, more than this machine's {format_bytes(have)} of memory; "
                          f"transform smaller batches")


class HostExecutor:
    """Host operand, CPU engine, working on the caller's arrays. ``out``: a host Operand the plan writes every
    result into (default: a new array of the operand's package per result, reused once the caller drops it)."""

    def __init__(self, geom, op: Operand, setup: Setup, out: Operand | None = None):
        self.inplace = geom.inplace
        self._in_copy = None
        self.nbytes = 0
        in_strides = op.strides
        _check_fits_in_memory(geom)
        # the engines need element-aligned memory; an operand that is not (np.frombuffer at an odd offset) is
        # transformed through an aligned copy of the same layout, decided per call from its pointer
        self._elem_mask = ITEMSIZE[geom.precision] - 1
        self._aligned = None  # (copy, its pointer) of an unaligned operand, made when first needed
        self._staged = False  # in place through a copy (FFTW's planner cannot take negative strides in place)
        if geom.fft_type == "C2R":  # FFTW's C2R overwrites its input: work on a copy owned by the plan
            self._in_copy = np.empty(geom.in_shape, dtype=geom.in_dtype)
            self._in_ptr = host_pointer(self._in_copy)
            self.nbytes = self._in_copy.nbytes
            in_strides = dense_strides(geom.in_shape, range(len(geom.in_shape)))
        elif geom.inplace and has_negative_stride(op.shape, in_strides):
            self._staged = True
            in_strides = dense_strides(geom.in_shape, natural_perm(in_strides))
        self._plan_in_strides = in_strides
        out_strides = in_strides if geom.inplace else dense_strides(geom.out_shape, geom.out_perm)
        self.backend = cpu_backend(setup.options.cpu_engine).plan(
            geom, in_strides, out_strides, setup.execution.num_threads, setup.auto_threads, setup.options, setup.log)
        self.nbytes += getattr(self.backend, "nbytes", 0)  # buffers the engine's plan holds (DFTI's halves)
        self._entries = self.backend.entries
        self._mask = self.backend.align_mask
        self._any = self.backend.execute
        self.results = None
        if out is not None:
            self.results = _Kept(out)
        elif not geom.inplace:
            A = adapter(op.package)
            out_bytes = math.prod(geom.out_shape) * ITEMSIZE[geom.out_dtype]
            self.results = Recycler(op.package, A.empty_factory(geom.out_shape, geom.out_dtype, None, geom.out_perm),
                                    A.pointer, out_bytes, device=False)
            self.nbytes += self.results.nbytes
        self._take = None if self.results is None else self.results.take
        self._runner = None
        spec = self.hot_spec() if hot_runner is not None else None
        if spec is not None:  # execute() as one C call (HostExecutor.execute for what it declines)
            hot_numpy()
            keep = self.results.snapshot is not None or (setup.reuse_results and compiled_reuse(out_bytes))
            self._runner = self.execute = hot_runner(*spec, HostExecutor.execute.__get__(self), keep)
            if self.runner_reuses:  # the runner keeps (at most two); the Python path's rare calls keep none
                self._out_bytes = out_bytes
                self.nbytes += 2 * out_bytes - self.results.nbytes
                self.results.stop()

    def prepare(self, sign):
        self.backend.prepare(sign)

    def hot_spec(self):
        """``(execs, mask, elem_mask, any, alloc, alloc_args)`` for the compiled hit path (``_core/_fast``), or
        None where it cannot run this executor's calls exactly as :meth:`execute` does: it serves the out-of-place
        transform of an element-aligned operand into a NumPy array from ``numpy.empty`` (or one it made before
        that nothing else reaches: ``_core/recycle.py``), calling the engine's planned function for the
        SIMD-aligned case and ``self._any`` for every other."""
        r = self.results
        if self.inplace or self._in_copy is not None or self._staged or type(r) is not Recycler:
            return None
        new = r.new
        if type(new) is not functools.partial or new.keywords or new.func is not np.empty:
            return None  # an allocator other than numpy.empty
        return self._entries, self._mask, self._elem_mask, self._any, new.func, new.args

    def _aligned_copy(self, op) -> int:
        """The operand copied into an aligned buffer of the plan's input layout; returns its pointer."""
        if self._aligned is None:
            self._aligned = strided_empty(op.shape, self._plan_in_strides, op.dtype)
        np.copyto(self._aligned[0], host_view(op))
        return self._aligned[1]

    def _through_copy(self, op, sign):
        """An in-place transform run on an aligned copy (in the plan's layout), written back into the operand."""
        ptr = self._aligned_copy(op)
        self._any(ptr, ptr, sign)
        np.copyto(host_view(op), self._aligned[0])
        return op.obj

    def execute(self, op, sign, stream=None):
        if self.inplace:
            out = op.obj
            in_ptr = out_ptr = op.ptr
            if self._staged or in_ptr & self._elem_mask:
                return self._through_copy(op, sign)
        else:
            out, out_ptr = self._take()
            in_ptr = op.ptr
            if self._in_copy is not None:
                np.copyto(self._in_copy, host_view(op))
                in_ptr = self._in_ptr
            elif in_ptr & self._elem_mask:
                in_ptr = self._aligned_copy(op)
        entry = self._entries.get(sign)
        if entry is None or (in_ptr | out_ptr) & self._mask:
            self._any(in_ptr, out_ptr, sign)  # plans what is missing, for any alignment
        else:
            entry[0](entry[1], in_ptr, out_ptr)
        return out

    @property
    def runner_reuses(self) -> bool:
        """Whether the compiled runner keeps and hands out again the results its caller dropped."""
        return self._runner is not None and self._runner.recycle

    @property
    def held_bytes(self) -> int:
        """Bytes of the results kept now for reuse (the Python path's and the compiled runner's)."""
        held = 0 if self.results is None else self.results.held_bytes
        if self.runner_reuses:
            held += self._runner.kept() * self._out_bytes
        return held

    def release_workspace(self):
        if self.results is not None:
            self.results.clear()
        if self._runner is not None:
            self._runner.release()

    def free(self):
        self.release_workspace()
        self.backend.free()


class DeviceToHostExecutor:
    """GPU operand, CPU engine: the operand is fetched into a host mirror, transformed there (into a second
    mirror, or in place), and the result stored into a new GPU array of the operand's package."""

    def __init__(self, geom, op: Operand, setup: Setup):
        self.geom = geom
        self.adapter = adapter(op.package)
        self.device_id = op.device_id
        self.h_in = HostMirror(geom.in_shape, geom.in_dtype, natural_perm(op.strides), "FFT operand")
        self.h_out = self.h_in if geom.inplace else HostMirror(geom.out_shape, geom.out_dtype, geom.out_perm,
                                                               "FFT result")
        self.host = HostExecutor(geom, self.h_in.operand, setup, out=None if geom.inplace else self.h_out.operand)
        self.nbytes = self.h_in.nbytes + self.host.nbytes + (0 if geom.inplace else self.h_out.nbytes)

    def prepare(self, sign):
        self.host.prepare(sign)

    def execute(self, op, sign, stream):
        geom, A = self.geom, self.adapter
        self.h_in.fetch(op, A, stream)
        self.host.execute(self.h_in.operand, sign)
        target = op.obj if geom.inplace else A.empty(geom.out_shape, geom.out_dtype, self.device_id, geom.out_perm)
        self.h_out.store(target, A, self.device_id, stream)
        return target

    def release_workspace(self):
        pass

    def free(self):
        self.host.free()


# ----------------------------------------------------------------------------------------------- GPU engine

def _gpu_plan(geom, in_strides, out_strides, device_id, stream, allocator, log, callbacks=()):
    from ._backends.cufft import CufftPlan

    in_ext, out_ext = geom.extents
    in_layout = cufft_layout(geom, in_ext, geom.in_shape, in_strides)
    out_layout = cufft_layout(geom, out_ext, geom.out_shape, out_strides)
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


class DeviceExecutor:
    """GPU operand, cuFFT on the caller's arrays."""

    def __init__(self, geom, op: Operand, setup: Setup, in_fixed=True):
        self.geom = geom
        self.setup = setup
        self.adapter = adapter(op.package)
        self.device_id = setup.execution.device_id
        self.log = log = setup.log
        self.callbacks = setup.callbacks
        options = setup.options
        self.in_perm, self.out_perm = device_layouts(geom, op.strides, in_fixed=in_fixed,
                                                     overwrite_input=options.overwrite_input)
        # cuFFT needs an R2C input aligned to its complex type; other operands are (copies are fresh arrays)
        direct_r2c = geom.fft_type == "R2C" and self.in_perm is None
        self._misaligned = 2 * ITEMSIZE[geom.in_dtype] - 1 if direct_r2c else 0
        self._copying = None  # the executor for misaligned operands: a dense, aligned copy (made on first use)
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
            geom, in_strides, out_strides, self.device_id, setup.stream, setup.allocator(op.package), log,
            self.callbacks, options.callback_fusion, overwrite)
        passes = self.passes
        self._prolog = passes is not None and passes.prolog is not None
        self._epilog = passes.run_epilog if passes is not None and passes.epilog is not None else None
        self.nbytes = self.backend.workspace_size + (passes.nbytes if passes is not None else 0)
        self._simple = self.in_perm is None and not geom.inplace and not self.natural_copy and not self._prolog
        self._new_out = self.adapter.empty_factory(geom.out_shape, geom.out_dtype, self.device_id, self.out_perm)
        self._pointer = self.adapter.pointer
        self._exec = self.backend.exec_fn
        if dev_runner is not None and self._simple and self._epilog is None:  # execute() as one C call
            self.execute = dev_runner(self.backend, self._new_out, native_pointer(op.package, self._pointer),
                                      self._exec, self._misaligned, DeviceExecutor.execute.__get__(self))

    def prepare(self, sign):
        pass

    def execute(self, op, sign, stream):
        if op.ptr & self._misaligned:
            return self._execute_copy(op, sign, stream)
        if self._simple:  # the hot path: cuFFT reads the operand and writes a new array of its package
            out = self._new_out()
            out_ptr = self._pointer(out)
            be = self.backend
            if be.bound != stream:
                be.bind(stream)
            status = self._exec(be.handle, op.ptr, out_ptr, sign)
            if status:
                be.check(status)
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

    def _execute_copy(self, op, sign, stream):
        """An R2C operand not aligned to its complex type: cuFFT reads a dense, aligned copy."""
        if self.callbacks:  # a copy would change the layout the callbacks index with their offset
            raise ValueError(f"the R2C operand at {op.ptr:#x} is not aligned to its complex type, and this "
                             f"plan has callbacks: cuFFT cannot read it in place and a copy would change "
                             f"the layout the callbacks see; pass an operand aligned to "
                             f"{self._misaligned + 1} bytes")
        if self._copying is None:
            self.log.info("the R2C operand at %#x is not aligned to its complex type: cuFFT reads a copy", op.ptr)
            self._copying = DeviceExecutor(self.geom, op, self.setup, in_fixed=False)
        return self._copying.execute(op, sign, stream)

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
    """Host operand, cuFFT: the operand is uploaded into a device mirror of the plan and the result
    downloaded from one (the same one in place); each crosses the bus once."""

    def __init__(self, geom, op: Operand, setup: Setup):
        self.geom = geom
        self.adapter = adapter(op.package)
        self.device_id = device = setup.execution.device_id
        stream, allocator = setup.stream, setup.allocator(op.package)
        cuda.set_device(device)
        in_perm, out_perm = device_layouts(geom, op.strides, in_fixed=False)
        self.d_in = self.d_out = self.backend = self.passes = None
        try:
            self.d_in = DeviceMirror(geom.in_shape, geom.in_dtype, in_perm, allocator, stream, "FFT operand")
            self.d_out = self.d_in if geom.inplace else DeviceMirror(geom.out_shape, geom.out_dtype, out_perm,
                                                                     allocator, stream, "FFT result")
            self.backend, self.passes = _gpu_plan_with_callbacks(
                geom, self.d_in.strides, self.d_out.strides, device, stream, allocator, setup.log, setup.callbacks,
                setup.options.callback_fusion)
        except BaseException:  # a failed plan releases what it created
            self.free()
            raise
        out_bytes = 0 if geom.inplace else self.d_out.nbytes
        self.nbytes = self.backend.workspace_size + self.d_in.nbytes + out_bytes
        if self.passes is not None:
            self.nbytes += self.passes.nbytes
        self._result_strides = dense_strides(geom.out_shape, geom.out_perm)
        setup.log.info("host operand on GPU %d: staging buffers of %s in and %s out", device,
                       format_bytes(self.d_in.nbytes), format_bytes(out_bytes))

    def prepare(self, sign):
        pass

    def execute(self, op, sign, stream):
        geom, passes = self.geom, self.passes
        self.d_in.upload(op, stream)
        in_ptr = self.d_in.ptr
        if passes is not None and passes.prolog is not None:
            in_ptr = passes.run_prolog(in_ptr, stream)
        self.backend.execute(in_ptr, self.d_out.ptr, sign, stream)
        if passes is not None and passes.epilog is not None:
            passes.run_epilog(self.d_out.ptr, stream)
        if geom.inplace:
            self.d_out.download(host_view(op), stream)
            return op.obj
        A = self.adapter
        res = A.empty(geom.out_shape, geom.out_dtype, None, geom.out_perm)
        self.d_out.download(from_pointer(A.pointer(res), geom.out_shape, self._result_strides, geom.out_dtype),
                            stream)
        return res

    def release_workspace(self):
        self.backend.release_workspace()

    def free(self):
        for part in (self.backend, self.passes, self.d_in, None if self.d_out is self.d_in else self.d_out):
            if part is not None:
                part.free()


_FACTORIES = {"host": HostExecutor, "device": DeviceExecutor, "host_to_device": HostToDeviceExecutor,
              "device_to_host": DeviceToHostExecutor}


def make_executor(geom, op: Operand, setup: Setup):
    """The executor for (where the operand lives, where ``setup.execution`` runs the engine)."""
    return choose(_FACTORIES, op.device_id is not None, setup.execution.name == "cuda", geom, op, setup)
