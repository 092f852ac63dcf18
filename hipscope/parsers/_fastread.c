/*
 * hipscope.parsers._fastread: a whole regular file into one new bytes object, its
 * pieces read by several threads at once (the GIL released), for the big JSON traces
 * the readers take in whole (hipscope/parsers/reading.py read_whole).
 *
 * A plain read() of a file in the page cache is one thread copying it at memory
 * speed and faulting in every page of the new object; on this project's 2-core
 * machines two threads take 0.11 s for a 573 MB Kineto file where read() takes 0.34 s.
 * The object is a real bytes object, made as CPython makes one (PyBytes_FromStringAndSize
 * with no data, filled before anyone else sees it), so every reader uses it as before.
 *
 * read(fd, size, threads): the bytes at offsets [0, size) of the open file ``fd``;
 * None when the file ended before ``size`` (it shrank: the caller reads it plainly);
 * OSError on a read error. Never reads past ``size`` (the caller checks growth).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
#include <pthread.h>
#include <unistd.h>

#define MAX_THREADS 8
#define STEP ((size_t)64 << 20) /* per pread call: no single call near the 2 GiB cap */

typedef struct {
    int fd;
    char *dst;
    off_t off;
    size_t len;
    int err;   /* errno of a failed read, else 0 */
    int short_; /* the file ended first */
} Piece;

static void *read_piece(void *arg) {
    Piece *p = (Piece *)arg;
    size_t done = 0;
    while (done < p->len) {
        size_t want = p->len - done < STEP ? p->len - done : STEP;
        ssize_t got = pread(p->fd, p->dst + done, want, p->off + (off_t)done);
        if (got < 0) {
            if (errno == EINTR)
                continue;
            p->err = errno;
            return NULL;
        }
        if (got == 0) {
            p->short_ = 1;
            return NULL;
        }
        done += (size_t)got;
    }
    return NULL;
}

static PyObject *fast_read(PyObject *self, PyObject *args) {
    int fd, threads;
    Py_ssize_t size;
    if (!PyArg_ParseTuple(args, "ini", &fd, &size, &threads))
        return NULL;
    if (size < 0) {
        PyErr_SetString(PyExc_ValueError, "size must be >= 0");
        return NULL;
    }
    if (threads < 1)
        threads = 1;
    if (threads > MAX_THREADS)
        threads = MAX_THREADS;
    PyObject *out = PyBytes_FromStringAndSize(NULL, size);
    if (out == NULL)
        return NULL;
    char *base = PyBytes_AS_STRING(out);
    Piece pieces[MAX_THREADS];
    pthread_t tids[MAX_THREADS];
    int started[MAX_THREADS] = {0};
    size_t total = (size_t)size, each = total / (size_t)threads;
    for (int i = 0; i < threads; i++) {
        size_t lo = each * (size_t)i, hi = i == threads - 1 ? total : each * (size_t)(i + 1);
        pieces[i] = (Piece){fd, base + lo, (off_t)lo, hi - lo, 0, 0};
    }
    Py_BEGIN_ALLOW_THREADS
    for (int i = 1; i < threads; i++)
        started[i] = pthread_create(&tids[i], NULL, read_piece, &pieces[i]) == 0;
    for (int i = 1; i < threads; i++)
        if (!started[i])
            read_piece(&pieces[i]); /* no thread: read that piece here */
    read_piece(&pieces[0]);
    for (int i = 1; i < threads; i++)
        if (started[i])
            pthread_join(tids[i], NULL);
    Py_END_ALLOW_THREADS
    for (int i = 0; i < threads; i++) {
        if (pieces[i].err) {
            Py_DECREF(out);
            errno = pieces[i].err;
            return PyErr_SetFromErrno(PyExc_OSError);
        }
    }
    for (int i = 0; i < threads; i++) {
        if (pieces[i].short_) {
            Py_DECREF(out);
            Py_RETURN_NONE;
        }
    }
    return out;
}

static PyMethodDef methods[] = {
    {"read", fast_read, METH_VARARGS,
     "read(fd, size, threads) -> bytes | None: the file's first size bytes, read in "
     "threads pieces at once; None when it ended first"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fastread",
                                    "A whole file read in parallel pieces.", -1, methods,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__fastread(void) { return PyModule_Create(&module); }
