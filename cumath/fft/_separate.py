"""FFT callbacks run as a pass of their own, where cuFFT's fused callback kernels would be slower.

A callback stays what the caller compiled (the same LTO-IR, the same semantics: ``offset`` in the plan's
input or output layout, the element, the user data pointer), but the plan may run it in a small elementwise
kernel of cumath's instead of linking it into cuFFT:

- epilog: plain cuFFT into the output, then ``store(out, offset, out[offset], data, nullptr)`` for every
  offset of :meth:`FFT.get_output_layout`;
- prolog: ``tmp[offset] = load(in, offset, data, nullptr)`` over :meth:`FFT.get_input_layout` into a
  plan-owned buffer (or over the operand itself where the caller allowed C2R to overwrite it), then plain
  cuFFT from there. For C2R this buffer is what cuFFT consumes, so the copy C2R otherwise needs goes away.

The kernel is CUDA C++ that declares the callback by the C++ signature cuFFT uses, so its mangled name is the
one the callback's IR defines; :mod:`cumath._core.jit` compiles it with NVRTC to LTO-IR for the device's
architecture and links it with the callback's LTO-IR (nvJitLink) into a CUBIN, both cached on disk by content
(the kernel source, the callback's IR, architecture, NVRTC and nvJitLink versions), loaded once per context.

Why (``benchmarks/NOTES.md``, FFT callbacks): cuFFT 12.0's kernels with a callback are much slower than its
plain ones except for long 1-D transforms; one pass over the data costs about a copy.
``FFTOptions(callback_fusion=...)`` chooses: 'fused', 'separate', or 'auto' (:func:`choose_fusion`).
"""

from __future__ import annotations

import logging
import math

from .._core import jit
from .._core.dtypes import ITEMSIZE
from .._core.layout import dense_strides
from ..memory import allocate
from ._options import CALLBACK_FUSION as FUSION_MODES

__all__ = ["choose_fusion", "FUSED_FROM_LENGTH", "FUSED_ALWAYS", "FUSION_MODES", "collapse_dims", "kernel_source",
           "split_callbacks", "CallbackPasses", "linked_image"]

logger = logging.getLogger(__name__)

# The 'auto' rule, from identity callbacks timed fused and separate against plain cuFFT on the H200 (cuFFT 12.0,
# benchmarks/fft.py --case callbacks, 2026-11-29; time / plain, fused vs separate; benchmarks/NOTES.md has the table).
# A separate pass costs one read and one write of the array (156 us for 8192 x 4097 complex64: 0.9x a copy).
# - 2-D R2C epilog: fused 2.53-2.97x, separate 1.26-1.36x (2048^2 .. 8192^2); 2-D C2R prolog: fused 1.89-2.08x,
#   separate 1.28-1.37x; 2-D R2C prolog: fused 1.20-1.56x, separate 1.30-1.34x (fused ahead up to 4096^2 by
#   3-10%, behind at 8192^2 by 17%: left separate); C2C 4096^2 prolog: 2.48x against 1.39x.
# - 2-D C2C epilog, 4096^2 (the one size measured): fused 1.15x, separate 1.37x -> fused.
# - 1-D, batched: 64 x 65536 C2C: fused 2.24x / 1.97x (epilog / prolog), separate 1.39x / 1.49x; from 2^18 on,
#   fused: 16 x 2^18 C2C 1.12x / 1.24x against 1.32x / 1.43x; 64 x 2^18 R2C/C2R 1.01-1.16x against 1.25-1.34x;
#   16 x 2^20 R2C/C2R 1.00-1.02x against 1.22-1.34x; 4 x 2^20 C2C 1.20x / 1.62x against 1.32x / 1.41x (the
#   prolog the one exception). Short 1-D (4096 x 1000, 18-29 us a call): R2C fused by 2-6 us, C2R prolog
#   separate by 16 us: left separate.
# rank -> length of the last transformed axis from which callbacks are fused (ranks absent: never by length)
FUSED_FROM_LENGTH = {1: 1 << 18}
# (rank, FFT type, kind) fused at every size
FUSED_ALWAYS = frozenset({(2, "C2C", "epilog")})


def choose_fusion(geom, kind: str, requested: str = "auto", shared_size: int = 0) -> tuple[str, str]:
    """('fused' or 'separate', the reason) for a ``kind`` ('prolog'/'epilog') callback of an FFT of ``geom``.

    ``requested`` 'fused'/'separate' is honoured; 'auto' fuses callbacks that need shared memory (a separate
    pass has none to give) and those :data:`FUSED_FROM_LENGTH` / :data:`FUSED_ALWAYS` name, and runs the
    others separately."""
    if requested not in FUSION_MODES:
        raise ValueError(f"callback_fusion={requested!r} is not supported; the allowed values are "
                         f"{list(FUSION_MODES)}")
    if requested != "auto":
        return requested, f"callback_fusion='{requested}'"
    if shared_size:
        return "fused", f"the {kind} asks for {shared_size} bytes of shared memory, which only cuFFT's kernels give"
    rank, n, typ = len(geom.sizes), geom.sizes[-1], geom.fft_type
    if (rank, typ, kind) in FUSED_ALWAYS:
        return "fused", f"{rank}-D {typ} {kind}s: cuFFT's callback kernels measured faster than a separate pass"
    threshold = FUSED_FROM_LENGTH.get(rank)
    if threshold is not None and n >= threshold:
        return "fused", (f"{rank}-D transforms of length {n} >= {threshold}: cuFFT's callback kernels cost "
                         f"less than a separate pass")
    where = f"length {n} < {threshold}" if threshold is not None else "cuFFT's callback kernels measured 1.2-3x"
    return "separate", (f"{rank}-D {typ} transform ({where}): a separate pass over the data is cheaper than "
                        f"cuFFT's callback kernels")


def split_callbacks(callbacks, geom, requested: str, log=logger) -> tuple[tuple, dict]:
    """(callbacks to link into cuFFT, {kind: callback} to run as separate passes), logged at INFO."""
    fused, separate = [], {}
    for cb in callbacks:
        mode, reason = choose_fusion(geom, cb.kind, requested, getattr(cb, "shared_size", 0))
        if log.isEnabledFor(logging.INFO):
            log.info("%s %s: %s (%s)", cb.kind, cb.name.decode(), "fused into cuFFT" if mode == "fused" else
                     "run as a separate pass", reason)
        if mode == "fused":
            fused.append(cb)
        else:
            separate[cb.kind] = cb
    return tuple(fused), separate


# ---------------------------------------------------------------------------------------------- layouts

MAX_DIMS = 6


def collapse_dims(shape, src_strides, dst_strides) -> list[tuple[int, int, int]]:
    """(extent, source stride, destination stride) per dimension, innermost (smallest destination stride)
    first, extent-1 dimensions dropped, neighbours that step as one merged. A dense pair collapses to
    ``[(n, 1, 1)]``."""
    dims = sorted(((n, s, d) for n, s, d in zip(shape, src_strides, dst_strides) if n != 1),
                  key=lambda t: (t[2], t[1]))
    out: list[list[int]] = []
    for n, s, d in dims:
        if out and out[-1][0] * out[-1][1] == s and out[-1][0] * out[-1][2] == d:
            out[-1][0] *= n
        else:
            out.append([n, s, d])
    return [tuple(x) for x in out] or [(1, 1, 1)]


# ---------------------------------------------------------------------------------------------- kernels

_C_TYPES = {"complex64": "float2", "complex128": "double2", "float32": "float", "float64": "double"}
_BLOCK = 256
_ILP = 4

_TEMPLATE = r"""
typedef unsigned long long u64;
// The callback, declared as cuFFT's kernels declare it (C++ linkage: the LTO-IR defines the mangled name).
__DECL__

#define BLOCK __BLOCK__
#define ILP __ILP__

// Dense layouts: offsets 0 .. n-1. Each thread handles ILP elements BLOCK apart (coalesced), loads first.
extern "C" __global__ void __launch_bounds__(BLOCK) cumath_cb_dense(void* src, void* dst, u64 n, void* info) {
    T* out = (T*)dst;
    const u64 step = (u64)gridDim.x * (BLOCK * ILP);
    for (u64 base = (u64)blockIdx.x * (BLOCK * ILP) + threadIdx.x; base < n; base += step) {
        T v[ILP];
#pragma unroll
        for (int k = 0; k < ILP; ++k) {
            const u64 i = base + (u64)k * BLOCK;
            if (i < n) v[k] = __LOAD_DENSE__;
        }
#pragma unroll
        for (int k = 0; k < ILP; ++k) {
            const u64 i = base + (u64)k * BLOCK;
            if (i < n) __STORE_DENSE__;
        }
    }
}

// Any layout of up to 6 dimensions (innermost first): source and destination offsets of element i.
extern "C" __global__ void __launch_bounds__(BLOCK) cumath_cb_strided(void* src, void* dst, u64 n, void* info,
        u64 e0, u64 e1, u64 e2, u64 e3, u64 e4, u64 e5, u64 s0, u64 s1, u64 s2, u64 s3, u64 s4, u64 s5,
        u64 d0, u64 d1, u64 d2, u64 d3, u64 d4, u64 d5) {
    T* out = (T*)dst;
    const u64 e[6] = {e0, e1, e2, e3, e4, e5}, s[6] = {s0, s1, s2, s3, s4, s5}, d[6] = {d0, d1, d2, d3, d4, d5};
    const u64 step = (u64)gridDim.x * BLOCK;
    for (u64 i = (u64)blockIdx.x * BLOCK + threadIdx.x; i < n; i += step) {
        u64 rem = i, so = 0, dof = 0;
#pragma unroll
        for (int k = 0; k < 6; ++k) {
            const u64 q = e[k] == 1 ? rem : rem / e[k];
            const u64 r = rem - q * e[k];
            so += r * s[k];
            dof += r * d[k];
            rem = q;
        }
        __STRIDED__;
    }
}
"""


def kernel_source(kind: str, element_dtype: str, plain_name: str) -> str:
    """The CUDA C++ of the separate pass for a ``kind`` callback named ``plain_name`` on ``element_dtype``."""
    t = _C_TYPES[element_dtype]
    if kind == "prolog":
        decl = f"extern __device__ {t} {plain_name}(void*, u64, void*, void*);"
        load = f"{plain_name}(src, i, info, nullptr)"
        store = "out[i] = v[k]"
        strided = f"out[dof] = {plain_name}(src, so, info, nullptr)"
    else:
        decl = f"extern __device__ void {plain_name}(void*, u64, {t}, void*, void*);"
        load = "out[i]"
        store = f"{plain_name}(dst, i, v[k], info, nullptr)"
        strided = f"{plain_name}(dst, dof, out[dof], info, nullptr)"
    src = (_TEMPLATE.replace("__DECL__", f"typedef {t} T;\n{decl}").replace("__BLOCK__", str(_BLOCK))
           .replace("__ILP__", str(_ILP)).replace("__LOAD_DENSE__", load).replace("__STORE_DENSE__", store)
           .replace("__STRIDED__", strided))
    return src


def linked_image(cb, arch: int, log=logger) -> jit.Artifact:
    """The linked CUBIN of the separate pass of callback ``cb`` (an AttachedCallback) for ``sm_<arch>``."""
    source = kernel_source(cb.kind, cb.element_dtype, cb.name.decode())
    what = f"the separate {cb.kind} pass of {cb.name.decode()}"
    kernel = jit.compile_source(source, cc=arch, output="ltoir", name="cumath_fft_callback_pass.cu", what=what,
                                log=log)
    return jit.link([("ltoir", kernel.data, "cumath_pass"), ("ltoir", cb.ltoir, "callback")], cc=arch, what=what,
                    log=log)


class _Pass:
    """One loaded pass over one layout pair: ``run(src, dst, stream)``."""

    __slots__ = ("kernel", "grid", "args", "n")

    def __init__(self, cb, shape, src_strides, dst_strides, device_id, log):
        from .._bindings import cudart
        from .._core.kernels import device_arch, load_kernel

        image = linked_image(cb, device_arch(device_id), log)
        dims = collapse_dims(shape, src_strides, dst_strides)
        self.n = n = math.prod(shape)
        dense = len(dims) == 1 and dims[0][1] == dims[0][2] == 1
        if not dense and len(dims) > MAX_DIMS:
            raise ValueError(f"the {cb.kind} pass handles layouts of up to {MAX_DIMS} dimensions after merging, "
                             f"not {len(dims)}; use FFTOptions(callback_fusion='fused')")
        name = "cumath_cb_dense" if dense else "cumath_cb_strided"
        self.kernel = load_kernel(image.data, image.key, name, "PPQP" + ("" if dense else "Q" * 18),
                                  device_id=device_id)
        sms = cudart.cudaDeviceGetAttribute(cudart.cudaDeviceAttr.cudaDevAttrMultiProcessorCount, device_id)
        per_sm = max(1, self.kernel.max_active_blocks_per_sm(_BLOCK))
        per_block = _BLOCK * (_ILP if dense else 1)
        self.grid = max(1, min(-(-n // per_block), sms * per_sm))
        extra = ()
        if not dense:
            dims = dims + [(1, 0, 0)] * (MAX_DIMS - len(dims))
            extra = tuple(d[0] for d in dims) + tuple(d[1] for d in dims) + tuple(d[2] for d in dims)
        self.args = (n, cb.data or 0) + extra

    def run(self, src: int, dst: int, stream: int) -> None:
        n, data, *extra = self.args
        self.kernel.launch(self.grid, _BLOCK, 0, stream, src, dst, n, data, *extra)


class CallbackPasses:
    """The separate passes of one plan and the buffer a separate prolog writes.

    ``in_strides``/``out_strides``: the layouts the callbacks index (what the FFT declares). ``plan_in_strides``:
    what cuFFT reads (the prolog's destination: the declared layout where it is dense, else dense in the
    canonical order). ``overwrite``: the prolog may write over its source (C2R with overwrite_input)."""

    def __init__(self, separate: dict, geom, in_strides, out_strides, device_id, stream, allocator,
                 overwrite: bool = False, log=logger):
        self.prolog = self.epilog = None
        self.callbacks = tuple(separate.values())  # they hold the user data the passes point at
        self._buffer = None
        self.nbytes = 0
        self.plan_in_strides = tuple(in_strides)
        self.in_place = False
        pro, epi = separate.get("prolog"), separate.get("epilog")
        try:
            if pro is not None:
                dense = collapse_dims(geom.in_shape, in_strides, in_strides)
                if not (len(dense) == 1 and dense[0][1] == 1):
                    self.plan_in_strides = dense_strides(geom.in_shape, geom.canonical_perm)
                self.in_place = overwrite and self.plan_in_strides == tuple(in_strides)
                self.prolog = _Pass(pro, geom.in_shape, in_strides, self.plan_in_strides, device_id, log)
                if not self.in_place:
                    self.nbytes = math.prod(geom.in_shape) * ITEMSIZE[geom.in_dtype]
                    self._buffer = allocate(allocator, self.nbytes, stream)
            if epi is not None:
                self.epilog = _Pass(epi, geom.out_shape, out_strides, out_strides, device_id, log)
        except BaseException:
            self.free()
            raise

    def run_prolog(self, src: int, stream: int) -> int:
        """Run the prolog over the array at ``src``; returns the address cuFFT reads."""
        dst = src if self.in_place else self._buffer.device_ptr
        self.prolog.run(src, dst, stream)
        return dst

    def run_epilog(self, out: int, stream: int) -> None:
        self.epilog.run(out, out, stream)

    def free(self) -> None:
        if self._buffer is not None:
            self._buffer.free()
            self._buffer = None
