/*
 * hipscope.parsers._pftscan, part 4: numeric passes of the column tables
 * (hipscope/parsers/pftrace/colann.py, colbuild.py) over millions of slices, each one
 * loop without the GIL into arrays the caller allocated: factorize (codes in first-seen
 * order, hashed) and the flattening of the slices' flow ids.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "_pftscan.h"

static inline size_t hash64(uint64_t k, unsigned bits)
{
    return (size_t)((k * 0x9E3779B97F4A7C15ull) >> (64 - bits));
}

/* codes[i] = the number of distinct values before values[i] first appears; first[c] =
   where code c first appears; the number of codes, -1 out of memory */
static int64_t factorize(const int64_t *v, size_t n, int64_t *codes, int64_t *first)
{
    unsigned bits = 10;
    size_t cap = (size_t)1 << bits, used = 0;
    int64_t *keys = malloc(cap * sizeof(int64_t)), *code = malloc(cap * sizeof(int64_t));
    if (!keys || !code) { free(keys); free(code); return -1; }
    memset(code, 0xff, cap * sizeof(int64_t)); /* -1: empty */
    for (size_t i = 0; i < n; i++) {
        int64_t x = v[i];
        size_t j = hash64((uint64_t)x, bits);
        while (code[j] >= 0 && keys[j] != x) j = (j + 1) & (cap - 1);
        if (code[j] < 0) {
            keys[j] = x; code[j] = (int64_t)used; first[used++] = (int64_t)i;
            if (used * 2 > cap) { /* rehash into twice the room */
                size_t nc = cap * 2;
                int64_t *nk = malloc(nc * sizeof(int64_t)), *nv = malloc(nc * sizeof(int64_t));
                if (!nk || !nv) { free(nk); free(nv); free(keys); free(code); return -1; }
                memset(nv, 0xff, nc * sizeof(int64_t));
                for (size_t t = 0; t < cap; t++) {
                    if (code[t] < 0) continue;
                    size_t h = hash64((uint64_t)keys[t], bits + 1);
                    while (nv[h] >= 0) h = (h + 1) & (nc - 1);
                    nk[h] = keys[t]; nv[h] = code[t];
                }
                free(keys); free(code);
                keys = nk; code = nv; cap = nc; bits++;
            }
            codes[i] = (int64_t)used - 1;
        } else codes[i] = code[j];
    }
    free(keys); free(code);
    return (int64_t)used;
}

/* factorize(values int64, codes int64 out, first int64 out) -> number of codes */
PyObject *pft_factorize(PyObject *self, PyObject *args)
{
    Py_buffer a, c, f;
    if (!PyArg_ParseTuple(args, "y*w*w*", &a, &c, &f)) return NULL;
    PyObject *out = NULL;
    size_t n = (size_t)a.len / 8;
    if (c.len != a.len || f.len != a.len || a.len % 8) {
        PyErr_SetString(PyExc_ValueError, "factorize: buffer sizes differ");
    } else {
        int64_t k;
        Py_BEGIN_ALLOW_THREADS
        k = factorize(a.buf, n, c.buf, f.buf);
        Py_END_ALLOW_THREADS
        out = k < 0 ? PyErr_NoMemory() : PyLong_FromLongLong((long long)k);
    }
    PyBuffer_Release(&a); PyBuffer_Release(&c); PyBuffer_Release(&f);
    return out;
}

/* flows(slices, rows int64, all flows uint64, fv uint64 out, owner int64 out) -> None:
   the flow ids of slices[rows[i]] in order, and i beside each (colbuild._flows) */
PyObject *pft_flows(PyObject *self, PyObject *args)
{
    Py_buffer b[5];
    memset(b, 0, sizeof(b));
    if (!PyArg_ParseTuple(args, "y*y*y*w*w*", &b[0], &b[1], &b[2], &b[3], &b[4])) return NULL;
    const SliceRec *sl = b[0].buf;
    const int64_t *rows = b[1].buf;
    const uint64_t *all = b[2].buf;
    uint64_t *fv = b[3].buf;
    int64_t *owner = b[4].buf;
    size_t ns = (size_t)b[0].len / sizeof(SliceRec), nr = (size_t)b[1].len / 8;
    size_t nall = (size_t)b[2].len / 8, nout = (size_t)b[3].len / 8, o = 0;
    int bad = (size_t)b[4].len / 8 != nout;
    Py_BEGIN_ALLOW_THREADS
    for (size_t i = 0; i < nr && !bad; i++) {
        if (rows[i] < 0 || (size_t)rows[i] >= ns) { bad = 1; break; }
        const SliceRec *r = &sl[rows[i]];
        if ((size_t)r->flow_lo + r->flow_n > nall || o + r->flow_n > nout) { bad = 1; break; }
        for (uint32_t j = 0; j < r->flow_n; j++) { fv[o] = all[r->flow_lo + j]; owner[o++] = (int64_t)i; }
    }
    if (o != nout) bad = 1;
    Py_END_ALLOW_THREADS
    for (int j = 0; j < 5; j++) PyBuffer_Release(&b[j]);
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "flows: rows, flows and outputs do not agree");
        return NULL;
    }
    Py_RETURN_NONE;
}

/* ended(slices, keep int64 out, t0 int64 out, t1 int64 out) -> n: the slices that ended
   whole ((fg & 7) == 4, colwalk.Columns.finish), their index and times, in order */
PyObject *pft_ended(PyObject *self, PyObject *args)
{
    Py_buffer b[4];
    memset(b, 0, sizeof(b));
    if (!PyArg_ParseTuple(args, "y*w*w*w*", &b[0], &b[1], &b[2], &b[3])) return NULL;
    const SliceRec *sl = b[0].buf;
    size_t ns = (size_t)b[0].len / sizeof(SliceRec), n = 0;
    int64_t *keep = b[1].buf, *t0 = b[2].buf, *t1 = b[3].buf;
    int bad = (size_t)b[1].len / 8 < ns || b[2].len != b[1].len || b[3].len != b[1].len;
    if (!bad) {
        Py_BEGIN_ALLOW_THREADS
        for (size_t i = 0; i < ns; i++)
            if ((sl[i].fg & 7) == 4) { keep[n] = (int64_t)i; t0[n] = sl[i].t0; t1[n++] = sl[i].t1; }
        Py_END_ALLOW_THREADS
    }
    for (int j = 0; j < 4; j++) PyBuffer_Release(&b[j]);
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "ended: outputs shorter than the slices");
        return NULL;
    }
    return PyLong_FromSize_t(n);
}
