"""The CPU engine of the dense direct solver: LAPACK (NumPy's OpenBLAS by default, or MKL) on host memory.

One system runs in the calling thread on LAPACK's own threads. A batch runs one LAPACK call per system (two for
an LU factorization and solve of a transposed matrix, which ``?gesv`` cannot take), in the calling thread or
split into parts across worker threads and the calling thread, each calling LAPACK with one thread
(``cpu_threads`` in ``_traits`` decides). Every integer argument lives in plan-owned arrays of the library's
integer width, so a call passes only addresses. With the compiled extension a program is also a table of machine
words (``run_table``): a part runs as one native call with the GIL released once, which is what lets two threads
share a batch of calls of a few microseconds each. Without it the routines are bound without argument types
(``LAPACKLibrary.untyped``) and called one by one: worker threads release the GIL for each call, and a batch of
small systems in the calling thread keeps it (no hand-over per call).
"""

from __future__ import annotations

import ctypes
import functools
import logging
from ctypes import c_size_t, c_void_p

import numpy as np

from ...._bindings.lapack import ROUTINES, find_lapack
from ...._core._fast import run_table
from ...._core.threads import run_parts, worker_pool
from ...._core.frameworks.numpy import from_pointer
from ....errors import LAPACKError
from .._traits import cpu_threads
from . import ProgramCache

__all__ = ["LapackEngine", "Program", "GIL_HELD_UP_TO", "create"]

logger = logging.getLogger(__name__)

_PREFIX = {"float32": "s", "float64": "d", "complex64": "c", "complex128": "z"}


class Program(list):
    """A list of ``(fn, args)`` native calls; ``per``: how many consecutive calls belong to one system (a
    threaded run splits the list only between systems); ``threads``: how many worker threads run it (1: the
    calling thread)."""

    per = 1
    threads = 1
    #: the calls as a table of machine words for ``run_table`` (None without the compiled extension), and
    #: ``call()``, all of them as one native call
    table = None
    call = None


def _pool(lib, workers: int):
    """The process's worker threads for ``lib`` (each set to one LAPACK thread once, when it starts)."""
    return worker_pool(f"lapack-{lib.name}", workers, lib.set_num_threads_local, (1,))


#: In the calling thread, LAPACK calls on systems of order up to this many keep the GIL: a getrf of order 32 takes
#: about 5 us, and releasing and taking back the GIL around each call cost about 0.25 us more; a call this short
#: does not keep other Python threads waiting noticeably.
GIL_HELD_UP_TO = 64


#: A threaded batch is cut into this many parts per worker thread, taken by the workers as they come free.
PARTS_PER_THREAD = 4


def _as_ctypes(args: tuple, addresses: int) -> tuple:
    """A call's arguments as ctypes instances (the first ``addresses`` are addresses, the rest hidden lengths)."""
    return tuple(c_void_p(v) for v in args[:addresses]) + tuple(c_size_t(v) for v in args[addresses:])


def _run_rows(program, lo: int, hi: int) -> None:
    """Calls lo..hi-1 of ``program``: one native call where the program has a table, else call by call."""
    table = program.table
    if table is not None:
        run_table(table.ctypes.data, table.shape[0], table.shape[1], lo, hi)
    else:
        for fn, args in program[lo:hi]:
            fn(*args)


class LapackEngine(ProgramCache):
    """LAPACK programs for one problem set (see the package's docstring). ``threads``: worker threads a batch
    is split across (1: the calling thread); ``named``: the caller's thread count for LAPACK itself (None:
    the library's setting)."""

    space = "cpu"
    error_class = LAPACKError

    def __init__(self, problems, lib, threads: int = 1, named: int | None = None, keeps_gil: bool = False,
                 solve_threads: int | None = None):
        g, f, r = problems.geom, problems.factor, problems.rhs
        self.lib, self.geom, self.problems = lib, g, problems
        self.threads, self.named = threads, named
        self.solve_threads = threads if solve_threads is None else solve_threads
        self.direct = threads == 1 and named is None  # programs may run inline in the caller's loop
        it = np.dtype(lib.int_dtype)
        self._ints = np.array([g.n, g.nrhs, f.ld, r.ld], dtype=it)
        base = self._ints.ctypes.data
        self._n, self._nrhs, self._lda, self._ldb = (base + i * it.itemsize for i in range(4))
        self._chars = ctypes.create_string_buffer(b"NTLU")
        first = ctypes.addressof(self._chars)
        self._char = {c: first + i for i, c in enumerate("NTLU")}
        count, n = g.count, max(1, g.n)
        self.ipiv = np.zeros((count, n), dtype=it)
        self._infos = np.zeros(count, dtype=it)
        self._sinfos = np.zeros(count, dtype=it)  # the solves' own (an error there is an invalid argument)
        step = it.itemsize
        self._piv = [self.ipiv.ctypes.data + i * n * step for i in range(count)]
        self._info = [self._infos.ctypes.data + i * step for i in range(count)]
        self._sinfo = [self._sinfos.ctypes.data + i * step for i in range(count)]
        p = _PREFIX[g.dtype]
        self.lu = g.kind == "lu"
        names = ("getrf", "getrs", "gesv") if self.lu else ("potrf", "potrs", "posv")
        # the calling thread keeps the GIL for the short calls of small systems (see GIL_HELD_UP_TO)
        self.keeps_gil = keeps_gil
        self._factor, self._solve, self._fused = (lib.untyped(p + name, not keeps_gil) for name in names)
        # solves alone in the calling thread (their threshold is their own) keep the GIL as the small ones do
        alone = self.solve_threads == 1 and named is None and g.n <= GIL_HELD_UP_TO
        self._solve_alone = lib.untyped(p + names[1], not alone)
        self._addresses = {id(fn): ROUTINES[name][0] for fn, name in
                           zip((self._factor, self._solve, self._fused, self._solve_alone), names + names[1:2])}
        # gesv solves with a itself: the factors of a transposed matrix need getrs with trans='T'
        self._one_call = not self.lu or f.trans == "N"
        self.routines = tuple(p + name for name in (names if self._one_call else names[:2]))
        self.factor_routine = p + names[0]
        self.fused_routine = p + names[2] if self._one_call else self.factor_routine
        self._a_off = [int(o) for o in problems.a_offsets]
        self._b_off = [int(o) for o in problems.b_offsets]
        item = np.dtype(g.dtype).itemsize
        self._offs = offs = np.asarray(problems.a_offsets, np.int64) // item  # in elements, for the pivots
        step = int(offs[1] - offs[0]) if offs.size > 1 else 0
        self._step = step if np.array_equal(offs, offs[0] + step * np.arange(offs.size)) else None
        self.nbytes = self.ipiv.nbytes + self._infos.nbytes + self._sinfos.nbytes
        self.description = f"LAPACK ({lib.description})"

    # ------------------------------------------------------------------------------------------ programs
    def _finish_program(self, prog: Program) -> Program:
        if run_table is not None and prog:  # one native call per part, the GIL released once (see run_table)
            width = 1 + max(len(args) for _fn, args in prog)
            table = np.zeros((len(prog), width), dtype=np.intp)
            for row, (fn, args) in zip(table, prog):
                row[0] = ctypes.cast(fn, c_void_p).value
                row[1:1 + len(args)] = args
            prog.table = table
            prog.call = functools.partial(run_table, table.ctypes.data, len(prog), width, 0, len(prog))
        prog[:] = [(fn, _as_ctypes(args, self._addresses[id(fn)])) for fn, args in prog]
        prog.threads = self.solve_threads if prog and prog[0][0] is self._solve_alone else self.threads
        return prog

    def _factor_views(self, base: int) -> list:
        """The factors at ``base`` as views (systems, column, row): one for evenly spaced systems, else one
        per system."""
        g, ld = self.geom, self.problems.factor.ld
        item = np.dtype(g.dtype).itemsize
        offs = self._offs
        if self._step is not None:
            return [from_pointer(base + int(offs[0]) * item, (offs.size, g.n, g.n), (self._step, ld, 1), g.dtype)]
        return [from_pointer(base + int(o) * item, (1, g.n, g.n), (0, ld, 1), g.dtype) for o in offs]

    def solve_program(self, a_base: int, b_base: int) -> Program:
        return self._program(("s", a_base, b_base), lambda: self._solve_calls(a_base, b_base, self._solve_alone))

    def _factor_calls(self, base: int) -> Program:
        n, lda, fn = self._n, self._lda, self._factor
        if self.lu:
            return Program((fn, (n, n, base + o, lda, piv, info))
                           for o, piv, info in zip(self._a_off, self._piv, self._info))
        uplo = self._char[self.problems.factor.uplo]
        return Program((fn, (uplo, n, base + o, lda, info, 1)) for o, info in zip(self._a_off, self._info))

    def _solve_calls(self, a_base: int, b_base: int, fn=None) -> Program:
        """The solves of every system (``fn``: the binding of getrs/potrs to call; by default the one of the
        fused programs); a program of solves alone runs on their own thread count."""
        n, k, lda, ldb = self._n, self._nrhs, self._lda, self._ldb
        fn = self._solve if fn is None else fn
        rows = zip(self._a_off, self._b_off, self._piv, self._sinfo)
        if self.lu:
            trans = self._char[self.problems.factor.trans]
            return Program((fn, (trans, n, k, a_base + oa, lda, piv, b_base + ob, ldb, info, 1))
                           for oa, ob, piv, info in rows)
        uplo = self._char[self.problems.factor.uplo]
        return Program((fn, (uplo, n, k, a_base + oa, lda, b_base + ob, ldb, info, 1)) for oa, ob, _p, info in rows)

    def _fused_calls(self, a_base: int, b_base: int) -> Program:
        if not self._one_call:  # getrf then getrs, system by system
            prog = Program(c for pair in zip(self._factor_calls(a_base), self._solve_calls(a_base, b_base))
                           for c in pair)
            prog.per = 2
            return prog
        n, k, lda, ldb, fn = self._n, self._nrhs, self._lda, self._ldb, self._fused
        rows = zip(self._a_off, self._b_off, self._piv, self._info)
        if self.lu:
            return Program((fn, (n, k, a_base + oa, lda, piv, b_base + ob, ldb, info)) for oa, ob, piv, info in rows)
        uplo = self._char[self.problems.factor.uplo]
        return Program((fn, (uplo, n, k, a_base + oa, lda, b_base + ob, ldb, info, 1)) for oa, ob, _p, info in rows)

    # --------------------------------------------------------------------------------------------- running
    def run(self, program: Program) -> None:
        """Run ``program`` as planned: split across the worker threads, or in the calling thread (with the
        caller's named thread count applied to LAPACK around it)."""
        threads = program.threads
        if threads > 1:  # (more parts than threads: a worker held up by another process shares less)
            systems = len(program) // program.per
            count = min(systems, PARTS_PER_THREAD * threads)
            bounds = [program.per * (systems * i // count) for i in range(count + 1)]
            parts = [(lo, hi) for lo, hi in zip(bounds, bounds[1:]) if hi > lo]
            token = self.lib.set_num_threads_local(1)  # the calling thread takes parts too, as the workers do
            try:
                run_parts(functools.partial(_run_rows, program), parts, _pool(self.lib, threads - 1), threads - 1)
            finally:
                if token is not None:
                    self.lib.set_num_threads_local(token)
            return
        token = None if self.named is None else self.lib.set_num_threads_local(self.named)
        try:
            if program.call is not None:
                program.call()
            else:
                for fn, args in program:
                    fn(*args)
        finally:
            if token is not None:
                self.lib.set_num_threads_local(token)

    def read_back(self, a_base: int, pivots: bool = True) -> tuple:
        """(the factorization's ``info`` of each system, the magnitudes of the factors' diagonals at ``a_base``,
        a row of NaN for a system whose factor holds a NaN or inf anywhere in the part the factorization wrote)."""
        return self._infos, (self._pivots(a_base) if pivots else None)

    def _pivots(self, a_base: int) -> np.ndarray:
        """Magnitudes of the diagonals of the factors at ``a_base`` (one row per system), NaN for the systems whose
        factors are not finite (``_finite``): a strided view when the systems are evenly spaced (a plan buffer, a
        batch with one batch axis), else gathered."""
        g, ld = self.geom, self.problems.factor.ld
        item = np.dtype(g.dtype).itemsize
        offs = self._offs
        if self._step is not None:
            mags = np.abs(from_pointer(a_base + int(offs[0]) * item, (offs.size, g.n), (self._step, ld + 1), g.dtype))
        else:
            lo = int(offs.min())
            span = int(offs.max()) - lo + (g.n - 1) * (ld + 1) + 1
            flat = from_pointer(a_base + lo * item, (span,), (1,), g.dtype)
            mags = np.abs(flat[(offs - lo)[:, None] + np.arange(g.n) * (ld + 1)])
        bad = self._finite(self._factor_views(a_base))
        if bad is not None:
            mags = mags.astype(np.float64)
            mags[bad] = np.nan
        return mags

    def _finite(self, factors: list):
        """The systems whose factors (``factors``: views (systems, column, row) in order) hold a NaN or inf in
        the part the factorization wrote (LU: all of it; Cholesky: its triangle), as a boolean array; None when
        there are none. One sum per view first (finite only when every entry is: a NaN or inf makes it NaN or
        inf), the entry-by-entry check only where a sum is not finite (a non-finite entry, an entry of the other
        triangle, or an overflow of the sum)."""
        with np.errstate(all="ignore"):  # einsum's sum reads at about twice np.sum's speed; complex as real pairs
            sums = [np.einsum("ijk->", f.view(f.real.dtype) if f.dtype.kind == "c" else f) for f in factors]
        if all(np.isfinite(x) for x in sums):
            return None
        n, uplo = self.geom.n, self.problems.factor.uplo
        j, i = np.indices((n, n))  # (column, row), as the views index
        outside = np.zeros((n, n), bool) if self.lu else (i < j if uplo == "L" else i > j)
        rows = [np.zeros(f.shape[0], bool) if np.isfinite(x) else
                ~(np.isfinite(f) | outside).reshape(f.shape[0], -1).all(axis=1) for f, x in zip(factors, sums)]
        bad = np.concatenate(rows)
        return bad if bad.any() else None

    def failed(self, status, fn) -> None:  # pragma: no cover - LAPACK reports through info, not a status
        raise LAPACKError(int(status), None, str(fn))

    def set_stream(self, stream) -> None:
        pass

    def free(self) -> None:
        self._clear_programs()


def create(problems, placement, options, log, allocator=None, stream=None) -> LapackEngine:
    """The CPU engine of a plan: the LAPACK ``options.cpu_lapack`` names, threads as the caller named them
    (``ExecutionCPU(num_threads=...)``) or as ``cpu_threads`` decides for the batch."""
    lib = find_lapack(options.cpu_lapack)
    g = problems.geom
    named = placement.execution.num_threads if placement.user_threads else None
    cpus = placement.execution.num_threads
    table = run_table is not None
    threads = cpu_threads(g.n, g.count, cpus, named, table=table)
    solve_threads = cpu_threads(g.n, g.count, cpus, named, nrhs=g.nrhs, table=table)
    keeps_gil = threads == 1 and named is None and g.n <= GIL_HELD_UP_TO
    engine = LapackEngine(problems, lib, threads, None if threads > 1 else named, keeps_gil, solve_threads)
    if log.isEnabledFor(logging.INFO):
        how = f"{threads} worker threads, one LAPACK thread each" if threads > 1 else (
            "the calling thread, LAPACK's own threads" if named is None else f"{named} LAPACK threads")
        log.info("solver engine: %s (%s), %d system(s) on %s", engine.description, ", ".join(engine.routines),
                 g.count, how)
    return engine
