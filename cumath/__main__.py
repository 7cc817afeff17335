"""Command line: ``python -m cumath info | demo | bench``.

  info    versions, the native libraries found (and where), GPUs, and the engines that will run
  demo    the flagship examples, checked against NumPy and timed (with their spread)
  bench   the benchmarks: cumath against its peers on this machine (`bench` alone lists the domains)
"""

from __future__ import annotations

import argparse
import os
import re
import sys

_BENCH_CALL = re.compile(r"\bBench\(\s*[\"']")


def benchmark_dir() -> str | None:
    """The folder of the benchmark scripts: installed with the package (``cumath/_benchmarks``, the source tree's
    ``benchmarks/``), else the source tree's ``benchmarks/``."""
    here = os.path.dirname(os.path.realpath(__file__))
    for folder in (os.path.join(here, "_benchmarks"), os.path.join(os.path.dirname(here), "benchmarks")):
        if os.path.isfile(os.path.join(folder, "harness.py")):
            return folder
    return None


def domains() -> dict[str, tuple[str, str]]:
    """Benchmark domain -> (script path, one-line description): every script of the folder that builds a Bench
    (so a new ``benchmarks/<domain>.py`` joins by itself)."""
    folder = benchmark_dir()
    found: dict[str, tuple[str, str]] = {}
    if folder is None:
        return found
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".py") or name.startswith("_") or name == "harness.py":
            continue
        path = os.path.join(folder, name)
        try:
            text = open(path, encoding="utf-8").read()
        except OSError:
            continue
        if not _BENCH_CALL.search(text):
            continue
        m = re.match(r'\s*(?:"""|\'\'\')(.*?)(?:\n\s*\n|"""|\'\'\')', text, re.S)
        para = " ".join(m.group(1).split()) if m else ""
        first = re.split(r"(?<=[a-z0-9)`])\.(?:\s|$)", para, maxsplit=1)[0]
        found[name[:-3]] = (path, first.split(": ", 1)[-1].rstrip("."))
    return found


def _domain_lines() -> str:
    found = domains()
    if not found:
        return "  (no benchmark scripts found with this installation)"
    width = max(len(d) for d in found)
    return "\n".join(f"  {d:<{width}}  {desc}" for d, (_, desc) in found.items())


def _bench(args) -> int:
    found = domains()
    if args.domain is None:
        print("benchmark domains (python -m cumath bench DOMAIN [--quick] [--plot out.png] [--help]):")
        print(_domain_lines())
        return 0
    if args.domain not in found:
        print(f"unknown benchmark domain {args.domain!r}; the domains are: {', '.join(found) or 'none'}",
              file=sys.stderr)
        return 2
    import runpy

    script = found[args.domain][0]
    folder = os.path.dirname(script)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    sys.argv = [f"python -m cumath bench {args.domain}", *args.rest]
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return 0


#: scripts of benchmarks/ that are helpers, not benchmarks
_NOT_BENCHMARKS = ("harness", "percall_compare", "parallel_nd")


def benchmark_names(folder: str) -> list:
    """The benchmark names ``bench`` accepts: the plain ``<name>.py`` scripts of ``folder`` (no paths)."""
    try:
        files = os.listdir(folder)
    except OSError:
        return []
    return sorted(f[:-3] for f in files if f.endswith(".py") and f[:-3].isidentifier()
                  and not f.startswith("_") and f[:-3] not in _NOT_BENCHMARKS)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cumath", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("info", help="versions, native libraries found, GPUs and the engines that will run")
    demo = sub.add_parser("demo", help="run the flagship examples, check them against NumPy, time them")
    demo.add_argument("--execution", choices=("auto", "cpu", "cuda"), default="auto",
                      help="where to run (default: the GPU when there is one, else the CPU)")
    bench = sub.add_parser(
        "bench", help="benchmark cumath against its peers on this machine (no domain: list the domains)",
        description="Benchmark cumath against its peers (NumPy, SciPy, pyFFTW, CuPy, PyTorch, nvmath-python, ...) "
                    "on this machine, in one process on the same data: medians, spread, and which is faster.\n\n"
                    "domains:\n" + _domain_lines() + "\n\nOptions after the domain go to its script, e.g. "
                    "`python -m cumath bench fft --quick --plot fft.png`; `python -m cumath bench fft --help` "
                    "lists them.", formatter_class=argparse.RawDescriptionHelpFormatter)
    bench.add_argument("domain", nargs="?", default=None, help="the benchmark domain (see above)")
    bench.add_argument("rest", nargs=argparse.REMAINDER, help="options of the domain's script")
    args = parser.parse_args(argv)
    if args.command == "info":
        from ._info import main as info_main

        return info_main()
    if args.command == "demo":
        from ._demo import main as demo_main

        return demo_main(args.execution)
    return _bench(args)


if __name__ == "__main__":
    sys.exit(main())
