/* _lanes_kernel: the per-env bookkeeping of the lanes (lanes.py), in one pass each.
 *
 * Under recv/send each side looks at every lane of its envs once per round: a worker for
 * the requests it has not taken yet, the parent for the answers to the envs in flight.
 * With NumPy each look is a handful of whole-array operations, each costing about as much
 * as the whole loop below does in C. Same results as lanes.py, where this is not built.
 *
 * Worker side:
 * take_runs(requested, seen, values) -> [(seq, start, stop), ...]
 *     Take every request not taken yet: for each env k whose requested[k] differs from
 *     seen[k], seen[k] = requested[k] and values[k] = requested[k] << 1 (the answer it
 *     will write); returns the runs of consecutive envs so taken whose numbers follow
 *     each other (equal, or one more), each with its first number.
 * answerer(answered, values, rows, w, fd, answers, sleeping, target, columns, schema, first,
 *          objects) -> capsule
 *     Worker w's answers as a C hook for the step loop (a capsule named vec_envs.on_done):
 *     env k answered is answered[k] = values[k] (a release store: its rows and any message
 *     are seen first), one more in rows[w, answers], then, if the parent sleeps
 *     (rows[-1, sleeping], a numbered sleep not yet woken by this worker) and every
 *     worker's count reached its rows[-1, target], one write to the wake fd. The loop may
 *     hand it an env's info too: in the parent's own slice (objects a dict) it goes into
 *     objects[first + k]; in a worker, once rows[w, schema] says the parent knows the
 *     schema(), an info of exactly its keys (in order) and value types goes into env k's
 *     columns (int64 rows: float64 or int64 words after the first). Then the first word is
 *     values[k] >> 1 and the env is answered; any other info is left to be said.
 * schema(answerer, keys, types, kinds)
 *     That schema: kinds holds a byte per value, 'f' (written as a float64), 'b' (a NumPy
 *     bool, written as 0 or 1) or 'i' (an int64).
 * answer(answerer, k, has_message)
 *     The answer of env k from Python, with the message bit.
 *
 * Parent side:
 * scan(answered, expected, status, ready, talking) -> int
 *     The envs in flight that answered: for each env i with status[i] == IN_FLIGHT (1)
 *     and answered[i] >> 1 == expected[i], status[i] = ANSWERED (2) and i is appended to
 *     the list ready (and to the list talking if its answer has a message); returns how many.
 *     With ready and talking None, only how many (a test while waiting; nothing is written).
 *
 * fence(): a full memory fence (both sides: between a store and a load of shared words).
 *
 * Each shared word (requested, answered) is read once, with an acquire load: what the
 * other side wrote before it (the action, the rows) is seen after it.
 *
 * Built by setup.py when a C compiler is there (optional).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#ifndef _WIN32
#include <unistd.h>
#endif

enum { IN_FLIGHT = 1, ANSWERED = 2 }; /* async_envs.EnvStatus */

/* A C-contiguous 1-D buffer of `itemsize` bytes per item, of format `kind` ("q": int64, "?": bool). */
static int get_words(PyObject *obj, Py_buffer *view, int writable, char kind, const char *name)
{
    if (PyObject_GetBuffer(obj, view, (writable ? PyBUF_WRITABLE : 0) | PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return -1;
    int ok = view->ndim == 1 && view->format != NULL;
    if (ok && kind == 'q')
        ok = view->itemsize == 8 && (!strcmp(view->format, "q") || !strcmp(view->format, "l"));
    else if (ok)
        ok = view->itemsize == 1 && view->format[0] == kind && view->format[1] == 0;
    if (!ok) {
        PyBuffer_Release(view);
        PyErr_Format(PyExc_ValueError, "_lanes_kernel: %s must be a 1-D %s array", name,
                     kind == 'q' ? "int64" : kind == 'b' ? "int8" : "bool");
        return -1;
    }
    return 0;
}

/* Get `count` buffers; on failure release those got and return -1. */
static int get_all(int count, PyObject **objs, Py_buffer *views, const int *writable, const char *kinds,
                   const char *const *names, Py_ssize_t *n)
{
    for (int j = 0; j < count; j++) {
        if (get_words(objs[j], &views[j], writable[j], kinds[j], names[j]) < 0
                || (j > 0 && views[j].shape[0] != views[0].shape[0])) {
            if (!PyErr_Occurred()) {
                PyErr_Format(PyExc_ValueError, "_lanes_kernel: %s has %zd envs, %s %zd", names[j],
                             views[j].shape[0], names[0], views[0].shape[0]);
                PyBuffer_Release(&views[j]);
            }
            while (j-- > 0)
                PyBuffer_Release(&views[j]);
            return -1;
        }
    }
    *n = views[0].shape[0];
    return 0;
}

static void release_all(int count, Py_buffer *views)
{
    for (int j = 0; j < count; j++)
        PyBuffer_Release(&views[j]);
}

PyDoc_STRVAR(take_runs_doc, "take_runs(requested, seen, values) -> list of (seq, start, stop): the requests not "
             "taken yet.");

static PyObject *take_runs(PyObject *self, PyObject *args)
{
    PyObject *objs[3];
    Py_buffer v[3];
    static const int writable[3] = {0, 1, 1};
    static const char *const names[3] = {"requested", "seen", "values"};
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "OOO:take_runs", &objs[0], &objs[1], &objs[2])
            || get_all(3, objs, v, writable, "qqq", names, &n) < 0)
        return NULL;
    const int64_t *requested = v[0].buf;
    int64_t *seen = v[1].buf, *values = v[2].buf;
    PyObject *runs = PyList_New(0);
    Py_ssize_t k = 0;
    while (runs != NULL && k < n) {
        int64_t seq = __atomic_load_n(&requested[k], __ATOMIC_ACQUIRE);
        if (seq == seen[k]) {
            k++;
            continue;
        }
        const Py_ssize_t start = k;
        const int64_t run_seq = seq;
        int64_t last = seq;
        do {
            seen[k] = last = seq;
            values[k] = (int64_t)((uint64_t)seq << 1);
            if (++k == n)
                break;
            seq = __atomic_load_n(&requested[k], __ATOMIC_ACQUIRE);
        } while (seq != seen[k] && (seq == last || seq == last + 1));
        PyObject *run = Py_BuildValue("(Lnn)", (long long)run_seq, start, k);
        if (run == NULL || PyList_Append(runs, run) < 0)
            Py_CLEAR(runs);
        Py_XDECREF(run);
    }
    release_all(3, v);
    return runs;
}

PyDoc_STRVAR(scan_doc, "scan(answered, expected, status, ready, talking) -> int: the envs in flight that "
             "answered, appended to ready (to talking too if they have a message); None, None: how many.");
static PyObject *scan(PyObject *self, PyObject *args)
{
    PyObject *objs[3], *ready, *talking;
    Py_buffer v[3];
    static const int writable[3] = {0, 0, 1};
    static const char *const names[3] = {"answered", "expected", "status"};
    Py_ssize_t n, found = 0;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOOOO:scan", &objs[0], &objs[1], &objs[2], &ready, &talking))
        return NULL;
    const int count = ready == Py_None && talking == Py_None;
    if (!count && (!PyList_Check(ready) || !PyList_Check(talking)))
        return PyErr_Format(PyExc_TypeError, "scan: ready and talking must be lists (or both None)");
    if (get_all(3, objs, v, writable, "qqb", names, &n) < 0)
        return NULL;
    const int64_t *answered = v[0].buf, *expected = v[1].buf;
    int8_t *status = v[2].buf;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (status[i] != IN_FLIGHT)
            continue;
        int64_t answer = __atomic_load_n(&answered[i], __ATOMIC_ACQUIRE);
        if ((answer >> 1) != expected[i] || (count && ++found))
            continue;
        PyObject *index = PyLong_FromSsize_t(i);
        if (index == NULL || PyList_Append(ready, index) < 0 || ((answer & 1) && PyList_Append(talking, index) < 0)) {
            Py_XDECREF(index);
            release_all(3, v);
            return NULL;
        }
        Py_DECREF(index);
        status[i] = ANSWERED;
        found++;
    }
    release_all(3, v);
    return PyLong_FromSsize_t(found);
}

/* ---------------------------------------------------------------- a worker's answers */
#define ON_DONE_CAPSULE "vec_envs.on_done" /* the step loop's hook (_step_kernel.c) */

typedef struct {
    int (*fn)(void *ctx, Py_ssize_t k); /* what the step loop calls: the first three members, in order */
    void *ctx;
    int (*info_fn)(void *ctx, Py_ssize_t k, PyObject *info); /* 1: answered with its info, 0: to be said */
    Py_buffer views[4];  /* answered, values, rows, columns */
    int64_t *answered, *rows, *columns;
    const int64_t *values;
    Py_ssize_t n, workers, w, row_words, answers, sleeping, target, schema, first, info_words;
    PyObject *objects, *keys, *types, *kinds; /* NULL: none */
    int64_t woken;  /* the parent's sleep this worker wrote for last */
    int fd;         /* the parent's wake fd (-1: none) */
} Answerer;

static int answer_env(Answerer *a, Py_ssize_t k, int has_message)
{
    if (k < 0 || k >= a->n) {
        PyErr_Format(PyExc_IndexError, "answer: env %zd of a slice of %zd", k, a->n);
        return -1;
    }
    __atomic_store_n(&a->answered[k], a->values[k] | (has_message != 0), __ATOMIC_RELEASE);
    int64_t *tally = &a->rows[a->w * a->row_words + a->answers];
    /* a full fence after the count: the parent's "I sleep" is then seen, or it sees the count */
    __atomic_store_n(tally, *tally + 1, __ATOMIC_SEQ_CST);
    const int64_t *parent = &a->rows[a->workers * a->row_words];
    const int64_t sleep = __atomic_load_n(&parent[a->sleeping], __ATOMIC_SEQ_CST);
    if (sleep == 0 || sleep == a->woken || a->fd < 0)
        return 0;
    int64_t total = 0;
    for (Py_ssize_t j = 0; j < a->workers; j++)
        total += __atomic_load_n(&a->rows[j * a->row_words + a->answers], __ATOMIC_RELAXED);
    if (total < __atomic_load_n(&parent[a->target], __ATOMIC_ACQUIRE))
        return 0;
    a->woken = sleep;
#ifndef _WIN32
    static const uint64_t one = 1;
    if (write(a->fd, &one, sizeof one) < 0) {
        /* EAGAIN: a wake-up is pending already; anything else: the parent naps and looks */
    }
#endif
    return 0;
}

static int answer_quiet(void *ctx, Py_ssize_t k)
{
    return answer_env((Answerer *)ctx, k, 0);
}

/* The values of `info` into `words` if it has the schema's keys (str) and value types: 1, else 0. */
static int put_values(const Answerer *a, int64_t *words, PyObject *info)
{
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    const char *kinds = PyBytes_AS_STRING(a->kinds);
    if (PyDict_GET_SIZE(info) != PyTuple_GET_SIZE(a->keys))
        return 0;
    for (Py_ssize_t j = 0; PyDict_Next(info, &pos, &key, &value); j++) {  /* (no Python code runs) */
        PyObject *want = PyTuple_GET_ITEM(a->keys, j);
        int overflow = 0;
        if ((key != want && (!PyUnicode_CheckExact(key) || PyUnicode_Compare(key, want) != 0))
                || (PyObject *)Py_TYPE(value) != PyTuple_GET_ITEM(a->types, j))
            return 0;
        if (kinds[j] == 'f') {
            const double x = PyFloat_AsDouble(value);
            memcpy(&words[j + 1], &x, sizeof x);
        } else
            words[j + 1] = kinds[j] == 'b' ? PyObject_IsTrue(value) : PyLong_AsLongLongAndOverflow(value, &overflow);
        if (overflow || PyErr_Occurred())
            return 0;
    }
    return 1;
}

/* Env k's info with its answer (see the top): 1 answered, 0 left to be said, -1 on error. */
static int answer_info(void *ctx, Py_ssize_t k, PyObject *info)
{
    Answerer *a = ctx;
    if (a->columns == NULL || k < 0 || k >= a->n)
        return 0;
    int64_t *words = &a->columns[k * a->info_words];
    if (a->objects != NULL) {
        PyObject *index = PyLong_FromSsize_t(a->first + k);
        const int put = index != NULL && PyDict_SetItem(a->objects, index, info) == 0;
        Py_XDECREF(index);
        if (!put)
            return -1;
    } else if (a->keys == NULL || !__atomic_load_n(&a->rows[a->w * a->row_words + a->schema], __ATOMIC_ACQUIRE)
               || !put_values(a, words, info)) {
        PyErr_Clear();  /* a value that does not fit (an int beyond int64): the info is said */
        return 0;
    }
    words[0] = a->values[k] >> 1;  /* after the values, before the answer */
    return answer_env(a, k, 0) < 0 ? -1 : 1;
}

static void free_answerer(PyObject *capsule)
{
    Answerer *a = PyCapsule_GetPointer(capsule, ON_DONE_CAPSULE);
    if (a == NULL)
        return;
    release_all(4, a->views);  /* (a view not got has no object: nothing to release) */
    PyObject *held[4] = {a->objects, a->keys, a->types, a->kinds};
    for (int j = 0; j < 4; j++)
        Py_XDECREF(held[j]);
    PyMem_Free(a);
}

PyDoc_STRVAR(answerer_doc, "answerer(answered, values, rows, w, fd, answers, sleeping, target, columns=None, schema=0, "
             "first=0, objects=None) -> capsule: worker w's answers, as the step loop's C hook.");

static PyObject *answerer(PyObject *self, PyObject *args)
{
    PyObject *answered, *values, *rows, *columns = Py_None, *objects = Py_None;
    Py_ssize_t w, answers, sleeping, target, schema = 0, first = 0;
    int fd;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOOnInnn|OnnO:answerer", &answered, &values, &rows, &w, &fd, &answers, &sleeping,
                          &target, &columns, &schema, &first, &objects))
        return NULL;
    Answerer *a = PyMem_Calloc(1, sizeof(Answerer));
    if (a == NULL)
        return PyErr_NoMemory();
    PyObject *capsule = PyCapsule_New(a, ON_DONE_CAPSULE, free_answerer);
    if (capsule == NULL)
        return PyMem_Free(a), NULL;
    Py_buffer *r = &a->views[2], *c = &a->views[3];
    if (get_words(answered, &a->views[0], 1, 'q', "answered") < 0 || get_words(values, &a->views[1], 0, 'q', "values") < 0
        || PyObject_GetBuffer(rows, r, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0
        || (columns != Py_None && PyObject_GetBuffer(columns, c, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0))
        return Py_DECREF(capsule), NULL;
    const Py_ssize_t n = a->views[0].shape[0];
    const int words_ok = r->ndim == 2 && r->itemsize == 8 && (!strcmp(r->format, "q") || !strcmp(r->format, "l"))
        && (columns == Py_None || (c->ndim == 2 && c->shape[0] == n && c->shape[1] > 0 && c->itemsize == 8
                                   && (!strcmp(c->format, "q") || !strcmp(c->format, "l"))));
    if (!words_ok || a->views[1].shape[0] != n || w < 0 || w >= r->shape[0] - 1 || answers < 0 || answers >= r->shape[1]
        || sleeping < 0 || sleeping >= r->shape[1] || target < 0 || target >= r->shape[1] || schema < 0
        || schema >= r->shape[1] || (objects != Py_None && !PyDict_Check(objects))) {
        Py_DECREF(capsule);
        return PyErr_Format(PyExc_ValueError, "answerer: expected int64 answered and values of one length, int64 "
                            "rows (workers + 1, words) and worker, columns inside them, int64 info columns (envs, "
                            "words) and a dict of objects");
    }
    *a = (Answerer){.fn = answer_quiet, .ctx = a, .info_fn = answer_info, .views = {a->views[0], a->views[1], *r, *c},
                    .answered = a->views[0].buf, .values = a->views[1].buf, .rows = r->buf,
                    .columns = columns == Py_None ? NULL : c->buf, .n = n, .workers = r->shape[0] - 1,
                    .w = w, .row_words = r->shape[1], .answers = answers, .sleeping = sleeping, .target = target,
                    .schema = schema, .first = first, .info_words = columns == Py_None ? 0 : c->shape[1],
                    .objects = objects == Py_None ? NULL : Py_NewRef(objects), .fd = fd};
    return capsule;
}

PyDoc_STRVAR(schema_doc, "schema(answerer, keys, types, kinds): the schema of the infos that go in the columns.");

static PyObject *schema(PyObject *self, PyObject *args)
{
    PyObject *capsule, *keys, *types, *kinds;
    (void)self;
    if (!PyArg_ParseTuple(args, "OO!O!O!:schema", &capsule, &PyTuple_Type, &keys, &PyTuple_Type, &types,
                          &PyBytes_Type, &kinds))
        return NULL;
    Answerer *a = PyCapsule_GetPointer(capsule, ON_DONE_CAPSULE);
    if (a == NULL)
        return NULL;
    const Py_ssize_t size = PyTuple_GET_SIZE(keys);
    if (PyTuple_GET_SIZE(types) != size || PyBytes_GET_SIZE(kinds) != size || size >= a->info_words)
        return PyErr_Format(PyExc_ValueError, "schema: a key, a type and a kind per value, fewer than %zd",
                            a->info_words);
    Py_XSETREF(a->keys, Py_NewRef(keys));
    Py_XSETREF(a->types, Py_NewRef(types));
    Py_XSETREF(a->kinds, Py_NewRef(kinds));
    Py_RETURN_NONE;
}

PyDoc_STRVAR(answer_doc, "answer(answerer, k, has_message): env k answered (through the answerer's C hook).");

static PyObject *answer(PyObject *self, PyObject *args)
{
    PyObject *capsule;
    Py_ssize_t k;
    int has_message;
    (void)self;
    if (!PyArg_ParseTuple(args, "Onp:answer", &capsule, &k, &has_message))
        return NULL;
    Answerer *a = PyCapsule_GetPointer(capsule, ON_DONE_CAPSULE);
    if (a == NULL || answer_env(a, k, has_message) < 0)
        return NULL;
    Py_RETURN_NONE;
}

PyDoc_STRVAR(fence_doc, "fence(): a full memory fence (every store before it is seen before any load after it).");

static PyObject *fence(PyObject *self, PyObject *args)
{
    (void)self, (void)args;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"fence", fence, METH_NOARGS, fence_doc},
    {"answerer", answerer, METH_VARARGS, answerer_doc},
    {"answer", answer, METH_VARARGS, answer_doc},
    {"schema", schema, METH_VARARGS, schema_doc},
    {"take_runs", take_runs, METH_VARARGS, take_runs_doc},
    {"scan", scan, METH_VARARGS, scan_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_lanes_kernel", "The per-env bookkeeping of the lanes, in one pass each, and a worker's answers.",
    -1, methods,
};

PyMODINIT_FUNC PyInit__lanes_kernel(void)
{
    return PyModule_Create(&module);
}
