"""GPU engine of the distributed matmul: cuBLASMp's ``cublasMpMatmul`` over the context's NCCL communicator.

``D = epilog(alpha op(A) op(B) + beta C)`` with A, B, C, D 2-D block-cyclic on one grid. The cuBLASMp handle
and grid are context resources; the matrix and matmul descriptors belong to the plan and are destroyed by
``free()`` (or at ``finalize()``). C is read, never written: D is a new piece distributed as C (dC). A
product without an epilog that ``cublasMpMatmul`` does not take (its status NOT_SUPPORTED) runs on
``cublasMpGemm`` instead, on a copy of C.
Epilogs: cuBLASMp's DEFAULT, ALLREDUCE, RELU, GELU, BIAS, RELU_BIAS and GELU_BIAS (the bias is this rank's
rows of the bias vector, as D's rows are distributed, in the result's dtype).

ALLREDUCE is cuBLASMp's GEMM+AllReduce, which its documentation (tensor parallelism) gives in the TN form only
(added in 0.4.0; AllGather+GEMM and GEMM+ReduceScatter took NN, NT and TT later, GEMM+AllReduce did not): op(A)
= A^T, op(B) = B, A stored k x m and B k x n, each rank holding a slice of the k axis, D the sum of the ranks'
products. Any other form is refused with a ValueError before the library is called (cuBLASMp 0.10 answers
NOT_SUPPORTED at the workspace query, seen for an NN 10x9x7 product on one rank), and a NOT_SUPPORTED that still
comes back for a TN product is turned into a ValueError that says what the library takes.
"""

from __future__ import annotations

import logging

import numpy as np

from ...._core.operand import adapter, wrap_operand
from ....errors import CUBLASMpError
from .._device import (CUDA_TYPE, Descriptors, Result, Workspace, block_sizes, device_buffer,
                       grid_shape_order, operation_allocator, require_live, resolve_stream)

__all__ = ["CuBLASMpMatmul", "RegisteredWorkspace", "GPU_EPILOGS", "cublasmp_handle", "cublasmp_grid"]

logger = logging.getLogger(__name__)

#: the epilogs of cublasMpMatmulEpilogue_t the engine runs (the AUX and gradient ones need buffers it does not
#: manage); by name
GPU_EPILOGS = ("DEFAULT", "ALLREDUCE", "RELU", "GELU", "BIAS", "RELU_BIAS", "GELU_BIAS")

# cublasComputeType_t for each result dtype (cuBLASMp's scale type follows: float, double, cuComplex, ...)
_COMPUTE = {"float32": 68, "float64": 70, "complex64": 68, "complex128": 70}


def cublasmp_handle(ctx) -> int:
    from ...._bindings import cublasmp

    def make():
        h = cublasmp.cublasMpCreate(0)
        logger.info("cuBLASMp %d handle made on device %d", cublasmp.cublasMpGetVersion(), ctx.device_id)
        return h

    return ctx.resource(("cublasmp-handle", ctx.device_id), make, cublasmp.cublasMpDestroy)


def cublasmp_grid(ctx, dist) -> tuple[int, Descriptors]:
    """The cuBLASMp grid of ``dist``'s ProcessGrid and the registry of descriptors made on it."""
    from ...._bindings import cublasmp
    from ..._gpu import nccl_comm

    nprow, npcol, order = grid_shape_order(dist)
    nprocs = ctx.process_group.nranks
    if nprow * npcol != nprocs:
        raise ValueError(f"the ProcessGrid {nprow}x{npcol} does not hold the {nprocs} ranks of the run")
    comm = nccl_comm(ctx)
    cublasmp_handle(ctx)
    layout = cublasmp.GridLayout.ROW_MAJOR if order == "R" else cublasmp.GridLayout.COL_MAJOR
    key = ("cublasmp-grid", nprow, npcol, order)
    grid = ctx.resource(key, lambda: cublasmp.cublasMpGridCreate(nprow, npcol, layout, comm),
                        cublasmp.cublasMpGridDestroy)
    descs = ctx.resource(key + ("descriptors",), lambda: Descriptors(cublasmp.cublasMpMatrixDescriptorDestroy),
                         Descriptors.release)
    return grid, descs


class RegisteredWorkspace:
    """A device workspace from ``ncclMemAlloc`` registered with the cuBLASMp grid (``cublasMpBufferRegister``),
    which cuBLASMp's communication-overlapping algorithms need. Registering is collective: the ranks agree on
    the largest size asked for (one all-gather per call) and grow together. Released by ``free()``, or at
    ``finalize()`` before the grid (it sits in the grid's descriptor registry)."""

    def __init__(self, ctx, grid: int, descs: Descriptors):
        self.ctx, self.grid, self.descs = ctx, grid, descs
        self.ptr, self.size = 0, 0
        self.host = np.empty(0, dtype=np.uint8)

    def _release(self, ptr: int) -> None:
        from ...._bindings import cublasmp, nccl

        cublasmp.cublasMpBufferDeregister(self.grid, ptr)
        nccl.ncclMemFree(ptr)

    def get(self, device_bytes: int, host_bytes: int, stream: int) -> tuple[int, int]:
        from ...._bindings import cublasmp, nccl
        from ...._core import cuda

        need = max(self.ctx.process_group.allgather(int(device_bytes)))
        if need > self.size:
            cuda.synchronize(stream)  # the old workspace may still be in use by queued work
            self.free()
            size = max(need, 1 << 20)
            ptr = nccl.ncclMemAlloc(size)
            try:
                cublasmp.cublasMpBufferRegister(self.grid, ptr, size)
            except BaseException:
                nccl.ncclMemFree(ptr)
                raise
            self.ptr, self.size = self.descs.add(ptr, self._release), size
            logger.info("cuBLASMp workspace: %d bytes from ncclMemAlloc, registered with the grid", size)
        if self.host.nbytes < host_bytes:
            self.host = np.empty(host_bytes, dtype=np.uint8)
        return self.ptr, (self.host.ctypes.data if host_bytes else 0)

    def free(self) -> None:
        if self.ptr:
            self.descs.drop(self.ptr)
            self.ptr, self.size = 0, 0


def _check_blocks(flags, blocks_a, blocks_b, blocks_d) -> None:
    """cublasMpMatmul's block-size rules: op(A)'s column blocks are op(B)'s row blocks, op(A)'s row blocks
    are D's, op(B)'s column blocks are D's."""
    (ta, _), (tb, _) = flags[:2]
    oa = blocks_a[::-1] if ta else blocks_a
    ob = blocks_b[::-1] if tb else blocks_b
    if oa[1] != ob[0] or oa[0] != blocks_d[0] or ob[1] != blocks_d[1]:
        raise ValueError(f"cuBLASMp needs matching block sizes: op(a) blocks {tuple(oa)}, op(b) blocks "
                         f"{tuple(ob)} and the result's {tuple(blocks_d)} must satisfy op(a) columns == op(b) rows, "
                         "op(a) rows == result rows, op(b) columns == result columns; choose the BlockCyclic "
                         "block_sizes accordingly")


_ALLREDUCE_FORM = ("cuBLASMp runs epilog ALLREDUCE (GEMM+AllReduce) in the TN form only: a stored as its "
                   "transpose (shape (k, m), qualifiers[0]['is_transpose'] = True, not conjugated) and b as is "
                   "(shape (k, n), not transposed), each rank holding its slice of the k axis")


def _check_allreduce(flags, complex_dtype: bool) -> None:
    """Refuse an ALLREDUCE product that is not TN (op(A) = A^T without conjugation, op(B) = B)."""
    (ta, ca), (tb, cb) = flags[:2]
    if not ta or tb or (complex_dtype and (ca or cb)):
        form = "".join(("C" if c and complex_dtype else "T") if t else ("N*" if c and complex_dtype else "N")
                       for t, c in ((ta, ca), (tb, cb)))
        raise ValueError(f"{_ALLREDUCE_FORM}; this product is {form}. Store a transposed with that qualifier, or "
                         "use epilog DEFAULT (the same product, without the fused all-reduce)")


class CuBLASMpMatmul:
    """The plan of one distributed product on cuBLASMp (made by ``Matmul.plan`` on GPU runs)."""

    def __init__(self, mm, epilog, bias):
        ctx = self.ctx = mm._ctx
        self.mm = mm
        self.dtype = mm.dtype.name
        m, n, _ = mm.mnk
        if epilog.name not in GPU_EPILOGS:
            raise NotImplementedError(f"epilog {epilog.name} is not supported by the GPU engine (cuBLASMp); the "
                                      f"supported epilogs are {list(GPU_EPILOGS)}")
        group = ctx.process_group
        if epilog.name == "ALLREDUCE":
            _check_allreduce(mm._flags, mm.dtype.kind == "c")  # on every grid, so code that runs on one runs on all
            if group.nranks == 1:
                # an all-reduce over one process is the identity: the product is DEFAULT's (cuBLASMp 0.10 refuses
                # GEMM+AllReduce on a 1 x 1 grid with NOT_SUPPORTED)
                logger.info("epilog ALLREDUCE on one rank: the product runs as epilog DEFAULT (nothing to reduce)")
                epilog = type(epilog)["DEFAULT"]
        dist_d = mm._dist_c
        blocks_d = block_sizes(dist_d, (m, n))
        _check_blocks(mm._flags, mm._a.blocks, mm._b.blocks, blocks_d)
        self.d_shape = tuple(dist_d.local_shape((m, n), group.rank, group.nranks))
        self.bias = None if bias is None else self._bias(bias, self.d_shape[0])  # checked before anything is made
        self.handle = cublasmp_handle(ctx)
        self.grid, self.descs = cublasmp_grid(ctx, mm._a.dist)
        self._made = []
        self.workspace = None
        try:
            self._describe(mm, epilog, blocks_d, dist_d)
        except BaseException:  # a failed plan leaves nothing behind
            self.free()
            raise

    def _describe(self, mm, epilog, blocks_d, dist_d) -> None:
        """The matrix and matmul descriptors, the scalars and the workspace of the plan."""
        from ...._bindings import cublasmp

        ctx, dtype, group = self.ctx, self.dtype, self.ctx.process_group
        m, n, k = mm.mnk
        ctype = CUDA_TYPE[dtype]

        def desc(gm, gn, blocks, first, lld):
            return self.descs.add(cublasmp.cublasMpMatrixDescriptorCreate(
                gm, gn, blocks[0], blocks[1], first[0], first[1], lld, ctype, self.grid))

        self.desc_a = desc(*mm._a.global_shape, mm._a.blocks, mm._a.dist.first_process, mm._a.lld)
        self.desc_b = desc(*mm._b.global_shape, mm._b.blocks, mm._b.dist.first_process, mm._b.lld)
        self.desc_d = desc(m, n, blocks_d, dist_d.first_process, max(1, self.d_shape[0]))
        self._made += [self.desc_a, self.desc_b, self.desc_d]
        compute = mm.options.compute_type if mm.options.compute_type is not None else _COMPUTE[dtype]
        self.matmul_desc = self.descs.add(cublasmp.cublasMpMatmulDescriptorCreate(int(compute)),
                                          cublasmp.cublasMpMatmulDescriptorDestroy)
        self._made.append(self.matmul_desc)
        attr = cublasmp.MatmulDescriptorAttribute
        ops = self.ops = [(2 if cj and dtype.startswith("complex") else 1) if t else 0 for t, cj in mm._flags[:2]]
        self.compute, self.epilog, self.gemm = int(compute), epilog.name, False
        self.conjugate = [cj and not t and dtype.startswith("complex") for t, cj in mm._flags[:2]]
        set_attr = cublasmp.cublasMpMatmulDescriptorSetAttribute
        set_attr(self.matmul_desc, attr.TRANSA, ops[0])
        set_attr(self.matmul_desc, attr.TRANSB, ops[1])
        set_attr(self.matmul_desc, attr.ALGO_TYPE, int(mm.options.algo_type))
        set_attr(self.matmul_desc, attr.EPILOGUE, int(cublasmp.MatmulEpilogue[epilog.name]))
        if self.bias is not None:
            set_attr(self.matmul_desc, attr.BIAS_DATA_TYPE, ctype)
        scale = np.dtype(dtype)
        self.alpha = np.zeros(1, dtype=scale)
        self.beta = np.zeros(1, dtype=scale)
        # several ranks, or an overlapping algorithm asked for: a registered workspace (else cuBLASMp runs
        # no-overlap for DEFAULT and refuses the pipelined algorithms); one rank: the operation's allocator
        if group.nranks > 1 or mm.options.algo_type != 0:
            self.workspace = RegisteredWorkspace(ctx, self.grid, self.descs)
        else:
            self.workspace = Workspace(ctx, operation_allocator(ctx, mm._a))
        logger.info("distributed matmul %dx%dx%d (%s) planned on cuBLASMp, grid %s, ops %s, epilog %s, algo %s",
                    m, n, k, dtype, mm._a.dist.process_grid.shape, ops, epilog.name, mm.options.algo_type.name)

    def _bias(self, bias, rows: int):
        op = wrap_operand(bias, "bias")
        if op.size != rows:
            raise ValueError(f"the bias holds {op.size} rows on this rank; its block of the result has {rows}")
        if op.device_id is None:
            host = np.ascontiguousarray(np.asarray(op.obj if op.package == "numpy" else op.obj.numpy()).reshape(-1),
                                        dtype=self.dtype)
            return host  # staged at execute, on the execution stream
        ad = adapter(op.package)
        dst = ad.empty((rows,), self.dtype, op.device_id)
        ad.copy_into(dst, op.obj.reshape(-1))
        return dst, ad.pointer(dst)

    def _scalars(self, alpha, beta) -> None:
        for name, value, out in (("alpha", alpha, self.alpha), ("beta", beta, self.beta)):
            if self.alpha.dtype.kind != "c" and np.iscomplexobj(value) and np.imag(value) != 0:
                raise TypeError(f"{name}={value!r} is complex but the product is {self.dtype}; pass a real {name}"
                                " or complex operands")
            out[0] = np.real(value) if self.alpha.dtype.kind != "c" else value

    def execute(self, stream=None, blocking=True):
        from ...._bindings import cublasmp
        from ...._core import cuda

        require_live(self.ctx)
        mm = self.mm
        a, b, c = mm._a, mm._b, mm._c
        package = a.package
        s = resolve_stream(stream, package if not a.staged else "numpy", self.ctx.device_id)
        cublasmp.cublasMpSetStream(self.handle, s)
        self._scalars(mm.alpha, mm.beta)
        m, n, k = mm.mnk
        pa = a.device_pointer(self.dtype, s, copy=False, conjugate=self.conjugate[0])
        pb = b.device_pointer(self.dtype, s, copy=False, conjugate=self.conjugate[1])
        if c is not None:
            mat_c = (c.device_pointer(self.dtype, s, copy=False), 1, 1, self._desc_c())
        else:
            mat_c = (0, 1, 1, 0)
        if self.bias is not None:
            if isinstance(self.bias, np.ndarray):
                buf = device_buffer(self.ctx, self.bias.nbytes, s)
                cuda.copy(buf.device_ptr, self.bias.ctypes.data, self.bias.nbytes, cuda.H2D, s, "bias")
                self._bias_buffer, bias_ptr = buf, buf.device_ptr
            else:
                bias_ptr = self.bias[1]
            cublasmp.cublasMpMatmulDescriptorSetAttribute(self.matmul_desc,
                                                          cublasmp.MatmulDescriptorAttribute.BIAS_POINTER, bias_ptr)
        out = Result(self.ctx, package, a.staged, self.d_shape, self.dtype, s)
        mats = ((pa, 1, 1, self.desc_a), (pb, 1, 1, self.desc_b), mat_c, (out.ptr, 1, 1, self.desc_d))
        alpha, beta = self.alpha.ctypes.data, self.beta.ctypes.data
        if not self.gemm:
            try:
                dsize, hsize = cublasmp.cublasMpMatmul_bufferSize(self.handle, self.matmul_desc, m, n, k, alpha,
                                                                  mats[0], mats[1], beta, mats[2], mats[3])
            except CUBLASMpError as exc:
                if exc.status == cublasmp.Status.CUBLASMP_STATUS_NOT_SUPPORTED and self.epilog == "ALLREDUCE":
                    raise ValueError(f"{_ALLREDUCE_FORM}; cuBLASMp refused this TN {m}x{n}x{k} {self.dtype} product "
                                     f"on a {'x'.join(map(str, mm._a.dist.process_grid.shape))} grid ({exc}); use "
                                     "epilog DEFAULT (the same product, without the fused all-reduce)") from exc
                if exc.status != cublasmp.Status.CUBLASMP_STATUS_NOT_SUPPORTED or self.epilog != "DEFAULT":
                    raise
                self.gemm = True  # the product without an epilog is cublasMpGemm's too
                logger.info("cublasMpMatmul does not take this %s product (%s): cublasMpGemm runs it", self.dtype,
                            exc)
        if self.gemm:
            if c is not None:  # GEMM writes C in place: D starts as this rank's piece of C
                cuda.copy(out.ptr, mat_c[0], int(np.prod(self.d_shape)) * np.dtype(self.dtype).itemsize, cuda.D2D,
                          s)
            d = mats[3]
            dsize, hsize = cublasmp.cublasMpGemm_bufferSize(self.handle, self.ops[0], self.ops[1], m, n, k, alpha,
                                                            mats[0], mats[1], beta, d, self.compute)
            dwork, hwork = self.workspace.get(dsize, hsize, s)
            cublasmp.cublasMpGemm(self.handle, self.ops[0], self.ops[1], m, n, k, alpha, mats[0], mats[1], beta, d,
                                  self.compute, dwork, dsize, hwork, hsize)
        else:
            dwork, hwork = self.workspace.get(dsize, hsize, s)
            cublasmp.cublasMpMatmul(self.handle, self.matmul_desc, m, n, k, alpha, mats[0], mats[1], beta, mats[2],
                                    mats[3], dwork, dsize, hwork, hsize)
        result = out.finish()
        if hsize or (blocking is True and not a.staged):
            cuda.synchronize(s)  # the host workspace is read by the library until the stream gets there
        return result

    def _desc_c(self) -> int:
        """C is distributed as D (dC): D's descriptor describes it too, unless its local shape differs."""
        c = self.mm._c
        if tuple(c.local_shape) != self.d_shape:
            raise ValueError(f"c has local shape {c.local_shape} on this rank; dC gives the result {self.d_shape}")
        return self.desc_d

    def free(self) -> None:
        for d in self._made:
            self.descs.drop(d)
        self._made = []
        if self.workspace is not None:
            self.workspace.free()
