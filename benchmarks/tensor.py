"""Tensor contraction benchmark: cumath.tensor against its peers, in one process, on the same data.

Groups (``--list`` shows every case):
  cpu   the three reference contractions scaled for a small CPU: 'abcd,cdef->abef' (extents 32), 'bij,bjk->bik'
        (256 batches of 32^3), 'ij,jk,kl->il' (512^2 operands), float32: cumath's stateless call and
        stateful execute against numpy.einsum(optimize=True), opt_einsum.contract and torch.einsum; 'percall':
        the per-call cost on 4 x 3^3 operands.
  gpu   the same on the GPU at full size ('abcd,cdef->abef' extents 64, 'bij,bjk->bik' 256 x 32^3,
        'ij,jk,kl->il' 1024^2), float32, PyTorch operands: cumath's stateless call, execute, and execute after
        autotune() (which also tries a JIT kernel for these large float32 cases; the note says which it kept)
        against torch.einsum, cupy.einsum and nvmath-python (stateless and stateful) where installed; the
        batched case also times cumath's planned cutensorContract alone (into a kept result: the library's own
        per-call cost) and torch.bmm (the cuBLAS call torch.einsum ends in).

    python benchmarks/tensor.py                  # every case; GPU cases skip without a GPU
    python benchmarks/tensor.py --cpu --quick
    python benchmarks/tensor.py --case gpu --json tensor-gpu.json
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import Bench, Skip, device_sync, optional  # noqa: E402

import cumath  # noqa: E402
import cumath.tensor  # noqa: E402

bench = Bench("tensor", __doc__)
RNG = np.random.default_rng(7)
SETTLE = 0.2

CASES = {  # name -> (expression, shapes on the CPU, shapes on the GPU)
    "4d": ("abcd,cdef->abef", [(32,) * 4, (32,) * 4], [(64,) * 4, (64,) * 4]),
    "batched": ("bij,bjk->bik", [(256, 32, 32), (256, 32, 32)], [(256, 32, 32), (256, 32, 32)]),
    "ternary": ("ij,jk,kl->il", [(512, 512)] * 3, [(1024, 1024)] * 3),
}


def _operands(shapes):
    return [RNG.standard_normal(s).astype(np.float32) for s in shapes]


def _cumath_fns(expr, ops):
    n = len(ops)
    stateless = cumath.tensor.binary_contraction if n == 2 else cumath.tensor.ternary_contraction
    cls = cumath.tensor.BinaryContraction if n == 2 else cumath.tensor.TernaryContraction
    obj = cls(expr, *ops)
    obj.plan()
    return {"cumath (stateless)": lambda: stateless(expr, *ops), "cumath execute (stateful)": obj.execute}, obj


def cpu_case(case, name):
    expr, shapes, _ = CASES[name]
    ops = _operands(shapes)
    expect = np.einsum(expr, *[o.astype(np.float64) for o in ops])
    fns, obj = _cumath_fns(expr, ops)
    got = fns["cumath (stateless)"]()
    err = float(np.linalg.norm(got - expect) / np.linalg.norm(expect))
    fns["numpy.einsum(optimize=True)"] = lambda: np.einsum(expr, *ops, optimize=True)
    oe = optional("opt_einsum")
    if oe is not None:
        fns["opt_einsum.contract"] = lambda: oe.contract(expr, *ops)
    else:
        case.note("opt_einsum is not installed: `pip install opt_einsum`")
    torch = optional("torch")
    if torch is not None:
        tops = [torch.from_numpy(o) for o in ops]
        fns["torch.einsum"] = lambda: torch.einsum(expr, *tops)
        fns["cumath (stateless, torch)"] = lambda: (cumath.tensor.binary_contraction if len(ops) == 2 else
                                                    cumath.tensor.ternary_contraction)(expr, *tops)
    case.note(f"{expr} {' x '.join(str(list(s)) for s in shapes)} float32; cumath's relative error against "
              f"float64 numpy.einsum {err:.1e}; steps {[(s.x, s.y) for s in obj.steps]}")
    case.time(fns, rounds=case.rounds(7, 3), target=0.1, settle=SETTLE)
    for who in ("cumath (stateless)", "cumath execute (stateful)"):
        case.ratio(who, "numpy.einsum(optimize=True)")
        if oe is not None:
            case.ratio(who, "opt_einsum.contract")
        if torch is not None:
            case.ratio(who, "torch.einsum")
    obj.free()


for _name, _title in (("4d", "abcd,cdef->abef, extents 32"), ("batched", "bij,bjk->bik, 256 x 32^3"),
                      ("ternary", "ij,jk,kl->il, 512^2")):
    bench.case(f"cpu/{_name}", f"CPU {_title} float32")(lambda case, n=_name: cpu_case(case, n))


@bench.case("cpu/percall", "CPU per-call cost: bij,bjk->bik on 4 x 3^3 float32 (the work is negligible)")
def cpu_percall(case):
    expr = "bij,bjk->bik"
    ops = _operands([(4, 3, 3), (4, 3, 3)])
    fns, obj = _cumath_fns(expr, ops)
    fns["numpy.einsum"] = lambda: np.einsum(expr, *ops)
    fns["numpy.matmul"] = lambda: np.matmul(*ops)
    torch = optional("torch")
    if torch is not None:
        tops = [torch.from_numpy(o) for o in ops]
        fns["torch.einsum"] = lambda: torch.einsum(expr, *tops)
        fns["cumath (stateless, torch)"] = lambda: cumath.tensor.binary_contraction(expr, *tops)
    case.note("what a call costs beyond its arithmetic: wrapping, the plan-cache lookup, the result's "
              "allocation and the engine's call")
    case.time(fns, rounds=case.rounds(7, 3), target=0.1, settle=SETTLE)
    for who in ("cumath (stateless)", "cumath execute (stateful)", "cumath (stateless, torch)"):
        if who in fns:
            case.ratio(who, "numpy.einsum")
            if torch is not None:
                case.ratio(who, "torch.einsum")
    obj.free()


def gpu_case(case, name):
    torch = optional("torch")
    if torch is None or not torch.cuda.is_available():
        raise Skip("PyTorch with CUDA is needed for the GPU operands")
    expr, _, shapes = CASES[name]
    ops = [torch.from_numpy(o).cuda() for o in _operands(shapes)]
    sync = device_sync()
    fns, obj = _cumath_fns(expr, ops)
    cls = cumath.tensor.BinaryContraction if len(ops) == 2 else cumath.tensor.TernaryContraction
    tuned = cls(expr, *ops)
    tuned.plan()
    tuned.autotune(iterations=3)  # cuTENSOR's incremental autotuning, and a JIT kernel where it may win
    fns["cumath execute (autotuned)"] = tuned.execute
    expect = torch.einsum(expr, *[o.double() for o in ops])
    got = fns["cumath (stateless)"]()
    err = float(((got.double() - expect).norm() / expect.norm()).item())
    fns["torch.einsum"] = lambda: torch.einsum(expr, *ops)
    if name == "batched":  # where a stateless call's time goes: the library call alone, and cuBLAS's kernel
        ex = obj._executor
        if getattr(ex, "simple", False):
            out = torch.empty_like(got)
            pa, pb, po = ops[0].data_ptr(), ops[1].data_ptr(), out.data_ptr()
            fns["cutensorContract alone (cumath's plan)"] = lambda: ex.run_binary(pa, pb, po, 1.0, obj._stream)
        fns["torch.bmm"] = lambda: torch.bmm(*ops)
    cp = optional("cupy")
    if cp is not None:
        cops = [cp.asarray(o) for o in ops]
        fns["cupy.einsum"] = lambda: cp.einsum(expr, *cops)
    nvmath = optional("nvmath")
    nv_obj = None
    if nvmath is not None and hasattr(nvmath, "tensor"):
        nt = nvmath.tensor
        fn = nt.binary_contraction if len(ops) == 2 else nt.ternary_contraction
        cls = nt.BinaryContraction if len(ops) == 2 else nt.TernaryContraction
        try:
            fn(expr, *ops)
            nv_obj = cls(expr, *ops)
            nv_obj.plan()
            fns["nvmath-python (stateless)"] = lambda: fn(expr, *ops)
            fns["nvmath-python execute"] = nv_obj.execute
        except Exception as exc:  # noqa: BLE001 - a peer that fails is left out with a note
            case.note(f"nvmath-python left out: {type(exc).__name__}: {exc}")
    else:
        case.note("nvmath-python (nvmath.tensor) is not installed")
    case.note(f"{expr} {' x '.join(str(list(s)) for s in shapes)} float32; relative error against float64 "
              f"torch.einsum {err:.1e}; autotune kept jit={tuned.plan_preference.jit.name}")
    case.time(fns, sync=sync, rounds=case.rounds(7, 3), target=0.1)
    for who in ("cumath (stateless)", "cumath execute (stateful)", "cumath execute (autotuned)",
                "cutensorContract alone (cumath's plan)"):
        if who not in fns:
            continue
        case.ratio(who, "torch.einsum")
        if "nvmath-python execute" in fns:
            case.ratio(who, "nvmath-python execute")
    obj.free()
    tuned.free()
    if nv_obj is not None:
        nv_obj.free()


for _name, _title in (("4d", "abcd,cdef->abef, extents 64"), ("batched", "bij,bjk->bik, 256 x 32^3"),
                      ("ternary", "ij,jk,kl->il, 1024^2")):
    bench.case(f"gpu/{_name}", f"GPU {_title} float32", gpu=True)(lambda case, n=_name: gpu_case(case, n))


if __name__ == "__main__":
    sys.exit(bench.main())
