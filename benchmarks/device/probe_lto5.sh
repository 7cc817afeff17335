#!/bin/bash
# Probe (issue 4): numba LTO-IR under the mangled name, machine's own cuFFT 12.0 and nvJitLink 13.0 (no wheels).
PYTHONPATH=$PWD python3 benchmarks/device/probe_lto_callback.py 2>&1 | tail -12
echo "== with the shim over the machine's nvJitLink 13.0 (if it fails)"
D=/tmp/lto; mkdir -p $D/shim; gcc -shared -fPIC -o $D/shim/libnvJitLink.so.13 benchmarks/device/nvjitlink_shim.c -ldl
OLD=$(python3 -c "import glob,site;print(glob.glob(site.getsitepackages()[0]+'/nvidia/cu13/lib/libnvJitLink.so.13')[0])")
REAL_NVJITLINK=$OLD LD_LIBRARY_PATH=$D/shim:$LD_LIBRARY_PATH PYTHONPATH=$PWD python3 benchmarks/device/probe_lto_callback.py 2>&1 | grep -v "add data" | head -40
