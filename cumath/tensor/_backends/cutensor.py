"""The GPU engine of the contractions: cuTENSOR 2.x on the operands' own memory and strides.

One cuTENSOR handle per device and thread (its plan cache resized to ``PLAN_CACHE_LINES`` and read from, and
at exit written to, ``cache_dir('cutensor')``, together with the JIT kernel cache: autotuned and JIT choices
survive the process; a cache file that cannot be read or written is skipped with one warning).

A binary contraction is one ``cutensorContract``. A ternary one runs as two of them through an intermediate the
plan keeps (the pairing chosen by cost), or, when that intermediate would not fit in the memory limit, as
cuTENSOR's fused ``cutensorContractTrinary``. cuTENSOR wants the addend with the result's strides: another
addend is first copied into the result by the operands' package.

cuTENSOR's contractions take only OP_IDENTITY and OP_CONJ (complex operands) as operand operators. An operand
with another operator (OP_RELU, OP_TANH, ...) is first mapped on the GPU by a cuTENSOR permutation with the same
modes, ``B = op(A)``, into a dense buffer the plan owns (in the operand's own memory order, reused by every
execution, freed with the plan), and the contraction reads that buffer with OP_IDENTITY. OP_CONJ of a real
operand is OP_IDENTITY.
"""

from __future__ import annotations

import atexit
import ctypes
import logging
import math
import os
import threading
import warnings
import weakref

from ..._bindings import cutensor as ct
from ..._core._fast import call_words
from ..._core.allocators import allocate, default_allocator
from ..._core.cuda import set_device
from ..._core.disk_cache import cache_dir
from ..._core.layout import dense_strides, natural_perm
from ..._core.logging import format_bytes
from ..._core.operand import adapter
from .._options import memory_limit_bytes

__all__ = ["ContractionCUTENSOR", "handle_for", "DATA_TYPES", "DEFAULT_COMPUTE", "mode_code"]

logger = logging.getLogger(__name__)

DATA_TYPES = {"float16": ct.DataType.R_16F, "bfloat16": ct.DataType.R_16BF, "float32": ct.DataType.R_32F,
              "float64": ct.DataType.R_64F, "complex64": ct.DataType.C_32F, "complex128": ct.DataType.C_64F}
DEFAULT_COMPUTE = {"float16": "32F", "bfloat16": "32F", "float32": "32F", "float64": "64F", "complex64": "32F",
                   "complex128": "64F"}
# cudaDataType of the scalars -> (ctypes type, is complex)
_SCALAR = {0: (ctypes.c_float, False), 1: (ctypes.c_double, False), 4: (ctypes.c_float, True),
           5: (ctypes.c_double, True), 2: (ctypes.c_float, False), 14: (ctypes.c_float, False)}
PLAN_CACHE_LINES = 256
_ITEMSIZE = {"float16": 2, "bfloat16": 2, "float32": 4, "float64": 8, "complex64": 8, "complex128": 16}
#: the operand operators cuTENSOR's contractions apply themselves (OP_CONJ only to complex operands)
CONTRACTION_OPERATORS = (int(ct.Operator.OP_IDENTITY), int(ct.Operator.OP_CONJ))

_handles: dict = {}
_lock = threading.Lock()
_warned: set = set()


def alignment(ptr: int) -> int:
    """The largest power of two up to 256 that divides ``ptr`` (256 for 0: a buffer cumath allocates)."""
    return 256 if ptr == 0 else min(256, ptr & -ptr)


def mode_code(mode: str) -> int:
    """The int32 cuTENSOR sees for a mode: a letter's code point, 256 + j for the j-th ellipsis mode."""
    return 256 + int(mode[3:]) if mode.startswith("...") else ord(mode)


def _cache_files(device_id: int):
    folder = cache_dir("cutensor")
    tag = f"v{ct.cutensorGetVersion()}-dev{device_id}"
    return os.path.join(folder, f"plans-{tag}.bin"), os.path.join(folder, f"kernels-{tag}.bin")


def _warn_once(what: str, exc) -> None:
    if what not in _warned:
        _warned.add(what)
        warnings.warn(f"cuTENSOR's {what} is skipped: {exc}", RuntimeWarning, stacklevel=3)


def _save(handle: int, device_id: int) -> None:
    """Write the handle's plan cache and the library's JIT kernel cache (at exit)."""
    try:
        plans, kernels = _cache_files(device_id)
        ct.cutensorHandleWritePlanCacheToFile(handle, plans + ".tmp")
        os.replace(plans + ".tmp", plans)
    except Exception as exc:  # caches never make a computation fail
        _warn_once("plan cache file (write)", exc)
        return
    try:
        ct.cutensorWriteKernelCacheToFile(handle, kernels + ".tmp")
        os.replace(kernels + ".tmp", kernels)
    except Exception as exc:  # NOT_SUPPORTED where JIT is unavailable: nothing to keep
        logger.debug("cuTENSOR's kernel cache was not written: %s", exc)


def handle_for(device_id: int) -> int:
    """The cuTENSOR handle of the calling thread on ``device_id`` (created, with its caches read, on first use)."""
    key = (device_id, threading.get_ident())
    with _lock:
        h = _handles.get(key)
        if h is not None:
            return h
        set_device(device_id)
        h = ct.cutensorCreate()
        _handles[key] = h
    try:
        ct.cutensorHandleResizePlanCache(h, PLAN_CACHE_LINES)
        plans, kernels = _cache_files(device_id)
        if os.path.exists(plans):
            n = ct.cutensorHandleReadPlanCacheFromFile(h, plans)
            logger.info("cuTENSOR plan cache: %d line(s) read from %s", n, plans)
    except Exception as exc:  # another version, GPU or a damaged file: planning starts afresh
        _warn_once("plan cache file (read)", exc)
    try:
        if os.path.exists(kernels):
            ct.cutensorReadKernelCacheFromFile(h, kernels)
    except Exception as exc:
        _warn_once("kernel cache file (read)", exc)
    atexit.register(_save, h, device_id)
    return h


def _destroy(objects) -> None:
    for fn, value in reversed(objects):
        try:
            fn(value)
        except Exception:  # interpreter shutdown, context gone
            pass


class _Contract:
    """One cuTENSOR plan (binary or trinary): descriptors, plan, workspace size, scalar buffers."""

    def __init__(self, handle, descs, ops, compute, pref, limit, owned, log):
        self.handle = handle
        if len(descs) == 4:  # (desc, modes) of A, B, C, D
            (da, ma), (db, mb), (dc, mc), (dd, md) = descs
            self.desc = ct.cutensorCreateContraction(handle, da, ma, ops[0], db, mb, ops[1], dc, mc, 1, dd, md,
                                                     compute)
            self.trinary = False
        else:
            (da, ma), (db, mb), (dc, mc), (dd, md), (de, me) = descs
            self.desc = ct.cutensorCreateContractionTrinary(handle, da, ma, ops[0], db, mb, ops[1], dc, mc, ops[2],
                                                            dd, md, 1, de, me, compute)
            self.trinary = True
        owned.append((ct.cutensorDestroyOperationDescriptor, self.desc))
        scalar = ct.cutensorOperationDescriptorGetAttribute(handle, self.desc,
                                                            ct.OperationDescriptorAttribute.SCALAR_TYPE)
        ctype, cplx = _SCALAR.get(scalar, (ctypes.c_double, False))
        # alpha = 1, beta = 0 written now: the common call writes no scalar (set_scalars writes only a change)
        self.scalars = (ctype * 4)(1.0, 0.0, 0.0, 0.0) if cplx else (ctype * 2)(1.0, 0.0)
        self.last = (1.0, 0.0)
        self.cplx = cplx
        n = 2 if cplx else 1
        base = ctypes.addressof(self.scalars)
        self.alpha_ptr, self.beta_ptr = base, base + n * ctypes.sizeof(ctype)
        p = ct.cutensorCreatePlanPreference(handle, int(pref.algo), int(pref.jit))
        owned.append((ct.cutensorDestroyPlanPreference, p))
        A = ct.PlanPreferenceAttribute
        if pref.kernel_rank:
            ct.cutensorPlanPreferenceSetAttribute(handle, p, A.KERNEL_RANK, pref.kernel_rank)
        ct.cutensorPlanPreferenceSetAttribute(handle, p, A.CACHE_MODE, int(pref.cache_mode))
        if int(pref.autotune_mode):
            ct.cutensorPlanPreferenceSetAttribute(handle, p, A.AUTOTUNE_MODE, int(pref.autotune_mode))
            ct.cutensorPlanPreferenceSetAttribute(handle, p, A.INCREMENTAL_COUNT, pref.incremental_count)
        estimate = ct.cutensorEstimateWorkspaceSize(handle, self.desc, p, ct.WorksizePreference.WORKSPACE_DEFAULT)
        self.plan = ct.cutensorCreatePlan(handle, self.desc, p, min(estimate, limit))
        owned.append((ct.cutensorDestroyPlan, self.plan))
        self.workspace_size = ct.cutensorPlanGetAttribute(handle, self.plan, ct.PlanAttribute.REQUIRED_WORKSPACE)
        if log.isEnabledFor(logging.DEBUG):
            log.debug("cuTENSOR plan: scalar type %d, workspace %s (estimate %s)", scalar,
                      format_bytes(self.workspace_size), format_bytes(estimate))
        # the argument words of cutensorContract / cutensorContractTrinary, operands and stream filled per call
        if self.trinary:  # handle, plan, alpha, A, B, C, beta, D, E, workspace, size, stream
            self.args = [handle, self.plan, self.alpha_ptr, 0, 0, 0, self.beta_ptr, 0, 0, 0, 0, 0]
        else:  # handle, plan, alpha, A, B, beta, C, D, workspace, size, stream
            self.args = [handle, self.plan, self.alpha_ptr, 0, 0, self.beta_ptr, 0, 0, 0, 0, 0]

    def set_scalars(self, alpha, beta) -> None:
        """alpha and beta into the host buffer the call reads (nothing is written when they did not change)."""
        if (alpha, beta) == self.last:
            return
        s = self.scalars
        if self.cplx:
            a, b = complex(alpha), complex(beta)
            s[0], s[1], s[2], s[3] = a.real, a.imag, b.real, b.imag
        else:
            s[0], s[1] = float(alpha.real if isinstance(alpha, complex) else alpha), float(
                beta.real if isinstance(beta, complex) else beta)
        self.last = (alpha, beta)

    def set_workspace(self, ptr: int, size: int) -> None:
        args = self.args
        args[-3], args[-2] = ptr, size


class _Apply:
    """``B = op(A)`` for one operand: a cuTENSOR permutation from the operand's descriptor to a dense buffer's
    with the same modes (``alpha`` = 1 in the descriptor's scalar type)."""

    def __init__(self, handle, src, dst, op, compute, owned):
        (da, ma), (db, mb) = src, dst
        self.desc = ct.cutensorCreatePermutation(handle, da, ma, int(op), db, mb, compute)
        owned.append((ct.cutensorDestroyOperationDescriptor, self.desc))
        scalar = ct.cutensorOperationDescriptorGetAttribute(handle, self.desc,
                                                            ct.OperationDescriptorAttribute.SCALAR_TYPE)
        ctype, cplx = _SCALAR.get(scalar, (ctypes.c_float, False))
        self.alpha = (ctype * 2)(1.0, 0.0) if cplx else (ctype * 1)(1.0)
        self.alpha_ptr = ctypes.addressof(self.alpha)
        # the default preference (NULL); cutensorPermute takes no workspace, so the plan may use none
        self.plan = ct.cutensorCreatePlan(handle, self.desc, 0, 0)
        owned.append((ct.cutensorDestroyPlan, self.plan))
        self.buffer = None

    def run(self, handle, src_ptr: int, stream: int) -> int:
        dst = self.buffer.device_ptr
        ct.cutensorPermute(handle, self.plan, self.alpha_ptr, src_ptr, dst, stream)
        return dst


class ContractionCUTENSOR:
    """The compiled contraction on GPU ``device_id``: ``run(inputs, addend, out_ptr, result, alpha, beta,
    stream, release_workspace)`` with device addresses (``addend`` the Operand, or None)."""

    space = "cuda"
    simple = False  # (run_binary: the GPU engine's one-call path)

    def __init__(self, problem, steps, ops, dtype: str, out_strides, addend_strides, options, device_id: int,
                 stream: int, package: str, preference, pointers, log=logger):
        """``pointers``: the planned inputs' addresses and the result's (0 for a result cumath allocates)."""
        self.device_id, self.stream, self.package = device_id, stream, package
        self.log = log
        set_device(device_id)
        self.handle = options.handle or handle_for(device_id)
        self.allocator = options.allocator or default_allocator(package, device_id)
        self.dtype = dtype
        self.out_strides = tuple(out_strides)
        self.addend_strides = None if addend_strides is None else tuple(addend_strides)
        self._owned: list = []
        self._finalizer = weakref.finalize(self, _destroy, self._owned)
        self._buffers: list = []
        self.applied: list = []
        self.workspace = None
        self.nbytes = 0
        try:
            self._build(problem, steps, ops, dtype, options, device_id, stream, preference, pointers, log)
        except BaseException:  # what was made is released now, not whenever the half-built engine is collected
            self.free()
            raise

    def _build(self, problem, steps, ops, dtype, options, device_id, stream, preference, pointers, log):
        dt = int(DATA_TYPES[dtype])
        ct_name = options.compute_type.library_name if options.compute_type is not None else DEFAULT_COMPUTE[dtype]
        compute = ct.compute_descriptor(ct_name)
        from ..._bindings import cudart

        try:
            total = cudart.cudaMemGetInfo()[1]
        except Exception:  # an older binding: no limit beyond the estimate
            total = 1 << 40
        limit = memory_limit_bytes(options.memory_limit, total)
        ext = problem.extents
        itemsize = _ITEMSIZE[dtype]

        def desc(modes, strides, align=256):
            d = ct.cutensorCreateTensorDescriptor(self.handle, [ext[m] for m in modes], strides, dt, align)
            self._owned.append((ct.cutensorDestroyTensorDescriptor, d))
            return d, [mode_code(m) for m in modes]

        # alignments the plan assumes (from the planned pointers; the stateless cache key carries them)
        al = [alignment(p) for p in pointers]
        self.alignments = tuple(al[:-1])
        self.out_align = al[-1]
        out_modes = problem.output
        d_out = desc(out_modes, self.out_strides, al[-1])
        n_in = len(problem.inputs)
        ins = [desc(problem.inputs[i], problem.strides[i], al[i]) for i in range(n_in)]
        ops = self._apply_operators(ins, list(ops), dtype, problem, desc, stream, log)
        self.contracts = []
        self.t_buffer = None
        if len(steps) == 1:
            descs = (ins[0], ins[1], d_out, d_out)
            self.contracts.append(_Contract(self.handle, descs, ops, compute, preference, limit, self._owned, log))
            self.mode = "binary"
        else:
            s1, s2 = steps
            t_modes = s1.z_modes
            t_bytes = math.prod(ext[m] for m in t_modes) * itemsize
            if t_bytes > limit:  # the intermediate does not fit: cuTENSOR's fused trinary contraction
                descs = tuple(ins) + (d_out, d_out)
                self.contracts.append(_Contract(self.handle, descs, ops, compute, preference, limit, self._owned,
                                                log))
                self.mode = "fused"
            else:
                t_strides = dense_strides(tuple(ext[m] for m in t_modes), range(len(t_modes)))
                d_t = desc(t_modes, t_strides)
                first = (ins[s1.x], ins[s1.y], d_t, d_t)
                self.contracts.append(_Contract(self.handle, first, (ops[s1.x], ops[s1.y]), compute, preference,
                                                limit, self._owned, log))
                second = (d_t, ins[s2.y], d_out, d_out)
                self.contracts.append(_Contract(self.handle, second, (1, ops[s2.y]), compute, preference, limit,
                                                self._owned, log))
                self.t_buffer = allocate(self.allocator, max(1, t_bytes), stream)
                self._buffers.append(self.t_buffer)
                self.nbytes += t_bytes
                self.mode = "pairwise"
                self.pair = (s1.x, s1.y, s2.y)
        self.workspace_size = max(c.workspace_size for c in self.contracts)
        self._ensure_workspace(stream)
        self._contract = call_words(ct.raw_function("cutensorContract"))
        self._trinary = call_words(ct.raw_function("cutensorContractTrinary")) if self.mode == "fused" else None
        masks = [a - 1 for a in self.alignments]
        self._masks, self._out_mask = tuple(masks), self.out_align - 1
        # one contraction on the operands themselves: run_binary() is the whole call
        self.simple = self.mode == "binary" and not self.applied
        if self.simple:
            self._a_mask, self._b_mask = masks
        if log.isEnabledFor(logging.INFO):
            log.info("cuTENSOR %s contraction on GPU %d: compute %s, workspace %s%s", self.mode, device_id, ct_name,
                     format_bytes(self.workspace_size),
                     f", intermediate {format_bytes(self.nbytes)}" if self.t_buffer is not None else "")

    def _apply_operators(self, ins, ops, dtype, problem, desc, stream, log) -> list:
        """Operators the contraction cannot apply become permutations into plan-owned buffers: ``ins[i]`` is then
        the buffer's descriptor and ``ops[i]`` OP_IDENTITY. Returns the contraction's operators."""
        self.applied = []  # (input index, _Apply)
        complex_ = dtype.startswith("complex")
        compute = None
        for i, op in enumerate(ops):
            op = int(op)
            if op == ct.Operator.OP_CONJ and not complex_:
                op = int(ct.Operator.OP_IDENTITY)  # the conjugate of a real operand is itself
            if op in CONTRACTION_OPERATORS:
                ops[i] = op
                continue
            modes, strides = problem.inputs[i], problem.strides[i]
            shape = [problem.extents[m] for m in modes]
            dst = desc(modes, dense_strides(shape, natural_perm(strides)))
            if compute is None:  # the permutation computes in the operands' own precision (float32 for halves)
                compute = ct.compute_descriptor(DEFAULT_COMPUTE[dtype])
            a = _Apply(self.handle, ins[i], dst, op, compute, self._owned)
            nbytes = max(1, math.prod(shape)) * _ITEMSIZE[dtype]
            a.buffer = allocate(self.allocator, nbytes, stream)
            self._buffers.append(a.buffer)
            self.nbytes += nbytes
            self.applied.append((i, a))
            ins[i] = dst
            ops[i] = int(ct.Operator.OP_IDENTITY)
            if log.isEnabledFor(logging.INFO):
                log.info("cuTENSOR contracts operands only with OP_IDENTITY or OP_CONJ: %s of operand %s is "
                         "applied first by a cuTENSOR permutation into a %s buffer the plan keeps",
                         ct.Operator(op).name, "abc"[i] if i < 3 else i, format_bytes(nbytes))
        return ops

    def _ensure_workspace(self, stream) -> None:
        if self.workspace is None and self.workspace_size:
            self.workspace = allocate(self.allocator, self.workspace_size, stream)
            for c in self.contracts:
                c.set_workspace(self.workspace.device_ptr, self.workspace_size)

    def release_workspace(self) -> None:
        ws, self.workspace = self.workspace, None
        if ws is not None:
            for c in self.contracts:
                c.set_workspace(0, 0)
            ws.free()

    def _misaligned(self, inputs, out_ptr: int):
        for p, a in zip(inputs, self.alignments):
            if p % a:
                return ValueError(f"an operand at address {p:#x} is less aligned than the planned one ({a} bytes); "
                                  f"create a new contraction for it (stateless calls do so by themselves)")
        return ValueError(f"out at address {out_ptr:#x} is less aligned than the planned one ({self.out_align} "
                          f"bytes); create a new contraction for it")

    def run_binary(self, a: int, b: int, out_ptr: int, alpha, stream: int) -> None:
        """The hot path of a plan with ``simple`` set: ``out = alpha * A.B`` (no addend), one native call."""
        if (a & self._a_mask) | (b & self._b_mask) | (out_ptr & self._out_mask):
            raise self._misaligned((a, b), out_ptr)
        c = self.contracts[0]
        if alpha != c.last[0] or c.last[1] != 0.0:
            c.set_scalars(alpha, 0.0)
        if self.workspace is None and self.workspace_size:
            self._ensure_workspace(stream)
        args = c.args
        args[3], args[4], args[6], args[7], args[10] = a, b, out_ptr, out_ptr, stream
        status = self._contract(*args)
        if status:
            ct.check(status)

    def _call(self, c, stream, *pointers) -> None:
        args = c.args
        args[3:3 + len(pointers)] = pointers
        args[-1] = stream
        status = (self._trinary if c.trinary else self._contract)(*args)
        if status:
            ct.check(status)

    def run(self, inputs, addend, out_ptr: int, result, alpha, beta, stream: int, release_workspace: bool) -> None:
        bad = out_ptr & self._out_mask
        for p, m in zip(inputs, self._masks):
            bad |= p & m
        if bad:
            raise self._misaligned(inputs, out_ptr)
        if addend is not None and beta and (addend.ptr != out_ptr or addend.strides != self.out_strides):
            adapter(self.package).copy_into(result, addend.obj)  # cuTENSOR reads C with D's strides
        if addend is None:
            beta = 0.0
        h = self.handle
        if self.applied:  # op(A) into the plan's buffers, on the same stream as the contraction that reads them
            inputs = list(inputs)
            for i, a in self.applied:
                inputs[i] = a.run(h, inputs[i], stream)
        self._ensure_workspace(stream)
        if self.mode == "binary":
            c = self.contracts[0]
            c.set_scalars(alpha, beta)
            self._call(c, stream, inputs[0], inputs[1], c.beta_ptr, out_ptr, out_ptr)
        elif self.mode == "fused":
            c = self.contracts[0]
            c.set_scalars(alpha, beta)
            self._call(c, stream, inputs[0], inputs[1], inputs[2], c.beta_ptr, out_ptr, out_ptr)
        else:
            c1, c2 = self.contracts
            i, j, k = self.pair
            t = self.t_buffer.device_ptr
            c1.set_scalars(1.0, 0.0)
            self._call(c1, stream, inputs[i], inputs[j], c1.beta_ptr, t, t)
            c2.set_scalars(alpha, beta)
            self._call(c2, stream, t, inputs[k], c2.beta_ptr, out_ptr, out_ptr)
        if release_workspace:
            self.release_workspace()

    def free(self) -> None:
        self.release_workspace()
        for b in self._buffers:
            b.free()
        self._buffers = []
        self._finalizer()

