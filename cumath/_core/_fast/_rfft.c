/* Part of _native.c's translation unit (included by it, not compiled alone): the last pass of a long real FFT
 * computed as two half-length ones (fft/_backends/dfti.py, `split_r2c`).
 *
 * oneMKL computes one 1-D real-to-complex transform on one thread whatever its thread limit, but a batch of them
 * on all. So a length-n R2C (n = 2M, M even) runs as a batch of two length-M R2C transforms of the even and the
 * odd samples (S0, S1: M/2 + 1 values each, one after the other), and this pass makes the n/2 + 1 outputs of the
 * whole transform from them (decimation in time, w = exp(-2 pi i / n)):
 *     X[k] = S0[k] + w^k S1[k],   X[M - k] = conj(S0[k] - w^k S1[k]),   0 <= k < M/2;   X[M/2] = S0 + w^(M/2) S1.
 * Twiddles: w^k = w^b w^j for blocks b of 256 (sin/cos of b once per block, a table of w^j for j < 256 per call),
 * in double precision for both precisions: a few ulp, as the transform's own error.
 *
 * rfft_combine_f64(S, X, M, k0, k1) / rfft_combine_f32(...): k in [k0, k1) of [0, M/2]; S and X must not meet.
 * Called through run_table (one row per part, parts on several threads). */

#include <math.h>

#define RFFT_BLOCK 256

#define RFFT_COMBINE(name, T)                                                                                    \
    static void name(const T *S, T *X, intptr_t M, intptr_t k0, intptr_t k1) {                                   \
        const T *S1 = S + 2 * (M / 2 + 1);                                                                       \
        const double step = -6.283185307179586476925286766559 / (double)(2 * M);                                 \
        double tr[RFFT_BLOCK], ti[RFFT_BLOCK];                                                                   \
        for (int j = 0; j < RFFT_BLOCK; j++) {                                                                   \
            tr[j] = cos(step * j);                                                                               \
            ti[j] = sin(step * j);                                                                               \
        }                                                                                                        \
        const intptr_t half = M / 2;                                                                             \
        for (intptr_t b = k0 - k0 % RFFT_BLOCK; b < k1; b += RFFT_BLOCK) {                                       \
            const double br = cos(step * (double)b), bi = sin(step * (double)b);                                 \
            const intptr_t lo = b < k0 ? k0 : b, hi = b + RFFT_BLOCK < k1 ? b + RFFT_BLOCK : k1;                 \
            for (intptr_t k = lo; k < hi; k++) {                                                                 \
                const int j = (int)(k - b);                                                                      \
                const double wr = br * tr[j] - bi * ti[j], wi = br * ti[j] + bi * tr[j];                         \
                const double ar = S[2 * k], ai = S[2 * k + 1], cr = S1[2 * k], ci = S1[2 * k + 1];              \
                const double pr = wr * cr - wi * ci, pi = wr * ci + wi * cr;                                     \
                X[2 * k] = (T)(ar + pr);                                                                         \
                X[2 * k + 1] = (T)(ai + pi);                                                                     \
                if (k < half) {                                                                                  \
                    X[2 * (M - k)] = (T)(ar - pr);                                                               \
                    X[2 * (M - k) + 1] = (T)(pi - ai);                                                           \
                }                                                                                                \
            }                                                                                                    \
        }                                                                                                        \
    }

RFFT_COMBINE(rfft_combine_f64, double)
RFFT_COMBINE(rfft_combine_f32, float)

/* kernel_addresses() -> {name: address} of the plain C functions above, for run_table rows */
static PyObject *kernel_addresses(PyObject *module, PyObject *unused) {
    PyObject *d = PyDict_New();
    if (d == NULL) return NULL;
    struct { const char *name; void *fn; } k[] = {
        {"rfft_combine_f64", (void *)rfft_combine_f64}, {"rfft_combine_f32", (void *)rfft_combine_f32},
    };
    for (size_t i = 0; i < sizeof(k) / sizeof(k[0]); i++) {
        PyObject *a = PyLong_FromVoidPtr(k[i].fn);
        if (a == NULL || PyDict_SetItemString(d, k[i].name, a) < 0) {
            Py_XDECREF(a);
            Py_DECREF(d);
            return NULL;
        }
        Py_DECREF(a);
    }
    return d;
}
