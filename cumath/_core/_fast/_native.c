/* cumath's compiled hot path: a callable over a C function of three pointers, called with three Python ints.
 *
 * ctypes spends ~0.3 us per call converting arguments through its argtypes and building the call with libffi;
 * Call3 reads the three ints with PyLong_AsVoidPtr and calls the function directly (the GIL released around the
 * call, as ctypes releases it), which is what every FFT execute of FFTW and DFTI is:
 *     void fftw_execute_dft(plan, in, out)        long DftiComputeForward(desc, in, out)
 *
 * Call3(address, returns_status=False, on_error=None, signature="ppp"): returns_status says the function returns a
 * C long status (0: success); a non-zero status is passed to on_error (which raises), or returned as an int when
 * on_error is None. A void function returns None. signature="ippi": int fn(int, void *, void *, int), returning
 * an int status (cufftXtExec(handle, in, out, direction)); signature="w<N>": int fn(N integer-class arguments),
 * None passing NULL (cublasLtMatmul, 16 of them).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stddef.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef void (*fn3_void)(void *, void *, void *);
typedef long (*fn3_long)(void *, void *, void *);
typedef int (*fn_ippi)(int, void *, void *, int);

typedef struct {
    PyObject_HEAD
    void *fn;
    int returns_status;
    PyObject *on_error;
    vectorcallfunc vectorcall;
} Call3;

static PyObject *status_result(Call3 *self, long status) {
    if (status != 0 && self->on_error != NULL && self->on_error != Py_None) {
        PyObject *st = PyLong_FromLong(status);
        if (st == NULL) return NULL;
        PyObject *res = PyObject_CallOneArg(self->on_error, st);
        Py_DECREF(st);
        if (res == NULL) return NULL;
        Py_DECREF(res);
    }
    return PyLong_FromLong(status);
}

static int as_int(PyObject *o, int *out) {
    long v = PyLong_AsLong(o);
    if (v == -1 && PyErr_Occurred()) return -1;
    if (v < INT_MIN || v > INT_MAX) {
        PyErr_SetString(PyExc_OverflowError, "an int argument is out of the C int range");
        return -1;
    }
    *out = (int)v;
    return 0;
}

/* int fn(int, void *, void *, int): cufftXtExec(handle, in, out, direction) */
static PyObject *ippi_vectorcall(PyObject *self_, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    Call3 *self = (Call3 *)self_;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs != 4 || (kwnames != NULL && PyTuple_GET_SIZE(kwnames) != 0)) {
        PyErr_Format(PyExc_TypeError, "this caller takes 4 positional arguments (int, pointer, pointer, int), got %zd",
                     nargs);
        return NULL;
    }
    int h, d;
    if (as_int(args[0], &h) < 0) return NULL;
    void *b = PyLong_AsVoidPtr(args[1]);
    if (b == NULL && PyErr_Occurred()) return NULL;
    void *c = PyLong_AsVoidPtr(args[2]);
    if (c == NULL && PyErr_Occurred()) return NULL;
    if (as_int(args[3], &d) < 0) return NULL;
    int status;
    fn_ippi fn = (fn_ippi)self->fn;
    Py_BEGIN_ALLOW_THREADS
    status = fn(h, b, c, d);
    Py_END_ALLOW_THREADS
    return status_result(self, status);
}

static PyObject *call3_vectorcall(PyObject *self_, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    Call3 *self = (Call3 *)self_;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs != 3 || (kwnames != NULL && PyTuple_GET_SIZE(kwnames) != 0)) {
        PyErr_Format(PyExc_TypeError, "Call3 takes 3 positional arguments (three pointers as ints), got %zd",
                     nargs);
        return NULL;
    }
    void *a = PyLong_AsVoidPtr(args[0]);
    if (a == NULL && PyErr_Occurred()) return NULL;
    void *b = PyLong_AsVoidPtr(args[1]);
    if (b == NULL && PyErr_Occurred()) return NULL;
    void *c = PyLong_AsVoidPtr(args[2]);
    if (c == NULL && PyErr_Occurred()) return NULL;
    if (!self->returns_status) {
        fn3_void fn = (fn3_void)self->fn;
        Py_BEGIN_ALLOW_THREADS
        fn(a, b, c);
        Py_END_ALLOW_THREADS
        Py_RETURN_NONE;
    }
    long status;
    fn3_long fn = (fn3_long)self->fn;
    Py_BEGIN_ALLOW_THREADS
    status = fn(a, b, c);
    Py_END_ALLOW_THREADS
    return status_result(self, status);
}

/* int fn(N integer-class arguments), N <= 16: pointers, sizes and ints, each passed as a machine word (the
 * SysV x86-64 and AArch64 calling conventions pass them alike; the callee reads an int's low 32 bits); the
 * function is called with 16 words, the ones past N zero and ignored by the callee. cublasLtMatmul is one. */
typedef int (*fn_words)(intptr_t, intptr_t, intptr_t, intptr_t, intptr_t, intptr_t, intptr_t, intptr_t,
                        intptr_t, intptr_t, intptr_t, intptr_t, intptr_t, intptr_t, intptr_t, intptr_t);

typedef struct {
    Call3 base;
    Py_ssize_t nargs;
} CallWords;

static PyTypeObject CallWordsType;

static PyObject *words_vectorcall(PyObject *self_, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    CallWords *self = (CallWords *)self_;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs != self->nargs || (kwnames != NULL && PyTuple_GET_SIZE(kwnames) != 0)) {
        PyErr_Format(PyExc_TypeError, "this caller takes %zd positional arguments (ints), got %zd", self->nargs,
                     nargs);
        return NULL;
    }
    intptr_t w[16] = {0};
    for (Py_ssize_t i = 0; i < nargs; i++) {
        PyObject *o = args[i];
        if (o == Py_None) continue; /* NULL */
        void *v = PyLong_AsVoidPtr(o);
        if (v == NULL && PyErr_Occurred()) return NULL;
        w[i] = (intptr_t)v;
    }
    int status;
    fn_words fn = (fn_words)self->base.fn;
    Py_BEGIN_ALLOW_THREADS
    status = fn(w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7], w[8], w[9], w[10], w[11], w[12], w[13], w[14],
                w[15]);
    Py_END_ALLOW_THREADS
    return status_result(&self->base, status);
}

static PyObject *call3_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"address", "returns_status", "on_error", "signature", NULL};
    PyObject *address, *on_error = Py_None;
    int returns_status = 0;
    const char *signature = "ppp";
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|pOs", kwlist, &address, &returns_status, &on_error,
                                     &signature))
        return NULL;
    vectorcallfunc vc;
    Py_ssize_t words = 0;
    if (signature[0] == 'w') { /* "w<N>": N integer-class arguments, an int status */
        char *end = NULL;
        long n = strtol(signature + 1, &end, 10);
        if (end == signature + 1 || *end != '\0' || n < 1 || n > 16) {
            PyErr_Format(PyExc_ValueError, "signature '%s' is not supported; 'w<N>' takes 1 <= N <= 16", signature);
            return NULL;
        }
        words = n;
        vc = words_vectorcall;
        returns_status = 1;
    } else if (strcmp(signature, "ppp") == 0) {
        vc = call3_vectorcall;
    } else if (strcmp(signature, "ippi") == 0) {
        vc = ippi_vectorcall;
        returns_status = 1;
    } else {
        PyErr_Format(PyExc_ValueError, "signature '%s' is not supported; use 'ppp', 'ippi' or 'w<N>'", signature);
        return NULL;
    }
    void *fn = PyLong_AsVoidPtr(address);
    if (fn == NULL) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "Call3 needs a non-zero function address");
        return NULL;
    }
    if (on_error != Py_None && !PyCallable_Check(on_error)) {
        PyErr_SetString(PyExc_TypeError, "on_error must be callable or None");
        return NULL;
    }
    Call3 *self = (Call3 *)(words ? CallWordsType.tp_alloc(&CallWordsType, 0) : type->tp_alloc(type, 0));
    if (self == NULL) return NULL;
    if (words) ((CallWords *)self)->nargs = words;
    self->fn = fn;
    self->returns_status = returns_status;
    Py_INCREF(on_error);
    self->on_error = on_error;
    self->vectorcall = vc;
    return (PyObject *)self;
}

static int call3_traverse(Call3 *self, visitproc visit, void *arg) {
    Py_VISIT(self->on_error);
    return 0;
}

static int call3_clear(Call3 *self) {
    Py_CLEAR(self->on_error);
    return 0;
}

static void call3_dealloc(Call3 *self) {
    PyObject_GC_UnTrack(self);
    call3_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *call3_address(Call3 *self, void *closure) { return PyLong_FromVoidPtr(self->fn); }

static PyGetSetDef call3_getset[] = {
    {"address", (getter)call3_address, NULL, "the C function's address", NULL},
    {NULL},
};

static PyTypeObject Call3Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "cumath._core._fast._native.Call3",
    .tp_basicsize = sizeof(Call3),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "Call3(address, returns_status=False, on_error=None): call a C function of three pointers",
    .tp_new = call3_new,
    .tp_dealloc = (destructor)call3_dealloc,
    .tp_traverse = (traverseproc)call3_traverse,
    .tp_clear = (inquiry)call3_clear,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(Call3, vectorcall),
    .tp_getset = call3_getset,
};

static PyTypeObject CallWordsType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "cumath._core._fast._native.CallWords",
    .tp_basicsize = sizeof(CallWords),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "a caller of int fn(N integer-class arguments), made by Call3(address, signature='w<N>')",
    .tp_dealloc = (destructor)call3_dealloc,
    .tp_traverse = (traverseproc)call3_traverse,
    .tp_clear = (inquiry)call3_clear,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(CallWords, base.vectorcall),
    .tp_getset = call3_getset,
};

/* numpy_fields(array, itemsize): (data pointer, shape, strides in elements, readonly) of a NumPy array, read from
 * NumPy's public array struct (PyArrayObject_fields: the same layout in NumPy 1.x and 2.x; the Python side
 * checks it on live arrays before using this). None where a stride is not a whole number of elements (the
 * Python path then raises its error). */
typedef struct {
    PyObject_HEAD
    char *data;
    int nd;
    Py_ssize_t *dimensions;
    Py_ssize_t *strides;
    PyObject *base;
    PyObject *descr;
    int flags;
} np_fields;

#define NP_WRITEABLE 0x0400

static PyObject *numpy_fields(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "numpy_fields(array, itemsize)");
        return NULL;
    }
    Py_ssize_t itemsize = PyLong_AsSsize_t(args[1]);
    if (itemsize == -1 && PyErr_Occurred()) return NULL;
    if (itemsize <= 0) {
        PyErr_SetString(PyExc_ValueError, "itemsize must be positive");
        return NULL;
    }
    np_fields *a = (np_fields *)args[0];
    int nd = a->nd;
    if (nd < 0 || nd > 64) {
        PyErr_SetString(PyExc_ValueError, "not a NumPy array struct");
        return NULL;
    }
    for (int i = 0; i < nd; i++) {
        if (a->strides[i] % itemsize) Py_RETURN_NONE;
    }
    PyObject *shape = PyTuple_New(nd);
    PyObject *strides = PyTuple_New(nd);
    if (shape == NULL || strides == NULL) goto fail;
    for (int i = 0; i < nd; i++) {
        PyObject *n = PyLong_FromSsize_t(a->dimensions[i]);
        if (n == NULL) goto fail;
        PyTuple_SET_ITEM(shape, i, n);
        PyObject *st = PyLong_FromSsize_t(a->strides[i] / itemsize);
        if (st == NULL) goto fail;
        PyTuple_SET_ITEM(strides, i, st);
    }
    PyObject *ptr = PyLong_FromVoidPtr(a->data);
    if (ptr == NULL) goto fail;
    PyObject *readonly = (a->flags & NP_WRITEABLE) ? Py_False : Py_True;
    Py_INCREF(readonly);
    PyObject *res = PyTuple_New(4);
    if (res == NULL) {
        Py_DECREF(ptr);
        Py_DECREF(readonly);
        goto fail;
    }
    PyTuple_SET_ITEM(res, 0, ptr);
    PyTuple_SET_ITEM(res, 1, shape);
    PyTuple_SET_ITEM(res, 2, strides);
    PyTuple_SET_ITEM(res, 3, readonly);
    return res;
fail:
    Py_XDECREF(shape);
    Py_XDECREF(strides);
    return NULL;
}

/* GC support of a type whose object fields are consecutive members, `first` to `last`: traverse, clear and a
 * dealloc (objects made with PyObject_GC_New or the type's tp_alloc) */
#define OBJECT_FIELDS_GC(prefix, Type, first, last)                                                              \
    static int prefix##_traverse(Type *o, visitproc visit, void *arg) {                                          \
        for (PyObject **p = &o->first; p <= &o->last; p++) Py_VISIT(*p);                                           \
        return 0;                                                                                                \
    }                                                                                                            \
    static int prefix##_clear(Type *o) {                                                                         \
        for (PyObject **p = &o->first; p <= &o->last; p++) Py_CLEAR(*p);                                           \
        return 0;                                                                                                \
    }                                                                                                            \
    static void prefix##_dealloc(Type *o) {                                                                      \
        PyObject_GC_UnTrack(o);                                                                                  \
        prefix##_clear(o);                                                                                       \
        PyObject_GC_Del(o);                                                                                      \
    }

#include "_hot_host.c"
#include "_hot_gpu.c"
#include "_launch.c"
#include "_table.c"
#include "_method.c"
#include "_rfft.c"

static PyMethodDef native_methods[] = {
    {"numpy_fields", (PyCFunction)(void (*)(void))numpy_fields, METH_FASTCALL,
     "numpy_fields(array, itemsize) -> (pointer, shape, element strides, readonly) or None"},
    {"hot_fft", (PyCFunction)(void (*)(void))hot_fft, METH_FASTCALL,
     "hot_fft(operand, kind, sign, *defaults) -> result or None"},
    {"hot_put", (PyCFunction)(void (*)(void))hot_put, METH_FASTCALL, "hot_put(table, operand, kind, key, ...)"},
    {"hot_setup", (PyCFunction)(void (*)(void))hot_setup, METH_FASTCALL, "hot_setup(ndarray, switches, key)"},
    {"hot_attach", (PyCFunction)hot_attach, METH_O, "hot_attach(table or None)"},
    {"dev_runner", (PyCFunction)(void (*)(void))dev_runner, METH_FASTCALL,
     "dev_runner(plan, new_out, pointer, exec_fn, misaligned_mask, slow) -> runner(op, sign, stream)"},
    {"hot_put_gpu", (PyCFunction)(void (*)(void))hot_put_gpu, METH_FASTCALL,
     "hot_put_gpu(table, operand, kind, key, move_to_end, runner)"},
    {"hot_setup_gpu", (PyCFunction)hot_setup_gpu, METH_O, "hot_setup_gpu({type: (reader kind, stream fn)})"},
    {"hot_mm", (PyCFunction)(void (*)(void))hot_mm, METH_FASTCALL, "hot_mm(a, b, *defaults) -> result or None"},
    {"hot_put_mm", (PyCFunction)(void (*)(void))hot_put_mm, METH_FASTCALL, "hot_put_mm(table, a, b, key, ...)"},
    {"launch_words", (PyCFunction)(void (*)(void))launch_words, METH_FASTCALL,
     "launch_words(launch, function, gx, gy, gz, bx, by, bz, shared, params, word_map, stream_word, nwords, "
     "on_error) -> f(*words) -> status"},
    {"run_table", (PyCFunction)(void (*)(void))run_table, METH_FASTCALL,
     "run_table(address, rows, width, lo, hi): call rows lo..hi-1 of a table of native calls, the GIL released"},
    {"hot_runner", (PyCFunction)(void (*)(void))hot_runner, METH_FASTCALL,
     "hot_runner(execs, mask, elem_mask, any, alloc, alloc_args, slow[, recycle]) -> runner(op, sign, stream=None)"},
    {"kernel_addresses", (PyCFunction)kernel_addresses, METH_NOARGS,
     "kernel_addresses() -> {name: address} of the extension's plain C functions (run_table rows)"},
    {"exec_method", (PyCFunction)(void (*)(void))exec_method, METH_FASTCALL,
     "exec_method(function, operand name, sign attribute) -> the method descriptor of an operation's execute()"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef native_module = {
    PyModuleDef_HEAD_INIT, "_native", "cumath's compiled hot path (see cumath/_core/_fast/__init__.py)", -1,
    native_methods,
};

PyMODINIT_FUNC PyInit__native(void) {
    if (PyType_Ready(&Call3Type) < 0) return NULL;
    if (PyType_Ready(&CallWordsType) < 0) return NULL;
    if (PyType_Ready(&LaunchWordsType) < 0) return NULL;
    if (PyType_Ready(&HotTableType) < 0) return NULL;
    if (hot_gpu_init() < 0) return NULL;
    str_ptr = PyUnicode_InternFromString("ptr");
    if (str_ptr == NULL) return NULL;
    if (PyType_Ready(&HotEntryType) < 0) return NULL;
    if (exec_method_init() < 0) return NULL;
    PyObject *m = PyModule_Create(&native_module);
    if (m == NULL) return NULL;
    Py_INCREF(&Call3Type);
    if (PyModule_AddObject(m, "Call3", (PyObject *)&Call3Type) < 0) {
        Py_DECREF(&Call3Type);
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&HotTableType);
    if (PyModule_AddObject(m, "HotTable", (PyObject *)&HotTableType) < 0) {
        Py_DECREF(&HotTableType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
