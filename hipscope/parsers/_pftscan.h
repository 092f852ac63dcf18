/*
 * Shared by _pftscan.c (the walk, with the GIL) and _pftdecode.c (the decoding of a
 * chunk of packets into flat records, without it): the records and the growable
 * arrays that hold them. See _pftscan.c for what the scanner does and declines.
 */
#ifndef HIPSCOPE_PFTSCAN_H
#define HIPSCOPE_PFTSCAN_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK 65536

typedef struct { uint32_t off, len; } Span;

enum { D_NONE = 0, D_EVENT = 1, D_SNAP = 2, D_DESC = 3, D_OTHER = 4 };
enum { V_NONE = 0, V_BOOL, V_UINT, V_INT, V_DOUBLE, V_STR, V_PTR, V_NULL, V_STRIID };

typedef struct {
    uint64_t ts, def_track, track, name_iid;
    int64_t abs_us;
    uint32_t clock, seq, flags, def_clock, primary;
    Span name, desc;
    uint32_t intern_lo, intern_hi, cat_lo, cat_hi, cs_lo, cs_hi, ann_lo, ann_hi;
    uint32_t flow_lo, nflow[4], clk_lo, clk_hi;
    uint8_t has_ts, has_clock, cleared, dropped, kind, has_def_clock, has_def_track;
    uint8_t etype, has_track, name_kind, has_abs, has_primary;
} Pkt;

typedef struct { uint64_t iid; Span s; uint8_t kind; } Intern;
typedef struct { uint64_t name, v; Span s; uint8_t nkind, vkind; } Ann;
typedef struct { uint64_t ts, mult; uint32_t id; uint8_t incr, has_mult; } Clk;

#define VEC(T, name) T *name; size_t name##_n, name##_cap;
typedef struct {
    const uint8_t *base;
    VEC(Pkt, pk) VEC(Intern, in) VEC(uint64_t, cat) VEC(Span, cs) VEC(Ann, an)
    VEC(uint64_t, fl) VEC(Clk, ck)
    uint64_t *tmpfl[4]; size_t tmpn[4], tmpcap[4]; /* one event's flows, per kind */
    const uint8_t *data_oneof; /* bitmap of TracePacket data-oneof field numbers */
} Ctx;

#if defined(__linux__) && defined(__GLIBC__)
#include <malloc.h>
#include <sys/mman.h>
#endif
/* a big block in transparent huge pages where the kernel gives them on request (THP
   "madvise"): a fault per 2 MiB, not per 4 KiB (the column walk of 1M kernels fills
   ~0.5 GB). The whole block's pages are advised, so that its mapping is not split and
   the next realloc can still move it without copying. */
static inline void pft_huge(void *q, size_t n)
{
#if defined(MADV_HUGEPAGE) && defined(__GLIBC__)
    if (n < ((size_t)2 << 20)) return;
    uintptr_t a = (uintptr_t)q & ~(uintptr_t)4095;
    uintptr_t e = ((uintptr_t)q + malloc_usable_size(q) + 4095) & ~(uintptr_t)4095;
    (void)madvise((void *)a, e - a, MADV_HUGEPAGE); /* advice only: errors do not matter */
#else
    (void)q; (void)n;
#endif
}

static inline int grow(void **p, size_t *cap, size_t n, size_t sz)
{
    if (n < *cap) return 1;
    size_t nc = *cap ? *cap * 2 : 1024;
    void *q = realloc(*p, nc * sz);
    if (!q) return 0;
    pft_huge(q, nc * sz);
    *p = q; *cap = nc;
    return 1;
}
#define PUSH(c, name) (grow((void **)&(c)->name, &(c)->name##_cap, (c)->name##_n, \
                            sizeof(*(c)->name)) ? &(c)->name[(c)->name##_n++] : NULL)

typedef struct { size_t pos, n, used; int problem; uint8_t bad; } Frame;

/* decode packets from f->pos until CHUNK packets or the end: 0 = decline */
int pft_decode_chunk(Ctx *c, size_t size, Frame *f);

/* the decoding of the next chunk on a worker thread (inline where none can start):
   c and f are the worker's until pft_ahead_join, which returns pft_decode_chunk's result
   (it blocks: call it without the GIL) */
#ifndef _WIN32
#include <pthread.h>
#define PFT_THREADS 1
#endif
typedef struct {
    Ctx *c; size_t size; Frame *f; int dec, started;
#ifdef PFT_THREADS
    pthread_t th;
#endif
} Ahead;
void pft_ahead_start(Ahead *a, Ctx *c, size_t size, Frame *f);
int pft_ahead_join(Ahead *a);

#ifdef Py_PYTHON_H
/* ------------------------------------------------------------------ walk state (GIL) */
#define FASTN 1024
#define MAXIID (1u << 22) /* interned ids the column walk keeps in flat tables */

typedef struct { __int128 last, ref_ts, base; uint64_t mult; uint32_t ref; uint8_t present, incr; } Scoped;

typedef struct {
    uint32_t id;
    PyObject *d[4]; /* names, categories, annotation names, annotation strings */
    PyObject **fast[4]; /* d[j][iid] for iid < FASTN, borrowed from d[j] (NULL: absent) */
    uint32_t *ids[4]; size_t idcap[4]; /* column walk: iid -> string id + 1 (0: absent) */
    uint64_t def_track;
    uint32_t def_clock;
    uint8_t has_def_track, has_def_clock, valid;
    Scoped clocks[64];
} Seq;

/* column walk: one record per begun slice (layout mirrored by a numpy dtype in
   pftrace/colwalk.py) and one column per annotation name */
typedef struct {
    uint64_t track;
    int64_t t0, t1;
    uint32_t name, cat_lo, cat_n, flow_lo, flow_n, ann_lo, ann_n;
    uint8_t c0, c1, fg, pad; /* fg: 1 start has no time, 2 end has none, 4 ended */
} SliceRec;
/* the annotations of one name over the slices, in slice order */
typedef struct {
    VEC(uint32_t, idx) VEC(uint64_t, val) VEC(uint8_t, kind) VEC(uint16_t, pos)
    uint32_t last; /* idx of the last entry */
    uint8_t dup; /* the name twice on one slice */
} NameCol;
typedef struct { Span s; uint32_t hash; uint8_t mode; } Str;
typedef struct { uint64_t key; int64_t *v; size_t n, cap; uint8_t used; } Stack;

typedef struct {
    VEC(Str, st) uint32_t *tab; size_t tabcap; /* distinct strings, hashed */
    VEC(SliceRec, sl) VEC(uint32_t, ct) VEC(uint64_t, fw) VEC(uint64_t, ctr)
    Stack *stk; size_t stkcap, stkn; /* open slices per track */
    NameCol **nc; size_t nc_cap; /* by the name's string id */
    uint64_t clocks[2];
} Cols;

typedef struct {
    Seq *seqs; size_t nseq, capseq, last;
    PyObject *slices, *open, *counters, *clocks_used, *snaps, *descs, *empty_tuple, *empty_str;
    PyObject *source_clock;
    uint32_t primary;
    long long unresolved, skipped, n_begun, unmatched;
    int hipscope_made;
    Cols *cols; /* the column walk (NULL: records and dicts) */
} W;

/* _pftcols.c */
int col_intern(Cols *cl, const uint8_t *base, Seq *s, int kind, uint64_t iid, Span sp);
void col_clear(Seq *s);
int col_event(W *w, Ctx *c, Seq *s, const Pkt *k, uint64_t track, int64_t ts, uint32_t clock,
              int none);
PyObject *col_result(W *w, const uint8_t *base);
void col_free(Cols *cl);
#endif

#endif
