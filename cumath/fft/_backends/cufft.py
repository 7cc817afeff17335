"""The GPU engine: cuFFT through ctypes (64-bit cufftXt planning, our workspace, plan bound to a stream)."""

from __future__ import annotations

import logging
import os
import time
import weakref

from ..._bindings import cufft
from ..._bindings.cudart import cudaDataType
from ..._core._fast import call_ippi
from ..._core.cuda import set_device
from ..._core.lifecycle import release_quietly
from ..._core.logging import format_bytes
from ...memory import allocate

__all__ = ["CufftPlan", "DATA_TYPES"]

logger = logging.getLogger(__name__)

DATA_TYPES = {
    "float16": cudaDataType.CUDA_R_16F, "complex32": cudaDataType.CUDA_C_16F,
    "float32": cudaDataType.CUDA_R_32F, "complex64": cudaDataType.CUDA_C_32F,
    "float64": cudaDataType.CUDA_R_64F, "complex128": cudaDataType.CUDA_C_64F,
}
_EXEC_TYPE = {"float16": "complex32", "float32": "complex64", "float64": "complex128"}


# cuFFT's "patient JIT" plan property (NVFFT_PLAN_PROPERTY_INT64_PATIENT_JIT), off by default: on the H200
# with cuFFT 12.0 it changed neither plain nor callback kernels (benchmarks/NOTES.md, FFT callbacks).
# True/False force it; the environment variable CUMATH_CUFFT_PATIENT_JIT=0/1 overrides both.
PATIENT_JIT: bool | None = None


def patient_jit() -> bool:
    env = os.environ.get("CUMATH_CUFFT_PATIENT_JIT")
    if env is not None and env.strip() != "":
        return env.strip().lower() not in ("0", "false", "no", "off")
    if PATIENT_JIT is not None:
        return PATIENT_JIT
    return False



class CufftPlan:
    """One cuFFT plan over fixed layouts; executes on any pair of pointers with those layouts.

    Executors call cuFFT themselves on their hot path: ``exec_fn(handle, in_ptr, out_ptr, sign)`` (the raw
    ``cufftXtExec``, a status back, ``check(status)`` raises) once ``bound`` is the stream of the call
    (``bind(stream)`` sets the plan's stream and attaches its workspace).
    """

    def __init__(self, sizes, in_layout, out_layout, in_dtype, out_dtype, device_id, stream, allocator,
                 log=logger, callbacks=()):
        self.handle = 0
        # LTO callbacks (fft/_callbacks.AttachedCallback): cuFFT keeps pointers to their names (and to the
        # caller_info arrays), so the plan holds them for its whole life
        self.callbacks = tuple(callbacks)
        self._ws = None
        self._allocator = allocator
        self.device_id = device_id
        set_device(device_id)
        in_embed, istride, idist, batch = in_layout
        out_embed, ostride, odist, _ = out_layout
        exec_dtype = in_dtype if in_dtype.startswith("complex") else out_dtype
        t0 = time.perf_counter()
        self.handle = cufft.cufftCreate()
        self._finalizer = weakref.finalize(self, release_quietly, cufft.cufftDestroy, self.handle)
        cufft.cufftSetAutoAllocation(self.handle, 0)
        for cb in self.callbacks:  # before planning: the plan's kernels are linked with them
            cufft.cufftXtSetJITCallback(self.handle, cb.name, cb.ltoir, len(cb.ltoir), cb.cbtype,
                                        cb.caller_info_address)
        self.patient_jit = patient_jit()
        if self.patient_jit:
            cufft.cufftSetPlanPropertyInt64(self.handle, cufft.cufftProperty.NVFFT_PLAN_PROPERTY_INT64_PATIENT_JIT, 1)
        self.workspace_size = cufft.cufftXtMakePlanMany(
            self.handle, len(sizes), list(sizes), list(in_embed), istride, idist, DATA_TYPES[in_dtype],
            list(out_embed), ostride, odist, DATA_TYPES[out_dtype], batch, DATA_TYPES[exec_dtype])
        cufft.cufftSetStream(self.handle, stream)
        self._stream = stream
        self.bound = None  # the stream the plan is set to with its workspace attached (None: not yet)
        # one native call on the hot path: the compiled caller of cufftXtExec (the ctypes function without it);
        # callers check the status it returns
        self.exec_fn = call_ippi(cufft._L.cufftXtExec)
        if log.isEnabledFor(logging.INFO):
            log.info("cuFFT plan %s->%s sizes=%s batch=%d in(embed=%s, stride=%d, dist=%d) out(embed=%s, "
                     "stride=%d, dist=%d) on GPU %d%s%s: workspace %s, planned in %.2f ms", in_dtype, out_dtype,
                     list(sizes), batch, list(in_embed), istride, idist, list(out_embed), ostride, odist,
                     device_id, "".join(f", {cb.kind} {cb.name.decode()}" for cb in self.callbacks),
                     ", patient JIT" if self.patient_jit else "",
                     format_bytes(self.workspace_size), 1e3 * (time.perf_counter() - t0))

    def bind(self, stream) -> None:
        """Set the plan's stream to ``stream`` and attach the workspace (allocated on first use)."""
        if stream != self._stream:
            cufft.cufftSetStream(self.handle, stream)
            self._stream = stream
        if self._ws is None and self.workspace_size:
            self._ws = allocate(self._allocator, self.workspace_size, stream)
            cufft.cufftSetWorkArea(self.handle, self._ws.device_ptr)
        self.bound = stream

    @staticmethod
    def check(status: int) -> None:
        cufft.check(status)

    def execute(self, in_ptr, out_ptr, sign, stream):
        if self.bound != stream:
            self.bind(stream)
        status = self.exec_fn(self.handle, in_ptr, out_ptr, sign)
        if status:
            cufft.check(status)

    def release_workspace(self):
        self.bound = None
        if self._ws is not None:
            self._ws.free()
            self._ws = None

    def free(self):
        self.release_workspace()
        self._finalizer()
        self.handle = 0


def check_half_sizes(sizes, dtype):
    """cuFFT computes half precision only for powers of two."""
    if dtype in ("float16", "complex32") and any(n & (n - 1) for n in sizes):
        raise ValueError(
            f"half-precision ({dtype}) FFTs need power-of-2 sizes on cuFFT, got {list(sizes)}; "
            f"convert the operand to float32/complex64"
        )
