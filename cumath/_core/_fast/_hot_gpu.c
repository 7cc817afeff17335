/* Part of _native.c's translation unit (included by it after _hot_host.c, not compiled alone): the GPU FFT
 * executor's C runner and the stateless hit path for CUDA torch tensors and CuPy arrays. */

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

OBJECT_FIELDS_GC(devrunner, DevRunner, plan, slow)

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
    int rc = table_store(table, args[3], key, (PyObject *)e);
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

OBJECT_FIELDS_GC(gpuentry, GpuEntry, full_key, runner)

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

/* ---------------------------------------------------------------------------------------------------------
 * The stateless hit path of cumath.linalg.advanced.matmul(a, b) (every other argument at its default) for GPU
 * operands of a registered package: the key is (gpu_key(a), gpu_key(b)); the entry holds the cached Matmul, the
 * variant it was registered with and that variant's argument list, and serves the call as Matmul.execute's hot
 * path would after _bind: while the Matmul still uses that variant, the variant is hot (workspace in place), the
 * operands have its alignment and alpha/beta are the defaults (1, 0); otherwise None (the Python path). */

typedef struct {
    PyObject_HEAD
    PyObject *full_key, *move, *mm, *v, *args, *new_result, *pointer, *raw, *check;
    Py_ssize_t a_slot, b_slot, d_slot, c_slot;
    int c_is_d;
    uintptr_t align_mask;
} MmEntry;

static PyTypeObject MmEntryType;
static PyObject *str_v, *str_hot, *str_alpha, *str_beta, *mm_one, *mm_zero, *mm_int0;

#define MM_KIND_A 16
#define MM_KIND_B 17
#define MM_MAXARGS 32

static PyObject *mm_key(PyObject *a, PyObject *b, PyObject **pa, PyObject **pb) {
    *pa = *pb = NULL;
    PyObject *ka = gpu_key(a, MM_KIND_A, pa);
    if (ka == NULL) return NULL;
    PyObject *kb = gpu_key(b, MM_KIND_B, pb);
    if (kb == NULL) {
        Py_DECREF(ka);
        Py_CLEAR(*pa);
        return NULL;
    }
    PyObject *key = PyTuple_Pack(2, ka, kb);
    Py_DECREF(ka);
    Py_DECREF(kb);
    if (key == NULL) {
        Py_CLEAR(*pa);
        Py_CLEAR(*pb);
    }
    return key;
}

/* 1: attribute `name` of `o` equals `value`; 0: not; -1: an error */
static int attr_equals(PyObject *o, PyObject *name, PyObject *value) {
    PyObject *got = PyObject_GetAttr(o, name);
    if (got == NULL) return -1;
    int same = got == value ? 1 : PyObject_RichCompareBool(got, value, Py_EQ);
    Py_DECREF(got);
    return same;
}

static int list_set(PyObject *list, Py_ssize_t i, PyObject *v) {
    Py_INCREF(v);
    return PyList_SetItem(list, i, v);
}

static PyObject *mm_serve(HotTable *table, MmEntry *e, PyObject *pa, PyObject *pb) {
    void *a = PyLong_AsVoidPtr(pa), *b = PyLong_AsVoidPtr(pb);
    if (PyErr_Occurred()) return NULL;
    if (((uintptr_t)a | (uintptr_t)b) & e->align_mask) Py_RETURN_NONE;
    int ok = attr_equals(e->mm, str_v, e->v);
    if (ok > 0) ok = attr_equals(e->v, str_hot, Py_True);
    if (ok > 0) ok = attr_equals(e->mm, str_alpha, mm_one);
    if (ok > 0) ok = attr_equals(e->mm, str_beta, mm_zero);
    if (ok < 0) return NULL;
    if (!ok) Py_RETURN_NONE;
    Py_ssize_t n = PyList_GET_SIZE(e->args);
    if (n > MM_MAXARGS || e->a_slot >= n || e->b_slot >= n || e->d_slot >= n || e->c_slot >= n) Py_RETURN_NONE;
    PyObject *moved = PyObject_CallOneArg(e->move, e->full_key);
    if (moved == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_KeyError)) return NULL;
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    Py_DECREF(moved);
    table->hits++;
    /* the variant's bind(a, b, None), then execute's hot path: a new result, D (and C where C is D) */
    if (list_set(e->args, e->a_slot, pa) < 0 || list_set(e->args, e->b_slot, pb) < 0 ||
        list_set(e->args, e->c_slot, mm_int0) < 0)
        return NULL;
    PyObject *d = PyObject_CallNoArgs(e->new_result);
    if (d == NULL) return NULL;
    PyObject *p = PyObject_CallOneArg(e->pointer, d);
    if (p == NULL) goto fail;
    int rc = list_set(e->args, e->d_slot, p);
    if (rc == 0 && e->c_is_d) rc = list_set(e->args, e->c_slot, p);
    Py_DECREF(p);
    if (rc < 0) goto fail;
    PyObject *items[MM_MAXARGS];
    for (Py_ssize_t i = 0; i < n; i++) items[i] = Py_NewRef(PyList_GET_ITEM(e->args, i));
    PyObject *status = PyObject_Vectorcall(e->raw, items, n, NULL);
    for (Py_ssize_t i = 0; i < n; i++) Py_DECREF(items[i]);
    if (status == NULL) goto fail;
    int nonzero = PyObject_IsTrue(status);
    if (nonzero > 0) {
        PyObject *r = PyObject_CallOneArg(e->check, status);
        if (r == NULL) nonzero = -1;
        Py_XDECREF(r);
    }
    Py_DECREF(status);
    if (nonzero < 0) goto fail;
    return d;
fail:
    Py_DECREF(d);
    return NULL;
}

/* hot_mm(a, b, *rest): the cached advanced matmul of a @ b, or None (every one of `rest` must be None) */
static PyObject *hot_mm(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    HotTable *table;
    int go = hot_begin(args, nargs, 2, "hot_mm(a, b, *defaults)", &table);
    if (go <= 0) return go < 0 ? NULL : Py_NewRef(Py_None);
    if (gpu_readers == NULL) Py_RETURN_NONE;
    PyObject *pa, *pb;
    PyObject *key = mm_key(args[0], args[1], &pa, &pb);
    if (key == NULL) {
        if (PyErr_Occurred()) return NULL;
        Py_RETURN_NONE;
    }
    PyObject *out = NULL;
    MmEntry *e = (MmEntry *)PyDict_GetItemWithError(table->entries, key);
    if (e == NULL || !Py_IS_TYPE(e, &MmEntryType)) {
        if (!PyErr_Occurred()) out = Py_NewRef(Py_None);
    } else {
        Py_INCREF(e);
        out = mm_serve(table, e, pa, pb);
        Py_DECREF(e);
    }
    Py_DECREF(key);
    Py_DECREF(pa);
    Py_DECREF(pb);
    return out;
}

/* hot_put_mm(table, a, b, full_key, move_to_end, mm, v, args, a_slot, b_slot, d_slot, c_slot, c_is_d, align_mask,
 *            new_result, pointer, raw, check) */
static PyObject *hot_put_mm(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 18 || !Py_IS_TYPE(args[0], &HotTableType) || !PyList_Check(args[7])) {
        PyErr_SetString(PyExc_TypeError, "hot_put_mm(HotTable, a, b, key, move_to_end, mm, variant, list, a_slot, "
                                         "b_slot, d_slot, c_slot, c_is_d, align_mask, new, pointer, raw, check)");
        return NULL;
    }
    Py_ssize_t slots[4];
    for (int i = 0; i < 4; i++) {
        slots[i] = PyLong_AsSsize_t(args[8 + i]);
        if (slots[i] == -1 && PyErr_Occurred()) return NULL;
        if (slots[i] < 0 || slots[i] >= MM_MAXARGS) {
            PyErr_SetString(PyExc_ValueError, "hot_put_mm: an argument slot is out of range");
            return NULL;
        }
    }
    int c_is_d = PyObject_IsTrue(args[12]);
    if (c_is_d < 0) return NULL;
    size_t mask = PyLong_AsSize_t(args[13]);
    if (mask == (size_t)-1 && PyErr_Occurred()) return NULL;
    HotTable *table = (HotTable *)args[0];
    PyObject *pa, *pb;
    PyObject *key = mm_key(args[1], args[2], &pa, &pb);
    if (key == NULL) {
        if (PyErr_Occurred()) return NULL;
        Py_RETURN_FALSE;
    }
    Py_DECREF(pa);
    Py_DECREF(pb);
    MmEntry *e = PyObject_GC_New(MmEntry, &MmEntryType);
    if (e == NULL) {
        Py_DECREF(key);
        return NULL;
    }
    PyObject **fields[] = {&e->full_key, &e->move, &e->mm, &e->v, &e->args, &e->new_result, &e->pointer, &e->raw,
                           &e->check};
    PyObject *vals[] = {args[3], args[4], args[5], args[6], args[7], args[14], args[15], args[16], args[17]};
    for (int i = 0; i < 9; i++) *fields[i] = Py_NewRef(vals[i]);
    e->a_slot = slots[0];
    e->b_slot = slots[1];
    e->d_slot = slots[2];
    e->c_slot = slots[3];
    e->c_is_d = c_is_d;
    e->align_mask = mask;
    PyObject_GC_Track(e);
    int rc = table_store(table, args[3], key, (PyObject *)e);
    Py_DECREF(e);
    Py_DECREF(key);
    if (rc < 0) return NULL;
    Py_RETURN_TRUE;
}

OBJECT_FIELDS_GC(mmentry, MmEntry, full_key, check)

static PyMemberDef mmentry_members[] = {
    {"key", T_OBJECT, offsetof(MmEntry, full_key), READONLY, "the plan cache key"},
    {NULL},
};

static PyTypeObject MmEntryType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "cumath._core._fast._native.MmEntry",
    .tp_basicsize = sizeof(MmEntry),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "a cached advanced Matmul for the stateless hit path (made by hot_put_mm)",
    .tp_dealloc = (destructor)mmentry_dealloc,
    .tp_traverse = (traverseproc)mmentry_traverse,
    .tp_clear = (inquiry)mmentry_clear,
    .tp_members = mmentry_members,
};

static int hot_gpu_init(void) {
    if (PyType_Ready(&DevRunnerType) < 0 || PyType_Ready(&GpuEntryType) < 0 || PyType_Ready(&MmEntryType) < 0)
        return -1;
    const char *names[] = {"dtype", "is_conj", "is_neg", "is_cuda", "get_device", "data_ptr", "shape", "stride",
                           "strides", "data", "device", "id", "bound", "handle", "check", "_v", "hot", "_alpha",
                           "_beta"};
    PyObject **strs[] = {&str_dtype, &str_is_conj, &str_is_neg, &str_is_cuda, &str_get_device, &str_data_ptr,
                         &str_shape, &str_stride, &str_strides, &str_data, &str_device, &str_id, &str_bound,
                         &str_handle, &str_check, &str_v, &str_hot, &str_alpha, &str_beta};
    for (int i = 0; i < 19; i++) {
        *strs[i] = PyUnicode_InternFromString(names[i]);
        if (*strs[i] == NULL) return -1;
    }
    mm_one = PyFloat_FromDouble(1.0);
    mm_zero = PyFloat_FromDouble(0.0);
    mm_int0 = PyLong_FromLong(0);
    return (mm_one && mm_zero && mm_int0) ? 0 : -1;
}
