"""A NumPy emulation of the CUDA runtime, NCCL, cuBLASMp and cuSOLVERMp for one rank, at the level of their C
calls: "device" memory is host memory, copies are memmoves, and the library calls compute with NumPy/SciPy
from the pointers and descriptors they are given. The GPU engines run on it unchanged (their staging, argument
order, descriptors, workspaces and lifetimes), so a CPU machine checks what the GPU machine runs.

``emulate(monkeypatch)`` installs it and returns the call log (name, args) and the live-object registry.
"""

import ctypes
import warnings

import numpy as np

_TYPES = {0: np.float32, 1: np.float64, 4: np.complex64, 5: np.complex128}


class Emulation:
    def __init__(self):
        self.memory = {}  # address -> ctypes buffer
        self.calls = []
        self.objects = {}  # handle -> (kind, data)
        self.next_id = 0x1000
        self.attributes = {}
        self.getrf_reports_singular = True  # False: info stays 0 for a singular matrix, as cuSOLVERMp 0.9 does

    def new(self, kind, data=None):
        self.next_id += 16
        self.objects[self.next_id] = (kind, data)
        return self.next_id

    def live(self, kind):
        return [h for h, (k, _) in self.objects.items() if k == kind]

    # ---------------------------------------------------------------- CUDA runtime
    def malloc(self, size, stream=0):
        buf = ctypes.create_string_buffer(max(int(size), 1))
        addr = ctypes.addressof(buf)
        self.memory[addr] = buf
        return addr

    def free(self, ptr, stream=0):
        assert ptr in self.memory, "free of memory that was not allocated (or freed twice)"
        del self.memory[ptr]

    def memcpy(self, dst, src, n, kind, stream):
        ctypes.memmove(dst, src, n)

    def memcpy2d(self, dst, dpitch, src, spitch, width, height, kind, stream):
        assert width <= dpitch and width <= spitch
        for row in range(height):
            ctypes.memmove(dst + row * dpitch, src + row * spitch, width)
        self.calls.append(("cudaMemcpy2DAsync", (dpitch, spitch, width, height)))

    # ---------------------------------------------------------------- reading operands
    @staticmethod
    def array(ptr, desc, ncols):
        m, n, lld, dtype = desc
        dt = np.dtype(_TYPES[dtype])
        raw = (ctypes.c_char * (lld * ncols * dt.itemsize)).from_address(ptr)
        return np.frombuffer(raw, dtype=dt).reshape((ncols, lld)).T[:m]


def _set(out, value):
    out._obj.value = value


class _CublasMp:
    def __init__(self, emu):
        self.e = emu

    def __getattr__(self, name):
        raise AttributeError(name)

    def cublasMpCreate(self, out, stream):
        _set(out, self.e.new("cublasmp-handle"))
        return 0

    def cublasMpDestroy(self, h):
        self.e.objects.pop(h)
        return 0

    def cublasMpSetStream(self, h, s):
        return 0

    def cublasMpGetVersion(self, out):
        out._obj.value = 1000
        return 0

    def cublasMpGetStatusString(self, status):
        return b"emulated status"

    def cublasMpGridCreate(self, nprow, npcol, layout, comm, out):
        assert (nprow, npcol) == (1, 1) and comm in self.e.live("nccl-comm")
        _set(out, self.e.new("cublasmp-grid", layout))
        return 0

    def cublasMpGridDestroy(self, g):
        assert not self.e.live("cublasmp-desc"), "grid destroyed before its descriptors"
        self.e.objects.pop(g)
        return 0

    def cublasMpBufferRegister(self, grid, ptr, size):
        assert ptr in self.e.memory and grid in self.e.live("cublasmp-grid")
        self.e.objects[ptr] = ("cublasmp-registered", size)
        return 0

    def cublasMpBufferDeregister(self, grid, ptr):
        assert grid in self.e.live("cublasmp-grid"), "deregistered after the grid was destroyed"
        self.e.objects.pop(ptr)
        return 0

    def cublasMpMatrixDescriptorCreate(self, m, n, mb, nb, rsrc, csrc, lld, dtype, grid, out):
        assert grid in self.e.live("cublasmp-grid") and lld >= max(1, m)
        _set(out, self.e.new("cublasmp-desc", (m, n, lld, dtype)))
        return 0

    def cublasMpMatrixDescriptorDestroy(self, d):
        self.e.objects.pop(d)
        return 0

    def cublasMpMatmulDescriptorCreate(self, out, compute):
        _set(out, self.e.new("cublasmp-matmul", {"compute": compute}))
        return 0

    def cublasMpMatmulDescriptorDestroy(self, d):
        self.e.objects.pop(d)
        return 0

    def cublasMpMatmulDescriptorSetAttribute(self, d, attr, value, size):
        self.e.objects[d][1][attr] = value._obj.value
        return 0

    refuse_matmul = ()  # dtypes (cudaDataType) whose cublasMpMatmul says NOT_SUPPORTED, as a library may

    def cublasMpMatmul_bufferSize(self, h, d, m, n, k, alpha, *rest):
        if self.e.objects[rest[3]][1][3] in self.refuse_matmul:
            return 7
        attrs = self.e.objects[d][1]
        if attrs.get(5, 0) == 1 and (attrs.get(0, 0), attrs.get(1, 0)) != (1, 0):
            return 7  # GEMM+AllReduce: TN only, as cuBLASMp's documentation says (NOT_SUPPORTED otherwise)
        ds, hs = rest[-2:]
        ds._obj.value, hs._obj.value = 4096, 64
        return 0

    def cublasMpMatmul(self, h, d, m, n, k, alpha, pa, ia, ja, da, pb, ib, jb, db, beta, pc, ic, jc, dc, pd, id_,
                       jd, dd, dwork, dsize, hwork, hsize):
        e = self.e
        assert dwork in e.memory and hsize == 64 and hwork
        registered = e.objects.get(dwork, ("", 0))
        assert dsize == 4096 and (registered[0] != "cublasmp-registered" or registered[1] >= dsize)
        attrs = e.objects[d][1]
        if attrs.get(3, 0):  # an overlapping algorithm: the workspace must be registered, as cuBLASMp requires
            assert registered[0] == "cublasmp-registered", "pipelined algorithm without a registered workspace"
        descs = {x: e.objects[x][1] for x in (da, db, dd)}
        ta, tb = attrs.get(0, 0), attrs.get(1, 0)
        A = e.array(pa, descs[da], descs[da][1])
        B = e.array(pb, descs[db], descs[db][1])
        dt = A.dtype
        al = np.frombuffer((ctypes.c_char * dt.itemsize).from_address(alpha), dtype=dt)[0]
        be = np.frombuffer((ctypes.c_char * dt.itemsize).from_address(beta), dtype=dt)[0]
        opa = {0: A, 1: A.T, 2: A.conj().T}[ta]
        opb = {0: B, 1: B.T, 2: B.conj().T}[tb]
        assert opa.shape == (m, k) and opb.shape == (k, n)
        out = al * (opa @ opb)
        if pc:
            out = out + be * e.array(pc, e.objects[dc][1], n)
        else:
            assert be == 0
        epi = attrs.get(5, 0)
        if epi & 4:
            bias = np.frombuffer((ctypes.c_char * (m * dt.itemsize)).from_address(attrs[6]), dtype=dt)
            out = out + bias[:, None]
        if epi & 2:
            out = np.maximum(out, 0)
        if epi & 32:
            out = 0.5 * out * (1 + np.tanh(np.sqrt(2 / np.pi) * (out + 0.044715 * out ** 3)))
        D = e.array(pd, descs[dd], n)
        D.flags.writeable = True
        D[...] = out
        e.calls.append(("cublasMpMatmul", (m, n, k, ta, tb, epi)))
        return 0


    def cublasMpGemm_bufferSize(self, h, ta, tb, m, n, k, alpha, *rest):
        rest[-2]._obj.value, rest[-1]._obj.value = 4096, 64
        return 0

    def cublasMpGemm(self, h, ta, tb, m, n, k, alpha, pa, ia, ja, da, pb, ib, jb, db, beta, pc, ic, jc, dc, compute,
                     dwork, dsize, hwork, hsize):
        """C = alpha op(A) op(B) + beta C in place (through the Matmul emulation with D = C)."""
        d = self.e.new("cublasmp-matmul", {0: ta, 1: tb, "compute": compute})
        self.e.objects[d + 1] = ("cublasmp-desc", self.e.objects[dc][1])  # C read before D is written
        C = self.e.array(pc, self.e.objects[dc][1], n).copy(order="F")
        status = self.cublasMpMatmul(h, d, m, n, k, alpha, pa, ia, ja, da, pb, ib, jb, db, beta, C.ctypes.data, 1, 1,
                                     d + 1, pc, ic, jc, dc, dwork, dsize, hwork, hsize)
        self.e.objects.pop(d)
        self.e.objects.pop(d + 1)
        self.e.calls[-1] = ("cublasMpGemm", self.e.calls[-1][1])
        return status


class _CusolverMp:
    def __init__(self, emu):
        self.e = emu
        self.piv = {}

    def __getattr__(self, name):
        raise AttributeError(name)

    def cusolverMpCreate(self, out, device, stream):
        _set(out, self.e.new("cusolvermp-handle"))
        return 0

    def cusolverMpDestroy(self, h):
        assert not self.e.live("cusolvermp-grid"), "handle destroyed before its grid"
        self.e.objects.pop(h)
        return 0

    def cusolverMpSetStream(self, h, s):
        return 0

    def cusolverMpCreateDeviceGrid(self, h, out, comm, nprow, npcol, mapping):
        assert comm in self.e.live("nccl-comm")
        _set(out, self.e.new("cusolvermp-grid"))
        return 0

    def cusolverMpDestroyGrid(self, g):
        assert not self.e.live("cusolvermp-desc"), "grid destroyed before its descriptors"
        self.e.objects.pop(g)
        return 0

    def cusolverMpCreateMatrixDesc(self, out, grid, dtype, m, n, mb, nb, rs, cs, lld):
        _set(out, self.e.new("cusolvermp-desc", (m, n, lld, dtype)))
        return 0

    def cusolverMpDestroyMatrixDesc(self, d):
        self.e.objects.pop(d)
        return 0

    def cusolverMpGetrf_bufferSize(self, h, m, n, a, ia, ja, desc, ipiv, ctype, ds, hs):
        ds._obj.value, hs._obj.value = 512, 0
        return 0

    def cusolverMpGetrf(self, h, m, n, a, ia, ja, desc, ipiv, ctype, dwork, dsize, hwork, hsize, info):
        import scipy.linalg

        e = self.e
        A = e.array(a, e.objects[desc][1], n)
        A.flags.writeable = True
        with warnings.catch_warnings():  # a singular matrix is reported through info, as the library does
            warnings.simplefilter("ignore")
            lu, piv = scipy.linalg.lu_factor(A, check_finite=False)
        A[...] = lu
        np.frombuffer((ctypes.c_char * (8 * n)).from_address(ipiv), dtype=np.int64)[:] = piv + 1
        zero = np.flatnonzero(np.diag(lu) == 0)
        singular = zero.size and e.getrf_reports_singular
        ctypes.c_int.from_address(info).value = int(zero[0]) + 1 if singular else 0
        e.calls.append(("cusolverMpGetrf", (m, n)))
        return 0

    def cusolverMpGetrs_bufferSize(self, h, trans, n, nrhs, a, ia, ja, da, ipiv, b, ib, jb, db, ctype, ds, hs):
        ds._obj.value, hs._obj.value = 256, 32
        return 0

    def cusolverMpGetrs(self, h, trans, n, nrhs, a, ia, ja, da, ipiv, b, ib, jb, db, ctype, dwork, dsize, hwork,
                        hsize, info):
        import scipy.linalg

        e = self.e
        lu = e.array(a, e.objects[da][1], n)
        piv = np.frombuffer((ctypes.c_char * (8 * n)).from_address(ipiv), dtype=np.int64) - 1
        B = e.array(b, e.objects[db][1], nrhs)
        B.flags.writeable = True
        B[...] = scipy.linalg.lu_solve((lu, piv), B, trans=trans, check_finite=False)
        ctypes.c_int.from_address(info).value = 0
        e.calls.append(("cusolverMpGetrs", (n, nrhs, trans)))
        return 0


def emulate(monkeypatch) -> Emulation:
    from cumath._bindings import cublasmp, cudart, cusolvermp, nccl
    from cumath._core import cuda
    from cumath.distributed import _gpu

    emu = Emulation()
    monkeypatch.setattr(cuda, "require_device", lambda d: None)
    monkeypatch.setattr(cudart, "cudaGetDevice", lambda: 0)
    monkeypatch.setattr(cudart, "cudaSetDevice", lambda d: None)
    monkeypatch.setattr(cudart, "cudaMallocAsync", emu.malloc)
    monkeypatch.setattr(cudart, "cudaFreeAsync", emu.free)
    monkeypatch.setattr(cudart, "cudaMemcpyAsync", emu.memcpy)
    monkeypatch.setattr(cudart, "cudaMemcpy2DAsync", emu.memcpy2d)
    monkeypatch.setattr(cudart, "cudaMemsetAsync", lambda p, v, n, s: ctypes.memset(p, v, n))
    monkeypatch.setattr(cudart, "cudaStreamSynchronize", lambda s: None)
    monkeypatch.setattr(nccl, "ncclGetUniqueId", lambda: bytes(range(128)))
    monkeypatch.setattr(nccl, "ncclGetVersion", lambda: 22803)

    def init_rank(nranks, uid, rank):
        assert uid == bytes(range(128)) and (nranks, rank) == (1, 0)
        return emu.new("nccl-comm")

    def destroy(comm):
        assert not emu.live("cublasmp-grid") and not emu.live("cusolvermp-grid"), "communicator destroyed first"
        emu.objects.pop(comm)

    monkeypatch.setattr(nccl, "ncclCommInitRank", init_rank)
    monkeypatch.setattr(nccl, "ncclMemAlloc", emu.malloc)
    monkeypatch.setattr(nccl, "ncclMemFree", emu.free)
    monkeypatch.setattr(nccl, "ncclCommFinalize", lambda comm: None)
    monkeypatch.setattr(nccl, "ncclCommDestroy", destroy)
    monkeypatch.setattr(cublasmp, "_L", _CublasMp(emu))
    monkeypatch.setattr(cusolvermp, "_L", _CusolverMp(emu))
    assert _gpu.bring_up_nccl  # the real bring-up runs on the emulated NCCL
    return emu
