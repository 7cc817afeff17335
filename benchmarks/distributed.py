"""Distributed benchmark: cumath.distributed on the ranks of one mpiexec run against its peers on the same ranks
and data (mpi4py-fft for the FFT) and against the single-process cumath call (matmul, solver).

Cases (``--list``):
  cpu/fft-128cube     3-D C2C FFT of 128^3 complex128, Slab.X in (cumath, FFTW_MEASURE per-rank plans) against
                      mpi4py-fft's PFFT (FFTW_MEASURE) on the same slab decomposition (forward, output in the
                      other slab, as cumath with redistribute=False); cumath with
                      redistribute=True too, with engine 'auto' (per-rank plans + transposes) and 'mkl' (MKL
                      Cluster DFT)
  cpu/matmul-2048     2048^2 float64 matmul on a 1 x P block-cyclic grid (ScaLAPACK p?gemm), against
                      single-process cumath.linalg.matmul on rank 0 with all the process's threads
  cpu/solve-2048      LU solve of order 2048 float64, 1 right-hand side (p?getrf + p?getrs) against
                      single-process cumath.linalg.direct_solver
  gpu/fft-512cube     one rank, one GPU: 3-D C2C FFT of 512^3 complex64 by cuFFTMp on a symmetric buffer (in
                      place) against single-GPU cumath FFT.execute (in place, out of place); forward + inverse
  gpu/matmul-8192     one-rank distributed 8192^2 float32 matmul (cuBLASMp over NCCL, CuPy operands on GPU 0,
                      128 x 128 blocks, FP32 compute) against single-GPU cumath.linalg.advanced.matmul (cuBLASLt)
                      on the same CuPy arrays; both timed to the end of the stream.
                      cuBLASMp 0.10 needs NCCL >= 2.29.2: where another NCCL would load first (PyTorch's),
                      preload the right one (LD_PRELOAD=.../nvidia/nccl/lib/libnccl.so.2); the version used
                      is printed under the case
  gpu/solve-8192      one-rank distributed LU solve of order 8192 float64, 1 right-hand side, 256 x 256 blocks:
                      its default engine on one rank (the single-GPU solver) and cuSOLVERMp getrf + getrs
                      (CUMATH_DIST_SOLVE=scalapack) against single-GPU cumath.linalg.direct_solver (cuSOLVER)

Contenders run in turns within each round (A B C, then C B A), on data they all hold at once; CPU cases also
report the CPU time (``time.process_time``) of rank 0, the calling rank, and of all ranks together, which the
load of a shared machine disturbs less than wall time.

The script launches itself under ``mpiexec -n RANKS`` (``--ranks``, default 2); every rank runs the same fixed
number of calls between barriers (the harness's calibration would give ranks different counts, and collective
calls must match), and a round's time is the slowest rank's. Rank 0 prints medians, spread ((p90-p10)/median)
and ratios over the harness's Stats.

    python benchmarks/distributed.py                     # every CPU case on 2 ranks
    python benchmarks/distributed.py --case cpu/fft-128cube --rounds 9 --json dist.json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CASES = ["cpu/fft-128cube", "cpu/matmul-2048", "cpu/solve-2048", "gpu/fft-512cube", "gpu/matmul-8192",
         "gpu/solve-8192"]


def _interleaved_cpu(comm, contenders: dict, rounds: int, number: int) -> tuple:
    """CPU contenders timed in turns: each round runs them in A B ... B A order, so that the load of the shared
    machine falls on all alike. A contender is ``(fn, collective)``: a collective one runs on every rank (a sample
    starts after a barrier; its wall time is the slowest rank's); a single-process one runs on rank 0 while the
    other ranks sleep on an ``MPI_Ibarrier`` (a busy MPI barrier would take a core from rank 0). Every sample
    also records the CPU time (``time.process_time``: all the process's threads) of rank 0, the calling rank,
    and of all ranks together. Returns ``(wall, cpu_rank0, cpu_all)``, each ``{name: [seconds per call]}``."""
    from mpi4py import MPI

    def sample(fn, collective):
        if collective:
            comm.Barrier()
        w, c = time.perf_counter(), time.process_time()
        if collective or comm.rank == 0:
            for _ in range(number):
                fn()
        w, c = (time.perf_counter() - w) / number, (time.process_time() - c) / number
        if not collective:
            request = comm.Ibarrier()
            while not request.Test():
                time.sleep(0.005)
            w, c = comm.bcast((w, c))
            return w, c, c
        return comm.allreduce(w, op=MPI.MAX), comm.bcast(c), comm.allreduce(c, op=MPI.SUM)

    for fn, collective in contenders.values():  # warm-up: plans, caches, first-touch of buffers
        sample(fn, collective)
    wall, cpu0, cpu_all = ({name: [] for name in contenders} for _ in range(3))
    order = list(contenders)
    for r in range(rounds):
        for name in (order if r % 2 == 0 else order[::-1]):
            w, c, a = sample(*contenders[name])
            wall[name].append(w)
            cpu0[name].append(c)
            cpu_all[name].append(a)
    return wall, cpu0, cpu_all


def _interleaved_gpu(contenders: dict, rounds: int, number: int) -> dict:
    """GPU contenders timed in turns: each round runs them in A B ... B A order (a drift of the GPU's clock or of
    the machine falls on all alike), a sample is ``number`` calls then a device synchronization; every
    contender is warmed up (plans, workspaces) before the first round."""
    import cupy

    for fn in contenders.values():
        fn()
    cupy.cuda.Device().synchronize()
    samples = {name: [] for name in contenders}
    order = list(contenders)
    for r in range(rounds):
        for name in (order if r % 2 == 0 else order[::-1]):
            fn = contenders[name]
            t = time.perf_counter()
            for _ in range(number):
                fn()
            cupy.cuda.Device().synchronize()
            samples[name].append((time.perf_counter() - t) / number)
    return samples


def _gpu_fft(comm, rounds) -> dict:
    """One rank, one GPU: cuFFTMp on a symmetric 512^3 complex64 buffer (in place) against single-GPU cumath
    FFT.execute on the same data (in place and out of place); each call is a forward and an inverse transform."""
    import numpy as np

    case = "gpu/fft-512cube"
    try:
        import cupy
    except ImportError:
        return {"case": case, "skipped": "CuPy is not installed"}
    sys.path.insert(0, ROOT)
    import cumath
    import cumath.distributed as dist
    from cumath.distributed.distribution import Slab

    n = 512
    shape = (n, n, n)
    # the 1 GiB operand and cuFFTMp's scratch live on the symmetric heap
    os.environ.setdefault("NVSHMEM_SYMMETRIC_SIZE", str(8 << 30))
    from cumath._bindings import cufftmp, nvshmem

    if not nvshmem.available():
        return {"case": case, "skipped": "NVSHMEM (nvidia-nvshmem-cu13) is not installed"}
    dist.initialize(0, comm, backends=("nvshmem",))
    from cumath.distributed.fft import FFT

    if not cufftmp.available():
        dist.finalize()
        return {"case": case, "skipped": "cuFFTMp (nvidia-cufftmp-cu13) is not installed"}
    rng = cupy.random.default_rng(0)
    x = (rng.standard_normal(shape, dtype=cupy.float32) + 1j * rng.standard_normal(shape, dtype=cupy.float32)
         ).astype(cupy.complex64)
    a = dist.allocate_symmetric_memory(shape, cupy, dtype=np.complex64)
    a[...] = x
    f = FFT(a, distribution=Slab.X)
    f.plan()
    y = x.copy()
    g = cumath.fft.FFT(y, options={"inplace": True})
    g.plan()
    h = cumath.fft.FFT(x)
    h.plan()
    dist_row = "cumath.distributed FFT (cuFFTMp, 1 rank, in place)"
    single_row = "cumath.fft FFT.execute (1 GPU, in place)"
    # where the one-rank cost comes from: libcufftMp's own plans on a second symmetric buffer, run directly
    b = dist.allocate_symmetric_memory(shape, cupy, dtype=np.complex64)
    b[...] = x
    variants = _cufftmp_variants(cufftmp, shape, b.data.ptr, cupy.cuda.get_current_stream().ptr)
    # forward + inverse per call (each contender's data grows by n^3 per call; the speed does not depend on it)
    rows = _interleaved_gpu({
        dist_row: lambda: (f.execute(direction="forward"), f.execute(direction="inverse")),
        single_row: lambda: (g.execute(direction="forward"), g.execute(direction="inverse")),
        "cumath.fft FFT.execute (1 GPU, out of place)": lambda: (h.execute(direction="forward"),
                                                                 h.execute(direction="inverse")),
        **{name: run for name, (run, _) in variants.items()},
    }, rounds, 3)
    for _, plans in variants.values():
        for plan in plans:
            cufftmp.destroy(plan)
    dist.free_symmetric_memory(b)
    for op in (f, g, h):
        op.free()
    dist.free_symmetric_memory(a)
    dist.finalize()
    return {"case": case, "ranks": 1, "rows": rows, "targets": [(dist_row, single_row, 1.15)]}


def _cufftmp_variants(cufftmp, shape, data: int, stream: int) -> dict:
    """Diagnostic rows for the one-rank cuFFTMp cost, each a forward and an inverse C2C in place on ``data``:
    one cuFFTMp plan for both directions (INPLACE, INPLACE_SHUFFLED: on one rank both slabs are the whole
    array), and a plan of libcufftMp with no communicator attached (its single-GPU cuFFT, which cuFFTMp's
    documentation says is identical to cuFFT's). A variant the library refuses is left out (printed)."""
    c2c = int(cufftmp.cufftType.CUFFT_C2C)
    sub = cufftmp.SubFormat
    out = {}

    def plan(attach: bool, subformats) -> int:
        h = cufftmp.create()
        try:
            if attach:
                cufftmp.attach_comm_none(h)
            cufftmp.set_stream(h, stream)
            if subformats:
                cufftmp.set_subformat_default(h, *subformats)
            cufftmp.make_plan(h, shape, c2c)
        except Exception:
            cufftmp.destroy(h)
            raise
        return h

    for name, attach, subformats in (
            ("libcufftMp one plan for both directions (INPLACE, SHUFFLED)", True,
             (sub.CUFFT_XT_FORMAT_INPLACE, sub.CUFFT_XT_FORMAT_INPLACE_SHUFFLED)),
            ("libcufftMp without a communicator (single-GPU plan)", False, None)):
        h = 0
        try:
            h = plan(attach, subformats)
            cufftmp.execute(h, c2c, data, -1)
        except Exception as exc:  # noqa: BLE001 - a diagnostic row, reported and skipped
            print(f"   {name}: not run ({exc})", flush=True)
            if h:
                cufftmp.destroy(h)
            continue
        out[name] = ((lambda h=h: (cufftmp.execute(h, c2c, data, -1), cufftmp.execute(h, c2c, data, 1))), [h])
    return out


def worker(case: str, rounds: int) -> dict:
    import numpy as np
    from mpi4py import MPI

    sys.path.insert(0, ROOT)
    import cumath
    import cumath.distributed as dist
    from cumath.distributed.distribution import BlockCyclic, ProcessGrid, Slab

    comm = MPI.COMM_WORLD
    r, p = comm.rank, comm.size
    if case == "gpu/fft-512cube":
        return _gpu_fft(comm, rounds)
    if case in ("gpu/matmul-8192", "gpu/solve-8192"):
        return gpu_linalg(case, rounds, comm)
    if case.startswith("gpu/"):
        return {"case": case, "skipped": f"no GPU case named {case}"}
    dist.initialize(None, comm)
    rng = np.random.default_rng(0)
    contenders, targets, free = {}, [], []
    if case == "cpu/fft-128cube":
        n = 128
        ix = Slab.X.indices((n, n, n), r, p)
        x = (rng.standard_normal((len(ix[0]), n, n)) + 1j * rng.standard_normal((len(ix[0]), n, n)))
        from cumath.distributed.fft import FFT

        # mpi4py-fft first (planned and run once): MKL's LP64 layer, loaded globally for the Cluster DFT and
        # ScaLAPACK, exports FFTW3 wrappers that would take the place of FFTW in mpi4py-fft's calls not yet bound
        peer = "mpi4py-fft PFFT forward"
        try:
            from mpi4py_fft import PFFT, newDistArray

            pf = PFFT(comm, (n, n, n), axes=(0, 1, 2), dtype=np.complex128, grid=(p, 1, 1), backend="fftw")
            u = newDistArray(pf, False)
            u[:] = x if u.shape == x.shape else rng.standard_normal(u.shape)
            uh = newDistArray(pf, True)
            pf.forward(u, uh, normalize=False)
            contenders[peer] = (lambda: pf.forward(u, uh, normalize=False), True)
        except ImportError:
            print("mpi4py-fft is not installed: no peer row", flush=True)
        keep = "cumath redistribute=False"
        for name, options in ((keep, {"redistribute": False}), ("cumath redistribute=True", {"redistribute": True}),
                              ("cumath engine=mkl redistribute=True", {"engine": "mkl"})):
            f = FFT(x, distribution=Slab.X, options={**options, "planning_effort": "measure"})
            f.plan()
            free.append(f)
            contenders[f"{name} ({f.engine})"] = (f.execute, True)
            if name == keep and peer in contenders:
                targets.append((f"{name} ({f.engine})", peer, 1.0))
        number = 3
    elif case in ("cpu/matmul-2048", "cpu/solve-2048"):
        n = 2048
        grid = ProcessGrid(shape=(1, p))
        d = BlockCyclic(grid, (128, 128))
        A = rng.standard_normal((n, n)) + (n * np.eye(n) if "solve" in case else 0)
        B = rng.standard_normal((n, n if "matmul" in case else 1))
        idx = [np.asarray(i, dtype=np.intp) for i in d.indices(A.shape, r, p)]
        a = np.asfortranarray(A[np.ix_(*idx)])
        idxb = [np.asarray(i, dtype=np.intp) for i in d.indices(B.shape, r, p)]
        b = np.asfortranarray(B[np.ix_(*idxb)])
        if "matmul" in case:
            from cumath.distributed.linalg.advanced import Matmul

            mm = Matmul(a, b, distributions=[d, d, d])
            mm.plan()
            free.append(mm)
            names = ("cumath.distributed matmul", "cumath.linalg.matmul (1 process)")
            contenders[names[0]] = (mm.execute, True)
            contenders[names[1]] = (lambda: cumath.linalg.matmul(A, B), False)
        else:
            from cumath.distributed.linalg import DirectSolver

            s = DirectSolver(a, b, distributions=[d, d])
            s.plan()
            free.append(s)

            def run():
                s.factorize()
                return s.solve()

            names = ("cumath.distributed direct_solver", "cumath.linalg.direct_solver (1 process)")
            contenders[names[0]] = (run, True)
            contenders[names[1]] = (lambda: cumath.linalg.direct_solver(A, B), False)
        targets.append((names[0], names[1], 1.3))
        number = 1
    wall, cpu0, cpu_all = _interleaved_cpu(comm, contenders, rounds, number)
    for op in free:
        op.free()
    dist.finalize()
    load = os.getloadavg()
    return {"case": case, "ranks": p, "rows": wall, "cpu_rank0": cpu0, "cpu_all_ranks": cpu_all,
            "targets": targets, "notes": [f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} at the end"]}


def gpu_linalg(case: str, rounds: int, comm) -> dict:
    """One rank on GPU 0: the distributed GPU engine against the single-GPU cumath call on the same data."""
    import numpy as np

    try:
        import cupy as cp
    except ImportError:
        return {"case": case, "skipped": "CuPy is not installed"}
    import cumath
    import cumath.distributed as dist
    from cumath.distributed.distribution import BlockCyclic, ProcessGrid

    if comm.size != 1:
        return {"case": case, "skipped": "the GPU cases run on one rank"}
    dist.initialize(0, comm, backends=("nccl",))
    from cumath._bindings import nccl
    from cumath._bindings._loader import find_library

    notes = [f"NCCL {nccl.version_string(nccl.ncclGetVersion())} from {find_library('nccl')}"]
    n = 8192
    rng = cp.random.default_rng(0)
    if case == "gpu/matmul-8192":
        from cumath.distributed.linalg.advanced import Matmul

        d = BlockCyclic(ProcessGrid(shape=(1, 1)), (128, 128))
        a = cp.asfortranarray(rng.standard_normal((n, n), dtype=cp.float32))
        b = cp.asfortranarray(rng.standard_normal((n, n), dtype=cp.float32))
        mm = Matmul(a, b, distributions=[d] * 3)
        mm.plan()
        dist_row, single_row, target = ("cumath.distributed matmul (cuBLASMp, 1 rank)",
                                        "cumath.linalg.advanced.matmul (1 GPU)", 1.1)
        rows = _interleaved_gpu({dist_row: mm.execute,
                                 single_row: lambda: cumath.linalg.advanced.matmul(a, b)}, rounds, 3)
        mm.free()
    else:
        from cumath.distributed.linalg import DirectSolver

        d = BlockCyclic(ProcessGrid(shape=(1, 1)), (256, 256))
        a = cp.asfortranarray(rng.standard_normal((n, n)) + n * cp.eye(n))
        b = cp.asfortranarray(rng.standard_normal((n, 1)))
        solvers = {}
        for mode in ("auto", "scalapack"):  # one rank's default engine (the single-GPU solver), then cuSOLVERMp
            before = os.environ.get("CUMATH_DIST_SOLVE")
            os.environ["CUMATH_DIST_SOLVE"] = mode
            try:
                solvers[mode] = DirectSolver(a, b, distributions=[d, d])
                solvers[mode].plan()
            except Exception as exc:  # noqa: BLE001 - cuSOLVERMp (or the NCCL it needs) missing: no row for it
                if mode == "auto":
                    raise
                failed = solvers.pop(mode, None)
                if failed is not None:
                    failed.free()
                notes.append(f"no cuSOLVERMp row: {type(exc).__name__}: {str(exc)[:200]}")
            finally:
                if before is None:
                    del os.environ["CUMATH_DIST_SOLVE"]
                else:
                    os.environ["CUMATH_DIST_SOLVE"] = before

        def run(s):
            s.factorize()
            s.solve()

        dist_row, single_row, target = ("cumath.distributed direct_solver (1 rank: the single-GPU solver)",
                                        "cumath.linalg.direct_solver (1 GPU)", 1.1)
        mp_row = "cumath.distributed direct_solver (cuSOLVERMp, 1 rank, CUMATH_DIST_SOLVE=scalapack)"
        fns = {dist_row: lambda: run(solvers["auto"]), mp_row: lambda: run(solvers["scalapack"]),
               single_row: lambda: cumath.linalg.direct_solver(a, b)}
        if "scalapack" not in solvers:
            del fns[mp_row]
        rows = _interleaved_gpu(fns, rounds, 1)
        for s in solvers.values():
            s.free()
    dist.finalize()
    return {"case": case, "ranks": 1, "rows": rows, "targets": [(dist_row, single_row, target)], "notes": notes}


def report(result: dict) -> list:
    sys.path.insert(0, HERE)
    from harness import Stats

    print(f"\n== {result['case']} ({result.get('ranks', '?')} ranks)")
    if "skipped" in result:
        print("   skipped:", result["skipped"])
        return []
    stats = {k: Stats(v) for k, v in result["rows"].items() if v}
    base = next(iter(stats.values()))
    out = []
    for name, v in result["rows"].items():
        if not v:
            print(f"   {name:42s} not installed")
            continue
        s = stats[name]
        print(f"   {name:42s} median {s.median * 1e3:9.2f} ms  spread {s.spread:5.2f}  "
              f"ratio to first {s.median / base.median:5.2f}x")
        row = {"case": result["case"], "name": name, "median_s": s.median, "spread": s.spread,
               "samples": s.samples}
        for key, label in (("cpu_rank0", "CPU time of rank 0"), ("cpu_all_ranks", "CPU time of all ranks")):
            if result.get(key, {}).get(name):
                c = Stats(result[key][name])
                print(f"   {'':42s} {label:21s} {c.median * 1e3:9.2f} ms  spread {c.spread:5.2f}")
                row[key] = {"median_s": c.median, "spread": c.spread, "samples": c.samples}
        out.append(row)
    for num, den, target in result.get("targets", []):
        if num in stats and den in stats:
            ratio = stats[num].median / stats[den].median
            faster = "about the same (within 2%)" if abs(ratio - 1) < 0.02 else (
                f"{num} faster by {1 / ratio:.2f}x" if ratio < 1 else f"{den} faster by {ratio:.2f}x")
            noisy = max(stats[num].spread, stats[den].spread) > 0.1
            print(f"   ratio: {num} / {den} = {ratio:.3f}x  {faster}"
                  f"{'  ! too noisy to trust (a spread over 0.10)' if noisy else ''}")
            entry = {"case": result["case"], "ratio": [num, den], "value": ratio, "target": target}
            cpu = result.get("cpu_rank0", {})
            if cpu.get(num) and cpu.get(den):
                entry["cpu_rank0_value"] = Stats(cpu[num]).median / Stats(cpu[den]).median
                print(f"   the same ratio in rank 0's CPU time: {entry['cpu_rank0_value']:.3f}x")
            out.append(entry)
    for note in result.get("notes", []):
        print(f"   {note}")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--case", action="append")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--cpu", action="store_true")
    ap.add_argument("--gpu", action="store_true")
    ap.add_argument("--json")
    ap.add_argument("--worker")
    args = ap.parse_args(argv)
    if args.list:
        print("\n".join(CASES))
        return 0
    if args.worker:
        result = worker(args.worker, args.rounds)
        from mpi4py import MPI

        if MPI.COMM_WORLD.rank == 0:
            print("RESULT " + json.dumps(result), flush=True)
        return 0
    cases = [c for spec in (args.case or []) for c in spec.split(",")] or [
        c for c in CASES if not (args.cpu and c.startswith("gpu/")) and not (args.gpu and c.startswith("cpu/"))]
    cases = [c for c in CASES if any(c == g or c.startswith(g + "/") for g in cases)]
    rounds = 3 if args.quick else args.rounds
    exe = shutil.which("mpiexec") or shutil.which("mpirun")
    if exe is None:
        print("no mpiexec: pip install cumath[distributed]")
        return 1
    version = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout
    flags = [] if "HYDRA" in version.upper() else ["--oversubscribe", "--allow-run-as-root"]  # Open MPI
    rows, status = [], 0
    for case in cases:
        env = dict(os.environ)
        worker_cmd = [sys.executable, os.path.abspath(__file__), "--worker", case, "--rounds", str(rounds)]
        # the GPU cases run on one rank: a singleton MPI process, no launcher needed
        cmd = worker_cmd if case.startswith("gpu/") else [exe, "-n", str(args.ranks), *flags, *worker_cmd]
        out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
        lines = [ln for ln in out.stdout.splitlines() if ln.startswith("RESULT ")]
        if out.returncode or not lines:
            print(f"\n== {case}: failed (exit {out.returncode})\n{out.stdout[-2000:]}{out.stderr[-2000:]}")
            status = 1
            continue
        rows += report(json.loads(lines[-1][7:]))
        if args.json:
            with open(args.json, "w") as f:
                json.dump(rows, f, indent=1)
    print("\n(CPU timings on a shared machine are provisional; the spread column says how noisy they were)")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
