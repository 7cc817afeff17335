#!/bin/bash
# Probe (issue 4): why does cuFFT 12.0 planning with an LTO callback fail here? Run on the GPU machine.
set -x
CUFFT=$(python3 -c "import glob,site;print(sorted(glob.glob(site.getsitepackages()[0]+'/nvidia/cu13/lib/libcufft.so*'))[0])")
ls -la $(dirname $CUFFT) /usr/local/cuda/lib64 | grep -iE "cufft|nvrtc|jitlink"
strings -a $CUFFT | grep -iE 'libnvrtc|nvjitlink|\.so\.|^CUFFT_[A-Z_]*$|getenv|_LOG' | sort -u | head -60
D=/tmp/lto; mkdir -p $D
cat > $D/cb.cu <<'CB'
struct __align__(8) c64 { float x, y; };
extern "C" __device__ c64 cumath_load(void *in, unsigned long long offset, void *info, void *smem) {
  c64 v = ((c64 *)in)[offset]; v.x *= 2.0f; v.y *= 2.0f; return v; }
CB
nvcc --version | tail -2
nvcc -o $D/probe benchmarks/device/probe_lto_callback.cu -lcufft -lnvrtc 2>&1 | tail -3
nvcc -dlto -arch=sm_90 -fatbin $D/cb.cu -o $D/cb_fatbin_sm90.bin 2>&1 | tail -3
nvcc -gencode arch=compute_90,code=lto_90 -fatbin $D/cb.cu -o $D/cb_fatbin_lto90.bin 2>&1 | tail -3
nvcc -dlto -dc -arch=sm_90 $D/cb.cu -o $D/cb_dc.o 2>&1 | tail -3
ls -la $D
echo "== nvrtc ltoir, default libs"; $D/probe
echo "== LD_DEBUG"; LD_DEBUG=libs $D/probe 2>&1 | grep -iE "nvrtc|jitlink|cannot|error" | grep -v "^ *[0-9]*: *$" | head -30
for f in cb_fatbin_sm90.bin cb_fatbin_lto90.bin cb_dc.o; do echo "== $f"; $D/probe $D/$f; done
echo "== with cu13 wheel lib first"; LD_LIBRARY_PATH=$(dirname $CUFFT) $D/probe $D/cb_fatbin_sm90.bin
echo "== ldd"; ldd $D/probe | grep -iE "cufft|nvrtc|jit|cudart"
nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv
pip list 2>/dev/null | grep -iE "nvmath|cufft|nvjitlink|nvrtc|numba"
