/*
 * hipscope.parsers._kinscan: one pass over the text of a PyTorch profiler (Kineto)
 * Chrome trace, from the JSON straight to columns (hipscope/parsers/kineto/native.py
 * turns them into numpy arrays). The GIL is released while scanning; a long
 * traceEvents list is read in two threads (the second from an event start half-way
 * along, which the first half's own parse must reach exactly, else it reads on alone).
 *
 * scan(buffer, split) -> None (declined) or a tuple
 *   (n_events, open, close, strings, raws, dense, sparse):
 *   - open/close: byte offsets of traceEvents' '[' and ']' (Python decodes the other
 *     top-level keys with msgspec);
 *   - strings: the distinct string values (str), raws: the distinct raw JSON texts
 *     (bytes) of values kept as text (arrays, objects, ints past int64, floats out of
 *     the exact range, "Input Dims"/"Input type" whatever their type);
 *   - dense: {"ph","cat","name": int32 string id per event (-1: absent),
 *     "pid","tid","ts","dur": (uint8 kind, 8-byte payload) per event, "args": uint8}
 *   - sparse: {key: (int32 event index, uint8 kind, 8-byte payload)} of the id/bp
 *     event keys and the args keys the tables use, for the events that have them.
 * Kinds: 0 absent, 1 null, 2 int (int64), 3 float (double), 4 str (string id),
 * 5 true, 6 false, 7 raw (raw id).
 * It declines (returns None) whatever it does not read exactly as msgspec would:
 * text that is not JSON or is cut short, NaN, invalid UTF-8, control characters,
 * lone surrogates, elements that are not objects, ph/cat/name that are not strings,
 * args that is not an object, escaped or repeated known keys, nesting past 64.
 */
#include "_kinscan.h"
#include <pthread.h>

/* ------------------------------------------------------------------ fields */
static const char *const EV_KEYS[] = {"ph", "cat", "name", "pid", "tid", "ts", "dur",
                                      "args", "id", "bp"};
static const char *const ARG_KEYS[] = {
    "correlation", "device", "stream", "grid", "block", "registers per thread",
    "shared memory", "bytes", "size", "kind", "name", "labels", "External id",
    "Sequence number", "Fwd thread id", "Collective name", "Process Group Name",
    "Process Group Ranks", "Seq", "Input Dims", "Input type"};

static int put_sparse(S *s, int f, int kind, int64_t payload)
{
    Sparse *sp = &s->sp[f];
    uint8_t k = (uint8_t)kind;
    return (buf_put(&sp->idx, &s->n, 4) < 0 || buf_put(&sp->kind, &k, 1) < 0 ||
            buf_put(&sp->val, &payload, 8) < 0) ? FAIL : 0;
}

/* length and first byte of each key, one compare per key (set at import) */
static uint32_t EV_CODES[N_EV], ARG_CODES[N_ARGS];

static inline uint32_t key_code(const char *k, size_t kl)
{
    return kl > 0xFFFFFF ? 0 : (uint32_t)kl << 8 | (unsigned char)(kl ? k[0] : 0);
}

static int match(const char *const *keys, int n, const char *k, size_t kl)
{
    const uint32_t *codes = keys == EV_KEYS ? EV_CODES : ARG_CODES, code = key_code(k, kl);
    for (int i = 0; i < n; i++)
        if (codes[i] == code && memcmp(keys[i], k, kl) == 0)
            return i;
    return -1;
}

/* an object's members: known keys to columns (handler), others skipped */
typedef int (*Member)(S *s, int key);

static int members(S *s, const char *const *keys, int nkeys, Member on_key)
{
    uint32_t seen = 0;
    s->p++;
    WS(s);
    if (s->p < s->end && *s->p == '}') { s->p++; return 0; }
    for (;;) {
        const char *k; size_t kl; int esc;
        if (s->p >= s->end || *s->p != '"' || parse_string(s, &k, &kl, &esc) < 0)
            return FAIL;
        int key = match(keys, nkeys, k, kl);
        WS(s);
        if (s->p >= s->end || *s->p++ != ':')
            return FAIL;
        WS(s);
        if (key >= 0 && (esc || (seen >> key & 1u)))
            return FAIL;
        if (key >= 0) {
            seen |= 1u << key;
            if (on_key(s, key) < 0)
                return FAIL;
        } else if (skip_value(s, 2) < 0) {
            return FAIL;
        }
        WS(s);
        if (s->p >= s->end)
            return FAIL;
        if (*s->p == ',') { s->p++; WS(s); continue; }
        if (*s->p++ == '}')
            return 0;
        return FAIL;
    }
}

static int on_arg(S *s, int key)
{
    int kind;
    int64_t v = 0;
    if (parse_value(s, key >= N_ARGS - N_RAWONLY, &kind, &v) < 0)
        return FAIL;
    return put_sparse(s, 2 + key, kind, v);
}

static int on_event_key(S *s, int key)
{
    int kind;
    int64_t v = 0;
    if (key == E_ARGS) {
        uint8_t *has = (uint8_t *)s->has_args.p + s->n;
        if (s->p < s->end && *s->p == 'n')
            return literal(s, "null", 4);
        if (s->p >= s->end || *s->p != '{')
            return FAIL;
        *has = 1;
        return members(s, ARG_KEYS, N_ARGS, on_arg);
    }
    if (parse_value(s, 0, &kind, &v) < 0)
        return FAIL;
    if (key < N_STR) {
        if (kind != K_STR)
            return FAIL;
        ((int32_t *)s->str[key].p)[s->n] = (int32_t)v;
    } else if (key < N_STR + N_DENSE) {
        ((uint8_t *)s->dkind[key - N_STR].p)[s->n] = (uint8_t)kind;
        ((int64_t *)s->dval[key - N_STR].p)[s->n] = v;
    } else {
        return put_sparse(s, key - E_ID, kind, v);
    }
    return 0;
}

static int new_event(S *s)
{
    int32_t minus = -1;
    uint8_t zero = 0;
    int64_t z8 = 0;
    for (int i = 0; i < N_STR; i++)
        if (buf_put(&s->str[i], &minus, 4) < 0)
            return FAIL;
    for (int i = 0; i < N_DENSE; i++)
        if (buf_put(&s->dkind[i], &zero, 1) < 0 || buf_put(&s->dval[i], &z8, 8) < 0)
            return FAIL;
    return buf_put(&s->has_args, &zero, 1);
}

/* events from s->p (an event's '{') to the list's ']'; 1: stopped where an event
 * begins exactly at stop */
static int event_run(S *s, const unsigned char *stop)
{
    for (;;) {
        if (s->p == stop)
            return 1;
        if (s->p >= s->end || *s->p != '{' || s->n == INT32_MAX || new_event(s) < 0)
            return FAIL;
        if (members(s, EV_KEYS, N_EV, on_event_key) < 0)
            return FAIL;
        s->n++;
        WS(s);
        if (s->p >= s->end)
            return FAIL;
        if (*s->p == ',') { s->p++; WS(s); continue; }
        if (*s->p++ == ']')
            return 0;
        return FAIL;
    }
}

/* a likely event start half-way along: '{' after "}," (checked by the first half's
 * parse ending there exactly) */
static const unsigned char *split_point(const S *s)
{
    const unsigned char *q = s->p + (s->end - s->p) / 2, *lim = q + (1 << 20);
    if (lim > s->end)
        lim = s->end;
    while (q < lim && (q = memchr(q, '}', (size_t)(lim - q))) != NULL) {
        const unsigned char *r = q + 1;
        while (r < lim && (*r == ' ' || *r == '\n' || *r == '\r' || *r == '\t')) r++;
        if (r < lim && *r == ',') {
            r++;
            while (r < lim && (*r == ' ' || *r == '\n' || *r == '\r' || *r == '\t')) r++;
            if (r < lim && *r == '{')
                return r;
        }
        q++;
    }
    return NULL;
}

static void *second_half(void *arg)
{
    S *t = (S *)arg;
    t->rc = event_run(t, NULL);
    return NULL;
}

static void free_state(S *s);

static int remap(int32_t *map, Intern *to, Intern *from)
{
    const int64_t *offs = (const int64_t *)from->offs.p;
    for (int32_t i = 0; i < from->n; i++)
        if ((map[i] = intern(to, from->data.p + offs[i], (size_t)(offs[i + 1] - offs[i]))) < 0)
            return FAIL;
    return 0;
}

static void remap_pairs(Buf *kind, Buf *val, const int32_t *ls, const int32_t *lr)
{
    const uint8_t *k = (const uint8_t *)kind->p;
    int64_t *v = (int64_t *)val->p;
    for (size_t i = 0; i < kind->len; i++)
        if (k[i] == K_STR) v[i] = ls[v[i]];
        else if (k[i] == K_RAW) v[i] = lr[v[i]];
}

/* the second half's columns appended to the first's, its ids made the first's */
static int merge(S *s, S *t)
{
    int32_t *ls = (int32_t *)malloc(((size_t)t->strs.n + 1) * 4);
    int32_t *lr = (int32_t *)malloc(((size_t)t->raws.n + 1) * 4);
    int rc = FAIL;
    if (!ls || !lr || remap(ls, &s->strs, &t->strs) < 0 || remap(lr, &s->raws, &t->raws) < 0)
        goto done;
    for (int i = 0; i < N_STR; i++) {
        int32_t *v = (int32_t *)t->str[i].p;
        for (size_t j = 0; j < t->str[i].len / 4; j++)
            if (v[j] >= 0) v[j] = ls[v[j]];
        if (buf_put(&s->str[i], t->str[i].p, t->str[i].len) < 0)
            goto done;
    }
    for (int i = 0; i < N_DENSE; i++) {
        remap_pairs(&t->dkind[i], &t->dval[i], ls, lr);
        if (buf_put(&s->dkind[i], t->dkind[i].p, t->dkind[i].len) < 0 ||
            buf_put(&s->dval[i], t->dval[i].p, t->dval[i].len) < 0)
            goto done;
    }
    if (buf_put(&s->has_args, t->has_args.p, t->has_args.len) < 0)
        goto done;
    for (int f = 0; f < N_SPARSE; f++) {
        Sparse *a = &s->sp[f], *b = &t->sp[f];
        int32_t *idx = (int32_t *)b->idx.p;
        for (size_t j = 0; j < b->idx.len / 4; j++)
            idx[j] += s->n;
        remap_pairs(&b->kind, &b->val, ls, lr);
        if (buf_put(&a->idx, b->idx.p, b->idx.len) < 0 ||
            buf_put(&a->kind, b->kind.p, b->kind.len) < 0 ||
            buf_put(&a->val, b->val.p, b->val.len) < 0)
            goto done;
    }
    s->n += t->n;
    rc = 0;
done:
    free(ls);
    free(lr);
    return rc;
}

/* the list from s->p ('['): the halves of a big one in two threads */
static int events(S *s)
{
    s->p++;
    WS(s);
    if (s->p < s->end && *s->p == ']') { s->p++; return 0; }
    const unsigned char *q = s->end - s->p > s->split ? split_point(s) : NULL;
    S *t = q ? (S *)calloc(1, sizeof(S)) : NULL;
    pthread_t th;
    if (t) {
        t->base = s->base;
        t->p = q;
        t->end = s->end;
        t->cloc = s->cloc;
        if (pthread_create(&th, NULL, second_half, t) != 0) {
            free(t);
            t = NULL;
        }
    }
    int rc = event_run(s, t ? q : NULL);
    if (t) {
        pthread_join(th, NULL);
        if (rc == 1) {  /* q began an event: the second half is the rest of the list */
            rc = t->rc < 0 ? FAIL : merge(s, t);
            s->p = t->p;
        }
        t->cloc = (locale_t)0;   /* shared */
        free_state(t);
        free(t);
    }
    return rc;
}

/* the top object: traceEvents once, the other keys skipped */
static int top(S *s, Py_ssize_t *open, Py_ssize_t *close)
{
    WS(s);
    if (s->p >= s->end || *s->p != '{')
        return FAIL;
    s->p++;
    WS(s);
    *open = -1;
    for (;;) {
        const char *k; size_t kl; int esc;
        if (s->p >= s->end || *s->p != '"' || parse_string(s, &k, &kl, &esc) < 0)
            return FAIL;
        int is_te = kl == 11 && memcmp(k, "traceEvents", 11) == 0;
        WS(s);
        if (s->p >= s->end || *s->p++ != ':')
            return FAIL;
        WS(s);
        if (is_te) {
            if (esc || *open >= 0 || s->p >= s->end || *s->p != '[')
                return FAIL;
            *open = s->p - s->base;
            if (events(s) < 0)
                return FAIL;
            *close = s->p - 1 - s->base;
        } else if (skip_value(s, 1) < 0) {
            return FAIL;
        }
        WS(s);
        if (s->p >= s->end)
            return FAIL;
        if (*s->p == ',') { s->p++; WS(s); continue; }
        if (*s->p++ != '}')
            return FAIL;
        WS(s);
        return (s->p == s->end && *open >= 0) ? 0 : FAIL;
    }
}

/* ------------------------------------------------------------------ results */
static PyObject *take(Buf *b)
{
    PyObject *o = PyBytes_FromStringAndSize(b->p ? b->p : "", (Py_ssize_t)b->len);
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
    return o;
}

static PyObject *table(Intern *t, int as_str)
{
    PyObject *list = PyList_New(t->n);
    const int64_t *offs = (const int64_t *)t->offs.p;
    for (int32_t i = 0; list && i < t->n; i++) {
        const char *p = t->data.p + offs[i];
        Py_ssize_t n = (Py_ssize_t)(offs[i + 1] - offs[i]);
        PyObject *o = as_str ? PyUnicode_DecodeUTF8(p, n, NULL) : PyBytes_FromStringAndSize(p, n);
        if (!o) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, i, o);
    }
    return list;
}

static PyObject *results(S *s, Py_ssize_t open, Py_ssize_t close)
{
    static const char *const DENSE[] = {"pid", "tid", "ts", "dur"};
    PyObject *strs = table(&s->strs, 1), *raws = table(&s->raws, 0);
    PyObject *dense = PyDict_New(), *sparse = PyDict_New(), *out = NULL;
    if (!strs || !raws || !dense || !sparse)
        goto done;
    for (int i = 0; i < N_STR; i++) {
        PyObject *b = take(&s->str[i]);
        if (!b || PyDict_SetItemString(dense, EV_KEYS[i], b) < 0) { Py_XDECREF(b); goto done; }
        Py_DECREF(b);
    }
    for (int i = 0; i < N_DENSE; i++) {
        PyObject *t = Py_BuildValue("(NN)", take(&s->dkind[i]), take(&s->dval[i]));
        if (!t || PyDict_SetItemString(dense, DENSE[i], t) < 0) { Py_XDECREF(t); goto done; }
        Py_DECREF(t);
    }
    PyObject *h = take(&s->has_args);
    if (!h || PyDict_SetItemString(dense, "args", h) < 0) { Py_XDECREF(h); goto done; }
    Py_DECREF(h);
    for (int f = 0; f < N_SPARSE; f++) {
        const char *key = f < 2 ? EV_KEYS[E_ID + f] : ARG_KEYS[f - 2];
        PyObject *t = Py_BuildValue("(NNN)", take(&s->sp[f].idx), take(&s->sp[f].kind),
                                    take(&s->sp[f].val));
        if (!t || PyDict_SetItemString(sparse, key, t) < 0) { Py_XDECREF(t); goto done; }
        Py_DECREF(t);
    }
    out = Py_BuildValue("(innOOOO)", s->n, open, close, strs, raws, dense, sparse);
done:
    Py_XDECREF(strs);
    Py_XDECREF(raws);
    Py_XDECREF(dense);
    Py_XDECREF(sparse);
    if (!out && PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
        PyErr_Clear(); /* not valid UTF-8 after all: decline */
        Py_RETURN_NONE;
    }
    return out;
}

static void free_state(S *s)
{
    intern_free(&s->strs);
    intern_free(&s->raws);
    free(s->scratch.p);
    free(s->has_args.p);
    for (int i = 0; i < N_STR; i++)
        free(s->str[i].p);
    for (int i = 0; i < N_DENSE; i++) {
        free(s->dkind[i].p);
        free(s->dval[i].p);
    }
    for (int f = 0; f < N_SPARSE; f++) {
        free(s->sp[f].idx.p);
        free(s->sp[f].kind.p);
        free(s->sp[f].val.p);
    }
    if (s->cloc)
        freelocale(s->cloc);
}

static PyObject *scan(PyObject *self, PyObject *args)
{
    Py_buffer view;
    Py_ssize_t split = 64 << 20;
    if (!PyArg_ParseTuple(args, "y*|n", &view, &split))
        return NULL;
    S *s = (S *)calloc(1, sizeof(S));
    if (!s) {
        PyBuffer_Release(&view);
        return PyErr_NoMemory();
    }
    s->base = s->p = (const unsigned char *)view.buf;
    s->end = s->base + view.len;
    s->cloc = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
    s->split = split;
    Py_ssize_t open = -1, close = -1;
    int rc = FAIL;
    if (s->cloc) {
        Py_BEGIN_ALLOW_THREADS
        rc = top(s, &open, &close);
        Py_END_ALLOW_THREADS
    }
    PyObject *out;
    if (rc < 0) {
        out = Py_None;
        Py_INCREF(out);
    } else {
        out = results(s, open, close);
    }
    free_state(s);
    free(s);
    PyBuffer_Release(&view);
    return out;
}

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS,
     "scan(buffer, split=64 MiB) -> None (declined) or (n, open, close, strings, raws, "
     "dense, sparse); split: a traceEvents list longer than this is read in two threads"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_kinscan",
                                    "Kineto JSON to columns (see hipscope/parsers/kineto)",
                                    -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__kinscan(void)
{
    for (int i = 0; i < N_EV; i++)
        EV_CODES[i] = key_code(EV_KEYS[i], strlen(EV_KEYS[i]));
    for (int i = 0; i < N_ARGS; i++)
        ARG_CODES[i] = key_code(ARG_KEYS[i], strlen(ARG_KEYS[i]));
    return PyModule_Create(&module);
}
