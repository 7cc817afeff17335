/* Part of _native.c's translation unit (included by it, not compiled alone): the stateless hit path for host
 * operands and the C runner of host FFT executors. Uses _native.c's Call3 callers and NumPy array struct. */

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

#define HOT_MAXDIM 32
#define HOT_SPARES 2 /* two: `y = op.execute()` in a loop holds the previous result during the call */

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
    PyObject *any;       /* any(in_ptr, out_ptr, sign): plans what is missing, for any alignment */
    PyObject *alloc;     /* alloc(*alloc_args) -> a new ndarray for the result */
    PyObject *alloc_args;
    PyObject *descr;     /* the dtype the key was built with (held: its address is in the key) */
    PyObject *rdescr;    /* the result's dtype where alloc is numpy.empty(shape, dtype): made by NumPy's C API */
    PyObject *spare[HOT_SPARES]; /* a runner's recent results, handed out again once dropped (hot_spare) */
    PyObject *slow;      /* as a callable (stateful executes): the executor's Python execute, for what it declines */
    uintptr_t mask;      /* SIMD alignment the plans in execs were made for */
    uintptr_t elem_mask; /* element alignment the engine needs at all */
    int rnd;             /* with rdescr: the result's ndim and shape */
    Py_ssize_t rdims[HOT_MAXDIM];
    int recycle;         /* a runner that reuses dropped results (with rdescr; never without reference counts) */
    int spare_next;      /* the spare slot a new result replaces (the older one) */
    char *spare_data[HOT_SPARES]; /* each spare's data pointer and flags when it was made */
    int spare_flags[HOT_SPARES];
    Py_ssize_t rstrides[HOT_MAXDIM]; /* the strides numpy.empty gives the result (set with the first spare) */
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

/* NumPy's PyArray_Empty (its C API table, slot 184 of numpy/__multiarray_api.h, stable since NumPy 1.x) and the
 * numpy.empty it stands for: a result made through the C API skips numpy.empty's argument parsing (~0.1 us of a
 * small FFT's call); NULL where the table could not be read (the Python call then runs) */
typedef PyObject *(*np_empty_fn)(int, const Py_ssize_t *, PyObject *, int);
static np_empty_fn np_empty;
static PyObject *np_empty_py;
static PyTypeObject *np_descr_type;

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

/* what every entry type starts with */
typedef struct {
    PyObject_HEAD
    PyObject *full_key;
} AnyEntry;

/* table[key] = entry for the plan cache key `full_key`: one entry per plan cache key and one plan cache key per
 * entry, so whatever either had before goes (0, or -1 with an error set) */
static int table_store(HotTable *table, PyObject *full_key, PyObject *key, PyObject *entry) {
    PyObject *old = PyDict_GetItemWithError(table->keys, full_key);
    if (old != NULL && old != Py_None && PyDict_DelItem(table->entries, old) < 0) {
        if (!PyErr_ExceptionMatches(PyExc_KeyError)) return -1;
        PyErr_Clear();
    }
    if (PyErr_Occurred()) return -1;
    PyObject *prev = PyDict_GetItemWithError(table->entries, key);
    if (prev != NULL && PyDict_DelItem(table->keys, ((AnyEntry *)prev)->full_key) < 0) {
        if (!PyErr_ExceptionMatches(PyExc_KeyError)) return -1;
        PyErr_Clear();
    }
    if (PyErr_Occurred()) return -1;
    if (PyDict_SetItem(table->entries, key, entry) < 0) return -1;
    return PyDict_SetItem(table->keys, full_key, key);
}

/* the common start of a hit path: args[nfixed:] must all be None and the path switched on; 1 with the calling
 * thread's table, 0: not served (None), -1: an error */
static int hot_begin(PyObject *const *args, Py_ssize_t nargs, Py_ssize_t nfixed, const char *usage,
                     HotTable **table) {
    if (nargs < nfixed) {
        PyErr_SetString(PyExc_TypeError, usage);
        return -1;
    }
    for (Py_ssize_t i = nfixed; i < nargs; i++)
        if (args[i] != Py_None) return 0;
    if (!hot_switched_on() || (*table = hot_table()) == NULL) return PyErr_Occurred() ? -1 : 0;
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

/* e->rdescr/rnd/rdims from e->alloc and e->alloc_args where they are numpy.empty and (shape of ints, dtype) */
static int entry_result_spec(HotEntry *e) {
    e->rdescr = NULL;
    if (np_empty == NULL || e->alloc != np_empty_py || PyTuple_GET_SIZE(e->alloc_args) != 2) return 0;
    PyObject *shape = PyTuple_GET_ITEM(e->alloc_args, 0), *dt = PyTuple_GET_ITEM(e->alloc_args, 1);
    if (!PyTuple_Check(shape) || !PyObject_TypeCheck(dt, np_descr_type) || PyTuple_GET_SIZE(shape) > HOT_MAXDIM)
        return 0;
    int nd = (int)PyTuple_GET_SIZE(shape);
    for (int i = 0; i < nd; i++) {
        PyObject *n = PyTuple_GET_ITEM(shape, i);
        if (!PyLong_CheckExact(n)) return 0;
        Py_ssize_t v = PyLong_AsSsize_t(n);
        if (v < 0) {
            PyErr_Clear();
            return 0;
        }
        e->rdims[i] = v;
    }
    e->rnd = nd;
    e->rdescr = Py_NewRef(dt);
    return 0;
}

/* Results a runner hands out again (cumath/_core/recycle.py says when the Python side asks for it): a kept
 * result is reused only while the runner's reference is the only one (no name, container, view, memoryview,
 * DLPack capsule or ctypes object refers to it), no weak reference to it exists, and it is as it was made
 * (data pointer, flags, shape, strides, dtype, no base). Nothing but a raw address can reach such an array, and a
 * raw address of an array nothing refers to is reachable by nobody in NumPy's own terms (its memory would be
 * freed). A kept result that changed, or has a weak reference, is let go (its weak callbacks then run). Without
 * reference counts that mean this (free-threaded builds) nothing is kept. */
static int spare_unchanged(HotEntry *e, int i) {
    PyObject *s = e->spare[i];
    np_fields *a = (np_fields *)s;
    Py_ssize_t off = Py_TYPE(s)->tp_weaklistoffset;
    if (off <= 0 || *(PyObject **)((char *)s + off) != NULL) return 0;
    if (a->base != NULL || a->data != e->spare_data[i] || a->flags != e->spare_flags[i] ||
        a->descr != e->rdescr || a->nd != e->rnd)
        return 0;
    for (int d = 0; d < a->nd; d++)
        if (a->dimensions[d] != e->rdims[d] || a->strides[d] != e->rstrides[d]) return 0;
    return 1;
}

/* a kept result nothing else refers to (a new reference), or NULL (no error) */
static PyObject *hot_spare(HotEntry *e) {
#ifdef Py_GIL_DISABLED
    return NULL;
#else
    for (int i = 0; i < HOT_SPARES; i++) {
        PyObject *s = e->spare[i];
        if (s == NULL || Py_REFCNT(s) != 1) continue;
        if (spare_unchanged(e, i)) return Py_NewRef(s);
        Py_CLEAR(e->spare[i]); /* changed in place, or weakly referred to: let it go */
        e->spare_next = i;
    }
    return NULL;
#endif
}

/* keep a new result of np_empty (an ndarray of e->rnd dimensions) in place of the older spare */
static void hot_keep(HotEntry *e, PyObject *out) {
#ifndef Py_GIL_DISABLED
    np_fields *a = (np_fields *)out;
    int i = e->spare_next;
    e->spare_next = (i + 1) % HOT_SPARES;
    e->spare_data[i] = a->data;
    e->spare_flags[i] = a->flags;
    for (int d = 0; d < a->nd; d++) e->rstrides[d] = a->strides[d];
    Py_XSETREF(e->spare[i], Py_NewRef(out));
#endif
}

static void spares_init(HotEntry *e, int recycle) {
    for (int i = 0; i < HOT_SPARES; i++) e->spare[i] = NULL;
    e->spare_next = 0;
    e->recycle = recycle;
}

/* the result of the entry's plan on the array at `in` (element-aligned): a new array from the allocator, written
 * by the planned function where both pointers have the plan's SIMD alignment, by the engine's own execute
 * otherwise (and for a direction not planned yet) */
static PyObject *hot_exec(HotEntry *e, char *in, PyObject *sign) {
    PyObject *out;
    if (e->rdescr != NULL) {
        out = e->recycle ? hot_spare(e) : NULL;
        if (out == NULL) {
            Py_INCREF(e->rdescr); /* PyArray_Empty takes a reference to the dtype */
            out = np_empty(e->rnd, e->rdims, e->rdescr, 0);
            if (out != NULL && e->recycle) hot_keep(e, out);
        }
    } else
        out = PyObject_Call(e->alloc, e->alloc_args, NULL);
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
    HotTable *table;
    int go = hot_begin(args, nargs, 3, "hot_fft(operand, kind, sign, *defaults)", &table);
    if (go <= 0) return go < 0 ? NULL : Py_NewRef(Py_None);
    PyObject *x = args[0];
    int host = (PyObject *)Py_TYPE(x) == hot_ndarray && hot_ndarray != NULL;
    if (!host && gpu_readers == NULL) Py_RETURN_NONE;
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
    spares_init(e, 0);
    entry_result_spec(e);
    e->vectorcall = hotentry_vectorcall; /* which says it is no runner */
    PyObject_GC_Track(e);
    int rc = table_store(table, args[3], bkey, (PyObject *)e);
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

/* hot_runner(execs, mask, elem_mask, any, alloc, alloc_args, slow[, recycle]) */
static PyObject *hot_runner(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs < 7 || nargs > 8 || !PyDict_Check(args[0]) || !PyTuple_Check(args[5]) || hot_ndarray == NULL) {
        PyErr_SetString(PyExc_TypeError, "hot_runner(dict, int, int, callable, callable, tuple, callable[, bool]), "
                                         "after hot_setup()");
        return NULL;
    }
    int recycle = nargs == 8 ? PyObject_IsTrue(args[7]) : 0;
    if (recycle < 0) return NULL;
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
    spares_init(e, recycle);
    entry_result_spec(e);
    if (e->rdescr == NULL) e->recycle = 0;
    e->vectorcall = hotentry_vectorcall;
    PyObject_GC_Track(e);
    return (PyObject *)e;
}

/* np_empty, np_empty_py and np_descr_type from NumPy's C API table, checked against the ndarray type it names;
 * nothing is set (and no error left) where that fails */
static void np_api_load(PyObject *ndarray) {
    const char *mods[] = {"numpy._core._multiarray_umath", "numpy.core._multiarray_umath"};
    void **api = NULL;
    for (int i = 0; i < 2 && api == NULL; i++) {
        PyObject *m = PyImport_ImportModule(mods[i]);
        if (m == NULL) {
            PyErr_Clear();
            continue;
        }
        PyObject *cap = PyObject_GetAttrString(m, "_ARRAY_API");
        Py_DECREF(m);
        if (cap != NULL && PyCapsule_CheckExact(cap)) api = (void **)PyCapsule_GetPointer(cap, NULL);
        Py_XDECREF(cap);
        PyErr_Clear();
    }
    if (api == NULL || api[2] != (void *)ndarray) return; /* slot 2: &PyArray_Type */
    PyObject *np = PyImport_ImportModule("numpy");
    PyObject *empty = np == NULL ? NULL : PyObject_GetAttrString(np, "empty");
    Py_XDECREF(np);
    if (empty == NULL) {
        PyErr_Clear();
        return;
    }
    np_descr_type = (PyTypeObject *)api[3]; /* &PyArrayDescr_Type */
    np_empty_py = empty;
    np_empty = (np_empty_fn)api[184];
}

/* hot_setup(ndarray, switches, thread_key) */
static PyObject *hot_setup(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3 || !(PyType_Check(args[0]) || args[0] == Py_None) || !PyTuple_Check(args[1]) ||
        !PyUnicode_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "hot_setup(ndarray type or None, ((dict, name, value), ...), str)");
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
    Py_XSETREF(hot_ndarray, args[0] == Py_None ? NULL : Py_NewRef(args[0])); /* None: no host path yet */
    if (hot_ndarray != NULL && np_empty == NULL) np_api_load(hot_ndarray);
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

OBJECT_FIELDS_GC(hottable, HotTable, entries, keys)

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

OBJECT_FIELDS_GC(hotentry, HotEntry, full_key, slow)

/* release(): let the kept results go (the executor's workspace released, or the plan freed) */
static PyObject *hotentry_release(HotEntry *e, PyObject *unused) {
    for (int i = 0; i < HOT_SPARES; i++) Py_CLEAR(e->spare[i]);
    e->spare_next = 0;
    Py_RETURN_NONE;
}

/* kept(): how many results are kept now */
static PyObject *hotentry_kept(HotEntry *e, PyObject *unused) {
    int n = 0;
    for (int i = 0; i < HOT_SPARES; i++) n += e->spare[i] != NULL;
    return PyLong_FromLong(n);
}

static PyMethodDef hotentry_methods[] = {
    {"release", (PyCFunction)hotentry_release, METH_NOARGS, "let the kept results go"},
    {"kept", (PyCFunction)hotentry_kept, METH_NOARGS, "how many results are kept for reuse"},
    {NULL},
};

static PyMemberDef hotentry_members[] = {
    {"key", T_OBJECT, offsetof(HotEntry, full_key), READONLY, "the plan cache key"},
    {"execs", T_OBJECT, offsetof(HotEntry, execs), READONLY, "sign -> (execute function, plan)"},
    {"recycle", T_INT, offsetof(HotEntry, recycle), READONLY, "whether dropped results are handed out again"},
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
    .tp_methods = hotentry_methods,
};
