"""The checks around cuDSS on the GPU: its pivots for NaN and inf, its matrix for diagonal dominance and for empty
rows and columns.

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

The dominance check (``DominanceCheck``) reads a general matrix's CSR arrays, a thread per row, and flags the
first row that is not weakly diagonally dominant in the same way (an epoch into a device word, 8 bytes back into
page-locked memory): a dominant matrix is analysed without matching (``cudss.CudssSolver.analyse``).

The pattern check (``PatternCheck``) finds the empty rows and columns of a GPU pattern (a structurally singular
matrix, refused before cuDSS sees it) with two kernels per system and one 32-byte copy per system, where the host
check needed the index arrays copied back (the 1M Poisson system's 20 MB: about 20 ms with the scan). Its kernels
share one source with the others, so a process compiles them once per device.
"""

from __future__ import annotations

import logging

from ...._bindings import cudss
from ...._core import cuda
from ...._core.allocators import allocate
from ...._core.dtypes import ITEMSIZE
from ...._core.kernels import get_kernel
from ....errors import CUDSSError

__all__ = ["NONFINITE_SOURCE", "DOMINANCE_SOURCE", "PATTERN_SOURCE", "CHECKS_SOURCE", "DiagCheck", "DominanceCheck",
           "PatternCheck", "launch", "launch_dominance", "launch_pattern"]

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
        return get_kernel(CHECKS_SOURCE, f"cumath_sparse_nonfinite{bits}", ARG_TYPES, device_id=device_id)
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


DOMINANCE_SOURCE = r"""
// *flag = epoch when a row of the CSR matrix (indptr, indices: int32, zero-based) is not weakly diagonally
// dominant: it does not hold exactly one diagonal entry, or 2 |a_ii| < sum_j |a_ij| (NaN compares false: flagged).
template <typename T> __device__ double cumath_magnitude(T v) { return fabs((double)v); }
template <> __device__ double cumath_magnitude<float2>(float2 v) { return hypot((double)v.x, (double)v.y); }
template <> __device__ double cumath_magnitude<double2>(double2 v) { return hypot(v.x, v.y); }
template <typename T>
__device__ void cumath_dominance(const int* indptr, const int* indices, const T* values, int n,
                                 unsigned long long epoch, unsigned long long* flag) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        double sum = 0.0, diag = 0.0;
        int found = 0;
        for (int k = indptr[i]; k < indptr[i + 1]; ++k) {
            double m = cumath_magnitude(values[k]);
            sum += m;
            if (indices[k] == i) { diag = m; ++found; }
        }
        if (!(found == 1 && 2.0 * diag >= sum)) { *flag = epoch; return; }
    }
}
extern "C" __global__ void cumath_sparse_dominance_float32(const int* p, const int* j, const float* v, int n,
        unsigned long long e, unsigned long long* f) { cumath_dominance(p, j, v, n, e, f); }
extern "C" __global__ void cumath_sparse_dominance_float64(const int* p, const int* j, const double* v, int n,
        unsigned long long e, unsigned long long* f) { cumath_dominance(p, j, v, n, e, f); }
extern "C" __global__ void cumath_sparse_dominance_complex64(const int* p, const int* j, const float2* v, int n,
        unsigned long long e, unsigned long long* f) { cumath_dominance(p, j, v, n, e, f); }
extern "C" __global__ void cumath_sparse_dominance_complex128(const int* p, const int* j, const double2* v, int n,
        unsigned long long e, unsigned long long* f) { cumath_dominance(p, j, v, n, e, f); }
"""


PATTERN_SOURCE = r"""
// The pattern's gaps: w[0] = n - (first row with no stored entry), w[1] = how many such rows (0, 0: none);
// seen[j] = 1 for each column j that holds an entry (and, with lines != 0, for each row i that does: a triangle
// standing for its mirror too). Then w[2], w[3] the same for the lines j with seen[j] == 0. w and seen zeroed
// before. Indices outside [0, n) mark nothing.
template <typename P, typename J>
__device__ void cumath_pattern_rows(const P* indptr, const J* indices, long long n, int lines, unsigned char* seen,
                                    unsigned long long* w) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        long long lo = (long long)indptr[i], hi = (long long)indptr[i + 1];
        if (hi <= lo) {
            if (!lines) { atomicMax(&w[0], (unsigned long long)(n - i)); atomicAdd(&w[1], 1ull); }
        } else if (lines) {
            seen[i] = 1;
        }
        for (long long k = lo; k < hi; ++k) {
            long long j = (long long)indices[k];
            if (j >= 0 && j < n) seen[j] = 1;
        }
    }
}
#define CUMATH_PATTERN_ROWS(P, J, SUFFIX) \
    extern "C" __global__ void cumath_sparse_pattern_rows_##SUFFIX(const P* p, const J* j, long long n, int lines, \
        unsigned char* seen, unsigned long long* w) { cumath_pattern_rows(p, j, n, lines, seen, w); }
CUMATH_PATTERN_ROWS(int, int, int32_int32)
CUMATH_PATTERN_ROWS(int, long long, int32_int64)
CUMATH_PATTERN_ROWS(long long, int, int64_int32)
CUMATH_PATTERN_ROWS(long long, long long, int64_int64)
extern "C" __global__ void cumath_sparse_pattern_lines(const unsigned char* seen, long long n,
                                                       unsigned long long* w) {
    for (long long j = blockIdx.x * (long long)blockDim.x + threadIdx.x; j < n;
         j += (long long)gridDim.x * blockDim.x) {
        if (!seen[j]) { atomicMax(&w[2], (unsigned long long)(n - j)); atomicAdd(&w[3], 1ull); }
    }
}
"""
#: every kernel of this module in one source: one compilation (cached) per process and device
CHECKS_SOURCE = NONFINITE_SOURCE + DOMINANCE_SOURCE + PATTERN_SOURCE


_dominance_unavailable: list = []


def launch_dominance(dtype: str, device_id: int, indptr: int, indices: int, values: int, n: int, epoch: int,
                     flag: int, stream: int) -> bool:
    """Queue the dominance check of an ``n``-row CSR matrix (int32 ``indptr``/``indices``, ``dtype`` values, device
    addresses) on ``stream``, writing ``epoch`` at ``flag`` for a row that is not dominant; False when its kernel
    cannot be built (logged once)."""
    if _dominance_unavailable:
        return False
    try:
        kernel = get_kernel(CHECKS_SOURCE, f"cumath_sparse_dominance_{dtype}", "PPPiQP", device_id=device_id)
    except Exception as exc:  # noqa: BLE001 - an extra: cuDSS's own matching stays
        _dominance_unavailable.append(exc)
        logger.info("the diagonal dominance check is off: its kernel could not be built (%s); cuDSS matches as it "
                    "chooses", exc)
        return False
    blocks = max(1, min(MAX_BLOCKS * 4, -(-n // BLOCK)))
    kernel.launch(blocks, BLOCK, 0, stream, indptr, indices, values, n, epoch, flag)
    return True


class DominanceCheck:
    """Whether a general matrix's values on the GPU are (weakly) row diagonally dominant (as
    ``_traits.DiagonalDominance`` decides on the host): one kernel over its CSR arrays flags the first row that is
    not, writing the check's epoch into a device word copied (8 bytes) into page-locked host memory. Queued on
    the caller's stream; read after a wait for it (``dominant()``). Used to analyse such a matrix without
    matching, and, before each factorization of new values, to learn whether that analysis still fits them (the
    read then follows the factorization's own status wait, so it costs no wait of its own)."""

    def __init__(self, dtype: str, device_id: int, allocator, stream: int, buffers: list):
        self.dtype, self.device_id = dtype, device_id
        self.buf = allocate(allocator, 8, stream)
        buffers.append(self.buf)
        cuda.memset(self.buf.device_ptr, 0, 8, stream)
        self.word = cuda.pinned_word(self)
        self.epoch = 0

    def queue(self, indptr: int, indices: int, values: int, n: int, stream: int) -> bool:
        """Queue a check of these arrays; False when the check cannot run (its answer is then not dominant)."""
        self.epoch += 1
        if not launch_dominance(self.dtype, self.device_id, indptr, indices, values, n, self.epoch,
                                self.buf.device_ptr, stream):
            return False
        cuda.copy(int(self.word.__array_interface__["data"][0]), self.buf.device_ptr, 8, cuda.D2H, stream,
                  "the dominance check's word")
        return True

    def dominant(self) -> bool:
        """The last queued check's answer (read after a wait for its stream)."""
        return int(self.word[0]) != self.epoch


_pattern_unavailable: list = []


def launch_pattern(indptr_dtype: str, index_dtype: str, device_id: int, indptr: int, indices: int, n: int,
                   lines: bool, seen: int, words: int, stream: int) -> bool:
    """Queue the gap scan of an ``n``-row CSR pattern (device addresses; ``seen``: ``n`` zeroed bytes, ``words``:
    four zeroed words) on ``stream``; False when its kernels cannot be built (logged once)."""
    if _pattern_unavailable:
        return False
    try:
        rows = get_kernel(CHECKS_SOURCE, f"cumath_sparse_pattern_rows_{indptr_dtype}_{index_dtype}", "PPqiPP",
                          device_id=device_id)
        cols = get_kernel(CHECKS_SOURCE, "cumath_sparse_pattern_lines", "PqP", device_id=device_id)
    except Exception as exc:  # noqa: BLE001 - the host check remains
        _pattern_unavailable.append(exc)
        logger.info("the GPU check of a's pattern is off: its kernels could not be built (%s); a's indices are "
                    "checked on the host", exc)
        return False
    blocks = max(1, min(MAX_BLOCKS * 4, -(-n // BLOCK)))
    rows.launch(blocks, BLOCK, 0, stream, indptr, indices, n, int(lines), seen, words)
    cols.launch(blocks, BLOCK, 0, stream, seen, n, words)
    return True


class PatternCheck:
    """Empty rows and columns of GPU patterns found on the GPU (``_traits.structurally_singular`` on the host
    reads copies of the index arrays: 19 ms for the 1M Poisson system's, most of it marking columns; these
    kernels take well under a millisecond): per system, two kernels write four words (the first empty row and
    their count, the first empty column and theirs), copied into page-locked memory and read after one wait."""

    def __init__(self, allocator, device_id: int, buffers: list):
        self.allocator, self.device_id, self.buffers = allocator, device_id, buffers
        self.seen, self.n = None, 0  # n bytes, the largest n so far
        self.words, self.count = None, 0  # four device words per system
        self.host = None

    def _room(self, n: int, count: int, stream: int) -> None:
        if n > self.n:
            self.seen, self.n = allocate(self.allocator, n, stream), n
            self.buffers.append(self.seen)
        if count > self.count:
            self.words, self.count = allocate(self.allocator, 32 * count, stream), count
            self.buffers.append(self.words)
            self.host = cuda.pinned_word(self, 4 * count)

    def gaps(self, patterns, dtypes, sizes, lines: bool, stream: int):
        """``patterns``: per system (indptr, indices) device addresses, ``dtypes`` their index dtypes, ``sizes``
        the systems' orders. Per system ((first empty row, count), (first empty line, count)), None entries where
        there is none; None when the kernels cannot run."""
        count = len(patterns)
        sizes = sizes[:count]
        self._room(max(sizes), count, stream)
        cuda.memset(self.words.device_ptr, 0, 32 * count, stream)
        for i, ((indptr, indices), n) in enumerate(zip(patterns, sizes)):
            cuda.memset(self.seen.device_ptr, 0, n, stream)
            if not launch_pattern(dtypes[0], dtypes[1], self.device_id, indptr, indices, n, lines,
                                  self.seen.device_ptr, self.words.device_ptr + 32 * i, stream):
                return None
        cuda.copy(int(self.host.__array_interface__["data"][0]), self.words.device_ptr, 32 * count, cuda.D2H,
                  stream, "the pattern check's words")
        cuda.synchronize(stream)
        w = [int(x) for x in self.host[:4 * count]]
        out = []
        for i, n in enumerate(sizes):
            r0, rc, c0, cc = w[4 * i:4 * i + 4]
            out.append(((n - r0, rc) if rc else None, (n - c0, cc) if cc else None))
        return out
