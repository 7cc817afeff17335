"""The check of a cuDSS factorization's pivots for NaN and inf, on the GPU.

cuDSS counts the pivots it perturbs (CUDSS_DATA_NPIVOTS) and reports failed Cholesky factorizations
(CUDSS_DATA_INFO), but a pivot that is NaN or inf is neither small nor counted: a row that matching's scaling
divides by zero, a non-finite value of ``a``. Its solutions are then NaN, returned as if they were solutions.
After each factorization of one system the solver copies the factors' diagonal (CUDSS_DATA_DIAG) into a device
buffer of its own, one kernel reads it for NaN and inf (their exponent bits all set) and writes the check's
epoch into a device word behind it, copied (8 bytes) into page-locked host memory; the status read that follows
the factorization already waits for the stream, so the word is read with no wait of its own. Cost: a device copy
of the diagonal, one launch and an 8-byte copy (90,000 float64 pivots: 720 KB, a few microseconds on an H200). A flagged factorization counts as perturbed:
its solutions get the residual check, and the pivoting fallback, of perturbed pivots.

Batches (cuDSS's DIAG is not documented per system of a batch) and hybrid execution (DIAG stays zero there) are
not checked here; without NVRTC the check is off (logged once).
"""

from __future__ import annotations

import logging

from ...._bindings import cudss
from ...._core import cuda
from ...._core.allocators import allocate
from ...._core.dtypes import ITEMSIZE
from ...._core.kernels import get_kernel
from ....errors import CUDSSError

__all__ = ["NONFINITE_SOURCE", "DiagCheck", "launch"]

logger = logging.getLogger(__name__)

NONFINITE_SOURCE = r"""
// *flag = epoch when a word of x[0:n] (the bits of float32 or float64 values; complex values as pairs) is NaN or
// inf: its exponent bits all set. Written only where something is found, so nothing is cleared between checks.
extern "C" __global__ void cumath_sparse_nonfinite32(const unsigned int* x, long long n, unsigned long long epoch,
                                                     unsigned long long* flag) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        if ((x[i] & 0x7f800000u) == 0x7f800000u) { *flag = epoch; return; }
    }
}
extern "C" __global__ void cumath_sparse_nonfinite64(const unsigned long long* x, long long n,
                                                     unsigned long long epoch, unsigned long long* flag) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        if ((x[i] & 0x7ff0000000000000ull) == 0x7ff0000000000000ull) { *flag = epoch; return; }
    }
}
"""
ARG_TYPES = "PqQP"
BLOCK = 256
MAX_BLOCKS = 1024
_unavailable: list = []  # why the kernel could not be built (logged once)


def _kernel(bits: int, device_id: int):
    if _unavailable:
        return None
    try:
        return get_kernel(NONFINITE_SOURCE, f"cumath_sparse_nonfinite{bits}", ARG_TYPES, device_id=device_id)
    except Exception as exc:  # noqa: BLE001 - the check is an extra; the solve is not
        _unavailable.append(exc)
        logger.warning("the check of cuDSS's pivots for NaN and inf is off: its kernel could not be built (%s)", exc)
        return None


def launch(bits: int, device_id: int, ptr: int, words: int, epoch: int, word_ptr: int, stream: int) -> bool:
    """Queue the scan of ``words`` words of ``bits`` bits at ``ptr`` on ``stream``; False when it cannot run."""
    kernel = _kernel(bits, device_id)
    if kernel is None:
        return False
    blocks = max(1, min(MAX_BLOCKS, -(-words // BLOCK)))
    kernel.launch(blocks, BLOCK, 0, stream, ptr, words, epoch, word_ptr)
    return True


class DiagCheck:
    """The NaN/inf check of one solver's pivots: a device buffer for the diagonal, the host word the kernel
    writes, the epoch of the last check (0: none queued)."""

    def __init__(self, n: int, dtype: str, allocator, stream: int, buffers: list, log):
        self.nbytes = n * ITEMSIZE[dtype]
        self.bits = 32 if dtype in ("float32", "complex64") else 64
        self.words = self.nbytes * 8 // self.bits
        self.flag_offset = -(-self.nbytes // 8) * 8  # the device word the kernel writes, 8-byte aligned
        self.buf = allocate(allocator, self.flag_offset + 8, stream)
        buffers.append(self.buf)
        self.word = cuda.pinned_word(self)
        self.epoch = 0
        self.queued = 0
        self.log = log
        self.off = False

    def queue(self, handle: int, data: int, stream: int, device_id: int) -> None:
        """After a factorization (the handle's stream set to ``stream``, its lock held): the diagonal into the
        buffer, the scan behind it."""
        self.queued = 0
        if self.off or not self.words:
            return
        try:
            cudss.cudssDataGet(handle, data, cudss.DataParam.DIAG, self.buf.device_ptr, self.nbytes)
        except CUDSSError as exc:  # a configuration without DIAG: the other checks remain
            self.off = True
            self.log.info("cuDSS gives no factor diagonal here (%s): its pivots are not checked for NaN and inf", exc)
            return
        if not self.epoch:  # once: each check compares with its own epoch afterwards
            cuda.memset(self.buf.device_ptr + self.flag_offset, 0, 8, stream)
        self.epoch += 1
        flag = self.buf.device_ptr + self.flag_offset
        if launch(self.bits, device_id, self.buf.device_ptr, self.words, self.epoch, flag, stream):
            cuda.copy(int(self.word.__array_interface__["data"][0]), flag, 8, cuda.D2H, stream,
                      "the pivot check's word")
            self.queued = self.epoch
        else:
            self.off = True

    def flagged(self) -> bool:
        """Whether the last queued scan found NaN or inf (read after a wait for the stream)."""
        return bool(self.queued) and int(self.word[0]) == self.queued
