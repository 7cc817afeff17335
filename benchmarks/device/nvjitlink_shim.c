// Probe (issue 4): a stand-in libnvJitLink.so.13 that forwards cuFFT's calls to the real library (path in
// REAL_NVJITLINK) and prints the link options, inputs and logs, so a failing JIT link inside cuFFT shows why.
// Generated for suffixes _13_0.._13_5 (those of nvJitLink 13.5). Build: gcc -shared -fPIC -o DIR/libnvJitLink.so.13 nvjitlink_shim.c -ldl ; run with LD_LIBRARY_PATH=DIR.
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

typedef int (*fn_t)();
static void *real(const char *name) {
  // The same function under the newest version suffix (_13_N) that the real library has.
  static void *lib;
  if (!lib) lib = dlopen(getenv("REAL_NVJITLINK"), RTLD_NOW | RTLD_LOCAL);
  if (!lib) return NULL;
  char buf[128];
  snprintf(buf, sizeof buf, "%s", name);
  size_t n = strlen(buf);
  for (;;) {
    void *f = dlsym(lib, buf);
    if (f) return f;
    if (n < 2 || buf[n - 2] != '_' || buf[n - 1] == '0') break;
    buf[n - 1]--;
  }
  fprintf(stderr, "[shim] missing %s\n", name);
  return NULL;
}
static void print_log(void *h, const char *what, const char *size_fn, const char *log_fn) {
  size_t n = 0;
  int (*sz)(void *, size_t *) = real(size_fn);
  int (*lg)(void *, char *) = real(log_fn);
  if (!sz || !lg) return;
  sz(h, &n);
  if (n > 1) {
    char *buf = malloc(n + 1);
    lg(h, buf);
    buf[n] = 0;
    fprintf(stderr, "[shim] %s log:\n%s\n", what, buf);
    free(buf);
  }
}
int __nvJitLinkCreate_13_0(void **h, uint32_t n, const char **opts) {
  for (uint32_t i = 0; i < n; ++i) fprintf(stderr, "[shim] option %s\n", opts[i]);
  int (*f)(void **, uint32_t, const char **) = real("__nvJitLinkCreate_13_0");
  int r = f ? f(h, n, opts) : 7;
  fprintf(stderr, "[shim] create_13_0 -> %d\n", r);
  return r;
}
int __nvJitLinkDestroy_13_0(void **h) { int (*f)(void **) = real("__nvJitLinkDestroy_13_0"); return f ? f(h) : 7; }
int __nvJitLinkAddData_13_0(void *h, int type, const void *data, size_t size, const char *name) {
  int (*f)(void *, int, const void *, size_t, const char *) = real("__nvJitLinkAddData_13_0");
  int r = f ? f(h, type, data, size, name) : 7;
  fprintf(stderr, "[shim] add data type %d size %zu name %s -> %d\n", type, size, name ? name : "(null)", r);
  if (r) print_log(h, "error", "__nvJitLinkGetErrorLogSize_13_0", "__nvJitLinkGetErrorLog_13_0");
  return r;
}
int __nvJitLinkComplete_13_0(void *h) {
  int (*f)(void *) = real("__nvJitLinkComplete_13_0");
  int r = f ? f(h) : 7;
  fprintf(stderr, "[shim] complete -> %d\n", r);
  print_log(h, "error", "__nvJitLinkGetErrorLogSize_13_0", "__nvJitLinkGetErrorLog_13_0");
  print_log(h, "info", "__nvJitLinkGetInfoLogSize_13_0", "__nvJitLinkGetInfoLog_13_0");
  return r;
}
int __nvJitLinkGetErrorLogSize_13_0(void *h, size_t * a) { int (*f)(void *, size_t *) = real("__nvJitLinkGetErrorLogSize_13_0"); if (!f) fprintf(stderr, "[shim] called missing GetErrorLogSize_13_0\n"); return f ? f(h, a) : 7; }
int __nvJitLinkGetErrorLog_13_0(void *h, char * a) { int (*f)(void *, char *) = real("__nvJitLinkGetErrorLog_13_0"); if (!f) fprintf(stderr, "[shim] called missing GetErrorLog_13_0\n"); return f ? f(h, a) : 7; }
int __nvJitLinkGetInfoLogSize_13_0(void *h, size_t * a) { int (*f)(void *, size_t *) = real("__nvJitLinkGetInfoLogSize_13_0"); if (!f) fprintf(stderr, "[shim] called missing GetInfoLogSize_13_0\n"); return f ? f(h, a) : 7; }
int __nvJitLinkGetInfoLog_13_0(void *h, char * a) { int (*f)(void *, char *) = real("__nvJitLinkGetInfoLog_13_0"); if (!f) fprintf(stderr, "[shim] called missing GetInfoLog_13_0\n"); return f ? f(h, a) : 7; }
int __nvJitLinkGetLinkedCubinSize_13_0(void *h, size_t * a) { int (*f)(void *, size_t *) = real("__nvJitLinkGetLinkedCubinSize_13_0"); if (!f) fprintf(stderr, "[shim] called missing GetLinkedCubinSize_13_0\n"); return f ? f(h, a) : 7; }
int __nvJitLinkGetLinkedCubin_13_0(void *h, void * a) { int (*f)(void *, void *) = real("__nvJitLinkGetLinkedCubin_13_0"); if (!f) fprintf(stderr, "[shim] called missing GetLinkedCubin_13_0\n"); return f ? f(h, a) : 7; }
int __nvJitLinkGetLinkedPtxSize_13_0(void *h, size_t * a) { int (*f)(void *, size_t *) = real("__nvJitLinkGetLinkedPtxSize_13_0"); if (!f) fprintf(stderr, "[shim] called missing GetLinkedPtxSize_13_0\n"); return f ? f(h, a) : 7; }
int __nvJitLinkGetLinkedPtx_13_0(void *h, char * a) { int (*f)(void *, char *) = real("__nvJitLinkGetLinkedPtx_13_0"); if (!f) fprintf(stderr, "[shim] called missing GetLinkedPtx_13_0\n"); return f ? f(h, a) : 7; }
int __nvJitLinkCreate_13_1(void **h, uint32_t n, const char **opts) {
  for (uint32_t i = 0; i < n; ++i) fprintf(stderr, "[shim] option %s\n", opts[i]);
  int (*f)(void **, uint32_t, const char **) = real("__nvJitLinkCreate_13_1");
  int r = f ? f(h, n, opts) : 7;
  fprintf(stderr, "[shim] create_13_1 -> %d\n", r);
  return r;
}
int __nvJitLinkDestroy_13_1(void **h) { int (*f)(void **) = real("__nvJitLinkDestroy_13_1"); return f ? f(h) : 7; }
int __nvJitLinkAddData_13_1(void *h, int type, const void *data, size_t size, const char *name) {
  int (*f)(void *, int, const void *, size_t, const char *) = real("__nvJitLinkAddData_13_1");
  int r = f ? f(h, type, data, size, name) : 7;
  fprintf(stderr, "[shim] add data type %d size %zu name %s -> %d\n", type, size, name ? name : "(null)", r);
  if (r) print_log(h, "error", "__nvJitLinkGetErrorLogSize_13_1", "__nvJitLinkGetErrorLog_13_1");
  return r;
}
int __nvJitLinkComplete_13_1(void *h) {
  int (*f)(void *) = real("__nvJitLinkComplete_13_1");
  int r = f ? f(h) : 7;
  fprintf(stderr, "[shim] complete -> %d\n", r);
  print_log(h, "error", "__nvJitLinkGetErrorLogSize_13_1", "__nvJitLinkGetErrorLog_13_1");
  print_log(h, "info", "__nvJitLinkGetInfoLogSize_13_1", "__nvJitLinkGetInfoLog_13_1");
  return r;
}
int __nvJitLinkGetErrorLogSize_13_1(void *h, size_t * a) { int (*f)(void *, size_t *) = real("__nvJitLinkGetErrorLogSize_13_1"); if (!f) fprintf(stderr, "[shim] called missing GetErrorLogSize_13_1\n"); return f ? f(h, a) : 7; }
int __nvJitLinkGetErrorLog_13_1(void *h, char * a) { int (*f)(void *, char *) = real("__nvJitLinkGetErrorLog_13_1"); if (!f) fprintf(stderr, "[shim] called missing GetErrorLog_13_1\n"); return f ? f(h, a) : 7; }
int __nvJitLinkGetInfoLogSize_13_1(void *h, size_t * a) { int (*f)(void *, size_t *) = real("__nvJitLinkGetInfoLogSize_13_1"); if (!f) fprintf(stderr, "[shim] called missing GetInfoLogSize_13_1\n"); return f ? f(h, a) : 7; }
int __nvJitLinkGetInfoLog_13_1(void *h, char * a) { int (*f)(void *, char *) = real("__nvJitLinkGetInfoLog_13_1"); if (!f) fprintf(stderr, "[shim] called missing GetInfoLog_13_1\n"); return f ? f(h, a) : 7; }
int __nvJitLinkGetLinkedCubinSize_13_1(void *h, size_t * a) { int (*f)(void *, size_t *) = real("__nvJitLinkGetLinkedCubinSize_13_1"); if (!f) fprintf(stderr, "[shim] called missing GetLinkedCubinSize_13_1\n"); return f ? f(h, a) : 7; }
int __nvJitLinkGetLinkedCubin_13_1(void *h, void * a) { int (*f)(void *, void *) = real("__nvJitLinkGetLinkedCubin_13_1"); if (!f) fprintf(stderr, "[shim] called missing GetLinkedCubin_13_1\n"); return f ? f(h, a) : 7; }
int __nvJitLinkGetLinkedPtxSize_13_1(void *h, size_t * a) { int (*f)(void *, size_t *) = real("__nvJitLinkGetLinkedPtxSize_13_1"); if (!f) fprintf(stderr, "[shim] called missing GetLinkedPtxSize_13_1\n"); return f ? f(h, a) : 7; }
int __nvJitLinkGetLinkedPtx_13_1(void *h, char * a) { int (*f)(void *, char *) = real("__nvJitLinkGetLinkedPtx_13_1"); if (!f) fprintf(stderr, "[shim] called missing GetLinkedPtx_13_1\n"); return f ? f(h, a) : 7; }
int __nvJitLinkCreate_13_2(void **h, uint32_t n, const char **opts) {
  for (uint32_t i = 0; i < n; ++i) fprintf(stderr, "[shim] option %s\n", opts[i]);
  int (*f)(void **, uint32_t, const char **) = real("__nvJitLinkCreate_13_2");
  int r = f ? f(h, n, opts) : 7;
  fprintf(stderr, "[shim] create_13_2 -> %d\n", r);
  return r;
}
int __nvJitLinkDestroy_13_2(void **h) { int (*f)(void **) = real("__nvJitLinkDestroy_13_2"); return f ? f(h) : 7; }
int __nvJitLinkAddData_13_2(void *h, int type, const void *data, size_t size, const char *name) {
  int (*f)(void *, int, const void *, size_t, const char *) = real("__nvJitLinkAddData_13_2");
  int r = f ? f(h, type, data, size, name) : 7;
  fprintf(stderr, "[shim] add data type %d size %zu name %s -> %d\n", type, size, name ? name : "(null)", r);
  if (r) print_log(h, "error", "__nvJitLinkGetErrorLogSize_13_2", "__nvJitLinkGetErrorLog_13_2");
  return r;
}
int __nvJitLinkComplete_13_2(void *h) {
  int (*f)(void *) = real("__nvJitLinkComplete_13_2");
  int r = f ? f(h) : 7;
  fprintf(stderr, "[shim] complete -> %d\n", r);
  print_log(h, "error", "__nvJitLinkGetErrorLogSize_13_2", "__nvJitLinkGetErrorLog_13_2");
  print_log(h, "info", "__nvJitLinkGetInfoLogSize_13_2", "__nvJitLinkGetInfoLog_13_2");
  return r;
}
int __nvJitLinkGetErrorLogSize_13_2(void *h, size_t * a) { int (*f)(void *, size_t *) = real("__nvJitLinkGetErrorLogSize_13_2"); if (!f) fprintf(stderr, "[shim] called missing GetErrorLogSize_13_2\n"); return f ? f(h, a) : 7; }
int __nvJitLinkGetErrorLog_13_2(void *h, char * a) { int (*f)(void *, char *) = real("__nvJitLinkGetErrorLog_13_2"); if (!f) fprintf(stderr, "[shim] called missing GetErrorLog_13_2\n"); return f ? f(h, a) : 7; }
int __nvJitLinkGetInfoLogSize_13_2(void *h, size_t * a) { int (*f)(void *, size_t *) = real("__nvJitLinkGetInfoLogSize_13_2"); if (!f) fprintf(stderr, "[shim] called missing GetInfoLogSize_13_2\n"); return f ? f(h, a) : 7; }
int __nvJitLinkGetInfoLog_13_2(void *h, char * a) { int (*f)(void *, char *) = real("__nvJitLinkGetInfoLog_13_2"); if (!f) fprintf(stderr, "[shim] called missing GetInfoLog_13_2\n"); return f ? f(h, a) : 7; }
int __nvJitLinkGetLinkedCubinSize_13_2(void *h, size_t * a) { int (*f)(void *, size_t *) = real("__nvJitLinkGetLinkedCubinSize_13_2"); if (!f) fprintf(stderr, "[shim] called missing GetLinkedCubinSize_13_2\n"); return f ? f(h, a) : 7; }
int __nvJitLinkGetLinkedCubin_13_2(void *h, void * a) { int (*f)(void *, void *) = real("__nvJitLinkGetLinkedCubin_13_2"); if (!f) fprintf(stderr, "[shim] called missing GetLinkedCubin_13_2\n"); return f ? f(h, a) : 7; }
int __nvJitLinkGetLinkedPtxSize_13_2(void *h, size_t * a) { int (*f)(void *, size_t *) = real("__nvJitLinkGetLinkedPtxSize_13_2"); if (!f) fprintf(stderr, "[shim] called missing GetLinkedPtxSize_13_2\n"); return f ? f(h, a) : 7; }
int __nvJitLinkGetLinkedPtx_13_2(void *h, char * a) { int (*f)(void *, char *) = real("__nvJitLinkGetLinkedPtx_13_2"); if (!f) fprintf(stderr, "[shim] called missing GetLinkedPtx_13_2\n"); return f ? f(h, a) : 7; }
int __nvJitLinkCreate_13_3(void **h, uint32_t n, const char **opts) {
  for (uint32_t i = 0; i < n; ++i) fprintf(stderr, "[shim] option %s\n", opts[i]);
  int (*f)(void **, uint32_t, const char **) = real("__nvJitLinkCreate_13_3");
  int r = f ? f(h, n, opts) : 7;
  fprintf(stderr, "[shim] create_13_3 -> %d\n", r);
  return r;
}
int __nvJitLinkDestroy_13_3(void **h) { int (*f)(void **) = real("__nvJitLinkDestroy_13_3"); return f ? f(h) : 7; }
int __nvJitLinkAddData_13_3(void *h, int type, const void *data, size_t size, const char *name) {
  int (*f)(void *, int, const void *, size_t, const char *) = real("__nvJitLinkAddData_13_3");
  int r = f ? f(h, type, data, size, name) : 7;
  fprintf(stderr, "[shim] add data type %d size %zu name %s -> %d\n", type, size, name ? name : "(null)", r);
  if (r) print_log(h, "error", "__nvJitLinkGetErrorLogSize_13_3", "__nvJitLinkGetErrorLog_13_3");
  return r;
}
int __nvJitLinkComplete_13_3(void *h) {
  int (*f)(void *) = real("__nvJitLinkComplete_13_3");
  int r = f ? f(h) : 7;
  fprintf(stderr, "[shim] complete -> %d\n", r);
  print_log(h, "error", "__nvJitLinkGetErrorLogSize_13_3", "__nvJitLinkGetErrorLog_13_3");
  print_log(h, "info", "__nvJitLinkGetInfoLogSize_13_3", "__nvJitLinkGetInfoLog_13_3");
  return r;
}
int __nvJitLinkGetErrorLogSize_13_3(void *h, size_t * a) { int (*f)(void *, size_t *) = real("__nvJitLinkGetErrorLogSize_13_3"); if (!f) fprintf(stderr, "[shim] called missing GetErrorLogSize_13_3\n"); return f ? f(h, a) : 7; }
int __nvJitLinkGetErrorLog_13_3(void *h, char * a) { int (*f)(void *, char *) = real("__nvJitLinkGetErrorLog_13_3"); if (!f) fprintf(stderr, "[shim] called missing GetErrorLog_13_3\n"); return f ? f(h, a) : 7; }
int __nvJitLinkGetInfoLogSize_13_3(void *h, size_t * a) { int (*f)(void *, size_t *) = real("__nvJitLinkGetInfoLogSize_13_3"); if (!f) fprintf(stderr, "[shim] called missing GetInfoLogSize_13_3\n"); return f ? f(h, a) : 7; }
int __nvJitLinkGetInfoLog_13_3(void *h, char * a) { int (*f)(void *, char *) = real("__nvJitLinkGetInfoLog_13_3"); if (!f) fprintf(stderr, "[shim] called missing GetInfoLog_13_3\n"); return f ? f(h, a) : 7; }
int __nvJitLinkGetLinkedCubinSize_13_3(void *h, size_t * a) { int (*f)(void *, size_t *) = real("__nvJitLinkGetLinkedCubinSize_13_3"); if (!f) fprintf(stderr, "[shim] called missing GetLinkedCubinSize_13_3\n"); return f ? f(h, a) : 7; }
int __nvJitLinkGetLinkedCubin_13_3(void *h, void * a) { int (*f)(void *, void *) = real("__nvJitLinkGetLinkedCubin_13_3"); if (!f) fprintf(stderr, "[shim] called missing GetLinkedCubin_13_3\n"); return f ? f(h, a) : 7; }
int __nvJitLinkGetLinkedPtxSize_13_3(void *h, size_t * a) { int (*f)(void *, size_t *) = real("__nvJitLinkGetLinkedPtxSize_13_3"); if (!f) fprintf(stderr, "[shim] called missing GetLinkedPtxSize_13_3\n"); return f ? f(h, a) : 7; }
int __nvJitLinkGetLinkedPtx_13_3(void *h, char * a) { int (*f)(void *, char *) = real("__nvJitLinkGetLinkedPtx_13_3"); if (!f) fprintf(stderr, "[shim] called missing GetLinkedPtx_13_3\n"); return f ? f(h, a) : 7; }
int __nvJitLinkCreate_13_4(void **h, uint32_t n, const char **opts) {
  for (uint32_t i = 0; i < n; ++i) fprintf(stderr, "[shim] option %s\n", opts[i]);
  int (*f)(void **, uint32_t, const char **) = real("__nvJitLinkCreate_13_4");
  int r = f ? f(h, n, opts) : 7;
  fprintf(stderr, "[shim] create_13_4 -> %d\n", r);
  return r;
}
int __nvJitLinkDestroy_13_4(void **h) { int (*f)(void **) = real("__nvJitLinkDestroy_13_4"); return f ? f(h) : 7; }
int __nvJitLinkAddData_13_4(void *h, int type, const void *data, size_t size, const char *name) {
  int (*f)(void *, int, const void *, size_t, const char *) = real("__nvJitLinkAddData_13_4");
  int r = f ? f(h, type, data, size, name) : 7;
  fprintf(stderr, "[shim] add data type %d size %zu name %s -> %d\n", type, size, name ? name : "(null)", r);
  if (r) print_log(h, "error", "__nvJitLinkGetErrorLogSize_13_4", "__nvJitLinkGetErrorLog_13_4");
  return r;
}
int __nvJitLinkComplete_13_4(void *h) {
  int (*f)(void *) = real("__nvJitLinkComplete_13_4");
  int r = f ? f(h) : 7;
  fprintf(stderr, "[shim] complete -> %d\n", r);
  print_log(h, "error", "__nvJitLinkGetErrorLogSize_13_4", "__nvJitLinkGetErrorLog_13_4");
  print_log(h, "info", "__nvJitLinkGetInfoLogSize_13_4", "__nvJitLinkGetInfoLog_13_4");
  return r;
}
int __nvJitLinkGetErrorLogSize_13_4(void *h, size_t * a) { int (*f)(void *, size_t *) = real("__nvJitLinkGetErrorLogSize_13_4"); if (!f) fprintf(stderr, "[shim] called missing GetErrorLogSize_13_4\n"); return f ? f(h, a) : 7; }
int __nvJitLinkGetErrorLog_13_4(void *h, char * a) { int (*f)(void *, char *) = real("__nvJitLinkGetErrorLog_13_4"); if (!f) fprintf(stderr, "[shim] called missing GetErrorLog_13_4\n"); return f ? f(h, a) : 7; }
int __nvJitLinkGetInfoLogSize_13_4(void *h, size_t * a) { int (*f)(void *, size_t *) = real("__nvJitLinkGetInfoLogSize_13_4"); if (!f) fprintf(stderr, "[shim] called missing GetInfoLogSize_13_4\n"); return f ? f(h, a) : 7; }
int __nvJitLinkGetInfoLog_13_4(void *h, char * a) { int (*f)(void *, char *) = real("__nvJitLinkGetInfoLog_13_4"); if (!f) fprintf(stderr, "[shim] called missing GetInfoLog_13_4\n"); return f ? f(h, a) : 7; }
int __nvJitLinkGetLinkedCubinSize_13_4(void *h, size_t * a) { int (*f)(void *, size_t *) = real("__nvJitLinkGetLinkedCubinSize_13_4"); if (!f) fprintf(stderr, "[shim] called missing GetLinkedCubinSize_13_4\n"); return f ? f(h, a) : 7; }
int __nvJitLinkGetLinkedCubin_13_4(void *h, void * a) { int (*f)(void *, void *) = real("__nvJitLinkGetLinkedCubin_13_4"); if (!f) fprintf(stderr, "[shim] called missing GetLinkedCubin_13_4\n"); return f ? f(h, a) : 7; }
int __nvJitLinkGetLinkedPtxSize_13_4(void *h, size_t * a) { int (*f)(void *, size_t *) = real("__nvJitLinkGetLinkedPtxSize_13_4"); if (!f) fprintf(stderr, "[shim] called missing GetLinkedPtxSize_13_4\n"); return f ? f(h, a) : 7; }
int __nvJitLinkGetLinkedPtx_13_4(void *h, char * a) { int (*f)(void *, char *) = real("__nvJitLinkGetLinkedPtx_13_4"); if (!f) fprintf(stderr, "[shim] called missing GetLinkedPtx_13_4\n"); return f ? f(h, a) : 7; }
int __nvJitLinkCreate_13_5(void **h, uint32_t n, const char **opts) {
  for (uint32_t i = 0; i < n; ++i) fprintf(stderr, "[shim] option %s\n", opts[i]);
  int (*f)(void **, uint32_t, const char **) = real("__nvJitLinkCreate_13_5");
  int r = f ? f(h, n, opts) : 7;
  fprintf(stderr, "[shim] create_13_5 -> %d\n", r);
  return r;
}
int __nvJitLinkDestroy_13_5(void **h) { int (*f)(void **) = real("__nvJitLinkDestroy_13_5"); return f ? f(h) : 7; }
int __nvJitLinkAddData_13_5(void *h, int type, const void *data, size_t size, const char *name) {
  int (*f)(void *, int, const void *, size_t, const char *) = real("__nvJitLinkAddData_13_5");
  int r = f ? f(h, type, data, size, name) : 7;
  fprintf(stderr, "[shim] add data type %d size %zu name %s -> %d\n", type, size, name ? name : "(null)", r);
  if (r) print_log(h, "error", "__nvJitLinkGetErrorLogSize_13_5", "__nvJitLinkGetErrorLog_13_5");
  return r;
}
int __nvJitLinkComplete_13_5(void *h) {
  int (*f)(void *) = real("__nvJitLinkComplete_13_5");
  int r = f ? f(h) : 7;
  fprintf(stderr, "[shim] complete -> %d\n", r);
  print_log(h, "error", "__nvJitLinkGetErrorLogSize_13_5", "__nvJitLinkGetErrorLog_13_5");
  print_log(h, "info", "__nvJitLinkGetInfoLogSize_13_5", "__nvJitLinkGetInfoLog_13_5");
  return r;
}
int __nvJitLinkGetErrorLogSize_13_5(void *h, size_t * a) { int (*f)(void *, size_t *) = real("__nvJitLinkGetErrorLogSize_13_5"); if (!f) fprintf(stderr, "[shim] called missing GetErrorLogSize_13_5\n"); return f ? f(h, a) : 7; }
int __nvJitLinkGetErrorLog_13_5(void *h, char * a) { int (*f)(void *, char *) = real("__nvJitLinkGetErrorLog_13_5"); if (!f) fprintf(stderr, "[shim] called missing GetErrorLog_13_5\n"); return f ? f(h, a) : 7; }
int __nvJitLinkGetInfoLogSize_13_5(void *h, size_t * a) { int (*f)(void *, size_t *) = real("__nvJitLinkGetInfoLogSize_13_5"); if (!f) fprintf(stderr, "[shim] called missing GetInfoLogSize_13_5\n"); return f ? f(h, a) : 7; }
int __nvJitLinkGetInfoLog_13_5(void *h, char * a) { int (*f)(void *, char *) = real("__nvJitLinkGetInfoLog_13_5"); if (!f) fprintf(stderr, "[shim] called missing GetInfoLog_13_5\n"); return f ? f(h, a) : 7; }
int __nvJitLinkGetLinkedCubinSize_13_5(void *h, size_t * a) { int (*f)(void *, size_t *) = real("__nvJitLinkGetLinkedCubinSize_13_5"); if (!f) fprintf(stderr, "[shim] called missing GetLinkedCubinSize_13_5\n"); return f ? f(h, a) : 7; }
int __nvJitLinkGetLinkedCubin_13_5(void *h, void * a) { int (*f)(void *, void *) = real("__nvJitLinkGetLinkedCubin_13_5"); if (!f) fprintf(stderr, "[shim] called missing GetLinkedCubin_13_5\n"); return f ? f(h, a) : 7; }
int __nvJitLinkGetLinkedPtxSize_13_5(void *h, size_t * a) { int (*f)(void *, size_t *) = real("__nvJitLinkGetLinkedPtxSize_13_5"); if (!f) fprintf(stderr, "[shim] called missing GetLinkedPtxSize_13_5\n"); return f ? f(h, a) : 7; }
int __nvJitLinkGetLinkedPtx_13_5(void *h, char * a) { int (*f)(void *, char *) = real("__nvJitLinkGetLinkedPtx_13_5"); if (!f) fprintf(stderr, "[shim] called missing GetLinkedPtx_13_5\n"); return f ? f(h, a) : 7; }
int nvJitLinkVersion(unsigned *major, unsigned *minor) {
  int (*f)(unsigned *, unsigned *) = real("nvJitLinkVersion");
  int r = f(major, minor);
  fprintf(stderr, "[shim] version %u.%u\n", *major, *minor);
  return r;
}
__attribute__((constructor)) static void hello(void) { fprintf(stderr, "[shim] loaded\n"); }
