#!/usr/bin/env bash
# Issue 5 (device APIs) on the GPU machine in one call (<= 600 s): code generation, the device tests, the benchmark
# and the examples.
#
# libmathdx is not installed there: fetch its wheel here first (../shared/device/fetch-wheels
# nvidia-libmathdx-cu13==0.4.2.37 puts it in .whl/), then run, with
#   carry=[".whl/nvidia_libmathdx_cu13-0.4.2.37-py3-none-manylinux_2_28_x86_64.whl"], timeout_s=600:
#   export PYTHONUNBUFFERED=1; bash tests/device/gpu_session.sh 2>&1 | tee $OUT/log.txt
# Everything lands in $OUT (env.txt, pregenerate.txt/.json, device-tests.txt/.xml, device-bench.txt/.json,
# examples.txt). Each step has its own time limit (they add up to 550 s), so a slow one leaves the others' results.
#
# Where the time goes: libmathdx/NVRTC code generation (2-40 s per object; the first run spent most of its
# 227 s there, one object after another) now runs first, for every object at once, in 16 processes
# (pregenerate.py); the tests then only compile their kernels (numba + nvJitLink, about 1-3 s each on the CPU
# machine; each kernel is built once per process: device_kernels.py memoises them).
set -u
OUT=${OUT:-/tmp/device-session}
mkdir -p "$OUT"
whl=$(ls .whl/nvidia_libmathdx_cu13-*.whl 2>/dev/null | head -1)
if [ -n "$whl" ]; then
  python3 -m pip install -q --no-index --no-deps --target /tmp/dxsite "$whl" 2>&1 | tail -2
fi
export PYTHONPATH=$PWD:/tmp/dxsite:${PYTHONPATH:-}
export CUMATH_CACHE_DIR=${CUMATH_CACHE_DIR:-/tmp/cumath-device-cache}

timeout 20 python3 - <<'EOF' 2>&1 | tee "$OUT/env.txt"
import numpy, os, sys
print("python", sys.version.split()[0], "numpy", numpy.__version__, "cpus", os.cpu_count())
import cumath.device as dev
from cumath._core.numba_compat import numba_cuda_version
print("numba-cuda", numba_cuda_version())
print("unavailable:", dev.unavailable_reason())
from cumath._bindings import mathdx, nvrtc, _loader
from cumath.device.random import _shim
print("libmathdx", mathdx.mathdxGetVersionEx(), mathdx.mathdxGetCommit(), "nvrtc", nvrtc.nvrtcVersion())
print("headers", _shim.include_dirs())
print("loaded", _loader.loaded_libraries())
EOF

# 1. all device code, in parallel (objects of the tests, benchmark and examples; the cuRAND shim)
timeout 90 python3 tests/device/pregenerate.py --cc 90 --jobs "$(nproc)" --json "$OUT/pregenerate.json" 2>&1 \
  | tee "$OUT/pregenerate.txt" | tail -3
echo "pregenerate rc=${PIPESTATUS[0]}"

# 2. the GPU tests (the CPU-side tests of tests/device pass on the CPU machine)
timeout 200 python3 -m pytest -q -p no:cacheprovider -rs --durations=25 --junitxml="$OUT/device-tests.xml" \
  tests/device/test_device_gpu.py tests/device/test_device_gpu_more.py tests/device/test_mathdx_binding.py \
  tests/device/test_device_import.py tests/device/test_access.py 2>&1 | tee "$OUT/device-tests.txt" | tail -70
echo "device tests rc=${PIPESTATUS[0]}"

# 3. the benchmark (issue 5's figures)
# twice, for the spread (the machine is shared and its clock follows its power cap)
for run in 1 2; do
  timeout 90 python3 benchmarks/device.py --json "$OUT/device-bench-$run.json" 2>&1 | tee "$OUT/device-bench-$run.txt"
  echo "benchmark run $run rc=${PIPESTATUS[0]}"
done

# 4. the examples, with the warm cache (tests/test_examples.py would give each a cold one)
for f in examples/device_*.py; do
  timeout 15 python3 "$f" > "$OUT/example-$(basename "$f" .py).txt" 2>&1
  echo "$f rc=$?" | tee -a "$OUT/examples.txt"
done
