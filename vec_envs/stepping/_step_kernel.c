/* _step_kernel: EnvSlice's step loop for the envs with nothing to say.
 *
 * Most env steps are alike: an array observation of the space's shape and dtype, a float
 * reward, two False flags and an empty info. For those, EnvSlice.step_env's Python (the
 * result's checks, the row's store, the reward and done stores, the running slot) costs
 * about as much as a cheap env's own step. This loop calls each env's step() and, while
 * the result is of that kind, stores it straight into the rows: the observation's bytes
 * copied, the reward as float32, done False, a fresh empty info appended to `infos`.
 *
 * An episode's end of that kind is handled here too where the rows have terminal rows:
 * the last observation is copied into the env's terminal row, the env is reset, and its
 * reset observation (of the same kind, with an info dict) stored in the row and a copy of
 * its reset info in `reset_infos`.
 *
 * With marks (a recv/send worker answering each env as soon as it is done, ``marks.py``),
 * each env stored here is marked at once: its cell gets its value after its rows are
 * written, the tally goes up, and notify() is called while the watched word is set. A
 * reset info with something in it is then handed back like an unusual result, since it
 * has to be said.
 *
 * The first result of any other kind (an info, another type, shape or dtype) stops the
 * loop and goes back to EnvSlice, which checks and stores it with all of its Python: an
 * unusual result is never judged here. An exception from step() or reset() does the same
 * (an Exception; anything else, a KeyboardInterrupt, goes on up at once).
 *
 * Built by setup.py when a C compiler is there (optional); without it EnvSlice steps
 * every env through step_env.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

static PyObject *STEP_NAME, *RESET_NAME, *RESET_KWNAMES; /* "step", "reset", ("seed", "options") */

/* Where the loop writes and what it accepts: the tuple EnvSlice builds in attach(). */
typedef struct {
    PyObject *envs;         /* list of the slice's envs */
    Py_buffer obs, rewards, dones;
    Py_buffer terminal_obs, truncated; /* the terminal rows (obj NULL: none, ends go to Python) */
    PyObject *reset_infos;  /* list: the reset info of each env */
    int64_t *running;       /* 1 + the env being called (NULL: not tracked) */
    Py_buffer running_view;
    Py_ssize_t first_index;
    const char *obs_format; /* the batch's element format: an observation must have the same */
    PyObject *reward_types; /* tuple of the reward types taken as they are */
    PyObject *ndarray;      /* numpy.ndarray: only exact arrays are copied */
    Py_ssize_t row_bytes;
    int talking_resets;     /* hand back a reset whose info has something in it (with marks) */
} Rows;

/* Where each env stored here is marked done (``marks.py``): the tuple Marks is. */
typedef struct {
    Py_buffer cells_view, values_view, tally_view, watch_view;
    int64_t *cells, *tally;
    const int64_t *values, *watch;
    PyObject *notify;       /* called after a mark while *watch is nonzero (NULL: never) */
} Marks;

static void release_marks(Marks *m)
{
    if (m->cells_view.obj) PyBuffer_Release(&m->cells_view);
    if (m->values_view.obj) PyBuffer_Release(&m->values_view);
    if (m->tally_view.obj) PyBuffer_Release(&m->tally_view);
    if (m->watch_view.obj) PyBuffer_Release(&m->watch_view);
}

/* An int64 buffer of at least `n` words (writable if asked). */
static int64_t *int64_words(PyObject *obj, Py_buffer *view, Py_ssize_t n, int writable)
{
    if (PyObject_GetBuffer(obj, view, (writable ? PyBUF_WRITABLE : 0) | PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return NULL;
    if (view->itemsize != 8 || view->len < n * 8 || (strcmp(view->format, "q") && strcmp(view->format, "l"))) {
        PyErr_SetString(PyExc_ValueError, "marks: expected int64 cells and values with a word per env, "
                        "and int64 tally and watch words");
        return NULL;
    }
    return (int64_t *)view->buf;
}

static int get_marks(PyObject *spec, Py_ssize_t n, Marks *m)
{
    PyObject *cells, *values, *tally, *watch, *notify;
    memset(m, 0, sizeof(*m));
    if (!PyArg_ParseTuple(spec, "OOOOO:marks", &cells, &values, &tally, &watch, &notify))
        return -1;
    if (!(m->cells = int64_words(cells, &m->cells_view, n, 1))
        || !(m->values = int64_words(values, &m->values_view, n, 0))
        || !(m->tally = int64_words(tally, &m->tally_view, 1, 1))
        || !(m->watch = int64_words(watch, &m->watch_view, 1, 0))) {
        release_marks(m);
        return -1;
    }
    m->notify = notify == Py_None ? NULL : notify;
    return 0;
}

/* Env k is done: its cell gets its value after its rows (another process may be reading
 * them as soon as it sees the value), then the tally, then notify() if watched. */
static int mark(Marks *m, Py_ssize_t k)
{
#if defined(__GNUC__) || defined(__clang__)
    __atomic_store_n(&m->cells[k], m->values[k], __ATOMIC_RELEASE);
    __atomic_store_n(m->tally, *m->tally + 1, __ATOMIC_SEQ_CST); /* the watched load comes after it */
    const int64_t watched = __atomic_load_n(m->watch, __ATOMIC_SEQ_CST);
#else
    ((volatile int64_t *)m->cells)[k] = m->values[k];
    *(volatile int64_t *)m->tally += 1;
    const int64_t watched = *(volatile const int64_t *)m->watch;
#endif
    if (m->notify == NULL || !watched)
        return 0;
    PyObject *ok = PyObject_CallNoArgs(m->notify);
    Py_XDECREF(ok);
    return ok == NULL ? -1 : 0;
}

static void release_rows(Rows *r)
{
    if (r->obs.obj) PyBuffer_Release(&r->obs);
    if (r->rewards.obj) PyBuffer_Release(&r->rewards);
    if (r->dones.obj) PyBuffer_Release(&r->dones);
    if (r->terminal_obs.obj) PyBuffer_Release(&r->terminal_obs);
    if (r->truncated.obj) PyBuffer_Release(&r->truncated);
    if (r->running_view.obj) PyBuffer_Release(&r->running_view);
}

static int get_rows(PyObject *spec, Rows *r)
{
    PyObject *obs, *rewards, *dones, *terminal_obs, *truncated, *running;
    const int flags = PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS | PyBUF_FORMAT;
    memset(r, 0, sizeof(*r));
    if (!PyArg_ParseTuple(spec, "O!OOOOOO!OnO!O!:rows", &PyList_Type, &r->envs, &obs, &rewards, &dones,
                          &terminal_obs, &truncated, &PyList_Type, &r->reset_infos, &running, &r->first_index,
                          &PyTuple_Type, &r->reward_types, &PyType_Type, &r->ndarray))
        return -1;
    if (PyObject_GetBuffer(obs, &r->obs, flags) < 0 || PyObject_GetBuffer(rewards, &r->rewards, flags) < 0
        || PyObject_GetBuffer(dones, &r->dones, flags) < 0)
        goto fail;
    if (terminal_obs != Py_None && (PyObject_GetBuffer(terminal_obs, &r->terminal_obs, flags) < 0
                                    || PyObject_GetBuffer(truncated, &r->truncated, flags) < 0))
        goto fail;
    if (running != Py_None) {
        if (PyObject_GetBuffer(running, &r->running_view, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0)
            goto fail;
        if (r->running_view.len < (Py_ssize_t)sizeof(int64_t)) {
            PyErr_SetString(PyExc_ValueError, "rows: the running slot holds no int64");
            goto fail;
        }
        r->running = (int64_t *)r->running_view.buf;
    }
    const Py_ssize_t n = PyList_GET_SIZE(r->envs);
    if (strcmp(r->rewards.format, "f") != 0 || r->rewards.len != n * 4
        || strcmp(r->dones.format, "?") != 0 || r->dones.len != n
        || r->obs.ndim < 1 || r->obs.shape[0] != n || PyList_GET_SIZE(r->reset_infos) != n
        || (r->terminal_obs.obj && (r->terminal_obs.len != r->obs.len || strcmp(r->terminal_obs.format, r->obs.format)
                                    || strcmp(r->truncated.format, "?") != 0 || r->truncated.len != n))) {
        PyErr_SetString(PyExc_ValueError, "rows: expected float32 rewards, bool dones and obs with a row per env "
                        "(and terminal rows like them)");
        goto fail;
    }
    r->row_bytes = n ? r->obs.len / n : 0;
    r->obs_format = r->obs.format;
    return 0;
fail:
    release_rows(r);
    return -1;
}

/* Does `obs` have the batch row's type, shape and dtype? Then copy it into row k. */
static int store_obs(Rows *r, PyObject *obs, Py_ssize_t k)
{
    if (Py_TYPE(obs) != (PyTypeObject *)r->ndarray)
        return 0;
    Py_buffer view;
    if (PyObject_GetBuffer(obs, &view, PyBUF_RECORDS_RO) < 0) {
        PyErr_Clear();
        return 0;
    }
    int fits = view.len == r->row_bytes && view.ndim == r->obs.ndim - 1 && view.itemsize == r->obs.itemsize
        && strcmp(view.format, r->obs_format) == 0 && PyBuffer_IsContiguous(&view, 'C');
    for (int d = 0; fits && d < view.ndim; d++)
        fits = view.shape[d] == r->obs.shape[d + 1];
    if (fits)
        memcpy((char *)r->obs.buf + k * r->row_bytes, view.buf, (size_t)r->row_bytes);
    PyBuffer_Release(&view);
    return fits;
}

/* Is `reward` of a type taken as it is, and a float32 holds it? Then store it. */
static int store_reward(Rows *r, PyObject *reward, Py_ssize_t k)
{
    PyTypeObject *type = Py_TYPE(reward);
    int usual = 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(r->reward_types); i++)
        usual |= (PyTypeObject *)PyTuple_GET_ITEM(r->reward_types, i) == type;
    if (!usual)
        return 0;
    const double value = PyFloat_AsDouble(reward);
    if (value == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    if (isfinite(value) && fabs(value) > FLT_MAX)
        return 0; /* NumPy's cast warns: leave it to it */
    ((float *)r->rewards.buf)[k] = (float)value;
    return 1;
}

/* What settling a result did. */
enum { FAILED = -1, TO_PYTHON = 0, STORED = 1 };

/* Store env k's step result if it is the quiet kind: STORED, TO_PYTHON (nothing written
 * that step_env would not write the same) or FAILED (reset() raised: its exception is
 * set). After an episode's end, `*reset_result` is what reset() returned. */
static int settle_step(Rows *r, PyObject *result, Py_ssize_t k, PyObject **reset_result)
{
    if (!PyTuple_CheckExact(result) || PyTuple_GET_SIZE(result) != 5)
        return TO_PYTHON;
    PyObject *info = PyTuple_GET_ITEM(result, 4), *terminated = PyTuple_GET_ITEM(result, 2),
             *truncated = PyTuple_GET_ITEM(result, 3);
    if (!PyBool_Check(terminated) || !PyBool_Check(truncated) || !PyDict_CheckExact(info) || PyDict_GET_SIZE(info))
        return TO_PYTHON;
    const int ended = terminated == Py_True || truncated == Py_True;
    if ((ended && r->terminal_obs.obj == NULL) || !store_obs(r, PyTuple_GET_ITEM(result, 0), k)
        || !store_reward(r, PyTuple_GET_ITEM(result, 1), k))
        return TO_PYTHON;
    ((char *)r->dones.buf)[k] = (char)ended;
    if (ended) {
        memcpy((char *)r->terminal_obs.buf + k * r->row_bytes, (char *)r->obs.buf + k * r->row_bytes,
               (size_t)r->row_bytes);
        ((char *)r->truncated.buf)[k] = truncated == Py_True && terminated == Py_False;
        PyObject *args[3] = {PyList_GET_ITEM(r->envs, k), Py_None, Py_None};
        *reset_result = PyObject_VectorcallMethod(RESET_NAME, args, 1, RESET_KWNAMES);
        if (*reset_result == NULL)
            return FAILED;
    }
    return STORED;
}

/* Store env k's reset result (after an episode's end) if it is of the usual kind. */
static int settle_reset(Rows *r, PyObject *result, Py_ssize_t k)
{
    if (!PyTuple_CheckExact(result) || PyTuple_GET_SIZE(result) != 2 || !PyDict_CheckExact(PyTuple_GET_ITEM(result, 1))
        || (r->talking_resets && PyDict_GET_SIZE(PyTuple_GET_ITEM(result, 1)))
        || !store_obs(r, PyTuple_GET_ITEM(result, 0), k))
        return TO_PYTHON;
    PyObject *info = PyDict_Copy(PyTuple_GET_ITEM(result, 1));
    if (info == NULL)
        return FAILED;
    PyList_SetItem(r->reset_infos, k, info); /* steals info */
    return STORED;
}

/* The exception being raised, as an object with its traceback; NULL when it is no
 * Exception (a KeyboardInterrupt, a SystemExit), which is left raised. */
static PyObject *take_exception(void)
{
    if (!PyErr_ExceptionMatches(PyExc_Exception))
        return NULL;
#if PY_VERSION_HEX >= 0x030C0000
    return PyErr_GetRaisedException();
#else
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    if (tb != NULL && value != NULL)
        PyException_SetTraceback(value, tb);
    Py_XDECREF(type);
    Py_XDECREF(tb);
    return value;
#endif
}

PyDoc_STRVAR(step_quiet_doc,
"step_quiet(rows, actions, offset, start, stop, infos, marks=None) -> (k, result, error, resetting)\n\n"
"Step envs start..stop-1 of rows' slice, env k with actions[k - offset], storing each\n"
"quiet result (and a quiet end's reset) into the rows and appending a fresh {} to infos;\n"
"with marks (cells, values, tally, watch, notify), marking each such env done at once.\n"
"Returns (stop, None, None, False) when all were quiet; else the first env k whose\n"
"step (resetting False) or reset after an episode's end (resetting True) returned\n"
"something else (result, unstored) or raised an Exception (error), its running slot\n"
"still set.");

/* The loop's answer for env k: what Python settles. Steals `result`; takes the raised
 * exception when `result` is NULL (NULL back where it is no Exception). */
static PyObject *to_python(Py_ssize_t k, PyObject *result, int resetting)
{
    if (result != NULL)
        return Py_BuildValue("(nNOO)", k, result, Py_None, resetting ? Py_True : Py_False);
    PyObject *error = take_exception();
    return error == NULL ? NULL : Py_BuildValue("(nONO)", k, Py_None, error, resetting ? Py_True : Py_False);
}

/* Env k's reset after a quiet episode end: 0 stored, else -1 with *out set (Python
 * settles the reset result) or an exception. Steals `reset_result`. */
static int finish_reset(Rows *r, Py_ssize_t k, PyObject *reset_result, PyObject **out)
{
    const int reset = settle_reset(r, reset_result, k);
    if (reset == TO_PYTHON) {
        *out = to_python(k, reset_result, 1);
        return -1;
    }
    Py_DECREF(reset_result);
    return reset == STORED ? 0 : -1;
}

/* Step env k: 0 when stored, else -1 with *out set (Python takes over) or an exception. */
static int step_one(Rows *r, Marks *m, PyObject *actions, Py_ssize_t offset, Py_ssize_t k, PyObject *infos,
                    PyObject **out)
{
    PyObject *action = PySequence_GetItem(actions, k - offset), *reset_result = NULL;
    if (action == NULL)
        return -1;
    if (r->running)
        *r->running = r->first_index + k + 1;
    PyObject *call[2] = {PyList_GET_ITEM(r->envs, k), action};
    PyObject *result = PyObject_VectorcallMethod(STEP_NAME, call, 2, NULL);
    Py_DECREF(action);
    const int step = result == NULL ? FAILED : settle_step(r, result, k, &reset_result);
    if (step == TO_PYTHON) {
        *out = to_python(k, result, 0);
        return -1;
    }
    const int stepped = result != NULL;  /* else step() raised; FAILED with a result: reset() raised */
    Py_XDECREF(result);
    if (step == FAILED) {
        *out = to_python(k, NULL, stepped);
        return -1;
    }
    if (reset_result != NULL && finish_reset(r, k, reset_result, out) < 0)
        return -1;
    PyObject *fresh = PyDict_New();
    const int appended = fresh != NULL && PyList_Append(infos, fresh) == 0;
    Py_XDECREF(fresh);
    if (appended && r->running)
        *r->running = 0;
    return !appended ? -1 : m ? mark(m, k) : 0;
}

static PyObject *step_quiet(PyObject *self, PyObject *args)
{
    PyObject *spec, *actions, *infos, *marks_spec = Py_None, *out = NULL;
    Py_ssize_t offset, start, stop;
    Rows r;
    Marks m;
    (void)self;
    if (!PyArg_ParseTuple(args, "O!OnnnO!|O:step_quiet", &PyTuple_Type, &spec, &actions, &offset, &start, &stop,
                          &PyList_Type, &infos, &marks_spec))
        return NULL;
    if (get_rows(spec, &r) < 0)
        return NULL;
    if (start < 0 || stop > PyList_GET_SIZE(r.envs) || start > stop) {
        release_rows(&r);
        return PyErr_Format(PyExc_IndexError, "step_quiet: envs %zd..%zd of a slice of %zd", start, stop,
                            PyList_GET_SIZE(r.envs));
    }
    r.talking_resets = marks_spec != Py_None;
    if (r.talking_resets && get_marks(marks_spec, PyList_GET_SIZE(r.envs), &m) < 0) {
        release_rows(&r);
        return NULL;
    }
    Py_ssize_t k = start;
    while (k < stop && step_one(&r, r.talking_resets ? &m : NULL, actions, offset, k, infos, &out) == 0)
        k++;
    if (k == stop)
        out = Py_BuildValue("(nOOO)", stop, Py_None, Py_None, Py_False);
    if (r.talking_resets)
        release_marks(&m);
    release_rows(&r);
    return out;
}

static PyMethodDef methods[] = {
    {"step_quiet", step_quiet, METH_VARARGS, step_quiet_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_step_kernel", "EnvSlice's step loop for the envs with nothing to say.", -1, methods,
};

PyMODINIT_FUNC PyInit__step_kernel(void)
{
    STEP_NAME = PyUnicode_InternFromString("step");
    RESET_NAME = PyUnicode_InternFromString("reset");
    RESET_KWNAMES = Py_BuildValue("(ss)", "seed", "options");
    if (STEP_NAME == NULL || RESET_NAME == NULL || RESET_KWNAMES == NULL)
        return NULL;
    return PyModule_Create(&module);
}
