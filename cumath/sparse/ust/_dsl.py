"""The format DSL of the Universal Sparse Tensor: dimensions, level expressions, level formats and properties,
and :class:`TensorFormat`, which maps a tensor's dimensions (its logical indices) to storage levels.

A level expression is a dimension or an affine combination of them: ``i``, ``i // 4``, ``i % 4``, ``j - i``,
``i + j``. A format is invertible when every dimension can be recovered from the level coordinates:
``i // c`` together with ``i % c`` gives ``i``; a dimension known from its own level, with ``j - i`` or
``i + j``, gives the other. A format whose levels leave a dimension undetermined, or that uses an expression the
DSL cannot invert, is refused at construction with a message that says which dimension or expression.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import enum

import numpy as np

if TYPE_CHECKING:
    from typing import Any

__all__ = ["Dimension", "LevelExpr", "LevelFormat", "LevelProperty", "TensorFormat"]


class LevelFormat(enum.Enum):
    """How a level is stored: DENSE (every coordinate, implicitly), BATCH (dense, an outer batch), COMPRESSED
    (positions and coordinates arrays), SINGLETON (one coordinate per parent), RANGE (dense over the coordinates
    its parent's coordinates admit, as the diagonals of DIA), DELTA (as COMPRESSED, each coordinate stored as
    its difference from the previous one of the same parent: small numbers for clustered coordinates) and
    STRUCTURED (N:M; ``(STRUCTURED, N)`` on a level ``x % M``: exactly N coordinates and values per block of M,
    zero-padded where a block holds fewer, as 2:4 sparse weights)."""

    DENSE = "dense"
    BATCH = "batch"
    COMPRESSED = "compressed"
    SINGLETON = "singleton"
    RANGE = "range"
    DELTA = "delta"
    STRUCTURED = "structured"

    def __repr__(self):
        return f"<LevelFormat.{self.name}>"


class LevelProperty(enum.Enum):
    UNIQUE = "unique"
    NONUNIQUE = "nonunique"
    ORDERED = "ordered"
    UNORDERED = "unordered"

    def __repr__(self):
        return f"<LevelProperty.{self.name}>"


class LevelExpr:
    """An affine level expression over dimensions (``terms``: dimension name -> coefficient, ``const``), or
    ``dim // c`` / ``dim % c`` (``op`` 'div' / 'mod' with ``divisor``)."""

    __slots__ = ("terms", "op", "divisor")

    def __init__(self, terms: dict, op: str = "affine", divisor: int | None = None) -> None:
        self.terms, self.op, self.divisor = dict(terms), op, divisor

    # arithmetic of the DSL
    def _affine(self, other, sign):
        if self.op != "affine" or (isinstance(other, LevelExpr) and other.op != "affine"):
            raise ValueError(f"cannot combine {self!r} and {other!r}: '+' and '-' apply to dimensions and sums of "
                             f"them, not to '//' or '%' expressions")
        other = _expr(other)
        terms = dict(self.terms)
        for k, v in other.terms.items():
            terms[k] = terms.get(k, 0) + sign * v
        terms = {k: v for k, v in terms.items() if v}
        if not terms:
            raise ValueError(f"{self!r} {'+' if sign > 0 else '-'} {other!r} has no dimension left")
        return LevelExpr(terms)

    def __add__(self, other):
        return self._affine(other, 1)

    def __sub__(self, other):
        return self._affine(other, -1)

    def __floordiv__(self, c):
        return self._divmod(c, "div")

    def __mod__(self, c):
        return self._divmod(c, "mod")

    def _divmod(self, c, op):
        if not isinstance(c, (int, np.integer)) or isinstance(c, bool) or c < 1:
            raise ValueError(f"the divisor of a level expression must be a positive int; got {c!r}")
        if self.op != "affine" or len(self.terms) != 1 or next(iter(self.terms.values())) != 1:
            raise ValueError(f"'//' and '%' apply to a single dimension, not to {self!r}")
        return LevelExpr(self.terms, op, int(c))

    @property
    def dims(self) -> tuple[str, ...]:
        """The names of the dimensions the expression uses."""
        return tuple(self.terms)

    def evaluate(self, coords: dict) -> Any:
        """The level coordinate(s) for dimension coordinates (name -> int or array)."""
        if self.op == "div":
            return coords[self.dims[0]] // self.divisor
        if self.op == "mod":
            return coords[self.dims[0]] % self.divisor
        return sum(v * coords[k] for k, v in self.terms.items())

    def size(self, extents: dict) -> int:
        """The number of coordinates of the level (for a difference, every diagonal)."""
        if self.op == "div":
            return -(-extents[self.dims[0]] // self.divisor)
        if self.op == "mod":
            return self.divisor
        if len(self.terms) == 1:
            return extents[self.dims[0]]
        return sum(extents[k] for k in self.terms) - len(self.terms) + 1

    def key(self) -> Any:
        return (tuple(sorted(self.terms.items())), self.op, self.divisor)

    def __eq__(self, other):
        return isinstance(other, LevelExpr) and self.key() == other.key()

    def __hash__(self):
        return hash(self.key())

    def __repr__(self):
        if self.op in ("div", "mod"):
            return f"({self.dims[0]} {'//' if self.op == 'div' else '%'} {self.divisor})"
        if len(self.terms) == 1 and next(iter(self.terms.values())) == 1:
            return self.dims[0]
        out = ""
        for k, v in self.terms.items():
            sign = "-" if v < 0 else "+"
            mag = "" if abs(v) == 1 else f"{abs(v)}*"
            out += (f" {sign} " if out else ("-" if v < 0 else "")) + f"{mag}{k}"
        return f"({out})"


class Dimension(LevelExpr):
    """A dimension of a tensor (a logical index), named; ``+ - // %`` make level expressions."""

    __slots__ = ("dimension_name",)

    def __init__(self, dimension_name: str) -> None:
        if not isinstance(dimension_name, str) or not dimension_name:
            raise TypeError(f"a Dimension needs a name (a non-empty str); got {dimension_name!r}")
        super().__init__({dimension_name: 1})
        self.dimension_name = dimension_name


def _expr(x) -> LevelExpr:
    if isinstance(x, LevelExpr):
        return x
    raise TypeError(f"a level expression must be a Dimension or an expression of them, not {type(x).__name__}")


def _spec(value):
    """(LevelFormat, properties, N) of a level's value in the DSL: a STRUCTURED level names its N (the stored
    entries of every block of M, M coming from its expression ``x % M``): ``(LevelFormat.STRUCTURED, N, ...)``."""
    if isinstance(value, LevelFormat):
        if value == LevelFormat.STRUCTURED:
            raise TypeError("a STRUCTURED level needs its N: write (LevelFormat.STRUCTURED, N) for N stored entries "
                            "in every block of M (the level expression x % M), or use NamedFormats.Structured(N, M)")
        return value, (), None
    if isinstance(value, tuple) and value and isinstance(value[0], LevelFormat):
        rest, n = value[1:], None
        if value[0] == LevelFormat.STRUCTURED:
            if not rest or not isinstance(rest[0], (int, np.integer)) or isinstance(rest[0], bool) or rest[0] < 1:
                raise TypeError(f"a STRUCTURED level is (LevelFormat.STRUCTURED, N, ...) with N >= 1 stored entries "
                                f"per block; got {value!r}")
            n, rest = int(rest[0]), rest[1:]
        if all(isinstance(p, LevelProperty) for p in rest):
            return value[0], tuple(rest), n
    raise TypeError(f"a level is a LevelFormat or a (LevelFormat, LevelProperty, ...) tuple; got {value!r}")


class TensorFormat:
    """A universal sparse tensor format: ``dimensions`` (a sequence of :class:`Dimension`), ``levels`` (an ordered
    dict from a level expression to a :class:`LevelFormat` or a ``(LevelFormat, LevelProperty...)`` tuple), and a
    ``name`` (generated from the levels when not given)."""

    def __init__(self, dimensions: Any, levels: Any, *, name: Any = None) -> None:
        dims = tuple(dimensions)
        for d in dims:
            if not isinstance(d, Dimension):
                raise TypeError(f"dimensions must be Dimension objects; got {d!r}")
        names = [d.dimension_name for d in dims]
        if len(set(names)) != len(names):
            raise ValueError(f"dimension names must be distinct; got {names}")
        if not isinstance(levels, dict):
            raise TypeError(f"levels must be an ordered dict from level expressions to level formats; got "
                            f"{type(levels).__name__}")
        exprs, specs = [], []
        for expr, value in levels.items():
            e = _expr(expr)
            unknown = [k for k in e.dims if k not in names]
            if unknown:
                raise ValueError(f"the level expression {e!r} uses {unknown[0]!r}, which is not a dimension of this "
                                 f"format ({', '.join(names)})")
            exprs.append(e)
            specs.append(_spec(value))
        self._params = tuple(n for _, _, n in specs)
        specs = [(f, p) for f, p, _ in specs]
        self._dimensions, self._exprs, self._specs = dims, tuple(exprs), tuple(specs)
        self._names = tuple(names)
        self._solve = self._inverse()
        for i, (fmt, props) in enumerate(specs):
            if fmt in (LevelFormat.SINGLETON, LevelFormat.RANGE) and i == 0:
                raise ValueError(f"level 0 cannot be {fmt.name}: a {fmt.name.lower()} level needs a parent level")
            if fmt == LevelFormat.STRUCTURED and (exprs[i].op != "mod" or self._params[i] > exprs[i].divisor):
                raise ValueError(f"the STRUCTURED level {i} ({exprs[i]!r}) must be x % M, holding N <= M entries of "
                                 f"every block of M; got N={self._params[i]}")
            if fmt in (LevelFormat.DELTA, LevelFormat.STRUCTURED) and (
                    LevelProperty.NONUNIQUE in props or LevelProperty.UNORDERED in props):
                raise ValueError(f"a {fmt.name} level keeps its coordinates ordered and unique; level {i} asks for "
                                 f"{', '.join(p.name for p in props)}")
        self._name = name or self._make_name()

    # ---------------------------------------------------------------------------------------- inverse
    def _inverse(self):
        """The order in which dimensions are recovered from level coordinates: (dim, how, levels...) steps."""
        known, steps = set(), []
        exprs = self._exprs
        progress = True
        while progress and len(known) < len(self._names):
            progress = False
            for li, e in enumerate(exprs):
                if e.op == "affine":
                    unknown = [k for k in e.dims if k not in known]
                    if len(unknown) == 1 and abs(e.terms[unknown[0]]) == 1:
                        steps.append((unknown[0], "affine", li))
                        known.add(unknown[0])
                        progress = True
                elif e.op == "div" and e.dims[0] not in known:
                    mods = [lj for lj, f in enumerate(exprs) if f.op == "mod" and f.dims == e.dims and
                            f.divisor == e.divisor]
                    if mods:
                        steps.append((e.dims[0], "divmod", li, mods[0]))
                        known.add(e.dims[0])
                        progress = True
        missing = [n for n in self._names if n not in known]
        if missing:
            raise ValueError(f"the levels {list(self._exprs)} do not determine dimension(s) {missing}: every dimension "
                             f"must appear in a level by itself, as i // c with i % c (same c), or in i + j / j - i "
                             f"with the other dimension known")
        return tuple(steps)

    def _make_name(self) -> str:
        return "[" + ", ".join(self._names) + "] -> (" + ", ".join(
            f"{e!r}: {f.name}" + (f"[{n}:{e.divisor}]" if n else "")
            for e, (f, _), n in zip(self._exprs, self._specs, self._params)) + ")"

    # ---------------------------------------------------------------------------------------- mapping
    def dim2lvl(self, dim_indices: Any, as_size: bool = False) -> Any:
        """Map dimension indices (one per dimension; NumPy arrays map elementwise) to level indices; with
        ``as_size``, map extents to level sizes."""
        vals = dict(zip(self._names, dim_indices))
        if len(dim_indices) != len(self._names):
            raise ValueError(f"expected {len(self._names)} dimension indices, got {len(dim_indices)}")
        if as_size:
            return [e.size(vals) for e in self._exprs]
        return [e.evaluate(vals) for e in self._exprs]

    def lvl2dim(self, lvl_indices: Any) -> Any:
        """Map level indices to dimension indices (the inverse of :meth:`dim2lvl`)."""
        if len(lvl_indices) != len(self._exprs):
            raise ValueError(f"expected {len(self._exprs)} level indices, got {len(lvl_indices)}")
        dims: dict = {}
        for step in self._solve:
            name, how = step[0], step[1]
            if how == "divmod":
                dims[name] = lvl_indices[step[2]] * self._exprs[step[2]].divisor + lvl_indices[step[3]]
            else:
                e = self._exprs[step[2]]
                rest = sum(v * dims[k] for k, v in e.terms.items() if k != name)
                dims[name] = (lvl_indices[step[2]] - rest) * e.terms[name]
        return [dims[n] for n in self._names]

    # ---------------------------------------------------------------------------------------- properties
    @property
    def dimensions(self) -> tuple[Dimension, ...]:
        """The dimension specifications."""
        return self._dimensions

    @property
    def num_dimensions(self) -> int:
        """How many dimensions (logical indices) the format has."""
        return len(self._dimensions)

    @property
    def num_levels(self) -> int:
        """How many storage levels the format has."""
        return len(self._exprs)

    @property
    def name(self) -> str:
        """The format's name (generated from its levels when none was given)."""
        return self._name

    @property
    def levels(self) -> dict[LevelExpr, Any]:
        """The levels, level expression -> :class:`LevelFormat` or a tuple ``(LevelFormat, [N,] LevelProperty...)``."""
        return {e: (f if not p and not n else (f, *((n,) if n else ()), *p))
                for e, (f, p), n in zip(self._exprs, self._specs, self._params)}

    def level_param(self, level: int) -> Any:
        """N of a STRUCTURED level (its stored entries per block of M); None for other levels."""
        return self._params[level]

    @property
    def level_formats(self) -> tuple[LevelFormat, ...]:
        """The :class:`LevelFormat` of each level."""
        return tuple(f for f, _ in self._specs)

    @property
    def level_exprs(self) -> tuple[LevelExpr, ...]:
        """The level expression of each level."""
        return self._exprs

    @property
    def is_identity(self) -> bool:
        """Whether the levels are the dimensions themselves, in order."""
        return len(self._exprs) == len(self._names) and all(
            e.op == "affine" and e.dims == (n,) and e.terms[n] == 1 for e, n in zip(self._exprs, self._names))

    @property
    def is_ordered(self) -> bool:
        """Whether every level keeps its coordinates ordered (no level is UNORDERED)."""
        return all(LevelProperty.UNORDERED not in p for _, p in self._specs)

    @property
    def is_unique(self) -> bool:
        """Whether every level keeps its coordinates unique (no level is NONUNIQUE)."""
        return all(LevelProperty.NONUNIQUE not in p for _, p in self._specs)

    def level_unique(self, level: int) -> bool:
        return LevelProperty.NONUNIQUE not in self._specs[level][1]

    def key(self) -> Any:
        return (self._names, tuple(e.key() for e in self._exprs), tuple((f, p) for f, p in self._specs),
                self._params)

    def __eq__(self, other):
        return isinstance(other, TensorFormat) and self.key() == other.key()

    def __hash__(self):
        return hash(self.key())

    def __repr__(self):
        return f"TensorFormat({self._make_name()}, name={self._name!r})" if self._name != self._make_name() else \
            f"TensorFormat({self._name})"
