/*
 * hipscope.parsers._csvscan: a one-pass reader of well-formed CSV rows into typed
 * column buffers, for the big files of a trace (rocprofv3 kernel_trace.csv with
 * millions of rows). Python (hipscope/parsers/_fastcsv.py) splits the file at
 * newlines, counts the rows of each piece, then calls parse() on the pieces from
 * several threads (the GIL is released while scanning) into slices of shared numpy arrays.
 *
 * It handles only the plain case and declines everything else, so that the general
 * pyarrow reader (which reports errors with their line, widens integers, ...) reads
 * those files instead:
 *   - fields are separated by ',' and rows by '\n', with no '\r' outside quotes; a
 *     field is either unquoted (no '"' in a text field) or wrapped in '"' with no
 *     newline inside ("" escapes a quote: the distinct values come back escaped and
 *     Python unescapes them);
 *   - integer columns: optional '-', digits (up to 19 after leading zeros), in range
 *     of the column's type;
 *     an unquoted empty field is null (written as the type's minimum, counted);
 *   - text columns: dictionary-encoded (codes in first-seen order, -1 = unquoted
 *     empty field = null); the distinct values come back as bytes (Python decodes
 *     them as UTF-8, and declines the fast path when that fails);
 *   - every row has exactly the header's number of fields; empty lines are skipped
 *     and counted (rows + empty lines < newlines: a newline was inside quotes).
 * A declined piece returns a str saying why and where (a byte offset).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { K_SKIP = 0, K_I16 = 1, K_I32 = 2, K_I64 = 3, K_DICT = 4 };

typedef struct {
    uint64_t hash;
    const char *ptr;
    Py_ssize_t len;
    int32_t code; /* -1: empty slot */
} Slot;

typedef struct {
    Slot *slots;
    size_t cap; /* power of two */
    size_t count;
    int32_t *order; /* code -> slot index */
    size_t order_cap;
    /* last hit: consecutive rows often repeat a value */
    const char *last_ptr;
    Py_ssize_t last_len;
    int32_t last_code;
} Dict;

/* Two independent lanes over alternate 8-byte words (half the dependency chain of
 * one lane on long kernel names), joined at the end. */
static uint64_t hash_bytes(const char *p, Py_ssize_t n)
{
    uint64_t h = 0x9E3779B97F4A7C15ull ^ (uint64_t)n, g = 0x2545F4914F6CDD1Dull;
    while (n >= 16) {
        uint64_t w, x;
        memcpy(&w, p, 8);
        memcpy(&x, p + 8, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        g = (g ^ x) * 0xc4ceb9fe1a85ec53ull;
        h ^= h >> 32;
        g ^= g >> 29;
        p += 16;
        n -= 16;
    }
    if (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
        p += 8;
        n -= 8;
    }
    uint64_t w = 0;
    memcpy(&w, p, (size_t)n);
    h = (h ^ w ^ (g * 0x9E3779B97F4A7C15ull)) * 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 29;
    return h;
}

static int dict_init(Dict *d)
{
    d->cap = 1024;
    d->count = 0;
    d->slots = (Slot *)malloc(d->cap * sizeof(Slot));
    d->order_cap = 512;
    d->order = (int32_t *)malloc(d->order_cap * sizeof(int32_t));
    d->last_ptr = NULL;
    d->last_len = -1;
    d->last_code = -1;
    if (!d->slots || !d->order)
        return -1;
    for (size_t i = 0; i < d->cap; i++)
        d->slots[i].code = -1;
    return 0;
}

static void dict_free(Dict *d)
{
    free(d->slots);
    free(d->order);
    d->slots = NULL;
    d->order = NULL;
}

static int dict_grow(Dict *d)
{
    size_t ncap = d->cap * 2;
    Slot *ns = (Slot *)malloc(ncap * sizeof(Slot));
    if (!ns)
        return -1;
    for (size_t i = 0; i < ncap; i++)
        ns[i].code = -1;
    for (size_t i = 0; i < d->cap; i++) {
        if (d->slots[i].code < 0)
            continue;
        size_t j = (size_t)d->slots[i].hash & (ncap - 1);
        while (ns[j].code >= 0)
            j = (j + 1) & (ncap - 1);
        ns[j] = d->slots[i];
        d->order[d->slots[i].code] = (int32_t)j;
    }
    free(d->slots);
    d->slots = ns;
    d->cap = ncap;
    return 0;
}

/* code of the value, adding it when new; -2 on out of memory */
static int32_t dict_code(Dict *d, const char *p, Py_ssize_t n)
{
    if (n == d->last_len && memcmp(p, d->last_ptr, (size_t)n) == 0)
        return d->last_code;
    uint64_t h = hash_bytes(p, n);
    size_t j = (size_t)h & (d->cap - 1);
    for (;;) {
        Slot *s = &d->slots[j];
        if (s->code < 0)
            break;
        if (s->hash == h && s->len == n && memcmp(s->ptr, p, (size_t)n) == 0) {
            d->last_ptr = s->ptr;
            d->last_len = n;
            d->last_code = s->code;
            return s->code;
        }
        j = (j + 1) & (d->cap - 1);
    }
    if (d->count >= 0x7ffffff0u)
        return -2;
    if (d->count == d->order_cap) {
        size_t nc = d->order_cap * 2;
        int32_t *no = (int32_t *)realloc(d->order, nc * sizeof(int32_t));
        if (!no)
            return -2;
        d->order = no;
        d->order_cap = nc;
    }
    int32_t code = (int32_t)d->count++;
    d->slots[j].hash = h;
    d->slots[j].ptr = p;
    d->slots[j].len = n;
    d->slots[j].code = code;
    d->order[code] = (int32_t)j;
    d->last_ptr = p;
    d->last_len = n;
    d->last_code = code;
    if (d->count * 2 > d->cap && dict_grow(d) < 0)
        return -2;
    return code;
}

typedef struct {
    int kind;
    char *out; /* buffer of `kind`'s element type, or NULL */
    Py_ssize_t nulls;
    Dict dict;
} Column;

static const int64_t KIND_MIN[] = {0, INT16_MIN, INT32_MIN, INT64_MIN, 0};
static const int64_t KIND_MAX[] = {0, INT16_MAX, INT32_MAX, INT64_MAX, 0};

/* Whether (neg ? -u : u) fits a column of `kind`, its minimum excluded (the null marker). */
static int in_range(uint64_t u, int neg, int kind)
{
    return neg ? u <= (uint64_t)(-(KIND_MIN[kind] + 1)) : u <= (uint64_t)KIND_MAX[kind];
}

/* *v = the integer in [a, b) (an optional '-', then digits) for a column of `kind`;
 * returns NULL, or what was expected instead. The type's minimum itself is the null
 * marker, so it is declined too (as in the unquoted path of scan()). */
static const char *to_int(const char *a, const char *b, int kind, int64_t *v)
{
    int neg = a < b && *a == '-';
    const char *q = a + neg;
    if (q == b)
        return "an integer (digits)";
    while (q + 1 < b && *q == '0') /* leading zeros */
        q++;
    if (b - q > 19)
        return "an integer (up to 19 digits)";
    uint64_t u = 0;
    for (; q < b; q++) {
        unsigned d = (unsigned)(unsigned char)*q - '0';
        if (d > 9)
            return "an integer (only digits)";
        u = u * 10 + d;
    }
    if (!in_range(u, neg, kind))
        return "an integer within the column's type";
    *v = neg ? -(int64_t)u : (int64_t)u;
    return NULL;
}

/* Parses [p, e) (whole lines) into the columns; returns rows, or -1 with *why set. */
static Py_ssize_t scan(const char *base, const char *p, const char *e, Column *cols,
                       Py_ssize_t ncols, Py_ssize_t capacity, Py_ssize_t *empty,
                       const char **why, Py_ssize_t *where)
{
    Py_ssize_t row = 0;
#define DECLINE(text, at)      \
    do {                       \
        *why = (text);         \
        *where = (at) - base;  \
        return -1;             \
    } while (0)
    while (p < e) {
        if (*p == '\n') { /* an empty line: skipped, as pyarrow does */
            p++;
            (*empty)++;
            continue;
        }
        if (row >= capacity)
            DECLINE("more rows than counted", p);
        for (Py_ssize_t c = 0; c < ncols; c++) {
            Column *col = &cols[c];
            const int kind = col->kind;
            const char *a, *b; /* the field's content */
            int quoted = 0, have_int = 0;
            int64_t v = 0;
            if (p < e && *p == '"') {
                /* a newline inside the quotes is caught by the caller: rows plus
                 * empty lines fall short of the newlines */
                a = p + 1;
                b = (const char *)memchr(a, '"', (size_t)(e - a));
                while (b && b + 1 < e && b[1] == '"') /* a "" escape */
                    b = (const char *)memchr(b + 2, '"', (size_t)(e - (b + 2)));
                if (!b)
                    DECLINE("a closing quote", p);
                p = b + 1;
                quoted = 1;
            } else if (kind != K_SKIP && kind != K_DICT) {
                /* an unquoted integer: scanned and converted in one go */
                a = p;
                int neg = p < e && *p == '-';
                p += neg;
                const char *z0 = p;
                uint64_t u = 0;
                while (p < e) {
                    unsigned d = (unsigned)(unsigned char)*p - '0';
                    if (d > 9)
                        break;
                    u = u * 10 + d;
                    p++;
                }
                b = p;
                if (b == z0 && neg)
                    DECLINE("an integer (digits after '-')", a);
                if (b - z0 > 19) { /* past 19 digits: the count without leading zeros */
                    const char *d0 = z0;
                    while (d0 + 1 < b && *d0 == '0')
                        d0++;
                    if (b - d0 > 19)
                        DECLINE("an integer (up to 19 significant digits)", a);
                }
                if (b > z0) {
                    if (!in_range(u, neg, kind))
                        DECLINE("an integer within the column's type", a);
                    v = neg ? -(int64_t)u : (int64_t)u;
                    have_int = 1;
                }
            } else {
                a = p;
                while (p < e && *p != ',' && *p != '\n' && *p != '\r')
                    p++; /* a '\r' ends a line for pyarrow: declined below */
                b = p;
                if (kind == K_DICT && memchr(a, '"', (size_t)(b - a)))
                    DECLINE("no quote inside an unquoted field", a);
            }
            /* the delimiter after the field */
            if (c + 1 < ncols) {
                if (p >= e || *p != ',')
                    DECLINE("a ',' after the field (as many fields as the header)", p);
            } else if (p < e && *p != '\n') {
                DECLINE("the line's end after the header's number of fields (and \\n line ends)",
                        p);
            }
            p++; /* past ',' or '\n' (or one past e at the end of the piece) */
            if (kind == K_SKIP)
                continue;
            Py_ssize_t n = b - a;
            if (kind == K_DICT) {
                int32_t code = -1;
                if (n == 0 && !quoted) {
                    col->nulls++;
                } else {
                    code = dict_code(&col->dict, a, n);
                    if (code == -2)
                        DECLINE("memory for the distinct values", a);
                }
                ((int32_t *)col->out)[row] = code;
                continue;
            }
            if (!have_int) {
                if (n == 0 && !quoted) {
                    col->nulls++;
                    v = KIND_MIN[kind];
                } else {
                    const char *err = to_int(a, b, kind, &v);
                    if (err)
                        DECLINE(err, a);
                }
            }
            switch (kind) {
            case K_I16: ((int16_t *)col->out)[row] = (int16_t)v; break;
            case K_I32: ((int32_t *)col->out)[row] = (int32_t)v; break;
            default: ((int64_t *)col->out)[row] = v; break;
            }
        }
        row++;
    }
#undef DECLINE
    return row;
}

static int get_range(Py_buffer *buf, Py_ssize_t start, Py_ssize_t end)
{
    if (start < 0 || end < start || end > buf->len) {
        PyErr_SetString(PyExc_ValueError, "range outside the buffer");
        return -1;
    }
    return 0;
}

/* count_newlines(buffer, start, end) -> int */
static PyObject *count_newlines(PyObject *self, PyObject *args)
{
    Py_buffer buf;
    Py_ssize_t start, end, n = 0;
    if (!PyArg_ParseTuple(args, "y*nn", &buf, &start, &end))
        return NULL;
    if (get_range(&buf, start, end) < 0) {
        PyBuffer_Release(&buf);
        return NULL;
    }
    const char *p = (const char *)buf.buf + start, *e = (const char *)buf.buf + end;
    Py_BEGIN_ALLOW_THREADS
    while (p < e) {
        const char *q = (const char *)memchr(p, '\n', (size_t)(e - p));
        if (!q)
            break;
        n++;
        p = q + 1;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&buf);
    return PyLong_FromSsize_t(n);
}

static const Py_ssize_t ITEM_SIZE[] = {0, 2, 4, 8, 4};

/* parse(buffer, start, end, kinds: bytes, outs: sequence, rows: int)
 *   -> (rows, empty lines, nulls: tuple[int], values: tuple[list[bytes] | None])
 *      or str (declined)
 * kinds[i] is the kind of the line's i-th field; outs[i] a writable C-contiguous buffer
 * of `rows` elements of that kind's type (int16/int32/int64; int32 codes for text),
 * or None for skipped fields. */
static PyObject *parse(PyObject *self, PyObject *args)
{
    Py_buffer buf;
    const char *kinds;
    Py_ssize_t nk, start, end, rows;
    PyObject *outs;
    if (!PyArg_ParseTuple(args, "y*nny#On", &buf, &start, &end, &kinds, &nk, &outs, &rows))
        return NULL;
    PyObject *result = NULL;
    Py_buffer *views = NULL;
    Column *cols = NULL;
    Py_ssize_t ncols = nk, nviews = 0;
    if (get_range(&buf, start, end) < 0)
        goto done;
    if (!PySequence_Check(outs) || PySequence_Size(outs) != ncols || ncols < 1) {
        PyErr_SetString(PyExc_ValueError, "outs must have one entry per kind");
        goto done;
    }
    views = (Py_buffer *)PyMem_Calloc((size_t)ncols, sizeof(Py_buffer));
    cols = (Column *)PyMem_Calloc((size_t)ncols, sizeof(Column));
    if (!views || !cols) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t c = 0; c < ncols; c++) {
        int k = (unsigned char)kinds[c];
        if (k > K_DICT) {
            PyErr_SetString(PyExc_ValueError, "unknown column kind");
            goto done;
        }
        cols[c].kind = k;
        if (k == K_SKIP)
            continue;
        PyObject *o = PySequence_GetItem(outs, c);
        if (!o)
            goto done;
        int rc = PyObject_GetBuffer(o, &views[c], PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS);
        Py_DECREF(o);
        if (rc < 0)
            goto done;
        nviews = c + 1;
        if (views[c].len < rows * ITEM_SIZE[k]) {
            PyErr_SetString(PyExc_ValueError, "an output buffer is too small");
            goto done;
        }
        cols[c].out = (char *)views[c].buf;
        if (k == K_DICT && dict_init(&cols[c].dict) < 0) {
            PyErr_NoMemory();
            goto done;
        }
    }
    const char *why = NULL;
    Py_ssize_t where = 0, got, empty = 0;
    const char *base = (const char *)buf.buf;
    Py_BEGIN_ALLOW_THREADS
    got = scan(base, base + start, base + end, cols, ncols, rows, &empty, &why, &where);
    Py_END_ALLOW_THREADS
    if (got < 0) {
        result = PyUnicode_FromFormat("byte %zd: expected %s", where, why);
        goto done;
    }
    PyObject *nulls = PyTuple_New(ncols), *values = PyTuple_New(ncols);
    if (!nulls || !values) {
        Py_XDECREF(nulls);
        Py_XDECREF(values);
        goto done;
    }
    for (Py_ssize_t c = 0; c < ncols; c++) {
        PyTuple_SET_ITEM(nulls, c, PyLong_FromSsize_t(cols[c].nulls));
        PyObject *v = Py_None;
        if (cols[c].kind == K_DICT) {
            Dict *d = &cols[c].dict;
            v = PyList_New((Py_ssize_t)d->count);
            for (size_t i = 0; v && i < d->count; i++) {
                Slot *s = &d->slots[d->order[i]];
                PyObject *bs = PyBytes_FromStringAndSize(s->ptr, s->len);
                if (!bs) {
                    Py_CLEAR(v);
                    break;
                }
                PyList_SET_ITEM(v, (Py_ssize_t)i, bs);
            }
            if (!v) {
                Py_DECREF(nulls);
                Py_DECREF(values);
                goto done;
            }
        } else {
            Py_INCREF(v);
        }
        PyTuple_SET_ITEM(values, c, v);
    }
    result = Py_BuildValue("(nnNN)", got, empty, nulls, values);
done:
    if (cols) {
        for (Py_ssize_t c = 0; c < ncols; c++)
            if (cols[c].kind == K_DICT)
                dict_free(&cols[c].dict);
        PyMem_Free(cols);
    }
    if (views) {
        for (Py_ssize_t c = 0; c < nviews; c++)
            if (views[c].obj)
                PyBuffer_Release(&views[c]);
        PyMem_Free(views);
    }
    PyBuffer_Release(&buf);
    return result;
}

static PyMethodDef methods[] = {
    {"count_newlines", count_newlines, METH_VARARGS,
     "count_newlines(buffer, start, end) -> number of b'\\n' in buffer[start:end]"},
    {"parse", parse, METH_VARARGS,
     "parse(buffer, start, end, kinds, outs, rows) -> (rows, empty, nulls, values) or str"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_csvscan",
                                    "One-pass typed reader of plain CSV rows.", -1, methods,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__csvscan(void) { return PyModule_Create(&module); }
