"""Command line: ``python -m cumath info | demo | bench``."""

from __future__ import annotations

import argparse
import os
import sys


#: scripts of benchmarks/ that are helpers, not benchmarks
_NOT_BENCHMARKS = ("harness", "percall_compare")


def benchmark_names(folder: str) -> list:
    """The benchmark names ``bench`` accepts: the plain ``<name>.py`` scripts of ``folder`` (no paths)."""
    try:
        files = os.listdir(folder)
    except OSError:
        return []
    return sorted(f[:-3] for f in files if f.endswith(".py") and f[:-3].isidentifier()
                  and not f.startswith("_") and f[:-3] not in _NOT_BENCHMARKS)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cumath", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("info", help="versions, native libraries found, GPUs and the CPU FFT engine")
    demo = sub.add_parser("demo", help="run the flagship examples, check them against NumPy, time them")
    demo.add_argument("--execution", choices=("auto", "cpu", "cuda"), default="auto",
                      help="where to run (default: the GPU when there is one, else the CPU)")
    bench = sub.add_parser("bench", help="run a benchmark script from benchmarks/ (e.g. fft)")
    bench.add_argument("domain", nargs="?", default="fft")
    bench.add_argument("rest", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    if args.command == "info":
        from ._info import main as info_main

        return info_main()
    if args.command == "demo":
        from ._demo import main as demo_main

        return demo_main(args.execution)
    import runpy

    folder = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks")
    known = benchmark_names(folder)
    if args.domain not in known:
        listed = ", ".join(known) if known else "none found (benchmarks live in the source tree)"
        print(f"unknown benchmark {args.domain!r}; the benchmarks are: {listed}", file=sys.stderr)
        return 2
    script = os.path.join(folder, f"{args.domain}.py")
    sys.argv = [script, *args.rest]
    runpy.run_path(script, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
