"""The distributed FFT: a stateful operation over the ranks of the process group.

CPU engines: per-rank FFTs by single-process cumath (FFTW/MKL plans, cached) on the axes each rank holds whole,
and all-to-all transposes between the layouts of the plan (``_traits.plan_steps``); or oneMKL's Cluster DFT
(``_cdft``) for C2C transforms, with moves into and out of its row partition where the pieces differ.
GPU engine (runs initialized with a ``device_id``): cuFFTMp over NVSHMEM (``_cufftmp``). The input and the result
are this rank's pieces: a Slab (uneven pieces allowed) or this rank's Box (``distribution=[input_box,
output_box]``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import logging
import math

import numpy as np

from ... import fft as _fft
from ..._core.execution import ExecutionCPU, available_cpus
from ..._core.lifecycle import Stateful, requires
from .._context import require_context
from .._operands import gather_layout, host_view, target_indices, wrap_result
from .._redistribute import plan_exchange
from .._distributions import Box, Slab, SlabPartition
from . import _cdft, _cufftmp
from ._options import FFTDirection, check_options
from ._traits import Local, Move, candidate_layouts, plan_steps, problem

if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any
    from ..._core.typing import AnyTensor, StreamLike
    from ._options import FFTOptions

__all__ = ["FFT"]

logger = logging.getLogger(__name__)


def _same(a: list, b: list) -> bool:
    for ra, rb in zip(a, b):
        for x, y in zip(ra, rb):
            if isinstance(x, range) and isinstance(y, range):
                if x != y and (len(x) or len(y)):
                    return False
            elif not np.array_equal(np.asarray(x), np.asarray(y)):
                return False
    return True


def _distribution_pair(distribution):
    if isinstance(distribution, Slab):
        return distribution, None
    if isinstance(distribution, (list, tuple)) and len(distribution) == 2 and all(
            isinstance(b, Box) for b in distribution):
        return distribution[0], distribution[1]
    if isinstance(distribution, Box):
        return distribution, distribution
    raise TypeError("distribution must be a Slab (Slab.X, Slab.Y) or a pair [input_box, output_box] of this rank's "
                    f"Boxes, got {distribution!r}")


class FFT(Stateful):
    """A distributed FFT of a 2-D or 3-D array whose pieces the ranks hold.

    Every rank constructs it with its own piece, then calls ``plan()`` and ``execute()`` (collective calls:
    every rank makes them in the same order). ``execute(direction=)`` returns this rank's piece of the result:
    in the input's slab (``FFTOptions.redistribute=True``), in the other slab (False), or in this rank's output
    box. The inverse is not normalized (as single-process cumath.fft).

    CPU runs (``initialize(None, ...)``): NumPy arrays or PyTorch CPU tensors; the result is a new array and the
    operand is only read (``FFTOptions.engine`` picks per-rank plans with transposes or MKL's Cluster DFT).
    GPU runs (``initialize(device_id, ...)``): cuFFTMp over NVSHMEM. A C2C operand that is a symmetric buffer
    (``allocate_symmetric_memory`` / ``allocate_operand(memory_space='cuda')``) is transformed in place and the
    result is a view of that buffer, as in nvmath-python; other operands (CuPy arrays, CUDA or CPU tensors,
    NumPy arrays) are staged through the FFT's own symmetric buffer (logged) and the result is a new array of
    their package. On GPU runs ``reset_operand`` and ``free`` are collective (every rank calls them).

    Deliberate differences from nvmath-python 1.0: CPU-only runs compute on the CPU (nvmath-python stages host
    operands to GPUs) and return new arrays; on GPU runs, GPU operands that are not symmetric buffers are
    accepted (staged) instead of refused; ``FFTOptions`` adds ``engine``, ``decomposition`` and
    ``planning_effort``.

    Example (``mpirun -n 2``)::

        cumath.distributed.initialize(None, MPI.COMM_WORLD)
        x = np.random.rand(64 // size, 64, 64) + 1j                # this rank's Slab.X piece
        with cumath.distributed.fft.FFT(x, distribution=Slab.X) as f:
            f.plan()
            y = f.execute()                                        # Slab.X piece of the 3-D FFT
    """

    _STATES = {"planned": ("_planned", "needs a plan: call plan() first"),
               "operand": ("_arr_set", "has no operand: call reset_operand(operand) first")}

    def __init__(self, operand: AnyTensor, *, distribution: Any, options: FFTOptions | Mapping[str, Any] | None = None,
                 stream: StreamLike = None) -> None:
        self._ctx = require_context()
        group = self._group = self._ctx.process_group
        self.options = check_options(options)
        self._gpu = self._ctx.device_id is not None  # GPU runs: cuFFTMp
        self._gpu_plan = None
        self._arr, self._package, self._on_device, local_shape, dtype = self._take(operand)
        self._arr_set = True
        self._in_dist, self._out_box = _distribution_pair(distribution)
        group.agree("FFT", dtype=dtype.str, ndim=len(local_shape), options=repr(self.options),
                    distribution="Box" if isinstance(self._in_dist, Box) else repr(self._in_dist))
        if len(local_shape) not in (2, 3):
            raise ValueError(f"distributed FFTs are 2-D or 3-D; this rank's operand has {len(local_shape)} axes")
        self.global_shape, self._src = gather_layout(group, local_shape, self._in_dist, "input")
        self.geometry = problem(self.global_shape, dtype.name, self.options.fft_type,
                                self.options.last_axis_parity)
        self.fft_type = self.geometry.fft_type
        self.global_result_shape = self.geometry.out_shape
        self._steps = None
        self._cluster = None
        self.engine = None
        self.result_distribution = None

    def _take(self, operand):
        """(operand, package, on_device, local shape, dtype): host arrays as NumPy views on CPU runs; on GPU runs
        CuPy arrays and torch tensors as they are (CPU ones are staged to the GPU at execution)."""
        if self._gpu:
            shape, dtype, package, on_device = _cufftmp.device_operand_info(operand)
            return operand, package, on_device, tuple(shape), np.dtype(dtype)
        arr, package = host_view(operand, "operand")
        return arr, package, False, arr.shape, arr.dtype

    def _decomposition(self) -> str:
        d = self.options.decomposition
        if d != "auto":
            return d
        n = self._group.nranks
        return "slab" if n <= min(self.global_shape[0], self.global_shape[1]) or len(self.global_shape) == 2 else "pencil"

    def plan(self, stream: StreamLike = None) -> None:
        """Work out the local transforms and the transposes (collective for Box output: gathers the boxes)."""
        group, shape, ndim = self._group, self.global_shape, len(self.global_shape)
        self._group.agree("FFT.plan")
        self._free_cluster()
        if self._gpu:
            self._plan_gpu()
            return
        self.engine = self._choose_engine()
        if self.engine == "mkl":
            self._plan_cluster()
            return
        layouts = candidate_layouts(ndim, group.nranks, self._decomposition())
        whole = {a for a in range(ndim)
                 if all(len(ix[a]) == shape[a] or math.prod(len(i) for i in ix) == 0 for ix in self._src)}
        steps = plan_steps(ndim, self.fft_type, whole, layouts)
        threads = max(1, available_cpus() // max(1, self._ctx_local_ranks()))
        self._execution = ExecutionCPU(num_threads=threads)
        effort = self.options.planning_effort
        base = {"planning_effort": effort} if effort else {}
        # local results in the operand's memory order (C order between moves; cumath.fft's default layout puts a
        # transformed first axis innermost, which the next move or the result would copy back: 6.6 ms of a 23 ms
        # 128^3 FFT on 2 ranks); C2C steps on arrays this FFT made (a move's result) run in place on them
        self._local_options = {**base, "result_layout": "natural"}
        self._inplace_options = {**base, "inplace": True}
        self._c2r_options = {"last_axis_parity": self.options.last_axis_parity, **self._local_options}
        compiled, current, cur_shape = [], self._src, tuple(shape)
        for step in steps:
            if isinstance(step, Move):
                dst = [step.layout.indices(cur_shape, r, group.nranks) for r in range(group.nranks)]
                if not _same(current, dst):
                    compiled.append(("move", plan_exchange(current, dst, group.rank)))
                current = dst
            else:
                new_shape = list(cur_shape)
                if step.kind in ("R2C", "C2R"):
                    new_shape[-1] = self.global_result_shape[-1]
                cur_shape = tuple(new_shape)
                local = tuple(len(ix) for ix in current[group.rank])
                current = [ix if math.prod(len(i) for i in ix) == 0 else
                           tuple(range(cur_shape[a]) if a in step.axes else ix[a] for a in range(ndim))
                           for ix in current]
                out_local = tuple(len(ix) for ix in current[group.rank])
                compiled.append(("local", step, math.prod(local) == 0, out_local))
        final = self._final_indices(current, cur_shape)
        if not _same(current, final):
            compiled.append(("move", plan_exchange(current, final, group.rank)))
        self._steps = compiled
        self._planned = True
        if logger.isEnabledFor(logging.INFO):
            logger.info("distributed FFT %s %s on %d ranks (%s): %s; result %s", self.fft_type, shape, group.nranks,
                        self._decomposition(), " ".join(_describe(s) for s in steps), self.result_distribution)

    def _choose_engine(self) -> str:
        group, shape = self._group, self.global_shape
        choice = self.options.engine
        reason = _cdft.unsupported_reason(group, shape, self.geometry.in_dtype, self.fft_type)
        if choice == "mkl":
            if reason is not None:
                raise ValueError(f"engine='mkl': the MKL Cluster DFT cannot run this FFT: {reason}; use "
                                 "engine='transposes' (or 'auto')")
            return "mkl"
        if choice == "transposes" or reason is not None or group.nranks == 1:
            return "transposes"
        # auto: the Cluster DFT where it measured faster, Slab.X pieces in and nothing to move
        slab_x = isinstance(self._in_dist, Slab) and self._in_dist.axis == 0
        balanced = all(len(ix[0]) == len(Slab.X.indices(shape, r, group.nranks)[0])
                       for r, ix in enumerate(self._src))
        if not (_cdft.AUTO and slab_x and balanced):
            return "transposes"
        return "mkl" if all(group.allgather(_cdft.available())) else "transposes"

    def _plan_cluster(self) -> None:
        group, shape = self._group, self.global_shape
        self._cluster = cluster = _cdft.ClusterDFT(group, shape, self.geometry.in_dtype)
        rows = [cluster.partition.indices(shape, r, group.nranks) for r in range(group.nranks)]
        steps = [] if _same(self._src, rows) else [("move", plan_exchange(self._src, rows, group.rank))]
        steps.append(("cluster", cluster))
        final = self._final_indices(rows, shape)
        if not _same(rows, final):
            steps.append(("move", plan_exchange(rows, final, group.rank)))
        self._steps = steps
        self._planned = True
        logger.info("distributed FFT %s %s on %d ranks: MKL Cluster DFT, %d move(s); result %s", self.fft_type,
                    shape, group.nranks, len(steps) - 1, self.result_distribution)

    def _plan_gpu(self) -> None:
        group, shape, rank = self._group, self.global_shape, self._group.rank
        mine = self._src[rank]
        if not all(isinstance(ix, range) for ix in mine):
            raise ValueError("cuFFTMp takes pieces that are boxes (Slab or Box distributions)")
        final = self._final_indices(None, self.global_result_shape)
        out = final[rank]
        in_box = (tuple(ix.start for ix in mine), tuple(ix.stop for ix in mine))
        out_box = (tuple(ix.start for ix in out), tuple(ix.stop for ix in out))
        slab = self._in_dist.axis if isinstance(self._in_dist, Slab) and self._in_dist.axis < 2 else None
        balanced = slab is not None and all(
            _same([ix], [Slab(slab).indices(shape, r, group.nranks)]) for r, ix in enumerate(self._src))
        native = _cufftmp.native_slabs(group.nranks, self.fft_type, slab, balanced, self.options.redistribute)
        self._release_gpu()
        self._gpu_plan = _cufftmp.CuFFTMpPlan(self._ctx, shape, self.geometry, in_box, out_box, native,
                                              slab or 0, self._arr)
        self.engine = "cufftmp"
        self._planned = True

    def _release_gpu(self) -> None:
        plan, self._gpu_plan = self._gpu_plan, None
        if plan is not None:
            plan.release_native()

    def _free_cluster(self) -> None:
        cluster, self._cluster = self._cluster, None
        if cluster is not None:
            cluster.free()

    def _ctx_local_ranks(self) -> int:
        return self._ctx.resource("local_ranks", lambda: _local_ranks(self._group), lambda _: None)

    def _final_indices(self, current: list, shape) -> list:
        group = self._group
        if isinstance(self._in_dist, Slab):
            axis = self._in_dist.axis
            if self.options.redistribute:
                sizes = tuple(len(ix[axis]) for ix in self._src)
                target = (SlabPartition(axis, sizes) if shape[axis] == self.global_shape[axis] else self._in_dist)
                self.result_distribution = self._in_dist
            else:
                target = Slab(1 - axis if axis < 2 else 0)  # X <-> Y, as cuFFTMp's slabs
                self.result_distribution = target
            return [target.indices(shape, r, group.nranks) for r in range(group.nranks)]
        self.result_distribution = self._out_box
        return target_indices(group, self._out_box, shape, "output")

    @requires("planned")
    def reset_operand(self, operand: AnyTensor = None) -> None:
        """Give a new piece of the same local shape and dtype (None releases the current one)."""
        if operand is None:
            self.release_operand()
            return
        arr, package, on_device, shape, dtype = self._take(operand)
        if shape != self._arr_shape() or dtype != self._dtype:
            raise ValueError(f"reset_operand: the new operand has shape {shape} and dtype {dtype}, the "
                             f"planned one {self._arr_shape()} and {self._dtype}; create a new FFT")
        self._arr, self._package, self._on_device, self._arr_set = arr, package, on_device, True
        if self._gpu_plan is not None:  # GPU runs: collective, a staging buffer if a rank's operand needs one
            self._gpu_plan.ensure_buffer(arr)

    def _arr_shape(self):
        return tuple(len(ix) for ix in self._src[self._group.rank])

    @property
    def _dtype(self):
        return np.dtype(self.geometry.in_dtype)

    def release_operand(self) -> None:
        """Drop the reference to the operand (give one again with reset_operand before execute)."""
        self._arr, self._arr_set = None, False

    @requires("planned", "operand")
    def execute(self, direction: FFTDirection | str | None = None, stream: StreamLike = None, *,
                sync_symmetric_memory: bool = True) -> AnyTensor:
        """Run the FFT; returns this rank's piece of the result (a new array of the operand's package).

        ``sync_symmetric_memory`` (GPU runs on many ranks): first wait, on the stream, until every rank's stores
        to symmetric memory are complete and visible (the input must be ready on all ranks before cuFFTMp reads
        it); give False when the ranks are known to be in step already. CPU runs order everything with MPI and
        ignore it.
        """
        direction = self._direction(direction)
        self._group.agree("FFT.execute", direction=direction)
        if self._gpu:
            return self._gpu_plan.execute(self._arr, self._package, self._on_device, direction, stream,
                                          sync=bool(sync_symmetric_memory))
        x, owned = self._arr, False  # owned: x is an array this execution made (never the caller's operand)
        for entry in self._steps:
            if entry[0] == "move":
                x, owned = entry[1].execute(self._group, np.ascontiguousarray(x)), True
                continue
            if entry[0] == "cluster":
                x = entry[1].execute(x, direction == "forward")
                continue
            _, step, empty, out_local = entry
            if empty:
                dt = self.geometry.out_dtype if step.kind == "C2R" else (
                    np.result_type(x.dtype, np.complex64) if step.kind == "R2C" else x.dtype)
                x = np.empty(out_local, dtype=dt)
            elif step.kind == "R2C":
                x = _fft.rfft(x, axes=step.axes, execution=self._execution, options=self._local_options)
            elif step.kind == "C2R":
                x = _fft.irfft(x, axes=step.axes, execution=self._execution, options=self._c2r_options)
            else:
                x = _fft.fft(x, axes=step.axes, direction=direction, execution=self._execution,
                             options=self._inplace_options if owned else self._local_options)
            owned = True
        if x is self._arr:  # nothing moved and nothing was transformed: the result is the caller's alone
            x = x.copy()
        return wrap_result(np.ascontiguousarray(x), self._package)

    def _direction(self, direction) -> str:
        if direction is None:
            return "inverse" if self.fft_type == "C2R" else "forward"
        if isinstance(direction, FFTDirection):
            direction = direction.name
        d = str(direction).lower()
        if d not in ("forward", "inverse"):
            raise ValueError(f"direction={direction!r}; the allowed values are 'forward', 'inverse' (or FFTDirection)")
        if (self.fft_type == "R2C" and d != "forward") or (self.fft_type == "C2R" and d != "inverse"):
            raise ValueError(f"a {self.fft_type} FFT runs {'forward' if self.fft_type == 'R2C' else 'inverse'} only")
        return d

    def _release(self) -> None:
        self._steps = None
        self._arr = None
        self._free_cluster()
        self._release_gpu()


def _local_ranks(group) -> int:
    comm = getattr(group, "communicator", None)
    if comm is None:
        return group.nranks
    from mpi4py import MPI

    node = comm.Split_type(MPI.COMM_TYPE_SHARED)
    try:
        return node.Get_size()
    finally:
        node.Free()


def _describe(step) -> str:
    return f"FFT{step.axes}" if isinstance(step, Local) else f"->{step.layout.axes}"
