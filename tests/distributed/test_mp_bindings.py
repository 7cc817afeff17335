"""The NCCL, cuBLASMp and cuSOLVERMp bindings without a GPU: enum values as the headers give them, every bound
function's argument types against its C prototype (when the headers are found: the wheels' include folders on
sys.path, or CUMATH_INCLUDE_DIRS), status errors, and the GPU bring-up's error paths."""

import ctypes
import enum
import glob
import os
import re
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cumath._bindings import cublasmp, cusolvermp, nccl
from cumath.errors import CUBLASMpError, CUSOLVERMpError, NCCLError

HEADERS = {"nccl": ("nccl.h", nccl), "cublasmp": ("cublasmp.h", cublasmp), "cusolvermp": ("cusolverMp.h", cusolvermp)}


def _find_header(name):
    roots = [p for p in os.environ.get("CUMATH_INCLUDE_DIRS", "").split(os.pathsep) if p] + sys.path
    for root in roots:
        for pattern in (name, f"nvidia/*/include/{name}", f"nvidia/*/*/include/{name}"):
            hits = glob.glob(os.path.join(root, pattern))
            if hits:
                return hits[0]
    return None


def _prototypes(text):
    """C function name -> list of parameter declarations, from a header's text."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    out = {}
    for m in re.finditer(r"\b(\w+)\s*\(([^()]*)\)\s*;", text):
        params = [p.strip() for p in m.group(2).split(",") if p.strip()]
        out.setdefault(m.group(1), [] if params == ["void"] else params)
    return out


def _pointer_typedefs(text):
    return set(re.findall(r"typedef\s+struct\s+\w+\s*\*\s*(\w+)\s*;", text)) | {"cudaStream_t", "ncclComm_t"}


def _expected(param, pointer_types):
    """The ctypes type a C parameter declaration maps to ('ptr', 'int' or a ctypes type)."""
    decl = param.replace("const ", " ").strip()
    if "*" in decl:
        return "ptr"
    words = decl.split()
    ctype = words[0] if len(words) == 1 else " ".join(words[:-1])
    if ctype in pointer_types:
        return "ptr"
    fixed = {"int64_t": ctypes.c_int64, "uint32_t": ctypes.c_uint32, "int32_t": ctypes.c_int32,
             "size_t": ctypes.c_size_t, "int": ctypes.c_int, "ncclUniqueId": nccl.ncclUniqueId}
    return fixed.get(ctype, "int")  # enums (cudaDataType_t, cublasOperation_t, ...) are C ints


def _matches(argtype, expected):
    if expected == "ptr":
        return argtype is ctypes.c_void_p or argtype is ctypes.c_char_p or hasattr(argtype, "_type_") and \
            issubclass(argtype, ctypes._Pointer)
    if expected == "int":
        return argtype in (ctypes.c_int, ctypes.c_int32)
    if expected is ctypes.c_int32:
        return argtype in (ctypes.c_int, ctypes.c_int32)
    return argtype is expected


@pytest.mark.parametrize("lib", sorted(HEADERS))
def test_argtypes_match_the_header(lib):
    header, module = HEADERS[lib]
    path = _find_header(header)
    if path is None:
        pytest.skip(f"{header} not found (set CUMATH_INCLUDE_DIRS to the wheel's include folder)")
    text = open(path, encoding="utf-8", errors="replace").read()
    protos, pointers = _prototypes(text), _pointer_typedefs(text)
    for fname, (_, argtypes) in module.TABLE.items():
        assert fname in protos, f"{fname} is not declared in {path}"
        params = protos[fname]
        assert len(params) == len(argtypes), f"{fname}: {len(argtypes)} argtypes, the header has {params}"
        for i, (param, argtype) in enumerate(zip(params, argtypes)):
            want = _expected(param, pointers)
            assert _matches(argtype, want), f"{fname} argument {i} ({param}): {argtype} is not {want}"


def _header_enum(text, prefix):
    """Enumerator name -> value; values may be written with earlier enumerators (``(A | 128)``)."""
    values = {}
    for name, expr in re.findall(rf"\b({prefix}\w+)\s*=\s*([\w|() ]+?)\s*[,}}\n]", text):
        values[name] = int(eval(expr, {"__builtins__": {}}, dict(values)))
    return values


def test_enum_values():
    # as read from the headers (cublasmp.h 0.10.0, cusolverMp.h 0.9.1, nccl.h 2.32.3)
    assert cublasmp.MatmulEpilogue.ALLREDUCE == 1 and cublasmp.MatmulEpilogue.GELU_AUX_BIAS == 164
    assert cublasmp.MatmulEpilogue.DRELU_BGRAD == 152 and cublasmp.MatmulEpilogue.BGRADB == 512
    assert cublasmp.MatmulDescriptorAttribute.EPILOGUE == 5 and cublasmp.MatmulDescriptorAttribute.BIAS_POINTER == 6
    assert cublasmp.MatmulDescriptorAttribute.COMMUNICATION_TYPE == 27
    assert cublasmp.GridLayout.ROW_MAJOR == 1 and cusolvermp.GridMapping.ROW_MAJOR == 1
    assert cusolvermp.GridMapping.COL_MAJOR == 0 and cublasmp.MatmulAlgoType.FUSED == 6
    assert nccl.Result.ncclInProgress == 7 and ctypes.sizeof(nccl.ncclUniqueId) == 128
    path = _find_header("cublasmp.h")
    if path is not None:
        found = _header_enum(open(path).read(), "CUBLASMP_MATMUL_EPILOGUE_")
        for member in cublasmp.MatmulEpilogue:
            assert found["CUBLASMP_MATMUL_EPILOGUE_" + member.name] == member.value
        found = _header_enum(open(path).read(), "CUBLASMP_MATMUL_ALGO_TYPE_")
        for member in cublasmp.MatmulAlgoType:
            assert found["CUBLASMP_MATMUL_ALGO_TYPE_" + member.name] == member.value


def test_distributed_enums_are_cublasmp_enums():
    from cumath.distributed.linalg.advanced import MatmulAlgoType, MatmulEpilog

    assert {e.name: e.value for e in MatmulEpilog} == {e.name: e.value for e in cublasmp.MatmulEpilogue}
    assert {e.name: e.value for e in MatmulAlgoType} == {e.name: e.value for e in cublasmp.MatmulAlgoType}


def test_epilog_conversion():
    from cumath.distributed.linalg.advanced import MatmulEpilog
    from cumath.distributed.linalg.advanced._matmul import _epilog
    from cumath.linalg.advanced import MatmulEpilog as LtEpilog

    assert _epilog(LtEpilog.DEFAULT) is MatmulEpilog.DEFAULT  # cuBLASLt's DEFAULT is 1: taken by name
    assert _epilog(None) is MatmulEpilog.DEFAULT and _epilog(1) is MatmulEpilog.ALLREDUCE
    with pytest.raises(ValueError, match="is not a MatmulEpilog; the epilogs are"):
        _epilog(3)

    class Other(enum.IntEnum):
        NOPE = 2

    with pytest.raises(ValueError, match="has no distributed counterpart"):
        _epilog(Other.NOPE)


@given(st.sampled_from(list(__import__("cumath").linalg.advanced.MatmulEpilog)))
def test_every_single_process_epilog_has_a_distributed_one(e):
    from cumath.distributed.linalg.advanced._matmul import _epilog

    assert _epilog(e).name == e.name


@given(st.tuples(*[st.integers(1, 9)] * 6), st.booleans(), st.booleans())
def test_block_rules(blocks, ta, tb):
    from cumath.distributed.linalg.advanced._gpu_matmul import _check_blocks

    a, b, d = blocks[:2], blocks[2:4], blocks[4:]
    oa, ob = (a[::-1] if ta else a), (b[::-1] if tb else b)
    ok = oa[1] == ob[0] and oa[0] == d[0] and ob[1] == d[1]
    if ok:
        _check_blocks([(ta, False), (tb, False)], a, b, d)
    else:
        with pytest.raises(ValueError, match="cuBLASMp needs matching block sizes"):
            _check_blocks([(ta, False), (tb, False)], a, b, d)


def test_status_errors_name_the_status():
    with pytest.raises(NCCLError, match=r"NCCL failed with ncclInvalidUsage \(5\)"):
        nccl.check(5)
    with pytest.raises(CUBLASMpError, match=r"cuBLASMp failed with CUBLASMP_STATUS_NOT_SUPPORTED \(7\)"):
        cublasmp.check(7)
    with pytest.raises(CUSOLVERMpError, match=r"cuSOLVERMp failed with CUSOLVER_STATUS_INVALID_VALUE \(3\)"):
        cusolvermp.check(3)
    nccl.check(0)
    cublasmp.check(0)


def test_unique_id_length_is_checked():
    with pytest.raises(ValueError, match="an NCCL unique id has 128 bytes, got 3"):
        nccl.ncclCommInitRank(1, b"abc", 0)


def test_attribute_types_cover_the_attributes():
    for attr in cublasmp.MatmulDescriptorAttribute:
        assert attr in cublasmp.ATTRIBUTE_TYPES
    assert cublasmp.ATTRIBUTE_TYPES[cublasmp.MatmulDescriptorAttribute.BIAS_POINTER] is ctypes.c_void_p


# ------------------------------------------------------------------------------------------- bring-up


class _Group:
    rank, nranks = 0, 1

    def allgather(self, obj):
        return [obj]


def _ctx(backends):
    from cumath.distributed._context import DistributedContext

    return DistributedContext(0, _Group(), backends)


def test_bring_up_order_and_nvshmem_hook(monkeypatch):
    from cumath.distributed import _gpu

    calls = []
    monkeypatch.setattr(_gpu, "_require_device", lambda d: calls.append(("device", d)))
    monkeypatch.setattr(_gpu, "bring_up_nccl", lambda ctx: (calls.append("nccl"),
                                                             ctx.resource("nccl-communicator", lambda: 7,
                                                                          lambda c: calls.append(("free", c)))))

    class Hook:
        @staticmethod
        def bring_up_nvshmem(ctx):
            calls.append("nvshmem")

        @staticmethod
        def tear_down_nvshmem(ctx):
            calls.append("nvshmem down")

    monkeypatch.setattr(_gpu, "_nvshmem_module", lambda: Hook)
    ctx = _ctx(("nvshmem", "nccl"))
    _gpu.bring_up(ctx)
    assert calls == [("device", 0), "nccl", "nvshmem"]
    assert _gpu.nccl_comm(ctx) == 7
    for _, (obj, release) in reversed(list(ctx._resources.items())):  # what finalize() does
        release(obj)
    assert calls[-2:] == ["nvshmem down", ("free", 7)]  # NVSHMEM goes first, the communicator last


def test_missing_nvshmem_hook_releases_nccl(monkeypatch):
    from cumath.distributed import _gpu

    freed = []
    monkeypatch.setattr(_gpu, "_require_device", lambda d: None)
    monkeypatch.setattr(_gpu, "bring_up_nccl", lambda ctx: ctx.resource("nccl-communicator", lambda: 9,
                                                                         freed.append))
    monkeypatch.setattr(_gpu, "_nvshmem_module", lambda: None)
    ctx = _ctx(("nccl", "nvshmem"))
    with pytest.raises(NotImplementedError, match=r"NVSHMEM backend .* initialize with backends=\('nccl',\)"):
        _gpu.bring_up(ctx)
    assert freed == [9] and not ctx._resources  # a failed initialize leaks nothing


def test_nccl_comm_needs_the_backend():
    from cumath.distributed import _gpu
    from cumath.errors import InvalidStateError

    with pytest.raises(InvalidStateError, match="'nccl' in backends"):
        _gpu.nccl_comm(_ctx(("nvshmem",)))


def test_unique_id_failure_on_rank_0_is_reported(monkeypatch):
    from cumath.distributed import _gpu

    def fail():
        raise NCCLError(2, "ncclSystemError")

    monkeypatch.setattr(nccl, "ncclGetUniqueId", fail)
    with pytest.raises(RuntimeError, match="rank 0 could not make the NCCL unique id .*ncclSystemError"):
        _gpu.bring_up_nccl(_ctx(("nccl",)))


def test_initialize_without_gpu_says_so():
    code = ("import cumath.distributed as d\n"
            "from mpi4py import MPI\n"
            "try:\n"
            "    d.initialize(0, MPI.COMM_SELF, backends=('nccl',))\n"
            "except Exception as e:\n"
            "    print(type(e).__name__, e)\n"
            "print('context', d.get_context())\n")
    pytest.importorskip("mpi4py")
    from cumath._core.cuda import device_count

    if device_count():
        pytest.skip("this machine has a GPU")
    from mpi_helpers import clean_env

    env = clean_env()  # a process of its own, not a rank of the launcher's run
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert "CUDAUnavailableError" in out.stdout and "GPU 0" in out.stdout, out.stdout + out.stderr
    assert "context None" in out.stdout


def test_dependencies_load_first(monkeypatch):
    """libcublasmp / libcusolverMp find cuBLAS, cuSOLVER and NCCL by soname: they are loaded first."""
    from cumath._bindings import _loader

    order = []

    def fake_load(name):
        order.append(name)
        raise _loader.LibraryNotFoundError(f"{name} not here")

    monkeypatch.setattr(_loader, "load_library", fake_load)
    lazy = _loader.LazyFunctions("cusolvermp", cusolvermp.TABLE, depends=cusolvermp._L._depends)
    with pytest.raises(_loader.LibraryNotFoundError, match="cudart not here"):
        lazy.cusolverMpCreate
    assert order == ["cudart"]
    assert cusolvermp._L._depends[-2:] == ("nccl", "cublasmp") and "nccl" in cublasmp._L._depends


def test_importing_the_linalg_modules_loads_no_library():
    code = ("import sys\n"
            "import cumath.distributed.linalg.advanced, cumath.distributed.linalg\n"
            "from cumath._bindings import cublasmp, cusolvermp, nccl, _loader\n"
            "bound = [n for m in (cublasmp, cusolvermp, nccl) for n in m.TABLE if n in m._L.__dict__]\n"
            "print('bound', bound, 'loaded', sorted(_loader._loaded), 'mpi4py' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "bound [] loaded [] False" in out.stdout, out.stdout + out.stderr
