/* _step_kernel: EnvSlice's step loop for the envs with nothing to say, and the infos of
 * envs that had nothing to say.
 *
 * Most env steps are alike: an array observation of the space's shape and dtype, a float
 * reward, two bool flags and an info dict. For those, EnvSlice.step_env's Python (the
 * result's checks, the row's store, the reward and done stores, the running slot) costs
 * about as much as a cheap env's own step. step_quiet calls each env's step() and, while
 * the result is of that kind, stores it straight into the rows: the observation's bytes
 * copied, the reward as float32, the done flag, and a copy of the info (a fresh empty
 * dict for an empty one) appended to `infos`.
 *
 * An episode's end of that kind is handled here too where the rows have terminal rows:
 * the last observation is copied into the env's terminal row, the env is reset, and its
 * reset observation (of the same kind, with an info dict) stored in the row and a copy of
 * its reset info in `reset_infos`.
 *
 * With `pending` flags (deferred resets: next-step and disabled autoreset) an episode's
 * end leaves the last observation in the row, sets TimeLimit.truncated in the terminal
 * rows and the env's pending flag, and resets nothing; an env whose pending flag is set
 * is reset instead of stepped (its action unread): the reset observation in its row,
 * reward 0, done False, and a copy of its reset info as its info. Same work per step as
 * the same-step loop: one flag read.
 *
 * With an on_done hook (a reader waits for each env as soon as it is done), each env
 * stored here that had nothing to say (an empty info, and an empty reset info after an
 * episode's end) is reported to it at once, after its rows are written; each one that had
 * something to say is appended to `said` instead (its caller says it, then reports it),
 * but for an info alone that a C hook takes with the answer (the lanes' info columns).
 *
 * The first result of any other kind (another type, shape or dtype; an info that is not
 * exactly a dict; an episode's end where there are no terminal rows) stops the loop and
 * goes back to EnvSlice, which checks and stores it with all of its Python: an unusual
 * result is never judged here. An exception from step() or reset() does the same
 * (an Exception; anything else, a KeyboardInterrupt, goes on up at once).
 *
 * ended_infos builds the infos of a batch where no env had anything to say: empty
 * dicts, but the terminal observation and TimeLimit.truncated of each env whose episode
 * ended (read from the terminal rows).
 *
 * Env code runs inside the loop and may change the lists the loop reads (the envs, the
 * reset infos): every index is checked against the list's length at the moment it is
 * used, and every env is held while it runs.
 *
 * Built by setup.py when a C compiler is there (optional); without it EnvSlice steps
 * every env through step_env and vec_envs/stepping/ended_infos.py builds the infos.
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
    PyObject *said;         /* the list of envs with something to say (with on_done), or NULL */
    Py_buffer pending;      /* bool per env: reset at its next step (obj NULL: resets in the same step) */
} Rows;

/* What the loop calls after each env it stored (a reader may be waiting for that env):
 * a C function behind a capsule named ON_DONE_CAPSULE (no Python call), or a Python
 * callable called with k; none when on_done is None. */
#define ON_DONE_CAPSULE "vec_envs.on_done"
typedef struct {
    int (*fn)(void *ctx, Py_ssize_t k); /* 0, or -1 with an exception set */
    void *ctx;
    /* NULL, or env k's answer with its info: 1 answered, 0 to be said, -1 with an exception set */
    int (*info_fn)(void *ctx, Py_ssize_t k, PyObject *info);
} OnDoneC;

typedef struct {
    const OnDoneC *c;       /* the C hook, or NULL */
    PyObject *callable;     /* else a Python callable, or NULL: no hook */
} OnDone;

static int get_on_done(PyObject *obj, OnDone *d)
{
    d->c = NULL;
    d->callable = NULL;
    if (obj == Py_None)
        return 0;
    if (PyCapsule_CheckExact(obj)) {
        d->c = PyCapsule_GetPointer(obj, ON_DONE_CAPSULE);
        return d->c == NULL ? -1 : 0;
    }
    if (!PyCallable_Check(obj)) {
        PyErr_SetString(PyExc_TypeError, "step_quiet: on_done must be None, a callable or an on_done capsule");
        return -1;
    }
    d->callable = obj;
    return 0;
}

/* Env k is done (its rows are written): tell the hook. */
static int done(const OnDone *d, Py_ssize_t k)
{
    if (d->c != NULL)
        return d->c->fn(d->c->ctx, k);
    if (d->callable == NULL)
        return 0;
    PyObject *index = PyLong_FromSsize_t(k);
    if (index == NULL)
        return -1;
    PyObject *ok = PyObject_CallOneArg(d->callable, index);
    Py_DECREF(index);
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
    if (r->pending.obj) PyBuffer_Release(&r->pending);
}

static int get_rows(PyObject *spec, Rows *r)
{
    PyObject *obs, *rewards, *dones, *terminal_obs, *truncated, *running, *pending = Py_None;
    const int flags = PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS | PyBUF_FORMAT;
    memset(r, 0, sizeof(*r));
    if (!PyArg_ParseTuple(spec, "O!OOOOOO!OnO!O!|O:rows", &PyList_Type, &r->envs, &obs, &rewards, &dones,
                          &terminal_obs, &truncated, &PyList_Type, &r->reset_infos, &running, &r->first_index,
                          &PyTuple_Type, &r->reward_types, &PyType_Type, &r->ndarray, &pending))
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
    if (pending != Py_None && PyObject_GetBuffer(pending, &r->pending, flags) < 0)
        goto fail;
    const Py_ssize_t n = PyList_GET_SIZE(r->envs);
    if (r->pending.obj && (strcmp(r->pending.format, "?") != 0 || r->pending.len != n)) {
        PyErr_SetString(PyExc_ValueError, "rows: the pending flags must be a bool per env");
        goto fail;
    }
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
        return 0; /* no float32 holds it: Python refuses it */
    if (!PyFloat_Check(reward) && !PyLong_Check(reward) && fabs(value) > 16777216.0)
        return 0; /* a NumPy int past 2**24: through a double it could round twice, NumPy rounds once */
    ((float *)r->rewards.buf)[k] = (float)value;
    return 1;
}

/* What settling a result did. */
enum { FAILED = -1, TO_PYTHON = 0, STORED = 1 };

/* Store env k's step result if it is of the usual kind: STORED (`*info`: the caller's copy
 * of its info, made before any reset could change the env's dict), TO_PYTHON (nothing
 * written that step_env would not write the same) or FAILED (an exception is set: reset()
 * raised, or no memory). After an episode's end, `*reset_result` is what reset() returned. */
static int settle_step(Rows *r, PyObject *result, Py_ssize_t k, PyObject **reset_result, PyObject **info_copy)
{
    if (!PyTuple_CheckExact(result) || PyTuple_GET_SIZE(result) != 5)
        return TO_PYTHON;
    PyObject *info = PyTuple_GET_ITEM(result, 4), *terminated = PyTuple_GET_ITEM(result, 2),
             *truncated = PyTuple_GET_ITEM(result, 3);
    if (!PyBool_Check(terminated) || !PyBool_Check(truncated) || !PyDict_CheckExact(info))
        return TO_PYTHON;
    const int ended = terminated == Py_True || truncated == Py_True;
    if ((ended && r->terminal_obs.obj == NULL) || !store_obs(r, PyTuple_GET_ITEM(result, 0), k)
        || !store_reward(r, PyTuple_GET_ITEM(result, 1), k))
        return TO_PYTHON;
    ((char *)r->dones.buf)[k] = (char)ended;
    *info_copy = PyDict_GET_SIZE(info) ? PyDict_Copy(info) : PyDict_New();
    if (*info_copy == NULL)
        return FAILED;
    if (ended && r->pending.obj) { /* deferred: the last observation stays, the reset waits */
        ((char *)r->truncated.buf)[k] = truncated == Py_True && terminated == Py_False;
        ((char *)r->pending.buf)[k] = 1;
    } else if (ended) {
        memcpy((char *)r->terminal_obs.buf + k * r->row_bytes, (char *)r->obs.buf + k * r->row_bytes,
               (size_t)r->row_bytes);
        ((char *)r->truncated.buf)[k] = truncated == Py_True && terminated == Py_False;
        if (k >= PyList_GET_SIZE(r->envs)) {
            PyErr_Format(PyExc_IndexError, "step_quiet: env %zd is gone from the slice's list", k);
            return FAILED;
        }
        PyObject *env = PyList_GET_ITEM(r->envs, k);
        Py_INCREF(env); /* held while its reset() runs, whatever it does to the list */
        PyObject *args[3] = {env, Py_None, Py_None};
        *reset_result = PyObject_VectorcallMethod(RESET_NAME, args, 1, RESET_KWNAMES);
        Py_DECREF(env);
        if (*reset_result == NULL)
            return FAILED;
    }
    return STORED;
}

/* Store env k's reset result (after an episode's end) if it is of the usual kind. */
static int settle_reset(Rows *r, PyObject *result, Py_ssize_t k)
{
    if (!PyTuple_CheckExact(result) || PyTuple_GET_SIZE(result) != 2 || !PyDict_CheckExact(PyTuple_GET_ITEM(result, 1))
        || !store_obs(r, PyTuple_GET_ITEM(result, 0), k))
        return TO_PYTHON;
    if (k >= PyList_GET_SIZE(r->reset_infos)) {
        PyErr_Format(PyExc_IndexError, "step_quiet: env %zd has no reset info (the list was shortened)", k);
        return FAILED;
    }
    PyObject *info = PyDict_Copy(PyTuple_GET_ITEM(result, 1));
    if (info == NULL || PyList_SetItem(r->reset_infos, k, info) < 0) /* steals info, even on failure */
        return FAILED;
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
"step_quiet(rows, actions, offset, start, stop, infos, on_done=None, said=None)\n"
"    -> (k, result, error, resetting, step_info)\n\n"
"Step envs start..stop-1 of rows' slice, env k with actions[k - offset], storing each\n"
"usual result (and an episode end's reset) into the rows and appending a copy of its info\n"
"to infos. With on_done (a callable, or a capsule named vec_envs.on_done) and said (a\n"
"list): each env with nothing to say is reported done at once, each other one's k is\n"
"appended to said. Returns (stop, None, None, False, None) when all were usual; else the\n"
"first env k whose step (resetting False) or reset after an episode's end (resetting\n"
"True, step_info: a copy of its step's info) returned something else (result, unstored)\n"
"or raised an Exception (error), its running slot still set.");

/* The loop's answer for env k: what Python settles. Steals `result` and `step_info`;
 * takes the raised exception when `result` is NULL (NULL back where it is no Exception). */
static PyObject *to_python(Py_ssize_t k, PyObject *result, int resetting, PyObject *step_info)
{
    if (step_info == NULL) {
        step_info = Py_None;
        Py_INCREF(step_info);
    }
    if (result != NULL)
        return Py_BuildValue("(nNOON)", k, result, Py_None, resetting ? Py_True : Py_False, step_info);
    PyObject *error = take_exception();
    if (error == NULL) {
        Py_DECREF(step_info);
        return NULL;
    }
    return Py_BuildValue("(nONON)", k, Py_None, error, resetting ? Py_True : Py_False, step_info);
}

/* Env k's reset after an episode end the loop stored: 0 stored, else -1 with *out set
 * (Python settles the reset result) or an exception. Steals `reset_result`; `info` (the
 * step's info copy) goes with *out. */
static int finish_reset(Rows *r, Py_ssize_t k, PyObject *reset_result, PyObject *info, PyObject **out)
{
    const int reset = settle_reset(r, reset_result, k);
    if (reset == TO_PYTHON) {
        Py_INCREF(info);
        *out = to_python(k, reset_result, 1, info);
        return -1;
    }
    Py_DECREF(reset_result);
    return reset == STORED ? 0 : -1;
}

/* Env k's step result, the env held while it runs; NULL with an exception (its own, or
 * an IndexError when env code emptied the list). */
static PyObject *call_step(Rows *r, PyObject *actions, Py_ssize_t offset, Py_ssize_t k)
{
    if (k >= PyList_GET_SIZE(r->envs))
        return PyErr_Format(PyExc_IndexError, "step_quiet: env %zd is gone from the slice's list", k);
    PyObject *action = PySequence_GetItem(actions, k - offset);
    if (action == NULL)
        return NULL;
    PyObject *env = PyList_GET_ITEM(r->envs, k);
    Py_INCREF(env);
    if (r->running)
        *r->running = r->first_index + k + 1;
    PyObject *call[2] = {env, action};
    PyObject *result = PyObject_VectorcallMethod(STEP_NAME, call, 2, NULL);
    Py_DECREF(env);
    Py_DECREF(action);
    return result;
}

/* What env k, just stored, has to say: 2 its reset's info after an end, 1 its info, 0 nothing. */
static int has_said(Rows *r, Py_ssize_t k, PyObject *info)
{
    if (((char *)r->dones.buf)[k] && !r->pending.obj && k < PyList_GET_SIZE(r->reset_infos)) {
        PyObject *reset_info = PyList_GET_ITEM(r->reset_infos, k);
        if (!PyDict_CheckExact(reset_info) || PyDict_GET_SIZE(reset_info) != 0)
            return 2;
    }
    return PyDict_GET_SIZE(info) != 0;
}

/* Env k is stored with `info` (stolen): append it to `infos`, clear the running slot, then
 * report it done (with its info alone to say, through the C hook's info_fn where it takes
 * it), or keep it in `said`. 0, or -1 on error. */
static int stored(Rows *r, const OnDone *d, Py_ssize_t k, PyObject *infos, PyObject *info)
{
    const int appended = PyList_Append(infos, info) == 0;
    const int talked = appended && r->said != NULL ? has_said(r, k, info) : 0;
    if (appended && r->running)
        *r->running = 0;
    const int answered = talked == 1 && d->c != NULL && d->c->info_fn ? d->c->info_fn(d->c->ctx, k, info) : 0;
    Py_DECREF(info);
    if (!appended || answered)
        return appended && answered > 0 ? 0 : -1;
    if (!talked)
        return done(d, k);
    PyObject *index = PyLong_FromSsize_t(k);
    const int kept = index != NULL && PyList_Append(r->said, index) == 0;
    Py_XDECREF(index);
    return kept ? 0 : -1;
}

/* Env k's episode ended at its last step: reset it in place of a step. 0 when stored, else
 * -1 with *out set (Python settles the reset's result or exception) or an exception. */
static int reset_pending(Rows *r, const OnDone *d, Py_ssize_t k, PyObject *infos, PyObject **out)
{
    if (k >= PyList_GET_SIZE(r->envs)) {
        PyErr_Format(PyExc_IndexError, "step_quiet: env %zd is gone from the slice's list", k);
        return -1;
    }
    PyObject *env = PyList_GET_ITEM(r->envs, k);
    Py_INCREF(env); /* held while its reset() runs, whatever it does to the list */
    if (r->running)
        *r->running = r->first_index + k + 1;
    PyObject *args[3] = {env, Py_None, Py_None};
    PyObject *result = PyObject_VectorcallMethod(RESET_NAME, args, 1, RESET_KWNAMES);
    Py_DECREF(env);
    const int reset = result == NULL ? FAILED : settle_reset(r, result, k);
    if (reset != STORED) {
        if (result == NULL || reset == TO_PYTHON) {
            *out = to_python(k, result, 1, NULL);
            return -1;
        }
        Py_DECREF(result);
        return -1;
    }
    Py_DECREF(result);
    ((float *)r->rewards.buf)[k] = 0.0f;
    ((char *)r->dones.buf)[k] = 0;
    ((char *)r->pending.buf)[k] = 0;
    PyObject *info = PyDict_Copy(PyList_GET_ITEM(r->reset_infos, k)); /* settle_reset set it */
    if (info == NULL)
        return -1;
    return stored(r, d, k, infos, info);
}

/* Step env k: 0 when stored, else -1 with *out set (Python takes over) or an exception. */
static int step_one(Rows *r, const OnDone *d, PyObject *actions, Py_ssize_t offset, Py_ssize_t k, PyObject *infos,
                    PyObject **out)
{
    if (r->pending.obj && ((char *)r->pending.buf)[k])
        return reset_pending(r, d, k, infos, out);
    PyObject *reset_result = NULL, *info = NULL, *result = call_step(r, actions, offset, k);
    const int step = result == NULL ? FAILED : settle_step(r, result, k, &reset_result, &info);
    if (step == TO_PYTHON) {
        *out = to_python(k, result, 0, NULL);
        return -1;
    }
    const int stepped = result != NULL;  /* else step() raised; FAILED with a result: reset() raised */
    Py_XDECREF(result);
    if (step == FAILED) {  /* the step's info goes with the reset's exception */
        *out = to_python(k, NULL, stepped, info);
        return -1;
    }
    if (reset_result != NULL && finish_reset(r, k, reset_result, info, out) < 0) {
        Py_DECREF(info);
        return -1;
    }
    return stored(r, d, k, infos, info);
}

static PyObject *step_quiet(PyObject *self, PyObject *args)
{
    PyObject *spec, *actions, *infos, *on_done = Py_None, *said = Py_None, *out = NULL;
    Py_ssize_t offset, start, stop;
    Rows r;
    OnDone d;
    (void)self;
    if (!PyArg_ParseTuple(args, "O!OnnnO!|OO:step_quiet", &PyTuple_Type, &spec, &actions, &offset, &start, &stop,
                          &PyList_Type, &infos, &on_done, &said) || get_on_done(on_done, &d) < 0)
        return NULL;
    if ((on_done == Py_None) != (said == Py_None) || (said != Py_None && !PyList_Check(said))) {
        PyErr_SetString(PyExc_TypeError, "step_quiet: on_done and said (a list) go together");
        return NULL;
    }
    if (get_rows(spec, &r) < 0)
        return NULL;
    if (start < 0 || stop > PyList_GET_SIZE(r.envs) || start > stop) {
        release_rows(&r);
        return PyErr_Format(PyExc_IndexError, "step_quiet: envs %zd..%zd of a slice of %zd", start, stop,
                            PyList_GET_SIZE(r.envs));
    }
    r.said = said == Py_None ? NULL : said;
    Py_INCREF(on_done); /* held: env code may drop every other reference to them */
    Py_INCREF(said);
    Py_ssize_t k = start;
    while (k < stop && step_one(&r, &d, actions, offset, k, infos, &out) == 0)
        k++;
    if (k == stop)
        out = Py_BuildValue("(nOOOO)", stop, Py_None, Py_None, Py_False, Py_None);
    Py_DECREF(said);
    Py_DECREF(on_done);
    release_rows(&r);
    return out;
}

/* ---------------------------------------------------------------- ended_infos */
PyDoc_STRVAR(ended_infos_doc,
"ended_infos(n, ended, ids, rows, truncated, reset_infos) -> list\n\n"
"The n infos of a batch where no env had anything to say: empty dicts, but at each place\n"
"ended[j] {\"terminal_observation\": rows[j], \"TimeLimit.truncated\": truncated[j]}, and\n"
"reset_infos[ids[j]] = {} (the env was reset with nothing to say). Deferred resets (next-step,\n"
"disabled): rows and reset_infos None, the infos {\"TimeLimit.truncated\": truncated[j]}.");

static PyObject *terminal_key, *truncated_key;  /* interned at import */

/* A C-contiguous 1-D buffer of int64 ('q') or bool ('?') items. */
static int get_vector(PyObject *obj, Py_buffer *view, char kind, const char *name)
{
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return -1;
    int ok = view->ndim == 1 && view->format != NULL;
    if (ok && kind == 'q')
        ok = view->itemsize == 8 && (!strcmp(view->format, "q") || !strcmp(view->format, "l"));
    else if (ok)
        ok = view->itemsize == 1 && !strcmp(view->format, "?");
    if (!ok) {
        PyBuffer_Release(view);
        PyErr_Format(PyExc_ValueError, "ended_infos: %s must be a 1-D %s array", name, kind == 'q' ? "int64" : "bool");
        return -1;
    }
    return 0;
}

/* {"terminal_observation": row (none when row is NULL), "TimeLimit.truncated": truncated}, or NULL. */
static PyObject *terminal_info(PyObject *row, int truncated)
{
    PyObject *info = PyDict_New();
    if (info != NULL && ((row != NULL && PyDict_SetItem(info, terminal_key, row) < 0)
                         || PyDict_SetItem(info, truncated_key, truncated ? Py_True : Py_False) < 0))
        Py_CLEAR(info);
    return info;
}

/* The ended envs' infos into `infos` (at their places) and empty reset infos (rows and
 * reset_infos None: deferred resets, TimeLimit.truncated only); -1 on error. */
static int fill_ended(PyObject *infos, const Py_buffer *v, PyObject *rows, PyObject *reset_infos)
{
    const int64_t *ended = v[0].buf, *ids = v[1].buf;
    const char *truncated = v[2].buf;
    const Py_ssize_t n = PyList_GET_SIZE(infos);
    const Py_ssize_t envs = reset_infos == Py_None ? PY_SSIZE_T_MAX : PyList_GET_SIZE(reset_infos);
    for (Py_ssize_t j = 0; j < v[0].shape[0]; j++) {
        if (ended[j] < 0 || ended[j] >= n || ids[j] < 0 || ids[j] >= envs) {
            PyErr_Format(PyExc_IndexError, "ended_infos: place %lld of %zd, env %lld of %zd",
                         (long long)ended[j], n, (long long)ids[j], envs);
            return -1;
        }
        PyObject *row = rows == Py_None ? NULL : PySequence_GetItem(rows, j);
        if (row == NULL && rows != Py_None)
            return -1;
        PyObject *info = terminal_info(row, truncated[j]);
        Py_XDECREF(row);
        if (info == NULL)
            return -1;
        if (PyList_SetItem(infos, ended[j], info) < 0) /* steals info, drops the empty dict there */
            return -1;
        if (reset_infos == Py_None)
            continue;
        PyObject *reset_info = PyDict_New();
        if (reset_info == NULL || PyList_SetItem(reset_infos, ids[j], reset_info) < 0)
            return -1;
    }
    return 0;
}

static PyObject *ended_infos(PyObject *self, PyObject *args)
{
    Py_ssize_t n;
    PyObject *ended, *ids, *rows, *truncated, *reset_infos;
    Py_buffer v[3];
    (void)self;
    if (!PyArg_ParseTuple(args, "nOOOOO:ended_infos", &n, &ended, &ids, &rows, &truncated, &reset_infos))
        return NULL;
    if (reset_infos != Py_None && !PyList_Check(reset_infos))
        return PyErr_Format(PyExc_TypeError, "ended_infos: reset_infos must be a list or None");
    if (n < 0)
        return PyErr_Format(PyExc_ValueError, "ended_infos: n must be >= 0, received %zd", n);
    if (get_vector(ended, &v[0], 'q', "ended") < 0)
        return NULL;
    if (get_vector(ids, &v[1], 'q', "ids") < 0) {
        PyBuffer_Release(&v[0]);
        return NULL;
    }
    if (get_vector(truncated, &v[2], '?', "truncated") < 0) {
        PyBuffer_Release(&v[0]);
        PyBuffer_Release(&v[1]);
        return NULL;
    }
    PyObject *infos = NULL;
    if (v[1].shape[0] != v[0].shape[0] || v[2].shape[0] != v[0].shape[0])
        PyErr_Format(PyExc_ValueError, "ended_infos: %zd places, %zd ids, %zd truncated flags", v[0].shape[0],
                     v[1].shape[0], v[2].shape[0]);
    else
        infos = PyList_New(n);
    for (Py_ssize_t i = 0; infos != NULL && i < n; i++) {
        PyObject *info = PyDict_New();
        if (info == NULL)
            Py_CLEAR(infos);
        else
            PyList_SET_ITEM(infos, i, info);
    }
    if (infos != NULL && fill_ended(infos, v, rows, reset_infos) < 0)
        Py_CLEAR(infos);
    for (int j = 0; j < 3; j++)
        PyBuffer_Release(&v[j]);
    return infos;
}

static PyMethodDef methods[] = {
    {"step_quiet", step_quiet, METH_VARARGS, step_quiet_doc},
    {"ended_infos", ended_infos, METH_VARARGS, ended_infos_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_step_kernel", "EnvSlice's step loop for the envs with nothing to say, and their infos.", -1, methods,
};

PyMODINIT_FUNC PyInit__step_kernel(void)
{
    STEP_NAME = PyUnicode_InternFromString("step");
    RESET_NAME = PyUnicode_InternFromString("reset");
    RESET_KWNAMES = Py_BuildValue("(ss)", "seed", "options");
    terminal_key = PyUnicode_InternFromString("terminal_observation");
    truncated_key = PyUnicode_InternFromString("TimeLimit.truncated");
    if (STEP_NAME == NULL || RESET_NAME == NULL || RESET_KWNAMES == NULL || terminal_key == NULL
        || truncated_key == NULL)
        return NULL;
    return PyModule_Create(&module);
}
