"""The stateless ``matmul``: a Matmul, planned once and kept in the plan cache, executed per call."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._core.operand import Operand, wrap_operand
from ..._core.options import check_options, snapshot
from ..._core._fast import hot_mm as _hot
from ..._core.plan_cache import cached_call, hot_remember
from ..._core.streams import stream_key
from ._options import MatmulOptions, MatmulPlanPreferences
from ._planner import Matmul
from ._scales import key as scales_key

if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any
    from ..._core.typing import AnyTensor, StreamLike
    from ._algorithms import Algorithm
    from ._options import MatmulEpilog, MatmulQuantizationScales

__all__ = ["matmul"]


def matmul(a: AnyTensor, b: AnyTensor, /, c: AnyTensor = None, *, alpha: complex | None = None,
           beta: complex | None = None, epilog: MatmulEpilog | None = None,
           epilog_inputs: Mapping[str, AnyTensor] | None = None, qualifiers: Any = None,
           quantization_scales: MatmulQuantizationScales | Mapping[str, Any] | None = None,
           options: MatmulOptions | Mapping[str, Any] | None = None,
           preferences: MatmulPlanPreferences | Mapping[str, Any] | None = None, algorithm: Algorithm | None = None,
           stream: StreamLike = None) -> AnyTensor:
    """``epilog(alpha * a @ b + beta * c)`` in one cuBLASLt call, with numpy.matmul semantics.

    ``a``, ``b``, ``c``: NumPy, CuPy or PyTorch arrays (host arrays are copied to the GPU and the result back);
    1-D operands are promoted as in numpy.matmul, batch dimensions broadcast, ``c`` may be ``(M, 1)`` (added
    to every column). ``epilog``: a :class:`MatmulEpilog`, with ``epilog_inputs`` such as ``{"bias": b}``
    (of the result's dtype; another real floating-point dtype is converted with one logged copy); epilogs
    with auxiliary outputs return ``(result, aux)``. ``quantization_scales``: for FP8 operands.
    ``options``: :class:`MatmulOptions`; ``preferences``: :class:`MatmulPlanPreferences`; ``algorithm``: an
    Algorithm to run. The plan is cached (``cumath.config.plan_cache``), so repeated calls cost one library
    call plus the result's allocation (a small CuPy or PyTorch result the caller has dropped, with no view or
    other reference left, is reused instead: see ``Matmul.execute``).

    Example::

        import torch
        from cumath.linalg.advanced import matmul, MatmulEpilog
        a, b = torch.randn(256, 64, device="cuda"), torch.randn(64, 128, device="cuda")
        d = matmul(a, b, epilog=MatmulEpilog.RELU)             # relu(a @ b)
        d, aux = matmul(a, b, epilog=MatmulEpilog.RELU_AUX)    # aux["relu_aux"]: the bit-mask
    """
    if _hot is not None:  # a cached plan's call in C (CUDA torch/CuPy operands, every other argument default)
        result = _hot(a, b, c, alpha, beta, epilog, epilog_inputs, qualifiers, quantization_scales, options,
                      preferences, algorithm, stream)
        if result is not None:
            return result
    A = a if type(a) is Operand else wrap_operand(a, "a")
    B = b if type(b) is Operand else wrap_operand(b, "b")
    C = None if c is None else (c if type(c) is Operand else wrap_operand(c, "c"))
    if options is not None:  # the frozen snapshot of settable options: the key cannot change under the cache
        options = snapshot(options) if type(options) is MatmulOptions else check_options(options, MatmulOptions,
                                                                                          "matmul options")
    if preferences is not None:
        preferences = snapshot(preferences) if type(preferences) is MatmulPlanPreferences else check_options(
            preferences, MatmulPlanPreferences, "plan preferences")
    inputs = ikey = None
    if epilog_inputs:  # wrapped once: the plan takes the Operands as they are
        if not isinstance(epilog_inputs, dict):
            raise TypeError(f"epilog_inputs must be a dict, not {type(epilog_inputs).__name__}")
        inputs = {k: x if type(x) is Operand else wrap_operand(x, f"epilog input {k!r}")
                  for k, x in epilog_inputs.items()}
        ikey = tuple(sorted((k, op.signature) for k, op in inputs.items()))
    key = (Matmul, A.package, A.device_id, A.shape, A.strides, A.dtype, B.package, B.device_id, B.shape, B.strides,
           B.dtype, None if C is None else C.signature, epilog, ikey,
           None if qualifiers is None else _qualifiers_key(qualifiers),
           None if quantization_scales is None else scales_key(quantization_scales), algorithm, options, preferences,
           stream_key(stream, A))
    args = (A, B, C, alpha, beta, qualifiers, quantization_scales, options, stream, preferences, epilog, inputs,
            algorithm)  # one tuple for the miss, not a closure over every local
    result = cached_call(key, lambda: _planned(*args), {"a": A, "b": B, "c": C}, alpha, beta, inputs,
                         quantization_scales)
    if _hot is not None and c is None and alpha is None and beta is None and epilog is None and \
            epilog_inputs is None and qualifiers is None and quantization_scales is None and options is None and \
            preferences is None and algorithm is None and stream is None:
        hot_remember(key, a, _MM, b)  # later calls of this key may be served by _hot
    return result


_MM = 16  # the compiled path's code of a default-argument matmul key


def _planned(a, b, c, alpha, beta, qualifiers, scales, options, stream, preferences, epilog, inputs, algorithm):
    """A new Matmul, planned (freed again if planning fails)."""
    mm = Matmul(a, b, c, alpha=alpha, beta=beta, qualifiers=qualifiers, quantization_scales=scales, options=options,
                stream=stream)
    try:
        mm.plan(preferences=preferences, epilog=epilog, epilog_inputs=inputs,
                algorithms=None if algorithm is None else [algorithm])
    except BaseException:
        mm.free()
        raise
    return mm


def _qualifiers_key(qualifiers):
    """The conjugation flags of nvmath-style qualifiers (what a plan depends on in them); qualifiers that cannot
    be read get a key of their own, so that planning reports what is wrong with them."""
    try:
        return tuple(int(q) for q in qualifiers["is_conjugate"])
    except Exception:
        return object()
