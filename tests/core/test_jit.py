"""cumath._core.jit and the disk-cache primitives under it: keys, targets, get_or_make across threads, exported
link files, the keyed JSON store (its lock, no symbolic links followed), and, where NVRTC and nvJitLink load, a
real compile to every output and a link of two LTO-IR pieces (no GPU needed)."""

from __future__ import annotations

import os
import threading
import time

import pytest

from cumath import config
from cumath._core import disk_cache, jit
from cumath._core.disk_cache import ContentStore, JsonStore, digest
from cumath.errors import LibraryNotFoundError, NVJitLinkError, NVRTCError

ELF = b"\x7fELF"


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CUMATH_CACHE_DIR", str(tmp_path))
    jit.clear_memory_cache()
    yield tmp_path
    jit.clear_memory_cache()


# ------------------------------------------------------------------------------------------ cache folder

def test_the_cache_folder_lives_in_core_and_config_shows_it(tmp_path, monkeypatch):
    assert config.cache_dir is disk_cache.cache_dir
    monkeypatch.setenv("CUMATH_CACHE_DIR", str(tmp_path / "c"))
    assert config.cache_dir("a", "b") == str(tmp_path / "c" / "a" / "b") and os.path.isdir(tmp_path / "c" / "a" / "b")
    monkeypatch.delenv("CUMATH_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert disk_cache.cache_dir() == str(tmp_path / "xdg" / "cumath")


# ------------------------------------------------------------------------------------------ get_or_make

def test_get_or_make_makes_once_for_all_threads(cache):
    store = ContentStore("blobs")
    calls, started = [], threading.Event()

    def make():
        calls.append(threading.get_ident())
        started.set()
        time.sleep(0.2)  # the other threads ask while this one makes
        return b"made", {"n": 1}

    key = digest("one artefact")
    results = []
    threads = [threading.Thread(target=lambda: results.append(store.get_or_make(key, make))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and len(results) == 8 and {r.data for r in results} == {b"made"}
    assert ContentStore("blobs").get(key).meta == {"n": 1}  # on disk for other processes
    assert store._making == {}


def test_get_or_make_lets_other_keys_proceed_and_stores_nothing_on_failure(cache):
    store = ContentStore("blobs")
    release = threading.Event()

    def slow():
        release.wait(5)
        return b"slow", {}

    t = threading.Thread(target=lambda: store.get_or_make(digest("slow"), slow))
    t.start()
    try:
        assert store.get_or_make(digest("fast"), lambda: (b"fast", {})).data == b"fast"  # not held up by "slow"
    finally:
        release.set()
        t.join()

    def boom():
        raise RuntimeError("generation failed")

    with pytest.raises(RuntimeError, match="generation failed"):
        store.get_or_make(digest("bad"), boom)
    assert store.get(digest("bad")) is None and store._making == {}
    assert store.get_or_make(digest("bad"), lambda: (b"ok", {})).data == b"ok"
    assert store.get_or_make(digest("mem"), lambda: (b"m", {}), disk=False).data == b"m"
    assert ContentStore("blobs").get(digest("mem")) is None  # memory only


def test_export_writes_a_plain_file_once(cache):
    store = ContentStore("blobs")
    path = store.export("abc-0.ltoir", b"IR bytes")
    assert path == str(cache / "blobs" / "link" / "abc-0.ltoir") and open(path, "rb").read() == b"IR bytes"
    mtime = os.stat(path).st_mtime_ns
    assert store.export("abc-0.ltoir", b"IR bytes") == path and os.stat(path).st_mtime_ns == mtime
    with pytest.raises(ValueError, match="plain file name"):
        store.export("../escape", b"x")


def test_cache_files_behind_symbolic_links_are_not_read(cache):
    store = ContentStore("blobs")
    key = digest("linked")
    store.put(key, b"data", {})
    target = cache / "elsewhere"
    os.replace(store.path(key), target)
    os.symlink(target, store.path(key))
    store.clear_memory()
    assert store.get(key) is None  # a link in the cache folder reads as a miss
    with pytest.raises(OSError):
        disk_cache.read_file(store.path(key))


# ------------------------------------------------------------------------------------------ JSON store

def test_json_store_round_trip_lock_and_removal(cache):
    docs = JsonStore("docs")
    path = docs.path("ab12", "sub")
    assert path == str(cache / "docs" / "sub" / "ab12.json")
    with pytest.raises(FileNotFoundError):
        docs.read(path)
    with docs.locked(path):
        docs.write(path, {"x": [1, 2.5, None]})
    assert docs.read(path) == {"x": [1, 2.5, None]}
    assert os.path.exists(path + ".lock") and not [f for f in os.listdir(os.path.dirname(path)) if f.startswith(".tmp")]
    with pytest.raises(ValueError, match="hex digests"):
        docs.path("../x")
    docs.remove_all()
    assert not os.path.exists(path) and not os.path.exists(path + ".lock")


def test_json_store_does_not_follow_links(cache):
    docs = JsonStore("docs")
    path = docs.path("cd34")
    os.makedirs(os.path.dirname(path), exist_ok=True)  # (path() creates nothing)
    victim = cache / "victim"
    victim.write_text("keep")
    os.symlink(victim, path + ".lock")
    with pytest.raises(OSError):
        with docs.locked(path):
            pass
    os.symlink(victim, path)
    with pytest.raises(OSError):
        docs.read(path)
    docs.write(path, {"a": 1})  # replaces the link, not what it points at
    assert victim.read_text() == "keep" and not os.path.islink(path) and docs.read(path) == {"a": 1}


def test_json_store_lock_excludes_another_holder(cache):
    docs = JsonStore("docs")
    path = docs.path("ef56")
    order = []

    def holder():
        with docs.locked(path):
            order.append("in")
            time.sleep(0.2)
            order.append("out")

    t = threading.Thread(target=holder)
    t.start()
    while not order:
        time.sleep(0.01)
    with docs.locked(path):  # flock locks are per open file: a second open waits even in one process
        order.append("second")
    t.join()
    assert order == ["in", "out", "second"]


# ------------------------------------------------------------------------------------------ keys, targets

def test_compile_key_depends_on_everything_that_changes_the_output():
    base = jit.compile_key("src", ("-std=c++17", "-arch=sm_90"), (13, 0))
    assert len(base) == 64 and base == jit.compile_key("src", ("-std=c++17", "-arch=sm_90"), (13, 0))
    others = {
        jit.compile_key("src ", ("-std=c++17", "-arch=sm_90"), (13, 0)),
        jit.compile_key("src", ("-std=c++20", "-arch=sm_90"), (13, 0)),
        jit.compile_key("src", ("-std=c++17", "-arch=sm_80"), (13, 0)),
        jit.compile_key("src", ("-std=c++17", "-arch=sm_90"), (13, 1)),
        jit.compile_key("src", ("-std=c++17", "-arch=sm_90"), (13, 0), names=("k<1>",)),
        jit.compile_key("src", ("-std=c++17", "-arch=sm_90"), (13, 0), output="ptx"),
        jit.compile_key("src", ("-std=c++17", "-arch=sm_90"), (13, 0), depends=("headers", "ab")),
        jit.compile_key("src-std=c++17", ("-arch=sm_90",), (13, 0)),  # no ambiguity where a part ends
    }
    assert base not in others and len(others) == 8


def test_link_key_depends_on_the_pieces_options_and_linker():
    k = jit.link_key([b"IR", ("ltoir", b"IR2")], ("-arch=sm_90", "-lto"), (13, 0))
    assert k == jit.link_key([("ltoir", b"IR", "a"), ("ltoir", b"IR2", "b")], ("-arch=sm_90", "-lto"), (13, 0))
    assert len({k, jit.link_key([b"IR", b"IR3"], ("-arch=sm_90", "-lto"), (13, 0)),
                jit.link_key([b"IR2", b"IR"], ("-arch=sm_90", "-lto"), (13, 0)),
                jit.link_key([b"IR", ("ptx", b"IR2")], ("-arch=sm_90", "-lto"), (13, 0)),
                jit.link_key([b"IR", b"IR2"], ("-arch=sm_100", "-lto"), (13, 0)),
                jit.link_key([b"IR", b"IR2"], ("-arch=sm_90", "-lto"), (13, 1))}) == 6
    with pytest.raises(ValueError, match="allowed kinds"):
        jit.link_key([("elf", b"x")], (), (13, 0))
    with pytest.raises(ValueError, match="at least one piece"):
        jit.link_key([], (), (13, 0))


def test_targets_per_output_and_for_a_gpu_newer_than_nvrtc():
    assert jit.target(90, "cubin", [80, 90, 100]) == ("-arch=sm_90", "cubin")
    assert jit.target((9, 0), "ltoir", [80, 90, 100]) == ("-arch=compute_90", "ltoir")
    assert jit.target("sm_90", "ptx", [80, 90]) == ("-arch=compute_90", "ptx")
    assert jit.target(95, "cubin", [80, 90, 100]) == ("-arch=compute_90", "ptx")
    assert jit.target(95, "ltoir", [80, 90, 100]) == ("-arch=compute_90", "ltoir")
    with pytest.raises(ValueError, match="none of which runs on compute capability 70"):
        jit.target(70, "cubin", [75, 80])
    with pytest.raises(ValueError, match="output='elf' is not supported"):
        jit.target(90, "elf", [90])


def test_headers_are_found_in_roots_and_their_cccl_folder(tmp_path):
    (tmp_path / "r1").mkdir()
    (tmp_path / "r2" / "cccl" / "cuda" / "std").mkdir(parents=True)
    (tmp_path / "r2" / "cccl" / "cuda" / "std" / "type_traits").write_text("")
    (tmp_path / "r1" / "a.h").write_text("")
    roots = [str(tmp_path / "r1"), str(tmp_path / "r2")]
    assert jit.find_include("a.h", roots) == roots[0]
    assert jit.find_include(os.path.join("cuda", "std", "type_traits"), roots) == str(tmp_path / "r2" / "cccl")
    assert jit.find_include("missing.h", roots) is None


# ------------------------------------------------------------------------------------------ real toolchain

@pytest.fixture
def toolchain():
    try:
        return jit.nvrtc_version(), jit.nvjitlink_version()
    except (LibraryNotFoundError, OSError) as exc:
        pytest.skip(f"NVRTC / nvJitLink not available: {exc}")


CALLEE = '__device__ float twice(float x) { return 2.0f * x; }'
CALLER = ('extern __device__ float twice(float x);\n'
          'extern "C" __global__ void k(float* y) { y[threadIdx.x] = twice(y[threadIdx.x]); }')


def test_compile_every_output_and_link(toolchain, cache, monkeypatch):
    cubin = jit.compile_source(CALLER.replace("extern __device__ float twice(float x);", CALLEE), cc=90)
    assert cubin.kind == "cubin" and cubin.data[:4] == ELF
    ptx = jit.compile_source(CALLEE, cc=(9, 0), output="ptx", options=("-rdc=true",))
    assert ptx.kind == "ptx" and b".func" in ptx.data and b"twice" in ptx.data
    caller = jit.compile_source(CALLER, cc=90, output="ltoir", what="the caller")
    callee = jit.compile_source(CALLEE, cc=90, output="ltoir")
    assert caller.kind == callee.kind == "ltoir" and caller.key != callee.key
    linked = jit.link([caller, ("ltoir", callee.data, "callee")], cc=90, what="caller and callee")
    assert linked.kind == "cubin" and linked.data[:4] == ELF and b"k" in linked.data
    assert (cache / "jit" / f"{linked.key}.bin").exists()

    def refuse(*a):
        raise AssertionError("made again instead of read from the cache")

    monkeypatch.setattr(jit, "_nvrtc_compile", refuse)
    monkeypatch.setattr(jit, "_nvjitlink_link", refuse)
    jit.clear_memory_cache()
    assert jit.compile_source(CALLER, cc=90, output="ltoir") == caller
    assert jit.link([caller, ("ltoir", callee.data, "callee")], cc=90) == linked


def test_include_dirs_are_not_part_of_the_key_but_depends_is(toolchain, cache, tmp_path):
    inc = tmp_path / "inc"
    inc.mkdir()
    (inc / "value.h").write_text("#define VALUE 3\n")
    src = '#include "value.h"\nextern "C" __global__ void k(int* y) { y[0] = VALUE; }'
    a = jit.compile_source(src, cc=90, output="ptx", include_dirs=[str(inc)], depends=("value.h", "3"))
    moved = tmp_path / "moved"
    os.replace(inc, moved)
    assert jit.compile_source(src, cc=90, output="ptx", include_dirs=[str(moved)], depends=("value.h", "3")) == a
    (moved / "value.h").write_text("#define VALUE 4\n")
    b = jit.compile_source(src, cc=90, output="ptx", include_dirs=[str(moved)], depends=("value.h", "4"))
    assert b.key != a.key and b.data != a.data


def test_compile_and_link_errors_carry_the_logs(toolchain, cache):
    with pytest.raises(NVRTCError, match="undefined_name"):
        jit.compile_source("__global__ void k() { undefined_name; }", cc=90, name="bad.cu")
    caller = jit.compile_source(CALLER, cc=90, output="ltoir")
    with pytest.raises(NVJitLinkError, match="twice"):
        jit.link([caller], cc=90)
