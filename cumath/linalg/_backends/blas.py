"""The CPU engine of the generic matmul: CBLAS (NumPy's OpenBLAS by default, or MKL) called directly on the
caller's memory, column-major, with the transposes the plan chose. Diagonal products (BLAS has no dgmm) and
the combination of a workspace with beta * C are NumPy operations writing into the output."""

from __future__ import annotations

import logging

import numpy as np

from ..._bindings import blas
from ..._core.frameworks.numpy import from_pointer
from .._generic.traits import Caps, Ptr
from . import GemmCall, Scalars, gemm_call

__all__ = ["BlasEngine", "create"]

logger = logging.getLogger(__name__)

_PREFIX = {"float32": "s", "float64": "d", "complex64": "c", "complex128": "z"}
_OP = {"N": 111, "T": 112, "C": 113, "CN": 114}
_SIDE = {"L": 141, "R": 142}
_UPLO = {"U": 121, "L": 122}
_DIAG = {"N": 131, "U": 132}
_COL = int(blas.CBLAS_ORDER.CblasColMajor)


class BlasEngine:
    """Runs plan steps with one CBLAS library for one dtype. ``num_threads`` (or None: the library's own
    setting) is applied to the calling thread around each execution."""

    space = "cpu"

    def __init__(self, dtype: str, requested: str = "auto", num_threads: int | None = None, log=logger):
        self.lib = blas.find_blas(requested)
        self.dtype = dtype
        self.itemsize = np.dtype(dtype).itemsize
        self.prefix = _PREFIX[dtype]
        self.num_threads = num_threads
        self.threaded = num_threads is not None
        # CBLAS takes real scalars by value, complex ones by address
        self.scalars = Scalars(dtype, by_value=np.dtype(dtype).kind != "c")
        p = self.prefix
        self.caps = Caps(conj_no_trans=self.lib.conj_no_trans,
                         strided_batched=self.lib.has(f"cblas_{p}gemm_batch_strided"),
                         max_int=self.lib.max_int)
        self.log = log

    @property
    def description(self) -> str:
        return self.lib.provider.description

    def compile(self, steps) -> list:
        """One callable ``run(ptrs)`` per step (``ptrs`` maps 'A', 'B', 'D', 'W', 'X' to addresses)."""
        return [self._compile(s) for s in steps]

    def gemm_call(self, step) -> GemmCall | None:
        """The CBLAS gemm of a step that is one general product at offset 0 (None for any other step)."""
        return gemm_call(step, _OP, lambda: getattr(self.lib, f"cblas_{self.prefix}gemm"), (_COL,), None)

    def _compile(self, step):
        routine, args = step.routine, step.args
        slots = step.pointer_slots()
        names = [args[i].name for i in slots]
        item = self.itemsize
        base = [args[i].offset for i in slots]
        offsets = [tuple((o + b) * item for o, b in zip(offs, base)) for offs in step.offsets]
        sc = self.scalars
        scalar_slots = [(i, a) for i, a in enumerate(args) if a in ("alpha", "beta", "one", "zero")]
        lib, p = self.lib, self.prefix
        if routine in ("gemm", "gemm_batched", "symm", "hemm", "trmm"):
            if routine == "gemm_batched" and not self.caps.strided_batched:  # pragma: no cover - old OpenBLAS
                raise RuntimeError("gemm_batched was planned for a library without it")
            name = {"gemm": "gemm", "gemm_batched": "gemm_batch_strided"}.get(routine, routine)
            fn = getattr(lib, f"cblas_{p}{name}")
            template = [_COL] + [_translate(routine, i, a) for i, a in enumerate(args)]
            if routine == "trmm":
                return self._trmm(fn, template, slots, names, offsets, scalar_slots, args)
            call = self.gemm_call(step)
            if call is not None:  # one product: the arguments laid out once
                _, head, an, first, ldf, second, lds, bn, ldd, _ = call
                nf, ns = first.upper(), second.upper()

                def run(ptrs, fn=fn, head=head):
                    by = sc.args
                    fn(*head, by[an], ptrs[nf], ldf, ptrs[ns], lds, by[bn], ptrs["D"], ldd)
                return run

            def run(ptrs, fn=fn, template=template):
                t = list(template)
                by = sc.args
                for i, a in scalar_slots:
                    t[i + 1] = by[a]
                for offs in offsets:
                    for j, (i, n) in enumerate(zip(slots, names)):
                        t[i + 1] = ptrs[n] + offs[j]
                    fn(*t)
            return run
        if routine == "dgmm":
            return self._dgmm(args, slots, names, offsets)
        if routine == "geam":
            return self._geam(args, slots, names, offsets)
        if routine == "zero":
            count = args[0]

            def run(ptrs):
                from_pointer(ptrs[names[0]], (count,), (1,), self.dtype)[...] = 0
            return run
        raise ValueError(f"unknown routine {routine}")  # pragma: no cover

    # ---------------------------------------------------------------------------- routines beyond CBLAS
    def _view(self, ptr: int, rows: int, cols: int, ld: int):
        """A column-major rows x cols matrix at ``ptr`` as a NumPy array of shape (cols, rows) (its transpose)."""
        return from_pointer(ptr, (cols, rows), (ld, 1), self.dtype)

    def _trmm(self, fn, template, slots, names, offsets, scalar_slots, args):
        """D := alpha * op(T) @ G: CBLAS trmm works in place, so G is first copied into the output."""
        m, n, ldt, ldg, ldo = args[4], args[5], args[8], args[10], args[12]
        sc = self.scalars
        head = template[:7]  # order, side, uplo, trans, diag, m, n

        def run(ptrs):
            alpha = sc.args[args[6]]
            for offs in offsets:
                t = ptrs[names[0]] + offs[0]
                g = ptrs[names[1]] + offs[1]
                o = ptrs[names[2]] + offs[2]
                if g != o:
                    np.copyto(self._view(o, m, n, ldo), self._view(g, m, n, ldg))
                fn(*head, alpha, t, ldt, o, ldo)
        return run

    def _dgmm(self, args, slots, names, offsets):
        side, m, n, _alpha, _g, ldg, _x, inc, _o, ldo = args
        nx = m if side == "L" else n
        sc = self.scalars
        span = (nx - 1) * abs(inc)

        def run(ptrs):
            alpha = sc.value("alpha")
            for offs in offsets:
                g = self._view(ptrs[names[0]] + offs[0], m, n, ldg)
                xp = ptrs[names[1]] + offs[1]
                if inc < 0:
                    xp += span * self.itemsize
                x = from_pointer(xp, (nx,), (inc,), self.dtype)
                o = self._view(ptrs[names[2]] + offs[2], m, n, ldo)
                scale = x * alpha if alpha != 1 else x
                np.multiply(g, scale[None, :] if side == "L" else scale[:, None], out=o)
        return run

    def _geam(self, args, slots, names, offsets):
        opa, opb, m, n, alpha_name, _a, lda, beta_name, _b, ldb, _c, ldc = args
        sc = self.scalars

        def operand(ptr, op, ld):
            if op == "N":
                return self._view(ptr, m, n, ld)
            v = self._view(ptr, n, m, ld).T
            return v.conj() if op == "C" else v

        def run(ptrs):
            alpha, beta = sc.value(alpha_name), sc.value(beta_name)
            for offs in offsets:
                out = self._view(ptrs[names[2]] + offs[2], m, n, ldc)
                if alpha == 0 and beta == 0:
                    out[...] = 0
                    continue
                acc = None
                if alpha != 0:
                    acc = operand(ptrs[names[0]] + offs[0], opa, lda) * alpha
                if beta != 0:
                    b = operand(ptrs[names[1]] + offs[1], opb, ldb) * beta
                    acc = b if acc is None else np.add(acc, b, out=acc)
                out[...] = acc
        return run

    # ------------------------------------------------------------------------------------------ threads
    def enter(self):
        """Apply ``num_threads`` to the calling thread; returns what exit() needs to restore it."""
        if self.num_threads is None:
            return None
        return self.lib.set_num_threads_local(self.num_threads)

    def exit(self, token) -> None:
        if token is not None:
            self.lib.set_num_threads_local(token)

    def free(self) -> None:
        pass


def _translate(routine: str, index: int, value):
    """CBLAS enum values for the symbolic arguments of a step (pointers and scalars are filled in later)."""
    if isinstance(value, Ptr) or value in ("alpha", "beta", "one", "zero"):
        return 0
    if not isinstance(value, str):
        return value
    if routine in ("gemm", "gemm_batched"):
        return _OP[value]
    if routine in ("symm", "hemm"):
        return (_SIDE if index == 0 else _UPLO)[value]
    if routine == "trmm":
        return (_SIDE, _UPLO, _OP, _DIAG)[index][value]
    raise ValueError(f"unexpected argument {value!r} of {routine}")  # pragma: no cover


def create(dtype: str, placement, options, log, handle=None) -> BlasEngine:
    """The CPU engine of a plan: the BLAS ``options.cpu_blas`` names, the thread count the caller named (else
    the library's own setting)."""
    threads = placement.execution.num_threads if placement.user_threads else None
    return BlasEngine(dtype, options.cpu_blas, threads, log)
