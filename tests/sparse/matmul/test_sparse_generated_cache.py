"""A generated kernel's CUBIN in a fresh process: the first compiles (NVRTC) and links (nvJitLink), a second finds
the CUBIN in the disk cache under a key of the whole build without loading either library (no GPU needed)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

SCRIPT = textwrap.dedent("""
    import json, sys, time
    from cumath._core import jit
    from cumath._bindings import _loader
    from cumath.sparse._matmul._codegen import spmm_source
    from cumath.sparse.ust import NamedFormats as N
    src = spmm_source(N.DIAI, (1_000_000, 1_000_000), "float32", "int32", ndiag=5)
    t0 = time.perf_counter()
    art = jit.compile_and_link(src, cc=90, options=("-rdc=true",), what="the generated SpMM of DIAI")
    ms = 1e3 * (time.perf_counter() - t0)
    print(json.dumps({"ms": ms, "kind": art.kind, "size": len(art.data), "key": art.key,
                      "loaded": sorted(_loader.loaded_libraries())}))
""")


def _run(cache):
    env = dict(os.environ, CUMATH_CACHE_DIR=str(cache), PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_second_process_loads_the_cubin_without_the_toolchain(tmp_path):
    from cumath._core import jit

    try:
        jit.nvrtc_version()
        jit.nvjitlink_version()
    except Exception as exc:  # pragma: no cover - NVRTC and nvJitLink are part of the test environment
        pytest.skip(f"NVRTC or nvJitLink is not available: {exc}")
    if jit.toolchain_files() is None:
        pytest.skip("NVRTC and nvJitLink are not in the nvidia/*/lib wheel folders")
    first = _run(tmp_path)
    second = _run(tmp_path)
    print("compile and link, first process %.0f ms; second process %.1f ms" % (first["ms"], second["ms"]))
    assert first["kind"] == second["kind"] == "cubin" and first["size"] == second["size"] > 1000
    assert first["key"] == second["key"]
    assert {"nvrtc", "nvJitLink"} <= set(first["loaded"])
    assert "nvrtc" not in second["loaded"] and "nvJitLink" not in second["loaded"]
    assert second["ms"] < 250  # 50 ms is the product bound (a GPU machine); this machine is shared and loaded


def test_toolchain_change_misses(tmp_path, monkeypatch):
    """The whole-build key holds the libraries' files: another NVRTC build compiles anew."""
    from cumath._core import jit
    from cumath._core.disk_cache import ContentStore

    store = ContentStore("jit-test", suffix=".bin")
    monkeypatch.setenv("CUMATH_CACHE_DIR", str(tmp_path))
    made = []
    monkeypatch.setattr(jit, "compile_source", lambda src, **kw: made.append("c") or jit.Artifact(b"ir", "ltoir",
                                                                                                   "k1", {}))
    monkeypatch.setattr(jit, "link", lambda pieces, **kw: made.append("l") or jit.Artifact(b"cubin" * 300, "cubin",
                                                                                          "k2", {}))
    monkeypatch.setattr(jit, "toolchain_files", lambda: (("libnvrtc.so.13", 1, 1), ("libnvJitLink.so.13", 1, 1)))
    a = jit.compile_and_link("src", cc=90, store=store)
    b = jit.compile_and_link("src", cc=90, store=store)
    assert made == ["c", "l"] and a.data == b.data and a.key == b.key
    monkeypatch.setattr(jit, "toolchain_files", lambda: (("libnvrtc.so.13", 2, 1), ("libnvJitLink.so.13", 1, 1)))
    jit.compile_and_link("src", cc=90, store=store)
    assert made == ["c", "l", "c", "l"]
    monkeypatch.setattr(jit, "toolchain_files", lambda: None)  # not found without loading: the two caches
    jit.compile_and_link("src", cc=90, pieces=[b"op"], store=store)
    assert made[-2:] == ["c", "l"]
