/* _rms_kernel: RunningMeanStd's update (and normalization) of a uint8 batch in one pass.
 *
 * The NumPy path of wrappers/running_mean_std.py does the same work as ~25 array
 * operations, each a pass over the batch or over the statistics; over stacked Atari
 * frames (8 x 84 x 84 x 4) that is most of what VecNormalize costs per step. Here the
 * columns are taken a block at a time, so the sums, the merge and the normalization of
 * a block happen while it is in L1. The arithmetic is the NumPy path's, operation for
 * operation (no FMA contraction: -ffp-contract=off), so both give the same bits.
 *
 * Built by setup.py when a C compiler is there (optional); without it the NumPy path runs.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>

#define BLOCK 512

/* The kernel is compiled for AVX-512, AVX2 and any x86-64, and the loader picks the best
 * the CPU has; merge_block is forced inline so that each copy gets its own vectorized merge
 * (called across copies, it is not vectorized). */
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 11 && defined(__x86_64__) && defined(__linux__)
#define VECTOR_CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#elif defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define VECTOR_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define VECTOR_CLONES
#endif
#if defined(__GNUC__)
#define ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define ALWAYS_INLINE inline
#endif

/* Merge the sums of one block of columns into mean / var; leave the float32 mean and
 * 1/sqrt(var + eps) that normalization uses. */
static ALWAYS_INLINE void merge_block(const uint32_t *s, const uint32_t *q, Py_ssize_t w, double n,
                                      double count, double *mean, double *var, double eps, float *m32, float *k32)
{
    const double total = count + n, inv_total = 1.0 / total, minus_inv_n = -1.0 / n;
    const double d2_weight = count / (n * total);
    for (Py_ssize_t j = 0; j < w; j++) {
        const double sj = (double)s[j];
        const double d = mean[j] * -n + sj;                    /* D = sum - n * mean */
        const double nvar = sj * sj * minus_inv_n + (double)q[j]; /* n * batch variance */
        const double v = ((var[j] * count + nvar) + d * d * d2_weight) * inv_total;
        const double m = mean[j] + d * inv_total;
        var[j] = v;
        mean[j] = m;
        m32[j] = (float)m;
        k32[j] = 1.0f / sqrtf((float)(v + eps));
    }
}

VECTOR_CLONES
static void update_normalize(const uint8_t *x, Py_ssize_t n, Py_ssize_t cols, double *mean, double *var,
                             double count, float *out, double eps, float clip)
{
    uint32_t s[BLOCK], q[BLOCK];
    float m32[BLOCK], k32[BLOCK];
    for (Py_ssize_t j0 = 0; j0 < cols; j0 += BLOCK) {
        const Py_ssize_t w = cols - j0 < BLOCK ? cols - j0 : BLOCK;
        for (Py_ssize_t j = 0; j < w; j++)
            s[j] = q[j] = 0;
        for (Py_ssize_t i = 0; i < n; i++) {
            const uint8_t *row = x + i * cols + j0;
            for (Py_ssize_t j = 0; j < w; j++) {
                const uint32_t v = row[j];
                s[j] += v;
                q[j] += v * v;
            }
        }
        merge_block(s, q, w, (double)n, count, mean + j0, var + j0, eps, m32, k32);
        if (out == NULL)
            continue;
        for (Py_ssize_t i = 0; i < n; i++) {
            const uint8_t *row = x + i * cols + j0;
            float *o = out + i * cols + j0;
            for (Py_ssize_t j = 0; j < w; j++) {
                const float y = ((float)row[j] - m32[j]) * k32[j];
                o[j] = y > clip ? clip : (y < -clip ? -clip : y);
            }
        }
    }
}

/* A C-contiguous buffer of ``items`` items of ``format``; a clear error otherwise. */
static int get_buffer(PyObject *obj, Py_buffer *view, const char *name, const char *format,
                      Py_ssize_t itemsize, Py_ssize_t items, int writable)
{
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, view, flags) < 0)
        return -1;
    const char *fmt = view->format[0] == '=' || view->format[0] == '<' ? view->format + 1 : view->format;
    if (strcmp(fmt, format) != 0 || view->itemsize != itemsize || view->len != items * itemsize) {
        PyErr_Format(PyExc_ValueError, "_rms_kernel: %s must be a C-contiguous array of %zd items "
                     "of format '%s', received format '%s' with %zd bytes", name, items, format,
                     view->format, view->len);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

PyDoc_STRVAR(update_normalize_doc,
"update_normalize_u8(batch, mean, var, count, out, epsilon, clip)\n--\n\n"
"Merge a uint8 batch (n rows of the columns of mean) into float64 mean / var, which\n"
"hold the statistics of count earlier samples, and, unless out is None, write\n"
"clip((batch - mean) / sqrt(var + epsilon), -clip, clip) into the float32 out.");

static PyObject *update_normalize_u8(PyObject *self, PyObject *args)
{
    PyObject *batch_obj, *mean_obj, *var_obj, *out_obj, *result = NULL;
    double count, eps, clip;
    Py_buffer batch = {0}, mean = {0}, var = {0}, out = {0};
    (void)self;
    if (!PyArg_ParseTuple(args, "OOOdOdd", &batch_obj, &mean_obj, &var_obj, &count, &out_obj, &eps, &clip))
        return NULL;
    if (PyObject_GetBuffer(batch_obj, &batch, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return NULL;
    const Py_ssize_t n = batch.ndim > 0 ? batch.shape[0] : 0;
    const Py_ssize_t cols = n > 0 ? batch.len / n : 0;
    if (strcmp(batch.format, "B") != 0 || n < 1 || n > 256) {
        PyErr_SetString(PyExc_ValueError, "_rms_kernel: batch must be a C-contiguous uint8 array of 1..256 rows");
        goto done;
    }
    if (get_buffer(mean_obj, &mean, "mean", "d", 8, cols, 1) < 0
            || get_buffer(var_obj, &var, "var", "d", 8, cols, 1) < 0
            || (out_obj != Py_None && get_buffer(out_obj, &out, "out", "f", 4, n * cols, 1) < 0))
        goto done;
    Py_BEGIN_ALLOW_THREADS
    update_normalize(batch.buf, n, cols, mean.buf, var.buf, count, out.buf, eps, (float)clip);
    Py_END_ALLOW_THREADS
    result = Py_NewRef(Py_None);
done:
    /* PyBuffer_Release ignores a view that was never filled (its obj is NULL) */
    PyBuffer_Release(&out);
    PyBuffer_Release(&var);
    PyBuffer_Release(&mean);
    PyBuffer_Release(&batch);
    return result;
}

static PyMethodDef methods[] = {
    {"update_normalize_u8", update_normalize_u8, METH_VARARGS, update_normalize_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_rms_kernel",
    "RunningMeanStd's one-pass update and normalization of uint8 batches (optional C kernel).",
    -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__rms_kernel(void)
{
    return PyModule_Create(&module);
}
