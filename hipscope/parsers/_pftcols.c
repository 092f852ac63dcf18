/*
 * hipscope.parsers._pftscan, part 3: ann_ints, the integer annotation columns that
 * hipscope/parsers/pftrace/tables.py reads from the annotation dicts of millions of
 * slices (dict lookups without a Python loop).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>

/* ann_ints(dicts, keys, defaults) -> (columns, exact): columns[j][i] = dicts[i].get(
   keys[j], defaults[j]); exact[j] is False where a value is neither an exact int nor
   None nor the default (Python converts that column's values with _as_int) */
PyObject *pft_ann_ints(PyObject *self, PyObject *args)
{
    PyObject *dicts, *keys, *defaults;
    if (!PyArg_ParseTuple(args, "O!O!O!", &PyList_Type, &dicts, &PyTuple_Type, &keys,
                          &PyTuple_Type, &defaults))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(dicts), m = PyTuple_GET_SIZE(keys);
    if (PyTuple_GET_SIZE(defaults) != m) {
        PyErr_SetString(PyExc_ValueError, "keys and defaults differ in length");
        return NULL;
    }
    PyObject *cols = PyTuple_New(m), *exact = PyTuple_New(m);
    if (!cols || !exact) goto fail;
    for (Py_ssize_t j = 0; j < m; j++) {
        PyObject *col = PyList_New(n), *key = PyTuple_GET_ITEM(keys, j);
        PyObject *dflt = PyTuple_GET_ITEM(defaults, j);
        int ok = 1;
        if (!col) goto fail;
        PyTuple_SET_ITEM(cols, j, col);
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *d = PyList_GET_ITEM(dicts, i);
            if (!PyDict_Check(d)) { PyErr_SetString(PyExc_TypeError, "not a dict"); goto fail; }
            PyObject *v = PyDict_GetItemWithError(d, key);
            if (!v) {
                if (PyErr_Occurred()) goto fail;
                v = dflt;
            } else if (v != Py_None && !PyLong_CheckExact(v)) ok = 0;
            PyList_SET_ITEM(col, i, Py_NewRef(v));
        }
        PyTuple_SET_ITEM(exact, j, PyBool_FromLong(ok));
    }
    PyObject *out = PyTuple_Pack(2, cols, exact);
    Py_DECREF(cols);
    Py_DECREF(exact);
    return out;
fail:
    Py_XDECREF(cols);
    Py_XDECREF(exact);
    return NULL;
}

/* place_ints(idx, kind, val, slot, v, ok, given) -> (placed, flags): proto.ann_as_int
   of one annotation name's entries (idx: slice, kind, raw value) written at v/ok/given
   [slot[idx]] where slot >= 0, in one pass without the GIL (pftrace/colann.py; given
   may be None). flags: 1 string values
   (Python converts those), 2 an unsigned value beyond int64, 4 a finite double beyond
   int64 -- 2 and 4 over every entry, placed or not (the column tables decline) */
PyObject *pft_place_ints(PyObject *self, PyObject *args)
{
    Py_buffer b[7];
    memset(b, 0, sizeof(b));
    PyObject *given_obj;
    if (!PyArg_ParseTuple(args, "y*y*y*y*w*w*O", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5],
                          &given_obj))
        return NULL;
    Py_ssize_t n = b[0].len / 4, nslot = b[3].len / 8, nout = b[4].len / 8;
    PyObject *out = NULL;
    if (given_obj != Py_None && PyObject_GetBuffer(given_obj, &b[6], PyBUF_WRITABLE) < 0)
        goto done;
    if (b[1].len != n || b[2].len != n * 8 || b[5].len != nout ||
        (given_obj != Py_None && b[6].len != nout)) {
        PyErr_SetString(PyExc_ValueError, "place_ints: buffer sizes differ");
        goto done;
    }
    const uint32_t *idx = b[0].buf;
    const uint8_t *kind = b[1].buf;
    const uint64_t *val = b[2].buf;
    const int64_t *slot = b[3].buf;
    int64_t *v = b[4].buf;
    uint8_t *ok = b[5].buf, *given = given_obj != Py_None ? b[6].buf : NULL;
    Py_ssize_t placed = 0;
    int flags = 0, bad = 0;
    Py_BEGIN_ALLOW_THREADS /* numpy buffers of the caller's: the tables' other columns
                              are built meanwhile */
    for (Py_ssize_t i = 0; i < n; i++) {
        uint8_t k = kind[i];
        int64_t x = 0;
        uint8_t good = 0;
        switch (k) {
        case 1: case 3: x = (int64_t)val[i]; good = 1; break; /* bool (0/1), int */
        case 2: case 6: /* uint, pointer */
            if (val[i] >> 63) flags |= 2;
            x = (int64_t)val[i]; good = 1; break;
        case 4: {
            double d;
            memcpy(&d, &val[i], 8);
            if (isfinite(d)) {
                if (fabs(d) >= 9223372036854775808.0) flags |= 4;
                else { x = (int64_t)nearbyint(d); good = 1; }
            }
            break;
        }
        case 5: flags |= 1; break;
        default: break;
        }
        if ((size_t)idx[i] >= (size_t)nslot) { bad = 1; break; }
        int64_t s = slot[idx[i]];
        if (s < 0) continue;
        if (s >= nout) { bad = 1; break; }
        v[s] = x; ok[s] = good;
        if (given) given[s] = 1;
        placed++;
    }
    Py_END_ALLOW_THREADS
    if (bad) {
        PyErr_SetString(PyExc_IndexError, "place_ints: a slice or slot out of range");
        goto done;
    }
    out = Py_BuildValue("(ni)", placed, flags);
done:
    for (int j = 0; j < 7; j++) if (b[j].obj) PyBuffer_Release(&b[j]);
    return out;
}

/* ------------------------------------------------------------------ the column walk
 * With walk(..., columns=True) _pftscan.c records each begun slice as a SliceRec, its
 * annotations in one column per name and its categories / flows in flat arrays (string ids into
 * one table of distinct strings), touching no Python object per event; pftrace/
 * colwalk.py turns the buffers into numpy columns. */
#include "_pftscan.h"

static uint32_t hash_of(const uint8_t *p, uint32_t n, uint8_t mode)
{
    uint32_t h = 2166136261u ^ mode;
    for (uint32_t i = 0; i < n; i++) h = (h ^ p[i]) * 16777619u;
    return h;
}

static int tab_grow(Cols *cl)
{
    size_t cap = cl->tabcap ? cl->tabcap * 2 : 4096;
    uint32_t *t = calloc(cap, sizeof(uint32_t));
    if (!t) return 0;
    for (size_t i = 0; i < cl->st_n; i++) {
        size_t j = cl->st[i].hash & (cap - 1);
        while (t[j]) j = (j + 1) & (cap - 1);
        t[j] = (uint32_t)i + 1;
    }
    free(cl->tab);
    cl->tab = t; cl->tabcap = cap;
    return 1;
}

/* id of the string at sp (mode 1: decoded with errors="replace"); -1 out of memory */
static int64_t sid(Cols *cl, const uint8_t *base, Span sp, uint8_t mode)
{
    if ((cl->st_n + 1) * 2 > cl->tabcap && !tab_grow(cl)) return -1;
    uint32_t h = hash_of(base + sp.off, sp.len, mode);
    size_t j = h & (cl->tabcap - 1);
    for (; cl->tab[j]; j = (j + 1) & (cl->tabcap - 1)) {
        const Str *e = &cl->st[cl->tab[j] - 1];
        if (e->hash == h && e->mode == mode && e->s.len == sp.len &&
            !memcmp(base + e->s.off, base + sp.off, sp.len))
            return cl->tab[j] - 1;
    }
    Str *e = PUSH(cl, st);
    if (!e) return -1;
    e->s = sp; e->hash = h; e->mode = mode;
    cl->tab[j] = (uint32_t)cl->st_n;
    return (int64_t)cl->st_n - 1;
}

int col_intern(Cols *cl, const uint8_t *base, Seq *s, int kind, uint64_t iid, Span sp)
{
    if (iid >= MAXIID) return 0; /* decline: the record walk reads the file */
    if (iid >= s->idcap[kind]) {
        size_t cap = s->idcap[kind] ? s->idcap[kind] : 1024;
        while (cap <= iid) cap *= 2;
        uint32_t *t = realloc(s->ids[kind], cap * sizeof(uint32_t));
        if (!t) return 0;
        memset(t + s->idcap[kind], 0, (cap - s->idcap[kind]) * sizeof(uint32_t));
        s->ids[kind] = t; s->idcap[kind] = cap;
    }
    int64_t id = sid(cl, base, sp, kind == 3);
    if (id < 0) return 0;
    s->ids[kind][iid] = (uint32_t)id + 1;
    return 1;
}

void col_clear(Seq *s)
{
    for (int j = 0; j < 4; j++)
        if (s->ids[j]) memset(s->ids[j], 0, s->idcap[j] * sizeof(uint32_t));
}

static inline int64_t idof(Seq *s, int kind, uint64_t iid)
{
    return iid < s->idcap[kind] ? (int64_t)s->ids[kind][iid] - 1 : -1;
}

static Stack *stack_of(Cols *cl, uint64_t key)
{
    if ((cl->stkn + 1) * 2 > cl->stkcap) {
        size_t cap = cl->stkcap ? cl->stkcap * 2 : 64;
        Stack *t = calloc(cap, sizeof(Stack));
        if (!t) return NULL;
        for (size_t i = 0; i < cl->stkcap; i++) {
            if (!cl->stk[i].used) continue;
            size_t j = (cl->stk[i].key * 0x9E3779B97F4A7C15ull >> 20) & (cap - 1);
            while (t[j].used) j = (j + 1) & (cap - 1);
            t[j] = cl->stk[i];
        }
        free(cl->stk);
        cl->stk = t; cl->stkcap = cap;
    }
    size_t j = (key * 0x9E3779B97F4A7C15ull >> 20) & (cl->stkcap - 1);
    for (; cl->stk[j].used; j = (j + 1) & (cl->stkcap - 1))
        if (cl->stk[j].key == key) return &cl->stk[j];
    cl->stk[j].used = 1; cl->stk[j].key = key; cl->stkn++;
    return &cl->stk[j];
}

static int push_open(Cols *cl, uint64_t track, int64_t idx)
{
    Stack *st = stack_of(cl, track);
    if (!st || !grow((void **)&st->v, &st->cap, st->n, sizeof(int64_t))) return 0;
    st->v[st->n++] = idx;
    return 1;
}

static NameCol *name_col(Cols *cl, uint32_t name)
{
    if (name >= cl->nc_cap) {
        size_t cap = cl->nc_cap ? cl->nc_cap : 256;
        while (cap <= name) cap *= 2;
        NameCol **t = realloc(cl->nc, cap * sizeof(NameCol *));
        if (!t) return NULL;
        memset(t + cl->nc_cap, 0, (cap - cl->nc_cap) * sizeof(NameCol *));
        cl->nc = t; cl->nc_cap = cap;
    }
    if (!cl->nc[name]) cl->nc[name] = calloc(1, sizeof(NameCol));
    return cl->nc[name];
}

/* room for one more entry in each of a name's four arrays (always the same length) */
static int nc_grow(NameCol *nc)
{
    size_t n = nc->idx_n;
    return grow((void **)&nc->idx, &nc->idx_cap, n, 4) &&
           grow((void **)&nc->val, &nc->val_cap, n, 8) &&
           grow((void **)&nc->kind, &nc->kind_cap, n, 1) &&
           grow((void **)&nc->pos, &nc->pos_cap, n, 2);
}

static int col_anns(Cols *cl, Ctx *c, Seq *s, const Pkt *k, int64_t empty, uint32_t idx)
{
    uint32_t j = 0;
    for (uint32_t i = k->ann_lo; i < k->ann_hi; i++) {
        const Ann *a = &c->an[i];
        int64_t name = empty, v;
        if (a->nkind == 1 && a->name) {
            if ((name = idof(s, 2, a->name)) < 0) continue;
        } else if (a->nkind == 2 && (name = sid(cl, c->base, a->s, 0)) < 0) return -1;
        uint8_t kind = a->vkind;
        uint64_t val = a->v;
        if (kind == V_STR) {
            Span sp = {(uint32_t)(a->v >> 32), (uint32_t)a->v};
            if ((v = sid(cl, c->base, sp, 0)) < 0) return -1;
            val = (uint64_t)v;
        } else if (kind == V_STRIID) {
            v = idof(s, 3, a->v);
            kind = v < 0 ? V_NULL : V_STR;
            val = v < 0 ? 0 : (uint64_t)v;
        } else if (kind == V_BOOL) val = a->v != 0;
        else if (kind < V_BOOL || kind > V_PTR) { kind = V_NULL; val = 0; }
        NameCol *nc = name_col(cl, (uint32_t)name);
        if (!nc || j > 0xFFFF) return -1;
        size_t n = nc->idx_n;
        if (n && nc->last == idx) nc->dup = 1;
        if (n == nc->idx_cap && !nc_grow(nc)) return -1; /* the four grow in step */
        nc->idx[n] = idx; nc->val[n] = val; nc->kind[n] = kind; nc->pos[n] = (uint16_t)j++;
        nc->idx_n = nc->val_n = nc->kind_n = nc->pos_n = n + 1;
        nc->last = idx;
    }
    return j;
}

static int col_begin(W *w, Ctx *c, Seq *s, const Pkt *k, uint64_t track, int64_t ts,
                     uint32_t clock, int none)
{
    Cols *cl = w->cols;
    Span nul = {0, 0};
    int64_t empty = sid(cl, c->base, nul, 0), name = empty;
    if (empty < 0) return 0;
    if (k->name_kind == 1 && k->name_iid) {
        if ((name = idof(s, 0, k->name_iid)) < 0) {
            w->unresolved++;
            return k->etype != 1 || push_open(cl, track, -1);
        }
    } else if (k->name_kind == 2 && (name = sid(cl, c->base, k->name, 0)) < 0) return 0;
    SliceRec *r = PUSH(cl, sl);
    if (!r) return 0;
    memset(r, 0, sizeof(*r));
    r->track = track; r->t0 = ts; r->c0 = (uint8_t)clock; r->fg = none ? 1 : 0;
    r->name = (uint32_t)name;
    r->cat_lo = (uint32_t)cl->ct_n;
    for (uint32_t i = k->cat_lo; i < k->cat_hi; i++) {
        int64_t v = idof(s, 1, c->cat[i]);
        uint32_t *d = PUSH(cl, ct);
        if (!d) return 0;
        *d = (uint32_t)(v < 0 ? empty : v);
    }
    for (uint32_t i = k->cat_hi > k->cat_lo ? k->cs_hi : k->cs_lo; i < k->cs_hi; i++) {
        int64_t v = sid(cl, c->base, c->cs[i], 0);
        uint32_t *d = PUSH(cl, ct);
        if (v < 0 || !d) return 0;
        *d = (uint32_t)v;
    }
    r->cat_n = (uint32_t)cl->ct_n - r->cat_lo;
    uint32_t lo = k->flow_lo, n = k->nflow[0] + k->nflow[1];
    if (!n) n = k->nflow[2] + k->nflow[3];
    r->flow_lo = (uint32_t)cl->fw_n; r->flow_n = n;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t *d = PUSH(cl, fw);
        if (!d) return 0;
        *d = c->fl[lo + i];
    }
    size_t idx = cl->sl_n - 1;
    int n_ann = col_anns(cl, c, s, k, empty, (uint32_t)idx);
    if (n_ann < 0) return 0;
    r->ann_n = (uint32_t)n_ann;
    w->n_begun++;
    if (k->etype == 3) { r->t1 = ts; r->c1 = r->c0; r->fg |= (none ? 2 : 0) | 4; return 1; }
    return push_open(cl, track, (int64_t)idx);
}

int col_event(W *w, Ctx *c, Seq *s, const Pkt *k, uint64_t track, int64_t ts, uint32_t clock,
              int none)
{
    Cols *cl = w->cols;
    if (k->etype == 2) {
        Stack *st = stack_of(cl, track);
        if (!st) return 0;
        if (!st->n) { w->unmatched++; return 1; }
        int64_t idx = st->v[--st->n];
        if (idx >= 0) {
            SliceRec *r = &cl->sl[idx];
            r->t1 = ts; r->c1 = (uint8_t)clock; r->fg |= (none ? 2 : 0) | 4;
        }
        return 1;
    }
    if (k->etype == 4) {
        uint64_t *d = PUSH(cl, ctr);
        if (d) *d = track;
        return d != NULL;
    }
    if (k->etype == 1 || k->etype == 3) return col_begin(w, c, s, k, track, ts, clock, none);
    return 1;
}

/* the arrays go to Python without a copy: a read-only buffer object that owns the
   malloc'd memory (numpy.frombuffer views it; freed with the last view) */
typedef struct { PyObject_HEAD void *p; Py_ssize_t n; } Buf;

static int buf_get(PyObject *o, Py_buffer *view, int flags)
{
    static char empty[1];
    Buf *b = (Buf *)o;
    return PyBuffer_FillInfo(view, o, b->p ? b->p : empty, b->n, 1, flags);
}

static void buf_dealloc(PyObject *o)
{
    PyTypeObject *tp = Py_TYPE(o);
    free(((Buf *)o)->p);
    tp->tp_free(o);
    Py_DECREF(tp);
}

static PyType_Slot buf_slots[] = {{Py_bf_getbuffer, buf_get}, {Py_tp_dealloc, buf_dealloc},
                                  {0, NULL}};
static PyType_Spec buf_spec = {"hipscope.parsers._pftscan.Buffer", sizeof(Buf), 0,
                               Py_TPFLAGS_DEFAULT, buf_slots};
static PyObject *buf_type;

/* a Buf owning *p (n bytes); *p and *cap are reset, so col_free leaves it alone */
static PyObject *take(void *pp, size_t *cap, size_t n)
{
    void **p = pp;
    if (!buf_type && !(buf_type = PyType_FromSpec(&buf_spec))) return NULL;
    Buf *b = PyObject_New(Buf, (PyTypeObject *)buf_type);
    if (!b) return NULL;
    Py_INCREF(buf_type); /* each instance of a heap type holds its type */
    b->p = *p; b->n = (Py_ssize_t)n;
    *p = NULL; *cap = 0;
    return (PyObject *)b;
}
#define TAKE(o, name, size) take(&(o)->name, &(o)->name##_cap, (o)->name##_n * (size))

/* (slices, annotations, categories, flows, counter tracks, strings, open left) */
PyObject *col_result(W *w, const uint8_t *base)
{
    Cols *cl = w->cols;
    long long left = 0;
    for (size_t i = 0; i < cl->stkcap; i++) left += (long long)cl->stk[i].n;
    for (uint32_t id = 0; id < 128; id++) {
        if (!((cl->clocks[id >> 6] >> (id & 63)) & 1)) continue;
        PyObject *v = PyLong_FromUnsignedLong(id);
        int bad = !v || PySet_Add(w->clocks_used, v) < 0;
        Py_XDECREF(v);
        if (bad) return NULL;
    }
    PyObject *strs = PyList_New((Py_ssize_t)cl->st_n);
    if (!strs) return NULL;
    for (size_t i = 0; i < cl->st_n; i++) {
        const Str *e = &cl->st[i];
        PyObject *v = PyUnicode_DecodeUTF8((const char *)base + e->s.off, e->s.len,
                                           e->mode ? "replace" : NULL);
        if (!v) { Py_DECREF(strs); return NULL; }
        PyList_SET_ITEM(strs, (Py_ssize_t)i, v);
    }
    PyObject *names = PyList_New(0);
    if (!names) { Py_DECREF(strs); return NULL; }
    for (size_t i = 0; i < cl->nc_cap; i++) {
        NameCol *nc = cl->nc[i];
        if (!nc || !nc->idx_n) continue;
        PyObject *t = Py_BuildValue("(nNNNNi)", (Py_ssize_t)i, TAKE(nc, idx, 4),
                                    TAKE(nc, kind, 1), TAKE(nc, val, 8), TAKE(nc, pos, 2),
                                    (int)nc->dup);
        if (!t || PyList_Append(names, t) < 0) {
            Py_XDECREF(t); Py_DECREF(names); Py_DECREF(strs); return NULL;
        }
        Py_DECREF(t);
    }
    return Py_BuildValue("(NNNNNNL)", TAKE(cl, sl, sizeof(SliceRec)), names, TAKE(cl, ct, 4),
                         TAKE(cl, fw, 8), TAKE(cl, ctr, 8), strs, left);
}

void col_free(Cols *cl)
{
    for (size_t i = 0; i < cl->nc_cap; i++) {
        NameCol *nc = cl->nc[i];
        if (!nc) continue;
        free(nc->idx); free(nc->val); free(nc->kind); free(nc->pos); free(nc);
    }
    free(cl->nc);
    free(cl->st); free(cl->tab); free(cl->sl); free(cl->ct); free(cl->fw);
    free(cl->ctr);
    for (size_t i = 0; i < cl->stkcap; i++) free(cl->stk[i].v);
    free(cl->stk);
    free(cl);
}
