// Probe (issue 4): does cuFFT accept an LTO load callback made by NVRTC (-dlto), from plain C++, on this
// machine? Build and run there:
//   nvcc -o /tmp/probe benchmarks/device/probe_lto_callback.cu -lcufft -lnvrtc && /tmp/probe
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>
#include <cuda_runtime.h>
#include <cufftXt.h>
#include <nvrtc.h>

static const char *kSource =
    "struct __align__(8) c64 { float x, y; };\n"
    "extern \"C\" __device__ c64 cumath_load(void *in, unsigned long long offset, void *info, void *smem) {\n"
    "  c64 v = ((c64 *)in)[offset]; v.x *= 2.0f; v.y *= 2.0f; return v; }\n";

#define NV(x) do { nvrtcResult r_ = (x); if (r_ != NVRTC_SUCCESS) { printf("%s: %s\n", #x, nvrtcGetErrorString(r_)); return 1; } } while (0)
#define CF(x) do { cufftResult r_ = (x); printf("%-60s -> %d\n", #x, (int)r_); if (r_ != CUFFT_SUCCESS) return 2; } while (0)

static std::vector<char> read_file(const char *path) {
  std::vector<char> data;
  FILE *f = fopen(path, "rb");
  if (!f) return data;
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  data.resize(size);
  if (fread(data.data(), 1, size, f) != (size_t)size) data.clear();
  fclose(f);
  return data;
}

int main(int argc, char **argv) {
  int version = 0;
  cufftGetVersion(&version);
  printf("cufft version %d\n", version);
  nvrtcProgram prog;
  NV(nvrtcCreateProgram(&prog, kSource, "cb.cu", 0, nullptr, nullptr));
  const char *opts[] = {"-arch=sm_90", "-dlto", "-rdc=true"};
  nvrtcResult cr = nvrtcCompileProgram(prog, 3, opts);
  size_t logsize = 0;
  nvrtcGetProgramLogSize(prog, &logsize);
  std::vector<char> log(logsize + 1);
  nvrtcGetProgramLog(prog, log.data());
  printf("nvrtc compile: %s %s\n", nvrtcGetErrorString(cr), log.data());
  size_t n_lto = 0;
  NV(nvrtcGetLTOIRSize(prog, &n_lto));
  std::vector<char> lto(n_lto);
  NV(nvrtcGetLTOIR(prog, lto.data()));
  if (argc > 1) {  // a callback image made elsewhere (nvcc -fatbin -dlto, ...) instead of NVRTC's LTO-IR
    lto = read_file(argv[1]);
    n_lto = lto.size();
    printf("callback image from %s\n", argv[1]);
  }
  printf("LTO-IR: %zu bytes\n", n_lto);

  const int n = 1024, batch = 8;
  std::vector<float2> host(n * batch);
  for (int i = 0; i < n * batch; ++i) host[i] = make_float2((float)((i * 37) % 101) / 101.0f, (float)((i * 11) % 97) / 97.0f);
  float2 *d_in, *d_out;
  cudaMalloc(&d_in, sizeof(float2) * n * batch);
  cudaMalloc(&d_out, sizeof(float2) * n * batch);
  cudaMemcpy(d_in, host.data(), sizeof(float2) * n * batch, cudaMemcpyHostToDevice);

  cufftHandle plan, plain;
  size_t ws = 0;
  CF(cufftCreate(&plan));
  CF(cufftXtSetJITCallback(plan, "cumath_load", lto.data(), n_lto, CUFFT_CB_LD_COMPLEX, nullptr));
  CF(cufftMakePlan1d(plan, n, CUFFT_C2C, batch, &ws));
  CF(cufftExecC2C(plan, (cufftComplex *)d_in, (cufftComplex *)d_out, CUFFT_FORWARD));
  std::vector<float2> with_cb(n * batch), without(n * batch);
  cudaMemcpy(with_cb.data(), d_out, sizeof(float2) * n * batch, cudaMemcpyDeviceToHost);
  CF(cufftPlan1d(&plain, n, CUFFT_C2C, batch));
  CF(cufftExecC2C(plain, (cufftComplex *)d_in, (cufftComplex *)d_out, CUFFT_FORWARD));
  cudaMemcpy(without.data(), d_out, sizeof(float2) * n * batch, cudaMemcpyDeviceToHost);
  double num = 0, den = 0;
  for (int i = 0; i < n * batch; ++i) {
    double dx = with_cb[i].x - 2 * without[i].x, dy = with_cb[i].y - 2 * without[i].y;
    num += dx * dx + dy * dy;
    den += 4.0 * (without[i].x * without[i].x + without[i].y * without[i].y);
  }
  printf("callback result vs 2 x plain FFT: relative error %.2e -> %s\n", std::sqrt(num / den),
         std::sqrt(num / den) < 1e-5 ? "OK" : "WRONG");
  return 0;
}
