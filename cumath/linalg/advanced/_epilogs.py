"""The epilogs: which inputs each needs, which auxiliary outputs it returns, and how their shapes follow from
the problem and the formulation (pure arithmetic; the planner allocates and binds the arrays)."""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import UnsupportedDtypeError
from ._options import MatmulEpilog as E
from ._traits import Geometry, _batch_stride, aux_layout, orientation_of

__all__ = ["EpilogSpec", "EPILOGS", "epilog_spec", "check_epilog_inputs", "lt_epilog", "aux_outputs", "no_formulation"]


@dataclass(frozen=True)
class EpilogSpec:
    """``bias``: needs epilog input "bias" (length M, added to every column before the activation).
    ``aux_in``/``aux_out``: 'relu' (a bit-mask) or 'gelu' (the activation's input). ``grad``: the name of a
    bias-gradient output. ``rows_bound``: the bias (gradient) is indexed by the rows of D."""

    epilog: E
    bias: bool = False
    aux_in: str | None = None
    aux_out: str | None = None
    grad: str | None = None

    @property
    def rows_bound(self) -> bool:
        return self.bias or self.grad in ("drelu_bgrad", "dgelu_bgrad")

    @property
    def inputs(self) -> tuple:
        names = ("bias",) if self.bias else ()
        return names + ((f"{self.aux_in}_aux",) if self.aux_in else ())

    @property
    def outputs(self) -> tuple:
        return ((f"{self.aux_out}_aux",) if self.aux_out else ()) + ((self.grad,) if self.grad else ())


EPILOGS = {s.epilog: s for s in (
    EpilogSpec(E.DEFAULT), EpilogSpec(E.RELU), EpilogSpec(E.GELU),
    EpilogSpec(E.RELU_AUX, aux_out="relu"), EpilogSpec(E.GELU_AUX, aux_out="gelu"),
    EpilogSpec(E.BIAS, bias=True), EpilogSpec(E.RELU_BIAS, bias=True), EpilogSpec(E.GELU_BIAS, bias=True),
    EpilogSpec(E.RELU_AUX_BIAS, bias=True, aux_out="relu"), EpilogSpec(E.GELU_AUX_BIAS, bias=True, aux_out="gelu"),
    EpilogSpec(E.DRELU, aux_in="relu"), EpilogSpec(E.DGELU, aux_in="gelu"),
    EpilogSpec(E.DRELU_BGRAD, aux_in="relu", grad="drelu_bgrad"),
    EpilogSpec(E.DGELU_BGRAD, aux_in="gelu", grad="dgelu_bgrad"),
    EpilogSpec(E.BGRADA, grad="bgrada"), EpilogSpec(E.BGRADB, grad="bgradb"),
)}


def epilog_spec(epilog) -> EpilogSpec:
    if epilog is None:
        return EPILOGS[E.DEFAULT]
    try:
        return EPILOGS[E(epilog)]
    except (ValueError, TypeError):
        if isinstance(epilog, str) and epilog.upper() in E.__members__:
            return EPILOGS[E[epilog.upper()]]
        raise ValueError(f"epilog={epilog!r} is not supported; the allowed values are "
                         f"{[m.name for m in E]} (MatmulEpilog)") from None


def lt_epilog(spec: EpilogSpec, transposed: bool) -> int:
    """The cuBLASLt epilogue for this formulation: BGRADA and BGRADB swap when D^T = B^T A^T is computed."""
    if transposed and spec.epilog == E.BGRADA:
        return int(E.BGRADB)
    if transposed and spec.epilog == E.BGRADB:
        return int(E.BGRADA)
    return int(spec.epilog)


def input_dtype(key: str, bias_dtype: str | None, d_dtype: str) -> str:
    """The dtype cuBLASLt reads epilog input ``key`` in: the bias dtype, uint8 for the ReLU bit-mask, else the
    result's (the GELU input)."""
    if key == "bias":
        return bias_dtype or d_dtype
    return "uint8" if key == "relu_aux" else d_dtype


def check_epilog_inputs(spec: EpilogSpec, inputs: dict | None, geom: Geometry, d_dtype: str, bias_dtype: str):
    """Validate the epilog inputs (given as operands: objects with ``shape``, ``strides``, ``dtype``).

    Returns ``(bias_batch_stride or None, aux orientation 'N'/'T' or None, bias per column)``; a bias per
    column of the result (length N) is added along the rows of cuBLASLt's D in the formulation D^T = B^T A^T. Raises ValueError/TypeError that
    names the expected shapes and dtypes.
    """
    inputs = dict(inputs or {})
    name = spec.epilog.name
    expected = set(spec.inputs)
    missing = sorted(expected - set(inputs))
    if missing:
        raise ValueError(f"epilog {name} needs the epilog input(s) {missing}; pass epilog_inputs="
                         f"{{{', '.join(repr(k) + ': ...' for k in spec.inputs)}}}")
    extra = sorted(set(inputs) - expected)
    if extra:
        raise ValueError(f"epilog {name} takes the epilog inputs {sorted(expected) or 'none'}, not {extra}")
    bias_stride, bias_cols = None, False
    if spec.bias:
        bias_stride, bias_cols = _check_bias(inputs["bias"], geom, bias_dtype)
    orientation = None
    if spec.aux_in:
        key = f"{spec.aux_in}_aux"
        aux = inputs[key]
        want = "uint8" if spec.aux_in == "relu" else d_dtype
        if aux.dtype != want:
            raise TypeError(f"epilog input {key!r} must be {want} (as the forward {spec.aux_in.upper()}_AUX epilog "
                            f"returned it), not {aux.dtype}")
        orientation = orientation_of(aux.shape, aux.strides, geom, spec.aux_in, aux.dtype)
        if orientation is None:
            n_shape = aux_layout("N", geom, spec.aux_in, aux.dtype)[0]
            t_shape = aux_layout("T", geom, spec.aux_in, aux.dtype)[0]
            raise ValueError(
                f"epilog input {key!r} of shape {list(aux.shape)} (strides {list(aux.strides)}) does not come from "
                f"a forward pass of this problem (M={geom.m}, N={geom.n}, batch {list(geom.batch_shape)}): it must "
                f"be the array returned by the forward epilog, of shape {list(n_shape)} (column-major result) or "
                f"{list(t_shape)} (row-major result)")
    return bias_stride, orientation, bias_cols


def _bias_axis(shape, m: int, n: int, nb: int):
    """('rows' or 'cols', the bias's batch shape) for a bias of ``shape``, or None when it fits neither.

    Per row of the result (length M, cuBLASLt's own convention): ``(..., M, 1)`` or ``(..., M)``. Per column
    (length N, a neural network's bias: ``x @ w + bias``): ``(..., 1, N)`` with N > 1, or ``(..., N)`` when
    N != M (a square product's ``(M,)`` stays per row). ``...``: batch dimensions (1 or the product's)."""
    shape = tuple(shape)
    if len(shape) >= 2 and shape[-1] == 1 and shape[-2] == m and len(shape) - 2 <= nb:
        return "rows", shape[:-2]
    if len(shape) >= 2 and shape[-2] == 1 and shape[-1] == n and n > 1 and len(shape) - 2 <= nb:
        return "cols", shape[:-2]
    if len(shape) >= 1 and shape[-1] == m and len(shape) - 1 <= nb:
        return "rows", shape[:-1]
    if len(shape) >= 1 and shape[-1] == n and n != m and len(shape) - 1 <= nb:
        return "cols", shape[:-1]
    return None


def _bias_shape_message(shape, m: int, n: int, batch_shape, found) -> str:
    """Why a bias of ``shape`` fits this product nowhere: its batch dimensions (``found``: it fits the rows or
    columns) or its length; the shapes listed are those :func:`_bias_axis` takes for this M and N."""
    batch = list(batch_shape)
    if found is not None:
        return (f"epilog input 'bias' of shape {list(shape)} has the batch dimensions {list(found[1])}, which do not "
                f"broadcast to the product's batch dimensions {batch}: give each 1 or the product's size")
    per_row = f"({m},) or ({m}, 1) (one value per row)"
    per_col = ([f"({n},)"] if n != m else []) + ([f"(1, {n})"] if n > 1 else [])
    if per_col:
        per_row += f", or {' or '.join(per_col)} (one value per column, as in x @ w + bias)"
    rows, cols = f"{m} row{'s' * (m != 1)}", f"{n} column{'s' * (n != 1)}"
    return (f"epilog input 'bias' of shape {list(shape)} fits neither the result's {rows} nor its {cols}: it must "
            f"have shape {per_row}" + (f", optionally with the batch dimensions {batch} in front" if batch else ""))


def _check_bias(bias, geom: Geometry, bias_dtype: str):
    """(batch stride, per column) of a bias epilog input; ValueError/TypeError naming the allowed shapes."""
    m, n = geom.m, geom.n
    shape, strides = tuple(bias.shape), tuple(bias.strides)
    found = _bias_axis(shape, m, n, len(geom.batch_shape))
    ok = found is not None and all(x == y or x == 1 for x, y in zip(reversed(found[1]), reversed(geom.batch_shape)))
    if not ok:
        raise ValueError(_bias_shape_message(shape, m, n, geom.batch_shape, found))
    axis, bshape = found
    length = m if axis == "rows" else n
    inner = strides[-1] if shape[-1] == length else strides[-2]
    if length > 1 and inner != 1:
        raise ValueError(f"epilog input 'bias' must be contiguous along its {length} elements (stride 1), got stride "
                         f"{inner}; pass a contiguous copy")
    if bias.dtype != bias_dtype:
        raise UnsupportedDtypeError(f"epilog input 'bias' must be {bias_dtype} for this product, not {bias.dtype} "
                                    f"(a bias of another real floating-point dtype is converted, with one copy)")
    stride = _batch_stride(bshape, strides[:len(bshape)], geom.batch_shape)
    if stride is None:
        raise ValueError(f"epilog input 'bias' of shape {list(bias.shape)} broadcasts over only some of the batch "
                         f"dimensions {list(geom.batch_shape)}: pass one bias for all, or one per batch member")
    return stride, axis == "cols"


def aux_outputs(spec: EpilogSpec, kind: str, geom: Geometry, d_dtype: str, aux_dtype: str | None = None):
    """The auxiliary outputs of an epilog: ``{name: (shape, strides, dtype, ld, batch_stride)}`` with shapes and
    strides in elements of ``dtype`` (cuBLASLt's ld and batch stride for the aux matrix; for bias gradients
    ld is 0 and the batch stride is M or N). Bias gradients are ``(M,)`` (``(N,)`` for BGRADB), or
    ``(*batch, M, 1)`` for a batched product; aux matrices are ``(*batch, rows, cols)`` with ``aux[i]`` the
    aux of batch member ``i``."""
    out = {}
    if spec.aux_out:
        dtype = "uint8" if spec.aux_out == "relu" else (aux_dtype or d_dtype)
        shape, strides, ld, bstride = aux_layout(kind, geom, spec.aux_out, dtype)
        out[f"{spec.aux_out}_aux"] = (shape, strides, dtype, ld, bstride)
    if spec.grad:
        length = geom.n if spec.grad == "bgradb" else geom.m
        nb = len(geom.batch_shape)
        strides, step = [], length
        for size in reversed(geom.batch_shape):
            strides.append(step)
            step *= size
        strides.reverse()
        if nb:  # a batched product's bias gradients are (*batch, length, 1), as nvmath-python returns them
            out[spec.grad] = (geom.batch_shape + (length, 1), tuple(strides) + (1, length), d_dtype, 0, length)
        else:
            out[spec.grad] = ((length,), (1,), d_dtype, 0, 0)
    return out


def no_formulation(spec, aux_kind, conj, narrow_tn, geom, bias_cols=False) -> str:
    """Why no formulation can express the problem (the message of a ValueError)."""
    if bias_cols:
        return (f"epilog {spec.epilog.name} with a bias per column (shape (1, {geom.n})) runs as D^T = B^T A^T, "
                f"whose row-major result this problem's layouts cannot give (an in-place c must be row-major, "
                f"conjugated operands must be readable transposed); pass a bias per row ({geom.m}, 1) or change "
                f"the layouts")
    if aux_kind == "T" and spec.rows_bound:
        return (f"epilog {spec.epilog.name} needs the bias gradient over the rows of a column-major result, but "
                f"the {spec.aux_in}_aux input comes from a row-major forward result; run the forward pass with a "
                f"bias epilog (column-major result) or use {spec.epilog.name.replace('_BGRAD', '')}")
    if narrow_tn:
        return ("FP8 matmul on this GPU needs a row-major a and a column-major b (K contiguous in both): pass "
                "a.contiguous() and b.T.contiguous().T")
    if any(conj):
        return ("conjugation (qualifiers is_conjugate) needs that operand in the layout cuBLASLt reads transposed: "
                "pass a row-major conjugated a, or a column-major conjugated b (or conjugate it beforehand)")
    return f"cuBLASLt cannot express this problem's layouts (M={geom.m}, N={geom.n}, K={geom.k})"
