"""Matmul algorithms: the Algorithm class, its safe persistence, validation, the autotuner and the persistent
autotune cache. CPU tests use synthetic 64-byte algorithms and fake library calls; GPU tests run the real thing."""

from __future__ import annotations

import ctypes
import json
import os
import pickle
import subprocess
import sys
import textwrap
import warnings

import pytest

from cumath import config
from cumath._bindings import cublaslt as lt
from cumath._bindings import cudart
from cumath.errors import CUBLASLtError
from cumath.linalg.advanced import _algorithms as A
from cumath.linalg.advanced import _autotune_cache as cache

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
ENV = {"cublaslt_version": 130102, "gpu_name": "NVIDIA H200", "compute_capability": [9, 0]}


def synthetic(seed: int = 1, **overrides) -> dict:
    """A saved-form dict of a made-up algorithm (random 64 bytes, plausible config and capabilities)."""
    raw = bytes((seed * 37 + i * 11) % 256 for i in range(64))
    config_ = {"algorithm_id": 66 + seed, "tile": 18, "split_k": 1, "reduction_scheme": 0, "cta_swizzling": 0,
               "custom_option": 0, "stages": 35, "inner_shape": 0, "cluster_shape": 2}
    caps = {name: 0 for name in A._CAP_FIELDS}
    caps.update(splitk_support=1, reduction_scheme_mask=3, cta_swizzling=1, tile_ids=[15, 18, 20],
                stages_ids=[35, 36], custom_option_max=2, epilogue_mask=0xFF, min_alignment_a=16)
    d = {"format": A.FORMAT, "version": A.FORMAT_VERSION, "algo": raw.hex(), "config": config_,
         "capabilities": caps, "workspace_size": 1024, "waves_count": 0.75, "measured_time_ms": None,
         "environment": dict(ENV)}
    for k, v in overrides.items():
        d[k] = v
    return d


@pytest.fixture
def fake_config_set(monkeypatch):
    """Replace the library's config setter: record the calls and write the id into the struct's first word."""
    calls = []

    def fake(algo, attr, value):
        calls.append((int(attr), int(value)))
        algo.data[7] = (int(attr) << 32) | int(value)

    monkeypatch.setattr(lt, "cublasLtMatmulAlgoConfigSetAttribute", fake)
    return calls


# ------------------------------------------------------------------------------------ saved form


def test_round_trip_dict_json_pickle():
    d = synthetic()
    alg = A.Algorithm.from_dict(d)
    assert bytes(alg.algo).hex() == d["algo"]
    assert alg.algorithm_id == 67 and alg.tile == (128, 64) and alg.stages == (64, 0)
    assert alg.cluster_shape == (1, 1, 1) and alg.split_k == 1 and alg.cta_swizzling is False
    assert alg.reduction_scheme is lt.cublasLtReductionScheme_t.CUBLASLT_REDUCTION_SCHEME_NONE
    assert alg.inner_shape is lt.cublasLtMatmulInnerShape_t.CUBLASLT_MATMUL_INNER_SHAPE_UNDEFINED
    assert alg.workspace_size == 1024 and alg.waves_count == 0.75 and alg.environment == ENV
    caps = alg.capabilities
    assert caps.tile_ids == (15, 18, 20) and caps.custom_option_max == 2 and caps.min_alignment_a == 16
    with pytest.raises(dataclass_frozen_error()):
        caps.splitk_support = 0
    out = alg.to_dict()
    assert out["readable"]["tile"] == [128, 64] and out["readable"]["reduction_scheme"] == "CUBLASLT_REDUCTION_SCHEME_NONE"
    assert out["config"] == d["config"] and out["algo"] == d["algo"]
    again = A.Algorithm.from_json(json.dumps(out))
    assert again == alg and again.to_dict() == out
    unpickled = pickle.loads(pickle.dumps(alg))
    assert unpickled == alg and unpickled.to_dict() == out and unpickled.capabilities == caps
    assert alg.copy() == alg and alg.copy() is not alg
    assert "id=67" in repr(alg) and "tile=(128, 64)" in repr(alg)
    assert A.Algorithm(alg) == alg  # copy constructor


def dataclass_frozen_error():
    import dataclasses

    return dataclasses.FrozenInstanceError


def test_readable_undefined_and_auto_values():
    d = synthetic()
    d["config"].update(tile=0, stages=0, cluster_shape=0, inner_shape=4, reduction_scheme=2)
    alg = A.Algorithm.from_dict(d)
    assert alg.tile is None and alg.stages is None and alg.cluster_shape is None
    assert alg.inner_shape == lt.CUBLASLT_MATMUL_INNER_SHAPE_MMA16816
    assert alg.reduction_scheme == lt.CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE
    d["config"].update(tile=50000)  # an id newer than the binding stays a number
    assert A.Algorithm.from_dict(d).tile == 50000


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda d: d.update(format="something"), "not a saved Algorithm"),
        (lambda d: d.update(version=99), "format version 99 is not supported"),
        (lambda d: d.update(algo="zz"), "no valid 'algo' hex string"),
        (lambda d: d.pop("algo"), "no valid 'algo' hex string"),
        (lambda d: d.update(algo="00" * 63), "holds 63 bytes, a cublasLtMatmulAlgo_t has 64"),
        (lambda d: d["config"].pop("tile"), "'config' must have the keys"),
        (lambda d: d["capabilities"].pop("tile_ids"), "'capabilities' must have the keys"),
        (lambda d: d["config"].update(tile="128x64"), r"config\['tile'\] = '128x64' is not an integer"),
        (lambda d: d["config"].update(split_k=True), r"config\['split_k'\] = True is not an integer"),
        (lambda d: d["capabilities"].update(tile_ids=[1, "x"]), r"capabilities\['tile_ids'\]"),
        (lambda d: d.update(environment="H200"), "'environment' must be a dict"),
    ],
)
def test_from_dict_rejects_malformed(mutate, message):
    d = synthetic()
    mutate(d)
    with pytest.raises(ValueError, match=message):
        A.Algorithm.from_dict(d)


def test_from_json_and_constructor_errors():
    with pytest.raises(ValueError, match="invalid JSON"):
        A.Algorithm.from_json("{nope")
    with pytest.raises(ValueError, match="not a saved Algorithm"):
        A.Algorithm.from_dict([1, 2])
    with pytest.raises(TypeError, match="Algorithm takes a cublasLtMatmulHeuristicResult_t or cublasLtMatmulAlgo_t"):
        A.Algorithm({"format": A.FORMAT})
    bad = lt.cublasLtMatmulHeuristicResult_t()
    bad.state = 15
    with pytest.raises(ValueError, match="state 15; it holds no usable algorithm"):
        A.Algorithm(bad)


# ------------------------------------------------------------------------------------- tunable fields


def test_setters_validate_and_write(fake_config_set):
    alg = A.Algorithm.from_dict(synthetic())
    alg.tile = (64, 64)
    assert alg.tile == (64, 64) and fake_config_set[-1] == (int(lt.CUBLASLT_ALGO_CONFIG_TILE_ID), 15)
    alg.tile = 20
    assert alg.tile == (128, 128)
    alg.stages = lt.CUBLASLT_MATMUL_STAGES_128xAUTO
    assert alg.stages == (128, 0)
    alg.split_k = 4
    alg.reduction_scheme = lt.CUBLASLT_REDUCTION_SCHEME_INPLACE
    alg.cta_swizzling = True
    alg.custom_option = 2
    alg.inner_shape = lt.CUBLASLT_MATMUL_INNER_SHAPE_MMA1688
    alg.cluster_shape = (2, 1, 1)
    assert (alg.split_k, alg.reduction_scheme, alg.cta_swizzling, alg.custom_option) == (4, 1, True, 2)
    assert alg.inner_shape == 3 and alg.cluster_shape == (2, 1, 1)
    alg.cluster_shape = None
    assert alg.cluster_shape is None
    assert len(fake_config_set) == 10
    saved = A.Algorithm.from_dict(alg.to_dict())  # the new settings and bytes are part of the saved form
    assert saved.tile == (128, 128) and saved.split_k == 4 and bytes(saved.algo) == bytes(alg.algo)


@pytest.mark.parametrize(
    "field, value, error, message",
    [
        ("tile", (256, 128), ValueError, r"tile \(256, 128\) is not supported by algorithm 67; allowed: \(64, 64\), "
                                         r"\(128, 64\), \(128, 128\)"),
        ("tile", (3, 5), ValueError, r"tile \(3, 5\) is not a cublasLtMatmulTile_t shape"),
        ("tile", "128x64", TypeError, "tile takes an int or a shape tuple"),
        ("stages", (64, 3), ValueError, r"stages \(64, 3\) are not supported by algorithm 67; allowed: \(64, 0\)"),
        ("split_k", 0, ValueError, "split_k must be at least 1, got 0"),
        ("split_k", 2.5, TypeError, "split_k takes an int"),
        ("reduction_scheme", 4, ValueError, "reduction_scheme 4 is not supported by algorithm 67; allowed: "
                                            "CUBLASLT_REDUCTION_SCHEME_NONE, CUBLASLT_REDUCTION_SCHEME_INPLACE"),
        ("cta_swizzling", 2, ValueError, r"cta_swizzling is a flag"),
        ("custom_option", 3, ValueError, r"custom_option 3 is out of range for algorithm 67: 0..2"),
        ("inner_shape", 9, ValueError, "inner_shape 9 is not one of CUBLASLT_MATMUL_INNER_SHAPE_UNDEFINED"),
        ("cluster_shape", (3, 3, 3), ValueError, "is not a cublasLtClusterShape_t shape"),
        ("cluster_shape", 1, ValueError, "cluster_shape 1 is not a cublasLtClusterShape_t value"),
    ],
)
def test_setter_errors(fake_config_set, field, value, error, message):
    alg = A.Algorithm.from_dict(synthetic())
    before = alg.to_dict()
    with pytest.raises(error, match=message):
        setattr(alg, field, value)
    assert alg.to_dict() == before and fake_config_set == []


def test_capability_gated_setters(fake_config_set):
    d = synthetic()
    d["capabilities"].update(splitk_support=0, cta_swizzling=0, tile_ids=[], stages_ids=[])
    alg = A.Algorithm.from_dict(d)
    with pytest.raises(ValueError, match="does not support split-k"):
        alg.split_k = 2
    alg.split_k = 1
    with pytest.raises(ValueError, match="does not support CTA swizzling"):
        alg.cta_swizzling = 1
    alg.cta_swizzling = False
    alg.tile = None  # UNDEFINED is allowed where no tile ids are listed
    with pytest.raises(ValueError, match=r"allowed: \(none\)"):
        alg.tile = (64, 64)
    with pytest.raises(AttributeError):
        alg.algorithm_id = 5
    with pytest.raises(AttributeError):
        alg.capabilities = None


# ----------------------------------------------------------------------------------- save and load


def test_save_and_load(tmp_path):
    algs = [A.Algorithm.from_dict(synthetic(i)) for i in range(3)]
    algs[1].measured_time = 0.125
    path = tmp_path / "algs.json"
    A.save_algorithms(path, algs)
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".tmp-")]
    loaded = A.load_algorithms(path, environment=ENV)
    assert loaded == algs and loaded[1].measured_time == 0.125
    assert A.load_algorithms(str(path), environment={**ENV, "compute_capability": (9, 0)}) == algs
    # a file holding one Algorithm dict is accepted too
    (tmp_path / "one.json").write_text(algs[0].to_json())
    assert A.load_algorithms(tmp_path / "one.json", environment=ENV) == algs[:1]


@pytest.mark.parametrize(
    "env, message",
    [
        ({**ENV, "cublaslt_version": 130200}, r"saved for another setup: cublaslt_version differs \(saved 130102, "
                                              r"here 130200\)"),
        ({**ENV, "gpu_name": "NVIDIA B200"}, "gpu_name differs"),
        ({**ENV, "compute_capability": [10, 0]}, "compute_capability differs"),
    ],
)
def test_load_rejects_other_environment(tmp_path, env, message):
    path = tmp_path / "algs.json"
    A.save_algorithms(path, [A.Algorithm.from_dict(synthetic())])
    with pytest.raises(ValueError, match=message):
        A.load_algorithms(path, environment=env)
    assert len(A.load_algorithms(path, check_environment=False)) == 1


def test_load_errors(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ValueError, match="invalid JSON"):
        A.load_algorithms(bad, environment=ENV)
    bad.write_text(json.dumps({"algorithms": []}))
    with pytest.raises(ValueError, match="not a file written by save_algorithms"):
        A.load_algorithms(bad, environment=ENV)
    no_env = A.Algorithm.from_dict(synthetic(environment=None))
    A.save_algorithms(bad, [no_env])
    with pytest.raises(ValueError, match="records no environment"):
        A.load_algorithms(bad, environment=ENV)
    with pytest.raises(TypeError, match="save_algorithms takes Algorithm objects, got dict"):
        A.save_algorithms(bad, [synthetic()])


# ------------------------------------------------------------------------------------------- check


def test_check_algorithm(monkeypatch):
    alg = A.Algorithm.from_dict(synthetic())

    def ok(h, desc, a, b, c, d, algo):
        assert bytes(algo) == bytes(alg.algo) and (h, desc, a, b, c, d) == (1, 2, 3, 4, 5, 6)
        r = lt.cublasLtMatmulHeuristicResult_t()
        r.workspaceSize, r.wavesCount = 4096, 1.5
        return r

    monkeypatch.setattr(lt, "cublasLtMatmulAlgoCheck", ok)
    r = A.check_algorithm(1, 2, 3, 4, 5, 6, alg)
    assert r.workspaceSize == 4096 and alg.workspace_size == 4096 and alg.waves_count == 1.5

    def fail(*args):
        raise CUBLASLtError(15, "CUBLAS_STATUS_NOT_SUPPORTED")

    monkeypatch.setattr(lt, "cublasLtMatmulAlgoCheck", fail)
    with pytest.raises(ValueError, match=r"algorithm 67 \(tile \(128, 64\), stages \(64, 0\)\) cannot run this matmul "
                                         r"on this GPU: cublasLtMatmulAlgoCheck returned CUBLAS_STATUS_NOT_SUPPORTED"):
        A.check_algorithm(1, 2, 3, 4, 5, 6, alg)
    with pytest.raises(TypeError, match="check_algorithm takes an Algorithm"):
        A.check_algorithm(1, 2, 3, 4, 5, 6, synthetic())


# ---------------------------------------------------------------------------------------- autotune


@pytest.fixture
def fake_events(monkeypatch):
    """CUDA events over a fake GPU clock (ms) that run_one advances."""
    clock = {"now": 0.0, "recorded": {}, "created": 0, "destroyed": 0}

    def create(flags=0):
        clock["created"] += 1
        return 1000 + clock["created"]

    def destroy(ev):
        clock["destroyed"] += 1

    def record(ev, stream=0):
        clock["recorded"][ev] = clock["now"]

    monkeypatch.setattr(cudart, "cudaEventCreateWithFlags", create)
    monkeypatch.setattr(cudart, "cudaEventDestroy", destroy)
    monkeypatch.setattr(cudart, "cudaEventRecord", record)
    monkeypatch.setattr(cudart, "cudaEventSynchronize", lambda ev: None)
    monkeypatch.setattr(cudart, "cudaStreamSynchronize", lambda s: None)
    monkeypatch.setattr(cudart, "cudaEventElapsedTime",
                        lambda a, b: clock["recorded"][b] - clock["recorded"][a])
    return clock


def test_autotune_orders_by_measured_time(fake_events, caplog):
    algs = [A.Algorithm.from_dict(synthetic(i)) for i in range(4)]
    cost = {algs[0]: 3.0, algs[1]: 1.0, algs[2]: None, algs[3]: 2.0}  # algs[2] fails to run
    runs = []

    def run_one(alg):
        runs.append(alg.algorithm_id)
        if cost[alg] is None:
            raise CUBLASLtError(15, "CUBLAS_STATUS_NOT_SUPPORTED")
        fake_events["now"] += cost[alg]

    with caplog.at_level("INFO", logger="cumath.linalg.advanced._algorithms"):
        result = A.autotune(run_one, algs, iterations=3, stream=7)
    assert [a.algorithm_id for a in result] == [67, 69, 66]
    assert [a.measured_time for a in result] == [1.0, 2.0, 3.0]
    assert algs[2].measured_time is None
    assert runs.count(66) == 4  # one warm-up and three timed runs
    assert fake_events["created"] == fake_events["destroyed"] == 4
    assert "failed to run (CUBLAS_STATUS_NOT_SUPPORTED)" in caplog.text
    assert "best is algorithm 67" in caplog.text and "algorithm 68 failed" in caplog.text
    assert A.autotune(run_one, [algs[0], algs[1], algs[3]], iterations=2, prune=1) == [algs[1]]


def test_autotune_argument_errors(fake_events):
    with pytest.raises(ValueError, match="iterations must be at least 1, got 0"):
        A.autotune(lambda a: None, [], iterations=0)
    with pytest.raises(ValueError, match="prune must be None or at least 1, got 0"):
        A.autotune(lambda a: None, [], prune=0)

    def boom(alg):
        raise RuntimeError("user error")

    with pytest.raises(RuntimeError, match="user error"):
        A.autotune(boom, [A.Algorithm.from_dict(synthetic())], iterations=2)
    assert fake_events["created"] == fake_events["destroyed"] == 3  # events released on the way out


# ----------------------------------------------------------------------------------- autotune cache


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("CUMATH_CACHE_DIR", str(tmp_path))
    cache.clear(memory_only=True)
    yield tmp_path
    cache.clear(memory_only=True)


def test_cache_switch(monkeypatch):
    monkeypatch.setattr(config, "matmul_autotune_cache", None)
    monkeypatch.delenv(cache.ENV_VAR, raising=False)
    assert cache.enabled() is False
    monkeypatch.setenv(cache.ENV_VAR, "1")
    assert cache.enabled() is True
    monkeypatch.setenv(cache.ENV_VAR, "off")
    assert cache.enabled() is False
    monkeypatch.setattr(config, "matmul_autotune_cache", True)
    assert cache.enabled() is True
    monkeypatch.setenv(cache.ENV_VAR, "1")
    monkeypatch.setattr(config, "matmul_autotune_cache", False)
    assert cache.enabled() is False


KEY = ("float32", "float32", (10_000_000, 10), (10, 40), "row", "row", "DEFAULT", 1.5, None, True)


def test_cache_store_and_lookup(cache_dir):
    alg = A.Algorithm.from_dict(synthetic())
    assert cache.lookup(KEY, environment=ENV) is None
    assert cache.store(KEY, alg, 0.9, environment=ENV) is True
    files = list((cache_dir / "matmul-autotune").rglob("*.json"))
    assert len(files) == 1 and files[0].name == cache.problem_digest(KEY) + ".json"
    assert "NVIDIA-H200-sm90-cublaslt130102" in str(files[0])
    hit = cache.lookup(KEY, environment=ENV)
    assert hit == alg and hit is not alg and hit.measured_time == 0.9
    hit.measured_time = 123.0  # a caller's changes do not leak into the cache
    assert cache.lookup(KEY, environment=ENV).measured_time == 0.9
    # a slower result does not replace a faster one; a faster one does
    slower = A.Algorithm.from_dict(synthetic(2))
    assert cache.store(KEY, slower, 1.5, environment=ENV) is False
    assert cache.lookup(KEY, environment=ENV) == alg
    faster = A.Algorithm.from_dict(synthetic(3))
    faster.measured_time = 0.5
    assert cache.store(KEY, faster, environment=ENV) is True
    assert cache.lookup(KEY, environment=ENV) == faster
    cache.clear(memory_only=True)
    assert cache.lookup(KEY, environment=ENV) == faster  # from disk
    # keys: another problem, another GPU, another library version
    assert cache.lookup(KEY[:-1] + (False,), environment=ENV) is None
    assert cache.lookup(KEY, environment={**ENV, "gpu_name": "NVIDIA B200"}) is None
    assert cache.lookup(KEY, environment={**ENV, "cublaslt_version": 130200}) is None
    assert cache.lookup("a plain string key", environment=ENV) is None
    cache.clear()
    assert cache.lookup(KEY, environment=ENV) is None
    assert not list((cache_dir / "matmul-autotune").rglob("*.json"))


def test_cache_key_and_argument_errors(cache_dir):
    assert cache.problem_digest((1, 2.0, "x")) == cache.problem_digest([1, 2.0, "x"])
    assert cache.problem_digest((1, 2)) != cache.problem_digest((1, 2.0))
    assert cache.problem_digest(float("inf")) != cache.problem_digest(float("nan"))
    with pytest.raises(TypeError, match=r"problem_key\[1\] must hold only str, int, float, bool, None"):
        cache.lookup(("float32", {"m": 1}), environment=ENV)
    alg = A.Algorithm.from_dict(synthetic())
    with pytest.raises(ValueError, match="store needs a measured time in ms"):
        cache.store(KEY, alg, environment=ENV)
    with pytest.raises(ValueError, match="store needs a measured time"):
        cache.store(KEY, alg, float("nan"), environment=ENV)
    with pytest.raises(TypeError, match="store takes an Algorithm"):
        cache.store(KEY, synthetic(), 1.0, environment=ENV)


@pytest.mark.parametrize(
    "content, message",
    [
        ("{broken", "unreadable"),
        (json.dumps({"format": "other"}), "unknown format"),
        (None, "another problem"),
        ("[]", "ignoring the matmul autotune cache file"),
    ],
)
def test_cache_ignores_corrupt_files(cache_dir, content, message):
    path = os.path.join(cache.cache_folder(ENV), cache.problem_digest(KEY) + ".json")
    if content is None:  # a valid entry for another key, under this key's name
        cache.store(("other",), A.Algorithm.from_dict(synthetic()), 1.0, environment=ENV)
        content = open(os.path.join(cache.cache_folder(ENV), cache.problem_digest(("other",)) + ".json")).read()
        cache.clear(memory_only=True)
    with open(path, "w") as f:
        f.write(content)
    with pytest.warns(RuntimeWarning, match=message):
        assert cache.lookup(KEY, environment=ENV) is None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert cache.store(KEY, A.Algorithm.from_dict(synthetic()), 2.0, environment=ENV) is True  # replaced
    assert cache.lookup(KEY, environment=ENV).measured_time == 2.0


_CHILD = textwrap.dedent(
    """
    import json, sys
    from tests.linalg.advanced.test_algorithms import synthetic, ENV, KEY
    from cumath.linalg.advanced import _algorithms as A, _autotune_cache as cache
    mode, seed, t = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    if mode == "store":
        for _ in range(20):
            cache.store(KEY, A.Algorithm.from_dict(synthetic(seed)), t, environment=ENV)
            cache.clear(memory_only=True)
    hit = cache.lookup(KEY, environment=ENV)
    print(json.dumps(None if hit is None else [hit.algorithm_id, hit.measured_time]))
    """
)


def _child(cache_dir, *args, wait=True):
    env = dict(os.environ, CUMATH_CACHE_DIR=str(cache_dir),
               PYTHONPATH=REPO_ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.Popen([sys.executable, "-W", "error::RuntimeWarning", "-c", _CHILD, *map(str, args)],
                         cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return p if not wait else _result(p)


def _result(p):
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    return json.loads(out)


def test_cache_across_processes(cache_dir):
    assert _child(cache_dir, "lookup", 0, 0) is None
    assert _child(cache_dir, "store", 4, 0.75) == [70, 0.75]
    assert _child(cache_dir, "lookup", 0, 0) == [70, 0.75]
    # concurrent writers: every reader sees a whole file, and the fastest entry wins
    procs = [_child(cache_dir, "store", seed, t, wait=False) for seed, t in ((1, 0.9), (2, 0.3), (3, 0.6), (5, 0.5))]
    for p in procs:
        assert _result(p) is not None
    assert _child(cache_dir, "lookup", 0, 0) == [68, 0.3]
    folder = cache.cache_folder(ENV)
    assert [f for f in os.listdir(folder) if f.startswith(".tmp-")] == []


# --------------------------------------------------------------------------------------------- GPU


class _Problem:
    """A float32 column-major D = alpha A @ B + beta C on the GPU, with its descriptors."""

    def __init__(self, np, m=257, n=129, k=67):
        rng = np.random.default_rng(11)
        self.np = np
        self.a = np.asfortranarray(rng.standard_normal((m, k)), dtype=np.float32)
        self.b = np.asfortranarray(rng.standard_normal((k, n)), dtype=np.float32)
        self.c = np.asfortranarray(rng.standard_normal((m, n)), dtype=np.float32)
        self.ptrs = []
        for x in (self.a, self.b, self.c):
            p = cudart.cudaMalloc(x.nbytes)
            cudart.cudaMemcpy(p, x.ctypes.data, x.nbytes, cudart.cudaMemcpyKind.cudaMemcpyHostToDevice)
            self.ptrs.append(p)
        self.d = cudart.cudaMalloc(self.c.nbytes)
        self.ws_size = 32 << 20
        self.ws = cudart.cudaMalloc(self.ws_size)
        R32 = cudart.cudaDataType.CUDA_R_32F
        self.handle = lt.cublasLtCreate()
        self.desc = lt.cublasLtMatmulDescCreate(lt.CUBLAS_COMPUTE_32F, R32)
        self.layouts = [lt.cublasLtMatrixLayoutCreate(R32, r, c, r) for r, c in ((m, k), (k, n), (m, n), (m, n))]
        self.alpha, self.beta = ctypes.c_float(1.5), ctypes.c_float(0.5)
        self.stream = cudart.cudaStreamCreateWithFlags(cudart.cudaStreamNonBlocking)

    def heuristics(self, count=8):
        pref = lt.cublasLtMatmulPreferenceCreate()
        try:
            lt.cublasLtMatmulPreferenceSetAttribute(pref, lt.CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, self.ws_size)
            return lt.cublasLtMatmulAlgoGetHeuristic(self.handle, self.desc, *self.layouts, pref, count)
        finally:
            lt.cublasLtMatmulPreferenceDestroy(pref)

    def run(self, alg):
        L = self.layouts
        lt.cublasLtMatmul(self.handle, self.desc, ctypes.addressof(self.alpha), self.ptrs[0], L[0], self.ptrs[1], L[1],
                          ctypes.addressof(self.beta), self.ptrs[2], L[2], self.d, L[3], alg.algo, self.ws,
                          self.ws_size, self.stream)

    def error(self):
        np = self.np
        cudart.cudaStreamSynchronize(self.stream)
        out = np.empty(self.c.shape, dtype=np.float32, order="F")
        cudart.cudaMemcpy(out.ctypes.data, self.d, out.nbytes, cudart.cudaMemcpyKind.cudaMemcpyDeviceToHost)
        ref = 1.5 * self.a.astype(np.float64) @ self.b.astype(np.float64) + 0.5 * self.c
        return np.linalg.norm(out - ref) / np.linalg.norm(ref)

    def free(self):
        for lay in self.layouts:
            lt.cublasLtMatrixLayoutDestroy(lay)
        lt.cublasLtMatmulDescDestroy(self.desc)
        lt.cublasLtDestroy(self.handle)
        cudart.cudaStreamDestroy(self.stream)
        for p in self.ptrs + [self.d, self.ws]:
            cudart.cudaFree(p)


@pytest.fixture
def problem(cuda_device):
    np = pytest.importorskip("numpy")
    from cumath.errors import LibraryNotFoundError

    try:
        lt.cublasLtGetVersion()
    except LibraryNotFoundError as exc:
        pytest.skip(str(exc))
    p = _Problem(np)
    yield p
    p.free()


@pytest.mark.gpu
def test_gpu_heuristic_save_load_check_run(problem, tmp_path):
    results = problem.heuristics()
    algs = [A.Algorithm(r) for r in results]
    assert algs and all(a.environment == A.current_environment() for a in algs)
    first = algs[0]
    assert first.algorithm_id >= 0 and first.workspace_size == results[0].workspaceSize
    assert first.tile is None or first._config["tile"] in first.capabilities.tile_ids
    path = tmp_path / "algs.json"
    A.save_algorithms(path, algs)
    loaded = A.load_algorithms(path)
    assert loaded == algs
    for alg in loaded:
        r = A.check_algorithm(problem.handle, problem.desc, *problem.layouts, alg)
        assert r.state == 0 and alg.workspace_size <= problem.ws_size
        problem.run(alg)
        assert problem.error() < 1e-5, alg
    # a tunable field through the library: split-k where supported, checked and run
    alg = loaded[0].copy()
    if alg.capabilities.splitk_support:
        alg.split_k = 2
        if alg.capabilities.reduction_scheme_mask & 2:
            alg.reduction_scheme = lt.CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE
        assert lt.cublasLtMatmulAlgoConfigGetAttribute(alg.algo, lt.CUBLASLT_ALGO_CONFIG_SPLITK_NUM) == 2
        try:
            A.check_algorithm(problem.handle, problem.desc, *problem.layouts, alg)
        except ValueError:
            pass  # allowed: the reason is in the message
        else:
            if alg.workspace_size <= problem.ws_size:
                problem.run(alg)
                assert problem.error() < 1e-5
    # an algorithm for other types does not fit: a clear ValueError
    R64 = cudart.cudaDataType.CUDA_R_64F
    ids = lt.cublasLtMatmulAlgoGetIds(problem.handle, lt.CUBLAS_COMPUTE_64F, R64, R64, R64, R64, R64)
    other = A.Algorithm(lt.cublasLtMatmulAlgoInit(problem.handle, lt.CUBLAS_COMPUTE_64F, R64, R64, R64, R64, R64,
                                                  ids[0]))
    with pytest.raises(ValueError, match="cannot run this matmul on this GPU: cublasLtMatmulAlgoCheck returned"):
        A.check_algorithm(problem.handle, problem.desc, *problem.layouts, other)


@pytest.mark.gpu
def test_gpu_autotune_and_cache(problem, cache_dir):
    algs = [A.Algorithm(r) for r in problem.heuristics(8)]
    ranked = A.autotune(problem.run, algs, iterations=5, stream=problem.stream)
    assert ranked and all(a.measured_time > 0 for a in ranked)
    assert [a.measured_time for a in ranked] == sorted(a.measured_time for a in ranked)
    assert problem.error() < 1e-5
    assert len(A.autotune(problem.run, algs, iterations=2, prune=2, stream=problem.stream)) == min(2, len(ranked))
    key = ("test", problem.a.shape, problem.b.shape, "float32", "col")
    assert cache.store(key, ranked[0]) is True
    cache.clear(memory_only=True)
    hit = cache.lookup(key)
    assert hit == ranked[0]
    A.check_algorithm(problem.handle, problem.desc, *problem.layouts, hit)
    problem.run(hit)
    assert problem.error() < 1e-5
