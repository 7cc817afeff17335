"""Options of the sparse matmul (the shape of nvmath-python 1.0's ``nvmath.sparse.MatmulOptions``)."""

from __future__ import annotations

import dataclasses
import enum
import logging
import re
from typing import Literal

from ..._core.options import check_choice, check_enum

__all__ = ["MatmulOptions", "ComputeType", "CPU_ENGINES", "parse_memory_limit", "check_algorithm"]

CPU_ENGINES = ("auto", "mkl", "scipy")
AUTOTUNE = "autotune"


def check_algorithm(value):
    """``MatmulOptions.algorithm`` normalised: None, 'autotune', or the name of a cuSPARSE SpMM/SpMV algorithm
    (``cusparseSpMMAlg_t`` / ``cusparseSpMVAlg_t`` without the prefix, any case; an ``SpMMAlg``/``SpMVAlg``)."""
    if value is None:
        return None
    from ..._bindings.cusparse import SpMMAlg, SpMVAlg

    if isinstance(value, (SpMMAlg, SpMVAlg)):
        return value.name
    if isinstance(value, str):
        v = value.strip().upper()
        for prefix in ("CUSPARSE_SPMM_", "CUSPARSE_SPMV_"):
            v = v[len(prefix):] if v.startswith(prefix) else v
        v = "DEFAULT" if v == "ALG_DEFAULT" else v
        if v == AUTOTUNE.upper():
            return AUTOTUNE
        if v in SpMMAlg.__members__ or v in SpMVAlg.__members__:
            return v
    names = sorted(set(SpMMAlg.__members__) | set(SpMVAlg.__members__))
    raise ValueError(f"algorithm={value!r} is not supported; use None (cuSPARSE's default), 'autotune' (measured "
                     f"at plan()) or one of {', '.join(names)}")


class ComputeType(enum.IntEnum):
    """The compute type of a product (CUDA's ``cudaDataType`` values, as cuSPARSE's ``computeType`` takes)."""

    COMPUTE_16F = 2  # CUDA_R_16F
    COMPUTE_32F = 0  # CUDA_R_32F
    COMPUTE_64F = 1  # CUDA_R_64F
    COMPUTE_32F_COMPLEX = 4  # CUDA_C_32F
    COMPUTE_64F_COMPLEX = 5  # CUDA_C_64F


_MEMORY = re.compile(r"^\s*(\d+(?:\.\d*)?)\s*([kmg]i?b?|b)?\s*$", re.IGNORECASE)


def parse_memory_limit(value, device_bytes: int | None = None) -> int | None:
    """``memory_limit`` in bytes: an int, '80%' (of ``device_bytes``), or a size with a K/M/G[iB] suffix."""
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            raise ValueError(f"memory_limit={value!r} must not be negative")
        return value
    if isinstance(value, str):
        v = value.strip()
        if v.endswith("%"):
            pct = float(v[:-1])
            if not 0 < pct <= 100:
                raise ValueError(f"memory_limit={value!r}: a percentage must be in (0, 100]")
            return None if device_bytes is None else int(device_bytes * pct / 100)
        m = _MEMORY.match(v)
        if m:
            scale = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[(m.group(2) or "")[:1].lower()]
            return int(float(m.group(1)) * scale)
    raise ValueError(f"memory_limit={value!r} is not supported; give bytes (an int), a percentage such as '80%' or "
                     f"a size such as '2 GiB'")


@dataclasses.dataclass(frozen=True, kw_only=True)
class MatmulOptions:
    """Options of :class:`cumath.sparse.Matmul` and :func:`cumath.sparse.matmul`.

    Attributes:
        codegen: use a generated kernel instead of cuSPARSE for UST operands (GPU).
        compute_type: a :class:`ComputeType` (or its name / value); by default the operands' type.
        logger: a ``logging.Logger``; by default ``cumath.sparse``'s.
        memory_limit: the most device memory the product may use for workspace: bytes, '80%' of the device's,
            or a size with a K/M/G[iB] suffix.
        blocking: True waits for GPU work; 'auto' returns at once for GPU operands.
        allocator: device memory for workspaces (see :mod:`cumath.memory`).
        cpu_engine: (cumath) the CPU engine: 'auto' (MKL's sparse BLAS when the ``mkl`` wheel is there, else
            SciPy), 'mkl' or 'scipy'; the environment variable CUMATH_SPARSE_CPU_ENGINE sets the default.
        expected_calls: (cumath) how many executions MKL's inspector should optimise for (its
            ``mkl_sparse_set_mm_hint``); 0 skips the inspector's optimisation.
        algorithm: (cumath) how the engine's algorithm is chosen. None: cuSPARSE's default
            (CUSPARSE_SPMM_ALG_DEFAULT) and the CPU engine of ``cpu_engine``; 'autotune': measured once at
            plan() (:meth:`Matmul.autotune`: cuSPARSE's algorithms for the stored format on the GPU, MKL against
            SciPy on the CPU when ``cpu_engine`` is 'auto'), and, as part of the options, kept with the plan in
            the plan cache so stateless calls reuse the choice; or a cuSPARSE algorithm by name ('CSR_ALG2',
            'CSR_ALG3', 'BSR_ALG1', ...; an ``SpMMAlg``/``SpMVAlg``), used as given (GPU only).
    """

    codegen: bool = False
    compute_type: int | None = None
    logger: logging.Logger | None = dataclasses.field(default=None, compare=False)
    memory_limit: int | str | None = "80%"
    blocking: Literal[True, "auto"] = "auto"
    allocator: object | None = dataclasses.field(default=None, compare=False)
    cpu_engine: Literal["auto", "mkl", "scipy"] = "auto"
    expected_calls: int = 100
    algorithm: str | None = None

    def __post_init__(self):
        object.__setattr__(self, "algorithm", check_algorithm(self.algorithm))
        check_choice("codegen", self.codegen, (True, False))
        object.__setattr__(self, "compute_type", check_enum("compute_type", self.compute_type, ComputeType))
        if self.blocking is not True and self.blocking != "auto":
            raise ValueError(f"blocking={self.blocking!r} is not supported; the allowed values are [True, 'auto']")
        check_choice("cpu_engine", self.cpu_engine, CPU_ENGINES)
        parse_memory_limit(self.memory_limit, 1)
        if self.logger is not None and not isinstance(self.logger, logging.Logger):
            raise TypeError(f"logger must be a logging.Logger, not {type(self.logger).__name__}")
        if not isinstance(self.expected_calls, int) or self.expected_calls < 0:
            raise ValueError(f"expected_calls={self.expected_calls!r} must be an int >= 0")
