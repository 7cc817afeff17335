/* Part of _native.c's translation unit (included by it, not compiled alone): a list of native calls run as one
 * call, the GIL released once for all of them (a batch of LAPACK calls split across worker threads: through
 * ctypes each call takes the GIL back to return, and two workers calling getrs of a few microseconds each
 * spend more time handing the GIL over than solving).
 *
 * run_table(address, rows, width, lo, hi): the table at ``address`` is ``rows`` rows of ``width`` machine
 * words (2 <= width <= 17): the first word of a row is the address of a void function, the others its
 * integer-class arguments (pointers and sizes: the SysV x86-64 and AArch64 calling conventions pass them
 * alike); rows lo..hi-1 are called in order. The caller keeps the table and everything it points to alive. */

typedef void (*fn_words_void)(intptr_t, intptr_t, intptr_t, intptr_t, intptr_t, intptr_t, intptr_t, intptr_t,
                              intptr_t, intptr_t, intptr_t, intptr_t, intptr_t, intptr_t, intptr_t, intptr_t);

static PyObject *run_table(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 5) {
        PyErr_Format(PyExc_TypeError, "run_table takes 5 arguments (address, rows, width, lo, hi), got %zd",
                     nargs);
        return NULL;
    }
    void *address = PyLong_AsVoidPtr(args[0]);
    if (address == NULL && PyErr_Occurred()) return NULL;
    Py_ssize_t v[4];
    for (int i = 0; i < 4; i++) {
        v[i] = PyLong_AsSsize_t(args[i + 1]);
        if (v[i] == -1 && PyErr_Occurred()) return NULL;
    }
    Py_ssize_t rows = v[0], width = v[1], lo = v[2], hi = v[3];
    if (address == NULL || width < 2 || width > 17 || lo < 0 || hi > rows || lo > hi) {
        PyErr_Format(PyExc_ValueError, "run_table: a table of %zd x %zd words at %p cannot run rows %zd..%zd",
                     rows, width, address, lo, hi);
        return NULL;
    }
    const intptr_t *table = (const intptr_t *)address;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t r = lo; r < hi; r++) {
        const intptr_t *row = table + r * width;
        intptr_t w[16] = {0};
        memcpy(w, row + 1, (size_t)(width - 1) * sizeof(intptr_t));
        fn_words_void fn = (fn_words_void)row[0];
        fn(w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7], w[8], w[9], w[10], w[11], w[12], w[13], w[14], w[15]);
    }
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}
