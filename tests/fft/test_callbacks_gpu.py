"""FFT callbacks on the GPU: Python prologs and epilogs compiled by numba-cuda, fused into cuFFT or run as
separate passes (``callback_fusion``), for C2C, R2C and C2R, single and double precision, 1-D (batched),
2-D (batched) and 3-D, with user data indexed by the callback's offset, against NumPy float64 references;
the layouts the callbacks see (strided ones included); the 'auto' choice and its log; the plan cache with
callbacks; the LTO-IR and linked-pass disk caches. Skipped without a GPU, CuPy or numba-cuda."""

from __future__ import annotations

import functools
import logging
import os
import subprocess
import sys
import time

import numpy as np
import pytest

import cumath.fft as F
from cumath.config import plan_cache
from cumath.fft._callbacks import expected_element
from helpers.matrix import hermitian_array, random_array
from helpers.reference import assert_close, fft_ref, irfft_ref, rfft_ref

pytestmark = pytest.mark.gpu

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REAL_OF = {"complex64": "float32", "complex128": "float64", "float32": "float32", "float64": "float64"}
COMPLEX_OF = {"float32": "complex64", "float64": "complex128"}


@pytest.fixture(autouse=True)
def _needs(cufft_device):
    pytest.importorskip("cupy")
    from cumath._core.numba_compat import numba_cuda_version

    if numba_cuda_version() is None:
        pytest.skip("numba-cuda is not installed")


def weight_load(data_in, offset, user_info, unused):
    return data_in[offset] * user_info[offset]


def weight_store(data_out, offset, element, user_info, unused):
    data_out[offset] = element * user_info[offset]


@functools.cache
def ltoir(kind, element_dtype):
    if kind == "prolog":
        return F.compile_prolog(weight_load, element_dtype, REAL_OF[element_dtype])
    return F.compile_epilog(weight_store, element_dtype, REAL_OF[element_dtype])


def place(values, layout):
    """A flat CuPy buffer with ``values`` (a NumPy array of ``layout.shape``) where the callback's offset
    (sum of index * stride) finds them."""
    import cupy as cp

    shape, strides = layout
    assert tuple(shape) == values.shape
    idx = np.indices(shape).reshape(len(shape), -1)
    offsets = (idx * np.asarray(strides)[:, None]).sum(axis=0)
    flat = np.zeros(int(offsets.max()) + 1, dtype=values.dtype)
    flat[offsets] = values.ravel()
    return cp.asarray(flat)


def even_weights(shape, axes, dtype):
    """Real weights that keep a Hermitian C2R input Hermitian: even in every transformed frequency (a product
    of cosines), times a factor per batch position."""
    w = np.ones(shape)
    nd = len(shape)
    for k, a in enumerate(axes):
        n = shape[a] if k < len(axes) - 1 else 2 * (shape[a] - 1)
        f = 1.0 + 0.5 * np.cos(2 * np.pi * np.arange(shape[a]) / n)
        w = w * f.reshape([-1 if i == a else 1 for i in range(nd)])
    for b in (i for i in range(nd) if i not in axes):
        w = w * (1.0 + 0.1 * np.arange(shape[b])).reshape([-1 if i == b else 1 for i in range(nd)])
    return w.astype(dtype)


CASES = {"1d": ((8, 210), (-1,)), "2d": ((3, 24, 17), (-2, -1)), "3d": ((6, 10, 12), None)}
# every case run as separate passes; the fused path (checked before the option existed) on the 2-D case
FUSION_CASES = [(f, c) for c in CASES for f in ("separate", "fused") if f == "separate" or c == "2d"]


def _transform(fft_type, values, axes):
    return {"C2C": fft_ref, "R2C": rfft_ref, "C2R": irfft_ref}[fft_type](values, axes)


@pytest.mark.parametrize("fusion, case", FUSION_CASES)
@pytest.mark.parametrize("precision", ["float32", "float64"])
@pytest.mark.parametrize("fft_type", ["C2C", "R2C", "C2R"])
@pytest.mark.parametrize("kind", ["prolog", "epilog"])
def test_callback_with_user_data(kind, fft_type, precision, fusion, case):
    import cupy as cp

    shape, axes = CASES[case]
    norm_axes = tuple(range(len(shape))) if axes is None else tuple(a % len(shape) for a in axes)
    cdtype = COMPLEX_OF[precision]
    if fft_type == "C2R":
        x = hermitian_array(shape, cdtype, axes)
    else:
        x = random_array(shape, cdtype if fft_type == "C2C" else precision)
    xd = cp.asarray(x)
    with F.FFT(xd, axes=axes, options={"fft_type": fft_type, "callback_fusion": fusion}) as f:
        if kind == "prolog":
            layout = f.get_input_layout()
            w = (even_weights(shape, norm_axes, precision) if fft_type == "C2R"
                 else 0.5 + random_array(shape, precision))
            ref = _transform(fft_type, x.astype(np.complex128 if fft_type != "R2C" else np.float64) * w, axes)
        else:
            layout = f.get_output_layout()
            w = 0.5 + random_array(layout.shape, precision)
            ref = _transform(fft_type, x, axes) * w
        elem = expected_element(kind, fft_type, precision)
        data = place(w, layout)
        f.plan(**{kind: F.DeviceCallable(ltoir(kind, elem), data=data)})
        y = f.execute()
        cp.cuda.Device().synchronize()
    assert_close(cp.asnumpy(y), ref, cdtype if fft_type != "C2R" else precision)
    assert np.array_equal(cp.asnumpy(xd), x)  # the operand is never overwritten (C2R's included)


def test_prolog_and_epilog_together_stateless_and_cached():
    import cupy as cp

    x = random_array((16, 64), "complex64")
    win = 0.5 + random_array((16, 64), "float32")
    wout = 0.5 + random_array((16, 64), "float32")
    d_in, d_out = cp.asarray(win.ravel()), cp.asarray(wout.ravel())
    pro = {"ltoir": ltoir("prolog", "complex64"), "data": d_in.data.ptr}
    epi = F.DeviceCallable(ltoir("epilog", "complex64"), data=d_out)
    plan_cache.clear()
    plan_cache.reset_stats()
    xd = cp.asarray(x)
    y1 = F.fft(xd, axes=[-1], prolog=pro, epilog=epi)
    y2 = F.fft(xd, axes=[-1], prolog=dict(pro), epilog=F.DeviceCallable(ltoir("epilog", "complex64"), data=d_out))
    stats = plan_cache.stats()
    assert stats["misses"] == 1 and stats["hits"] == 1, stats
    ref = fft_ref(x * win, (-1,)) * wout
    assert_close(cp.asnumpy(y1), ref, "complex64")
    assert_close(cp.asnumpy(y2), ref, "complex64")
    F.fft(xd, axes=[-1], prolog={"ltoir": pro["ltoir"], "data": d_out.data.ptr}, epilog=epi)  # other data: new plan
    assert plan_cache.stats()["misses"] == 2
    y3 = F.fft(xd, axes=[-1])  # and without callbacks: a plan of its own
    assert_close(cp.asnumpy(y3), fft_ref(x, (-1,)), "complex64")
    assert plan_cache.stats()["misses"] == 3


@pytest.mark.parametrize("fusion", ["fused", "separate"])
def test_layout_with_batch_axis_innermost(fusion):
    import cupy as cp

    base = random_array((4, 6, 8), "complex64")
    xd = cp.ascontiguousarray(cp.asarray(base).transpose(1, 2, 0)).transpose(2, 0, 1)  # strides (1, 32, 4)
    w = 0.5 + random_array((4, 6, 8), "float32")
    with F.FFT(xd, axes=(1, 2), options={"callback_fusion": fusion}) as f:
        lin, lout = f.get_input_layout(), f.get_output_layout()
        assert lin == ((4, 6, 8), (1, 32, 4))  # cuFFT reads the operand as it is
        assert lout == ((4, 6, 8), (48, 8, 1))  # the optimized result layout
        f.plan(prolog=F.DeviceCallable(ltoir("prolog", "complex64"), data=place(w, lin)),
               epilog=F.DeviceCallable(ltoir("epilog", "complex64"), data=place(w, lout)))
        y = f.execute()
    assert_close(cp.asnumpy(y), fft_ref(base * w, (1, 2)) * w, "complex64")


@pytest.mark.parametrize("fusion", ["fused", "separate"])
def test_host_operand_executed_on_gpu_inplace_and_replanning(fusion):
    import cupy as cp

    x = random_array((5, 96), "complex128")
    w = 0.5 + random_array((5, 96), "float64")
    d = cp.asarray(w.ravel())
    opts = {"callback_fusion": fusion}
    y = F.fft(x, axes=[-1], execution="cuda", options=opts,
              epilog=F.DeviceCallable(ltoir("epilog", "complex128"), data=d))
    assert isinstance(y, np.ndarray)
    assert_close(y, fft_ref(x, (-1,)) * w, "complex128")
    y = F.fft(x, axes=[-1], execution="cuda", options=opts,
              prolog=F.DeviceCallable(ltoir("prolog", "complex128"), data=d))
    assert_close(y, fft_ref(x * w, (-1,)), "complex128")
    xd = cp.asarray(x)
    with F.FFT(xd, axes=[-1], options={"inplace": True, **opts}) as f:
        f.plan(prolog=F.DeviceCallable(ltoir("prolog", "complex128"), data=d))
        f.execute()
        assert_close(cp.asnumpy(xd), fft_ref(x * w, (-1,)), "complex128")
        f.plan()  # planning again without callbacks replaces the plan
        f.reset_operand(cp.asarray(x))
        assert_close(cp.asnumpy(f.execute()), fft_ref(x, (-1,)), "complex128")


@pytest.mark.parametrize("fusion", ["fused", "separate"])
def test_c2r_overwrite_input_with_prolog(fusion):
    import cupy as cp

    x = hermitian_array((4, 33), "complex64", (-1,))
    w = even_weights((4, 33), (1,), "float32")
    xd = cp.asarray(x)
    with F.FFT(xd, axes=[-1], options={"fft_type": "C2R", "overwrite_input": True, "callback_fusion": fusion}) as f:
        lin = f.get_input_layout()
        assert lin == ((4, 33), (33, 1))
        f.plan(prolog=F.DeviceCallable(ltoir("prolog", "complex64"), data=place(w, lin)))
        y = f.execute()
    assert_close(cp.asnumpy(y), irfft_ref(x * w, (-1,)), "float32")


def test_misaligned_r2c_with_callbacks_is_refused():
    import cupy as cp

    base = cp.asarray(random_array((65,), "float32"))
    epi = ltoir("epilog", "complex64")
    with F.FFT(base[1:], options={"fft_type": "R2C"}) as f:  # 4-byte aligned, cuFFT needs 8
        f.plan(epilog=epi)
        with pytest.raises(ValueError, match="not aligned"):
            f.execute()


def test_element_type_mismatch_on_gpu():
    import cupy as cp

    with F.FFT(cp.asarray(random_array((32,), "float64"))) as f:
        with pytest.raises(ValueError, match="element_dtype='complex128'"):
            f.plan(epilog=ltoir("epilog", "complex64"))


COMPAT = r"""
import numpy as np
import cumath.fft as F
def weight_load(data_in, offset, user_info, unused):
    return data_in[offset] * user_info[offset]
F.compile_prolog(weight_load, "complex64", "float32")
print(getattr(np, "row_stack", None) is np.vstack, np.__version__)
"""


def test_numpy_compat_step_applied(tmp_path):
    """A callback compiled by numba-cuda (a fresh process with an empty cache folder: a hit of the disk cache
    would not import numba-cuda at all) works with NumPy 2.5, which removed ``row_stack``: the compatibility step
    put it back (see cumath/_core/numba_compat.py)."""
    import os
    import subprocess
    import sys

    env = dict(os.environ, CUMATH_CACHE_DIR=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", COMPAT], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    aliased, version = out.stdout.split()
    if tuple(int(v) for v in version.split(".")[:2]) >= (2, 5):
        assert aliased == "True"


SECOND = r"""
import sys, time
import cupy as cp, numpy as np
x = cp.asarray(np.arange(64, dtype=np.complex64) + 1j)  # the process uses the GPU anyway: CUDA is up
w = cp.full(64, 2.0, dtype=cp.float32)
t0 = time.perf_counter()
import cumath.fft as F
t1 = time.perf_counter()
def weight_store(data_out, offset, element, user_info, unused):
    data_out[offset] = element * user_info[offset]
t2 = time.perf_counter()
ir = F.compile_epilog(weight_store, "complex64", "float32")
t3 = time.perf_counter()
numba = any(m.split(".")[0] in ("numba", "numba_cuda") for m in sys.modules)
y = F.fft(x, epilog=F.DeviceCallable(ir, data=w))
err = float(cp.abs(y - 2 * cp.fft.fft(x)).max() / cp.abs(cp.fft.fft(x)).max())
print(ir.symbol, t3 - t2, numba, err, t1 - t0)
"""


def test_second_process_loads_from_disk(capsys):
    ir = ltoir("epilog", "complex64")
    out = subprocess.run([sys.executable, "-c", SECOND], capture_output=True, text=True, cwd=ROOT,
                         env=dict(os.environ, PYTHONPATH=ROOT))
    assert out.returncode == 0, out.stderr
    symbol, seconds, numba_loaded, err, import_s = out.stdout.split()
    with capsys.disabled():
        print(f"\n[callbacks] second process: compile_epilog from the disk cache in {1e3 * float(seconds):.1f} ms "
              f"(import cumath.fft {1e3 * float(import_s):.0f} ms)")
    assert symbol == ir.symbol and numba_loaded == "False"
    assert float(seconds) < 0.05
    assert float(err) < 1e-5


def test_first_compile_and_plan_times(capsys):
    t0 = time.perf_counter()

    def fresh(data_out, offset, element, user_info, unused):
        data_out[offset] = element * 3.0 + 1.0

    import cupy as cp

    ir = F.compile_epilog(fresh, "complex64", None)
    t1 = time.perf_counter()
    x = cp.asarray(random_array((1024,), "complex64"))
    with F.FFT(x) as f:
        f.plan(epilog=ir)
        t2 = time.perf_counter()
        y = f.execute()
    assert_close(cp.asnumpy(y), fft_ref(cp.asnumpy(x)) * 3.0 + 1.0, "complex64")
    with capsys.disabled():
        print(f"\n[callbacks] compile {t1 - t0:.3f} s, plan with callback {t2 - t1:.3f} s")


def test_plain_bytes_recognised_by_content():
    import cupy as cp

    ir = ltoir("epilog", "complex64")  # numba's LTO-IR does not show the symbol's name (seen on the H200)
    x = random_array((4, 32), "complex64")
    w = cp.full(4 * 32, 2.0, dtype=cp.float32)
    y = F.fft(cp.asarray(x), axes=[-1], epilog={"ltoir": bytes(ir), "data": w.data.ptr})  # no metadata
    assert_close(cp.asnumpy(y), fft_ref(x, (-1,)) * 2.0, "complex64")


def test_separate_passes_over_strided_layouts():
    """A sliced operand (rows 40 apart, 33 used): the prolog walks the operand's strided layout into a dense
    buffer; in place, the epilog walks the same strided layout of the result."""
    import cupy as cp

    base = random_array((6, 40), "complex64")
    w = 0.5 + random_array((6, 33), "float32")
    v = 0.5 + random_array((6, 33), "float32")
    big = cp.asarray(base)
    xd = big[:, :33]
    with F.FFT(xd, axes=[-1], options={"callback_fusion": "separate", "inplace": True}) as f:
        lin, lout = f.get_input_layout(), f.get_output_layout()
        assert lin == ((6, 33), (40, 1)) and lout == lin
        f.plan(prolog=F.DeviceCallable(ltoir("prolog", "complex64"), data=place(w, lin)),
               epilog=F.DeviceCallable(ltoir("epilog", "complex64"), data=place(v, lout)))
        f.execute()
    assert_close(cp.asnumpy(xd), fft_ref(base[:, :33] * w, (-1,)) * v, "complex64")
    assert np.array_equal(cp.asnumpy(big[:, 33:]), base[:, 33:])  # the gaps are left alone


def test_auto_choice_is_logged_and_both_ways_agree(caplog):
    import cupy as cp

    small = cp.asarray(random_array((8, 64), "complex64"))
    long = cp.asarray(random_array((2, 1 << 20), "complex64"))
    epi = ltoir("epilog", "complex64")
    for x, expected in ((small, "run as a separate pass"), (long, "fused into cuFFT")):
        w = cp.asarray(0.5 + random_array((x.size,), "float32"))
        results = {}
        for fusion in ("auto", "fused", "separate"):
            caplog.clear()
            with caplog.at_level(logging.INFO, logger="cumath"):
                with F.FFT(x, axes=[-1], options={"callback_fusion": fusion}) as f:
                    f.plan(epilog=F.DeviceCallable(epi, data=w))
                    results[fusion] = cp.asnumpy(f.execute())
            if fusion == "auto":
                assert expected in caplog.text, caplog.text
        ref = fft_ref(cp.asnumpy(x), (-1,)) * cp.asnumpy(w).reshape(x.shape)
        for fusion, y in results.items():
            assert_close(y, ref, "complex64")


def test_linked_pass_is_cached_on_disk():
    import cupy as cp

    from cumath._core import jit

    x = cp.asarray(random_array((4, 32), "complex64"))
    with F.FFT(x, axes=[-1], options={"callback_fusion": "separate"}) as f:
        f.plan(epilog=F.DeviceCallable(ltoir("epilog", "complex64"), data=cp.ones(128, cp.float32)))
        key = f._executor.passes.epilog.kernel.key
        assert os.path.exists(jit.STORE.path(key))
        assert_close(cp.asnumpy(f.execute()), fft_ref(cp.asnumpy(x), (-1,)), "complex64")
