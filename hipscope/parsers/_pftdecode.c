/*
 * hipscope.parsers._pftscan, part 1: the wire format. A chunk of Trace.packet records
 * is decoded into the flat records of _pftscan.h (framing, TracePacket, TrackEvent,
 * DebugAnnotation, InternedData, ClockSnapshot, TracePacketDefaults) touching no
 * Python object, so that it runs with the GIL released. 0 from a decoder = decline.
 */
#include "_pftscan.h"

/* ------------------------------------------------------------------ wire */
#if defined(__GNUC__)
#define HOT static inline __attribute__((always_inline))
#else
#define HOT static inline
#endif

HOT int varint(const uint8_t **pp, const uint8_t *end, uint64_t *out)
{
    const uint8_t *p = *pp;
    uint64_t r = 0;
    if (p < end && !(*p & 0x80)) { *out = *p; *pp = p + 1; return 1; } /* one byte: most */
    for (int i = 0; i < 10; i++) {
        if (p >= end) return 0;
        uint8_t b = *p++;
        if (i == 9 && b > 1) return 0; /* beyond 64 bits */
        r |= (uint64_t)(b & 0x7F) << (7 * i);
        if (!(b & 0x80)) { *pp = p; *out = r; return 1; }
    }
    return 0;
}

typedef struct { const uint8_t *p, *end; uint32_t field; int wire; uint64_t v; Span s; } Rd;

/* next field: 1 ok, 0 end of message, -1 malformed */
HOT int next(Rd *r, const uint8_t *base)
{
    if (r->p >= r->end) return 0;
    uint64_t key;
    if (!varint(&r->p, r->end, &key)) return -1;
    if ((key >> 3) == 0 || (key >> 3) > 0x1FFFFFFF) return -1;
    r->field = (uint32_t)(key >> 3);
    r->wire = (int)(key & 7);
    switch (r->wire) {
    case 0: return varint(&r->p, r->end, &r->v) ? 1 : -1;
    case 1:
        if (r->end - r->p < 8) return -1;
        memcpy(&r->v, r->p, 8); r->p += 8; return 1;
    case 5: {
        uint32_t w;
        if (r->end - r->p < 4) return -1;
        memcpy(&w, r->p, 4); r->v = w; r->p += 4; return 1;
    }
    case 2: {
        uint64_t n;
        if (!varint(&r->p, r->end, &n) || n > (uint64_t)(r->end - r->p)) return -1;
        r->s.off = (uint32_t)(r->p - base); r->s.len = (uint32_t)n; r->p += n;
        return 1;
    }
    default: return -1;
    }
}

static Rd sub(const Rd *r, const uint8_t *base)
{
    Rd s = {base + r->s.off, base + r->s.off + r->s.len, 0, 0, 0, {0, 0}};
    return s;
}

/* "seen" bit per field of one message: a field walk reads given twice -> decline */
#define ONCE(mask, bit) do { if ((mask) & (1u << (bit))) return 0; (mask) |= 1u << (bit); } while (0)

/* ------------------------------------------------------------------ decode (no GIL) */
static int d_intern(Ctx *c, Rd *r)
{
    Rd m = sub(r, c->base), e;
    int st;
    while ((st = next(&m, c->base)) > 0) {
        int kind = m.field == 2 ? 0 : m.field == 1 ? 1 : m.field == 3 ? 2 : m.field == 29 ? 3 : -1;
        if (kind < 0) continue;
        if (m.wire != 2) return 0;
        Intern *it = PUSH(c, in);
        if (!it) return 0;
        it->kind = (uint8_t)kind; it->iid = 0; it->s.off = 0; it->s.len = 0;
        e = sub(&m, c->base);
        unsigned seen = 0;
        while ((st = next(&e, c->base)) > 0) {
            if (e.field == 1) { if (e.wire != 0) return 0; ONCE(seen, 1); it->iid = e.v; }
            else if (e.field == 2) { if (e.wire != 2) return 0; ONCE(seen, 2); it->s = e.s; }
        }
        if (st < 0) return 0;
    }
    return st == 0;
}

/* the common annotation, name_iid then a bool/uint/int value (08 nn 10|18|20 vv), read
   without the general field loop; 0: not that shape (nothing is consumed) */
static int d_ann_iid_int(Ann *a, const uint8_t *p, const uint8_t *end)
{
    uint64_t name, v;
    if (p >= end || *p != 0x08) return 0;
    p++;
    if (!varint(&p, end, &name) || end - p < 2) return 0;
    uint8_t key = *p++;
    int vk = key == 0x10 ? V_BOOL : key == 0x18 ? V_UINT : key == 0x20 ? V_INT : 0;
    if (!vk || !varint(&p, end, &v) || p != end) return 0;
    a->nkind = 1; a->name = name; a->vkind = (uint8_t)vk; a->v = v;
    return 1;
}

static int d_ann(Ctx *c, Rd *r)
{
    Rd m = sub(r, c->base);
    Ann *a = PUSH(c, an);
    if (!a) return 0;
    a->name = a->v = 0; a->s.off = a->s.len = 0; a->nkind = a->vkind = 0; /* no memset:
                                                   gcc's rep stos cost most of decoding */
    if (d_ann_iid_int(a, m.p, m.end)) return 1;
    int st;
    unsigned seen = 0;
    while ((st = next(&m, c->base)) > 0) {
        uint32_t f = m.field;
        if (f == 1 || f == 10) {
            ONCE(seen, 0);
            if (f == 1) { if (m.wire != 0) return 0; a->nkind = 1; a->name = m.v; }
            else { if (m.wire != 2) return 0; a->nkind = 2; a->s = m.s; }
            continue;
        }
        int vk = f == 2 ? V_BOOL : f == 3 ? V_UINT : f == 4 ? V_INT : f == 5 ? V_DOUBLE :
                 f == 6 ? V_STR : f == 7 ? V_PTR : f == 9 ? V_NULL : f == 17 ? V_STRIID : -1;
        if (vk < 0) return 0; /* nested / dict / array / proto values: the protobuf path */
        ONCE(seen, 1);
        int want = vk == V_DOUBLE ? 1 : (vk == V_STR || vk == V_NULL) ? 2 : 0;
        if (m.wire != want) return 0;
        a->vkind = (uint8_t)vk;
        a->v = want == 2 ? ((uint64_t)m.s.off << 32) | m.s.len : m.v;
    }
    return st == 0;
}

static int flow_push(Ctx *c, int which, uint64_t v)
{
    if (!grow((void **)&c->tmpfl[which], &c->tmpcap[which], c->tmpn[which], sizeof(uint64_t)))
        return 0;
    c->tmpfl[which][c->tmpn[which]++] = v;
    return 1;
}

static int d_flow(Ctx *c, Rd *r, int which, int fixed)
{
    /* packed or not; collected per kind so that the order is flow_ids, terminating */
    if (r->wire == 2) {
        Rd m = sub(r, c->base);
        while (m.p < m.end) {
            uint64_t v;
            if (fixed) {
                if (m.end - m.p < 8) return 0;
                memcpy(&v, m.p, 8); m.p += 8;
            } else if (!varint(&m.p, m.end, &v)) return 0;
            if (!flow_push(c, which, v)) return 0;
        }
        return 1;
    }
    if (r->wire != (fixed ? 1 : 0)) return 0;
    return flow_push(c, which, r->v);
}

static int d_event(Ctx *c, Rd *r, Pkt *k)
{
    Rd m = sub(r, c->base);
    int st;
    unsigned seen = 0;
    k->ann_lo = k->ann_hi = (uint32_t)c->an_n;
    k->cat_lo = k->cat_hi = (uint32_t)c->cat_n;
    k->cs_lo = k->cs_hi = (uint32_t)c->cs_n;
    memset(c->tmpn, 0, sizeof(c->tmpn));
    while ((st = next(&m, c->base)) > 0) {
        switch (m.field) {
        case 9: if (m.wire != 0) return 0; ONCE(seen, 0); k->etype = (uint8_t)(m.v <= 4 ? m.v : 0); break;
        case 11: if (m.wire != 0) return 0; ONCE(seen, 1); k->has_track = 1; k->track = m.v; break;
        case 10: if (m.wire != 0) return 0; ONCE(seen, 2); k->name_kind = 1; k->name_iid = m.v; break;
        case 23: if (m.wire != 2) return 0; ONCE(seen, 2); k->name_kind = 2; k->name = m.s; break;
        case 16: if (m.wire != 0) return 0; ONCE(seen, 3); k->has_abs = 1; k->abs_us = (int64_t)m.v; break;
        case 1: return 0; /* timestamp_delta_us */
        case 3:
            if (m.wire == 2) {
                Rd pk = sub(&m, c->base);
                while (pk.p < pk.end) {
                    uint64_t v, *d;
                    if (!varint(&pk.p, pk.end, &v) || !(d = PUSH(c, cat))) return 0;
                    *d = v;
                }
            } else {
                uint64_t *d;
                if (m.wire != 0 || !(d = PUSH(c, cat))) return 0;
                *d = m.v;
            }
            break;
        case 22: {
            Span *d;
            if (m.wire != 2 || !(d = PUSH(c, cs))) return 0;
            *d = m.s;
            break;
        }
        case 4: if (m.wire != 2 || !d_ann(c, &m)) return 0; break;
        case 47: if (!d_flow(c, &m, 0, 1)) return 0; break;
        case 48: if (!d_flow(c, &m, 1, 1)) return 0; break;
        case 36: if (!d_flow(c, &m, 2, 0)) return 0; break;
        case 42: if (!d_flow(c, &m, 3, 0)) return 0; break;
        default: break;
        }
    }
    if (st < 0) return 0;
    k->ann_hi = (uint32_t)c->an_n; k->cat_hi = (uint32_t)c->cat_n; k->cs_hi = (uint32_t)c->cs_n;
    k->flow_lo = (uint32_t)c->fl_n;
    for (int w = 0; w < 4; w++) {
        k->nflow[w] = (uint32_t)c->tmpn[w];
        for (size_t i = 0; i < c->tmpn[w]; i++) {
            uint64_t *d = PUSH(c, fl);
            if (!d) return 0;
            *d = c->tmpfl[w][i];
        }
    }
    return 1;
}

static int d_snap(Ctx *c, Rd *r, Pkt *k)
{
    Rd m = sub(r, c->base), e;
    int st;
    unsigned seen = 0;
    k->clk_lo = (uint32_t)c->ck_n;
    while ((st = next(&m, c->base)) > 0) {
        if (m.field == 2) {
            if (m.wire != 0) return 0;
            ONCE(seen, 0);
            if (m.v > 63) return 0; /* an unknown enum value: protobuf leaves it unset */
            k->has_primary = 1; k->primary = (uint32_t)m.v;
        } else if (m.field == 1) {
            if (m.wire != 2) return 0;
            Clk *ck = PUSH(c, ck);
            if (!ck) return 0;
            memset(ck, 0, sizeof(*ck));
            e = sub(&m, c->base);
            unsigned s2 = 0;
            while ((st = next(&e, c->base)) > 0) {
                if (e.field >= 1 && e.field <= 4 && e.wire != 0) return 0;
                if (e.field == 1) { ONCE(s2, 1); if (e.v > 0xFFFFFFFFu) return 0; ck->id = (uint32_t)e.v; }
                else if (e.field == 2) { ONCE(s2, 2); ck->ts = e.v; }
                else if (e.field == 3) { ONCE(s2, 3); ck->incr = e.v != 0; }
                else if (e.field == 4) { ONCE(s2, 4); ck->mult = e.v; ck->has_mult = 1; }
            }
            if (st < 0) return 0;
            if (ck->id > 127) return 0;
        }
    }
    k->clk_hi = (uint32_t)c->ck_n;
    return st == 0;
}

static int d_defaults(Ctx *c, Rd *r, Pkt *k)
{
    Rd m = sub(r, c->base), e;
    int st;
    unsigned seen = 0;
    while ((st = next(&m, c->base)) > 0) {
        if (m.field == 58) {
            if (m.wire != 0 || m.v > 127) return 0;
            ONCE(seen, 0);
            k->has_def_clock = 1; k->def_clock = (uint32_t)m.v;
        } else if (m.field == 11) {
            if (m.wire != 2) return 0;
            ONCE(seen, 1);
            e = sub(&m, c->base);
            unsigned s2 = 0;
            while ((st = next(&e, c->base)) > 0) {
                if (e.field == 11) {
                    if (e.wire != 0) return 0;
                    ONCE(s2, 0);
                    k->has_def_track = 1; k->def_track = e.v;
                }
            }
            if (st < 0) return 0;
        }
    }
    return st == 0;
}

/* memset(k, 0, sizeof *k) as plain stores (gcc made a rep stos of it: slow to start, and
   once per packet) */
HOT void zero_pkt(Pkt *k)
{
    typedef uint64_t u64a __attribute__((may_alias));
    u64a *q = (u64a *)k;
    _Static_assert(sizeof(Pkt) % 8 == 0, "Pkt is a whole number of words");
#pragma GCC unroll 32
    for (size_t i = 0; i < sizeof(Pkt) / 8; i++) { q[i] = 0; __asm__("" ::: "memory"); }
}

static int d_packet(Ctx *c, const uint8_t *p, const uint8_t *end, Pkt *k)
{
    Rd r = {p, end, 0, 0, 0, {0, 0}};
    int st;
    unsigned seen = 0;
    zero_pkt(k);
    k->intern_lo = k->intern_hi = (uint32_t)c->in_n;
    while ((st = next(&r, c->base)) > 0) {
        uint32_t f = r.field;
        if (f < 1024 && (c->data_oneof[f >> 3] >> (f & 7)) & 1) {
            ONCE(seen, 0);
            k->kind = f == 11 ? D_EVENT : f == 6 ? D_SNAP : f == 60 ? D_DESC : D_OTHER;
            if (k->kind != D_OTHER && r.wire != 2) return 0;
            if (k->kind == D_EVENT && !d_event(c, &r, k)) return 0;
            if (k->kind == D_SNAP && !d_snap(c, &r, k)) return 0;
            if (k->kind == D_DESC) k->desc = r.s;
            continue;
        }
        switch (f) {
        case 8: if (r.wire != 0) return 0; ONCE(seen, 1); k->has_ts = 1; k->ts = r.v; break;
        case 58: if (r.wire != 0) return 0; ONCE(seen, 2);
            if (r.v > 127) return 0;
            k->has_clock = 1; k->clock = (uint32_t)r.v; break;
        case 10: if (r.wire != 0) return 0; ONCE(seen, 3); k->seq = (uint32_t)r.v; break;
        case 13: if (r.wire != 0) return 0; ONCE(seen, 4); k->flags = (uint32_t)r.v; break;
        case 41: if (r.wire != 0) return 0; ONCE(seen, 5); if (r.v) k->cleared |= 2; break;
        case 42: if (r.wire != 0) return 0; ONCE(seen, 6); k->dropped = (uint32_t)r.v != 0; break;
        case 59: if (r.wire != 2) return 0; ONCE(seen, 7); if (!d_defaults(c, &r, k)) return 0; break;
        case 12: if (r.wire != 2) return 0; if (!d_intern(c, &r)) return 0; break;
        default: break;
        }
    }
    k->intern_hi = (uint32_t)c->in_n;
    return st == 0;
}

int pft_decode_chunk(Ctx *c, size_t size, Frame *f)
{
    /* the frame is written back once: it sits on the walking thread's stack, and a store
       per packet shared its cache line with that thread's loop */
    size_t pos = f->pos, n = f->n;
    int ok = 1;
    c->pk_n = c->in_n = c->cat_n = c->cs_n = c->an_n = c->fl_n = c->ck_n = 0;
    while (pos < size && c->pk_n < CHUNK) {
        const uint8_t *p = c->base + pos, *end = c->base + size;
        if (*p != 0x0A) { f->problem = 2; f->bad = *p; break; }
        p++;
        uint64_t len = 0;
        int got = 0, i;
        for (i = 0; i < 10 && p < end; i++) {
            uint8_t b = *p++;
            if (i < 9 || b <= 1) len |= (uint64_t)(b & 0x7F) << (7 * i);
            else len = UINT64_MAX; /* beyond 64 bits: longer than any file */
            if (!(b & 0x80)) { got = 1; break; }
        }
        if (!got) { f->problem = (i == 10) ? 3 : 1; break; }
        if (len > (uint64_t)(end - p)) { f->problem = 1; break; }
        Pkt *k = PUSH(c, pk);
        if (!k || !d_packet(c, p, p + len, k)) { ok = 0; break; }
        pos = (size_t)(p - c->base) + len;
        n++;
    }
    f->pos = f->used = pos;
    f->n = n;
    return ok;
}

/* ------------------------------------------------------------------ decode ahead */
static void *ahead_run(void *arg)
{
    Ahead *a = arg;
    a->dec = pft_decode_chunk(a->c, a->size, a->f);
    return NULL;
}

void pft_ahead_start(Ahead *a, Ctx *c, size_t size, Frame *f)
{
    a->c = c; a->size = size; a->f = f; a->dec = 0; a->started = 0;
#ifdef PFT_THREADS
    if (pthread_create(&a->th, NULL, ahead_run, a) == 0) { a->started = 1; return; }
#endif
    ahead_run(a);
}

int pft_ahead_join(Ahead *a)
{
#ifdef PFT_THREADS
    if (a->started) {
        pthread_join(a->th, NULL);
        a->started = 0;
    }
#endif
    return a->dec;
}
