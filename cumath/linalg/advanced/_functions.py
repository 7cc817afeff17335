"""The stateless ``matmul``: a Matmul, planned once and kept in the plan cache, executed per call."""

from __future__ import annotations

from ..._core.cache import plan_cache
from ..._core.operand import Operand, adapter, wrap_operand
from ..._core.options import check_options
from ..._core.streams import default_stream, stream_handle
from ._options import MatmulOptions, MatmulPlanPreferences
from ._planner import Matmul, _wrap

__all__ = ["matmul"]

_CURRENT_STREAM: dict = {}  # package -> function(device_id) returning its current stream


def _current_stream(package, device_id):
    fn = _CURRENT_STREAM.get(package)
    if fn is None:  # the package's own query (default_stream's answer) without the dispatch on each call
        fn = _CURRENT_STREAM[package] = (adapter(package).current_stream if package in ("cupy", "torch")
                                         else lambda device_id, _p=package: default_stream(_p, device_id))
    return fn(device_id)


def matmul(a, b, /, c=None, *, alpha=None, beta=None, epilog=None, epilog_inputs=None, qualifiers=None,
           quantization_scales=None, options=None, preferences=None, algorithm=None, stream=None):
    """``epilog(alpha * a @ b + beta * c)`` in one cuBLASLt call, with numpy.matmul semantics.

    ``a``, ``b``, ``c``: NumPy, CuPy or PyTorch arrays (host arrays are copied to the GPU and the result back);
    1-D operands are promoted as in numpy.matmul, batch dimensions broadcast, ``c`` may be ``(M, 1)`` (added
    to every column). ``epilog``: a :class:`MatmulEpilog`, with ``epilog_inputs`` such as ``{"bias": b}``;
    epilogs with auxiliary outputs return ``(result, aux)``. ``quantization_scales``: for FP8 operands.
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
    A = a if type(a) is Operand else wrap_operand(a, "a")
    B = b if type(b) is Operand else wrap_operand(b, "b")
    C = None if c is None else (c if type(c) is Operand else wrap_operand(c, "c"))
    if not (plan_cache.enabled and qualifiers is None and quantization_scales is None and algorithm is None
            and A.device_id is not None):
        with Matmul(A, B, C, alpha=alpha, beta=beta, qualifiers=qualifiers, quantization_scales=quantization_scales,
                    options=options, stream=stream) as mm:
            mm.plan(preferences=preferences, epilog=epilog, epilog_inputs=epilog_inputs,
                    algorithms=[algorithm] if algorithm is not None else None)
            return mm.execute()
    if options is not None and type(options) is not MatmulOptions:
        options = check_options(options, MatmulOptions, "matmul options")
    if preferences is not None and type(preferences) is not MatmulPlanPreferences:
        preferences = check_options(preferences, MatmulPlanPreferences, "plan preferences")
    skey = stream_handle(stream) if stream is not None else _current_stream(A.package, A.device_id)
    inputs = epilog_inputs
    ikey = None
    if inputs:  # wrapped once: the plan takes the Operands as they are
        inputs = {k: _wrap(x, k) for k, x in inputs.items()}
        ikey = tuple(sorted((k, _sig(op)) for k, op in inputs.items()))
    key = ("linalg.advanced.matmul", A.package, A.device_id, A.shape, A.strides, A.dtype, B.shape, B.strides, B.dtype,
           None if C is None else (C.shape, C.strides, C.dtype), epilog, ikey, options, preferences, skey)
    mm = plan_cache.get(key)
    if mm is None:
        mm = Matmul(A, B, C, alpha=alpha, beta=beta, options=options, stream=stream)
        try:
            mm.plan(preferences=preferences, epilog=epilog, epilog_inputs=inputs)
            result = mm.execute()
        except BaseException:
            mm.free()
            raise
        mm._forget_operands()
        plan_cache.put(key, mm, mm.nbytes)  # after executing: put() may evict (and free) this very plan
        return result
    mm._rebind(A, B, C, alpha, beta, inputs)
    try:
        return mm.execute()
    finally:
        mm._forget_operands()


def _sig(op) -> tuple:
    return (op.shape, op.strides, op.dtype)
