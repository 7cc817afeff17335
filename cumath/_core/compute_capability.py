"""Compute capabilities as the user writes them ('90', '9.0', 'sm_90', 90, 900, (9, 0), an object with
``major``/``minor``) turned into ``(major, minor)``, and the current GPU's. Shared by the FFT callbacks and the
device APIs."""

from __future__ import annotations

__all__ = ["parse_compute_capability", "current_compute_capability"]


def parse_compute_capability(cc, *, what: str = "compute_capability", min_major: int = 5,
                             oldest: str = "") -> tuple[int, int]:
    """``(major, minor)``; ValueError naming ``what`` when ``cc`` is not a compute capability or is older than
    ``min_major``.0 (``oldest`` names that generation in the message). Integers of 300 and more are libmathdx's
    spelling (900 for 9.0), smaller ones nvcc's (90)."""
    if hasattr(cc, "major") and hasattr(cc, "minor"):
        cc = (cc.major, cc.minor)
    try:
        if isinstance(cc, (tuple, list)):
            major, minor = (int(v) for v in cc)
        elif isinstance(cc, int) and not isinstance(cc, bool):
            major, minor = (cc // 100, (cc % 100) // 10) if cc >= 300 else divmod(cc, 10)
        elif isinstance(cc, str):
            s = cc.strip().lower()
            for prefix in ("sm_", "compute_", "sm", "compute"):
                if s.startswith(prefix):
                    s = s[len(prefix):]
                    break
            major, minor = (int(v) for v in s.split(".")) if "." in s else (int(s[:-1]), int(s[-1]))
        else:
            raise TypeError
    except (TypeError, ValueError):
        raise ValueError(f"{what}={cc!r} is not a compute capability; pass e.g. 90, '90', '9.0' or (9, 0)") from None
    if not (min_major <= major <= 30 and 0 <= minor <= 9):
        raise ValueError(f"{what}={cc!r} is out of range: compute capability {min_major}.0{oldest} and newer")
    return major, minor


def current_compute_capability() -> tuple[int, int]:
    """The current GPU's ``(major, minor)``; raises what the CUDA runtime raises when there is none."""
    from .._bindings import cudart

    dev = cudart.cudaGetDevice()
    attr = cudart.cudaDeviceAttr
    return (cudart.cudaDeviceGetAttribute(attr.cudaDevAttrComputeCapabilityMajor, dev),
            cudart.cudaDeviceGetAttribute(attr.cudaDevAttrComputeCapabilityMinor, dev))
