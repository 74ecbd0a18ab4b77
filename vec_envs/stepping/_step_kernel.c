/* _step_kernel: EnvSlice's step loop for the envs with nothing to say.
 *
 * Most env steps are alike: an array observation of the space's shape and dtype, a float
 * reward, two False flags and an empty info. For those, EnvSlice.step_env's Python (the
 * result's checks, the row's store, the reward and done stores, the running slot) costs
 * about as much as a cheap env's own step. This loop calls each env's step() and, while
 * the result is of that kind, stores it straight into the rows: the observation's bytes
 * copied, the reward as float32, done False, a fresh empty info appended to `infos`.
 *
 * The first result of any other kind (an episode's end, an info, another type, shape or
 * dtype) stops the loop and goes back to EnvSlice, which checks and stores it with all of
 * its Python: an unusual result is never judged here. An exception from step() does the
 * same (an Exception; anything else, a KeyboardInterrupt, goes on up at once).
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

static PyObject *STEP_NAME; /* "step", interned once */

/* Where the loop writes and what it accepts: the tuple EnvSlice builds in attach(). */
typedef struct {
    PyObject *envs;         /* list of the slice's envs */
    Py_buffer obs, rewards, dones;
    int64_t *running;       /* 1 + the env being called (NULL: not tracked) */
    Py_buffer running_view;
    Py_ssize_t first_index;
    const char *obs_format; /* the batch's element format: an observation must have the same */
    PyObject *reward_types; /* tuple of the reward types taken as they are */
    PyObject *ndarray;      /* numpy.ndarray: only exact arrays are copied */
    Py_ssize_t row_bytes;
} Rows;

static void release_rows(Rows *r)
{
    if (r->obs.obj) PyBuffer_Release(&r->obs);
    if (r->rewards.obj) PyBuffer_Release(&r->rewards);
    if (r->dones.obj) PyBuffer_Release(&r->dones);
    if (r->running_view.obj) PyBuffer_Release(&r->running_view);
}

static int get_rows(PyObject *spec, Rows *r)
{
    PyObject *obs, *rewards, *dones, *running;
    memset(r, 0, sizeof(*r));
    if (!PyArg_ParseTuple(spec, "O!OOOOnO!O!:rows", &PyList_Type, &r->envs, &obs, &rewards, &dones, &running,
                          &r->first_index, &PyTuple_Type, &r->reward_types, &PyType_Type, &r->ndarray))
        return -1;
    if (PyObject_GetBuffer(obs, &r->obs, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0
        || PyObject_GetBuffer(rewards, &r->rewards, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0
        || PyObject_GetBuffer(dones, &r->dones, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
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
        || r->obs.ndim < 1 || r->obs.shape[0] != n) {
        PyErr_SetString(PyExc_ValueError, "rows: expected float32 rewards, bool dones and obs with a row per env");
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

/* Store env k's result if it is the quiet kind: 1 stored, 0 not (nothing written that
 * step_env would not write the same). */
static int store_quiet(Rows *r, PyObject *result, Py_ssize_t k, PyObject *infos)
{
    if (!PyTuple_CheckExact(result) || PyTuple_GET_SIZE(result) != 5)
        return 0;
    PyObject *info = PyTuple_GET_ITEM(result, 4);
    if (PyTuple_GET_ITEM(result, 2) != Py_False || PyTuple_GET_ITEM(result, 3) != Py_False
        || !PyDict_CheckExact(info) || PyDict_GET_SIZE(info) != 0)
        return 0;
    if (!store_obs(r, PyTuple_GET_ITEM(result, 0), k) || !store_reward(r, PyTuple_GET_ITEM(result, 1), k))
        return 0;
    ((char *)r->dones.buf)[k] = 0;
    PyObject *fresh = PyDict_New();
    if (fresh == NULL)
        return -1;
    const int failed = PyList_Append(infos, fresh);
    Py_DECREF(fresh);
    return failed ? -1 : 1;
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
"step_quiet(rows, actions, offset, start, stop, infos) -> (k, result, error)\n\n"
"Step envs start..stop-1 of rows' slice, env k with actions[k - offset], storing each\n"
"quiet result into the rows and appending a fresh {} to infos. Returns (stop, None,\n"
"None) when all were quiet; else the first env k whose step returned something else\n"
"(result, unstored) or raised an Exception (error), its running slot still set.");

static PyObject *step_quiet(PyObject *self, PyObject *args)
{
    PyObject *spec, *actions, *infos;
    Py_ssize_t offset, start, stop;
    Rows r;
    (void)self;
    if (!PyArg_ParseTuple(args, "O!OnnnO!:step_quiet", &PyTuple_Type, &spec, &actions, &offset, &start, &stop,
                          &PyList_Type, &infos))
        return NULL;
    if (get_rows(spec, &r) < 0)
        return NULL;
    if (start < 0 || stop > PyList_GET_SIZE(r.envs) || start > stop) {
        release_rows(&r);
        return PyErr_Format(PyExc_IndexError, "step_quiet: envs %zd..%zd of a slice of %zd", start, stop,
                            PyList_GET_SIZE(r.envs));
    }
    PyObject *out = NULL;
    for (Py_ssize_t k = start; k < stop; k++) {
        PyObject *action = PySequence_GetItem(actions, k - offset);
        if (action == NULL)
            goto done;
        if (r.running)
            *r.running = r.first_index + k + 1;
        PyObject *call[2] = {PyList_GET_ITEM(r.envs, k), action};
        PyObject *result = PyObject_VectorcallMethod(STEP_NAME, call, 2, NULL);
        Py_DECREF(action);
        if (result == NULL) {
            PyObject *error = take_exception();
            if (error != NULL)
                out = Py_BuildValue("(nON)", k, Py_None, error);
            goto done;
        }
        const int stored = store_quiet(&r, result, k, infos);
        if (stored <= 0) {
            if (stored == 0)
                out = Py_BuildValue("(nNO)", k, result, Py_None);
            else
                Py_DECREF(result);
            goto done;
        }
        Py_DECREF(result);
        if (r.running)
            *r.running = 0;
    }
    out = Py_BuildValue("(nOO)", stop, Py_None, Py_None);
done:
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
    return STEP_NAME == NULL ? NULL : PyModule_Create(&module);
}
