"""The GPU engine of the distributed FFT: cuFFTMp over NVSHMEM, one GPU per rank.

Two ways to run a plan, both in place on a symmetric buffer:

* native slabs (``cufftXtSetSubformatDefault``, always, one rank included: ``cufftExec*`` takes no descriptor, so
  the plan must be told which slab its input is in): the input in balanced X slabs (``CUFFT_XT_FORMAT_INPLACE``)
  or Y slabs (``CUFFT_XT_FORMAT_INPLACE_SHUFFLED``), the result in the other one (R2C / C2R: the real side in X
  slabs, the complex side in Y slabs, on one rank only); R2C input rows padded to
  ``2 * (n // 2 + 1)`` reals (C2R results likewise), as single-GPU in-place cuFFT. Used on one rank (where both
  slabs are the whole array) and for C2C Slab input with ``redistribute=False`` on balanced pieces.
* boxes (``cufftXtSetDistribution``, then ``cufftXtSetSubformatDefault(DISTRIBUTED_INPUT, DISTRIBUTED_OUTPUT)``
  so that ``cufftExec*`` finds them): this rank's input box and output box in global coordinates, C-order
  strides of the boxes, for everything else (Box pairs, uneven slabs, slabs kept in place, R2C/C2R on many
  ranks; R2C and C2R plans both take the real box as their input box, as cuFFTMp's samples do).

A plan serves one direction: in both ways cuFFTMp's inverse takes the forward's output layout, while this API
runs either direction from the operand's layout to the result's. So the forward plan and the inverse plan are
made on first use, each with its own input subformat (native) or with the boxes swapped (boxes).

One rank (world size 1, native slabs: every Slab and whole-array Box plan) runs a single-GPU plan of libcufftMp
instead: ``cufftCreate``, ``cufftSetStream``, ``cufftMakePlan2d/3d``, no ``cufftMpAttachComm`` and no subformats.
cuFFTMp's documentation says its single-GPU functionality is cuFFT's; with a communicator attached, one PE still
runs the distributed slab algorithm, whose exchange is a local pass through NVSHMEM (512^3 complex64 on an H200:
1.16x single-GPU cuFFT with it, 1.00x without). Both slabs are the whole array in C order there, so the data
layout (padded R2C / C2R rows included) and the results are those of the native plan; one C2C plan serves both
directions. ``CUMATH_CUFFTMP_SINGLE_GPU=0`` keeps cuFFTMp's distributed plan on one rank.

Operands: a CuPy array or PyTorch CUDA tensor that starts a symmetric allocation of the right size
(``allocate_symmetric_memory``, C2C, C-contiguous) is transformed where it lies and the result is a view of the
same buffer, as nvmath-python does; any other operand (another GPU array, a NumPy array or a CPU tensor) is
copied into the plan's own symmetric buffer (logged) and the result is a new array of the operand's package.
"""

from __future__ import annotations

import logging
import math
import os

import numpy as np

from .._nvshmem import bring_up_nvshmem
from ._traits import _c_strides

__all__ = ["CuFFTMpPlan", "device_operand_info", "stored_shapes", "native_slabs", "single_gpu_plan"]

logger = logging.getLogger(__name__)


def device_operand_info(x):
    """(shape, dtype, package, on_device) of an operand of a GPU run (CuPy, PyTorch, NumPy)."""
    mod = type(x).__module__.split(".")[0]
    if mod == "cupy":
        return tuple(x.shape), np.dtype(x.dtype), "cupy", True
    if mod == "torch":
        dtype = np.dtype(str(x.dtype).replace("torch.", ""))
        return tuple(x.shape), dtype, "torch", x.device.type == "cuda"
    if isinstance(x, np.ndarray):
        return x.shape, x.dtype, "numpy", False
    raise TypeError(f"operand must be a CuPy array, a PyTorch tensor or a NumPy array on GPU runs, got "
                    f"{type(x).__name__}")


def _cupy_view(x):
    import cupy

    return cupy.asarray(x)  # CuPy as is; a torch CUDA tensor through __cuda_array_interface__ (no copy)


def _pointer(x) -> int:
    if hasattr(x, "data_ptr") and callable(x.data_ptr):
        return int(x.data_ptr())
    return int(x.data.ptr)


def stored_shapes(fft_type: str, native: bool, global_shape, in_local, out_local) -> tuple:
    """(input, result) local arrays as cuFFTMp lays them out in the buffer: native R2C / C2R pad the real side's
    last axis to ``2 * m`` reals, ``m`` the complex side's length (single-GPU in-place cuFFT's layout)."""
    in_local, out_local = tuple(in_local), tuple(out_local)
    if native and fft_type in ("R2C", "C2R"):
        m = global_shape[-1] // 2 + 1 if fft_type == "R2C" else in_local[-1]
        if fft_type == "R2C":
            return in_local[:-1] + (2 * m,), out_local
        return in_local, out_local[:-1] + (2 * m,)
    return in_local, out_local


def native_slabs(nranks: int, fft_type: str, slab, balanced: bool, redistribute: bool) -> bool:
    """Whether a plan runs as cuFFTMp's native slabs (else as boxes): on one rank always (both slabs are the
    whole array); on many, C2C from balanced X or Y slabs to the other slab (``redistribute=False``)."""
    return nranks == 1 or (fft_type == "C2C" and slab in (0, 1) and balanced and not redistribute)


def single_gpu_plan(nranks: int, native: bool) -> bool:
    """Whether a plan runs as a single-GPU plan of libcufftMp (no communicator attached): on one rank with native
    slabs (where the layout is the whole array in C order), unless ``CUMATH_CUFFTMP_SINGLE_GPU`` is
    0/off/false/no (read at plan time)."""
    if nranks != 1 or not native:
        return False
    return os.environ.get("CUMATH_CUFFTMP_SINGLE_GPU", "1").strip().lower() not in ("0", "off", "false", "no")


class CuFFTMpPlan:
    """cuFFTMp plans (one per direction, made on first use) and the symmetric work buffer of one FFT.

    ``in_box`` / ``out_box``: this rank's ``(lower, upper)`` in the global input / result array; ``native``:
    run as native slabs with ``in_slab`` (0: X, 1: Y) the input's slab.
    """

    def __init__(self, ctx, global_shape, geometry, in_box, out_box, native: bool, in_slab: int, operand=None):
        from ..._bindings import cufftmp

        self._mp = cufftmp
        self._state = bring_up_nvshmem(ctx)
        if not cufftmp.available():
            from ..._bindings._loader import install_hint

            raise RuntimeError(f"cuFFTMp (libcufftMp.so.12) cannot be loaded; {install_hint('cufftMp')}")
        self._group = ctx.process_group
        self.device_id = ctx.device_id
        self.shape = tuple(global_shape)
        self.geometry = geometry
        self.fft_type = geometry.fft_type
        self.in_dtype, self.out_dtype = np.dtype(geometry.in_dtype), np.dtype(geometry.out_dtype)
        self.in_box, self.out_box = in_box, out_box
        self.native, self.in_slab = native, in_slab
        self.single_gpu = single_gpu_plan(self._group.nranks, native)
        self.in_local = tuple(u - lo for lo, u in zip(*in_box))
        self.out_local = tuple(u - lo for lo, u in zip(*out_box))
        self.in_stored, self.out_stored = stored_shapes(self.fft_type, native, self.shape, self.in_local,
                                                        self.out_local)
        nbytes = max(math.prod(self.in_stored) * self.in_dtype.itemsize,
                     math.prod(self.out_stored) * self.out_dtype.itemsize)
        self.nbytes = nbytes
        self._buffer = 0
        self._plans: dict[str, int] = {}
        self._state.plans.add(self)
        self._state.hold_plan(self._make_held_plan, cufftmp.destroy)
        self.ensure_buffer(operand)
        logger.info("cuFFTMp %s %s on %d rank(s): %s, local %s -> %s, symmetric work buffer %d bytes",
                    self.fft_type, self.shape, self._group.nranks, self.layout_name(), self.in_local, self.out_local,
                    nbytes)

    def layout_name(self) -> str:
        """How the plan runs, in words (logs and error notes)."""
        if self.single_gpu:
            return ("a single-GPU plan of libcufftMp (one rank: no communicator attached, no exchange through "
                    "NVSHMEM)")
        return "native slabs" if self.native else "boxes"

    def _cufft_type(self) -> int:
        t = self._mp.cufftType
        double = self.in_dtype in (np.float64, np.complex128)
        return int({("C2C", False): t.CUFFT_C2C, ("C2C", True): t.CUFFT_Z2Z, ("R2C", False): t.CUFFT_R2C,
                    ("R2C", True): t.CUFFT_D2Z, ("C2R", False): t.CUFFT_C2R,
                    ("C2R", True): t.CUFFT_Z2D}[(self.fft_type, double)])

    def _subformats(self, direction: str) -> tuple[int, int]:
        """(forward, inverse) input subformats of a plan that runs ``direction`` from the operand's layout.

        Native C2C: the operand's slab is the input of the direction run. Native R2C / C2R: always (INPLACE,
        INPLACE_SHUFFLED), the pair cuFFTMp's samples give both the R2C and the C2R plan: the real side in X
        slabs, the complex side in Y slabs (a C2R plan reads INPLACE_SHUFFLED); they run natively on one rank
        only, where both slabs are the whole array, so the operand's slab does not change the layout (the C2R
        plan with the pair swapped returned CUFFT_INTERNAL_ERROR at execute for a 2-D (20, 15) shape). Boxes:
        (DISTRIBUTED_INPUT, DISTRIBUTED_OUTPUT), the subformats that name the plan's input and output boxes, so
        that ``cufftExec*`` (which has no descriptor) knows where the data lie: a box plan without them planned
        but returned CUFFT_INVALID_PLAN at execute, as native plans without theirs do."""
        f = self._mp.SubFormat
        if not self.native:
            return f.CUFFT_XT_FORMAT_DISTRIBUTED_INPUT, f.CUFFT_XT_FORMAT_DISTRIBUTED_OUTPUT
        x, y = f.CUFFT_XT_FORMAT_INPLACE, f.CUFFT_XT_FORMAT_INPLACE_SHUFFLED
        if self.fft_type != "C2C":
            return x, y
        mine, other = (x, y) if self.in_slab == 0 else (y, x)
        return (mine, other) if direction == "forward" else (other, mine)

    def _make_held_plan(self) -> int:
        """The small plan kept for NVSHMEM's lifetime (``NVSHMEMState.hold_plan``): 2-D C2C of ``nranks`` per
        axis (the least cuFFTMp's slabs take), made as every plan is."""
        mp, n = self._mp, max(2, self._group.nranks)
        plan = mp.create()
        try:
            mp.attach_comm_none(plan)
            mp.set_subformat_default(plan, mp.SubFormat.CUFFT_XT_FORMAT_INPLACE,
                                     mp.SubFormat.CUFFT_XT_FORMAT_INPLACE_SHUFFLED)
            mp.make_plan(plan, (n, n), int(mp.cufftType.CUFFT_C2C))
        except BaseException:
            mp.destroy(plan)
            raise
        return plan

    def _plan_for(self, direction: str, stream: int) -> int:
        """The plan of ``direction``, made on first use (call with this FFT's device current).

        The sequence is the one cuFFTMp's documentation and samples use: ``cufftCreate``, ``cufftMpAttachComm``,
        ``cufftSetStream``, then the layout (boxes: ``cufftXtSetDistribution``), then the subformats
        (``cufftXtSetSubformatDefault``, on every plan: see ``_subformats``), then ``cufftMakePlan*``. A plan
        made without its subformats plans but does not execute through ``cufftExec*`` (which has no descriptor
        to say where the data lie): its first execution returns CUFFT_INVALID_PLAN.
        """
        key = self._plan_key(direction)
        plan = self._plans.get(key)
        if plan is not None:
            return plan
        if self.single_gpu:
            plan = self._make_single_gpu_plan(stream)
            self._plans[key] = plan
            return plan
        mp = self._mp
        plan = mp.create()
        try:
            mp.attach_comm_none(plan)
            mp.set_stream(plan, stream)
            if not self.native:
                (li, ui), (lo, uo) = self.in_box, self.out_box
                si, so = _c_strides(self.in_local), _c_strides(self.out_local)
                if direction == "forward":  # R2C: the input box is the real one
                    mp.set_distribution(plan, li, ui, lo, uo, si, so)
                else:  # the inverse runs from the plan's output boxes to its input boxes (C2R: the real box in)
                    mp.set_distribution(plan, lo, uo, li, ui, so, si)
            mp.set_subformat_default(plan, *self._subformats(direction))
            # the plan is of the real array's shape for R2C / C2R
            shape = self.shape if self.fft_type != "C2R" else self.geometry.out_shape
            work = mp.make_plan(plan, shape, self._cufft_type())
        except BaseException:
            mp.destroy(plan)
            raise
        logger.debug("cuFFTMp %s plan %d: work area %d bytes (allocated by cuFFTMp on the symmetric heap)",
                     direction, plan, work)
        self._plans[key] = plan
        return plan

    def _plan_key(self, direction: str) -> str:
        """A single-GPU plan serves both directions (``cufftExec*`` takes the direction; R2C and C2R FFTs run one
        direction only); cuFFTMp's plans one direction each (see the module's docstring)."""
        return "single-gpu" if self.single_gpu else direction

    def _make_single_gpu_plan(self, stream: int) -> int:
        """One rank: ``cufftCreate``, ``cufftSetStream``, ``cufftMakePlan2d/3d`` of libcufftMp without a
        communicator: cuFFT's single-GPU plan (in place, C order, R2C / C2R rows padded as ``stored_shapes``)."""
        mp = self._mp
        plan = mp.create()
        try:
            mp.set_stream(plan, stream)
            shape = self.shape if self.fft_type != "C2R" else self.geometry.out_shape
            work = mp.make_plan(plan, shape, self._cufft_type())
        except BaseException:
            mp.destroy(plan)
            raise
        logger.debug("cuFFTMp single-GPU plan %d: work area %d bytes (allocated by cuFFT)", plan, work)
        return plan

    def ensure_buffer(self, operand) -> None:
        """Allocate the symmetric work buffer if any rank's operand needs staging (collective: every rank
        calls it, at plan and at reset_operand)."""
        need = self._group.allgather(operand is None or not self.symmetric_operand(operand))
        if any(need) and not self._buffer:
            self._buffer = self._state.malloc(max(self._group.allgather(self.nbytes)))  # the same size everywhere

    def symmetric_operand(self, x) -> bool:
        """Whether ``x`` can be transformed where it lies: a C-contiguous C2C GPU operand that starts a
        symmetric allocation large enough for the result."""
        if self.fft_type != "C2C" or type(x).__module__.split(".")[0] not in ("cupy", "torch"):
            return False
        if getattr(x, "is_contiguous", None) is not None:
            contiguous = x.is_contiguous() and x.device.type == "cuda"
        else:
            contiguous = x.flags.c_contiguous
        size = self._state.size_at(_pointer(x)) if contiguous else None
        return size is not None and size >= self.nbytes and np.dtype(str(x.dtype).replace("torch.", "")) == \
            self.in_dtype

    def execute(self, x, package: str, on_device: bool, direction: str, stream=None, sync: bool = True):
        """This rank's piece of the result (collective). ``sync``: on many ranks, wait on the stream for every
        rank's stores to symmetric memory (their operands, staged or written in place) before cuFFTMp reads
        them (``nvshmemx_sync_all_on_stream``); one rank has nothing to wait for."""
        sync = sync and self._group.nranks > 1
        import cupy

        stream_ptr = _stream_pointer(stream)
        on_stream = cupy.cuda.ExternalStream(stream_ptr) if stream_ptr else _null_context()
        with cupy.cuda.Device(self.device_id), on_stream:
            stream_ptr = stream_ptr or cupy.cuda.get_current_stream().ptr
            plan = self._plans.get(self._plan_key(direction))
            if plan is None:
                plan = self._plan_for(direction, stream_ptr)  # on this FFT's device, with the stream set
            else:
                self._mp.set_stream(plan, stream_ptr)
            if self.symmetric_operand(x):
                if sync:
                    self._state.sync_all_on_stream(stream_ptr)
                self._run(plan, _pointer(x), direction)
                return self._state.array(_pointer(x), self.out_local, self.out_dtype, package)
            if not self._buffer:
                raise RuntimeError("this operand needs staging but the FFT has no work buffer: give operands that "
                                   "are not symmetric buffers through reset_operand on every rank (collective)")
            logger.info("cuFFTMp: the %s operand is not a symmetric buffer of this FFT's size: staged through the "
                        "plan's symmetric buffer (%d bytes)", package, self.nbytes)
            work_in = self._state.array(self._buffer, self.in_stored, self.in_dtype, "cupy")
            src = _cupy_view(x) if on_device else cupy.asarray(np.asarray(x))
            if self.in_stored != self.in_local:  # padded real rows
                work_in[..., :self.in_local[-1]] = src
            else:
                work_in[...] = src
            if sync:
                self._state.sync_all_on_stream(stream_ptr)
            self._run(plan, self._buffer, direction)
            out = self._state.array(self._buffer, self.out_stored, self.out_dtype, "cupy")
            if self.out_stored != self.out_local:
                out = out[..., :self.out_local[-1]]
            if not on_device:
                host = cupy.asnumpy(out)  # synchronizes the stream
                if package == "torch":
                    import torch

                    return torch.from_numpy(host)
                return host
            result = out.copy()  # the work buffer is the next call's
            if package == "torch":
                import torch

                return torch.as_tensor(result, device=f"cuda:{self.device_id}")
            return result

    def _run(self, plan: int, data: int, direction: str) -> None:
        """``cufftExec*`` in place; a failure says which plan failed (geometry, layout, subformats) and what to
        try instead, on the library's own error."""
        try:
            self._mp.execute(plan, self._cufft_type(), data, -1 if direction == "forward" else 1)
        except Exception as exc:
            if self.single_gpu:
                layout = self.layout_name()
                other = "CUMATH_CUFFTMP_SINGLE_GPU=0 (cuFFTMp's distributed plan on one rank)"
            else:
                sub = self._mp.SubFormat
                names = "/".join(sub(v).name.replace("CUFFT_XT_FORMAT_", "") for v in self._subformats(direction))
                layout = ("native slabs" if self.native else f"boxes in {self.in_box} out {self.out_box}") + \
                    f", subformats {names}"
                other = ("Slab.X or Slab.Y input with balanced slabs" if not self.native else
                         "another distribution (Box pairs run as cuFFTMp boxes)")
            if hasattr(exc, "add_note"):
                exc.add_note(f"cuFFTMp {self.fft_type} {direction} of global shape {self.shape} on "
                             f"{self._group.nranks} rank(s), {layout}: try {other}, or the CPU engine on host "
                             "operands")
            raise

    def release_native(self) -> None:
        """Free the work buffer, then destroy the plans (collective: every rank frees the same buffers). The
        order of cuFFTMp's documentation: symmetric memory is freed before the plans that may take NVSHMEM down."""
        buffer, self._buffer = getattr(self, "_buffer", 0), 0
        if buffer and self._state.alive:
            self._state.free(buffer)
        plans, self._plans = self._plans, {}
        for plan in plans.values():
            self._mp.destroy(plan)
        self._state.plans.discard(self)


class _null_context:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


def _stream_pointer(stream) -> int:
    if stream is None:
        return 0
    if isinstance(stream, int):
        return stream
    for attr in ("ptr", "cuda_stream", "handle"):
        value = getattr(stream, attr, None)
        if isinstance(value, int):
            return value
    raise TypeError(f"stream must be a CuPy or PyTorch stream or a cudaStream_t as an int, got "
                    f"{type(stream).__name__}")
