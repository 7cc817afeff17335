"""`python -m cumath info | demo` run in a fresh process and say what they should."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run(*args, tmp_path):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               CUMATH_CACHE_DIR=str(tmp_path))
    return subprocess.run([sys.executable, "-m", "cumath", *args], capture_output=True, text=True, env=env,
                          timeout=600)


def test_info_lists_libraries_gpus_and_the_cpu_engine(tmp_path):
    res = _run("info", tmp_path=tmp_path)
    assert res.returncode == 0, res.stderr
    for fragment in ("native libraries:", "cufft", "fftw3", "GPUs:", "FFT engine:"):
        assert fragment in res.stdout


def test_demo_on_the_cpu_checks_every_example(tmp_path):
    res = _run("demo", "--execution", "cpu", tmp_path=tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "all results match NumPy" in res.stdout
    assert "batched 1-D C2C" in res.stdout and "3-D C2C" in res.stdout
    assert "engines: FFT:" in res.stdout and "\u00b1" in res.stdout  # the engine, and the spread of each time
    # every row's reference is computed independently of the engine (a reference through the same BLAS agrees
    # to the last bit, and a rel.err of exactly 0 would show nothing)
    rows = [ln for ln in res.stdout.splitlines() if "1.5AB+0.5C" in ln]
    assert len(rows) == 2 and all(" 0.0e+00 " not in ln for ln in rows), res.stdout


def test_unknown_command_is_refused(tmp_path):
    res = _run("frobnicate", tmp_path=tmp_path)
    assert res.returncode != 0 and "invalid choice" in res.stderr


# ------------------------------------------------------------------------------------------------------- bench
def test_bench_without_a_domain_lists_the_domains(tmp_path):
    res = _run("bench", tmp_path=tmp_path)
    assert res.returncode == 0, res.stderr
    for domain in ("fft", "matmul", "solvers"):
        assert f"  {domain} " in res.stdout
    assert "harness" not in res.stdout and "percall_compare" not in res.stdout


def test_bench_help_describes_the_domains(tmp_path):
    res = _run("bench", "--help", tmp_path=tmp_path)
    assert res.returncode == 0
    assert "domains:" in res.stdout and "fft" in res.stdout and "--plot" in res.stdout


def test_bench_unknown_domain(tmp_path):
    res = _run("bench", "nosuchdomain", tmp_path=tmp_path)
    assert res.returncode == 2 and "unknown benchmark domain 'nosuchdomain'" in res.stderr and "fft" in res.stderr


def test_bench_domain_list_through_the_cli(tmp_path):
    res = _run("bench", "fft", "--list", tmp_path=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "cpu/c128-2048" in res.stdout


def test_new_scripts_join_by_name(tmp_path, monkeypatch):
    import cumath.__main__ as cli

    (tmp_path / "harness.py").write_text("")
    (tmp_path / "tensor.py").write_text('"""Tensor benchmark: contractions against opt_einsum.\n"""\nbench = Bench("tensor", __doc__)\n')
    (tmp_path / "helper.py").write_text('"""Not a benchmark."""\n')
    monkeypatch.setattr(cli, "benchmark_dir", lambda: str(tmp_path))
    assert cli.domains() == {"tensor": (str(tmp_path / "tensor.py"), "contractions against opt_einsum")}


def test_the_wheel_carries_the_benchmarks(tmp_path):
    """`pip install .` installs benchmarks/ as cumath/_benchmarks (a link in the source tree), so `bench` works from
    an installed package."""
    res = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w",
                          str(tmp_path), ROOT], capture_output=True, text=True, timeout=600)
    if res.returncode != 0:
        import pytest

        pytest.skip(f"cannot build a wheel here: {res.stderr[-300:]}")
    import zipfile

    (wheel,) = tmp_path.glob("cumath-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for f in ("cumath/_benchmarks/harness.py", "cumath/_benchmarks/fft.py", "cumath/__main__.py", "cumath/py.typed"):
        assert f in names
    assert not any(n.startswith("benchmarks/") for n in names)


def test_harness_plot_and_noise_warning(tmp_path):
    import pytest

    pytest.importorskip("matplotlib")
    script = tmp_path / "toy.py"
    script.write_text(
        "import sys, time\n"
        f"sys.path.insert(0, {os.path.join(ROOT, 'benchmarks')!r})\n"
        "from harness import Bench\n"
        "bench = Bench('toy', 'a toy benchmark', fresh_cache=False)\n"
        "@bench.case('cpu/sleep', 'two sleeps of different lengths, with a very long contender name for alignment')\n"
        "def c(case):\n"
        "    case.time({'cumath sleep': lambda: time.sleep(0.001), 'peer sleep (a much longer label than the rest)':"
        " lambda: time.sleep(0.002)}, rounds=2, number=2)\n"
        "    case.ratio('cumath sleep', 'peer sleep (a much longer label than the rest)')\n"
        "sys.exit(bench.main())\n")
    png = tmp_path / "out.png"
    res = subprocess.run([sys.executable, str(script), "--plot", str(png), "--spread-warn", "0"], capture_output=True,
                         text=True, timeout=300, env=dict(os.environ, PYTHONPATH=ROOT))
    assert res.returncode == 0, res.stdout + res.stderr
    assert png.exists() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "cumath sleep faster by" in res.stdout or "about the same" in res.stdout
    assert "too busy to trust them" in res.stdout
    lines = [ln for ln in res.stdout.splitlines() if "sleep" in ln and (" ms" in ln or " us" in ln)]
    assert len({ln.index(" ms") if " ms" in ln else ln.index(" us") for ln in lines[:2]}) == 1  # aligned columns


def test_harness_plot_without_matplotlib(tmp_path):
    code = (f"import sys; sys.modules['matplotlib'] = None; sys.path.insert(0, {os.path.join(ROOT, 'benchmarks')!r})\n"
            "import harness\nb = harness.Bench('x', 'x')\nb.args = b.parser().parse_args([])\n"
            "print(b.plot('never.png'))\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=dict(os.environ,
                         PYTHONPATH=ROOT), timeout=120)
    assert res.stdout.strip() == "False" and "cumath[cli]" in res.stderr


# ---------------------------------------------------------------------------------------------- demo and info
def test_demo_cuda_without_a_gpu_is_one_line(tmp_path):
    from cumath._core.cuda import device_count

    if device_count():
        import pytest

        pytest.skip("this machine has a GPU")
    res = _run("demo", "--execution", "cuda", tmp_path=tmp_path)
    assert res.returncode == 2
    assert res.stdout.strip().count("\n") == 0 and "--execution cpu" in res.stdout
    assert "Traceback" not in res.stderr


def test_info_names_the_engines_that_run(tmp_path):
    res = _run("info", tmp_path=tmp_path)
    assert "FFT engine:" in res.stdout and "matmul (BLAS):" in res.stdout


def test_info_without_scipy_says_numpy_fft_runs():
    code = ("import sys; sys.modules['scipy'] = None\n"
            "import importlib.util as u; real = u.find_spec\n"
            "u.find_spec = lambda n, *a: None if n == 'scipy' else real(n, *a)\n"
            "from cumath._info import cpu_engines; print(cpu_engines()['fft'])")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env=dict(os.environ, PYTHONPATH=ROOT, CUMATH_FFT_CPU_ENGINE="scipy"))
    assert res.stdout.startswith("numpy.fft"), res.stdout + res.stderr


# ----------------------------------------------------------------------------------------------------- progress
def test_progress_is_quiet_without_a_terminal(capsys, monkeypatch):
    from cumath._core import progress as P

    monkeypatch.delenv("CUMATH_PROGRESS", raising=False)
    with P.progress(3, "work") as bar:
        bar.update()
    with P.busy("planning", after=0):
        pass
    assert capsys.readouterr().err == ""


def test_progress_counter_and_busy_when_forced(capsys, monkeypatch):
    import time

    from cumath._core import progress as P

    monkeypatch.setenv("CUMATH_PROGRESS", "1")
    monkeypatch.setitem(sys.modules, "tqdm", None)  # the one-line counter
    bar = P.progress(2, "benchmarks")
    bar.update()
    bar.update()
    bar.close()
    with P.busy("FFTW: measuring", after=0):
        time.sleep(0.7)
    err = capsys.readouterr().err
    assert "benchmarks: 2/2" in err and "FFTW: measuring" in err


def test_progress_uses_tqdm_when_installed(monkeypatch):
    import pytest

    tqdm = pytest.importorskip("tqdm")
    from cumath._core import progress as P

    monkeypatch.setenv("CUMATH_PROGRESS", "1")
    bar = P.progress(2, "x")
    assert isinstance(bar, tqdm.tqdm)
    bar.close()
