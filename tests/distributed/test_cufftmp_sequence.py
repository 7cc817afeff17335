"""The cuFFTMp call sequence of the GPU engine, pinned against a recording stand-in of libcufftMp's C entry points.

cuFFTMp plans through ``cufftCreate``, ``cufftMpAttachComm(CUFFT_COMM_NONE)``, ``cufftSetStream``, the layout
(``cufftXtSetSubformatDefault`` for native slabs, ``cufftXtSetDistribution`` for boxes) and ``cufftMakePlan*``, in
that order, as its samples do. A native plan made without its subformats plans but its first ``cufftExec*``
returns CUFFT_INVALID_PLAN (seen on one rank, where the engine used to leave the subformats out), so the
subformats are set on every rank count. One rank runs a single-GPU plan of libcufftMp instead (no communicator,
no subformats); the tests of cuFFTMp's distributed sequence on one rank turn that off
(``CUMATH_CUFFTMP_SINGLE_GPU=0``, the ``distributed_one_rank`` fixture). No GPU is needed: the recorder stands
in for the library's symbols.
"""

import math
import os
import re
import sys
import types

import numpy as np
import pytest

from cumath._bindings import cufftmp
from cumath.distributed.fft import _cufftmp

C2C, Z2Z, R2C, C2R = 0x29, 0x69, 0x2A, 0x2C
INPLACE, SHUFFLED = 2, 3
DIST_IN, DIST_OUT = 5, 6


class Recorder:
    """libcufftMp's entry points as the binding calls them: records (name, args) and returns a status."""

    def __init__(self, fail=None):
        self.calls, self.fail, self._next = [], fail or {}, 7

    def __getattr__(self, name):
        if not name.startswith("cufft"):
            raise AttributeError(name)

        def fn(*args):
            if name == "cufftCreate":
                args[0]._obj.value = self._next
                self._next += 1
                args = ()
            elif name.startswith("cufftMakePlan"):
                args[-1]._obj.value = 4096
                args = args[:-1]
            elif name == "cufftXtSetDistribution":
                args = args[:2] + tuple(list(a) for a in args[2:])
            self.calls.append((name, args))
            return self.fail.get(name, 0)

        return fn

    def has(self, name):
        return True


class Group:
    def __init__(self, rank=0, nranks=1):
        self.rank, self.nranks = rank, nranks

    def allgather(self, obj):
        return [obj] * self.nranks


class State:
    def __init__(self):
        self.plans, self.alive, self.heap, self.freed = set(), True, {}, []

    def malloc(self, nbytes):
        ptr = 0x10000 * (len(self.heap) + 1)
        self.heap[ptr] = nbytes
        return ptr

    def free(self, ptr):
        self.freed.append(ptr)

    def hold_plan(self, make, destroy):
        if not hasattr(self, "held"):
            self.held = (make(), destroy)

    def sync_all_on_stream(self, stream):
        cufftmp._L.calls.append(("nvshmemx_sync_all_on_stream", (stream,)))

    def size_at(self, ptr):
        return self.heap.get(ptr)

    def array(self, ptr, shape, dtype, package):
        return ("view", ptr, tuple(shape), np.dtype(dtype).name, package)


@pytest.fixture
def lib(monkeypatch):
    rec = Recorder()
    monkeypatch.setattr(cufftmp, "_L", rec)
    monkeypatch.setattr(cufftmp, "_preload", lambda: None)
    monkeypatch.setattr(cufftmp, "available", lambda: True)
    state = State()
    monkeypatch.setattr(_cufftmp, "bring_up_nvshmem", lambda ctx: state)
    rec.state = state
    return rec


@pytest.fixture
def distributed_one_rank(monkeypatch):
    """cuFFTMp's distributed plan on one rank too (the single-GPU plan turned off)."""
    monkeypatch.setenv("CUMATH_CUFFTMP_SINGLE_GPU", "0")


def make(fft_type="C2C", dtype=np.complex64, shape=(64, 64, 64), nranks=1, native=True, in_slab=0, boxes=None):
    geometry = types.SimpleNamespace(fft_type=fft_type, in_dtype=dtype,
                                     out_dtype=np.result_type(dtype, np.complex64) if fft_type != "C2R" else
                                     np.dtype(np.float32 if dtype == np.complex64 else np.float64),
                                     out_shape=shape)
    full = ((0,) * len(shape), tuple(shape))
    in_box, out_box = boxes or (full, full)
    ctx = types.SimpleNamespace(process_group=Group(0, nranks), device_id=0)
    plan = _cufftmp.CuFFTMpPlan(ctx, shape, geometry, in_box, out_box, native, in_slab, operand=None)
    rec = cufftmp._L
    rec.held_calls, rec.calls[:] = list(rec.calls), []  # the plan held for NVSHMEM's lifetime: see its own test
    rec._next = 7
    return plan


def test_one_rank_native_plan_sets_the_subformats_before_make_plan(lib, distributed_one_rank):
    plan = make()
    h = plan._plan_for("forward", 0xABC)
    assert h == 7
    assert lib.calls == [
        ("cufftCreate", ()),
        ("cufftMpAttachComm", (7, 1, None)),  # CUFFT_COMM_NONE, NULL: NVSHMEM is up already
        ("cufftSetStream", (7, 0xABC)),
        ("cufftXtSetSubformatDefault", (7, INPLACE, SHUFFLED)),
        ("cufftMakePlan3d", (7, 64, 64, 64, C2C)),
    ]
    assert plan._plan_for("forward", 0xABC) == 7 and len(lib.calls) == 5, "the plan is made once"


@pytest.mark.parametrize("nranks", [1, 4])
@pytest.mark.parametrize("in_slab, direction, pair", [
    (0, "forward", (INPLACE, SHUFFLED)), (0, "inverse", (SHUFFLED, INPLACE)),
    (1, "forward", (SHUFFLED, INPLACE)), (1, "inverse", (INPLACE, SHUFFLED))])
def test_native_subformats_follow_the_operand_slab_and_direction(lib, distributed_one_rank, nranks, in_slab, direction,
                                                                pair):
    make(nranks=nranks, in_slab=in_slab)._plan_for(direction, 0)
    sub = [args for name, args in lib.calls if name == "cufftXtSetSubformatDefault"]
    assert sub == [(7,) + pair]
    assert [name for name, _ in lib.calls].index("cufftXtSetSubformatDefault") < \
        [name for name, _ in lib.calls].index("cufftMakePlan3d")
    assert ("cufftSetStream", (7, None)) in lib.calls  # stream 0: the legacy default stream, passed as NULL


def test_box_plans_set_the_distribution_and_swap_it_for_the_inverse(lib):
    in_box, out_box = ((0, 0, 0), (32, 64, 48)), ((0, 0, 0), (64, 32, 48))
    plan = make(shape=(64, 64, 48), nranks=2, native=False, boxes=(in_box, out_box))
    plan._plan_for("forward", 5)
    plan._plan_for("inverse", 5)
    names = [name for name, _ in lib.calls]
    assert names == ["cufftCreate", "cufftMpAttachComm", "cufftSetStream", "cufftXtSetDistribution",
                     "cufftXtSetSubformatDefault", "cufftMakePlan3d"] * 2
    # cufftExec* has no descriptor: without subformats naming the boxes a box plan plans but returns
    # CUFFT_INVALID_PLAN at execute (seen on one rank); both plans take (DISTRIBUTED_INPUT, DISTRIBUTED_OUTPUT)
    subs = [args for name, args in lib.calls if name == "cufftXtSetSubformatDefault"]
    assert subs == [(7, DIST_IN, DIST_OUT), (8, DIST_IN, DIST_OUT)]
    dists = [args for name, args in lib.calls if name == "cufftXtSetDistribution"]
    assert dists[0] == (7, 3, [0, 0, 0], [32, 64, 48], [0, 0, 0], [64, 32, 48], [3072, 48, 1], [1536, 48, 1])
    assert dists[1] == (8, 3, [0, 0, 0], [64, 32, 48], [0, 0, 0], [32, 64, 48], [1536, 48, 1], [3072, 48, 1])


def test_real_transforms_plan_the_real_shape(lib, distributed_one_rank):
    makes = []
    for kind, dtype, shape, direction in (("R2C", np.float32, (16, 12, 9), "forward"),
                                          ("C2R", np.complex128, (16, 12, 5), "inverse")):
        make(fft_type=kind, dtype=dtype, shape=shape)._plan_for(direction, 0)
        makes += [args for name, args in lib.calls if name.startswith("cufftMakePlan")]
    assert makes[0][1:] == (16, 12, 9, R2C)
    assert makes[1][1:] == (16, 12, 5, 0x6C)  # Z2D; C2R plans take geometry.out_shape (the real result's)


@pytest.mark.parametrize("shape", [(20, 15), (16, 12, 10), (9, 7, 11)])
@pytest.mark.parametrize("kind, direction", [("R2C", "forward"), ("C2R", "inverse")])
@pytest.mark.parametrize("in_slab", [0, 1])
def test_native_real_plans_take_the_documented_subformat_pair(lib, distributed_one_rank, shape, kind, direction,
                                                              in_slab):
    """R2C and C2R plans both take (INPLACE, INPLACE_SHUFFLED), as cuFFTMp's samples set on both: the real side in
    X slabs, the complex side (the C2R input) in Y slabs, whatever slab the operand was given in (native real
    transforms run on one rank only, where both slabs are the whole array). The C2R plan with the pair swapped
    returned CUFFT_INTERNAL_ERROR at cufftExecC2R for (20, 15); the C2R plan is of the real shape."""
    dtype = np.float32 if kind == "R2C" else np.complex64
    real = shape
    plan_shape = shape if kind == "R2C" else shape[:-1] + (shape[-1] // 2 + 1,)
    p = make(fft_type=kind, dtype=dtype, shape=plan_shape, in_slab=in_slab)
    p.geometry.out_shape = real
    p._plan_for(direction, 0)
    names = [name for name, _ in lib.calls]
    assert names == ["cufftCreate", "cufftMpAttachComm", "cufftSetStream", "cufftXtSetSubformatDefault",
                     "cufftMakePlan%dd" % len(shape)]
    assert lib.calls[3] == ("cufftXtSetSubformatDefault", (7, INPLACE, SHUFFLED))
    assert lib.calls[4][1][1:] == tuple(real) + ({"R2C": R2C, "C2R": C2R}[kind],)


def test_box_real_plans_take_the_real_box_as_input(lib):
    """R2C plans only take DISTRIBUTED_INPUT and C2R plans DISTRIBUTED_OUTPUT, so both are described with the real
    box as the input box and the complex box as the output box (cuFFTMp's pencil samples)."""
    real_box, complex_box = ((0, 0, 0), (8, 12, 10)), ((0, 0, 0), (16, 6, 6))
    r2c = make(fft_type="R2C", dtype=np.float32, shape=(16, 12, 10), nranks=2, native=False,
               boxes=(real_box, complex_box))
    r2c._plan_for("forward", 0)
    calls = list(lib.calls)
    c2r = make(fft_type="C2R", dtype=np.complex64, shape=(16, 12, 6), nranks=2, native=False,
               boxes=(complex_box, real_box))
    c2r.geometry.out_shape = (16, 12, 10)
    c2r._plan_for("inverse", 0)
    calls += lib.calls
    dists = [args[2:6] for name, args in calls if name == "cufftXtSetDistribution"]
    assert dists == [([0, 0, 0], [8, 12, 10], [0, 0, 0], [16, 6, 6])] * 2, "the real box is the input of both"
    subs = [args[1:] for name, args in calls if name == "cufftXtSetSubformatDefault"]
    assert subs == [(DIST_IN, DIST_OUT)] * 2
    makes = [args[1:] for name, args in calls if name == "cufftMakePlan3d"]
    assert makes == [(16, 12, 10, R2C), (16, 12, 10, C2R)]


def test_two_dimensional_plans(lib, distributed_one_rank):
    make(dtype=np.complex128, shape=(7, 11))._plan_for("forward", 0)
    assert lib.calls[-1] == ("cufftMakePlan2d", (7, 7, 11, Z2Z))


def test_a_failed_make_plan_destroys_the_handle_and_raises_the_status(lib):
    lib.fail["cufftMakePlan3d"] = 1
    plan = make()
    from cumath.errors import CumathError

    with pytest.raises(CumathError, match="CUFFT_INVALID_PLAN|INVALID_PLAN|status 1"):
        plan._plan_for("forward", 0)
    assert lib.calls[-1] == ("cufftDestroy", (7,)) and plan._plans == {}


class _FakeCuPy(types.ModuleType):
    """Device and stream contexts that record what was current when the library was called."""

    def __init__(self, lib):
        super().__init__("cupy")
        self.events = lib.events = []
        outer = self

        class Device:
            def __init__(self, d):
                self.d = d

            def __enter__(self):
                outer.events.append(("device", self.d))

            def __exit__(self, *e):
                outer.events.append(("device-exit", self.d))

        class ExternalStream:
            def __init__(self, ptr):
                self.ptr = ptr

            def __enter__(self):
                return self

            def __exit__(self, *e):
                return False

        self.cuda = types.SimpleNamespace(Device=Device, ExternalStream=ExternalStream,
                                          get_current_stream=lambda: types.SimpleNamespace(ptr=0xD00D))


class SymOperand:
    """A C-contiguous complex64 'CuPy' array at the start of a symmetric buffer."""

    __module__ = "cupy"

    def __init__(self, ptr, shape):
        self.data = types.SimpleNamespace(ptr=ptr)
        self.flags = types.SimpleNamespace(c_contiguous=True)
        self.dtype = np.dtype(np.complex64)
        self.shape = shape


def test_execute_plans_on_the_device_with_the_stream_then_runs_in_place(lib, distributed_one_rank, monkeypatch):
    fake = _FakeCuPy(lib)
    monkeypatch.setitem(sys.modules, "cupy", fake)
    plan = make(shape=(8, 6, 5))
    ptr = lib.state.malloc(plan.nbytes)
    calls_at_enter = []
    orig_create = cufftmp.create
    monkeypatch.setattr(cufftmp, "create", lambda: (calls_at_enter.append(list(fake.events)), orig_create())[1])
    x = SymOperand(ptr, (8, 6, 5))
    out = plan.execute(x, "cupy", True, "forward")
    assert calls_at_enter == [[("device", 0)]], "the plan is made with the FFT's device current"
    assert out == ("view", ptr, (8, 6, 5), "complex64", "cupy")
    names = [name for name, _ in lib.calls]
    assert names == ["cufftCreate", "cufftMpAttachComm", "cufftSetStream", "cufftXtSetSubformatDefault",
                     "cufftMakePlan3d", "cufftExecC2C"]
    assert ("cufftSetStream", (7, 0xD00D)) in lib.calls  # the current stream when none was given
    assert lib.calls[-1] == ("cufftExecC2C", (7, ptr, ptr, -1))
    plan.execute(x, "cupy", True, "forward", stream=0xBEEF)  # the plan is kept; the new stream is set on it
    assert lib.calls[-2:] == [("cufftSetStream", (7, 0xBEEF)), ("cufftExecC2C", (7, ptr, ptr, -1))]
    plan.release_native()
    assert ("cufftDestroy", (7,)) in lib.calls and plan._plans == {}


def test_the_binding_passes_null_for_the_default_stream_and_ints_for_enums(lib):
    cufftmp.set_stream(3, 0)
    cufftmp.set_subformat_default(3, cufftmp.SubFormat.CUFFT_XT_FORMAT_INPLACE_SHUFFLED,
                                  cufftmp.SubFormat.CUFFT_XT_FORMAT_INPLACE)
    cufftmp.attach_comm_none(3)
    assert lib.calls == [("cufftSetStream", (3, None)), ("cufftXtSetSubformatDefault", (3, 3, 2)),
                         ("cufftMpAttachComm", (3, 1, None))]
    assert all(type(a) is int for a in lib.calls[1][1])


def test_the_first_fft_holds_a_small_plan_for_nvshmems_lifetime(lib):
    make(nranks=4)
    assert lib.held_calls == [
        ("cufftCreate", ()), ("cufftMpAttachComm", (7, 1, None)),
        ("cufftXtSetSubformatDefault", (7, INPLACE, SHUFFLED)), ("cufftMakePlan2d", (7, 4, 4, C2C))]
    assert lib.state.held[0] == 7
    make()
    assert lib.held_calls == [], "held once per NVSHMEM state"


def test_release_frees_the_buffer_before_destroying_the_plans(lib):
    order = []
    plan = make()
    plan._plan_for("forward", 0)
    lib.state.free = lambda ptr: order.append(("free", ptr))
    orig = cufftmp.destroy
    cufftmp_destroy = lambda h: (order.append(("destroy", h)), orig(h))  # noqa: E731
    plan._mp = types.SimpleNamespace(destroy=cufftmp_destroy)
    plan.release_native()
    assert [o[0] for o in order] == ["free", "destroy"]


class FakeNVSHMEM:
    STATUS_BOOTSTRAPPED = 1

    def __init__(self, status_after_destroy):
        self.events, self.status, self.after = [], 2, status_after_destroy

    def free(self, ptr):
        self.events.append(("free", ptr))

    def init_status(self):
        return self.status

    def finalize(self):
        self.events.append(("finalize",))


def _state(lib_nv):
    from cumath.distributed._nvshmem import NVSHMEMState

    import weakref

    st = object.__new__(NVSHMEMState)
    st._lib, st.alive, st.buffers, st.plans, st._held = lib_nv, True, {}, weakref.WeakSet(), None
    return st


@pytest.mark.parametrize("status_after, finalized_here", [(2, True), (0, False)])
def test_tear_down_destroys_the_held_plan_last_and_finalizes_unless_cufftmp_did(status_after, finalized_here):
    nv = FakeNVSHMEM(status_after)
    st = _state(nv)

    def destroy(h):
        nv.events.append(("destroy", h))
        nv.status = nv.after

    st.hold_plan(lambda: 42, destroy)
    st.hold_plan(lambda: 43, destroy)  # once
    st.buffers[0x100] = 64
    with pytest.warns(ResourceWarning, match="never freed"):
        st.tear_down()
    expected = [("free", 0x100), ("destroy", 42)] + ([("finalize",)] if finalized_here else [])
    assert nv.events == expected
    st.tear_down()
    assert nv.events == expected, "idempotent"


def test_a_held_plan_that_cannot_be_made_only_warns(caplog):
    st = _state(FakeNVSHMEM(2))

    def fail():
        raise RuntimeError("no plan")

    st.hold_plan(fail, None)
    assert st._held == (None, None)
    assert "could not make the cuFFTMp plan kept for NVSHMEM's lifetime: no plan" in caplog.text
    st.tear_down()
    assert st._lib.events == [("finalize",)]


@pytest.mark.parametrize("nranks, sync, synced", [(4, True, True), (4, False, False), (1, True, False)])
def test_many_ranks_wait_for_every_ranks_stores_before_cufftmp_reads_them(lib, monkeypatch, nranks, sync, synced):
    monkeypatch.setitem(sys.modules, "cupy", _FakeCuPy(lib))
    plan = make(shape=(8, 6, 5), nranks=nranks)
    ptr = lib.state.malloc(plan.nbytes)
    plan.execute(SymOperand(ptr, (8, 6, 5)), "cupy", True, "forward", stream=0xBEEF, sync=sync)
    names = [name for name, _ in lib.calls]
    if synced:
        assert names[-2:] == ["nvshmemx_sync_all_on_stream", "cufftExecC2C"]
        assert lib.calls[-2] == ("nvshmemx_sync_all_on_stream", (0xBEEF,))
    else:
        assert "nvshmemx_sync_all_on_stream" not in names


def test_the_public_calls_take_sync_symmetric_memory_as_nvmath_python_does():
    import inspect

    from cumath.distributed import fft as dfft

    for fn in (dfft.FFT.execute, dfft.fft, dfft.ifft, dfft.rfft, dfft.irfft):
        p = inspect.signature(fn).parameters["sync_symmetric_memory"]
        assert p.default is True and p.kind is inspect.Parameter.KEYWORD_ONLY, fn


def test_the_nvshmem_binding_passes_null_for_the_default_stream(monkeypatch):
    from cumath._bindings import nvshmem

    seen = []
    monkeypatch.setattr(nvshmem, "_L", types.SimpleNamespace(nvshmemx_sync_all_on_stream=seen.append))
    nvshmem.sync_all_on_stream(0)
    nvshmem.sync_all_on_stream(0x55)
    assert seen == [None, 0x55]
    assert nvshmem.TABLE["nvshmemx_sync_all_on_stream"][0] is None


@pytest.mark.gpu  # where the cuFFTMp wheel is installed (its headers come with it)
def test_the_binding_table_matches_cufftmps_headers():
    """Argument counts and kinds of every bound function, and the enum values, against cufftMp.h, cufftXt.h and
    cufft.h of the nvidia-cufftmp-cu13 wheel (found on sys.path or in CUMATH_INCLUDE_DIRS)."""
    from test_mp_bindings import _expected, _find_header, _matches, _prototypes

    paths = [_find_header(h) for h in ("cufftMp.h", "cufftXt.h", "cufft.h")]
    if None in paths or "cufftmp" not in paths[0]:
        pytest.skip("cufftMp.h not found (set CUMATH_INCLUDE_DIRS to the cuFFTMp wheel's include folder)")
    # declarations first: cufftMp.h's inline functions call cufftMakePlan2d/3d, which a prototype scan would take
    paths = [os.path.join(os.path.dirname(paths[0]), h) for h in ("cufft.h", "cufftXt.h", "cufftMp.h")]
    text = "\n".join(open(p, encoding="utf-8", errors="replace").read() for p in paths)
    protos = _prototypes(text.replace("CUFFTAPI", ""))
    for fname, (_, argtypes) in cufftmp.TABLE.items():
        assert fname in protos, f"{fname} is not declared in cuFFTMp's headers"
        params = protos[fname]
        assert len(params) == len(argtypes), f"{fname}: {len(argtypes)} argtypes, the header has {params}"
        for i, (param, argtype) in enumerate(zip(params, argtypes)):
            want = _expected(param, {"cudaStream_t"})
            if "*" not in param and param.split()[0] in ("cufftHandle", "cufftType", "cufftMpCommType",
                                                         "cufftXtSubFormat"):
                want = "int"
            assert _matches(argtype, want), f"{fname} argument {i} ({param}): {argtype} is not {want}"
    def enum(prefix):  # enumerators written as literals, a comment after them
        return {k: int(v, 0) for k, v in re.findall(rf"\b({prefix}\w+)\s*=\s*(0x[0-9a-fA-F]+|\d+)", text)}

    assert {m.name: int(m) for m in cufftmp.CommType} == enum("CUFFT_COMM_")
    formats = enum("CUFFT_XT_FORMAT_")
    assert all(formats[m.name] == int(m) for m in cufftmp.SubFormat), formats


@pytest.mark.parametrize("native, single_gpu, words, alternative", [
    (True, "0", "native slabs, subformats INPLACE/INPLACE_SHUFFLED",
     "another distribution (Box pairs run as cuFFTMp boxes)"),
    (False, "1", "boxes in ((0, 0, 0), (8, 6, 5)) out ((0, 0, 0), (8, 6, 5)), "
                 "subformats DISTRIBUTED_INPUT/DISTRIBUTED_OUTPUT", "Slab.X or Slab.Y"),
    (True, "1", "a single-GPU plan of libcufftMp (one rank: no communicator attached, no exchange through NVSHMEM)",
     "CUMATH_CUFFTMP_SINGLE_GPU=0 (cuFFTMp's distributed plan on one rank)")])
def test_an_execution_failure_names_the_plan_and_the_alternative(lib, monkeypatch, native, single_gpu, words,
                                                                 alternative):
    """A cufftExec* failure keeps cuFFT's error (type and status) and says which plan failed and what to try."""
    from cumath.errors import CUFFTError

    monkeypatch.setenv("CUMATH_CUFFTMP_SINGLE_GPU", single_gpu)
    monkeypatch.setitem(sys.modules, "cupy", _FakeCuPy(lib))
    plan = make(shape=(8, 6, 5), native=native)
    ptr = lib.state.malloc(plan.nbytes)
    lib.fail["cufftExecC2C"] = 5
    with pytest.raises(CUFFTError, match="CUFFT_INTERNAL_ERROR") as info:
        plan.execute(SymOperand(ptr, (8, 6, 5)), "cupy", True, "forward")
    note = "\n".join(getattr(info.value, "__notes__", []))
    if sys.version_info >= (3, 11):
        assert "cuFFTMp C2C forward of global shape (8, 6, 5) on 1 rank(s), " + words + ": try " + alternative \
            in note, note


# -- one rank: a single-GPU plan of libcufftMp (no communicator, no subformats, no exchange through NVSHMEM)

@pytest.mark.parametrize("value, expected", [(None, True), ("1", True), ("0", False), ("off", False),
                                             (" False ", False), ("no", False), ("yes", True)])
def test_the_single_gpu_plan_is_for_one_rank_with_native_slabs(monkeypatch, value, expected):
    if value is None:
        monkeypatch.delenv("CUMATH_CUFFTMP_SINGLE_GPU", raising=False)
    else:
        monkeypatch.setenv("CUMATH_CUFFTMP_SINGLE_GPU", value)
    assert _cufftmp.single_gpu_plan(1, True) is expected
    assert not _cufftmp.single_gpu_plan(2, True) and not _cufftmp.single_gpu_plan(4, True), "many ranks: cuFFTMp"
    assert not _cufftmp.single_gpu_plan(1, False), "box plans forced on one rank stay cuFFTMp's"


CASES_ONE_RANK = [("C2C", np.complex64, (64, 64, 64), (64, 64, 64), C2C),
                  ("C2C", np.complex128, (7, 11), (7, 11), Z2Z),
                  ("R2C", np.float32, (16, 12, 9), (16, 12, 9), R2C),
                  ("R2C", np.float64, (20, 15), (20, 15), 0x6A),  # D2Z
                  ("C2R", np.complex64, (16, 12, 5), (16, 12, 9), C2R),
                  ("C2R", np.complex128, (20, 8), (20, 15), 0x6C)]  # Z2D


@pytest.mark.parametrize("kind, dtype, shape, real, code", CASES_ONE_RANK)
@pytest.mark.parametrize("in_slab", [0, 1])
def test_one_rank_plans_are_single_gpu_plans_without_a_communicator(lib, kind, dtype, shape, real, code, in_slab):
    """Every FFT type, 2-D and 3-D, from X or Y slabs (whole-array boxes plan as native slabs on one rank): create,
    stream, make plan of the real shape for R2C / C2R; no cufftMpAttachComm, no subformats, no distribution."""
    p = make(fft_type=kind, dtype=dtype, shape=shape, in_slab=in_slab)
    p.geometry.out_shape = real
    assert p.single_gpu and p.native
    direction = "inverse" if kind == "C2R" else "forward"
    assert p._plan_for(direction, 0xABC) == 7
    assert lib.calls == [("cufftCreate", ()), ("cufftSetStream", (7, 0xABC)),
                         ("cufftMakePlan%dd" % len(shape), (7,) + tuple(real) + (code,))]


def test_one_rank_c2c_runs_both_directions_on_one_plan(lib, monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", _FakeCuPy(lib))
    plan = make(shape=(8, 6, 5))
    ptr = lib.state.malloc(plan.nbytes)
    x = SymOperand(ptr, (8, 6, 5))
    assert plan.execute(x, "cupy", True, "forward") == ("view", ptr, (8, 6, 5), "complex64", "cupy")
    plan.execute(x, "cupy", True, "inverse", stream=0xBEEF)
    assert lib.calls == [("cufftCreate", ()), ("cufftSetStream", (7, 0xD00D)), ("cufftMakePlan3d", (7, 8, 6, 5, C2C)),
                         ("cufftExecC2C", (7, ptr, ptr, -1)),
                         ("cufftSetStream", (7, 0xBEEF)), ("cufftExecC2C", (7, ptr, ptr, 1))]
    assert list(plan._plans.values()) == [7], "one plan for both directions"
    plan.release_native()
    assert lib.calls[-1] == ("cufftDestroy", (7,)) and plan._plans == {}


@pytest.mark.parametrize("kind, dtype, shape, real, code", CASES_ONE_RANK[2:])
def test_one_rank_real_transforms_keep_the_padded_rows(lib, monkeypatch, kind, dtype, shape, real, code):
    """The single-GPU in-place layout of R2C / C2R is the native plan's: the real side's rows padded to 2 (n//2+1)
    reals, so the staging buffer, the stored shapes and the results are unchanged."""
    real_box = ((0,) * len(real), tuple(real))
    complex_box = ((0,) * len(real), tuple(real[:-1]) + (real[-1] // 2 + 1,))
    boxes = (real_box, complex_box) if kind == "R2C" else (complex_box, real_box)
    p = make(fft_type=kind, dtype=dtype, shape=shape, boxes=boxes)
    m = real[-1] // 2 + 1
    padded = tuple(real[:-1]) + (2 * m,)
    assert (p.in_stored if kind == "R2C" else p.out_stored) == padded
    assert p.nbytes == math.prod(padded) * np.dtype(np.float32 if dtype in (np.float32, np.complex64)
                                                     else np.float64).itemsize
    monkeypatch.setenv("CUMATH_CUFFTMP_SINGLE_GPU", "0")
    q = make(fft_type=kind, dtype=dtype, shape=shape, boxes=boxes)
    assert not q.single_gpu
    assert (q.in_stored, q.out_stored, q.nbytes) == (p.in_stored, p.out_stored, p.nbytes)


def test_a_failed_single_gpu_plan_destroys_the_handle(lib):
    from cumath.errors import CumathError

    lib.fail["cufftMakePlan3d"] = 2
    plan = make()
    with pytest.raises(CumathError, match="cufftMakePlan3d"):
        plan._plan_for("forward", 0)
    assert lib.calls == [("cufftCreate", ()), ("cufftSetStream", (7, None)), ("cufftMakePlan3d", (7, 64, 64, 64, C2C)),
                         ("cufftDestroy", (7,))]
    assert plan._plans == {}


def test_one_rank_logs_the_single_gpu_plan_and_many_ranks_keep_cufftmp(lib, caplog):
    import logging

    with caplog.at_level(logging.INFO, logger="cumath.distributed.fft._cufftmp"):
        make(shape=(8, 6, 5))
    assert ("cuFFTMp C2C (8, 6, 5) on 1 rank(s): a single-GPU plan of libcufftMp (one rank: no communicator "
            "attached, no exchange through NVSHMEM)") in caplog.text
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="cumath.distributed.fft._cufftmp"):
        p = make(shape=(8, 6, 5), nranks=2)
    assert "on 2 rank(s): native slabs" in caplog.text and not p.single_gpu
    p._plan_for("forward", 0)
    assert [n for n, _ in lib.calls] == ["cufftCreate", "cufftMpAttachComm", "cufftSetStream",
                                         "cufftXtSetSubformatDefault", "cufftMakePlan3d"]
