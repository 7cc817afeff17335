"""The GPU engine of the generic matmul: cuBLAS (gemm, strided-batched gemm, symm, hemm, trmm, dgmm, geam)
through ctypes, on one handle per plan bound to the plan's stream; scalars in host memory.

Explicit batches share one handle (``CublasHandle``) among their members' engines, and their general products
run as one ``GroupedGemm``: cublas<t>gemmGroupedBatched (S, D) or cublas<t>gemmBatched per group (C, Z)."""

from __future__ import annotations

import itertools
import logging
import weakref

import numpy as np

from ..._bindings import cublas, cudart
from ..._core import cuda
from ..._core.cuda import set_device
from ..._core.lifecycle import release_quietly
from ...memory import allocate
from .._generic.traits import Caps, Ptr
from . import GemmCall, Scalars, gemm_call

__all__ = ["CublasEngine", "CublasHandle", "GroupedGemm", "create"]

logger = logging.getLogger(__name__)

_PREFIX = {"float32": "S", "float64": "D", "complex64": "C", "complex128": "Z"}
_OP = {"N": 0, "T": 1, "C": 2}
_SIDE = {"L": 0, "R": 1}
_UPLO = {"L": 0, "U": 1}
_DIAG = {"N": 0, "U": 1}
_NAMES = {"gemm": "cublas{p}gemm_v2_64", "gemm_batched": "cublas{p}gemmStridedBatched_64",
          "symm": "cublas{p}symm_v2_64", "hemm": "cublas{p}hemm_v2_64", "trmm": "cublas{p}trmm_v2_64",
          "geam": "cublas{p}geam_64", "dgmm": "cublas{p}dgmm_64"}
# which enum table each leading symbolic argument of a routine uses
_ENUMS = {"gemm": (_OP, _OP), "gemm_batched": (_OP, _OP), "symm": (_SIDE, _UPLO), "hemm": (_SIDE, _UPLO),
          "trmm": (_SIDE, _UPLO, _OP, _DIAG), "geam": (_OP, _OP), "dgmm": (_SIDE,)}
_COLUMN = {"A": 0, "B": 1, "D": 2}  # where a gemm pointer comes from in a member's (A, B, D) triple



class CublasHandle:
    """One cuBLAS handle on GPU ``device_id`` (pointer mode host), bound to one stream at a time; ``free()``
    destroys it (once; a finalizer does it if nobody calls free)."""

    def __init__(self, device_id: int, stream: int):
        set_device(device_id)
        self.device_id = device_id
        self.value = cublas.cublasCreate_v2()
        self._finalizer = weakref.finalize(self, release_quietly, cublas.cublasDestroy_v2, self.value)
        cublas.cublasSetPointerMode_v2(self.value, cublas.cublasPointerMode_t.CUBLAS_POINTER_MODE_HOST)
        cublas.cublasSetStream_v2(self.value, stream)
        self.stream = stream

    def set_stream(self, stream: int) -> None:
        if stream != self.stream:
            cublas.cublasSetStream_v2(self.value, stream)
            self.stream = stream

    def version_string(self) -> str:
        v = cublas.cublasGetVersion_v2(self.value)
        return f"{v // 10000}.{v // 100 % 100}.{v % 100}"

    def free(self) -> None:
        self._finalizer()
        self.value = 0


class CublasEngine:
    """Runs plan steps with cuBLAS for one dtype on GPU ``device_id``; ``set_stream`` rebinds the handle.
    ``handle``: a shared ``CublasHandle`` (the engine then leaves it alive when freed), or None for its own."""

    space = "cuda"
    threaded = False

    def __init__(self, dtype: str, device_id: int, stream: int, log=logger, handle: CublasHandle | None = None):
        self._owns = handle is None
        self._h = CublasHandle(device_id, stream) if handle is None else handle
        self.dtype = dtype
        self.itemsize = np.dtype(dtype).itemsize
        self.prefix = _PREFIX[dtype]
        self.device_id = device_id
        self.handle = self._h.value
        self.scalars = Scalars(dtype, by_value=False)  # host memory, read at each call (pointer mode host)
        self._addr = self.scalars.args
        self.caps = Caps(conj_no_trans=False, strided_batched=True, max_int=(1 << 63) - 1)
        self.log = log
        self._geam = cublas.raw(f"cublas{self.prefix}geam_64")
        if self._owns and log.isEnabledFor(logging.INFO):
            log.info("cuBLAS %s on GPU %d (handle %#x)", self.version_string(), device_id, self.handle)

    def version_string(self) -> str:
        return self._h.version_string()

    @property
    def _stream(self) -> int:
        return self._h.stream

    @property
    def description(self) -> str:
        return "cuBLAS"

    def set_stream(self, stream: int) -> None:
        self._h.set_stream(stream)

    def compile(self, steps) -> list:
        return [self._compile(s) for s in steps]

    def gemm_call(self, step) -> GemmCall | None:
        """The cuBLAS gemm of a step that is one general product at offset 0 (None for any other step)."""
        return gemm_call(step, _OP, lambda: cublas.raw(_NAMES["gemm"].format(p=self.prefix)), (self.handle,),
                         cublas.check)

    def _compile(self, step):
        routine, args = step.routine, step.args
        if routine == "zero":
            nbytes = args[0] * self.itemsize
            name = args[1].name

            def run(ptrs):
                cudart.cudaMemsetAsync(ptrs[name], 0, nbytes, self._stream)
            return run
        fn = cublas.raw(_NAMES[routine].format(p=self.prefix))
        enums = _ENUMS[routine]
        template = [self.handle]
        for i, a in enumerate(args):
            if i < len(enums):
                template.append(enums[i][a])
            elif isinstance(a, Ptr):
                template.append(0)
            elif a in self._addr:
                template.append(self._addr[a])
            else:
                template.append(a)
        slots = [i + 1 for i in step.pointer_slots()]
        names = [template_name.name for template_name in (args[i - 1] for i in slots)]
        item = self.itemsize
        offsets = [tuple((o + args[s - 1].offset) * item for o, s in zip(offs, slots)) for offs in step.offsets]
        if routine == "dgmm":
            del template[4]  # cuBLAS dgmm takes no alpha: scaled afterwards when alpha != 1
            slots = [s - 1 if s > 4 else s for s in slots]
            m, n, ldo = args[1], args[2], args[9]
            return self._dgmm_run(fn, template, slots, names, offsets, m, n, ldo)
        check = cublas.check

        def run(ptrs):
            t = list(template)
            for offs in offsets:
                for s, name, off in zip(slots, names, offs):
                    t[s] = ptrs[name] + off
                status = fn(*t)
                if status:
                    check(status, f"{routine} on GPU {self.device_id}")
        return run

    def _dgmm_run(self, fn, template, slots, names, offsets, m, n, ldo):
        check = cublas.check
        addr = self._addr
        geam = self._geam
        handle = self.handle

        def run(ptrs):
            t = list(template)
            scale = self.scalars.values[0] != 1
            for offs in offsets:
                for s, name, off in zip(slots, names, offs):
                    t[s] = ptrs[name] + off
                status = fn(*t)
                if status:
                    check(status, "dgmm")
                if scale:  # out = alpha * out, in place (geam's in-place mode: C = A, op N, ldc = lda)
                    out = t[-2]
                    status = geam(handle, 0, 0, m, n, addr["alpha"], out, ldo, addr["zero"], out, ldo, out, ldo)
                    if status:
                        check(status, "geam")
        return run

    def conj_copy(self, src: int, dst: int, count: int) -> None:
        """dst[i] = conj(src[i]) for ``count`` contiguous elements: geam with op C on a count x 1 matrix."""
        if count == 0:
            return
        # B (scaled by zero) is the source again, so that only valid memory is named
        status = self._geam(self.handle, _OP["C"], _OP["C"], 1, count, self._addr["one"], src, count,
                            self._addr["zero"], src, count, dst, 1)
        if status:
            cublas.check(status, "geam (conjugated copy)")

    def enter(self):
        return None

    def exit(self, token) -> None:
        pass

    def free(self) -> None:
        if self._owns:
            self._h.free()
        self.handle = 0

    def gemm_problems(self, steps):
        """The single products of ``steps`` as ``(key, slots)`` pairs: key (transa, transb, m, n, k, lda, ldb,
        ldc, alpha name, beta name) in cuBLAS terms, slots the (column in (A, B, D), byte offset) of the A, B
        and C pointers of cuBLAS. None when a step is not a general product (the steps then run as compiled)."""
        out = []
        item = self.itemsize
        for step in steps:
            r, a = step.routine, step.args
            if r == "gemm":
                ta, tb, m, n, k, al, pa, lda, pb, ldb, be, pd, ldd = a
                count, strides = 1, (0, 0, 0)
            elif r == "gemm_batched":
                ta, tb, m, n, k, al, pa, lda, sa, pb, ldb, sb, be, pd, ldd, sd, count = a
                strides = (sa, sb, sd)
            else:
                return None
            if ta not in _OP or tb not in _OP:
                return None
            key = (_OP[ta], _OP[tb], m, n, k, lda, ldb, ldd, al, be)
            ptrs = (pa, pb, pd)
            for offs in step.offsets:
                for i in range(count):
                    out.append((key, tuple((_COLUMN[p.name], (o + p.offset + i * s) * item)
                                           for p, o, s in zip(ptrs, offs, strides))))
        return out


_DTYPE_ORDER = ("float32", "float64", "complex64", "complex128")


class GroupedGemm:
    """The general products of an explicit batch's members in as few cuBLAS calls as the library allows.

    ``problems``: ``(row, engine, key, slots)`` per product (``CublasEngine.gemm_problems``), where ``row`` is
    the member's place in the (A, B, D) pointer triples given to ``launch``. Products are grouped by dtype and
    (transa, transb, m, n, k, lda, ldb, ldc, alpha, beta): real dtypes run as one cublas<t>gemmGroupedBatched
    call each, complex ones (which grouped-batched lacks) as one cublas<t>gemmBatched call per group. The
    per-product A, B and C pointers live in one device buffer owned by this object ([A..., B..., C...], in
    group order), uploaded when a launch's pointers differ from the last upload's."""

    def __init__(self, handle: CublasHandle, problems, allocator, stream: int, log=logger):
        self.h = handle
        self.problems = problems
        self.count = len(problems)
        self.log = log
        slots = [p[3] for p in problems]
        self._rows = np.array([p[0] for p in problems], dtype=np.intp)
        self._cols = np.array([[s[j][0] for s in slots] for j in range(3)], dtype=np.intp)
        self._offs = np.array([[s[j][1] for s in slots] for j in range(3)], dtype=np.int64)
        self._buf = allocate(allocator, 3 * 8 * self.count, stream)
        self.nbytes = self._buf.size
        self._stream = stream
        self._calls = None
        self._uploaded = None  # the pointer triples of the last upload
        self._host = None  # the host copy of the last upload (kept alive)

    def invalidate(self) -> None:
        """alpha or beta changed: regroup at the next launch."""
        self._calls = None

    def _grouped_function(self, prefix: str):
        if prefix not in "SD":
            return None
        try:
            return cublas.raw(f"cublas{prefix}gemmGroupedBatched_64")
        except AttributeError:  # cuBLAS before 12.5
            return None

    def _plan_calls(self) -> None:
        groups = {}
        for p, (_, eng, key, _) in enumerate(self.problems):
            sc = eng.scalars
            gkey = (eng.dtype, eng.prefix) + key[:8] + (sc.value(key[8]).item(), sc.value(key[9]).item())
            groups.setdefault(gkey, []).append(p)
        keys = sorted(groups, key=lambda k: _DTYPE_ORDER.index(k[0]))  # stable: first-seen order within a dtype
        order = np.array([p for k in keys for p in groups[k]], dtype=np.intp)
        self._o_rows = self._rows[order]
        self._o_cols = self._cols[:, order]
        self._o_offs = self._offs[:, order]
        self._uploaded = None
        stride = 8 * self.count
        base = self._buf.device_ptr
        arrays = (base, base + stride, base + 2 * stride)  # Aarray, Barray, Carray
        handle = self.h.value
        calls, keep, start = [], [], 0
        for (dtype, prefix), ks in itertools.groupby(keys, key=lambda k: k[:2]):
            ks = list(ks)
            sizes = [len(groups[k]) for k in ks]
            fn = self._grouped_function(prefix)
            if fn is not None:
                cols = list(zip(*[k[2:] for k in ks]))  # transa, transb, m, n, k, lda, ldb, ldc, alpha, beta
                ops = [np.array(cols[i], dtype=np.int32) for i in (0, 1)]  # cublasOperation_t: a C enum
                dims = [np.array(cols[i], dtype=np.int64) for i in range(2, 8)]
                alpha, beta = np.array(cols[8], dtype=dtype), np.array(cols[9], dtype=dtype)
                gsize = np.array(sizes, dtype=np.int64)
                keep += ops + dims + [alpha, beta, gsize]
                a, b, c = (x + 8 * start for x in arrays)
                d = [x.ctypes.data for x in dims]
                args = (handle, ops[0].ctypes.data, ops[1].ctypes.data, d[0], d[1], d[2], alpha.ctypes.data, a,
                        d[3], b, d[4], beta.ctypes.data, c, d[5], len(ks), gsize.ctypes.data)
                calls.append((fn, args, f"cublas{prefix}gemmGroupedBatched_64"))
            else:
                fn = cublas.raw(f"cublas{prefix}gemmBatched_64")
                s = start
                for k, size in zip(ks, sizes):
                    scalars = np.array(k[10:12], dtype=dtype)
                    keep.append(scalars)
                    a, b, c = (x + 8 * s for x in arrays)
                    args = (handle, k[2], k[3], k[4], k[5], k[6], scalars.ctypes.data, a, k[7], b, k[8],
                            scalars.ctypes.data + scalars.itemsize, c, k[9], size)
                    calls.append((fn, args, f"cublas{prefix}gemmBatched_64"))
                    s += size
            start += sum(sizes)
        self._keep = keep
        self._calls = calls
        if self.log.isEnabledFor(logging.INFO):
            self.log.info("explicit batch: %d general product%s in %d group%s, %d cuBLAS call%s (%s)", self.count,
                          "" if self.count == 1 else "s", len(keys), "" if len(keys) == 1 else "s", len(calls),
                          "" if len(calls) == 1 else "s", ", ".join(sorted({w for _, _, w in calls})))

    def launch(self, triples: list, stream: int) -> None:
        """Run every product; ``triples`` is the flat list of each member's A, B and D addresses."""
        if self._calls is None:
            self._plan_calls()
        if stream != self._stream:  # the last launch, on another stream, may still read the pointer arrays
            cuda.synchronize(self._stream)
            self._stream = stream
        if triples != self._uploaded:
            bases = np.array(triples, dtype=np.int64).reshape(-1, 3)
            host = np.ascontiguousarray(bases[self._o_rows, self._o_cols])  # (fancy indexing may give F order)
            host += self._o_offs
            cuda.copy(self._buf.device_ptr, host.ctypes.data, host.nbytes, cuda.H2D, stream,
                      "matmul pointer arrays")
            self._host, self._uploaded = host, triples
        check = cublas.check
        for fn, args, what in self._calls:
            status = fn(*args)
            if status:
                check(status, f"{what} on GPU {self.h.device_id}")

    def free(self) -> None:
        if self._buf is not None:
            self._buf.free()
            self._buf = None
        self._calls = None


def create(dtype: str, placement, options, log, handle=None) -> CublasEngine:
    """The GPU engine of a plan, on the plan's GPU and stream; ``handle``: a shared CublasHandle (explicit
    batches) or None for one of its own."""
    return CublasEngine(dtype, placement.device, placement.stream, log, handle=handle)
