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

/* ---------------------------------------------------------------------------------------------------------
 * The stateless hit path (cumath/_core/_fast/hot.py has the Python side and the invariants).
 *
 * HotTable: one thread's compiled view of its plan cache: `entries` maps a key built from a NumPy array's fields
 * (bytes) to a HotEntry, `keys` maps the plan cache's own key back to it (so that evicting or freeing a plan drops
 * its HotEntry first), `hits` counts the calls served here (added to the plan cache's hit count).
 * HotEntry: what one cached host FFT plan needs to run on a new array of its key: the plan cache key (for LRU
 * order), the FFTW/DFTI plan's `entries` dict (sign -> (execute function, plan): read per call, so a plan
 * emptied by new wisdom or freed is never run from here), its SIMD alignment mask, the element alignment mask,
 * the engine's any-alignment execute, and the result allocator (a callable and its arguments).
 * hot_fft(...) serves a call from them or returns None (the Python path then runs). */

typedef struct {
    PyObject_HEAD
    PyObject *entries;
    PyObject *keys;
    Py_ssize_t hits;
} HotTable;

typedef struct {
    PyObject_HEAD
    PyObject *full_key;
    PyObject *move;      /* the thread cache's OrderedDict.move_to_end */
    PyObject *execs;     /* sign -> (execute function, plan) */
    uintptr_t mask;      /* SIMD alignment the plans in execs were made for */
    uintptr_t elem_mask; /* element alignment the engine needs at all */
    PyObject *any;       /* any(in_ptr, out_ptr, sign): plans what is missing, for any alignment */
    PyObject *alloc;     /* alloc(*alloc_args) -> a new ndarray for the result */
    PyObject *alloc_args;
    PyObject *descr;     /* the dtype the key was built with (held: its address is in the key) */
    PyObject *slow;      /* as a callable (stateful executes): the executor's Python execute, for what it declines */
    vectorcallfunc vectorcall;
} HotEntry;

static PyTypeObject HotTableType;
static PyTypeObject HotEntryType;
static PyTypeObject DevRunnerType;
static PyObject *hot_fft_gpu(HotTable *table, PyObject *x, long kind, PyObject *sign);
static PyObject *gpu_readers;
static PyObject *hotentry_vectorcall(PyObject *self_, PyObject *const *args, size_t nargsf, PyObject *kwnames);

static PyObject *hot_ndarray;   /* numpy.ndarray */
static PyObject *hot_switches;  /* ((dict, name, required value), ...): all must hold for the path to serve */
static PyObject *hot_tskey;     /* the key of a thread's HotTable in its thread-state dict */

#define HOT_MAXDIM 32

/* the key of an array: kind, dtype address, writeability, ndim, shape, byte strides (words) */
static PyObject *hot_key(PyObject *x, long kind) {
    np_fields *a = (np_fields *)x;
    int nd = a->nd;
    if (nd < 0 || nd > HOT_MAXDIM) return NULL;
    intptr_t w[4 + 2 * HOT_MAXDIM];
    w[0] = kind;
    w[1] = (intptr_t)a->descr;
    w[2] = (a->flags & NP_WRITEABLE) ? 1 : 0;
    w[3] = nd;
    for (int i = 0; i < nd; i++) {
        w[4 + i] = a->dimensions[i];
        w[4 + nd + i] = a->strides[i];
    }
    return PyBytes_FromStringAndSize((const char *)w, (Py_ssize_t)sizeof(intptr_t) * (4 + 2 * nd));
}

static HotTable *hot_table(void) {
    if (hot_tskey == NULL) return NULL;
    PyObject *d = PyThreadState_GetDict();
    if (d == NULL) return NULL;
    PyObject *t = PyDict_GetItemWithError(d, hot_tskey);
    if (t == NULL || !Py_IS_TYPE(t, &HotTableType)) return NULL;
    return (HotTable *)t;
}

static int hot_switched_on(void) {
    if (hot_switches == NULL) return 0;
    Py_ssize_t n = PyTuple_GET_SIZE(hot_switches);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *s = PyTuple_GET_ITEM(hot_switches, i);
        PyObject *v = PyDict_GetItemWithError(PyTuple_GET_ITEM(s, 0), PyTuple_GET_ITEM(s, 1));
        if (v != PyTuple_GET_ITEM(s, 2)) return 0;
    }
    return 1;
}

static PyObject *ptr_int(char *p) { return PyLong_FromVoidPtr((void *)p); }

/* run fn(plan, in, out): a Call3 of three pointers directly, anything else as a Python call */
static int hot_run(PyObject *fn, PyObject *plan, char *in, char *out) {
    if (Py_IS_TYPE(fn, &Call3Type) && ((Call3 *)fn)->vectorcall == call3_vectorcall) {
        Call3 *c = (Call3 *)fn;
        void *p = PyLong_AsVoidPtr(plan);
        if (p == NULL && PyErr_Occurred()) return -1;
        if (!c->returns_status) {
            fn3_void f = (fn3_void)c->fn;
            Py_BEGIN_ALLOW_THREADS
            f(p, in, out);
            Py_END_ALLOW_THREADS
            return 0;
        }
        long status;
        fn3_long f = (fn3_long)c->fn;
        Py_BEGIN_ALLOW_THREADS
        status = f(p, in, out);
        Py_END_ALLOW_THREADS
        if (status == 0) return 0;
        PyObject *r = status_result(c, status);
        if (r == NULL) return -1;
        Py_DECREF(r);
        return 0;
    }
    PyObject *args[3] = {plan, ptr_int(in), ptr_int(out)};
    PyObject *r = NULL;
    if (args[1] != NULL && args[2] != NULL) r = PyObject_Vectorcall(fn, args, 3, NULL);
    Py_XDECREF(args[1]);
    Py_XDECREF(args[2]);
    if (r == NULL) return -1;
    Py_DECREF(r);
    return 0;
}

/* the result of the entry's plan on the array at `in` (element-aligned): a new array from the allocator, written
 * by the planned function where both pointers have the plan's SIMD alignment, by the engine's own execute
 * otherwise (and for a direction not planned yet) */
static PyObject *hot_exec(HotEntry *e, char *in, PyObject *sign) {
    PyObject *out = PyObject_Call(e->alloc, e->alloc_args, NULL);
    if (out == NULL) return NULL;
    if ((PyObject *)Py_TYPE(out) != hot_ndarray) {
        PyErr_SetString(PyExc_TypeError, "the result allocator did not return a numpy.ndarray");
        goto fail;
    }
    char *o = ((np_fields *)out)->data;
    PyObject *pair = PyDict_GetItemWithError(e->execs, sign);
    if (pair == NULL && PyErr_Occurred()) goto fail;
    int rc;
    if (pair != NULL && PyTuple_Check(pair) && PyTuple_GET_SIZE(pair) == 2 &&
        !(((uintptr_t)in | (uintptr_t)o) & e->mask)) {
        PyObject *fn = PyTuple_GET_ITEM(pair, 0), *plan = PyTuple_GET_ITEM(pair, 1);
        Py_INCREF(fn);
        Py_INCREF(plan);
        rc = hot_run(fn, plan, in, o);
        Py_DECREF(fn);
        Py_DECREF(plan);
    } else { /* a direction still to plan, or another alignment: the engine's own execute */
        PyObject *a[3] = {ptr_int(in), ptr_int(o), sign};
        PyObject *r = NULL;
        if (a[0] != NULL && a[1] != NULL) r = PyObject_Vectorcall(e->any, a, 3, NULL);
        Py_XDECREF(a[0]);
        Py_XDECREF(a[1]);
        rc = r == NULL ? -1 : 0;
        Py_XDECREF(r);
    }
    if (rc < 0) goto fail;
    return out;
fail:
    Py_DECREF(out);
    return NULL;
}

/* hot_fft(operand, kind, sign, *rest): the result of a cached plan's FFT of `operand`, or None where this path
 * cannot serve the call (every one of `rest` must be None: the call's optional arguments) */
static PyObject *hot_fft(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs < 3) {
        PyErr_SetString(PyExc_TypeError, "hot_fft(operand, kind, sign, *defaults)");
        return NULL;
    }
    for (Py_ssize_t i = 3; i < nargs; i++)
        if (args[i] != Py_None) Py_RETURN_NONE;
    PyObject *x = args[0];
    int host = (PyObject *)Py_TYPE(x) == hot_ndarray && hot_ndarray != NULL;
    if (!host && gpu_readers == NULL) Py_RETURN_NONE;
    if (!hot_switched_on()) {
        if (PyErr_Occurred()) return NULL;
        Py_RETURN_NONE;
    }
    HotTable *table = hot_table();
    if (table == NULL) {
        if (PyErr_Occurred()) return NULL;
        Py_RETURN_NONE;
    }
    long kind = PyLong_AsLong(args[1]);
    if (kind == -1 && PyErr_Occurred()) return NULL;
    if (!host) return hot_fft_gpu(table, x, kind, args[2]);
    PyObject *bkey = hot_key(x, kind);
    if (bkey == NULL) {
        if (PyErr_Occurred()) return NULL;
        Py_RETURN_NONE;
    }
    HotEntry *e = (HotEntry *)PyDict_GetItemWithError(table->entries, bkey);
    Py_DECREF(bkey);
    if (e == NULL || !Py_IS_TYPE(e, &HotEntryType)) {
        if (PyErr_Occurred()) return NULL;
        Py_RETURN_NONE;
    }
    char *in = ((np_fields *)x)->data;
    if ((uintptr_t)in & e->elem_mask) Py_RETURN_NONE; /* the full path copies it to an aligned buffer */
    Py_INCREF(e); /* held across the call: the GIL is released while the engine runs */
    PyObject *sign = args[2];
    /* the plan cache's bookkeeping of a hit, as cached_call does it: LRU order, then the count */
    PyObject *moved = PyObject_CallOneArg(e->move, e->full_key);
    if (moved == NULL) {
        Py_DECREF(e);
        if (!PyErr_ExceptionMatches(PyExc_KeyError)) return NULL;
        PyErr_Clear(); /* not in the cache (cannot happen while the tables are kept in step): the full path */
        Py_RETURN_NONE;
    }
    Py_DECREF(moved);
    table->hits++;
    PyObject *out = hot_exec(e, in, sign);
    Py_DECREF(e);
    return out;
}

/* hot_put(table, operand, kind, full_key, move_to_end, execs, mask, elem_mask, any, alloc, alloc_args) */
static PyObject *hot_put(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 11) {
        PyErr_SetString(PyExc_TypeError, "hot_put takes 11 arguments");
        return NULL;
    }
    if (hot_ndarray != NULL && Py_IS_TYPE(args[0], &HotTableType) && (PyObject *)Py_TYPE(args[1]) != hot_ndarray)
        Py_RETURN_FALSE; /* served for numpy.ndarray exactly */
    if (!Py_IS_TYPE(args[0], &HotTableType) || hot_ndarray == NULL || !PyDict_Check(args[5]) ||
        !PyTuple_Check(args[10])) {
        PyErr_SetString(PyExc_TypeError, "hot_put(HotTable, numpy.ndarray, int, key, callable, dict, int, int, "
                                         "callable, callable, tuple), after hot_setup()");
        return NULL;
    }
    HotTable *table = (HotTable *)args[0];
    long kind = PyLong_AsLong(args[2]);
    if (kind == -1 && PyErr_Occurred()) return NULL;
    size_t mask = PyLong_AsSize_t(args[6]);
    if (mask == (size_t)-1 && PyErr_Occurred()) return NULL;
    size_t elem_mask = PyLong_AsSize_t(args[7]);
    if (elem_mask == (size_t)-1 && PyErr_Occurred()) return NULL;
    PyObject *bkey = hot_key(args[1], kind);
    if (bkey == NULL) {
        if (PyErr_Occurred()) return NULL;
        Py_RETURN_FALSE;
    }
    HotEntry *e = PyObject_GC_New(HotEntry, &HotEntryType);
    if (e == NULL) {
        Py_DECREF(bkey);
        return NULL;
    }
    PyObject **slots[] = {&e->full_key, &e->move, &e->execs, &e->any, &e->alloc, &e->alloc_args, &e->descr};
    PyObject *vals[] = {args[3], args[4], args[5], args[8], args[9], args[10], ((np_fields *)args[1])->descr};
    for (int i = 0; i < 7; i++) {
        Py_INCREF(vals[i]);
        *slots[i] = vals[i];
    }
    e->mask = mask;
    e->elem_mask = elem_mask;
    e->slow = NULL;
    e->vectorcall = hotentry_vectorcall; /* which says it is no runner */
    PyObject_GC_Track(e);
    /* one entry per plan cache key and one key per entry: whatever either had before goes */
    int rc = 0;
    PyObject *old = PyDict_GetItemWithError(table->keys, args[3]);
    if (old != NULL) rc = PyDict_DelItem(table->entries, old) < 0 && !PyErr_ExceptionMatches(PyExc_KeyError) ? -1 : 0;
    if (rc == 0 && PyErr_Occurred()) PyErr_Clear();
    PyObject *prev = rc == 0 ? PyDict_GetItemWithError(table->entries, bkey) : NULL;
    if (prev != NULL && Py_IS_TYPE(prev, &HotEntryType) && PyDict_DelItem(table->keys, ((HotEntry *)prev)->full_key) < 0) {
        if (PyErr_ExceptionMatches(PyExc_KeyError)) PyErr_Clear();
        else rc = -1;
    }
    if (rc == 0 && PyErr_Occurred()) rc = -1;
    if (rc == 0) rc = PyDict_SetItem(table->entries, bkey, (PyObject *)e);
    if (rc == 0) rc = PyDict_SetItem(table->keys, args[3], bkey);
    Py_DECREF(e);
    Py_DECREF(bkey);
    if (rc < 0) return NULL;
    Py_RETURN_TRUE;
}

/* a runner (hot_runner): runner(op, sign, stream=None) is HostExecutor.execute for its eligible plans: the
 * operand's address read from op.ptr; an operand off its element alignment goes to the Python execute */
static PyObject *str_ptr;

static PyObject *hotentry_vectorcall(PyObject *self_, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    HotEntry *e = (HotEntry *)self_;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (e->slow == NULL) {
        PyErr_SetString(PyExc_TypeError, "this entry is not a runner");
        return NULL;
    }
    if (nargs < 2 || nargs > 3 || (kwnames != NULL && PyTuple_GET_SIZE(kwnames) != 0))
        return PyObject_Vectorcall(e->slow, args, nargsf, kwnames);
    PyObject *p = PyObject_GetAttr(args[0], str_ptr);
    if (p == NULL) return NULL;
    char *in = (char *)PyLong_AsVoidPtr(p);
    Py_DECREF(p);
    if (in == NULL && PyErr_Occurred()) return NULL;
    if (in == NULL || ((uintptr_t)in & e->elem_mask)) return PyObject_Vectorcall(e->slow, args, nargsf, NULL);
    Py_INCREF(e);
    PyObject *out = hot_exec(e, in, args[1]);
    Py_DECREF(e);
    return out;
}

/* hot_runner(execs, mask, elem_mask, any, alloc, alloc_args, slow) */
static PyObject *hot_runner(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 7 || !PyDict_Check(args[0]) || !PyTuple_Check(args[5]) || hot_ndarray == NULL) {
        PyErr_SetString(PyExc_TypeError, "hot_runner(dict, int, int, callable, callable, tuple, callable), after "
                                         "hot_setup()");
        return NULL;
    }
    size_t mask = PyLong_AsSize_t(args[1]);
    if (mask == (size_t)-1 && PyErr_Occurred()) return NULL;
    size_t elem_mask = PyLong_AsSize_t(args[2]);
    if (elem_mask == (size_t)-1 && PyErr_Occurred()) return NULL;
    HotEntry *e = PyObject_GC_New(HotEntry, &HotEntryType);
    if (e == NULL) return NULL;
    PyObject **slots[] = {&e->full_key, &e->move, &e->execs, &e->any, &e->alloc, &e->alloc_args, &e->descr,
                          &e->slow};
    PyObject *vals[] = {Py_None, Py_None, args[0], args[3], args[4], args[5], Py_None, args[6]};
    for (int i = 0; i < 8; i++) {
        Py_INCREF(vals[i]);
        *slots[i] = vals[i];
    }
    e->mask = mask;
    e->elem_mask = elem_mask;
    e->vectorcall = hotentry_vectorcall;
    PyObject_GC_Track(e);
    return (PyObject *)e;
}

/* hot_setup(ndarray, switches, thread_key) */
static PyObject *hot_setup(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3 || !PyType_Check(args[0]) || !PyTuple_Check(args[1]) || !PyUnicode_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "hot_setup(ndarray type, ((dict, name, value), ...), str)");
        return NULL;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(args[1]);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *s = PyTuple_GET_ITEM(args[1], i);
        if (!PyTuple_Check(s) || PyTuple_GET_SIZE(s) != 3 || !PyDict_Check(PyTuple_GET_ITEM(s, 0))) {
            PyErr_SetString(PyExc_TypeError, "each switch is (dict, name, required value)");
            return NULL;
        }
    }
    Py_INCREF(args[0]);
    Py_XSETREF(hot_ndarray, args[0]);
    Py_INCREF(args[1]);
    Py_XSETREF(hot_switches, args[1]);
    Py_INCREF(args[2]);
    Py_XSETREF(hot_tskey, args[2]);
    Py_RETURN_NONE;
}

/* hot_attach(table): the calling thread's HotTable (None: detach) */
static PyObject *hot_attach(PyObject *module, PyObject *table) {
    if (hot_tskey == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "hot_setup() first");
        return NULL;
    }
    PyObject *d = PyThreadState_GetDict();
    if (d == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "no thread state dict");
        return NULL;
    }
    if (table == Py_None) {
        if (PyDict_DelItem(d, hot_tskey) < 0) {
            if (!PyErr_ExceptionMatches(PyExc_KeyError)) return NULL;
            PyErr_Clear();
        }
        Py_RETURN_NONE;
    }
    if (!Py_IS_TYPE(table, &HotTableType)) {
        PyErr_SetString(PyExc_TypeError, "hot_attach(HotTable or None)");
        return NULL;
    }
    if (PyDict_SetItem(d, hot_tskey, table) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *hottable_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    if (PyTuple_GET_SIZE(args) || (kwds && PyDict_GET_SIZE(kwds))) {
        PyErr_SetString(PyExc_TypeError, "HotTable() takes no arguments");
        return NULL;
    }
    HotTable *t = (HotTable *)type->tp_alloc(type, 0);
    if (t == NULL) return NULL;
    t->entries = PyDict_New();
    t->keys = PyDict_New();
    if (t->entries == NULL || t->keys == NULL) {
        Py_DECREF(t);
        return NULL;
    }
    return (PyObject *)t;
}

static int hottable_traverse(HotTable *t, visitproc visit, void *arg) {
    Py_VISIT(t->entries);
    Py_VISIT(t->keys);
    return 0;
}

static int hottable_clear(HotTable *t) {
    Py_CLEAR(t->entries);
    Py_CLEAR(t->keys);
    return 0;
}

static void hottable_dealloc(HotTable *t) {
    PyObject_GC_UnTrack(t);
    hottable_clear(t);
    Py_TYPE(t)->tp_free((PyObject *)t);
}

/* discard(full_key): drop the entry of a plan cache key (before its plan is freed) */
static PyObject *hottable_discard(HotTable *t, PyObject *full_key) {
    if (t->keys == NULL) Py_RETURN_NONE;
    PyObject *bkey = PyDict_GetItemWithError(t->keys, full_key);
    if (bkey == NULL) {
        if (PyErr_Occurred()) return NULL;
        Py_RETURN_NONE;
    }
    Py_INCREF(bkey);
    int rc = PyDict_DelItem(t->keys, full_key);
    if (rc == 0 && PyDict_DelItem(t->entries, bkey) < 0) {
        if (PyErr_ExceptionMatches(PyExc_KeyError)) PyErr_Clear();
        else rc = -1;
    }
    Py_DECREF(bkey);
    if (rc < 0) return NULL;
    Py_RETURN_NONE;
}

/* clear(): drop every entry (before the plans are freed) */
static PyObject *hottable_clearall(HotTable *t, PyObject *unused) {
    if (t->entries) PyDict_Clear(t->entries);
    if (t->keys) PyDict_Clear(t->keys);
    Py_RETURN_NONE;
}

static Py_ssize_t hottable_len(HotTable *t) { return t->entries ? PyDict_GET_SIZE(t->entries) : 0; }

static PyMethodDef hottable_methods[] = {
    {"discard", (PyCFunction)hottable_discard, METH_O, "discard(key): drop the entry of a plan cache key"},
    {"clear", (PyCFunction)hottable_clearall, METH_NOARGS, "drop every entry"},
    {NULL},
};

static PyMemberDef hottable_members[] = {
    {"entries", T_OBJECT, offsetof(HotTable, entries), READONLY, "array key -> HotEntry"},
    {"keys", T_OBJECT, offsetof(HotTable, keys), READONLY, "plan cache key -> array key"},
    {"hits", T_PYSSIZET, offsetof(HotTable, hits), 0, "calls served by the compiled path"},
    {NULL},
};

static PySequenceMethods hottable_seq = {.sq_length = (lenfunc)hottable_len};

static PyTypeObject HotTableType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "cumath._core._fast._native.HotTable",
    .tp_basicsize = sizeof(HotTable),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "one thread's compiled view of its plan cache (see cumath/_core/_fast/hot.py)",
    .tp_new = hottable_new,
    .tp_dealloc = (destructor)hottable_dealloc,
    .tp_traverse = (traverseproc)hottable_traverse,
    .tp_clear = (inquiry)hottable_clear,
    .tp_methods = hottable_methods,
    .tp_members = hottable_members,
    .tp_as_sequence = &hottable_seq,
};

static int hotentry_traverse(HotEntry *e, visitproc visit, void *arg) {
    Py_VISIT(e->full_key);
    Py_VISIT(e->move);
    Py_VISIT(e->execs);
    Py_VISIT(e->any);
    Py_VISIT(e->alloc);
    Py_VISIT(e->alloc_args);
    Py_VISIT(e->descr);
    Py_VISIT(e->slow);
    return 0;
}

static int hotentry_clear(HotEntry *e) {
    Py_CLEAR(e->full_key);
    Py_CLEAR(e->move);
    Py_CLEAR(e->execs);
    Py_CLEAR(e->any);
    Py_CLEAR(e->alloc);
    Py_CLEAR(e->alloc_args);
    Py_CLEAR(e->descr);
    Py_CLEAR(e->slow);
    return 0;
}

static void hotentry_dealloc(HotEntry *e) {
    PyObject_GC_UnTrack(e);
    hotentry_clear(e);
    PyObject_GC_Del(e);
}

static PyMemberDef hotentry_members[] = {
    {"key", T_OBJECT, offsetof(HotEntry, full_key), READONLY, "the plan cache key"},
    {"execs", T_OBJECT, offsetof(HotEntry, execs), READONLY, "sign -> (execute function, plan)"},
    {NULL},
};

static PyTypeObject HotEntryType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "cumath._core._fast._native.HotEntry",
    .tp_basicsize = sizeof(HotEntry),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "what one cached plan needs to run on a new array of its key (made by hot_put), or a runner of "
              "one executor's plan (made by hot_runner)",
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(HotEntry, vectorcall),
    .tp_dealloc = (destructor)hotentry_dealloc,
    .tp_traverse = (traverseproc)hotentry_traverse,
    .tp_clear = (inquiry)hotentry_clear,
    .tp_members = hotentry_members,
};

/* ---------------------------------------------------------------------------------------------------------
 * DevRunner: a GPU executor's execute for its plain case (cuFFT reads the operand and writes a new array of the
 * operand's package, no callbacks pass of its own): runner(op, sign, stream) ->
 *     out = new_out(); status = exec_fn(plan.handle, op.ptr, pointer(out), sign); plan.check(status) if status
 * while the plan is bound to `stream` and the operand is aligned as the plan needs; everything else goes to
 * `slow` (the executor's Python execute, which binds the plan to the stream, copies, runs passes). */

typedef struct {
    PyObject_HEAD
    PyObject *plan, *new_out, *pointer, *exec_fn, *slow;
    uintptr_t misaligned;
    vectorcallfunc vectorcall;
} DevRunner;

static PyObject *str_bound, *str_handle, *str_check;

/* the plain case, once the plan is known bound to the call's stream: a new result, cufftXtExec, the status checked.
 * `p`: the operand's address (an int) */
static PyObject *dev_exec(DevRunner *r, PyObject *p, PyObject *sign) {
    Py_INCREF(r);
    PyObject *out = NULL, *out_ptr = NULL, *handle = NULL, *status = NULL;
    out = PyObject_CallNoArgs(r->new_out);
    if (out == NULL) goto done;
    out_ptr = PyObject_CallOneArg(r->pointer, out);
    if (out_ptr == NULL) goto fail;
    handle = PyObject_GetAttr(r->plan, str_handle);
    if (handle == NULL) goto fail;
    PyObject *a[4] = {handle, p, out_ptr, sign};
    status = PyObject_Vectorcall(r->exec_fn, a, 4, NULL);
    if (status == NULL) goto fail;
    int nonzero = PyObject_IsTrue(status);
    if (nonzero < 0) goto fail;
    if (nonzero) {
        PyObject *res = PyObject_CallMethodOneArg(r->plan, str_check, status);
        if (res == NULL) goto fail;
        Py_DECREF(res);
    }
    goto done;
fail:
    Py_CLEAR(out);
done:
    Py_XDECREF(status);
    Py_XDECREF(handle);
    Py_XDECREF(out_ptr);
    Py_DECREF(r);
    return out;
}

/* whether the plan is bound to `stream` (-1: an error) */
static int dev_bound_to(DevRunner *r, PyObject *stream) {
    PyObject *bound = PyObject_GetAttr(r->plan, str_bound);
    if (bound == NULL) return -1;
    int same = bound == stream ? 1 : PyObject_RichCompareBool(bound, stream, Py_EQ);
    Py_DECREF(bound);
    return same;
}

static PyObject *devrunner_vectorcall(PyObject *self_, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    DevRunner *r = (DevRunner *)self_;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs != 3 || (kwnames != NULL && PyTuple_GET_SIZE(kwnames) != 0))
        return PyObject_Vectorcall(r->slow, args, nargsf, kwnames);
    PyObject *op = args[0], *sign = args[1], *stream = args[2];
    PyObject *p = PyObject_GetAttr(op, str_ptr);
    if (p == NULL) return NULL;
    void *in = PyLong_AsVoidPtr(p);
    if (in == NULL && PyErr_Occurred()) {
        Py_DECREF(p);
        return NULL;
    }
    int same = dev_bound_to(r, stream);
    if (same < 0) {
        Py_DECREF(p);
        return NULL;
    }
    if (!same || ((uintptr_t)in & r->misaligned)) {
        Py_DECREF(p);
        return PyObject_Vectorcall(r->slow, args, 3, NULL);
    }
    PyObject *out = dev_exec(r, p, sign);
    Py_DECREF(p);
    return out;
}

/* dev_runner(plan, new_out, pointer, exec_fn, misaligned_mask, slow) */
static PyObject *dev_runner(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "dev_runner(plan, new_out, pointer, exec_fn, misaligned_mask, slow)");
        return NULL;
    }
    for (int i = 1; i < 6; i++) {
        if (i != 4 && !PyCallable_Check(args[i])) {
            PyErr_SetString(PyExc_TypeError, "dev_runner: new_out, pointer, exec_fn and slow must be callable");
            return NULL;
        }
    }
    size_t mask = PyLong_AsSize_t(args[4]);
    if (mask == (size_t)-1 && PyErr_Occurred()) return NULL;
    DevRunner *r = PyObject_GC_New(DevRunner, &DevRunnerType);
    if (r == NULL) return NULL;
    PyObject **slots[] = {&r->plan, &r->new_out, &r->pointer, &r->exec_fn, &r->slow};
    PyObject *vals[] = {args[0], args[1], args[2], args[3], args[5]};
    for (int i = 0; i < 5; i++) {
        Py_INCREF(vals[i]);
        *slots[i] = vals[i];
    }
    r->misaligned = mask;
    r->vectorcall = devrunner_vectorcall;
    PyObject_GC_Track(r);
    return (PyObject *)r;
}

static int devrunner_traverse(DevRunner *r, visitproc visit, void *arg) {
    Py_VISIT(r->plan);
    Py_VISIT(r->new_out);
    Py_VISIT(r->pointer);
    Py_VISIT(r->exec_fn);
    Py_VISIT(r->slow);
    return 0;
}

static int devrunner_clear(DevRunner *r) {
    Py_CLEAR(r->plan);
    Py_CLEAR(r->new_out);
    Py_CLEAR(r->pointer);
    Py_CLEAR(r->exec_fn);
    Py_CLEAR(r->slow);
    return 0;
}

static void devrunner_dealloc(DevRunner *r) {
    PyObject_GC_UnTrack(r);
    devrunner_clear(r);
    PyObject_GC_Del(r);
}

static PyTypeObject DevRunnerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "cumath._core._fast._native.DevRunner",
    .tp_basicsize = sizeof(DevRunner),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "a GPU FFT executor's execute for its plain case (made by dev_runner)",
    .tp_dealloc = (destructor)devrunner_dealloc,
    .tp_traverse = (traverseproc)devrunner_traverse,
    .tp_clear = (inquiry)devrunner_clear,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(DevRunner, vectorcall),
};

/* ---------------------------------------------------------------------------------------------------------
 * The stateless hit path for GPU operands: hot_fft on a tensor of a registered GPU package (hot_setup_gpu:
 * (type, reader kind, current-stream function) per package) reads its fields with the package's own accessors,
 * builds the key (kind, type, dtype, device, shape, strides, current stream) and, for a GpuEntry, runs its
 * DevRunner's plain case when the plan is bound to that stream (else None: the Python path binds it). */

typedef struct {
    PyObject_HEAD
    PyObject *full_key;
    PyObject *move;
    PyObject *runner; /* a DevRunner */
} GpuEntry;

static PyTypeObject GpuEntryType;
/* gpu_readers: {type: (reader kind, stream function)} */
static PyObject *str_dtype, *str_is_conj, *str_is_neg, *str_is_cuda, *str_get_device, *str_data_ptr, *str_shape,
    *str_stride, *str_strides, *str_data, *str_device, *str_id;

#define READER_TORCH 1
#define READER_CUPY 2

/* the key of a GPU operand and its address (new references), or NULL: an error if one is set, else not served */
static PyObject *gpu_key(PyObject *x, long kind, PyObject **ptr_out) {
    *ptr_out = NULL;
    if (gpu_readers == NULL) return NULL;
    PyObject *reader = PyDict_GetItemWithError(gpu_readers, (PyObject *)Py_TYPE(x));
    if (reader == NULL) return NULL;
    long how = PyLong_AsLong(PyTuple_GET_ITEM(reader, 0));
    PyObject *stream_fn = PyTuple_GET_ITEM(reader, 1);
    PyObject *dtype = NULL, *dev = NULL, *ptr = NULL, *shape = NULL, *strides = NULL, *stream = NULL, *t = NULL;
    PyObject *key = NULL;
    dtype = PyObject_GetAttr(x, str_dtype);
    if (dtype == NULL) goto done;
    if (how == READER_TORCH) {
        /* served: a CUDA tensor without lazy conjugation or negation (the Python path resolves those) */
        t = PyObject_CallMethodNoArgs(x, str_is_conj);
        if (t == NULL || t != Py_False) goto done;
        Py_CLEAR(t);
        t = PyObject_CallMethodNoArgs(x, str_is_neg);
        if (t == NULL || t != Py_False) goto done;
        Py_CLEAR(t);
        t = PyObject_GetAttr(x, str_is_cuda);
        if (t == NULL || t != Py_True) goto done;
        Py_CLEAR(t);
        dev = PyObject_CallMethodNoArgs(x, str_get_device);
        if (dev == NULL) goto done;
        ptr = PyObject_CallMethodNoArgs(x, str_data_ptr);
        if (ptr == NULL) goto done;
        shape = PyObject_GetAttr(x, str_shape);
        if (shape == NULL) goto done;
        strides = PyObject_CallMethodNoArgs(x, str_stride);
    } else if (how == READER_CUPY) {
        t = PyObject_GetAttr(x, str_data);
        if (t == NULL) goto done;
        ptr = PyObject_GetAttr(t, str_ptr);
        Py_CLEAR(t);
        if (ptr == NULL) goto done;
        t = PyObject_GetAttr(x, str_device);
        if (t == NULL) goto done;
        dev = PyObject_GetAttr(t, str_id);
        Py_CLEAR(t);
        if (dev == NULL) goto done;
        shape = PyObject_GetAttr(x, str_shape);
        if (shape == NULL) goto done;
        strides = PyObject_GetAttr(x, str_strides);
    } else {
        goto done;
    }
    if (strides == NULL) goto done;
    if (!PyLong_Check(dev) || PyLong_AsLong(dev) < 0) goto done;
    stream = PyObject_CallOneArg(stream_fn, dev);
    if (stream == NULL) goto done;
    PyObject *k = PyLong_FromLong(kind);
    if (k == NULL) goto done;
    key = PyTuple_Pack(7, k, (PyObject *)Py_TYPE(x), dtype, dev, shape, strides, stream);
    Py_DECREF(k);
    if (key != NULL) {
        *ptr_out = ptr;
        ptr = NULL;
    }
done:
    Py_XDECREF(t);
    Py_XDECREF(dtype);
    Py_XDECREF(dev);
    Py_XDECREF(ptr);
    Py_XDECREF(shape);
    Py_XDECREF(strides);
    Py_XDECREF(stream);
    return key;
}

static PyObject *hot_fft_gpu(HotTable *table, PyObject *x, long kind, PyObject *sign) {
    PyObject *p = NULL;
    PyObject *key = gpu_key(x, kind, &p);
    if (key == NULL) {
        if (PyErr_Occurred()) return NULL;
        Py_RETURN_NONE;
    }
    GpuEntry *e = (GpuEntry *)PyDict_GetItemWithError(table->entries, key);
    PyObject *stream = PyTuple_GET_ITEM(key, 6);
    PyObject *out = NULL;
    if (e == NULL || !Py_IS_TYPE(e, &GpuEntryType)) {
        if (!PyErr_Occurred()) out = Py_NewRef(Py_None);
        goto done;
    }
    Py_INCREF(e);
    DevRunner *r = (DevRunner *)e->runner;
    void *in = PyLong_AsVoidPtr(p);
    if (in == NULL && PyErr_Occurred()) goto done_e;
    int same = dev_bound_to(r, stream);
    if (same < 0) goto done_e;
    if (!same || ((uintptr_t)in & r->misaligned)) { /* the Python path binds the plan, or copies the operand */
        out = Py_NewRef(Py_None);
        goto done_e;
    }
    PyObject *moved = PyObject_CallOneArg(e->move, e->full_key);
    if (moved == NULL) {
        if (PyErr_ExceptionMatches(PyExc_KeyError)) {
            PyErr_Clear();
            out = Py_NewRef(Py_None);
        }
        goto done_e;
    }
    Py_DECREF(moved);
    table->hits++;
    out = dev_exec(r, p, sign);
done_e:
    Py_DECREF(e);
done:
    Py_DECREF(key);
    Py_XDECREF(p);
    return out;
}

/* hot_put_gpu(table, operand, kind, full_key, move_to_end, runner) */
static PyObject *hot_put_gpu(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 6 || !Py_IS_TYPE(args[0], &HotTableType) || !Py_IS_TYPE(args[5], &DevRunnerType)) {
        PyErr_SetString(PyExc_TypeError, "hot_put_gpu(HotTable, operand, int, key, callable, DevRunner)");
        return NULL;
    }
    HotTable *table = (HotTable *)args[0];
    long kind = PyLong_AsLong(args[2]);
    if (kind == -1 && PyErr_Occurred()) return NULL;
    PyObject *p = NULL;
    PyObject *key = gpu_key(args[1], kind, &p);
    Py_XDECREF(p);
    if (key == NULL) {
        if (PyErr_Occurred()) return NULL;
        Py_RETURN_FALSE;
    }
    GpuEntry *e = PyObject_GC_New(GpuEntry, &GpuEntryType);
    if (e == NULL) {
        Py_DECREF(key);
        return NULL;
    }
    e->full_key = Py_NewRef(args[3]);
    e->move = Py_NewRef(args[4]);
    e->runner = Py_NewRef(args[5]);
    PyObject_GC_Track(e);
    int rc = 0;
    PyObject *old = PyDict_GetItemWithError(table->keys, args[3]);
    if (old != NULL && old != Py_None && PyDict_DelItem(table->entries, old) < 0) {
        if (PyErr_ExceptionMatches(PyExc_KeyError)) PyErr_Clear();
        else rc = -1;
    }
    if (rc == 0 && PyErr_Occurred()) rc = -1;
    if (rc == 0) rc = PyDict_SetItem(table->entries, key, (PyObject *)e);
    if (rc == 0) rc = PyDict_SetItem(table->keys, args[3], key);
    Py_DECREF(e);
    Py_DECREF(key);
    if (rc < 0) return NULL;
    Py_RETURN_TRUE;
}

/* hot_setup_gpu({type: (reader kind, current-stream function)}) */
static PyObject *hot_setup_gpu(PyObject *module, PyObject *readers) {
    if (!PyDict_Check(readers)) {
        PyErr_SetString(PyExc_TypeError, "hot_setup_gpu({type: (reader kind, stream function)})");
        return NULL;
    }
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    while (PyDict_Next(readers, &pos, &k, &v)) {
        if (!PyType_Check(k) || !PyTuple_Check(v) || PyTuple_GET_SIZE(v) != 2 || !PyLong_Check(PyTuple_GET_ITEM(v, 0)) ||
            !PyCallable_Check(PyTuple_GET_ITEM(v, 1))) {
            PyErr_SetString(PyExc_TypeError, "each reader is type: (1 torch-like or 2 cupy-like, stream function)");
            return NULL;
        }
    }
    Py_XSETREF(gpu_readers, PyDict_Copy(readers));
    if (gpu_readers == NULL) return NULL;
    Py_RETURN_NONE;
}

static int gpuentry_traverse(GpuEntry *e, visitproc visit, void *arg) {
    Py_VISIT(e->full_key);
    Py_VISIT(e->move);
    Py_VISIT(e->runner);
    return 0;
}

static int gpuentry_clear(GpuEntry *e) {
    Py_CLEAR(e->full_key);
    Py_CLEAR(e->move);
    Py_CLEAR(e->runner);
    return 0;
}

static void gpuentry_dealloc(GpuEntry *e) {
    PyObject_GC_UnTrack(e);
    gpuentry_clear(e);
    PyObject_GC_Del(e);
}

static PyMemberDef gpuentry_members[] = {
    {"key", T_OBJECT, offsetof(GpuEntry, full_key), READONLY, "the plan cache key"},
    {"runner", T_OBJECT, offsetof(GpuEntry, runner), READONLY, "the executor's DevRunner"},
    {NULL},
};

static PyTypeObject GpuEntryType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "cumath._core._fast._native.GpuEntry",
    .tp_basicsize = sizeof(GpuEntry),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "a cached GPU plan for the stateless hit path (made by hot_put_gpu)",
    .tp_dealloc = (destructor)gpuentry_dealloc,
    .tp_traverse = (traverseproc)gpuentry_traverse,
    .tp_clear = (inquiry)gpuentry_clear,
    .tp_members = gpuentry_members,
};

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
    {"hot_runner", (PyCFunction)(void (*)(void))hot_runner, METH_FASTCALL,
     "hot_runner(execs, mask, elem_mask, any, alloc, alloc_args, slow) -> runner(op, sign, stream=None)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef native_module = {
    PyModuleDef_HEAD_INIT, "_native", "cumath's compiled hot path (see cumath/_core/_fast/__init__.py)", -1,
    native_methods,
};

PyMODINIT_FUNC PyInit__native(void) {
    if (PyType_Ready(&Call3Type) < 0) return NULL;
    if (PyType_Ready(&CallWordsType) < 0) return NULL;
    if (PyType_Ready(&HotTableType) < 0) return NULL;
    if (PyType_Ready(&DevRunnerType) < 0) return NULL;
    if (PyType_Ready(&GpuEntryType) < 0) return NULL;
    const char *names[] = {"dtype", "is_conj", "is_neg", "is_cuda", "get_device", "data_ptr", "shape", "stride",
                           "strides", "data", "device", "id"};
    PyObject **strs[] = {&str_dtype, &str_is_conj, &str_is_neg, &str_is_cuda, &str_get_device, &str_data_ptr,
                         &str_shape, &str_stride, &str_strides, &str_data, &str_device, &str_id};
    for (int i = 0; i < 12; i++) {
        *strs[i] = PyUnicode_InternFromString(names[i]);
        if (*strs[i] == NULL) return NULL;
    }
    str_ptr = PyUnicode_InternFromString("ptr");
    str_bound = PyUnicode_InternFromString("bound");
    str_handle = PyUnicode_InternFromString("handle");
    str_check = PyUnicode_InternFromString("check");
    if (str_ptr == NULL || str_bound == NULL || str_handle == NULL || str_check == NULL) return NULL;
    if (PyType_Ready(&HotEntryType) < 0) return NULL;
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
