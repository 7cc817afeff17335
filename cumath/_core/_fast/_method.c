/* Part of _native.c's translation unit (included by it, not compiled alone): ExecMethod, the method descriptor
 * of an operation's execute() (cumath/_core/_fast/__init__.py, `fast_execute`).
 *
 * A call with no arguments is what the hot loops make (`y = fft.execute()`). Through the Python method it costs a
 * frame, the keyword defaults and a handful of attribute loads before the executor's compiled runner is called:
 * ~0.15 us of a 2048-point FFT's ~5 us. ExecMethod reads the same state from the instance dict and calls the same
 * runner; every other call (any argument), and any state it does not recognise, goes to the Python method, which
 * then runs exactly as before. The state it reads is the operation skeleton's (`_core/operation.py`):
 *     _executor      the planned executor (None before plan() and after free())
 *     _ops[key]      the operand (None after release_operand())
 *     _host_only     host operand, host engine: runner(op, sign, None)
 *     _explicit_stream, _blocking, _stream   otherwise: runner(op, sign, _stream) when both flags are False
 *     sign           the attribute named by the descriptor (FFT: _default_sign)
 * and the runner is `_executor.execute`. So a call it serves is the Python method's own fast branch, without the
 * frame; the Python method stays the reference (CUMATH_NATIVE=0 runs it alone). */

typedef struct {
    PyObject_HEAD
    PyObject *func;   /* the Python method */
    PyObject *op_key; /* the operand's name in _ops */
    PyObject *sign;   /* the name of the attribute passed as the runner's second argument */
    vectorcallfunc vectorcall;
} ExecMethod;

static PyTypeObject ExecMethodType;
static PyObject *s_executor, *s_ops, *s_host_only, *s_explicit, *s_blocking, *s_stream, *s_execute;

/* d[key] borrowed, or NULL (absent; no error left set) */
static PyObject *item(PyObject *d, PyObject *key) {
    PyObject *v = PyDict_GetItemWithError(d, key);
    if (v == NULL) PyErr_Clear();
    return v;
}

/* the runner's result for a call without arguments, or NULL: with an error set (raised), or without (declined:
 * the Python method runs) */
static PyObject *execmethod_fast(ExecMethod *m, PyObject *obj) {
    PyObject *d = PyObject_GenericGetDict(obj, NULL);
    if (d == NULL) {
        PyErr_Clear();
        return NULL;
    }
    PyObject *r = NULL, *ex, *ops, *op, *sign, *host, *stream;
    if (!PyDict_CheckExact(d) || (ex = item(d, s_executor)) == NULL || ex == Py_None ||
        (ops = item(d, s_ops)) == NULL || !PyDict_CheckExact(ops) || (op = item(ops, m->op_key)) == NULL ||
        op == Py_None || (sign = item(d, m->sign)) == NULL || (host = item(d, s_host_only)) == NULL)
        goto done;
    if (host == Py_True)
        stream = Py_None;
    else if (host != Py_False || item(d, s_explicit) != Py_False || item(d, s_blocking) != Py_False ||
             (stream = item(d, s_stream)) == NULL)
        goto done;
    PyObject *a[3] = {op, sign, stream};
    for (int i = 0; i < 3; i++) Py_INCREF(a[i]); /* held: the runner releases the GIL */
    PyObject *run = PyObject_GetAttr(ex, s_execute);
    if (run != NULL) {
        r = PyObject_Vectorcall(run, a, 3, NULL);
        Py_DECREF(run);
    }
    for (int i = 0; i < 3; i++) Py_DECREF(a[i]);
done:
    Py_DECREF(d);
    return r;
}

static PyObject *execmethod_vectorcall(PyObject *self_, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    ExecMethod *m = (ExecMethod *)self_;
    if (PyVectorcall_NARGS(nargsf) == 1 && (kwnames == NULL || PyTuple_GET_SIZE(kwnames) == 0)) {
        PyObject *r = execmethod_fast(m, args[0]);
        if (r != NULL || PyErr_Occurred()) return r;
    }
    return PyObject_Vectorcall(m->func, args, nargsf, kwnames);
}

static PyObject *execmethod_get(PyObject *self, PyObject *obj, PyObject *type) {
    if (obj == NULL || obj == Py_None) return Py_NewRef(self);
    return PyMethod_New(self, obj);
}

/* exec_method(func, op_key, sign_attribute) */
static PyObject *exec_method(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3 || !PyCallable_Check(args[0]) || !PyUnicode_Check(args[1]) || !PyUnicode_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "exec_method(function, operand name, sign attribute name)");
        return NULL;
    }
    ExecMethod *m = PyObject_GC_New(ExecMethod, &ExecMethodType);
    if (m == NULL) return NULL;
    m->func = Py_NewRef(args[0]);
    m->op_key = Py_NewRef(args[1]);
    PyUnicode_InternInPlace(&m->op_key);
    m->sign = Py_NewRef(args[2]);
    PyUnicode_InternInPlace(&m->sign);
    m->vectorcall = execmethod_vectorcall;
    PyObject_GC_Track(m);
    return (PyObject *)m;
}

OBJECT_FIELDS_GC(execmethod, ExecMethod, func, sign)

/* introspection reads the Python method: inspect.signature follows __wrapped__, help() and Sphinx read __doc__ */
static PyObject *execmethod_attr(ExecMethod *m, void *name) { return PyObject_GetAttrString(m->func, (char *)name); }
static PyObject *execmethod_wrapped(ExecMethod *m, void *unused) { return Py_NewRef(m->func); }

static PyGetSetDef execmethod_getset[] = {
    {"__doc__", (getter)execmethod_attr, NULL, NULL, "__doc__"},
    {"__name__", (getter)execmethod_attr, NULL, NULL, "__name__"},
    {"__qualname__", (getter)execmethod_attr, NULL, NULL, "__qualname__"},
    {"__module__", (getter)execmethod_attr, NULL, NULL, "__module__"},
    {"__annotations__", (getter)execmethod_attr, NULL, NULL, "__annotations__"},
    {"__wrapped__", (getter)execmethod_wrapped, NULL, NULL, NULL},
    {NULL},
};

static PyTypeObject ExecMethodType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "cumath._core._fast._native.ExecMethod",
    .tp_basicsize = sizeof(ExecMethod),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(ExecMethod, vectorcall),
    .tp_descr_get = execmethod_get,
    .tp_dealloc = (destructor)execmethod_dealloc,
    .tp_traverse = (traverseproc)execmethod_traverse,
    .tp_clear = (inquiry)execmethod_clear,
    .tp_getset = execmethod_getset,
};

static int exec_method_init(void) {
    struct { PyObject **p; const char *s; } names[] = {
        {&s_executor, "_executor"}, {&s_ops, "_ops"}, {&s_host_only, "_host_only"},
        {&s_explicit, "_explicit_stream"}, {&s_blocking, "_blocking"}, {&s_stream, "_stream"},
        {&s_execute, "execute"},
    };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if ((*names[i].p = PyUnicode_InternFromString(names[i].s)) == NULL) return -1;
    return PyType_Ready(&ExecMethodType);
}
