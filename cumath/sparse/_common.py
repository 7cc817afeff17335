"""Checks the sparse operations share (the matmul and the direct solver): a dense operand beside the sparse a,
and the operands a reset after ``release_operands()`` must give again."""

from __future__ import annotations

__all__ = ["check_dense_beside", "check_given_after_release"]


def _space(device_id) -> str:
    return "host memory" if device_id is None else f"GPU {device_id}"


def check_dense_beside(where: str, op, a, a_kind: str) -> None:
    """The dense operand ``op`` (called ``where`` in messages) must be an array of the sparse ``a``'s package
    (TypeError) in ``a``'s memory space (ValueError); ``a_kind`` says what ``a`` is ('a SciPy matrix')."""
    if op.package != a.package:
        raise TypeError(f"{where} is a {op.package} array while a is {a_kind}; pass a {a.package} array")
    if op.device_id != a.device_id:
        raise ValueError(f"{where} is in {_space(op.device_id)} while a is in {_space(a.device_id)}; move them to "
                         f"one device")


def check_given_after_release(released: bool, given: dict, needed) -> None:
    """After ``release_operands()`` a reset must give every operand of ``needed`` again (ValueError naming the
    missing ones); ``given``: name -> the new operand or None."""
    if not released:
        return
    missing = [k for k in needed if given[k] is None]
    if missing:
        raise ValueError(f"after release_operands(), every operand must be given again; missing {', '.join(missing)}")
