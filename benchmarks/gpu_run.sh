#!/usr/bin/env bash
# The GPU machine's part of a verification, in phases that each fit one device call (<= 10 min):
#
#   bash benchmarks/gpu_run.sh tests      every GPU test but cumath.device's and cumath.tensor's (soak excluded)
#   bash benchmarks/gpu_run.sh more       examples, the ctypes fallback of the hot paths, the GPU soak run
#   bash benchmarks/gpu_run.sh tensor     cumath.tensor tests and benchmarks/tensor.py (needs cuTENSOR)
#   bash benchmarks/gpu_run.sh sparse     benchmarks/sparse.py and the cuDSS reordering table (needs cuDSS)
#   bash benchmarks/gpu_run.sh device     cumath.device: code generation, GPU tests, examples (needs libmathdx)
#   bash benchmarks/gpu_run.sh bench      benchmarks/fft.py and matmul.py, GPU cases (--quick)
#   bash benchmarks/gpu_run.sh solvers    benchmarks/solvers.py, dense and sparse (needs cuDSS)
#   bash benchmarks/gpu_run.sh cudss      the sparse GPU tests, the Poisson 90k / 1M cases and the 90k plan table
#   bash benchmarks/gpu_run.sh ordering   cuDSS with cumath's parallel ordering as a user permutation (needs cuDSS)
#   bash benchmarks/gpu_run.sh cudss-1m   the 1M plan table (every planning setting on the 1M Poisson system)
#   bash benchmarks/gpu_run.sh percall ROOT_BEFORE   per-call costs of this tree against another checkout
#   bash benchmarks/gpu_run.sh dist       cumath.distributed's GPU engines: tests and one-rank benchmarks
#                                         (needs cuBLASMp, cuSOLVERMp, cuFFTMp)
#   bash benchmarks/gpu_run.sh hot        per-call costs of this tree: the compiled hot paths, the binding calls
#   bash benchmarks/gpu_run.sh stage      only copy the wheel parts carried in .stage/<n>/ to /tmp/stage
#
# Every phase first copies carried wheel parts to /tmp/stage, joins each wheel whose parts are all there (a
# joined file that is not a valid zip is left for the next part) and installs it.
#
# Wheels the machine lacks (libmathdx, cuDSS, nvmath-python) are installed from .whl/ and /tmp/*.whl (cuDSS
# arrives in parts: see ../shared/device/README.md) into /tmp/site, which stays while the machine does.
# Logs and JSON go to $OUT (at most 8 files come back per call).
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/gpu-run}
mkdir -p "$OUT" /tmp/site
phase=${1:-tests}
log="$OUT/$phase-log.txt"

mkdir -p /tmp/stage
for part in .stage/*/*.part.*; do [ -f "$part" ] && cp "$part" /tmp/stage/; done
for first in /tmp/stage/*.part.00; do
  [ -f "$first" ] || continue
  whl="/tmp/$(basename "${first%.part.00}")"
  [ -f "$whl" ] && continue
  cat "${first%.00}".* > "$whl.tmp"
  if python3 -c "import sys, zipfile; sys.exit(zipfile.ZipFile(sys.argv[1]).testzip() is not None)" "$whl.tmp" 2>/dev/null; then
    mv "$whl.tmp" "$whl"; echo "joined $(basename "$whl")"
  else
    rm -f "$whl.tmp"; echo "parts of $(basename "$whl") so far: $(ls "${first%.00}".* | wc -l)"
  fi
done
for whl in .whl/*.whl /tmp/*.whl; do
  [ -f "$whl" ] || continue
  stamp="/tmp/site/.installed-$(basename "$whl")"
  [ -f "$stamp" ] && continue
  # a wheel is a zip: extracting merges folders that several wheels share (nvidia/cu13/lib), which
  # `pip install --target` refuses without --upgrade (and --upgrade would replace the other wheels' files)
  if python3 -m zipfile -e "$whl" /tmp/site > /tmp/pip.log 2>&1; then
    touch "$stamp"
  else
    tail -2 /tmp/pip.log
  fi
done
export PYTHONPATH=$PWD:/tmp/site:${PYTHONPATH:-}
export LD_LIBRARY_PATH=/tmp/site/nvidia/cu13/lib:${LD_LIBRARY_PATH:-}
export CUMATH_CACHE_DIR=${CUMATH_CACHE_DIR:-/tmp/cumath-cache}

{
  echo "== $phase on $(nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv,noheader)"
  python3 -c "import numpy, cupy, torch; print('numpy', numpy.__version__, 'cupy', cupy.__version__, 'torch', torch.__version__)"
  git log --oneline -1 2>/dev/null
} > "$log" 2>&1

# the compiled hot path (cumath/_core/_fast), built in place as `pip install` would build it; without it the
# ctypes fallback runs (CUMATH_NATIVE=0 forces that)
python3 setup.py -q build_ext --inplace >> "$log" 2>&1
echo "C extension build rc=$? ($(python3 -c 'from cumath._core import _fast; print("native" if _fast.NATIVE else "ctypes fallback")' 2>&1))" >> "$log"

pytest_gpu() {  # name, timeout, pytest arguments...
  local name=$1 limit=$2
  shift 2
  timeout "$limit" python3 -m pytest -q -p no:cacheprovider -rfE "$@" > "$OUT/$name.txt" 2>&1
  echo "$name rc=$? $(tail -1 "$OUT/$name.txt")" | tee -a "$log"
}

case "$phase" in
  tests)
    pytest_gpu tests-gpu 540 -m "gpu and not soak" tests --ignore=tests/device --ignore=tests/tensor
    ;;
  more)
    pytest_gpu tests-examples 120 tests/test_examples.py
    CUMATH_NATIVE=0 pytest_gpu tests-fallback 150 -m gpu tests/core/test_fast.py tests/fft/test_fft_gpu.py \
      tests/linalg/advanced/test_matmul_gpu.py
    CUMATH_SOAK_CALLS=20000 pytest_gpu tests-soak 200 tests/reliability/test_soak.py
    ;;
  tensor)
    pytest_gpu tensor-tests 300 tests/tensor
    timeout 240 python3 benchmarks/tensor.py --gpu --json "$OUT/tensor.json" > "$OUT/tensor.txt" 2>&1
    echo "tensor rc=$?" | tee -a "$log"
    ;;
  sparse)
    timeout 300 python3 benchmarks/sparse.py --gpu --json "$OUT/sparse.json" > "$OUT/sparse.txt" 2>&1
    echo "sparse rc=$?" | tee -a "$log"
    timeout 280 python3 benchmarks/solvers_sparse.py --reorderings --json "$OUT/reorder.json" > "$OUT/reorder.txt" 2>&1
    echo "reorderings rc=$?" | tee -a "$log"
    ;;
  device)
    timeout 100 python3 tests/device/pregenerate.py --cc 90 --jobs "$(nproc)" --json "$OUT/pregenerate.json" \
      > "$OUT/pregenerate.txt" 2>&1
    echo "pregenerate rc=$? $(tail -1 "$OUT/pregenerate.txt")" | tee -a "$log"
    pytest_gpu device-tests 300 tests/device/test_device_gpu.py tests/device/test_device_gpu_more.py \
      tests/device/test_mathdx_binding.py tests/device/test_device_import.py tests/device/test_access.py \
      tests/fft/test_callbacks_gpu.py tests/core/test_kernels.py
    for f in examples/device_*.py examples/fft_callback_*.py; do
      timeout 30 python3 "$f" >> "$OUT/examples.txt" 2>&1
      echo "$f rc=$?" | tee -a "$log"
    done
    ;;
  bench)
    timeout 200 python3 benchmarks/fft.py --gpu --quick --json "$OUT/fft.json" > "$OUT/fft.txt" 2>&1
    echo "fft rc=$?" | tee -a "$log"
    timeout 280 python3 benchmarks/matmul.py --gpu --quick --json "$OUT/matmul.json" > "$OUT/matmul.txt" 2>&1
    echo "matmul rc=$?" | tee -a "$log"
    ;;
  cudss)
    pytest_gpu sparse-tests 240 -m gpu tests/sparse
    timeout 300 python3 benchmarks/solvers_sparse.py --case sparse/gpu-poisson-90k --case sparse/gpu-poisson-1m \
      --json "$OUT/poisson.json" > "$OUT/poisson.txt" 2>&1
    echo "poisson rc=$?" | tee -a "$log"
    timeout 100 python3 benchmarks/solvers_sparse.py --case sparse/gpu-plan-settings --json "$OUT/plan-settings.json" \
      > "$OUT/plan-settings.txt" 2>&1
    echo "plan-settings rc=$?" | tee -a "$log"
    ;;
  ordering)
    for side in 300 1000; do
      timeout 280 python3 benchmarks/cudss_ordering.py --side $side ${CUMATH_ORDERING_ARGS:-} --json "$OUT/ordering-$side.json" \
        > "$OUT/ordering-$side.txt" 2>&1
      echo "ordering $side rc=$?" | tee -a "$log"
    done
    ;;
  cudss-1m)
    timeout 420 python3 benchmarks/solvers_sparse.py --case sparse/gpu-plan-settings-1m \
      --json "$OUT/plan-settings-1m.json" > "$OUT/plan-settings-1m.txt" 2>&1
    echo "plan-settings-1m rc=$?" | tee -a "$log"
    ;;
  solvers)
    timeout 500 python3 benchmarks/solvers.py --gpu --quick --json "$OUT/solvers.json" > "$OUT/solvers.txt" 2>&1
    echo "solvers rc=$?" | tee -a "$log"
    ;;
  dist)
    # Open MPI's singleton start needs no ssh/rsh, but its rsh launcher refuses to load without one (containers)
    export OMPI_MCA_plm=${OMPI_MCA_plm:-^rsh}
    # cuBLASMp/cuSOLVERMp need NCCL >= 2.29.2; PyTorch links the machine's older libnccl.so.2 by soname, so a
    # staged newer NCCL is preloaded (one libnccl.so.2 per process, the newer one)
    nccl=/tmp/site/nvidia/nccl/lib/libnccl.so.2
    [ -f "$nccl" ] && export LD_PRELOAD=$nccl${LD_PRELOAD:+:$LD_PRELOAD} && echo "preloading $nccl" | tee -a "$log"
    pytest_gpu dist-tests 200 -m gpu tests/distributed
    timeout 240 python3 benchmarks/distributed.py --case gpu/fft-512cube,gpu/matmul-8192,gpu/solve-8192 \
      --json "$OUT/distributed.json" > "$OUT/distributed.txt" 2>&1
    echo "distributed rc=$?" | tee -a "$log"
    ;;
  hot)
    timeout 150 python3 benchmarks/percall_compare.py "$PWD" "$PWD" 1 "$OUT/percall.json" > "$OUT/percall.txt" 2>&1
    echo "percall rc=$?" | tee -a "$log"
    timeout 60 python3 benchmarks/fft.py --gpu --case percall/gpu-2048 --json "$OUT/fft-percall.json" \
      > "$OUT/fft-percall.txt" 2>&1
    echo "fft percall rc=$?" | tee -a "$log"
    timeout 60 python3 benchmarks/matmul.py --gpu --case percall/gpu-advanced-64 --json "$OUT/matmul-percall.json" \
      > "$OUT/matmul-percall.txt" 2>&1
    echo "matmul percall rc=$?" | tee -a "$log"
    timeout 60 python3 benchmarks/bindings.py --json "$OUT/bindings.json" > "$OUT/bindings.txt" 2>&1
    echo "bindings rc=$?" | tee -a "$log"
    ;;
  stage)
    ls -la /tmp/stage /tmp/*.whl 2>&1 | tee -a "$log"
    ;;
  percall)
    before=${2:?the checkout to compare with}
    timeout 400 python3 benchmarks/percall_compare.py "$before" "$PWD" 1 "$OUT/percall.json" > "$OUT/percall.txt" 2>&1
    echo "percall rc=$?" | tee -a "$log"
    ;;
  *)
    echo "unknown phase $phase" | tee -a "$log"
    exit 2
    ;;
esac
