/* One-pose calls of the compiled engine (private): the walk of physai/_numba_kin.py, in C.
 *
 * A single pose is so little arithmetic (about 0.3 us for seven joints) that the cost of the call decides
 * its speed: numba's calling convention (unboxing each array, a caller-allocated output) costs about
 * 0.6 us before the first multiplication. This module is called with METH_FASTCALL, checks its input
 * itself and allocates its outputs in C.
 *
 * The arithmetic is numba's walk term for term, in the same order (floating-point contraction off), so
 * the two engines agree bit for bit; tests/test_engine.py checks that, and tests/test_kinematics.py pins
 * both to the readable NumPy code.
 *
 * Each function takes (q, P): q a float64 vector, P a chain's packed constants (physai.chain documents
 * the layout). It returns None, having written nothing, when q is anything but an exact, aligned,
 * native-order float64 vector of the chain's length with finite entries, or P anything but an aligned,
 * C-contiguous, native float64 (n + 1, 17) array with 1 <= n <= MAX_JOINTS whose last row records -n:
 * the caller's readable validation then converts q or names what is wrong (a chain's constants cut
 * short or padded after construction, say). Joint counts and offsets are npy_intp throughout, so no
 * count can wrap around.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>
#include <math.h>
#include <string.h>

#define ROW 17 /* packed row: rotation 0-8 (row-major), translation 9-11, axis 12-14, q_ref 15, hinge 16 */
#define MAX_JOINTS ((npy_intp)1 << 16) /* physai.chain.MAX_JOINTS: no chain has more */
/* walk inlined into its one caller, as compilers otherwise choose by size: a call costs ~10 % of a one-pose answer */
#if defined(_MSC_VER)
#define INLINED static __forceinline
#else
#define INLINED static inline __attribute__((always_inline))
#endif

/* out = a @ b for row-major 3x3 matrices (out must not alias a or b) */
static void mul(const double *a, const double *b, double *out)
{
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++)
            out[3 * r + c] = a[3 * r] * b[c] + a[3 * r + 1] * b[3 + c] + a[3 * r + 2] * b[6 + c];
}

/* out = a @ v */
static void apply(const double *a, const double *v, double *out)
{
    for (int r = 0; r < 3; r++)
        out[r] = a[3 * r] * v[0] + a[3 * r + 1] * v[1] + a[3 * r + 2] * v[2];
}

/* (R, p) <- (R, p) @ (m_R, m_t) for a packed row m */
static void place(double *R, double *p, const double *m)
{
    double t[3], Rm[9];
    apply(R, m + 9, t);
    mul(R, m, Rm);
    memcpy(R, Rm, sizeof Rm);
    for (int k = 0; k < 3; k++)
        p[k] = p[k] + t[k];
}

/* sin and cos as numba's sin_cos: fdlibm's kernels after a three-part reduction by pi/2, the C library's beyond
 * REDUCED_MAX; the same terms in the same order */
#define REDUCED_MAX 823549.6654828654
static const double INVPIO2 = 6.36619772367581382433e-01;
static const double PIO2[5] = {1.57079632673412561417e+00, 6.07710050630396597660e-11,
                               2.02226624879595063154e-21, 2.02226624871116645580e-21, 8.47842766036889956997e-32};
static const double S[6] = {-1.66666666666666324348e-01, 8.33333333332248946124e-03, -1.98412698298579493134e-04,
                            2.75573137070700676789e-06, -2.50507602534068634195e-08, 1.58969099521155010221e-10};
static const double C[6] = {4.16666666666666019037e-02, -1.38888888888741095749e-03, 2.48015872894767294178e-05,
                            -2.75573143513906633035e-07, 2.08757232129817482790e-09, -1.13596475577881948265e-11};

static void sin_cos(double x, double *s_out, double *c_out)
{
    if (fabs(x) > REDUCED_MAX) {
        *s_out = sin(x);
        *c_out = cos(x);
        return;
    }
    double fn = floor(x * INVPIO2 + 0.5);
    double r = x - fn * PIO2[0];
    double w = fn * PIO2[1];
    double t = r;
    r = r - w;
    w = fn * PIO2[2] - ((t - r) - w);
    t = r;
    w = fn * PIO2[3];
    r = t - w;
    w = fn * PIO2[4] - ((t - r) - w);
    double y0 = r - w;
    double y1 = (r - y0) - w;
    double z = y0 * y0, zz = z * z, v = z * y0;
    double rs = S[1] + z * (S[2] + z * S[3]) + z * zz * (S[4] + z * S[5]);
    double s = y0 - ((z * (0.5 * y1 - v * rs) - y1) - v * S[0]);
    double rc = z * (C[0] + z * (C[1] + z * C[2])) + zz * zz * (C[3] + z * (C[4] + z * C[5]));
    double hz = 0.5 * z;
    w = 1.0 - hz;
    double c = w + (((1.0 - w) - hz) + (z * rc - y0 * y1));
    double quadrant = fn - 4.0 * floor(fn * 0.25);
    if (quadrant == 1.0 || quadrant == 3.0) {
        double swap = s;
        s = c;
        c = swap;
    }
    *s_out = quadrant >= 2.0 ? -s : s;
    *c_out = (quadrant == 1.0 || quadrant == 2.0) ? -c : c;
}

/* I + s K + k K^2 about the unit axis u (numba's rodrigues) */
static void rodrigues(const double *u, double d, double *out)
{
    double s, c;
    sin_cos(d, &s, &c);
    double k = 1.0 - c, ux = u[0], uy = u[1], uz = u[2];
    out[0] = 1.0 + k * (ux * ux - 1.0);  out[1] = -s * uz + k * ux * uy;   out[2] = s * uy + k * ux * uz;
    out[3] = s * uz + k * ux * uy;       out[4] = 1.0 + k * (uy * uy - 1.0); out[5] = -s * ux + k * uy * uz;
    out[6] = -s * uy + k * ux * uz;      out[7] = s * ux + k * uy * uz;     out[8] = 1.0 + k * (uz * uz - 1.0);
}

/* Walk the chain for q (n entries, `step` doubles apart): the tool pose into T (4x4), and, where not NULL,
 * the Jacobian into J (6 x n, row-major) and each joint's world axis and anchor into F (n x 6). */
INLINED void walk(const double *q, npy_intp step, npy_intp n, const double *P, double *T, double *J, double *F)
{
    double R[9] = {1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0}, p[3] = {0.0, 0.0, 0.0}, a[3], Rr[9], Rn[9];
    for (npy_intp i = 0; i < n; i++) {
        const double *m = P + ROW * i;
        double d = q[i * step] - m[15];
        int hinge = m[16] != 0.0;
        place(R, p, m);
        apply(R, m + 12, a); /* a joint's motion leaves its own axis fixed: R @ u before or after it */
        if (hinge) {
            rodrigues(m + 12, d, Rr);
            mul(R, Rr, Rn);
            memcpy(R, Rn, sizeof Rn);
        } else {
            for (int k = 0; k < 3; k++)
                p[k] = p[k] + d * a[k];
        }
        if (F) {
            memcpy(F + 6 * i, a, sizeof a);
            memcpy(F + 6 * i + 3, p, sizeof p);
        }
        if (J) { /* a hinge parks its anchor in the linear rows; the pass below turns it into a x (p_tool - anchor) */
            for (int k = 0; k < 3; k++) {
                J[k * n + i] = hinge ? p[k] : a[k];
                J[(k + 3) * n + i] = hinge ? a[k] : 0.0;
            }
        }
    }
    place(R, p, P + ROW * n);
    for (npy_intp i = 0; J && i < n; i++) {
        if (P[ROW * i + 16] != 0.0) {
            double ax = J[3 * n + i], ay = J[4 * n + i], az = J[5 * n + i];
            double dx = p[0] - J[i], dy = p[1] - J[n + i], dz = p[2] - J[2 * n + i];
            J[i] = ay * dz - az * dy;
            J[n + i] = az * dx - ax * dz;
            J[2 * n + i] = ax * dy - ay * dx;
        }
    }
    for (int r = 0; r < 3; r++) {
        memcpy(T + 4 * r, R + 3 * r, 3 * sizeof(double));
        T[4 * r + 3] = p[r];
    }
    T[12] = T[13] = T[14] = 0.0;
    T[15] = 1.0;
}

static PyArrayObject *new_matrix(npy_intp rows, npy_intp cols)
{
    npy_intp dims[2] = {rows, cols};
    return (PyArrayObject *)PyArray_SimpleNew(2, dims, NPY_DOUBLE);
}

/* The shared body: check (q, P), allocate the wanted outputs, walk. */
static PyObject *run(PyObject *const *args, Py_ssize_t nargs, int want_t, int want_j, int want_f)
{
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "expected (q, P), got %zd arguments", nargs);
        return NULL;
    }
    PyArrayObject *P = (PyArrayObject *)args[1];
    if (!PyArray_Check(args[1]) || PyArray_NDIM(P) != 2 || PyArray_DIM(P, 1) != ROW || PyArray_DIM(P, 0) < 2
        || PyArray_DIM(P, 0) > MAX_JOINTS + 1 || PyArray_TYPE(P) != NPY_DOUBLE || !PyArray_IS_C_CONTIGUOUS(P)
        || !PyArray_ISBEHAVED_RO(P))
        Py_RETURN_NONE;
    npy_intp n = PyArray_DIM(P, 0) - 1;
    if (((const double *)PyArray_DATA(P))[ROW * n + 16] != -(double)n) /* the count the chain packed */
        Py_RETURN_NONE;
    PyArrayObject *qa = (PyArrayObject *)args[0];
    if (!PyArray_CheckExact(args[0]) || PyArray_NDIM(qa) != 1 || PyArray_TYPE(qa) != NPY_DOUBLE
        || !PyArray_ISBEHAVED_RO(qa) || PyArray_DIM(qa, 0) != n || PyArray_STRIDE(qa, 0) % (npy_intp)sizeof(double) != 0)
        Py_RETURN_NONE;
    const double *q = (const double *)PyArray_DATA(qa);
    npy_intp step = PyArray_STRIDE(qa, 0) / (npy_intp)sizeof(double);
    for (npy_intp i = 0; i < n; i++)
        if (!isfinite(q[i * step]))
            Py_RETURN_NONE;

    PyArrayObject *T = new_matrix(4, 4);
    PyArrayObject *J = want_j ? new_matrix(6, n) : NULL;
    PyArrayObject *F = want_f ? new_matrix(n, 6) : NULL;
    if (!T || (want_j && !J) || (want_f && !F)) {
        Py_XDECREF(T); Py_XDECREF(J); Py_XDECREF(F);
        return NULL;
    }
    walk(q, step, n, (const double *)PyArray_DATA(P), (double *)PyArray_DATA(T),
         J ? (double *)PyArray_DATA(J) : NULL, F ? (double *)PyArray_DATA(F) : NULL);
    if (!want_j && !want_f)
        return (PyObject *)T;
    if (!want_t) {
        Py_DECREF(T);
        return (PyObject *)J;
    }
    PyObject *pair = PyTuple_New(2), *second = J ? (PyObject *)J : (PyObject *)F;
    if (!pair) {
        Py_DECREF(T); Py_DECREF(second);
        return NULL;
    }
    PyTuple_SET_ITEM(pair, 0, (PyObject *)T); /* steals the references */
    PyTuple_SET_ITEM(pair, 1, second);
    return pair;
}

static PyObject *pose(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    return run(args, nargs, 1, 0, 0);
}

static PyObject *jacobian(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    return run(args, nargs, 0, 1, 0);
}

static PyObject *pose_jacobian(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    return run(args, nargs, 1, 1, 0);
}

static PyObject *frames(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    return run(args, nargs, 1, 0, 1);
}

static PyMethodDef methods[] = {
    {"pose", (PyCFunction)(void (*)(void))pose, METH_FASTCALL, "pose(q, P) -> T (4, 4), or None"},
    {"jacobian", (PyCFunction)(void (*)(void))jacobian, METH_FASTCALL, "jacobian(q, P) -> J (6, n), or None"},
    {"pose_jacobian", (PyCFunction)(void (*)(void))pose_jacobian, METH_FASTCALL,
     "pose_jacobian(q, P) -> (T (4, 4), J (6, n)), or None"},
    {"frames", (PyCFunction)(void (*)(void))frames, METH_FASTCALL,
     "frames(q, P) -> (T (4, 4), F (n, 6): world axis, anchor), or None"},
    {NULL, NULL, 0, NULL},
};

/* The module's name is chosen at build time (a hash of its sources): PHYSAI_WALK_NAME, PyInit_<name>. */
#define STR2(x) #x
#define STR(x) STR2(x)
#define INIT2(name) PyInit_##name
#define INIT(name) INIT2(name)

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, STR(PHYSAI_WALK_NAME), NULL, -1, methods};

PyMODINIT_FUNC INIT(PHYSAI_WALK_NAME)(void)
{
    import_array();
    return PyModule_Create(&module);
}
