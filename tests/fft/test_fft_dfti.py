"""oneMKL's DFTI as a CPU FFT engine ('dfti'), and 'fftw+dfti' (what 'auto' takes when FFTW and MKL are both
there): FFTW's plans where the process has wisdom, DFTI where it has none."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import cumath
import cumath.fft as F
from cumath.errors import DFTIError, LibraryError, LibraryNotFoundError
from helpers.matrix import engine_available, hermitian_array, random_array
from helpers.reference import assert_close, fft_ref, ifft_ref, irfft_ref, rfft_ref


def _dfti_or_skip():
    from cumath._bindings import mkl_dfti

    if not mkl_dfti.available():
        pytest.skip("oneMKL (the 'mkl' extra) is not installed")


pytestmark = pytest.mark.usefixtures("_dfti")


@pytest.fixture
def _dfti():
    _dfti_or_skip()


DFTI = {"cpu_engine": "dfti"}


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("shape,axes", [((2048,), None), ((17,), None), ((31, 7), None), ((5, 6, 7), (0, 2)),
                                        ((3, 4, 13), (-1,)), ((2, 3, 5, 11), (1, 3)), ((4, 9, 10), (0, 1, 2))])
def test_c2c_both_directions(dtype, shape, axes):
    x = random_array(shape, dtype)
    with F.FFT(x, axes=axes, options=DFTI) as f:
        f.plan()
        assert type(f._executor.backend).__name__ == "DftiPlan"
        assert_close(f.execute(), fft_ref(x, axes), dtype)
        assert_close(f.execute(direction="inverse"), ifft_ref(x, axes), dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape,axes", [((1024,), None), ((15,), None), ((9, 14), None), ((6, 5, 8), (0, 2)),
                                        ((3, 4, 7), (-1,))])
def test_r2c_and_c2r(dtype, shape, axes):
    x = random_array(shape, dtype)
    assert_close(F.rfft(x, axes=axes, options=DFTI), rfft_ref(x, axes), dtype)
    cdt = "complex64" if dtype == "float32" else "complex128"
    h = hermitian_array(shape, cdt, axes=axes)
    before = h.copy()
    assert_close(F.irfft(h, axes=axes, options=DFTI), irfft_ref(h, axes), cdt)
    np.testing.assert_array_equal(h, before)  # the operand is never overwritten


@pytest.mark.parametrize("layout", ["transposed", "negative", "strided", "unaligned"])
def test_layouts(layout):
    base = random_array((24, 33), "complex128")
    if layout == "transposed":
        x = base.T
    elif layout == "negative":
        x = base[::-1, ::-2]
    elif layout == "strided":
        x = base[::3, 1::2]
    else:  # 8 bytes off any SIMD alignment
        buf = np.empty(24 * 33 + 1, dtype=np.complex128)
        x = buf.view(np.uint8)[8:8 + 16 * 24 * 33].view(np.complex128).reshape(24, 33)
        x[...] = base
    before = x.copy()
    for axes in (None, (0,), (-1,)):
        assert_close(F.fft(x, axes=axes, options=DFTI), fft_ref(x, axes), "complex128")
    np.testing.assert_array_equal(x, before)


def test_inplace():
    x = random_array((12, 35), "complex128")
    ref = fft_ref(x)
    y = F.fft(x, options={**DFTI, "inplace": True})
    assert y is x
    assert_close(x, ref, "complex128")


def test_batches_of_several_loops_run_the_outer_ones_here():
    x = random_array((3, 4, 5, 16), "complex128")[:, ::2, :, :]  # two batch loops that do not fuse
    with F.FFT(x, axes=[-1], options=DFTI) as f:
        f.plan()
        assert f._executor.backend._offsets is not None
        assert_close(f.execute(), fft_ref(x, [-1]), "complex128")
        assert_close(f.execute(direction="inverse"), ifft_ref(x, [-1]), "complex128")


def test_threads_are_honoured():
    x = random_array((1 << 16,), "complex128")
    with F.FFT(x, execution=cumath.ExecutionCPU(num_threads=1), options=DFTI) as f:
        f.plan()
        assert f._executor.backend.num_threads == 1
        assert_close(f.execute(), fft_ref(x), "complex128")


@settings(max_examples=40, deadline=None)
@given(shape=st.lists(st.integers(1, 24), min_size=1, max_size=3), real=st.booleans(), double=st.booleans(),
       last_only=st.booleans(), step=st.sampled_from([1, 2, -1]))
def test_property_matches_numpy(shape, real, double, last_only, step):
    _dfti_or_skip()
    dtype = ("float64" if double else "float32") if real else ("complex128" if double else "complex64")
    x = random_array(tuple(shape), dtype)[..., ::step]
    axes = (-1,) if last_only else None
    if real:
        assert_close(F.rfft(x, axes=axes, options=DFTI), rfft_ref(x, axes), dtype)
    else:
        assert_close(F.fft(x, axes=axes, options=DFTI), fft_ref(x, axes), dtype)


# ------------------------------------------------------------------------------------------------- errors

def test_a_failing_descriptor_raises_dfti_error_with_mkl_message():
    from cumath._bindings import mkl_dfti as D

    with pytest.raises(DFTIError) as info:
        D.create_descriptor(D.Value.DOUBLE, D.Value.COMPLEX, [0])
    assert isinstance(info.value, LibraryError) and info.value.library == "MKL DFTI"
    assert info.value.status != 0 and "DftiCreateDescriptor(lengths=[0])" in str(info.value)
    assert info.value.name in {c.name for c in D.ErrorClass} or info.value.name.startswith("status")


def test_a_bad_setting_raises_and_frees_nothing_twice():
    from cumath._bindings import mkl_dfti as D

    desc = D.create_descriptor(D.Value.DOUBLE, D.Value.COMPLEX, [8])
    try:
        with pytest.raises(DFTIError, match="DftiSetValue"):
            D.set_value(desc, D.Param.PLACEMENT, 12345)
    finally:
        D.free_descriptor(desc)
    D.free_descriptor(0)  # ignored


def test_missing_mkl_names_the_extra(monkeypatch):
    from cumath._bindings import mkl_dfti
    from cumath.fft._backends.dfti import DftiEngine

    monkeypatch.setattr(mkl_dfti, "available", lambda: False)
    with pytest.raises(LibraryNotFoundError, match=r"pip install cumath\[mkl\]"):
        DftiEngine().load()


def test_unknown_engine_lists_dfti():
    with pytest.raises(ValueError, match="'dfti', 'fftw\\+dfti'"):
        F.fft(random_array((8,), "complex128"), options={"cpu_engine": "dfti2"})


# ------------------------------------------------------------------------------------------ fftw+dfti

needs_fftw = pytest.mark.skipif(not engine_available("fftw"), reason="FFTW (the 'cpu' extra) is not installed")


@needs_fftw
def test_auto_prefers_fftw_plus_dfti():
    from cumath.fft._backends import cpu_engine

    assert cpu_engine("auto") == "fftw+dfti"


@needs_fftw
def test_small_problems_stay_with_fftw():
    x = random_array((2048,), "complex128")
    with F.FFT(x) as f:
        f.plan()
        assert type(f._executor.backend).__name__ == "FFTWPlan"


@needs_fftw
def test_an_explicit_planning_effort_means_fftw():
    x = random_array((1 << 15,), "complex128")
    with F.FFT(x, options={"planning_effort": "estimate"}) as f:
        f.plan()
        assert type(f._executor.backend).__name__ == "FFTWPlan"


@needs_fftw
def test_no_wisdom_runs_dfti_then_fftw_once_wisdom_is_learnt(monkeypatch):
    from cumath.fft._backends import dfti

    monkeypatch.setattr(dfti, "no_wisdom_engine", lambda *a: ("dfti", "forced by the test"))
    x = random_array((8, 96), "complex128")  # a size no other test measures
    F.FFT(x, axes=[-1]).free()
    with F.FFT(x, axes=[-1]) as f:
        f.plan()
        plan = f._executor.backend
        assert type(plan).__name__ == "TunedPlan" and not plan._by_fftw
        assert_close(f.execute(), fft_ref(x, [-1]), "complex128")
        with F.FFT(x, axes=[-1], options={"planning_effort": "measure"}) as m:
            m.plan()  # the process learns wisdom for the problem
        assert not plan.entries  # emptied: the next execution looks again
        assert_close(f.execute(), fft_ref(x, [-1]), "complex128")
        assert -1 in plan._by_fftw
        assert plan.entries[-1] == plan.fftw.entries[-1]
        # off FFTW's alignment, DFTI serves the direction FFTW serves aligned
        buf = np.empty(8 * 96 + 1, dtype=np.complex128)
        u = buf.view(np.uint8)[8:8 + 16 * 8 * 96].view(np.complex128).reshape(8, 96)
        u[...] = x
        f.reset_operand(u)
        assert_close(f.execute(), fft_ref(x, [-1]), "complex128")
        assert_close(f.execute(direction="inverse"), ifft_ref(x, [-1]), "complex128")
    # a new plan of the same problem starts with FFTW's plan from wisdom
    with F.FFT(x, axes=[-1]) as g:
        g.plan()
        assert -1 in g._executor.backend._by_fftw


@needs_fftw
def test_stateless_large_first_call_is_dfti_and_correct():
    x = random_array((64, 1024), "complex64")
    assert_close(F.fft(x, axes=[-1]), fft_ref(x, [-1]), "complex64")
    r = random_array((1 << 15,), "float64")
    assert_close(F.rfft(r), rfft_ref(r), "float64")


@needs_fftw
def test_background_planning_is_opt_in_and_swaps_fftw_in(monkeypatch):
    from cumath.fft._backends import dfti

    monkeypatch.setattr(dfti, "no_wisdom_engine", lambda *a: ("dfti", "forced by the test"))
    x = random_array((4, 112), "complex128")  # a size no other test measures
    monkeypatch.delenv(dfti.BACKGROUND_ENV, raising=False)
    with F.FFT(x, axes=[-1]) as f:
        f.plan()
        assert f._executor.backend._measured is None  # off by default
    monkeypatch.setenv(dfti.BACKGROUND_ENV, "measure")
    with F.FFT(x, axes=[-1]) as f:
        f.plan()
        plan = f._executor.backend
        assert not plan._by_fftw
        assert_close(f.execute(), fft_ref(x, [-1]), "complex128")
        dfti.PLANNER.wait()
        assert_close(f.execute(), fft_ref(x, [-1]), "complex128")
        assert -1 in plan._by_fftw


def test_background_planning_setting_is_checked(monkeypatch):
    from cumath.fft._backends import dfti

    monkeypatch.setenv(dfti.BACKGROUND_ENV, "sometimes")
    with pytest.raises(ValueError, match="use measure, patient, exhaustive, 1 or 0"):
        dfti.background_effort()
    for value, effort in (("1", "measure"), ("PATIENT", "patient"), ("off", None)):
        monkeypatch.setenv(dfti.BACKGROUND_ENV, value)
        assert dfti.background_effort() == effort


@needs_fftw
def test_a_layout_dfti_refuses_goes_to_fftw_and_survives_new_wisdom(monkeypatch):
    from cumath._bindings import mkl_dfti
    from cumath.fft._backends import dfti

    monkeypatch.setattr(dfti, "no_wisdom_engine", lambda *a: ("dfti", "forced by the test"))
    x = random_array((6, 80), "complex128")  # a size no other test measures

    def refuse(*args, **kwargs):
        raise DFTIError(3, "INCONSISTENT_CONFIGURATION", "refused for the test")

    monkeypatch.setattr(mkl_dfti, "commit_descriptor", refuse)
    with F.FFT(x, axes=[-1]) as f:
        f.plan()
        plan = f._executor.backend
        assert -1 in plan._refused and -1 not in plan.entries
        assert_close(f.execute(), fft_ref(x, [-1]), "complex128")
        monkeypatch.undo()
        with F.FFT(x, axes=[-1], options={"planning_effort": "measure"}) as m:
            m.plan()  # wisdom: FFTW replaces (and destroys) its heuristic plan at the next execution
        for _ in range(2):
            assert_close(f.execute(), fft_ref(x, [-1]), "complex128")



@pytest.mark.parametrize("kind,shape,dtype,threads,copied", [
    ("fft", (1 << 16,), "complex128", 2, True),        # one contiguous long 1-D C2C, threaded: via the result
    ("fft", (1 << 16,), "complex128", 1, False),       # one thread: out of place already runs at its speed
    ("fft", (1 << 12,), "complex128", 2, False),       # short: the copy is not worth it
    ("fft", (4, 1 << 15), "complex64", 2, False),      # a batch
    ("rfft", (1 << 16,), "float64", 1, True),          # R2C: in place is faster even on one thread
    ("fft", (256, 256), "complex128", 2, False),       # 2-D
])
def test_long_1d_transforms_run_in_place_in_the_result(kind, shape, dtype, threads, copied):
    x = random_array(shape, dtype)
    x0 = x.copy()
    axes = [-1] if shape[0] == 4 else None
    with F.FFT(x, axes=axes, execution=cumath.ExecutionCPU(num_threads=threads), options=DFTI) as f:
        f.plan()
        plan = f._executor.backend
        assert bool(plan.copy_bytes) is copied
        assert plan.served_by(-1) == "dfti"
        ref = fft_ref(x, axes) if kind == "fft" else rfft_ref(x)
        for _ in range(2):  # the input is left as it was
            assert_close(f.execute(), ref, dtype)
            np.testing.assert_array_equal(x, x0)
        if kind == "fft":
            assert_close(f.execute(direction="inverse"), ifft_ref(x, axes), dtype)


def test_the_backward_real_transform_stays_out_of_place():
    from cumath.fft._backends.dfti import via_result

    dims = [(1 << 16, 1, 1)]
    assert via_result("C2R", dims, (1, 0, 0), None, False, 2, 16) == 0
    assert via_result("R2C", dims, (1, 0, 0), None, False, 2, 8) == 8 << 16
    assert via_result("C2C", dims, (1, 0, 0), None, True, 2, 16) == 0  # in place already


# ------------------------------------------------------------------- long R2C transforms as two halves (split_r2c)

@pytest.mark.parametrize("n,dtype", [(1 << 16, "float64"), (1 << 16, "float32"), (3 << 16, "float64"),
                                     ((1 << 16) + 4, "float32"), (5 * 7 * 11 * 13 * 4 * 4, "float64")])
def test_long_r2c_runs_as_two_halves(n, dtype):
    x = random_array((n,), dtype)
    x0 = x.copy()
    with F.FFT(x, execution=cumath.ExecutionCPU(num_threads=2), options={**DFTI, "fft_type": "R2C"}) as f:
        f.plan()
        plan = f._executor.backend
        assert plan.half == n // 2 and plan.copy_bytes == 0 and plan.served_by(-1) == "dfti"
        assert f.nbytes >= plan.nbytes > 0  # the two half spectra are the plan's
        outs = [f.execute() for _ in range(3)]
        for y in outs:
            assert y.shape == (n // 2 + 1,)
            assert_close(y, rfft_ref(x), dtype)
        np.testing.assert_array_equal(x, x0)  # the input is read, never written
        assert not np.shares_memory(outs[0], outs[1])


@pytest.mark.parametrize("n,threads,batch,step", [
    ((1 << 16) + 2, 2, 1, 1),   # n / 2 odd
    (1 << 15, 2, 1, 1),         # short
    (1 << 16, 1, 1, 1),         # one thread: a batch of halves gains nothing
    (1 << 16, 2, 2, 1),         # a batch
    (1 << 16, 2, 1, 2),         # a strided operand
])
def test_r2c_that_is_not_split(n, threads, batch, step):
    x = random_array((batch, n * step), "float64")[:, ::step]
    if batch == 1:
        x = x[0]
    with F.FFT(x, axes=[-1], execution=cumath.ExecutionCPU(num_threads=threads),
               options={**DFTI, "fft_type": "R2C"}) as f:
        f.plan()
        assert f._executor.backend.half == 0
        assert_close(f.execute(), rfft_ref(x, [-1]), "float64")


def test_the_last_pass_without_the_extension_equals_the_compiled_one(monkeypatch):
    from cumath.fft._backends import dfti

    n = 3 << 16
    x = random_array((n,), "float64")
    exec_ = cumath.ExecutionCPU(num_threads=2)
    with F.FFT(x, execution=exec_, options={**DFTI, "fft_type": "R2C"}) as f:
        f.plan()
        compiled = f.execute()
    monkeypatch.setattr(dfti, "KERNELS", {})
    with F.FFT(x, execution=exec_, options={**DFTI, "fft_type": "R2C"}) as f:
        f.plan()
        assert f._executor.backend._halves[2].table is None
        numpy_pass = f.execute()
    assert_close(numpy_pass, rfft_ref(x), "float64")
    np.testing.assert_allclose(numpy_pass, compiled, rtol=0, atol=1e-12 * np.abs(compiled).max())


def test_a_split_plan_shared_by_threads():
    """One stateful plan executed from several threads at once: the half spectra are taken one call at a time."""
    import threading

    n = 1 << 16
    xs = [random_array((n,), "float64") for _ in range(4)]
    with F.FFT(xs[0], execution=cumath.ExecutionCPU(num_threads=2), options={**DFTI, "fft_type": "R2C"}) as f:
        f.plan()
        execute = f._executor.execute
        results, errors = {}, []

        def run(i):
            from cumath._core.operand import wrap_operand

            try:
                for _ in range(5):
                    results[i] = execute(wrap_operand(xs[i], "operand"), -1, None)
            except Exception as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not errors
    for i, x in enumerate(xs):
        assert_close(results[i], rfft_ref(x), "float64")


def test_the_stateless_long_rfft_is_split_and_correct():
    from cumath.config import plan_cache

    plan_cache.clear()
    x = random_array((1 << 17,), "float32")
    for _ in range(2):
        assert_close(F.rfft(x, execution=cumath.ExecutionCPU(num_threads=2), options=DFTI), rfft_ref(x), "float32")
