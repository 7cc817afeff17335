#!/bin/bash
# Probe (issue 4): cuFFT 12.0 of CUDA 13.0 binds nvJitLink's 13.1-versioned symbols; CUDA 13.0's nvJitLink lacks
# them. Does a newer nvJitLink (wheel) make LTO callbacks work? Run on the GPU machine with the wheel carried.
pip install -q --no-deps --no-index --target /tmp/nvjl .whl/nvidia_nvjitlink-*.whl 2>&1 | tail -2
L=$(dirname $(find /tmp/nvjl -name 'libnvJitLink.so.13' | head -1)); echo "nvJitLink from $L"
nm -D $L/libnvJitLink.so.13 | grep -E "nvJitLinkCreate" | head
D=/tmp/lto; mkdir -p $D
nvcc -o $D/probe benchmarks/device/probe_lto_callback.cu -lcufft -lnvrtc 2>&1 | tail -3
echo "== C probe, newer nvJitLink first"; LD_LIBRARY_PATH=$L $D/probe
echo "== python probe, LD_LIBRARY_PATH"; LD_LIBRARY_PATH=$L PYTHONPATH=$PWD python3 benchmarks/device/probe_lto_callback.py
echo "== python probe, ctypes preload"; PRELOAD=$L/libnvJitLink.so.13 PYTHONPATH=$PWD python3 benchmarks/device/probe_lto_callback.py
