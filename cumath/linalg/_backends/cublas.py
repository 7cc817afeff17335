"""The GPU engine of the generic matmul: cuBLAS (gemm, strided-batched gemm, symm, hemm, trmm, dgmm, geam)
through ctypes, on one handle per plan bound to the plan's stream; scalars in host memory."""

from __future__ import annotations

import logging
import weakref

import numpy as np

from ..._bindings import cublas, cudart
from ..._core.cuda import set_device
from .._generic.traits import Caps, Ptr

__all__ = ["CublasEngine"]

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


def _destroy(handle):
    try:
        cublas.cublasDestroy_v2(handle)
    except Exception:  # interpreter shutdown, context gone
        pass


class CublasEngine:
    """Runs plan steps with cuBLAS for one dtype on GPU ``device_id``; ``set_stream`` rebinds the handle."""

    space = "cuda"

    def __init__(self, dtype: str, device_id: int, stream: int, log=logger):
        set_device(device_id)
        self.dtype = dtype
        self.itemsize = np.dtype(dtype).itemsize
        self.prefix = _PREFIX[dtype]
        self.device_id = device_id
        self.handle = cublas.cublasCreate_v2()
        self._finalizer = weakref.finalize(self, _destroy, self.handle)
        cublas.cublasSetPointerMode_v2(self.handle, cublas.cublasPointerMode_t.CUBLAS_POINTER_MODE_HOST)
        cublas.cublasSetStream_v2(self.handle, stream)
        self._stream = stream
        self._values = np.zeros(4, dtype=dtype)  # alpha, beta, one, zero (host memory, read at each call)
        self._values[2] = 1
        base = self._values.ctypes.data
        self._addr = {n: base + i * self.itemsize for i, n in enumerate(("alpha", "beta", "one", "zero"))}
        self.caps = Caps(conj_no_trans=False, strided_batched=True, max_int=(1 << 63) - 1)
        self.log = log
        self._geam = cublas.raw(f"cublas{self.prefix}geam_64")
        if log.isEnabledFor(logging.INFO):
            log.info("cuBLAS %s on GPU %d (handle %#x)", self.version_string(), device_id, self.handle)

    def version_string(self) -> str:
        v = cublas.cublasGetVersion_v2(self.handle)
        return f"{v // 10000}.{v // 100 % 100}.{v % 100}"

    @property
    def description(self) -> str:
        return "cuBLAS"

    @property
    def scalars(self):
        return self

    def set(self, alpha, beta) -> None:
        self._values[0] = alpha
        self._values[1] = beta

    def value(self, name: str):
        return self._values[("alpha", "beta", "one", "zero").index(name)]

    def set_stream(self, stream: int) -> None:
        if stream != self._stream:
            cublas.cublasSetStream_v2(self.handle, stream)
            self._stream = stream

    def compile(self, steps) -> list:
        return [self._compile(s) for s in steps]

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
            scale = self._values[0] != 1
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
        self._finalizer()
        self.handle = 0
