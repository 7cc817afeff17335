/* Part of _native.c's translation unit (included by it, not compiled alone): a kernel launch as one native call
 * over a word list shaped like another library call's (the advanced matmul's cublasLtMatmul argument list), so
 * that a hot path that writes pointers into that list and calls it runs a kernel of cumath's own instead.
 *
 * launch_words(cuLaunchKernel address, function, gx, gy, gz, bx, by, bz, shared bytes, params, word_map,
 *              stream_word, nwords, on_error) -> f(*words) -> status
 * params: the kernel's kernelParams template (addresses of each argument's value; the values of fixed arguments
 * live in memory the caller keeps); word_map: (word index, parameter index) pairs: per call the word's value is
 * the value of that parameter (a pointer), held on the C stack for the launch; stream_word: the word holding the
 * stream. The driver copies the argument values during cuLaunchKernel, so calls from several threads (the GIL is
 * released around the launch) never share the per-call values. */

#define LW_MAXPARAMS 64
#define LW_MAXMAP 8

typedef int (*fn_launch)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *,
                         void **, void **);

typedef struct {
    Call3 base; /* fn: cuLaunchKernel; on_error */
    Py_ssize_t nwords;
    void *function;
    unsigned dims[6], smem;
    int nparams, nmap, stream_word;
    void *params[LW_MAXPARAMS];
    int map_word[LW_MAXMAP], map_param[LW_MAXMAP];
} LaunchWords;

static PyTypeObject LaunchWordsType;

static PyObject *launchwords_vectorcall(PyObject *self_, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    LaunchWords *self = (LaunchWords *)self_;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs != self->nwords || (kwnames != NULL && PyTuple_GET_SIZE(kwnames) != 0)) {
        PyErr_Format(PyExc_TypeError, "this launcher takes %zd positional arguments (ints), got %zd", self->nwords,
                     nargs);
        return NULL;
    }
    void *params[LW_MAXPARAMS];
    void *vals[LW_MAXMAP];
    memcpy(params, self->params, sizeof(void *) * (size_t)self->nparams);
    for (int j = 0; j < self->nmap; j++) {
        PyObject *o = args[self->map_word[j]];
        vals[j] = NULL;
        if (o != Py_None) {
            vals[j] = PyLong_AsVoidPtr(o);
            if (vals[j] == NULL && PyErr_Occurred()) return NULL;
        }
        params[self->map_param[j]] = &vals[j];
    }
    void *stream = NULL;
    PyObject *s = args[self->stream_word];
    if (s != Py_None) {
        stream = PyLong_AsVoidPtr(s);
        if (stream == NULL && PyErr_Occurred()) return NULL;
    }
    int status;
    fn_launch fn = (fn_launch)self->base.fn;
    const unsigned *d = self->dims;
    Py_BEGIN_ALLOW_THREADS
    status = fn(self->function, d[0], d[1], d[2], d[3], d[4], d[5], self->smem, stream, params, NULL);
    Py_END_ALLOW_THREADS
    return status_result(&self->base, status);
}

static int lw_unsigned(PyObject *o, unsigned *out) {
    unsigned long v = PyLong_AsUnsignedLong(o);
    if (v == (unsigned long)-1 && PyErr_Occurred()) return -1;
    if (v > UINT_MAX) {
        PyErr_SetString(PyExc_OverflowError, "launch_words: a launch dimension is out of the unsigned int range");
        return -1;
    }
    *out = (unsigned)v;
    return 0;
}

static PyObject *launch_words(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 14 || !PyTuple_Check(args[9]) || !PyTuple_Check(args[10])) {
        PyErr_SetString(PyExc_TypeError, "launch_words(launch, function, gx, gy, gz, bx, by, bz, shared, "
                                         "params: tuple, word_map: tuple, stream_word, nwords, on_error)");
        return NULL;
    }
    void *launch = PyLong_AsVoidPtr(args[0]);
    void *function = PyLong_AsVoidPtr(args[1]);
    if (PyErr_Occurred()) return NULL;
    if (launch == NULL || function == NULL) {
        PyErr_SetString(PyExc_ValueError, "launch_words needs non-zero launch and function addresses");
        return NULL;
    }
    unsigned dims[7];
    for (int i = 0; i < 7; i++)
        if (lw_unsigned(args[2 + i], &dims[i]) < 0) return NULL;
    Py_ssize_t np_ = PyTuple_GET_SIZE(args[9]), nm = PyTuple_GET_SIZE(args[10]);
    Py_ssize_t stream_word = PyLong_AsSsize_t(args[11]), nwords = PyLong_AsSsize_t(args[12]);
    if (PyErr_Occurred()) return NULL;
    if (np_ < 1 || np_ > LW_MAXPARAMS || nm > LW_MAXMAP || nwords < 1 || nwords > 32 || stream_word < 0 ||
        stream_word >= nwords) {
        PyErr_SetString(PyExc_ValueError, "launch_words: at most 64 parameters, 8 mapped words, 32 words, and the "
                                          "stream word among them");
        return NULL;
    }
    PyObject *on_error = args[13];
    if (on_error != Py_None && !PyCallable_Check(on_error)) {
        PyErr_SetString(PyExc_TypeError, "on_error must be callable or None");
        return NULL;
    }
    LaunchWords *self = (LaunchWords *)LaunchWordsType.tp_alloc(&LaunchWordsType, 0);
    if (self == NULL) return NULL;
    for (Py_ssize_t i = 0; i < np_; i++) {
        PyObject *o = PyTuple_GET_ITEM(args[9], i);
        self->params[i] = o == Py_None ? NULL : PyLong_AsVoidPtr(o);
    }
    self->nmap = (int)nm;
    for (Py_ssize_t j = 0; j < nm; j++) {
        PyObject *pair = PyTuple_GET_ITEM(args[10], j);
        Py_ssize_t w = -1, p = -1;
        if (PyTuple_Check(pair) && PyTuple_GET_SIZE(pair) == 2) {
            w = PyLong_AsSsize_t(PyTuple_GET_ITEM(pair, 0));
            p = PyLong_AsSsize_t(PyTuple_GET_ITEM(pair, 1));
        }
        if (!PyErr_Occurred() && (w < 0 || w >= nwords || p < 0 || p >= np_))
            PyErr_SetString(PyExc_ValueError, "launch_words: word_map holds (word index, parameter index) pairs in "
                                              "range");
        if (PyErr_Occurred()) break;
        self->map_word[j] = (int)w;
        self->map_param[j] = (int)p;
    }
    if (PyErr_Occurred()) {
        Py_DECREF(self);
        return NULL;
    }
    self->base.fn = launch;
    self->base.returns_status = 1;
    self->base.on_error = Py_NewRef(on_error);
    self->base.vectorcall = launchwords_vectorcall;
    self->function = function;
    memcpy(self->dims, dims, sizeof(unsigned) * 6);
    self->smem = dims[6];
    self->nparams = (int)np_;
    self->stream_word = (int)stream_word;
    self->nwords = nwords;
    return (PyObject *)self;
}

static PyTypeObject LaunchWordsType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "cumath._core._fast._native.LaunchWords",
    .tp_basicsize = sizeof(LaunchWords),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "a kernel launch over a word list, made by launch_words(...)",
    .tp_dealloc = (destructor)call3_dealloc,
    .tp_traverse = (traverseproc)call3_traverse,
    .tp_clear = (inquiry)call3_clear,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(LaunchWords, base.vectorcall),
    .tp_getset = call3_getset,
};
