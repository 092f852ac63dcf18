/*
 * hipscope.parsers._kinscan: one pass over the text of a PyTorch profiler (Kineto)
 * Chrome trace, from the JSON straight to columns (hipscope/parsers/kineto/native.py
 * turns them into numpy arrays). The GIL is released while scanning; a long
 * traceEvents list is read in two threads (the second from an event start half-way
 * along, which the first half's own parse must reach exactly, else it reads on alone).
 *
 * scan(buffer, release, split) -> None (declined) or a tuple
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
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <locale.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <pthread.h>
#include <unistd.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

enum { K_ABSENT, K_NULL, K_INT, K_FLOAT, K_STR, K_TRUE, K_FALSE, K_RAW };

typedef struct { char *p; size_t len, cap; } Buf;

static int buf_put(Buf *b, const void *src, size_t n)
{
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n)
            cap *= 2;
        char *q = (char *)realloc(b->p, cap);
        if (!q)
            return -1;
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->len, src, n);
    b->len += n;
    return 0;
}

/* ------------------------------------------------------------------ intern table */
typedef struct {
    uint64_t *hash;
    int32_t *id; /* -1 empty */
    size_t cap;
    Buf data, offs; /* offs: int64 start of each entry, plus the end */
    int32_t n;
} Intern;

static uint64_t hash_bytes(const char *p, size_t n)
{
    uint64_t h = 0x9E3779B97F4A7C15ull ^ (uint64_t)n;
    if (n > 128) { /* long kernel names: their head and tail (equal ones are compared) */
        uint64_t t = hash_bytes(p + n - 64, 64);
        n = 64;
        h ^= t;
    }
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
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

static int32_t intern(Intern *t, const char *s, size_t n)
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

static void intern_free(Intern *t)
{
    free(t->hash);
    free(t->id);
    free(t->data.p);
    free(t->offs.p);
}

/* ------------------------------------------------------------------ fields */
static const char *const EV_KEYS[] = {"ph", "cat", "name", "pid", "tid", "ts", "dur",
                                      "args", "id", "bp"};
enum { E_PH, E_CAT, E_NAME, E_PID, E_TID, E_TS, E_DUR, E_ARGS, E_ID, E_BP, N_EV };
#define N_STR 3   /* ph cat name: string ids */
#define N_DENSE 4 /* pid tid ts dur: kind + payload */
static const char *const ARG_KEYS[] = {
    "correlation", "device", "stream", "grid", "block", "registers per thread",
    "shared memory", "bytes", "size", "kind", "name", "labels", "External id",
    "Sequence number", "Fwd thread id", "Collective name", "Process Group Name",
    "Process Group Ranks", "Seq", "Input Dims", "Input type"};
#define N_ARGS 21
#define N_RAWONLY 2 /* the last two: raw text whatever their type */
#define N_SPARSE (2 + N_ARGS)

typedef struct { Buf idx, kind, val; } Sparse;

typedef struct {
    const unsigned char *p, *end, *base;
    Intern strs, raws;
    Buf scratch;
    Buf str[N_STR], dkind[N_DENSE], dval[N_DENSE], has_args;
    Sparse sp[N_SPARSE];
    int32_t n;
    int release;
    size_t released;
    locale_t cloc;
    Py_ssize_t split; /* lists longer than this are read in two threads */
    int rc;
} S;

#define FAIL (-1)
#define WS(s) while ((s)->p < (s)->end && (*(s)->p == ' ' || *(s)->p == '\n' || \
                     *(s)->p == '\r' || *(s)->p == '\t')) (s)->p++

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
static int parse_string(S *s, const char **out, size_t *len, int *esc)
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
static int skip_value(S *s, int depth);

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

static int literal(S *s, const char *lit, size_t n)
{
    if ((size_t)(s->end - s->p) < n || memcmp(s->p, lit, n) != 0)
        return FAIL;
    s->p += n;
    return 0;
}

static int skip_value(S *s, int depth)
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
static int parse_value(S *s, int raw_only, int *kind, int64_t *payload)
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

static int put_sparse(S *s, int f, int kind, int64_t payload)
{
    Sparse *sp = &s->sp[f];
    uint8_t k = (uint8_t)kind;
    return (buf_put(&sp->idx, &s->n, 4) < 0 || buf_put(&sp->kind, &k, 1) < 0 ||
            buf_put(&sp->val, &payload, 8) < 0) ? FAIL : 0;
}

static int match(const char *const *keys, int n, const char *k, size_t kl)
{
    for (int i = 0; i < n; i++)
        if (keys[i][0] == k[0] && strlen(keys[i]) == kl && memcmp(keys[i], k, kl) == 0)
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

static void release_behind(S *s)
{
    if (!s->release)
        return;
    long page = sysconf(_SC_PAGESIZE);
    size_t upto = (size_t)(s->p - s->base) / (size_t)page * (size_t)page;
    if (upto >= s->released + (32u << 20)) {
        madvise((void *)(s->base + s->released), upto - s->released, MADV_DONTNEED);
        s->released = upto;
    }
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
        if ((s->n & 0xFFFF) == 0)
            release_behind(s);
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
        long page = sysconf(_SC_PAGESIZE);
        t->base = s->base;
        t->p = q;
        t->end = s->end;
        t->release = s->release;
        t->released = ((size_t)(q - s->base) + (size_t)page) / (size_t)page * (size_t)page;
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
    int release = 0;
    Py_ssize_t split = 64 << 20;
    if (!PyArg_ParseTuple(args, "y*|pn", &view, &release, &split))
        return NULL;
    S *s = (S *)calloc(1, sizeof(S));
    if (!s) {
        PyBuffer_Release(&view);
        return PyErr_NoMemory();
    }
    s->base = s->p = (const unsigned char *)view.buf;
    s->end = s->base + view.len;
    long page = sysconf(_SC_PAGESIZE);
    s->release = release && page > 0 && ((uintptr_t)view.buf % (uintptr_t)page) == 0;
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
     "scan(buffer, release=False, split=64 MiB) -> None (declined) or (n, open, close, "
     "strings, raws, dense, sparse); release: drop the pages of a memory map behind the "
     "cursor; split: a traceEvents list longer than this is read in two threads"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_kinscan",
                                    "Kineto JSON to columns (see hipscope/parsers/kineto)",
                                    -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__kinscan(void) { return PyModule_Create(&module); }
