/* _lanes_kernel: the per-env bookkeeping of the lanes, in one pass each.
 *
 * Under recv/send each side looks at every lane of its envs once per round: a worker for
 * the requests it has not taken yet, the parent for the answers to the envs in flight.
 * With NumPy each look is a handful of whole-array operations (a comparison, a mask, a
 * gather, a scatter, ...), each costing about as much as the whole loop below does in C.
 * Same results as the NumPy code in control.py, which runs where this is not built.
 *
 * take_runs(requested, seen, values) -> [(start, stop), ...]
 *     A worker takes every request not taken yet: for each env k whose requested[k] differs
 *     from seen[k], seen[k] = requested[k] and values[k] = requested[k] << 1 (the answer it
 *     will write); returns the runs of consecutive envs so taken.
 * scan(answered, expected, flying, unread, ready) -> int
 *     The parent finds the envs in flight that answered: for each env i with flying[i] and
 *     answered[i] >> 1 == expected[i], flying[i] = False, unread[i] = answered[i] & 1 (a
 *     message waits in the pipe) and i is appended to the list ready; returns how many.
 * count_finished(answered, expected, flying) -> int
 *     How many envs scan() would find now (a test while waiting; nothing is written).
 * first_ready(ready, answered, dones, env_ids, their_dones) -> bool
 *     The first len(env_ids) envs of the list ready into env_ids (int64), their dones into
 *     their_dones; True if any of them answered with a message.
 * quiet_infos(n, ended, ids, rows, truncated, reset_infos) -> list
 *     The n infos of a batch where no env had anything to say: empty dicts, but at each
 *     place ended[k] {"terminal_observation": rows[k], "TimeLimit.truncated": truncated[k]},
 *     and reset_infos[ids[k]] = {} (the env was reset with nothing to say).
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

/* A C-contiguous 1-D buffer of `itemsize` bytes per item, of format `kind` ("q": int64, "?": bool). */
static int get_words(PyObject *obj, Py_buffer *view, int writable, char kind, const char *name)
{
    if (PyObject_GetBuffer(obj, view, (writable ? PyBUF_WRITABLE : 0) | PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return -1;
    int ok = view->ndim == 1 && view->format != NULL;
    if (ok && kind == 'q')
        ok = view->itemsize == 8 && (!strcmp(view->format, "q") || !strcmp(view->format, "l"));
    else if (ok)
        ok = view->itemsize == 1 && !strcmp(view->format, "?");
    if (!ok) {
        PyBuffer_Release(view);
        PyErr_Format(PyExc_ValueError, "_lanes_kernel: %s must be a 1-D %s array", name,
                     kind == 'q' ? "int64" : "bool");
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

PyDoc_STRVAR(take_runs_doc, "take_runs(requested, seen, values) -> list of (start, stop): the requests not taken yet.");

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
        Py_ssize_t start = k;
        do {
            seen[k] = seq;
            values[k] = (int64_t)((uint64_t)seq << 1);
            if (++k == n)
                break;
            seq = __atomic_load_n(&requested[k], __ATOMIC_ACQUIRE);
        } while (seq != seen[k]);
        PyObject *run = Py_BuildValue("(nn)", start, k);
        if (run == NULL || PyList_Append(runs, run) < 0)
            Py_CLEAR(runs);
        Py_XDECREF(run);
    }
    release_all(3, v);
    return runs;
}

PyDoc_STRVAR(scan_doc, "scan(answered, expected, flying, unread, ready) -> int: the envs in flight that answered, "
             "appended to ready.");

static PyObject *scan(PyObject *self, PyObject *args)
{
    PyObject *objs[4], *ready;
    Py_buffer v[4];
    static const int writable[4] = {0, 0, 1, 1};
    static const char *const names[4] = {"answered", "expected", "flying", "unread"};
    Py_ssize_t n, found = 0;
    if (!PyArg_ParseTuple(args, "OOOOO!:scan", &objs[0], &objs[1], &objs[2], &objs[3], &PyList_Type, &ready)
            || get_all(4, objs, v, writable, "qq??", names, &n) < 0)
        return NULL;
    const int64_t *answered = v[0].buf, *expected = v[1].buf;
    char *flying = v[2].buf, *unread = v[3].buf;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!flying[i])
            continue;
        int64_t answer = __atomic_load_n(&answered[i], __ATOMIC_ACQUIRE);
        if ((answer >> 1) != expected[i])
            continue;
        PyObject *index = PyLong_FromSsize_t(i);
        if (index == NULL || PyList_Append(ready, index) < 0) {
            Py_XDECREF(index);
            release_all(4, v);
            return NULL;
        }
        Py_DECREF(index);
        flying[i] = 0;
        unread[i] = (char)(answer & 1);
        found++;
    }
    release_all(4, v);
    return PyLong_FromSsize_t(found);
}

PyDoc_STRVAR(count_finished_doc, "count_finished(answered, expected, flying) -> int: how many envs scan() would find.");

static PyObject *count_finished(PyObject *self, PyObject *args)
{
    PyObject *objs[3];
    Py_buffer v[3];
    static const int writable[3] = {0, 0, 0};
    static const char *const names[3] = {"answered", "expected", "flying"};
    Py_ssize_t n, found = 0;
    if (!PyArg_ParseTuple(args, "OOO:count_finished", &objs[0], &objs[1], &objs[2])
            || get_all(3, objs, v, writable, "qq?", names, &n) < 0)
        return NULL;
    const int64_t *answered = v[0].buf, *expected = v[1].buf;
    const char *flying = v[2].buf;
    for (Py_ssize_t i = 0; i < n; i++)
        found += flying[i] && (__atomic_load_n(&answered[i], __ATOMIC_ACQUIRE) >> 1) == expected[i];
    release_all(3, v);
    return PyLong_FromSsize_t(found);
}

PyDoc_STRVAR(first_ready_doc, "first_ready(ready, answered, dones, env_ids, their_dones) -> bool: the first envs of "
             "ready, their dones, and whether any has a message.");

static PyObject *first_ready(PyObject *self, PyObject *args)
{
    PyObject *ready, *objs[4];
    Py_buffer v[4];
    static const int writable[4] = {0, 0, 1, 1};
    static const char *const names[4] = {"answered", "dones", "env_ids", "their_dones"};
    if (!PyArg_ParseTuple(args, "O!OOOO:first_ready", &PyList_Type, &ready, &objs[0], &objs[1], &objs[2], &objs[3]))
        return NULL;
    for (int j = 0; j < 4; j++) {
        if (get_words(objs[j], &v[j], writable[j], "q?q?"[j], names[j]) < 0) {
            release_all(j, v);
            return NULL;
        }
    }
    Py_ssize_t n = v[0].shape[0], count = v[2].shape[0];
    if (v[1].shape[0] != n || v[3].shape[0] != count || count > PyList_GET_SIZE(ready)) {
        release_all(4, v);
        return PyErr_Format(PyExc_ValueError, "first_ready: %zd envs of %zd ready, into %zd dones, over %zd envs",
                            count, PyList_GET_SIZE(ready), v[3].shape[0], n);
    }
    const int64_t *answered = v[0].buf;
    const char *dones = v[1].buf;
    int64_t *env_ids = v[2].buf;
    char *their_dones = v[3].buf;
    int talking = 0;
    for (Py_ssize_t j = 0; j < count; j++) {
        Py_ssize_t i = PyLong_AsSsize_t(PyList_GET_ITEM(ready, j));
        if (i < 0 || i >= n) {
            release_all(4, v);
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_IndexError, "first_ready: env %zd of %zd envs", i, n);
            return NULL;
        }
        env_ids[j] = i;
        their_dones[j] = dones[i];
        talking |= (int)(__atomic_load_n(&answered[i], __ATOMIC_ACQUIRE) & 1);
    }
    release_all(4, v);
    return PyBool_FromLong(talking);
}

PyDoc_STRVAR(quiet_infos_doc, "quiet_infos(n, ended, ids, rows, truncated, reset_infos) -> list: the infos of a "
             "batch where no env had anything to say.");

static PyObject *terminal_key, *truncated_key;  /* interned at import */

/* {"terminal_observation": row, "TimeLimit.truncated": truncated}, or NULL. */
static PyObject *terminal_info(PyObject *row, int truncated)
{
    PyObject *info = PyDict_New();
    if (info != NULL && (PyDict_SetItem(info, terminal_key, row) < 0
                         || PyDict_SetItem(info, truncated_key, truncated ? Py_True : Py_False) < 0))
        Py_CLEAR(info);
    return info;
}

/* The ended envs' infos into `infos` (at their places) and empty reset infos; -1 on error. */
static int fill_ended(PyObject *infos, const Py_buffer *v, PyObject *rows, PyObject *reset_infos)
{
    const int64_t *ended = v[0].buf, *ids = v[1].buf;
    const char *truncated = v[2].buf;
    Py_ssize_t n = PyList_GET_SIZE(infos), resets = PyList_GET_SIZE(reset_infos);
    for (Py_ssize_t k = 0; k < v[0].shape[0]; k++) {
        if (ended[k] < 0 || ended[k] >= n || ids[k] < 0 || ids[k] >= resets) {
            PyErr_Format(PyExc_IndexError, "quiet_infos: place %lld of %zd, env %lld of %zd",
                         (long long)ended[k], n, (long long)ids[k], resets);
            return -1;
        }
        PyObject *row = PySequence_GetItem(rows, k);
        PyObject *info = row == NULL ? NULL : terminal_info(row, truncated[k]);
        Py_XDECREF(row);
        PyObject *reset_info = info == NULL ? NULL : PyDict_New();
        if (reset_info == NULL) {
            Py_XDECREF(info);
            return -1;
        }
        PyList_SetItem(infos, ended[k], info);  /* steals info, drops the empty dict there */
        if (PyList_SetItem(reset_infos, ids[k], reset_info) < 0)
            return -1;
    }
    return 0;
}

static PyObject *quiet_infos(PyObject *self, PyObject *args)
{
    Py_ssize_t n;
    PyObject *objs[3], *rows, *reset_infos;
    Py_buffer v[3];
    static const int writable[3] = {0, 0, 0};
    static const char *const names[3] = {"ended", "ids", "truncated"};
    Py_ssize_t m;
    if (!PyArg_ParseTuple(args, "nOOOOO!:quiet_infos", &n, &objs[0], &objs[1], &rows, &objs[2], &PyList_Type,
                          &reset_infos) || get_all(3, objs, v, writable, "qq?", names, &m) < 0)
        return NULL;
    PyObject *infos = PyList_New(n);
    for (Py_ssize_t i = 0; infos != NULL && i < n; i++) {
        PyObject *info = PyDict_New();
        if (info == NULL)
            Py_CLEAR(infos);
        else
            PyList_SET_ITEM(infos, i, info);
    }
    if (infos != NULL && fill_ended(infos, v, rows, reset_infos) < 0)
        Py_CLEAR(infos);
    release_all(3, v);
    return infos;
}

static PyMethodDef methods[] = {
    {"quiet_infos", quiet_infos, METH_VARARGS, quiet_infos_doc},
    {"first_ready", first_ready, METH_VARARGS, first_ready_doc},
    {"take_runs", take_runs, METH_VARARGS, take_runs_doc},
    {"scan", scan, METH_VARARGS, scan_doc},
    {"count_finished", count_finished, METH_VARARGS, count_finished_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_lanes_kernel", "The per-env bookkeeping of the lanes, in one pass each.",
    -1, methods,
};

PyMODINIT_FUNC PyInit__lanes_kernel(void)
{
    terminal_key = PyUnicode_InternFromString("terminal_observation");
    truncated_key = PyUnicode_InternFromString("TimeLimit.truncated");
    if (terminal_key == NULL || truncated_key == NULL)
        return NULL;
    return PyModule_Create(&module);
}
