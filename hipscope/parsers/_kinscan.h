/* hipscope.parsers._kinscan: shared types of the scanner (_kinscan.c) and its JSON
 * primitives (_kinjson.c: strings, numbers, skipped values, the intern tables). */
#ifndef HIPSCOPE_KINSCAN_H
#define HIPSCOPE_KINSCAN_H
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <locale.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { K_ABSENT, K_NULL, K_INT, K_FLOAT, K_STR, K_TRUE, K_FALSE, K_RAW };

typedef struct { char *p; size_t len, cap; } Buf;

static inline int buf_put(Buf *b, const void *src, size_t n)
{
    if (n == 0)
        return 0;
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

typedef struct {
    uint64_t *hash;
    int32_t *id; /* -1 empty */
    size_t cap;
    Buf data, offs; /* offs: int64 start of each entry, plus the end */
    int32_t n;
} Intern;

enum { E_PH, E_CAT, E_NAME, E_PID, E_TID, E_TS, E_DUR, E_ARGS, E_ID, E_BP, N_EV };
#define N_STR 3   /* ph cat name: string ids */
#define N_DENSE 4 /* pid tid ts dur: kind + payload */
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
    locale_t cloc;
    Py_ssize_t split; /* lists longer than this are read in two threads */
    int rc;
} S;
#define FAIL (-1)
#define WS(s) while ((s)->p < (s)->end && (*(s)->p == ' ' || *(s)->p == '\n' || \
                     *(s)->p == '\r' || *(s)->p == '\t')) (s)->p++


int32_t intern(Intern *t, const char *s, size_t n);
void intern_free(Intern *t);
int parse_string(S *s, const char **out, size_t *len, int *esc);
int skip_value(S *s, int depth);
int literal(S *s, const char *lit, size_t n);
int parse_value(S *s, int raw_only, int *kind, int64_t *payload);

#endif
