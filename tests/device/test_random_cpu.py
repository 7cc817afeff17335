"""cumath.device.random on the CPU: the shim and its table, state layouts from the header, host helpers, the
compile cache, and kernels typed and linked for sm_90 without a GPU."""

import json
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from cumath._core import jit
from cumath.device import random
from cumath.device.random import _shim as cd

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ELF = b"\x7fELF"
# sizeof/alignof of the state types in CUDA 13.0's curand_kernel.h (cuRAND 10.4)
KNOWN_LAYOUTS = {"xorwow": (48, 8), "philox": (64, 16), "mrg": (48, 8), "sobol32": (140, 4),
                 "scrambled_sobol32": (140, 4), "sobol64": (536, 8), "scrambled_sobol64": (536, 8)}
PUBLIC = ["init", "rand", "rand4", "uniform", "uniform_double", "uniform2_double", "uniform4", "uniform4_double",
          "normal", "normal_double", "normal2", "normal2_double", "normal4", "normal4_double", "log_normal",
          "log_normal_double", "log_normal2", "log_normal2_double", "log_normal4", "log_normal4_double", "poisson",
          "poisson4", "skipahead", "skipahead_sequence", "skipahead_subsequence"]


def test_public_names():
    for name in PUBLIC:
        stub = getattr(random, name)
        assert stub.__name__ == name and name in random.__all__
    assert "StatesPhilox4_32_10" in random.__all__
    assert set(random.normal4.generators) == {"philox"}
    assert set(random.uniform.generators) == set(cd.GENERATORS)
    assert set(random.skipahead_subsequence.generators) == {"mrg"}
    with pytest.raises(TypeError, match="random.normal4 is a device function"):
        random.normal4(None)


def test_shim_source_has_one_function_per_table_entry():
    src = cd.shim_source()
    names = re.findall(r"void (cumath_curand_\w+)\(", src)
    expected = {cd.symbol(f.name, g) for f in cd.FUNCTIONS for g in f.generators}
    assert len(names) == len(set(names)) == len(expected) and set(names) == expected
    assert "void cumath_curand_normal4_philox(curandStatePhilox4_32_10_t* s, float* out) " \
           "{ auto r = curand_normal4(s); out[0] = r.x; out[1] = r.y; out[2] = r.z; out[3] = r.w; }" in src
    assert "cumath_curand_init_scrambled_sobol64(curandStateScrambledSobol64_t* s, unsigned long long* " \
           "direction_vectors, unsigned long long scramble_c, unsigned long long offset)" in src
    assert cd.shim_source() == src  # deterministic: part of the cache key


def test_shim_compiles_and_exports_every_symbol(curand_headers):
    options = cd.OPTIONS + ("-rdc=true",)  # keep unreferenced functions
    ptx = jit.compile_source(cd.shim_source(), cc=(9, 0), output="ptx", options=options,
                             include_dirs=curand_headers).data.decode()
    for f in cd.FUNCTIONS:
        for g in f.generators:
            assert f".func {cd.symbol(f.name, g)}(" in ptx
    lto = cd.compile_shim((9, 0), curand_headers)
    assert lto.kind == "ltoir" and lto.data[:4] == b"\xed\x43\x4e\x7f"


def test_state_layouts_from_the_header(curand_headers):
    assert cd.state_layouts((9, 0), curand_headers) == KNOWN_LAYOUTS
    from cumath.device.random._states import state_dtype

    assert cd.state_layouts() == KNOWN_LAYOUTS
    for gen, (size, align) in KNOWN_LAYOUTS.items():
        dt = state_dtype(gen)
        assert dt.itemsize == size and dt.names == ("cumath_curand_" + gen,)


def test_missing_headers_name_the_wheels(monkeypatch, tmp_path):
    monkeypatch.setattr(jit, "include_roots", lambda: [str(tmp_path)])
    with pytest.raises(FileNotFoundError, match=r"curand_kernel.h \(pip install nvidia-curand\).*cumath\[dx\]"):
        cd.include_dirs()


def test_compile_validation_and_files(curand_headers):
    with pytest.raises(ValueError, match=r"cc='sm_9x' is not a compute capability"):
        random.Compile(cc="sm_9x")
    c = random.Compile(cc=90)
    assert c.cc == (9, 0) and repr(c) == "random.Compile(cc=(9, 0))"
    (path,) = c.files
    assert path.endswith("-curand.ltoir") and os.path.isfile(path)
    assert random.Compile(cc=(9, 0)).files == [path]
    assert random.Compile(cc=80).files != [path]
    (ext,) = c.extension
    assert ext.prepare_args("ty", 5) == ("ty", 5)


def test_clear_cache_forgets_the_shim_files(curand_headers, tmp_path):
    """After clear_cache(disk=True) the shim is generated again: no link file that the clearing removed."""
    code = textwrap.dedent("""
        import os, cumath.device as dev
        from cumath.device import random
        before = random.Compile(cc=90).files
        dev.clear_cache(disk=True)
        assert not any(os.path.exists(f) for f in before)
        after = random.Compile(cc=90).files
        assert all(os.path.isfile(f) for f in after), after
        print("ok")
    """)
    env = dict(os.environ, CUMATH_CACHE_DIR=str(tmp_path),
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0 and res.stdout.strip() == "ok", res.stderr[-2000:]


def test_device_functions_pickle_by_name():
    import pickle

    assert pickle.loads(pickle.dumps(random.normal4)) is random.normal4


_CHILD = textwrap.dedent("""
    import json, sys, time
    from cumath._core import jit
    if sys.argv[1] == "forbid":
        def refuse(*a, **k):
            raise AssertionError("compiled again")
        jit._nvrtc_compile = refuse
    t0 = time.perf_counter()
    from cumath.device import random
    from cumath.device.random._shim import state_layouts
    files = random.Compile(cc=90).files
    print(json.dumps({"files": files, "layouts": state_layouts(), "seconds": time.perf_counter() - t0}))
""")


def test_second_process_reuses_the_shim(curand_headers, tmp_path):
    env = dict(os.environ, CUMATH_CACHE_DIR=str(tmp_path),
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    runs = []
    for mode in ("compile", "forbid"):
        res = subprocess.run([sys.executable, "-c", _CHILD, mode], env=env, capture_output=True, text=True,
                             timeout=300)
        assert res.returncode == 0, res.stderr
        runs.append(json.loads(res.stdout.strip().splitlines()[-1]))
    assert runs[0]["files"] == runs[1]["files"] and runs[0]["layouts"] == runs[1]["layouts"]


# ------------------------------------------------------------------------------------------------ helpers

def _curand_host():
    from cumath.errors import LibraryNotFoundError

    try:
        from cumath._bindings import curand

        curand.curandGetVersion()
    except (LibraryNotFoundError, OSError) as exc:
        pytest.skip(f"libcurand is not available: {exc}")


def test_direction_vectors_and_scramble_constants():
    _curand_host()
    h = random.random_helpers
    v32 = h.get_direction_vectors32(h.DirectionVectorSet.DIRECTION_VECTORS_32_JOEKUO6, 3)
    assert v32.shape == (3, 32) and v32.dtype == np.uint32
    assert list(v32[0]) == [1 << (31 - i) for i in range(32)]  # dimension 0: the van der Corput sequence
    v64 = h.get_direction_vectors64(h.DirectionVectorSet.DIRECTION_VECTORS_64_JOEKUO6, 2)
    assert v64.shape == (2, 64) and v64.dtype == np.uint64 and int(v64[0, 0]) == 1 << 63
    s32, s64 = h.get_scramble_constants32(5), h.get_scramble_constants64(5)
    assert s32.dtype == np.uint32 and s64.dtype == np.uint64 and len(set(s32.tolist())) == 5
    assert h.get_direction_vectors32(102, 1).shape == (1, 32)  # a plain int names the set too


@pytest.mark.parametrize("call, exc, message", [
    (lambda h: h.get_direction_vectors32(h.DirectionVectorSet.DIRECTION_VECTORS_64_JOEKUO6, 2), ValueError,
     r"holds 64-bit vectors; use get_direction_vectors64\(\)"),
    (lambda h: h.get_direction_vectors32(7, 2), ValueError, "set=7 is not a direction-vector set"),
    (lambda h: h.get_scramble_constants32(20001), ValueError, "cuRAND's tables have 20000 dimensions"),
    (lambda h: h.get_scramble_constants64(0), ValueError, "n=0 must be at least 1"),
    (lambda h: h.get_scramble_constants64(2.5), TypeError, "n must be an integer"),
])
def test_helper_errors(call, exc, message):
    with pytest.raises(exc, match=message):
        call(random.random_helpers)


# ------------------------------------------------------------------------------------------------ kernels

def _state_array(gen):
    from numba.cuda import types
    from numba.cuda.np.numpy_support import from_dtype

    from cumath.device.random._states import state_dtype

    return types.Array(from_dtype(state_dtype(gen)), 1, "C")


def test_state_dtype_from_a_class_or_a_name(curand_headers):
    for cls, gen in ((random.StatesPhilox4_32_10, "philox"), (random.StatesXORWOW, "xorwow"),
                     (random.StatesScrambledSobol64, "scrambled_sobol64")):
        assert random.state_dtype(cls) == random.state_dtype(gen)
        assert random.state_dtype(cls).itemsize == KNOWN_LAYOUTS[gen][0]


@pytest.mark.parametrize("arg", ["philox4", 3, None])
def test_state_dtype_rejects_unknown_generators(curand_headers, arg):
    with pytest.raises(ValueError, match=r"unknown generator .*expected a States class or one of \['mrg'"):
        random.state_dtype(arg)


def test_local_state_kernel_links(curand_headers, link_cubin):
    """The register idiom (a local copy of the state, stored back) types and links for sm_90."""
    from numba import cuda, types

    state_dt = random.state_dtype(random.StatesPhilox4_32_10)

    def draw(states, out):
        i = cuda.grid(1)
        st = cuda.local.array(1, dtype=state_dt)
        st[0] = states[i]
        for k in range(4):
            out[i, k] = random.normal4(st[0]).x
        states[i] = st[0]

    assert link_cubin(draw, (_state_array("philox"), types.float32[:, :]))[:4] == ELF


def test_gbm_kernels_link(curand_headers, link_cubin):
    import math

    from numba import cuda, types

    def init_rng(states, seed):
        i = cuda.grid(1)
        random.init(seed, i, 0, states[i])

    def gbm(states, paths, nsteps, mu, sigma, s0):
        i = cuda.grid(1)
        if i >= paths.shape[0]:
            return
        paths[i, 0] = s0
        for t in range(1, nsteps, 4):
            v = random.normal4(states[i])
            vals = v.x, v.y, v.z, v.w
            for j in range(t, min(t + 4, nsteps)):
                paths[i, j] = paths[i, j - 1] * math.exp(mu + sigma * vals[j - t])

    states = _state_array("philox")
    assert link_cubin(init_rng, (states, types.int64))[:4] == ELF
    sig = (states, types.float32[:, :], types.int64, types.float32, types.float32, types.float32)
    assert link_cubin(gbm, sig)[:4] == ELF


def test_every_function_types_for_every_generator(curand_headers, numba_cuda):
    """One kernel per generator calling everything cuRAND offers for it: typed and compiled to PTX."""
    from numba import cuda, types

    def pseudo(states, out, dv):
        i = cuda.grid(1)
        s = states[i]
        random.init(1234, i, 0, s)
        out[0] = random.rand(s) + random.uniform(s) + random.uniform_double(s) + random.normal(s)
        out[1] = random.normal_double(s) + random.normal2(s).y + random.normal2_double(s).x
        out[2] = random.log_normal(s, 0.0, 1.0) + random.log_normal_double(s, 0.0, 1.0)
        out[3] = random.log_normal2(s, 0.0, 1.0).x + random.log_normal2_double(s, 0.0, 1.0).y + random.poisson(s, 4.0)
        random.skipahead(10, s)
        random.skipahead_sequence(1, s)

    def philox_only(states, out, dv):
        s = states[0]
        out[0] = random.rand4(s).w + random.uniform4(s).z + random.uniform2_double(s).y + random.normal4(s).x
        out[1] = random.normal4_double(s).w + random.log_normal4(s, 1.0, 2.0).y + random.poisson4(s, 2.5).z
        out[2] = random.uniform4_double(s).x + random.log_normal4_double(s, 0.0, 0.5).z

    def mrg_only(states, out, dv):
        random.skipahead_subsequence(3, states[0])

    def sobol(states, out, dv):
        i = cuda.grid(1)
        random.init(dv[i], 7, states[i])
        out[0] = random.rand(states[i]) + random.uniform(states[i]) + random.normal_double(states[i])
        out[1] = random.log_normal(states[i], 0.0, 1.0) + random.poisson(states[i], 1.5)
        random.skipahead(5, states[i])

    def scrambled(states, out, dv):
        i = cuda.grid(1)
        random.init(dv[i], 99, 7, states[i])
        out[0] = random.rand(states[i]) + random.uniform_double(states[i])

    cases = [(pseudo, g, types.uint32) for g in ("xorwow", "philox", "mrg")]
    cases += [(philox_only, "philox", types.uint32), (mrg_only, "mrg", types.uint32),
              (sobol, "sobol32", types.uint32), (sobol, "sobol64", types.uint64),
              (scrambled, "scrambled_sobol32", types.uint32), (scrambled, "scrambled_sobol64", types.uint64)]
    for kernel, gen, vtype in cases:
        sig = (_state_array(gen), types.float64[::1], types.Array(vtype, 2, "C"))
        ptx, _ = cuda.compile(kernel, sig, cc=(9, 0), output="ptx", abi="numba")
        assert "cumath_curand_" in ptx, (kernel.__name__, gen)


def _typing_error(kernel, sig):
    from numba import cuda

    with pytest.raises(Exception) as info:
        cuda.compile(kernel, sig, cc=(9, 0), output="ptx", abi="numba")
    assert type(info.value).__name__ == "TypingError", info.value
    return str(info.value)


def test_wrong_calls_are_typing_errors(curand_headers, numba_cuda):
    from numba import cuda, types

    def normal4_on_xorwow(states, out):
        out[0] = random.normal4(states[0]).x

    def missing_argument(states, out):
        out[0] = random.log_normal(states[0], 1.0)

    def not_a_state(states, out):
        out[0] = random.uniform(out[0])

    def float_seed(states, out):
        random.init(1.5, 0, 0, states[0])

    sig = (_state_array("xorwow"), types.float64[::1])
    assert "random.normal4() is not available for xorwow states; it takes states of philox" in \
        _typing_error(normal4_on_xorwow, sig)
    assert "takes 2 argument(s) besides the state (mean, stddev), 1 given" in _typing_error(missing_argument, sig)
    assert "the state argument must be an element of a random.States* array" in _typing_error(not_a_state, sig)
    assert "seed must be an integer, not float64" in _typing_error(float_seed, sig)
    with pytest.raises(Exception) as info:
        cuda.compile(normal4_on_xorwow, sig, cc=(9, 0), output="ptx", abi="numba")
    assert "normal4" in str(info.value)
