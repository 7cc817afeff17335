"""cuSOLVERDx dense solvers inside numba-cuda kernels: :class:`Solver` (one function, ``execute``: the linear
solvers, QR/LQ, the eigenvalue and SVD functions, tridiagonal solves) and the adapters that pair a
factorization with its solve (``factorize`` / ``solve`` / ``multiply``).

Matrices live in shared memory, ``batches_per_block`` problems back to back; a matrix of ``rows x cols`` with
leading dimension ``ld`` has shape ``(batches, rows, cols)`` and strides ``(ld * cols, 1, ld)`` column-major or
``(ld * rows, ld, 1)`` row-major (in elements) -- see ``a_shape``, ``a_strides()``, ``a_size()``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._core.disk_cache import digest
from ._codegen import Descriptor, Generator
from ._common import (
    VALUE_TYPES,
    choice,
    DeviceFunction,
    Dim3,
    int_triple,
    is_suggested,
    MethodSpec,
    normalize_cc,
    normalize_precision,
    Param,
    positive_int,
    precision_enum,
    value_type_enum,
)

if TYPE_CHECKING:
    from typing import Any

    import numpy as np

    from ._common import ComputeCapability

__all__ = ["Solver", "CholeskySolver", "LUSolver", "LUPivotSolver", "QRFactorize", "QRMultiply", "LQFactorize",
           "LQMultiply", "TriangularSolver", "LeastSquaresSolver", "FUNCTIONS"]

# function -> (cusolverdxFunction member, in-kernel parameters), parameters as (name, kind): kinds "v" (a matrix
# or vector of the value type), "i" (int32: ipiv, info)
FUNCTIONS = {
    "potrf": ("CUSOLVERDX_FUNCTION_POTRF", (("a", "v"), ("info", "i"))),
    "potrs": ("CUSOLVERDX_FUNCTION_POTRS", (("a", "v"), ("b", "v"))),
    "posv": ("CUSOLVERDX_FUNCTION_POSV", (("a", "v"), ("b", "v"), ("info", "i"))),
    "getrf_no_pivot": ("CUSOLVERDX_FUNCTION_GETRF_NO_PIVOT", (("a", "v"), ("info", "i"))),
    "getrs_no_pivot": ("CUSOLVERDX_FUNCTION_GETRS_NO_PIVOT", (("a", "v"), ("b", "v"))),
    "gesv_no_pivot": ("CUSOLVERDX_FUNCTION_GESV_NO_PIVOT", (("a", "v"), ("b", "v"), ("info", "i"))),
    "getrf_partial_pivot": ("CUSOLVERDX_FUNCTION_GETRF_PARTIAL_PIVOT", (("a", "v"), ("ipiv", "i"), ("info", "i"))),
    "getrs_partial_pivot": ("CUSOLVERDX_FUNCTION_GETRS_PARTIAL_PIVOT", (("a", "v"), ("ipiv", "i"), ("b", "v"))),
    "gesv_partial_pivot": ("CUSOLVERDX_FUNCTION_GESV_PARTIAL_PIVOT",
                           (("a", "v"), ("ipiv", "i"), ("b", "v"), ("info", "i"))),
    "geqrf": ("CUSOLVERDX_FUNCTION_GEQRF", (("a", "v"), ("tau", "v"))),
    "gelqf": ("CUSOLVERDX_FUNCTION_GELQF", (("a", "v"), ("tau", "v"))),
    "unmqr": ("CUSOLVERDX_FUNCTION_UNMQR", (("a", "v"), ("tau", "v"), ("c", "v"))),
    "unmlq": ("CUSOLVERDX_FUNCTION_UNMLQ", (("a", "v"), ("tau", "v"), ("c", "v"))),
    "ungqr": ("CUSOLVERDX_FUNCTION_UNGQR", (("a", "v"), ("tau", "v"))),
    "unglq": ("CUSOLVERDX_FUNCTION_UNGLQ", (("a", "v"), ("tau", "v"))),
    "trsm": ("CUSOLVERDX_FUNCTION_TRSM", (("a", "v"), ("b", "v"))),
    "gels": ("CUSOLVERDX_FUNCTION_GELS", (("a", "v"), ("tau", "v"), ("b", "v"))),
    "gtsv_no_pivot": ("CUSOLVERDX_FUNCTION_GTSV_NO_PIVOT",
                      (("dl", "v"), ("d", "v"), ("du", "v"), ("b", "v"), ("info", "i"))),
    "htev": ("CUSOLVERDX_FUNCTION_HTEV", (("d", "v"), ("e", "v"), ("info", "i"))),
    "heev": ("CUSOLVERDX_FUNCTION_HEEV", (("a", "v"), ("lambda", "r"), ("workspace", "w"), ("info", "i"))),
    "bdsvd": ("CUSOLVERDX_FUNCTION_BDSVD", (("d", "v"), ("e", "v"), ("info", "i"))),
    "gesvd": ("CUSOLVERDX_FUNCTION_GESVD", (("a", "v"), ("s", "r"), ("workspace", "w"), ("info", "i"))),
    "hegst": ("CUSOLVERDX_FUNCTION_HEGST", (("a", "v"), ("b", "v"), ("workspace", "w"))),
    "hegv": ("CUSOLVERDX_FUNCTION_HEGV",
             (("a", "v"), ("b", "v"), ("lambda", "r"), ("workspace", "w"), ("info", "i"))),
}
# parameter lists when vectors are computed into their own arrays (the job asks for vectors); kinds as above plus
# "r" (the real precision: eigenvalues, singular values) and "w" (the workspace of workspace_size elements)
_VECTOR_PARAMS = {
    "htev": (("d", "v"), ("e", "v"), ("v", "v"), ("info", "i")),
    "bdsvd": (("d", "v"), ("e", "v"), ("u", "v"), ("vt", "v"), ("info", "i")),
    "gesvd": (("a", "v"), ("s", "r"), ("u", "v"), ("vt", "v"), ("workspace", "w"), ("info", "i")),
}
_JOBS = {"no_vectors": "CUSOLVERDX_JOB_NO_VECTORS", "all_vectors": "CUSOLVERDX_JOB_ALL_VECTORS",
         "multiply_vectors": "CUSOLVERDX_JOB_MULTIPLY_VECTORS", "overwrite_vectors": "CUSOLVERDX_JOB_OVERWRITE_VECTORS",
         "some_vectors": "CUSOLVERDX_JOB_SOME_VECTORS"}
# the jobs each eigenvalue/SVD function is offered with (first: the default); a pair (jobu, jobvt) for the SVDs
_FUNCTION_JOBS = {"htev": ("no_vectors", "all_vectors", "multiply_vectors"),
                  "heev": ("no_vectors", "overwrite_vectors"), "hegv": ("no_vectors", "overwrite_vectors"),
                  "bdsvd": ("no_vectors", "all_vectors", "multiply_vectors"),
                  "gesvd": ("no_vectors", "some_vectors", "all_vectors")}
_PAIR_JOBS = ("bdsvd", "gesvd")
# arrangement slot of each matrix (the ARRANGEMENT operator's entries): <A, B> for most functions
_ARR_SLOTS = {"bdsvd": {"u": 0, "vt": 1}, "gesvd": {"a": 0, "u": 1, "vt": 2}, "htev": {"v": 0}}
_ARRANGEMENTS = {"col_major": "CUSOLVERDX_ARRANGEMENT_COL_MAJOR", "row_major": "CUSOLVERDX_ARRANGEMENT_ROW_MAJOR"}
_FILL = {"lower": "CUSOLVERDX_FILL_MODE_LOWER", "upper": "CUSOLVERDX_FILL_MODE_UPPER"}
_SIDE = {"left": "CUSOLVERDX_SIDE_LEFT", "right": "CUSOLVERDX_SIDE_RIGHT"}
_DIAG = {"unit": "CUSOLVERDX_DIAG_UNIT", "non_unit": "CUSOLVERDX_DIAG_NON_UNIT"}
_TRANS = {"non_transposed": "CUSOLVERDX_TRANSPOSE_MODE_NON_TRANSPOSED",
          "transposed": "CUSOLVERDX_TRANSPOSE_MODE_TRANSPOSED",
          "conj_transposed": "CUSOLVERDX_TRANSPOSE_MODE_CONJ_TRANSPOSED"}
_EXECUTIONS = {"Block": "COMMONDX_EXECUTION_BLOCK", "Thread": "COMMONDX_EXECUTION_THREAD"}
_NEEDS_FILL = ("potrf", "potrs", "posv", "trsm", "heev", "hegst", "hegv")
_SQUARE = ("potrf", "potrs", "posv", "getrs_no_pivot", "gesv_no_pivot", "getrs_partial_pivot", "gesv_partial_pivot",
           "heev", "hegst", "hegv")
_REAL_ONLY = ("bdsvd",)
_FIXED_LD = ("gtsv_no_pivot", "htev", "bdsvd", "gesvd")  # leading dimensions: the matrices' extents


def _matrices(function: str, m: int, n: int, k: int, side: str | None, jobs=()) -> dict:
    """(rows, cols) of each matrix argument (and the length of vectors) of ``function`` for size (m, n, k)."""
    mn = min(m, n)
    if function == "gtsv_no_pivot":  # sub-, main and super-diagonal of an m x m tridiagonal matrix; B is m x k
        return {"dl": (m - 1,), "d": (m,), "du": (m - 1,), "b": (m, k)}
    if function in ("htev", "bdsvd"):  # diagonal and off-diagonal of a tridiagonal/bidiagonal matrix
        out = {"d": (m,), "e": (m - 1,)}
        if any(j != "no_vectors" for j in jobs):
            out.update({"v": (m, m)} if function == "htev" else {"u": (m, m), "vt": (m, m)})
        return out
    if function == "heev":
        return {"a": (m, m), "lambda": (m,)}
    if function in ("hegst", "hegv"):
        return {"a": (m, m), "b": (m, m)} if function == "hegst" else {"a": (m, m), "b": (m, m), "lambda": (m,)}
    if function == "gesvd":
        out = {"a": (m, n), "s": (mn,)}
        if jobs and jobs[0] != "no_vectors":
            out["u"] = (m, m) if jobs[0] == "all_vectors" else (m, mn)
        if jobs and jobs[-1] != "no_vectors":
            out["vt"] = (n, n) if jobs[-1] == "all_vectors" else (mn, n)
        return out
    if function in ("potrf",):
        return {"a": (m, m)}
    if function in ("potrs", "posv", "getrs_no_pivot", "gesv_no_pivot"):
        return {"a": (m, m), "b": (m, k)}
    if function in ("getrs_partial_pivot", "gesv_partial_pivot"):
        return {"a": (m, m), "b": (m, k), "ipiv": (m,)}
    if function == "getrf_no_pivot":
        return {"a": (m, n)}
    if function == "getrf_partial_pivot":
        return {"a": (m, n), "ipiv": (mn,)}
    if function in ("geqrf", "gelqf", "ungqr", "unglq"):
        return {"a": (m, n), "tau": (mn,)}
    if function in ("unmqr", "unmlq"):  # Q (from k reflectors) applied to C (m x n) from the left or right
        q = m if side != "right" else n
        return {"a": (q, k) if function == "unmqr" else (k, q), "tau": (k,), "c": (m, n)}
    if function == "trsm":
        return {"a": (m, m) if side != "right" else (n, n), "b": (m, n)}
    if function == "gels":
        return {"a": (m, n), "tau": (mn,), "b": (max(m, n), k)}
    raise AssertionError(function)


class Solver(DeviceFunction):
    """A cuSOLVERDx function for use inside numba-cuda kernels (the shape of ``nvmath.device.Solver``).

    Args:
        function: one of ``FUNCTIONS`` ('potrf', 'potrs', 'posv', 'getrf_no_pivot', 'getrs_no_pivot',
            'gesv_no_pivot', 'getrf_partial_pivot', 'getrs_partial_pivot', 'gesv_partial_pivot', 'geqrf',
            'gelqf', 'unmqr', 'unmlq', 'ungqr', 'unglq', 'trsm', 'gels', 'gtsv_no_pivot', 'htev', 'heev', 'bdsvd',
            'gesvd', 'hegst', 'hegv').
        size: ``(m,)``, ``(m, n)`` or ``(m, n, k)``; k is the number of right-hand sides (default 1).
        precision: ``numpy.float32`` or ``numpy.float64``.
        execution: ``'Block'`` or ``'Thread'``.
        sm: target compute capability; default: the current GPU's.
        arrangement: ``(a,)`` or ``(a, b)`` from 'col_major' (default) and 'row_major'.
        transpose_mode, side, diag, fill_mode: as the function needs ('lower'/'upper', 'left'/'right',
            'unit'/'non_unit', 'non_transposed'/'transposed'/'conj_transposed').
        batches_per_block: problems one block solves (Block execution), an int or 'suggested'; default 1.
        data_type: 'real' (default) or 'complex'.
        leading_dimensions: ``(lda,)`` or ``(lda, ldb)``; default: the matrices' leading extents.
        block_dim: threads per block (a Dim3/sequence or 'suggested'); default: cuSOLVERDx's choice.
        job: for the eigenvalue and SVD functions, which vectors to compute: 'no_vectors' (default),
            'all_vectors', 'multiply_vectors' (htev, bdsvd), 'overwrite_vectors' (heev, hegv: into A),
            'some_vectors' (gesvd); bdsvd and gesvd also take a pair (jobu, jobvt).
        eig_type: 1, 2 or 3 (hegst, hegv): the generalized problem A x = l B x, A B x = l x or B A x = l x.

    Eigenvalue and SVD functions (size ``(m,)``, or ``(m, n)`` for gesvd): 'htev' (tridiagonal: d, e; with
    vectors v), 'heev' (a, lambda, workspace, info), 'hegst' (a, b, workspace), 'hegv' (a, b, lambda, workspace,
    info), 'bdsvd' (bidiagonal, real only: d, e; with vectors u, vt), 'gesvd' (a, s, [u, vt,] workspace, info);
    'gtsv_no_pivot' solves a tridiagonal system (dl, d, du, b, info). Eigenvalues and singular values are of
    the real precision; ``workspace`` holds ``workspace_size`` elements of the value type for the whole block;
    e, dl and du hold m - 1 elements per problem (e[i] = A[i + 1, i], dl[i] = A[i + 1, i], du[i] = A[i, i + 1]),
    problems back to back.

    In a kernel: ``solver.execute(a, ...)`` with the function's arguments (``execute_parameters`` names them),
    all in shared memory except ``info``, which may be anywhere.
    """

    _methods: dict = {}  # adapters: method name -> function

    def __init__(self, function: Any, size: Any, precision: Any, execution: str, *, sm: Any = None,
                 arrangement: Any = None, transpose_mode: Any = None, side: Any = None, diag: Any = None,
                 fill_mode: Any = None, batches_per_block: Any = None, data_type: str | None = None,
                 leading_dimensions: Any = None, block_dim: Any = None, job: Any = None, eig_type: Any = None) -> None:
        function = choice(function, tuple(FUNCTIONS), "function")
        self._setup((function,), size, precision, execution, sm, arrangement, transpose_mode, side, diag,
                    fill_mode, batches_per_block, data_type, leading_dimensions, block_dim, job, eig_type)

    def _setup(self, functions, size, precision, execution, sm, arrangement, transpose_mode, side, diag, fill_mode,
               batches_per_block, data_type, leading_dimensions, block_dim, job=None, eig_type=None):
        self._function_names = tuple(functions)
        self._jobs = self._check_job(job)
        if eig_type is None:
            self._eig_type = None
        elif not any(f in ("hegst", "hegv") for f in functions):
            raise ValueError("eig_type applies to hegst and hegv only")
        elif isinstance(eig_type, bool) or eig_type not in (1, 2, 3):
            raise ValueError(f"eig_type={eig_type!r} is not supported; the allowed values are 1, 2, 3")
        else:
            self._eig_type = int(eig_type)
        if isinstance(size, int) or len(size) not in (1, 2, 3):
            raise ValueError(f"size={size!r} must be a sequence (m,), (m, n) or (m, n, k)")
        sz = [positive_int(v, "size") for v in size]
        m = sz[0]
        n = sz[1] if len(sz) > 1 else m
        k = sz[2] if len(sz) > 2 else 1
        if any(f in _SQUARE for f in functions) and m != n:
            raise ValueError(f"{functions[0]} needs a square matrix: size={tuple(size)} has m={m} != n={n}")
        self._size = (m, n, k)
        self._precision = normalize_precision(precision)
        self._execution = choice(execution, tuple(_EXECUTIONS), "execution")
        self._data_type = choice("real" if data_type is None else data_type, ("real", "complex"), "data_type")
        if self._data_type == "complex" and any(f in _REAL_ONLY for f in functions):
            raise ValueError(f"{functions[0]} supports data_type='real' only")
        self._fill_mode = None if fill_mode is None else choice(fill_mode, tuple(_FILL), "fill_mode")
        if self._fill_mode is None and any(f in _NEEDS_FILL for f in functions):
            raise ValueError(f"{functions[0]} needs fill_mode='lower' or 'upper'")
        self._side = None if side is None else choice(side, tuple(_SIDE), "side")
        self._diag = None if diag is None else choice(diag, tuple(_DIAG), "diag")
        self._transpose_mode = None if transpose_mode is None else choice(transpose_mode, tuple(_TRANS),
                                                                          "transpose_mode")
        arr = ("col_major",) if arrangement is None else arrangement
        slots = 3 if "gesvd" in functions else 2
        if isinstance(arr, str) or not 1 <= len(arr) <= slots:
            raise ValueError(f"arrangement={arrangement!r} must be a sequence (a,) or (a, b)" +
                             (" or (a, u, vt)" if slots == 3 else ""))
        self._arrangement = tuple(choice(a, tuple(_ARRANGEMENTS), "arrangement") for a in arr)
        if batches_per_block is None:
            self._bpb = 1
        elif is_suggested(batches_per_block):
            self._bpb = "suggested"
        else:
            self._bpb = positive_int(batches_per_block, "batches_per_block")
        if self._execution == "Thread" and self._bpb != 1:
            raise ValueError("batches_per_block applies to Block execution only")
        self._block_dim = None
        if block_dim is not None and not is_suggested(block_dim):
            if self._execution == "Thread":
                raise ValueError("block_dim applies to Block execution only")
            self._block_dim = int_triple(block_dim, "block_dim")
        mats = self._mats()
        if leading_dimensions is None:
            self._ld = None
        elif any(f in _FIXED_LD for f in functions):
            raise ValueError(f"leading_dimensions is not offered for {functions[0]}: its matrices are stored with "
                             f"their leading extents")
        else:
            lds = list(leading_dimensions) if not isinstance(leading_dimensions, int) else [leading_dimensions]
            if not 1 <= len(lds) <= 2:
                raise ValueError(f"leading_dimensions={leading_dimensions!r} must be (lda,) or (lda, ldb)")
            self._ld = tuple(positive_int(v, "leading_dimensions") for v in lds)
            for name, ld in zip(("a", "b"), self._ld):
                need = self._default_ld(name, mats)
                if need is not None and ld < need:
                    raise ValueError(f"leading_dimensions: ld{name}={ld} is less than {need}, the leading extent of "
                                     f"{name} ({self._arr(name)})")
        self._sm = normalize_cc(sm)
        self._gen = None

    def _check_job(self, job) -> tuple:
        f = self._function_names[0]
        allowed = _FUNCTION_JOBS.get(f)
        if allowed is None:
            if job is not None:
                raise ValueError(f"job= applies to the eigenvalue and SVD functions ({', '.join(_FUNCTION_JOBS)}), "
                                 f"not to {f}")
            return ()
        if job is None:
            return (allowed[0],)
        if isinstance(job, str):
            jobs = (job,)
        elif f in _PAIR_JOBS and isinstance(job, (tuple, list)) and len(job) == 2:
            jobs = tuple(job)
        else:
            raise ValueError(f"job={job!r} must be one job" + (" or a pair (jobu, jobvt)" if f in _PAIR_JOBS else ""))
        return tuple(choice(j, allowed, f"job (for {f})") for j in jobs)

    # -------------------------------------------------------------------------------------- arithmetic
    def _mats(self) -> dict:
        out = {}
        for f in self._function_names:
            out.update(_matrices(f, *self._size, self._side, self._jobs))
        return out

    def _arr(self, name: str) -> str:
        slots = _ARR_SLOTS.get(self._function_names[0], {"a": 0})
        slot = slots.get(name, 1 if name not in ("a",) else 0)
        return self._arrangement[min(slot, len(self._arrangement) - 1)]

    def _params(self, function: str) -> tuple:
        """(name, kind) of each in-kernel argument of ``function`` (the signature depends on the job)."""
        if function in _VECTOR_PARAMS and any(j != "no_vectors" for j in self._jobs):
            return _VECTOR_PARAMS[function]
        return FUNCTIONS[function][1]

    def _default_ld(self, name: str, mats=None):
        mats = mats or self._mats()
        dims = mats.get("b" if name == "b" and "b" in mats else ("c" if name == "b" else name))
        if dims is not None and len(dims) == 1:
            return None
        if dims is None:
            return None
        rows, cols = dims
        return rows if self._arr(name) == "col_major" else cols

    def _lds(self):
        lda = self._ld[0] if self._ld else self._default_ld("a")
        ldb = self._ld[1] if self._ld and len(self._ld) > 1 else self._default_ld("b")
        return lda, ldb

    # ---------------------------------------------------------------------------------------- operators
    def _operators(self, function: str, bpb, block_dim) -> tuple:
        ops = [("CUSOLVERDX_OPERATOR_FUNCTION", FUNCTIONS[function][0]), ("CUSOLVERDX_OPERATOR_SIZE", self._size),
               ("CUSOLVERDX_OPERATOR_TYPE", "CUSOLVERDX_TYPE_" + self._data_type.upper()),
               ("CUSOLVERDX_OPERATOR_PRECISION", precision_enum(self._precision)),
               ("CUSOLVERDX_OPERATOR_SM", self._sm.sm), ("CUSOLVERDX_OPERATOR_EXECUTION", _EXECUTIONS[self._execution]),
               ("CUSOLVERDX_OPERATOR_API", "CUSOLVERDX_API_SMEM"),
               ("CUSOLVERDX_OPERATOR_ARRANGEMENT", tuple(_ARRANGEMENTS[a] for a in self._arrangement))]
        for op, value, table in (("FILL_MODE", self._fill_mode, _FILL), ("SIDE", self._side, _SIDE),
                                 ("DIAG", self._diag, _DIAG), ("TRANSPOSE_MODE", self._transpose_mode, _TRANS)):
            if value is not None:
                ops.append(("CUSOLVERDX_OPERATOR_" + op, table[value]))
        if self._ld is not None:
            ops.append(("CUSOLVERDX_OPERATOR_LEADING_DIMENSION", self._ld))
        if self._jobs:
            ops.append(("CUSOLVERDX_OPERATOR_JOB", tuple(_JOBS[j] for j in self._jobs) if len(self._jobs) > 1
                        else _JOBS[self._jobs[0]]))
        if self._eig_type is not None:
            ops.append(("CUSOLVERDX_OPERATOR_EIG_TYPE", self._eig_type))
        if self._execution == "Block":
            ops.append(("CUSOLVERDX_OPERATOR_BATCHES_PER_BLOCK", bpb))
            if block_dim is not None:
                ops.append(("CUSOLVERDX_OPERATOR_BLOCK_DIM", tuple(block_dim)))
        return tuple(ops)

    def _descriptor(self, function, bpb, block_dim) -> Descriptor:
        ops = self._operators(function, bpb, block_dim)
        return Descriptor("cusolverdx", ops, f"cumath_{function}_" + digest("cumath.device.Solver", ops)[:24])

    @property
    def _generator(self) -> Generator:
        if self._gen is None:
            first = self._function_names[0]
            bpb, block_dim = self._bpb, self._block_dim
            if bpb == "suggested" or (block_dim is None and len(self._function_names) > 1):
                probe = Generator([self._descriptor(first, 1 if bpb == "suggested" else bpb, block_dim)], self._sm)
                if bpb == "suggested":
                    bpb = probe.traits()["suggested_batches_per_block"] or 1
                if block_dim is None and len(self._function_names) > 1:  # one launch shape for every function
                    probe = Generator([self._descriptor(first, bpb, None)], self._sm)
                    block_dim = tuple(probe.traits()["block_dim"])
            self._gen = Generator([self._descriptor(f, bpb, block_dim) for f in self._function_names], self._sm)
        return self._gen

    # -------------------------------------------------------------------------------------- description
    @property
    def function(self) -> str | tuple[str, ...]:
        """The cuSOLVERDx function (a tuple of them for an adapter that bundles several)."""
        return self._function_names[0] if len(self._function_names) == 1 else self._function_names

    @property
    def size(self) -> tuple[int, int, int]:
        """(m, n, k), where k is the number of right-hand sides."""
        return self._size

    @property
    def m(self) -> int:
        """Rows of A."""
        return self._size[0]

    @property
    def n(self) -> int:
        """Columns of A."""
        return self._size[1]

    @property
    def k(self) -> int:
        """Right-hand sides (columns of B), or reflectors of QRMultiply/LQMultiply."""
        return self._size[2]

    @property
    def precision(self) -> type[np.floating[Any]]:
        """The computation precision, ``numpy.float32`` or ``numpy.float64``."""
        return _np_type(self._precision)

    @property
    def data_type(self) -> str:
        """'real' or 'complex'."""
        return self._data_type

    @property
    def execution(self) -> str:
        """'Block' or 'Thread'."""
        return self._execution

    @property
    def arrangement(self) -> tuple[str, ...]:
        """'col_major' or 'row_major' of each matrix, ``(a,)``, ``(a, b)`` or ``(a, u, vt)``."""
        return self._arrangement

    @property
    def fill_mode(self) -> str | None:
        """'lower' or 'upper' (None where the function takes none)."""
        return self._fill_mode

    @property
    def side(self) -> str | None:
        """'left' or 'right' (None where the function takes none)."""
        return self._side

    @property
    def diag(self) -> str | None:
        """'unit' or 'non_unit' (None where the function takes none)."""
        return self._diag

    @property
    def transpose_mode(self) -> str | None:
        """'non_transposed', 'transposed' or 'conj_transposed' (None where not given)."""
        return self._transpose_mode

    @property
    def sm(self) -> ComputeCapability:
        """The target compute capability."""
        return self._sm

    @property
    def job(self) -> str | tuple[str, ...] | None:
        """Which vectors an eigenvalue or SVD function computes (a pair (jobu, jobvt) where given so), else None."""
        return None if not self._jobs else (self._jobs[0] if len(self._jobs) == 1 else self._jobs)

    @property
    def eig_type(self) -> int | None:
        """The generalized eigenproblem of hegst and hegv, 1, 2 or 3 (None where not given)."""
        return self._eig_type

    @property
    def execute_parameters(self) -> tuple[str, ...]:
        """Names of the in-kernel execute() arguments, in order."""
        return tuple(p for p, _ in self._params(self._function_names[0]))

    @property
    def lda(self) -> int | None:
        """The leading dimension of A (None where A is a vector)."""
        return self._lds()[0]

    @property
    def ldb(self) -> int | None:
        """The leading dimension of B (or C); None where there is neither."""
        return self._lds()[1]

    @property
    def info_type(self) -> np.dtype[np.int32]:
        """The type of ``info`` (int32)."""
        return _np_type("int32")

    @property
    def ipiv_type(self) -> np.dtype[np.int32]:
        """The type of ``ipiv`` (int32)."""
        return _np_type("int32")

    @property
    def precision_type(self) -> type[np.floating[Any]]:
        """The real type of eigenvalues and singular values."""
        return _np_type(self._precision)

    @property
    def value_type(self) -> np.dtype[Any]:
        """The type of the matrices' elements (real or complex of ``precision``)."""
        import numpy as np

        return np.dtype(VALUE_TYPES[value_type_enum(self._precision, self._data_type == "complex")])

    @property
    def batches_per_block(self) -> int:
        """Problems one block solves (resolved when 'suggested' was asked)."""
        return dict(self._generator.descriptors[0].operators).get("CUSOLVERDX_OPERATOR_BATCHES_PER_BLOCK", 1)

    @property
    def block_dim(self) -> Dim3:
        """Threads per block to launch with ((1, 1, 1) for Thread execution)."""
        bd = self._trait("block_dim")
        return Dim3(*bd) if bd else Dim3(1, 1, 1)

    @property
    def suggested_block_dim(self) -> Dim3:
        """cuSOLVERDx's suggested threads per block ((1, 1, 1) for Thread execution)."""
        return Dim3(*(self._trait("suggested_block_dim") or (1, 1, 1)))

    @property
    def suggested_batches_per_block(self) -> int | None:
        """cuSOLVERDx's suggested batches_per_block (None for Thread execution)."""
        return self._trait("suggested_batches_per_block")

    @property
    def workspace_size(self) -> int:
        """Elements of the value type the block's ``workspace`` array must hold (0 for none)."""
        return self._trait("workspace_size") or 0

    def _shape(self, name):
        dims = self._mats().get(name)
        if dims is None:
            raise AttributeError(f"{type(self).__name__} ({', '.join(self._function_names)}) has no {name} operand")
        return (self.batches_per_block,) + tuple(dims)

    def _strides(self, name, ld):
        b, rows, cols = self._shape(name)
        return (ld * cols, 1, ld) if self._arr(name) == "col_major" else (ld * rows, ld, 1)

    @property
    def a_shape(self) -> tuple[int, ...]:
        """(batches_per_block, rows, cols) of A."""
        return self._shape("a")

    @property
    def b_shape(self) -> tuple[int, ...]:
        """(batches_per_block, rows, cols) of B (of C where the function has no B)."""
        return self._shape("b" if "b" in self._mats() else "c")

    @property
    def c_shape(self) -> tuple[int, ...]:
        """(batches_per_block, rows, cols) of C."""
        return self._shape("c")

    @property
    def tau_shape(self) -> tuple[int, ...]:
        """(batches_per_block, reflectors) of tau."""
        return self._shape("tau")

    @property
    def ipiv_shape(self) -> tuple[int, ...]:
        """(batches_per_block, min(m, n)) of the pivots."""
        return self._shape("ipiv")

    @property
    def info_shape(self) -> tuple[int]:
        """(batches_per_block,) of info."""
        return (self.batches_per_block,)

    @property
    def d_shape(self) -> tuple[int, ...]:
        """(batches_per_block, m) of the diagonal d."""
        return self._shape("d")

    @property
    def e_shape(self) -> tuple[int, ...]:
        """(batches_per_block, m - 1) of the off-diagonal e."""
        return self._shape("e")

    @property
    def dl_shape(self) -> tuple[int, ...]:
        """(batches_per_block, m - 1) of the subdiagonal dl."""
        return self._shape("dl")

    @property
    def du_shape(self) -> tuple[int, ...]:
        """(batches_per_block, m - 1) of the superdiagonal du."""
        return self._shape("du")

    @property
    def lambda_shape(self) -> tuple[int, ...]:
        """(batches_per_block, m) eigenvalues."""
        return self._shape("lambda")

    @property
    def s_shape(self) -> tuple[int, ...]:
        """(batches_per_block, min(m, n)) singular values."""
        return self._shape("s")

    @property
    def u_shape(self) -> tuple[int, ...]:
        """(batches_per_block, rows, cols) of the left singular vectors U."""
        return self._shape("u")

    @property
    def vt_shape(self) -> tuple[int, ...]:
        """(batches_per_block, rows, cols) of the right singular vectors V^T."""
        return self._shape("vt")

    @property
    def v_shape(self) -> tuple[int, ...]:
        """(batches_per_block, rows, cols) of the eigenvectors V."""
        return self._shape("v")

    def size_of(self, name: str) -> int:
        """Elements of the shared-memory array holding operand ``name`` (a, b, c, tau, ipiv, d, e, dl, du,
        lambda, s, u, vt, v, workspace) for every batch of the block, with the default leading dimensions."""
        if name == "workspace":
            return self.workspace_size
        shape = self._shape(name)
        if len(shape) == 2:
            return shape[0] * shape[1]
        ld = {"a": self.lda, "b": self.ldb, "c": self.ldb}.get(name) or self._default_ld(name)
        return shape[0] * self._strides(name, ld)[0]

    def a_strides(self, lda: Any = None) -> Any:
        return self._strides("a", lda or self.lda)

    def b_strides(self, ldb: Any = None) -> Any:
        return self._strides("b" if "b" in self._mats() else "c", ldb or self.ldb)

    def a_size(self, lda: Any = None) -> int:
        """Elements of the shared-memory array holding A for every batch of the block."""
        return self._shape("a")[0] * self._strides("a", lda or self.lda)[0]

    def b_size(self, ldb: Any = None) -> int:
        name = "b" if "b" in self._mats() else "c"
        return self._shape(name)[0] * self._strides(name, ldb or self.ldb)[0]

    def tau_size(self) -> int:
        b, n = self._shape("tau")
        return b * n

    def ipiv_size(self) -> int:
        b, n = self._shape("ipiv")
        return b * n

    def __repr__(self):
        return (f"{type(self).__name__}({'+'.join(self._function_names)}, size={self._size}, "
                f"precision={self._precision}, execution={self._execution!r}, sm={tuple(self._sm)})")

    # --------------------------------------------------------------------------------------------- numba
    def _numba_constants(self) -> dict:
        c = {"m": self.m, "n": self.n, "k": self.k, "batches_per_block": self.batches_per_block,
             "block_dim": tuple(self.block_dim), "info_shape": self.info_shape,
             "workspace_size": self.workspace_size, "value_type": self.value_type.name, "info_type": "int32",
             "ipiv_type": "int32", "precision_type": self._precision}
        for name in ("lda", "ldb"):
            if getattr(self, name) is not None:
                c[name] = getattr(self, name)
        for name in self._mats():
            c[name + "_shape"] = self._shape(name)
        return c

    def _numba_methods(self) -> dict:
        vt = self.value_type.name
        dtypes = {"v": vt, "w": vt, "i": "int32", "r": self._precision}
        files = tuple(self.files)
        specs = {}
        for f, symbol in zip(self._function_names, self._generator.symbols()):
            params = tuple(Param(name, "ptr", dtypes[kind]) for name, kind in self._params(f))
            specs[f] = MethodSpec(symbol, params, files)
        if self._methods:
            methods = {method: specs[f] for method, f in self._methods.items()}
            if len(self._function_names) == 1:  # a one-function adapter also answers to Solver's name
                methods["execute"] = specs[self._function_names[0]]
            return methods
        spec = specs[self._function_names[0]]
        return {"execute": spec}


def _np_type(name: str):
    import numpy as np

    return np.dtype(name).type if name in ("float32", "float64") else np.dtype(name)


if TYPE_CHECKING:
    class _Adapter(Solver):
        """What type checkers see of an adapter: a Solver made from (size, precision, execution, ...)."""

        def __init__(self, size: Any, precision: Any, execution: str, *args: Any, sm: Any = None,
                     arrangement: Any = None, batches_per_block: Any = None, data_type: str | None = None,
                     leading_dimensions: Any = None, block_dim: Any = None, **kwargs: Any) -> None: ...


def _adapter(name: str, functions: tuple, methods: dict, doc: str, *, fill: bool = False, extra: tuple = (),
             defaults: dict | None = None) -> type[_Adapter]:
    """An adapter class bundling ``functions`` behind ``methods`` (method name -> function); ``fill``: takes
    fill_mode as its fourth positional argument; ``extra``: further keyword arguments it accepts."""
    defaults = dict(defaults or {})

    def __init__(self, size: Any, precision: Any, execution: str, *args: Any, sm: Any = None,
                 arrangement: Any = None, batches_per_block: Any = None, data_type: str | None = None,
                 leading_dimensions: Any = None, block_dim: Any = None, **kwargs: Any) -> None:
        unknown = set(kwargs) - set(extra) - ({"fill_mode"} if fill else set())
        if unknown:
            raise TypeError(f"{name}() got unexpected keyword arguments {sorted(unknown)}")
        kwargs = {**defaults, **kwargs}
        fill_mode = kwargs.get("fill_mode")
        if fill:
            if len(args) > 1:
                raise TypeError(f"{name}() takes size, precision, execution and fill_mode positionally")
            if args and "fill_mode" in kwargs:
                raise TypeError(f"{name}() got fill_mode twice")
            fill_mode = args[0] if args else kwargs.get("fill_mode")
            if fill_mode is None:
                raise TypeError(f"{name}() needs fill_mode ('lower' or 'upper')")
        elif args:
            raise TypeError(f"{name}() takes size, precision and execution positionally")
        self._setup(functions, size, precision, execution, sm, arrangement, kwargs.get("transpose_mode"),
                    kwargs.get("side"), kwargs.get("diag"), fill_mode, batches_per_block, data_type,
                    leading_dimensions, block_dim)

    return type(name, (Solver,), {"__init__": __init__, "__doc__": doc, "_methods": methods,
                                  "__module__": __name__})


CholeskySolver = _adapter(
    "CholeskySolver", ("potrf", "potrs"), {"factorize": "potrf", "solve": "potrs"},
    "Cholesky factorization and solve: ``factorize(a, info)``, ``solve(a, b)``; "
    "``CholeskySolver(size, precision, execution, fill_mode, ...)``.", fill=True)
LUSolver = _adapter(
    "LUSolver", ("getrf_no_pivot", "getrs_no_pivot"), {"factorize": "getrf_no_pivot", "solve": "getrs_no_pivot"},
    "LU without pivoting: ``factorize(a, info)``, ``solve(a, b)``.", extra=("transpose_mode",))
LUPivotSolver = _adapter(
    "LUPivotSolver", ("getrf_partial_pivot", "getrs_partial_pivot"),
    {"factorize": "getrf_partial_pivot", "solve": "getrs_partial_pivot"},
    "LU with partial pivoting: ``factorize(a, ipiv, info)``, ``solve(a, ipiv, b)``.", extra=("transpose_mode",))
QRFactorize = _adapter("QRFactorize", ("geqrf",), {"factorize": "geqrf"}, "QR factorization: ``factorize(a, tau)``.")
LQFactorize = _adapter("LQFactorize", ("gelqf",), {"factorize": "gelqf"}, "LQ factorization: ``factorize(a, tau)``.")
QRMultiply = _adapter("QRMultiply", ("unmqr",), {"multiply": "unmqr"},
                      "Multiply by Q of a QR factorization: ``multiply(a, tau, c)``.", extra=("side", "transpose_mode"))
LQMultiply = _adapter("LQMultiply", ("unmlq",), {"multiply": "unmlq"},
                      "Multiply by Q of an LQ factorization: ``multiply(a, tau, c)``.",
                      extra=("side", "transpose_mode"))
TriangularSolver = _adapter(
    "TriangularSolver", ("trsm",), {"solve": "trsm"},
    "Triangular solve with a matrix right-hand side: ``solve(a, b)`` overwrites B with op(A)^-1 B (side='left', "
    "the default) or B op(A)^-1; keyword fill_mode is required, diag defaults to 'non_unit'.",
    extra=("side", "diag", "transpose_mode", "fill_mode"), defaults={"side": "left", "diag": "non_unit"})
LeastSquaresSolver = _adapter("LeastSquaresSolver", ("gels",), {"solve": "gels"},
                              "Least squares by QR/LQ: ``solve(a, tau, b)``.", extra=("transpose_mode",))
