"""Generate the device code of every object the device tests, the benchmark and the examples use (device_cases.py),
plus the cuRAND shim, in parallel worker processes, into the disk cache (``CUMATH_CACHE_DIR``).

libmathdx runs NVRTC for each object (2-40 s each; the tensor-API bundles are the slowest), one at a time in a
process: generating them up front on every core makes the tests that follow compile only their kernels. A
cache that is already warm costs nothing (entries are content-addressed).

    python tests/device/pregenerate.py [--cc 90] [--jobs N] [--json out.json]
"""

import argparse
import concurrent.futures as cf
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))


def _objects(cc):
    import device_cases

    return device_cases.all_objects(cc)


def _generate(args):
    index, cc = args
    t0 = time.perf_counter()
    if index < 0:
        from cumath.device import random

        random.Compile(cc=cc).files
        return "curand shim", time.perf_counter() - t0, None
    label, obj, tensors = _objects(cc)[index]
    try:
        obj.files
        if tensors:
            from cumath.device._tensors import tensor_function

            obj._tensor_traits()
            tensor_function(obj, "COPY_WAIT", ())  # the Matmul's bundle of tensor functions
    except Exception as exc:  # reported, not fatal: the test that uses the object will show it
        return label, time.perf_counter() - t0, f"{type(exc).__name__}: {exc}"
    return label, time.perf_counter() - t0, None


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cc", type=int, default=90, help="compute capability (90 for the H200)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--json", help="write the per-object times here")
    args = parser.parse_args(argv)
    objs = _objects(args.cc)
    # the slowest first (tensor bundles, then GEMMs and solvers), so the pool ends together
    order = sorted(range(len(objs)), key=lambda i: (not objs[i][2], "gemm" not in objs[i][0]))
    t0 = time.perf_counter()
    rows = []
    with cf.ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for label, seconds, error in pool.map(_generate, [(-1, args.cc)] + [(i, args.cc) for i in order]):
            rows.append({"object": label, "seconds": round(seconds, 3), "error": error})
            print(f"  {label:<40s} {seconds:7.2f} s{'  ' + error if error else ''}", flush=True)
    wall = time.perf_counter() - t0
    errors = sum(1 for r in rows if r["error"])
    print(f"pregenerated {len(rows)} objects in {wall:.1f} s with {args.jobs} processes "
          f"(sum of per-object times {sum(r['seconds'] for r in rows):.1f} s), {errors} errors", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"wall_s": wall, "jobs": args.jobs, "objects": rows}, f, indent=1)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
