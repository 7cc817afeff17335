"""Command line: ``python -m cumath info | demo | bench``."""

from __future__ import annotations

import argparse
import sys


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
    import os
    import runpy

    script = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks",
                          f"{args.domain}.py")
    if not os.path.exists(script):
        print(f"no benchmark script {script} (benchmarks live in the source tree)", file=sys.stderr)
        return 2
    sys.argv = [script, *args.rest]
    runpy.run_path(script, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
