"""cuBLASLt matmul algorithms: the public ``Algorithm`` class, safe persistence, the check and the autotuner.

How to use (for the Matmul operation)
-------------------------------------
- ``Algorithm(result)`` wraps a ``cublasLtMatmulHeuristicResult_t`` from
  ``cublaslt.cublasLtMatmulAlgoGetHeuristic`` (reads its config and capabilities through the library once);
  ``alg.algo`` is the ``cublasLtMatmulAlgo_t`` struct to pass to ``cublasLtMatmul``; ``alg.workspace_size``
  the bytes of workspace it needs.
- Tunable fields (``tile``, ``stages``, ``split_k``, ``reduction_scheme``, ``cta_swizzling``, ``custom_option``,
  ``inner_shape``, ``cluster_shape``) are properties; setting one is validated against ``alg.capabilities``
  (``ValueError`` naming the allowed values) and written into the struct. ``algorithm_id`` is read-only.
- Persistence without pickle: ``alg.to_dict()`` / ``Algorithm.from_dict(d)`` (the 64 bytes as hex plus readable
  fields and the environment: cuBLASLt version, GPU name and compute capability), ``to_json``/``from_json``,
  ``save_algorithms(path, algs)`` / ``load_algorithms(path)``. ``pickle`` works too (``__reduce__`` goes through
  ``to_dict``). Loading checks the environment against the current one (``ValueError`` on a mismatch unless
  ``check_environment=False``).
- ``check_algorithm(handle, desc, a_layout, b_layout, c_layout, d_layout, alg)`` runs
  ``cublasLtMatmulAlgoCheck`` for the planned problem: returns the result struct (and updates
  ``alg.workspace_size`` / ``alg.waves_count``), or raises ``ValueError`` saying why the algorithm does not fit.
- ``autotune(run_one, algorithms, iterations=10, prune=None, stream=0)``: ``run_one(alg)`` launches one matmul
  with ``alg`` on ``stream``; every algorithm is timed with CUDA events (median of ``iterations`` runs after one
  warm-up), the time is recorded in ``alg.measured_time`` (ms) and the list comes back fastest first (algorithms
  that fail to run are dropped, with an INFO log).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import dataclasses
import json
import logging
import os
import statistics

from ..._bindings import cublaslt as lt
from ..._core.disk_cache import atomic_write
from ...errors import CUBLASLtError

if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "Algorithm",
    "AlgorithmCapabilities",
    "check_algorithm",
    "autotune",
    "save_algorithms",
    "load_algorithms",
    "current_environment",
]

logger = logging.getLogger(__name__)

FORMAT = "cumath.linalg.advanced.Algorithm"
FORMAT_VERSION = 1
_ALGO_BYTES = 64

# ------------------------------------------------------------------------------------------ capabilities

# AlgorithmCapabilities field -> cuBLASLt capability attribute (names follow nvmath-python's dataclass).
_CAP_FIELDS = {
    "splitk_support": lt.CUBLASLT_ALGO_CAP_SPLITK_SUPPORT,
    "reduction_scheme_mask": lt.CUBLASLT_ALGO_CAP_REDUCTION_SCHEME_MASK,
    "cta_swizzling": lt.CUBLASLT_ALGO_CAP_CTA_SWIZZLING_SUPPORT,
    "strided_batch_support": lt.CUBLASLT_ALGO_CAP_STRIDED_BATCH_SUPPORT,
    "out_of_place_result_support": lt.CUBLASLT_ALGO_CAP_OUT_OF_PLACE_RESULT_SUPPORT,
    "uplo_support": lt.CUBLASLT_ALGO_CAP_UPLO_SUPPORT,
    "tile_ids": lt.CUBLASLT_ALGO_CAP_TILE_IDS,
    "custom_option_max": lt.CUBLASLT_ALGO_CAP_CUSTOM_OPTION_MAX,
    "custom_memory_order": lt.CUBLASLT_ALGO_CAP_CUSTOM_MEMORY_ORDER,
    "pointer_mode_mask": lt.CUBLASLT_ALGO_CAP_POINTER_MODE_MASK,
    "epilogue_mask": lt.CUBLASLT_ALGO_CAP_EPILOGUE_MASK,
    "stages_ids": lt.CUBLASLT_ALGO_CAP_STAGES_IDS,
    "ld_negative": lt.CUBLASLT_ALGO_CAP_LD_NEGATIVE,
    "numerical_impl_flags": lt.CUBLASLT_ALGO_CAP_NUMERICAL_IMPL_FLAGS,
    "min_alignment_a": lt.CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_A_BYTES,
    "min_alignment_b": lt.CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_B_BYTES,
    "min_alignment_c": lt.CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_C_BYTES,
    "min_alignment_d": lt.CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_D_BYTES,
    "pointer_array_batch_support": lt.CUBLASLT_ALGO_CAP_POINTER_ARRAY_BATCH_SUPPORT,
    "floating_point_emulation_support": lt.CUBLASLT_ALGO_CAP_FLOATING_POINT_EMULATION_SUPPORT,
}
_ARRAY_CAPS = ("tile_ids", "stages_ids")

AlgorithmCapabilities = dataclasses.make_dataclass(
    "AlgorithmCapabilities",
    [(name, tuple if name in _ARRAY_CAPS else int) for name in _CAP_FIELDS],
    frozen=True,
)
AlgorithmCapabilities.__module__ = __name__  # make_dataclass(module=) needs Python 3.12
AlgorithmCapabilities.__doc__ = (
    "The capabilities of a cuBLASLt algorithm (read-only), one field per CUBLASLT_ALGO_CAP_* attribute; "
    "tile_ids and stages_ids are tuples of cublasLtMatmulTile_t / cublasLtMatmulStages_t values."
)


def _read_capabilities(algo) -> AlgorithmCapabilities:
    values = {}
    for name, attr in _CAP_FIELDS.items():
        try:
            v = lt.cublasLtMatmulAlgoCapGetAttribute(algo, attr)
        except CUBLASLtError:  # an attribute the loaded library does not know
            v = [] if name in _ARRAY_CAPS else 0
        values[name] = tuple(v) if name in _ARRAY_CAPS else int(v)
    return AlgorithmCapabilities(**values)


# ---------------------------------------------------------------------------- config: ids <-> readable

# Algorithm property -> (config attribute, enum of the stored id or None for a plain int)
_CONFIG_FIELDS = {
    "algorithm_id": (lt.CUBLASLT_ALGO_CONFIG_ID, None),
    "tile": (lt.CUBLASLT_ALGO_CONFIG_TILE_ID, lt.cublasLtMatmulTile_t),
    "split_k": (lt.CUBLASLT_ALGO_CONFIG_SPLITK_NUM, None),
    "reduction_scheme": (lt.CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, lt.cublasLtReductionScheme_t),
    "cta_swizzling": (lt.CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, None),
    "custom_option": (lt.CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, None),
    "stages": (lt.CUBLASLT_ALGO_CONFIG_STAGES_ID, lt.cublasLtMatmulStages_t),
    "inner_shape": (lt.CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID, lt.cublasLtMatmulInnerShape_t),
    "cluster_shape": (lt.CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, lt.cublasLtClusterShape_t),
}


def _shape_of(member, prefix: str):
    """``CUBLASLT_MATMUL_TILE_128x64`` -> (128, 64); ``..._STAGES_64xAUTO`` -> (64, 0); UNDEFINED/AUTO -> None."""
    parts = member.name[len(prefix):].split("x")
    if len(parts) < 2:
        return None
    return tuple(0 if p == "AUTO" else int(p) for p in parts)


_SHAPE_PREFIX = {
    lt.cublasLtMatmulTile_t: "CUBLASLT_MATMUL_TILE_",
    lt.cublasLtMatmulStages_t: "CUBLASLT_MATMUL_STAGES_",
    lt.cublasLtClusterShape_t: "CUBLASLT_CLUSTER_SHAPE_",
}
_ID_OF_SHAPE = {e: {_shape_of(m, p): int(m) for m in e} for e, p in _SHAPE_PREFIX.items()}


def _readable(field: str, value: int):
    enum_ = _CONFIG_FIELDS[field][1]
    if enum_ is None:
        return int(value)
    if enum_ in _SHAPE_PREFIX:
        try:
            return _shape_of(enum_(value), _SHAPE_PREFIX[enum_])
        except ValueError:  # an id newer than the binding: keep the number
            return int(value)
    try:
        return enum_(value)
    except ValueError:
        return int(value)


def _to_id(field: str, value) -> int:
    """The config id for a value given as an id, an enum member, a shape tuple or None (UNDEFINED/AUTO)."""
    enum_ = _CONFIG_FIELDS[field][1]
    if enum_ in _SHAPE_PREFIX:
        if value is None or isinstance(value, (tuple, list)):
            key = None if value is None else tuple(int(v) for v in value)
            try:
                return _ID_OF_SHAPE[enum_][key]
            except KeyError:
                raise ValueError(f"{field} {value!r} is not a {enum_.__name__} shape") from None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{field} takes an int{' or a shape tuple' if enum_ in _SHAPE_PREFIX else ''}, got {value!r}")
    return int(value)


# ------------------------------------------------------------------------------------------ environment

_environment_cache: dict[int, dict] = {}


def current_environment(device_id: int | None = None) -> dict:
    """``{"cublaslt_version", "gpu_name", "compute_capability"}`` of the current (or given) GPU; cached."""
    from ..._bindings import cudart

    if device_id is None:
        device_id = cudart.cudaGetDevice()
    env = _environment_cache.get(device_id)
    if env is None:
        attr = cudart.cudaDeviceAttr
        cc = [cudart.cudaDeviceGetAttribute(attr.cudaDevAttrComputeCapabilityMajor, device_id),
              cudart.cudaDeviceGetAttribute(attr.cudaDevAttrComputeCapabilityMinor, device_id)]
        env = {"cublaslt_version": int(lt.cublasLtGetVersion()), "gpu_name": cudart.cudaGetDeviceName(device_id),
               "compute_capability": cc}
        _environment_cache[device_id] = env
    return dict(env)


def _same_environment(saved: dict, current: dict) -> str | None:
    """None when an algorithm saved under ``saved`` may be used under ``current``; else the reason why not."""
    for key in ("cublaslt_version", "gpu_name", "compute_capability"):
        a, b = saved.get(key), current.get(key)
        if key == "compute_capability":
            a, b = list(a or []), list(b or [])
        if a != b:
            return f"{key} differs (saved {a!r}, here {b!r})"
    return None


# ------------------------------------------------------------------------------------------- Algorithm


class Algorithm:
    """A cuBLASLt matmul algorithm: its capabilities and tunable configuration.

    Objects come from ``Matmul.plan()`` (or ``Algorithm(heuristic_result)``) and from saved forms
    (``Algorithm.from_dict``, ``load_algorithms``); they are passed back through ``Matmul.plan(algorithms=...)``
    or ``Matmul.execute(algorithm=...)``. Example::

        algs = mm.plan()
        best = mm.autotune(iterations=5)[0]        # the Algorithm objects carry measured_time
        save_algorithms("algs.json", [best])       # JSON, no pickle
        mm2.plan(algorithms=load_algorithms("algs.json"))
    """

    __slots__ = ("_algo", "_config", "_capabilities", "workspace_size", "waves_count", "measured_time",
                 "environment", "__weakref__")

    def __init__(self, algorithm: Algorithm, *, environment: dict | None = None) -> None:
        if isinstance(algorithm, Algorithm):
            self._init_from(algorithm.to_dict())
            return
        if isinstance(algorithm, lt.cublasLtMatmulHeuristicResult_t):
            if algorithm.state != 0:
                raise ValueError(f"the heuristic result has state {algorithm.state}; it holds no usable algorithm")
            algo = lt.cublasLtMatmulAlgo_t.from_bytes(bytes(algorithm.algo))
            workspace, waves = int(algorithm.workspaceSize), float(algorithm.wavesCount)
        elif isinstance(algorithm, lt.cublasLtMatmulAlgo_t):
            algo, workspace, waves = lt.cublasLtMatmulAlgo_t.from_bytes(bytes(algorithm)), 0, 0.0
        else:
            raise TypeError(
                "Algorithm takes a cublasLtMatmulHeuristicResult_t or cublasLtMatmulAlgo_t (use Algorithm.from_dict "
                f"for a saved form), got {type(algorithm).__name__}"
            )
        self._algo = algo
        self._config = {f: int(lt.cublasLtMatmulAlgoConfigGetAttribute(algo, a)) for f, (a, _) in _CONFIG_FIELDS.items()}
        self._capabilities = _read_capabilities(algo)
        self.workspace_size = workspace
        self.waves_count = waves
        self.measured_time = None
        self.environment = dict(environment) if environment is not None else _try_environment()

    # ---------------------------------------------------------------------------- read-only fields

    @property
    def algo(self) -> "lt.cublasLtMatmulAlgo_t":
        """The ``cublasLtMatmulAlgo_t`` struct to pass to ``cublasLtMatmul`` (do not modify it directly)."""
        return self._algo

    @property
    def algorithm_id(self) -> int:
        """The ID of the algorithm (integer)."""
        return self._config["algorithm_id"]

    @property
    def capabilities(self) -> AlgorithmCapabilities:
        """The capabilities of this algorithm (a frozen ``AlgorithmCapabilities`` dataclass)."""
        return self._capabilities

    # ------------------------------------------------------------------------------ tunable fields

    def _set(self, field: str, config_id: int) -> None:
        attr = _CONFIG_FIELDS[field][0]
        lt.cublasLtMatmulAlgoConfigSetAttribute(self._algo, attr, config_id)
        self._config[field] = int(config_id)

    @property
    def tile(self) -> Any:
        """The tile as ``(rows, cols)`` (None when undefined); settable to one of ``capabilities.tile_ids``
        (as an id or a shape)."""
        return _readable("tile", self._config["tile"])

    @tile.setter
    def tile(self, value):
        tid = _to_id("tile", value)
        allowed = self._capabilities.tile_ids
        if tid not in allowed and not (tid == 0 and not allowed):
            raise ValueError(f"tile {value!r} is not supported by algorithm {self.algorithm_id}; allowed: "
                             f"{_names(allowed, 'tile')}")
        self._set("tile", tid)

    @property
    def stages(self) -> Any:
        """The stages as ``(size, count)`` (count 0 when chosen automatically; None when undefined); settable to one
        of ``capabilities.stages_ids``."""
        return _readable("stages", self._config["stages"])

    @stages.setter
    def stages(self, value):
        sid = _to_id("stages", value)
        allowed = self._capabilities.stages_ids
        if sid not in allowed and not (sid == 0 and not allowed):
            raise ValueError(f"stages {value!r} are not supported by algorithm {self.algorithm_id}; allowed: "
                             f"{_names(allowed, 'stages')}")
        self._set("stages", sid)

    @property
    def split_k(self) -> int:
        """The number of split-k steps; more than 1 only where ``capabilities.splitk_support`` is set."""
        return self._config["split_k"]

    @split_k.setter
    def split_k(self, value):
        v = _to_id("split_k", value)
        if v < 1:
            raise ValueError(f"split_k must be at least 1, got {v}")
        if v > 1 and not self._capabilities.splitk_support:
            raise ValueError(f"algorithm {self.algorithm_id} does not support split-k (splitk_support is 0); "
                             "split_k must be 1")
        self._set("split_k", v)

    @property
    def reduction_scheme(self) -> Any:
        """The split-k reduction scheme (a ``cublasLtReductionScheme_t``); one allowed by
        ``capabilities.reduction_scheme_mask``."""
        return _readable("reduction_scheme", self._config["reduction_scheme"])

    @reduction_scheme.setter
    def reduction_scheme(self, value):
        v = _to_id("reduction_scheme", value)
        mask = self._capabilities.reduction_scheme_mask
        allowed = [0] + [int(s) for s in (1, 2, 4) if s & mask]
        if v not in allowed:
            names = ", ".join(lt.cublasLtReductionScheme_t(s).name for s in allowed)
            raise ValueError(f"reduction_scheme {value!r} is not supported by algorithm {self.algorithm_id}; "
                             f"allowed: {names}")
        self._set("reduction_scheme", v)

    @property
    def cta_swizzling(self) -> bool:
        """Whether CTA swizzling is on; can be turned on only where ``capabilities.cta_swizzling`` is 1."""
        return bool(self._config["cta_swizzling"])

    @cta_swizzling.setter
    def cta_swizzling(self, value):
        if value not in (0, 1, True, False):
            raise ValueError(f"cta_swizzling is a flag (True/False, 0/1), got {value!r}")
        if value and self._capabilities.cta_swizzling != 1:
            raise ValueError(f"algorithm {self.algorithm_id} does not support CTA swizzling")
        self._set("cta_swizzling", int(bool(value)))

    @property
    def custom_option(self) -> int:
        """The custom option, from 0 to ``capabilities.custom_option_max``."""
        return self._config["custom_option"]

    @custom_option.setter
    def custom_option(self, value):
        v = _to_id("custom_option", value)
        top = self._capabilities.custom_option_max
        if not 0 <= v <= top:
            raise ValueError(f"custom_option {v} is out of range for algorithm {self.algorithm_id}: 0..{top}")
        self._set("custom_option", v)

    @property
    def inner_shape(self) -> Any:
        """The inner shape (a ``cublasLtMatmulInnerShape_t``)."""
        return _readable("inner_shape", self._config["inner_shape"])

    @inner_shape.setter
    def inner_shape(self, value):
        v = _to_id("inner_shape", value)
        if v not in set(int(m) for m in lt.cublasLtMatmulInnerShape_t):
            raise ValueError(f"inner_shape {value!r} is not one of "
                             f"{', '.join(m.name for m in lt.cublasLtMatmulInnerShape_t)}")
        self._set("inner_shape", v)

    @property
    def cluster_shape(self) -> Any:
        """The thread-block cluster shape as ``(x, y, z)`` (None when chosen automatically)."""
        return _readable("cluster_shape", self._config["cluster_shape"])

    @cluster_shape.setter
    def cluster_shape(self, value):
        v = _to_id("cluster_shape", value)
        if v not in _ID_OF_SHAPE[lt.cublasLtClusterShape_t].values():
            raise ValueError(f"cluster_shape {value!r} is not a cublasLtClusterShape_t value")
        self._set("cluster_shape", v)

    # ---------------------------------------------------------------------------------- persistence

    def to_dict(self) -> dict:
        """A plain, JSON-ready dict: the 64 bytes as hex, the config ids, readable fields, capabilities, environment."""
        readable = {}
        for f in _CONFIG_FIELDS:
            v = getattr(self, f)
            readable[f] = v.name if hasattr(v, "name") else (list(v) if isinstance(v, tuple) else v)
        caps = dataclasses.asdict(self._capabilities)
        return {
            "format": FORMAT,
            "version": FORMAT_VERSION,
            "algo": bytes(self._algo).hex(),
            "config": dict(self._config),
            "readable": readable,
            "capabilities": {k: (list(v) if isinstance(v, tuple) else v) for k, v in caps.items()},
            "workspace_size": self.workspace_size,
            "waves_count": self.waves_count,
            "measured_time_ms": self.measured_time,
            "environment": self.environment,
        }

    @classmethod
    def from_dict(cls, data: dict) -> "Algorithm":
        """Rebuild an Algorithm from ``to_dict()`` output; no library call. Raises ValueError on a malformed form."""
        obj = cls.__new__(cls)
        obj._init_from(data)
        return obj

    def _init_from(self, data: dict) -> None:
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ValueError(f"not a saved Algorithm (expected a dict with format {FORMAT!r})")
        if data.get("version") != FORMAT_VERSION:
            raise ValueError(f"saved Algorithm format version {data.get('version')!r} is not supported "
                             f"(this cumath reads version {FORMAT_VERSION})")
        try:
            raw = bytes.fromhex(data["algo"])
        except (KeyError, TypeError, ValueError):
            raise ValueError("saved Algorithm has no valid 'algo' hex string") from None
        if len(raw) != _ALGO_BYTES:
            raise ValueError(f"saved Algorithm 'algo' holds {len(raw)} bytes, a cublasLtMatmulAlgo_t has {_ALGO_BYTES}")
        config, caps = data.get("config"), data.get("capabilities")
        if not isinstance(config, dict) or set(config) != set(_CONFIG_FIELDS):
            raise ValueError(f"saved Algorithm 'config' must have the keys {sorted(_CONFIG_FIELDS)}")
        if not isinstance(caps, dict) or set(caps) != set(_CAP_FIELDS):
            raise ValueError(f"saved Algorithm 'capabilities' must have the keys {sorted(_CAP_FIELDS)}")
        for where, d in (("config", config), ("capabilities", caps)):
            for k, v in d.items():
                ok = all(_is_int(x) for x in v) if k in _ARRAY_CAPS and isinstance(v, list) else _is_int(v)
                if not ok:
                    raise ValueError(f"saved Algorithm {where}[{k!r}] = {v!r} is not an integer")
        env = data.get("environment")
        if env is not None and not isinstance(env, dict):
            raise ValueError("saved Algorithm 'environment' must be a dict")
        self._algo = lt.cublasLtMatmulAlgo_t.from_bytes(raw)
        self._config = {k: int(v) for k, v in config.items()}
        self._capabilities = AlgorithmCapabilities(
            **{k: (tuple(int(x) for x in v) if k in _ARRAY_CAPS else int(v)) for k, v in caps.items()})
        self.workspace_size = int(data.get("workspace_size") or 0)
        self.waves_count = float(data.get("waves_count") or 0.0)
        t = data.get("measured_time_ms")
        self.measured_time = None if t is None else float(t)
        self.environment = dict(env) if env else None

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(), **kwargs)

    @classmethod
    def from_json(cls, text: str) -> "Algorithm":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"not a saved Algorithm: invalid JSON ({exc})") from None
        return cls.from_dict(data)

    def __reduce__(self):
        return (Algorithm.from_dict, (self.to_dict(),))

    def copy(self) -> "Algorithm":
        return Algorithm.from_dict(self.to_dict())

    def __eq__(self, other):
        if not isinstance(other, Algorithm):
            return NotImplemented
        return bytes(self._algo) == bytes(other._algo)

    def __hash__(self):
        return hash(bytes(self._algo))

    def __repr__(self):
        t = f", {self.measured_time:.4g} ms" if self.measured_time is not None else ""
        return (f"Algorithm(id={self.algorithm_id}, tile={self.tile}, stages={self.stages}, split_k={self.split_k}, "
                f"cluster_shape={self.cluster_shape}, workspace={self.workspace_size}{t})")


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _names(ids, field: str) -> str:
    return ", ".join(str(_readable(field, i)) for i in ids) or "(none)"


def _try_environment() -> dict | None:
    try:
        return current_environment()
    except Exception as exc:  # no GPU here: the algorithm is still usable, only its origin is unknown
        logger.debug("could not read the GPU environment: %s", exc)
        return None


# ----------------------------------------------------------------------------------- save and load


def save_algorithms(path, algorithms) -> None:
    """Write Algorithms to ``path`` as JSON (atomically: a temporary file renamed into place)."""
    algorithms = list(algorithms)
    for a in algorithms:
        if not isinstance(a, Algorithm):
            raise TypeError(f"save_algorithms takes Algorithm objects, got {type(a).__name__}")
    payload = {"format": FORMAT + "s", "version": FORMAT_VERSION, "algorithms": [a.to_dict() for a in algorithms]}
    atomic_write_text(os.fspath(path), json.dumps(payload, indent=1))
    logger.info("saved %d matmul algorithm(s) to %s", len(algorithms), path)


def load_algorithms(path, *, check_environment: bool = True, environment: dict | None = None) -> list[Algorithm]:
    """Read Algorithms written by ``save_algorithms`` (JSON only, never pickle).

    With ``check_environment`` each algorithm's recorded cuBLASLt version and GPU must match ``environment``
    (the current GPU's by default); a mismatch raises ``ValueError`` saying what differs.
    """
    try:
        with open(path, encoding="utf-8") as f:
            payload = json.load(f)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path} is not a saved algorithm file: invalid JSON ({exc})") from None
    if isinstance(payload, dict) and payload.get("format") == FORMAT:
        payload = {"format": FORMAT + "s", "version": FORMAT_VERSION, "algorithms": [payload]}
    if not isinstance(payload, dict) or payload.get("format") != FORMAT + "s" or not isinstance(
            payload.get("algorithms"), list):
        raise ValueError(f"{path} is not a file written by save_algorithms")
    algorithms = [Algorithm.from_dict(d) for d in payload["algorithms"]]
    if check_environment:
        env = environment if environment is not None else current_environment()
        for i, a in enumerate(algorithms):
            if a.environment is None:
                raise ValueError(f"{path}: algorithm {i} records no environment; load it with "
                                 "check_environment=False if it is known to fit this GPU and cuBLASLt")
            reason = _same_environment(a.environment, env)
            if reason:
                raise ValueError(f"{path}: algorithm {i} was saved for another setup: {reason}")
    logger.info("loaded %d matmul algorithm(s) from %s", len(algorithms), path)
    return algorithms


def atomic_write_text(path: str, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically (temporary file in the same folder, then a rename)."""
    atomic_write(os.path.abspath(path), text.encode("utf-8"), suffix=".json")


# ----------------------------------------------------------------------------------- check and tune


def check_algorithm(handle: int, matmul_desc: int, a_layout: int, b_layout: int, c_layout: int, d_layout: int,
                    algorithm: Algorithm):
    """``cublasLtMatmulAlgoCheck`` of ``algorithm`` for the planned problem.

    Returns the heuristic-like result struct (workspaceSize, wavesCount) and records both on the algorithm;
    raises ``ValueError`` with the reason when the algorithm cannot run this problem here.
    """
    if not isinstance(algorithm, Algorithm):
        raise TypeError(f"check_algorithm takes an Algorithm, got {type(algorithm).__name__}")
    try:
        result = lt.cublasLtMatmulAlgoCheck(handle, matmul_desc, a_layout, b_layout, c_layout, d_layout,
                                            algorithm.algo)
    except CUBLASLtError as exc:
        raise ValueError(
            f"algorithm {algorithm.algorithm_id} (tile {algorithm.tile}, stages {algorithm.stages}) cannot run this "
            f"matmul on this GPU: cublasLtMatmulAlgoCheck returned {exc.name}"
            + (f" ({_reason(exc.name)})" if _reason(exc.name) else "")
        ) from exc
    algorithm.workspace_size = int(result.workspaceSize)
    algorithm.waves_count = float(result.wavesCount)
    return result


def _reason(name: str) -> str:
    return {
        "CUBLAS_STATUS_INVALID_VALUE": "the layouts or the operation do not match the algorithm",
        "CUBLAS_STATUS_NOT_SUPPORTED": "the configuration or data types are not supported on this device",
        "CUBLAS_STATUS_ARCH_MISMATCH": "the configuration cannot run on this GPU architecture",
    }.get(name, "")


def autotune(run_one, algorithms, *, iterations: int = 10, prune: int | None = None, stream: int = 0,
             warmup: int = 1) -> list[Algorithm]:
    """Time ``run_one(alg)`` for each algorithm with CUDA events on ``stream``; fastest first.

    Each algorithm runs ``warmup`` times, then ``iterations`` times between events; its median time in ms is
    stored in ``alg.measured_time``. Algorithms whose run raises a ``CUBLASLtError`` are dropped. ``prune`` keeps
    only the fastest ``prune`` of them.
    """
    from ..._bindings import cudart

    algorithms = list(algorithms)
    if iterations < 1:
        raise ValueError(f"iterations must be at least 1, got {iterations}")
    if prune is not None and prune < 1:
        raise ValueError(f"prune must be None or at least 1, got {prune}")
    from ..._core.progress import progress

    events = [cudart.cudaEventCreateWithFlags(cudart.cudaEventDefault) for _ in range(iterations + 1)]
    timed = []
    bar = progress(len(algorithms), "cuBLASLt autotuning") if len(algorithms) > 1 else None
    try:
        for alg in algorithms:
            if bar is not None:
                bar.update()
            try:
                for _ in range(warmup):
                    run_one(alg)
                cudart.cudaEventRecord(events[0], stream)
                for i in range(iterations):
                    run_one(alg)
                    cudart.cudaEventRecord(events[i + 1], stream)
                cudart.cudaEventSynchronize(events[-1])
            except CUBLASLtError as exc:
                logger.info("autotune: algorithm %d failed to run (%s); dropped", alg.algorithm_id, exc.name)
                cudart.cudaStreamSynchronize(stream)
                continue
            times = [cudart.cudaEventElapsedTime(events[i], events[i + 1]) for i in range(iterations)]
            alg.measured_time = statistics.median(times)
            timed.append(alg)
    finally:
        if bar is not None:
            bar.close()
        for ev in events:
            cudart.cudaEventDestroy(ev)
    timed.sort(key=lambda a: a.measured_time)
    if logger.isEnabledFor(logging.INFO):
        logger.info("autotune: %d algorithm(s), %d iteration(s) each; times (ms): %s", len(timed), iterations,
                    ", ".join(f"id {a.algorithm_id}: {a.measured_time:.4g}" for a in timed))
        if timed and algorithms and timed[0] is not algorithms[0]:
            first = algorithms[0]
            was = f"{first.measured_time:.4g} ms" if first in timed else "failed"
            logger.info("autotune: best is algorithm %d (%.4g ms); the heuristic's first choice: %s",
                        timed[0].algorithm_id, timed[0].measured_time, was)
    return timed[:prune] if prune is not None else timed
