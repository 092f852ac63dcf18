/*
 * hipscope.parsers._kinscan, JSON primitives of the scanner (see _kinscan.c): the
 * intern tables of distinct strings and raw texts, strings (validated UTF-8,
 * escapes decoded), numbers (ints, floats read exactly, the rest kept as raw text)
 * and values skipped with full validation.
 */
#include "_kinscan.h"
#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* ------------------------------------------------------------------ intern table */
static inline uint64_t mix(uint64_t h, uint64_t w)
{
    h = (h ^ w) * 0xff51afd7ed558ccdull;
    return h ^ (h >> 32);
}

/* every byte counts (names that differ only in the middle must not collide); long
 * ones in four independent lanes, 32 bytes a step */
static uint64_t hash_bytes(const char *p, size_t n)
{
    uint64_t h = 0x9E3779B97F4A7C15ull ^ (uint64_t)n;
    if (n >= 64) {
        uint64_t l[4] = {h, h ^ 0x1234567ull, h ^ 0x89abcdefull, h ^ 0x5555ull};
        while (n >= 32) {
            for (int i = 0; i < 4; i++) {
                uint64_t w;
                memcpy(&w, p + 8 * i, 8);
                l[i] = mix(l[i], w);
            }
            p += 32;
            n -= 32;
        }
        h = mix(mix(mix(l[0], l[1]), l[2]), l[3]);
    }
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = mix(h, w);
        p += 8;
        n -= 8;
    }
    uint64_t w = 0;
    memcpy(&w, p, n);
    h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 29);
}

static int intern_grow(Intern *t)
{
    size_t cap = t->cap ? t->cap * 2 : 1024;
    uint64_t *h = (uint64_t *)malloc(cap * sizeof(uint64_t));
    int32_t *id = (int32_t *)malloc(cap * sizeof(int32_t));
    if (!h || !id) {
        free(h);
        free(id);
        return -1;
    }
    memset(id, 0xff, cap * sizeof(int32_t));
    for (size_t i = 0; i < t->cap; i++) {
        if (t->id[i] < 0)
            continue;
        size_t j = t->hash[i] & (cap - 1);
        while (id[j] >= 0)
            j = (j + 1) & (cap - 1);
        h[j] = t->hash[i];
        id[j] = t->id[i];
    }
    free(t->hash);
    free(t->id);
    t->hash = h;
    t->id = id;
    t->cap = cap;
    return 0;
}

int32_t intern(Intern *t, const char *s, size_t n)
{
    if ((size_t)(t->n + 1) * 2 > t->cap && intern_grow(t) < 0)
        return -1;
    uint64_t h = hash_bytes(s, n);
    size_t j = h & (t->cap - 1);
    const int64_t *offs = (const int64_t *)t->offs.p;
    while (t->id[j] >= 0) {
        int32_t k = t->id[j];
        if (t->hash[j] == h && (size_t)(offs[k + 1] - offs[k]) == n &&
            memcmp(t->data.p + offs[k], s, n) == 0)
            return k;
        j = (j + 1) & (t->cap - 1);
    }
    if (t->n == 0) {
        int64_t zero = 0;
        if (buf_put(&t->offs, &zero, 8) < 0)
            return -1;
    }
    int64_t end = (int64_t)(t->data.len + n);
    if (buf_put(&t->data, s, n) < 0 || buf_put(&t->offs, &end, 8) < 0)
        return -1;
    t->hash[j] = h;
    t->id[j] = t->n;
    return t->n++;
}

void intern_free(Intern *t)
{
    free(t->hash);
    free(t->id);
    free(t->data.p);
    free(t->offs.p);
}

/* ------------------------------------------------------------------ strings */
static int utf8_seq(const unsigned char *p, const unsigned char *end)
{
    unsigned c = p[0];
    int n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
    if (c < 0xC2 || c > 0xF4 || end - p < n)
        return FAIL;
    for (int i = 1; i < n; i++)
        if ((p[i] & 0xC0) != 0x80)
            return FAIL;
    if ((c == 0xE0 && p[1] < 0xA0) || (c == 0xED && p[1] >= 0xA0) ||
        (c == 0xF0 && p[1] < 0x90) || (c == 0xF4 && p[1] >= 0x90))
        return FAIL;
    return n;
}

static int hex4(const unsigned char *p, unsigned *out)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        unsigned c = p[i], d;
        if (c >= '0' && c <= '9') d = c - '0';
        else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
        else return FAIL;
        v = v * 16 + d;
    }
    *out = v;
    return 0;
}

static int put_utf8(Buf *b, unsigned cp)
{
    unsigned char t[4];
    size_t n;
    if (cp < 0x80) { t[0] = (unsigned char)cp; n = 1; }
    else if (cp < 0x800) { t[0] = 0xC0 | (cp >> 6); t[1] = 0x80 | (cp & 63); n = 2; }
    else if (cp < 0x10000) {
        t[0] = 0xE0 | (cp >> 12); t[1] = 0x80 | ((cp >> 6) & 63); t[2] = 0x80 | (cp & 63);
        n = 3;
    } else {
        t[0] = 0xF0 | (cp >> 18); t[1] = 0x80 | ((cp >> 12) & 63);
        t[2] = 0x80 | ((cp >> 6) & 63); t[3] = 0x80 | (cp & 63);
        n = 4;
    }
    return buf_put(b, t, n);
}

#define ONES 0x0101010101010101ull
#define HIGH 0x8080808080808080ull

/* the end of a run of plain string bytes (printable ASCII but '"' and '\\'), eight
 * at a time: the lowest flagged byte of each test is exact */
static inline const unsigned char *plain_run(const unsigned char *q, const unsigned char *end)
{
#ifdef __SSE2__
    const __m128i quote = _mm_set1_epi8('"'), bs = _mm_set1_epi8('\\'),
                  ctl = _mm_set1_epi8(0x1f);
    while (end - q >= 16) {
        __m128i w = _mm_loadu_si128((const __m128i *)q);
        /* signed compare: bytes >= 0x80 are negative, so <= 0x1f catches them too */
        __m128i bad = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(w, quote), _mm_cmpeq_epi8(w, bs)),
                                   _mm_cmpgt_epi8(_mm_add_epi8(ctl, _mm_set1_epi8(1)), w));
        int m = _mm_movemask_epi8(bad);
        if (m)
            return q + __builtin_ctz((unsigned)m);
        q += 16;
    }
#endif
    while (end - q >= 8) {
        uint64_t w, xq, xb;
        memcpy(&w, q, 8);
        xq = w ^ (ONES * '"');
        xb = w ^ (ONES * '\\');
        uint64_t m = (w & HIGH) | ((w - ONES * 0x20) & ~w & HIGH) |
                     ((xq - ONES) & ~xq & HIGH) | ((xb - ONES) & ~xb & HIGH);
        if (m)
            return q + (__builtin_ctzll(m) >> 3);
        q += 8;
    }
    while (q < end && *q >= 0x20 && *q < 0x80 && *q != '"' && *q != '\\')
        q++;
    return q;
}

/* one escape at s->p (after the backslash), appended to scratch */
static int unescape_one(S *s)
{
    if (s->p >= s->end)
        return FAIL;
    unsigned char c = *s->p++;
    const char *simple = strchr("\"\\/bfnrt", c);
    if (c && simple) {
        static const char map[] = "\"\\/\b\f\n\r\t";
        return buf_put(&s->scratch, &map[simple - "\"\\/bfnrt"], 1);
    }
    if (c != 'u' || s->end - s->p < 4)
        return FAIL;
    unsigned cp, lo;
    if (hex4(s->p, &cp) < 0)
        return FAIL;
    s->p += 4;
    if (cp >= 0xDC00 && cp <= 0xDFFF)
        return FAIL;
    if (cp >= 0xD800 && cp <= 0xDBFF) {
        if (s->end - s->p < 6 || s->p[0] != '\\' || s->p[1] != 'u' || hex4(s->p + 2, &lo) < 0 ||
            lo < 0xDC00 || lo > 0xDFFF)
            return FAIL;
        s->p += 6;
        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
    }
    return put_utf8(&s->scratch, cp);
}

/* a string at s->p (a quote); out, len: its text (into the input, or unescaped into
 * scratch); *esc: whether it had escapes */
int parse_string(S *s, const char **out, size_t *len, int *esc)
{
    const unsigned char *start = ++s->p;
    *esc = 0;
    for (;;) {
        const unsigned char *run = s->p;
        s->p = plain_run(s->p, s->end);
        if (*esc && buf_put(&s->scratch, run, (size_t)(s->p - run)) < 0)
            return FAIL;
        if (s->p >= s->end || *s->p < 0x20)
            return FAIL;
        unsigned char c = *s->p;
        if (c == '"')
            break;
        if (c == '\\') {
            if (!*esc) {   /* from here on the text is built in scratch */
                s->scratch.len = 0;
                *esc = 1;
                if (buf_put(&s->scratch, start, (size_t)(s->p - start)) < 0)
                    return FAIL;
            }
            s->p++;
            if (unescape_one(s) < 0)
                return FAIL;
            continue;
        }
        int n = utf8_seq(s->p, s->end);
        if (n < 0)
            return FAIL;
        if (*esc && buf_put(&s->scratch, s->p, (size_t)n) < 0)
            return FAIL;
        s->p += n;
    }
    if (*esc) {
        *out = s->scratch.p ? s->scratch.p : "";
        *len = s->scratch.len;
    } else {
        *out = (const char *)start;
        *len = (size_t)(s->p - start);
    }
    s->p++;
    return 0;
}

/* ------------------------------------------------------------------ numbers */
static const double POW10[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
                               1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19,
                               1e20, 1e21, 1e22};

/* a JSON number: kind int (fits int64), float (exact: Clinger's fast path, else
 * strtod in the C locale, finite and not denormal) or raw (anything else) */
static int parse_number(S *s, int *kind, int64_t *payload)
{
    const unsigned char *st = s->p, *p = s->p;
    int neg = 0;
    if (p < s->end && *p == '-') { neg = 1; p++; }
    if (p >= s->end || *p < '0' || *p > '9')
        return FAIL;
    uint64_t m = 0;
    int frac = 0, big = 0;
    if (*p == '0') {
        p++;
    } else {
        while (p < s->end && *p >= '0' && *p <= '9') {
            if (m > (UINT64_MAX - 9) / 10) big = 1; else m = m * 10 + (*p - '0');
            p++;
        }
    }
    int is_float = 0, e10 = 0;
    if (p < s->end && *p == '.') {
        is_float = 1;
        p++;
        if (p >= s->end || *p < '0' || *p > '9')
            return FAIL;
        while (p < s->end && *p >= '0' && *p <= '9') {
            if (m > (UINT64_MAX - 9) / 10) big = 1; else { m = m * 10 + (*p - '0'); frac++; }
            p++;
        }
    }
    if (p < s->end && (*p == 'e' || *p == 'E')) {
        is_float = 1;
        p++;
        int eneg = 0, ev = 0;
        if (p < s->end && (*p == '+' || *p == '-')) eneg = *p++ == '-';
        if (p >= s->end || *p < '0' || *p > '9')
            return FAIL;
        while (p < s->end && *p >= '0' && *p <= '9') {
            if (ev < 100000) ev = ev * 10 + (*p - '0');
            p++;
        }
        e10 = eneg ? -ev : ev;
    }
    s->p = p;
    if (!is_float) {
        if (!big && (neg ? m <= (uint64_t)INT64_MAX + 1 : m <= (uint64_t)INT64_MAX)) {
            *kind = K_INT;
            *payload = neg ? (int64_t)(0 - m) : (int64_t)m;
            return 0;
        }
        *kind = K_RAW;
        return 0;
    }
    double d;
    int e = e10 - frac;
    if (!big && m < (1ull << 53) && e >= -22 && e <= 22) {
        d = e < 0 ? (double)m / POW10[-e] : (double)m * POW10[e];
        if (neg)
            d = -d;
    } else { /* the text has its sign */
        char tmp[64];
        size_t n = (size_t)(p - st);
        if (n >= sizeof tmp) { *kind = K_RAW; return 0; }
        memcpy(tmp, st, n);
        tmp[n] = 0;
        d = strtod_l(tmp, NULL, s->cloc);
        if (!(d > -1.7976931348623157e308 && d < 1.7976931348623157e308) ||
            (d != 0 && d > -2.2250738585072014e-308 && d < 2.2250738585072014e-308) ||
            (d == 0 && m != 0)) {
            *kind = K_RAW; /* msgspec decides (out of range, denormal) */
            return 0;
        }
    }
    *kind = K_FLOAT;
    memcpy(payload, &d, 8);
    return 0;
}

/* ------------------------------------------------------------------ values */

static int skip_container(S *s, int depth, unsigned char close)
{
    if (depth > 64)
        return FAIL;
    s->p++;
    WS(s);
    if (s->p < s->end && *s->p == close) { s->p++; return 0; }
    for (;;) {
        if (close == '}') {
            const char *k; size_t kl; int esc;
            if (s->p >= s->end || *s->p != '"' || parse_string(s, &k, &kl, &esc) < 0)
                return FAIL;
            WS(s);
            if (s->p >= s->end || *s->p++ != ':')
                return FAIL;
            WS(s);
        }
        if (skip_value(s, depth + 1) < 0)
            return FAIL;
        WS(s);
        if (s->p >= s->end)
            return FAIL;
        if (*s->p == ',') { s->p++; WS(s); continue; }
        if (*s->p++ == close)
            return 0;
        return FAIL;
    }
}

int literal(S *s, const char *lit, size_t n)
{
    if ((size_t)(s->end - s->p) < n || memcmp(s->p, lit, n) != 0)
        return FAIL;
    s->p += n;
    return 0;
}

int skip_value(S *s, int depth)
{
    if (s->p >= s->end)
        return FAIL;
    const char *t; size_t tl; int esc, kind;
    int64_t v;
    switch (*s->p) {
    case '"': return parse_string(s, &t, &tl, &esc);
    case '{': return skip_container(s, depth, '}');
    case '[': return skip_container(s, depth, ']');
    case 't': return literal(s, "true", 4);
    case 'f': return literal(s, "false", 5);
    case 'n': return literal(s, "null", 4);
    default: return parse_number(s, &kind, &v);
    }
}

/* any value as (kind, payload); raw_only: always its raw text */
int parse_value(S *s, int raw_only, int *kind, int64_t *payload)
{
    const unsigned char *st = s->p;
    const char *t; size_t tl; int esc;
    if (s->p >= s->end)
        return FAIL;
    unsigned char c = *s->p;
    if (raw_only || c == '{' || c == '[') {
        if (skip_value(s, 1) < 0)
            return FAIL;
        *kind = K_RAW;
    } else if (c == '"') {
        if (parse_string(s, &t, &tl, &esc) < 0)
            return FAIL;
        int32_t id = intern(&s->strs, t, tl);
        if (id < 0)
            return FAIL;
        *kind = K_STR;
        *payload = id;
        return 0;
    } else if (c == 't' || c == 'f' || c == 'n') {
        if (skip_value(s, 1) < 0)
            return FAIL;
        *kind = c == 't' ? K_TRUE : c == 'f' ? K_FALSE : K_NULL;
        *payload = 0;
        return 0;
    } else if (parse_number(s, kind, payload) < 0) {
        return FAIL;
    }
    if (*kind == K_RAW) {
        int32_t id = intern(&s->raws, (const char *)st, (size_t)(s->p - st));
        if (id < 0)
            return FAIL;
        *payload = id;
    }
    return 0;
}

