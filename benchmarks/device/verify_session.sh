#!/bin/bash
# One GPU call for a session's verification: every GPU test, the examples, and the GPU benchmarks of the
# session's issues. Logs and JSON under $OUT. Usage (device tool): bash benchmarks/device/verify_session.sh
export PYTHONUNBUFFERED=1
export PYTHONPATH=$PWD
O=${OUT:-/tmp/out}; mkdir -p $O
nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv > $O/gpu.txt
python3 -c "import numpy, cupy, torch; print('numpy', numpy.__version__, 'cupy', cupy.__version__, 'torch', torch.__version__)" >> $O/gpu.txt
# Tests of the finished issues first (their summary lines matter), then the groundwork of the open ones.
timeout 240 python3 -m pytest -q -p no:cacheprovider -m gpu tests --ignore=tests/device -x -q 2>&1 | tail -25 > $O/tests_gpu.txt
tail -3 $O/tests_gpu.txt
timeout 60 python3 -m pytest -q -p no:cacheprovider tests/test_examples.py 2>&1 | tail -3 > $O/tests_examples.txt
tail -1 $O/tests_examples.txt
timeout 150 python3 benchmarks/matmul_gpu.py --json $O/matmul_gpu.json > $O/matmul_gpu.txt 2>&1; tail -25 $O/matmul_gpu.txt
timeout 60 python3 benchmarks/matmul_tall_skinny.py --json $O/matmul_tall_skinny.json > $O/matmul_tall_skinny.txt 2>&1; tail -15 $O/matmul_tall_skinny.txt
timeout 120 python3 benchmarks/fft_callbacks.py --json $O/fft_callbacks.json > $O/fft_callbacks.txt 2>&1; sed -n '/-- ratios/,/^$/p' $O/fft_callbacks.txt
if [ -d tests/device ] && [ "${WITH_DEVICE_TESTS:-0}" = 1 ]; then
  timeout 120 python3 -m pytest -q -p no:cacheprovider -m gpu tests/device 2>&1 | tail -30 > $O/tests_device.txt; tail -3 $O/tests_device.txt
fi
