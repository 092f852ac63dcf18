/*
 * hipscope.parsers._pftscan: a wire-format walk of a Perfetto trace (the Trace proto:
 * repeated TracePacket packet = 1) for hipscope/parsers/pftrace/fast.py. It does what
 * hipscope/parsers/pftrace/walk.py does with the protobuf classes, for the fields that
 * walk reads, and gives back the same Python structures (slices, open slices, counts).
 *
 * The file is taken in chunks of packets: a chunk is decoded into flat C records with
 * the GIL released (framing, TracePacket, TrackEvent, DebugAnnotation, InternedData,
 * ClockSnapshot, TracePacketDefaults), then walked in order with the GIL held (the
 * sequence-scoped interned state, SEQ_INCREMENTAL_STATE_CLEARED, clocks, slice
 * pairing per track), so the records' memory is two chunks'. Decoding needs no state
 * (interned ids are only looked up by the walk), so the next chunk is decoded on a
 * worker thread while the walk takes the current one; the walk is one thread: interned
 * ids are defined by earlier packets of the same sequence, so a packet range cannot be
 * resolved without every packet before it.
 *
 * It declines (returns None, and the protobuf path reads the file exactly as before)
 * whatever it does not know or where protobuf's merge rules would matter: a malformed
 * field, a group, field number 0, a field walk reads given twice in one message, both
 * members of a oneof walk reads, two data members in one packet, nested / dict / array /
 * proto annotation values, invalid UTF-8, timestamp_delta_us, clock ids over 127 or
 * timestamps that overflow int64 after conversion. Track descriptors come back as byte
 * ranges that Python decodes (pftrace/wire.py, else the protobuf class; there are few).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include "_pftscan.h"

/* ------------------------------------------------------------------ walk (GIL held) */
static Seq *seq_of(W *w, uint32_t id)
{
    if (w->nseq && w->seqs[w->last].id == id) return &w->seqs[w->last];
    for (size_t i = 0; i < w->nseq; i++)
        if (w->seqs[i].id == id) { w->last = i; return &w->seqs[i]; }
    if (!grow((void **)&w->seqs, &w->capseq, w->nseq, sizeof(Seq))) return NULL;
    Seq *s = &w->seqs[w->nseq];
    memset(s, 0, sizeof(*s));
    s->id = id; s->valid = 1;
    w->last = w->nseq++; /* counted first: w_free releases what was made */
    for (int j = 0; j < 4; j++)
        if (!(s->d[j] = PyDict_New()) || !(s->fast[j] = calloc(FASTN, sizeof(PyObject *))))
            return NULL;
    return s;
}

static PyObject *str_of(const uint8_t *base, Span s, const char *errors)
{
    return PyUnicode_DecodeUTF8((const char *)base + s.off, s.len, errors);
}

/* d[key] lookup with a uint64 key; a borrowed reference or NULL (absent); err on failure */
static PyObject *iget(PyObject *d, uint64_t key, int *err);

static PyObject *sget(Seq *s, int j, uint64_t key, int *err)
{
    return key < FASTN ? s->fast[j][key] : iget(s->d[j], key, err);
}

static PyObject *iget(PyObject *d, uint64_t key, int *err)
{
    PyObject *k = PyLong_FromUnsignedLongLong(key);
    if (!k) { *err = 1; return NULL; }
    PyObject *v = PyDict_GetItemWithError(d, k);
    Py_DECREF(k);
    if (!v && PyErr_Occurred()) *err = 1;
    return v;
}

static int w_intern(W *w, Ctx *c, Seq *s, const Pkt *k)
{
    for (int kind = 0; kind < 4; kind++) /* walk's order: names, categories, ... */
        for (uint32_t i = k->intern_lo; i < k->intern_hi; i++) {
            const Intern *it = &c->in[i];
            if (it->kind != kind) continue;
            PyObject *key = PyLong_FromUnsignedLongLong(it->iid);
            PyObject *v = str_of(c->base, it->s, kind == 3 ? "replace" : NULL);
            int bad = !key || !v || PyDict_SetItem(s->d[kind], key, v) < 0;
            if (!bad && it->iid < FASTN) s->fast[kind][it->iid] = v; /* the dict holds it */
            if (!bad && w->cols && !col_intern(w->cols, c->base, s, kind, it->iid, it->s)) bad = 1;
            if (!bad && kind == 1) {
                if (PyUnicode_CompareWithASCIIString(v, "hipscope") == 0) w->hipscope_made = 1;
                else if (it->s.len >= 15 && !memcmp(c->base + it->s.off, "hipscope-clock:", 15)) {
                    PyObject *sc = PyUnicode_Substring(v, 15, PY_SSIZE_T_MAX);
                    if (!sc) bad = 1;
                    else Py_XSETREF(w->source_clock, sc);
                }
            }
            Py_XDECREF(key); Py_XDECREF(v);
            if (bad) return 0;
        }
    return 1;
}

static int w_snap(W *w, Ctx *c, Seq *s, const Pkt *k)
{
    if (k->has_primary) w->primary = k->primary;
    PyObject *builtin = PyDict_New();
    if (!builtin) return 0;
    uint32_t first = 0;
    int nb = 0, nscoped = 0;
    for (uint32_t i = k->clk_lo; i < k->clk_hi; i++) {
        const Clk *ck = &c->ck[i];
        if (ck->id >= 64) { nscoped++; continue; }
        PyObject *key = PyLong_FromUnsignedLong(ck->id), *v = PyLong_FromUnsignedLongLong(ck->ts);
        int bad = !key || !v || PyDict_SetItem(builtin, key, v) < 0;
        Py_XDECREF(key); Py_XDECREF(v);
        if (bad) { Py_DECREF(builtin); return 0; }
        if (!nb++) first = ck->id;
    }
    if (nb && PyList_Append(w->snaps, builtin) < 0) { Py_DECREF(builtin); return 0; }
    Py_DECREF(builtin);
    if (!nscoped || !nb) return 1;
    uint32_t ref = first;
    uint64_t ref_ts = 0;
    for (uint32_t i = k->clk_lo; i < k->clk_hi; i++)
        if (c->ck[i].id == w->primary) ref = w->primary;
    for (uint32_t i = k->clk_lo; i < k->clk_hi; i++) /* the dict keeps the last value */
        if (c->ck[i].id == ref) ref_ts = c->ck[i].ts;
    for (uint32_t i = k->clk_lo; i < k->clk_hi; i++) {
        const Clk *ck = &c->ck[i];
        if (ck->id < 64) continue;
        Scoped *sc = &s->clocks[ck->id - 64];
        sc->present = 1; sc->last = ck->ts; sc->base = ck->ts; sc->ref_ts = ref_ts;
        sc->mult = ck->mult ? ck->mult : 1; sc->incr = ck->incr; sc->ref = ref;
    }
    return 1;
}

/* the event's time: 1 known (*none: no timestamp), -1 an unknown scoped clock, 0 decline */
static int when_of(W *w, Seq *s, const Pkt *k, int64_t *out, uint32_t *clk, int *none)
{
    __int128 ts = 0;
    uint32_t clock = w->primary;
    *none = 0;
    if (k->has_ts) {
        ts = k->ts;
        clock = k->has_clock ? k->clock : s->has_def_clock ? s->def_clock : w->primary;
        if (clock >= 64 && clock <= 127) {
            Scoped *sc = &s->clocks[clock - 64];
            if (!sc->present) return -1;
            if (sc->incr) { sc->last += ts; ts = sc->last; }
            ts = sc->ref_ts + (ts - sc->base) * (__int128)sc->mult;
            clock = sc->ref;
        } else if (clock > 127) return 0;
    } else if (k->has_abs) {
        ts = (__int128)k->abs_us * 1000;
    } else *none = 1;
    if (!*none && (ts > INT64_MAX || ts < INT64_MIN)) return 0;
    *out = (int64_t)ts; *clk = clock;
    return 1;
}

/* the event's (ts, clock) as a new tuple; Py_None for an unknown scoped clock; NULL: decline */
static PyObject *w_when(W *w, Seq *s, const Pkt *k)
{
    int64_t ts;
    uint32_t clock;
    int none, st = when_of(w, s, k, &ts, &clock, &none);
    if (st < 0) Py_RETURN_NONE;
    if (!st) return NULL;
    PyObject *c = PyLong_FromUnsignedLong(clock);
    if (!c || PySet_Add(w->clocks_used, c) < 0) { Py_XDECREF(c); return NULL; }
    PyObject *t = none ? Py_NewRef(Py_None) : PyLong_FromLongLong((long long)ts);
    if (!t) { Py_DECREF(c); return NULL; }
    PyObject *r = PyTuple_Pack(2, t, c);
    Py_DECREF(t);
    Py_DECREF(c);
    return r;
}

static PyObject *w_ann(W *w, Ctx *c, Seq *s, const Pkt *k)
{
    PyObject *ann = PyDict_New();
    int err = 0;
    if (!ann) return NULL;
    for (uint32_t i = k->ann_lo; i < k->ann_hi; i++) {
        const Ann *a = &c->an[i];
        PyObject *name, *v = NULL;
        if (a->nkind == 1 && a->name) {
            name = sget(s, 2, a->name, &err);
            if (!name) { if (err) goto fail; continue; }
            Py_INCREF(name);
        } else if (a->nkind == 2) {
            if (!(name = str_of(c->base, a->s, NULL))) goto fail;
        } else name = Py_NewRef(w->empty_str);
        Span sp = {(uint32_t)(a->v >> 32), (uint32_t)a->v};
        double dv;
        switch (a->vkind) {
        case V_BOOL: v = PyBool_FromLong(a->v != 0); break;
        case V_UINT: case V_PTR: v = PyLong_FromUnsignedLongLong(a->v); break;
        case V_INT: v = PyLong_FromLongLong((long long)a->v); break;
        case V_DOUBLE: memcpy(&dv, &a->v, 8); v = PyFloat_FromDouble(dv); break;
        case V_STR: v = str_of(c->base, sp, NULL); break;
        case V_STRIID:
            v = sget(s, 3, a->v, &err);
            if (err) { Py_DECREF(name); goto fail; }
            v = Py_NewRef(v ? v : Py_None);
            break;
        default: v = Py_NewRef(Py_None);
        }
        int bad = !v || PyDict_SetItem(ann, name, v) < 0;
        Py_DECREF(name); Py_XDECREF(v);
        if (bad) goto fail;
    }
    return ann;
fail:
    Py_DECREF(ann);
    return NULL;
}

static PyObject *w_cats(W *w, Ctx *c, Seq *s, const Pkt *k)
{
    int err = 0;
    if (k->cat_hi > k->cat_lo) {
        PyObject *t = PyTuple_New(k->cat_hi - k->cat_lo);
        if (!t) return NULL;
        for (uint32_t i = k->cat_lo; i < k->cat_hi; i++) {
            PyObject *v = sget(s, 1, c->cat[i], &err);
            if (err) { Py_DECREF(t); return NULL; }
            PyTuple_SET_ITEM(t, i - k->cat_lo, Py_NewRef(v ? v : w->empty_str));
        }
        return t;
    }
    PyObject *t = PyTuple_New(k->cs_hi - k->cs_lo);
    if (!t) return NULL;
    for (uint32_t i = k->cs_lo; i < k->cs_hi; i++) {
        PyObject *v = str_of(c->base, c->cs[i], NULL);
        if (!v) { Py_DECREF(t); return NULL; }
        PyTuple_SET_ITEM(t, i - k->cs_lo, v);
    }
    return t;
}

static PyObject *w_flows(Ctx *c, const Pkt *k)
{
    uint32_t lo = k->flow_lo, n = k->nflow[0] + k->nflow[1];
    if (!n) { lo += n; n = k->nflow[2] + k->nflow[3]; }
    PyObject *t = PyTuple_New(n);
    if (!t) return NULL;
    for (uint32_t i = 0; i < n; i++) {
        PyObject *v = PyLong_FromUnsignedLongLong(c->fl[lo + i]);
        if (!v) { Py_DECREF(t); return NULL; }
        PyTuple_SET_ITEM(t, i, v);
    }
    return t;
}

/* a new list [track, when, None, name, cats, ann, flows, n] (steals nothing) */
static PyObject *record(PyObject *track, PyObject *when, PyObject *name, PyObject *cats,
                        PyObject *ann, PyObject *flows, PyObject *n)
{
    PyObject *items[8] = {track, when, Py_None, name, cats, ann, flows, n};
    PyObject *l = PyList_New(8);
    if (!l) return NULL;
    for (int i = 0; i < 8; i++) PyList_SET_ITEM(l, i, Py_NewRef(items[i]));
    return l;
}

static int w_push_open(W *w, PyObject *track, PyObject *rec)
{
    PyObject *stack = PyDict_GetItemWithError(w->open, track);
    if (!stack) {
        if (PyErr_Occurred() || !(stack = PyList_New(0))) return 0;
        int bad = PyDict_SetItem(w->open, track, stack) < 0;
        Py_DECREF(stack);
        if (bad) return 0;
    }
    return PyList_Append(stack, rec) == 0;
}

static int w_begin(W *w, Ctx *c, Seq *s, const Pkt *k, PyObject *track, PyObject *when)
{
    PyObject *name;
    int err = 0;
    if (k->name_kind == 1 && k->name_iid) {
        name = sget(s, 0, k->name_iid, &err);
        if (err) return 0;
        if (!name) {
            w->unresolved++;
            if (k->etype != 1) return 1;
            PyObject *ph = PyList_New(8), *nd = PyDict_New();
            if (!ph || !nd) { Py_XDECREF(ph); Py_XDECREF(nd); return 0; }
            PyObject *it[8] = {track, Py_None, Py_None, Py_None, w->empty_tuple, nd,
                               w->empty_tuple, NULL};
            it[7] = PyLong_FromLong(-1);
            if (!it[7]) { Py_DECREF(ph); Py_DECREF(nd); return 0; }
            for (int i = 0; i < 8; i++) PyList_SET_ITEM(ph, i, i == 7 ? it[i] : Py_NewRef(it[i]));
            Py_DECREF(nd);
            int ok = w_push_open(w, track, ph);
            Py_DECREF(ph);
            return ok;
        }
        Py_INCREF(name);
    } else if (k->name_kind == 2) {
        if (!(name = str_of(c->base, k->name, NULL))) return 0;
    } else name = Py_NewRef(w->empty_str);
    PyObject *cats = w_cats(w, c, s, k), *ann = w_ann(w, c, s, k), *flows = w_flows(c, k);
    PyObject *n = PyLong_FromLongLong(w->n_begun++), *rec = NULL;
    int ok = 0;
    if (cats && ann && flows && n && (rec = record(track, when, name, cats, ann, flows, n))) {
        if (k->etype == 3) {
            PyList_SetItem(rec, 2, Py_NewRef(when));
            ok = PyList_Append(w->slices, rec) == 0;
        } else ok = w_push_open(w, track, rec);
    }
    Py_DECREF(name); Py_XDECREF(cats); Py_XDECREF(ann); Py_XDECREF(flows); Py_XDECREF(n);
    Py_XDECREF(rec);
    return ok;
}

static int w_event(W *w, Ctx *c, Seq *s, const Pkt *k)
{
    if (w->cols) {
        int64_t ts;
        uint32_t clock;
        int none, st = when_of(w, s, k, &ts, &clock, &none);
        if (st < 0) { w->unresolved++; return 1; }
        if (!st) return 0;
        w->cols->clocks[clock >> 6] |= 1ull << (clock & 63);
        return col_event(w, c, s, k, k->has_track ? k->track : s->has_def_track ?
                         s->def_track : 0, ts, clock, none);
    }
    PyObject *when = w_when(w, s, k);
    if (!when) return 0;
    if (when == Py_None) { Py_DECREF(when); w->unresolved++; return 1; }
    uint64_t tr = k->has_track ? k->track : s->has_def_track ? s->def_track : 0;
    PyObject *track = PyLong_FromUnsignedLongLong(tr);
    int ok = track != NULL;
    if (ok && k->etype == 2) {
        PyObject *stack = PyDict_GetItemWithError(w->open, track);
        if (!stack && PyErr_Occurred()) ok = 0;
        else if (!stack || !PyList_GET_SIZE(stack)) w->unmatched++;
        else {
            Py_ssize_t last = PyList_GET_SIZE(stack) - 1;
            PyObject *rec = Py_NewRef(PyList_GET_ITEM(stack, last));
            ok = PyList_SetSlice(stack, last, last + 1, NULL) == 0 &&
                 PyList_SetItem(rec, 2, Py_NewRef(when)) == 0 &&
                 PyList_Append(w->slices, rec) == 0;
            Py_DECREF(rec);
        }
    } else if (ok && k->etype == 4) {
        PyObject *cur = PyDict_GetItemWithError(w->counters, track);
        long long n = 0;
        if (!cur && PyErr_Occurred()) ok = 0;
        else {
            if (cur) n = PyLong_AsLongLong(cur);
            PyObject *nv = PyLong_FromLongLong(n + 1);
            ok = nv && PyDict_SetItem(w->counters, track, nv) == 0;
            Py_XDECREF(nv);
        }
    } else if (ok && (k->etype == 1 || k->etype == 3)) {
        ok = w_begin(w, c, s, k, track, when);
    }
    Py_XDECREF(track);
    Py_DECREF(when);
    return ok;
}

static int w_packet(W *w, Ctx *c, const Pkt *k)
{
    Seq *s = seq_of(w, k->seq);
    if (!s) return 0;
    if ((k->flags & 1) || k->cleared) {
        for (int j = 0; j < 4; j++) {
            memset(s->fast[j], 0, FASTN * sizeof(PyObject *));
            PyDict_Clear(s->d[j]);
        }
        col_clear(s);
        s->has_def_track = s->has_def_clock = 0;
        s->valid = 1;
    } else if (k->dropped) s->valid = 0;
    if (k->has_def_clock) { s->has_def_clock = 1; s->def_clock = k->def_clock; }
    if (k->has_def_track) { s->has_def_track = 1; s->def_track = k->def_track; }
    if (!w_intern(w, c, s, k)) return 0;
    if (k->kind == D_SNAP) return w_snap(w, c, s, k);
    if (k->kind == D_DESC) {
        PyObject *t = Py_BuildValue("(kk)", (unsigned long)k->desc.off, (unsigned long)k->desc.len);
        int ok = t && PyList_Append(w->descs, t) == 0;
        Py_XDECREF(t);
        return ok;
    }
    if (k->kind != D_EVENT) return 1;
    if ((k->flags & 2) && !s->valid) { w->skipped++; return 1; }
    return w_event(w, c, s, k);
}

static void w_free(W *w)
{
    for (size_t i = 0; i < w->nseq; i++)
        for (int j = 0; j < 4; j++) {
            Py_XDECREF(w->seqs[i].d[j]);
            free(w->seqs[i].fast[j]);
            free(w->seqs[i].ids[j]);
        }
    if (w->cols) col_free(w->cols);
    free(w->seqs);
    Py_XDECREF(w->slices); Py_XDECREF(w->open); Py_XDECREF(w->counters);
    Py_XDECREF(w->clocks_used); Py_XDECREF(w->snaps); Py_XDECREF(w->descs);
    Py_XDECREF(w->empty_tuple); Py_XDECREF(w->empty_str); Py_XDECREF(w->source_clock);
}

static void c_free(Ctx *c)
{
    free(c->pk); free(c->in); free(c->cat); free(c->cs); free(c->an); free(c->fl); free(c->ck);
    for (int w = 0; w < 4; w++) free(c->tmpfl[w]);
}

/* wait for the chunk started by pft_ahead_start, the GIL released: its result */
static int ahead_wait(Ahead *a)
{
    int dec;
    Py_BEGIN_ALLOW_THREADS
    dec = pft_ahead_join(a);
    Py_END_ALLOW_THREADS
    return dec;
}

/* walk(data, data_oneof, primary, tick) -> tuple, or None (declined); tick(fraction)
   is called after each chunk (with the GIL): what it raises (Cancelled) propagates */
static PyObject *py_walk(PyObject *self, PyObject *args)
{
    Py_buffer buf, oneof;
    unsigned int primary;
    PyObject *tick;
    int columns = 0;
    if (!PyArg_ParseTuple(args, "y*y*IO|p", &buf, &oneof, &primary, &tick, &columns))
        return NULL;
    if (oneof.len < 128 || buf.len > (Py_ssize_t)UINT32_MAX) {
        PyBuffer_Release(&buf); PyBuffer_Release(&oneof);
        Py_RETURN_NONE;
    }
    Ctx cx[2];
    W w;
    memset(cx, 0, sizeof(cx));
    memset(&w, 0, sizeof(w));
    for (int i = 0; i < 2; i++) { cx[i].base = buf.buf; cx[i].data_oneof = oneof.buf; }
    w.primary = primary;
    static Cols cols0;
    Cols *cl = columns ? malloc(sizeof(Cols)) : NULL;
    if (cl) *cl = cols0;
    w.cols = cl;
    int ok = (w.slices = PyList_New(0)) && (w.open = PyDict_New()) &&
             (w.counters = PyDict_New()) && (w.clocks_used = PySet_New(NULL)) &&
             (w.snaps = PyList_New(0)) && (w.descs = PyList_New(0)) &&
             (w.empty_tuple = PyTuple_New(0)) && (w.empty_str = PyUnicode_FromString("")) &&
             (w.source_clock = Py_NewRef(Py_None)) && (!columns || cl);
    Frame f = {0, 0, 0, 0, 0};
    int raised = 0, cur = 0;
    size_t size = (size_t)buf.len;
    Ahead ahead;
    memset(&ahead, 0, sizeof(ahead));
    if (ok && size) {
        Py_BEGIN_ALLOW_THREADS
        ok = pft_decode_chunk(&cx[0], size, &f);
        Py_END_ALLOW_THREADS
    }
    int more = ok && size > 0;
    while (more) {
        Ctx *c = &cx[cur];
        double done = (double)f.pos / (double)(size ? size : 1);
        int next = f.pos < size && !f.problem; /* the frame is the worker's until waited */
        if (next) pft_ahead_start(&ahead, &cx[1 - cur], size, &f);
        for (size_t i = 0; ok && i < c->pk_n; i++) ok = w_packet(&w, c, &c->pk[i]);
        if (ok && tick != Py_None) {
            PyObject *r = PyObject_CallFunction(tick, "d", done);
            if (!r) { raised = 1; ok = 0; }
            Py_XDECREF(r);
        }
        if (next && !ahead_wait(&ahead)) ok = 0;
        more = ok && next;
        cur = 1 - cur;
    }
    PyObject *out = NULL;
    if (ok && cl) {
        out = col_result(&w, cx[0].base);
        if (out) {
            PyObject *o = Py_BuildValue("(nniiNOIOLLLLiOO)", (Py_ssize_t)f.n, (Py_ssize_t)f.used,
                                        f.problem, (int)f.bad, out, w.snaps, w.primary,
                                        w.clocks_used, w.unresolved, w.skipped, w.n_begun,
                                        w.unmatched, w.hipscope_made, w.source_clock, w.descs);
            out = o;
        }
    } else if (ok) {
        out = Py_BuildValue("(nniiOOOOOILLLLiOO)", (Py_ssize_t)f.n, (Py_ssize_t)f.used,
                            f.problem, (int)f.bad, w.slices, w.open, w.counters,
                            w.clocks_used, w.snaps, w.primary, w.unresolved, w.skipped,
                            w.n_begun, w.unmatched, w.hipscope_made, w.source_clock, w.descs);
    }
    if (!out && !raised) { PyErr_Clear(); out = Py_NewRef(Py_None); }
    w_free(&w);
    c_free(&cx[0]);
    c_free(&cx[1]);
    PyBuffer_Release(&buf);
    PyBuffer_Release(&oneof);
    return out;
}

/* _pftcols.c: integer annotation columns of many dicts, for pftrace/tables.py */
PyObject *pft_ann_ints(PyObject *self, PyObject *args);
PyObject *pft_place_ints(PyObject *self, PyObject *args);
PyObject *pft_factorize(PyObject *self, PyObject *args); /* _pftnum.c */
PyObject *pft_flows(PyObject *self, PyObject *args);
PyObject *pft_ended(PyObject *self, PyObject *args);

static PyMethodDef methods[] = {
    {"ann_ints", pft_ann_ints, METH_VARARGS,
     "ann_ints(dicts, keys, defaults) -> (columns, exact)"},
    {"place_ints", pft_place_ints, METH_VARARGS,
     "place_ints(idx, kind, val, slot, v, ok, given) -> (placed, flags)"},
    {"factorize", pft_factorize, METH_VARARGS, "factorize(values, codes, first) -> codes"},
    {"flows", pft_flows, METH_VARARGS, "flows(slices, rows, flows, fv, owner) -> None"},
    {"ended", pft_ended, METH_VARARGS, "ended(slices, keep, t0, t1) -> count"},
    {"walk", py_walk, METH_VARARGS,
     "walk(data, data_oneof_bitmap, primary_clock, tick, columns=False) -> the walk's "
     "results (records, or columns), or None"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_pftscan",
                                    "Perfetto TracePacket wire-format walk", -1, methods,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__pftscan(void) { return PyModule_Create(&module); }
