#!/usr/bin/env bash
# Issue 5 (device APIs) on the GPU machine in one call: the device tests, the benchmark and the examples.
#
# libmathdx is not installed there: fetch its wheel here first (../shared/device/fetch-wheels
# nvidia-libmathdx-cu13==0.4.2.37 puts it in .whl/), then run, with
#   carry=[".whl/nvidia_libmathdx_cu13-0.4.2.37-py3-none-manylinux_2_28_x86_64.whl"], timeout_s=600:
#   export PYTHONUNBUFFERED=1; bash tests/device/gpu_session.sh 2>&1 | tee $OUT/log.txt
# Everything lands in $OUT (env.txt, device-tests.txt/.xml, device-bench.txt/.json, examples.txt); each step has
# its own time limit so that a slow one leaves the others' results.
set -u
OUT=${OUT:-/tmp/device-session}
mkdir -p "$OUT"
whl=$(ls .whl/nvidia_libmathdx_cu13-*.whl 2>/dev/null | head -1)
if [ -n "$whl" ]; then
  python3 -m pip install -q --no-index --no-deps --target /tmp/dxsite "$whl" 2>&1 | tail -2
fi
export PYTHONPATH=$PWD:/tmp/dxsite:${PYTHONPATH:-}
export CUMATH_CACHE_DIR=/tmp/cumath-device-cache

python3 - <<'EOF' 2>&1 | tee "$OUT/env.txt"
import numpy, sys
print("python", sys.version.split()[0], "numpy", numpy.__version__)
import cumath.device as dev
from cumath._core.numba_compat import numba_cuda_version
print("numba-cuda", numba_cuda_version())
print("unavailable:", dev.unavailable_reason())
from cumath._bindings import mathdx, nvrtc, _loader, curand_device
print("libmathdx", mathdx.mathdxGetVersionEx(), mathdx.mathdxGetCommit(), "nvrtc", nvrtc.nvrtcVersion())
print("headers", curand_device.include_dirs())
print("loaded", _loader.loaded_libraries())
EOF

# the GPU tests first (test_numba_device.py and the other CPU-side tests pass on the CPU machine)
timeout 330 python3 -m pytest -q -p no:cacheprovider -rs --durations=20 --junitxml="$OUT/device-tests.xml" \
  tests/device/test_device_gpu.py tests/device/test_mathdx_binding.py tests/device/test_device_import.py 2>&1 \
  | tee "$OUT/device-tests.txt" | tail -60
echo "device tests rc=${PIPESTATUS[0]}"

timeout 150 python3 benchmarks/device.py --json "$OUT/device-bench.json" 2>&1 | tee "$OUT/device-bench.txt"
echo "benchmark rc=${PIPESTATUS[0]}"

timeout 90 python3 -m pytest -q -p no:cacheprovider tests/test_examples.py -k device 2>&1 | tee "$OUT/examples.txt" \
  | tail -15
echo "examples rc=${PIPESTATUS[0]}"
