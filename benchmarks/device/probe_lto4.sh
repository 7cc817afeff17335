#!/bin/bash
# Probe (issue 4): see inside cuFFT's JIT link through a forwarding nvJitLink (nvjitlink_shim.c).
pip install -q --no-deps --no-index --target /tmp/nvjl .whl/nvidia_nvjitlink-*.whl 2>&1 | grep -v WARNING | tail -2
NEW=$(find /tmp/nvjl -name 'libnvJitLink.so.13' | head -1)
OLD=$(python3 -c "import glob,site;print(glob.glob(site.getsitepackages()[0]+'/nvidia/cu13/lib/libnvJitLink.so.13')[0])")
D=/tmp/lto; mkdir -p $D/shim
gcc -shared -fPIC -o $D/shim/libnvJitLink.so.13 benchmarks/device/nvjitlink_shim.c -ldl
nvcc -o $D/probe benchmarks/device/probe_lto_callback.cu -lcufft -lnvrtc 2>&1 | tail -3

for real in $NEW; do
  echo "== shim over $real"; REAL_NVJITLINK=$real LD_LIBRARY_PATH=$D/shim:$LD_LIBRARY_PATH $D/probe 2>&1 | head -80
done
echo "== shim, python/numba over new"; REAL_NVJITLINK=$NEW LD_LIBRARY_PATH=$D/shim:$LD_LIBRARY_PATH PYTHONPATH=$PWD python3 benchmarks/device/probe_lto_callback.py 2>&1 | head -80
