/*
 * What the compiled encoders share (encode.c: Responses -> Chat; more encoders to come): the Arrow C
 * data interface and column readers, growing byte buffers, orjson-exact JSON writing, the check that a
 * stored JSON value is written back byte-identically (canonical), and handing buffers to Python.
 * Header-only (static inline): each encoder is one translation unit and includes it once.
 */
#ifndef CHATLAKE_ENCODE_COMMON_H
#define CHATLAKE_ENCODE_COMMON_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vendor/yyjson/yyjson.h"
#include "orjson_escape.h"

/* ------------------------------------------------------------------------------------------ */
/* Arrow C data interface (https://arrow.apache.org/docs/format/CDataInterface.html)           */

struct ArrowSchema {
    const char *format;
    const char *name;
    const char *metadata;
    int64_t flags;
    int64_t n_children;
    struct ArrowSchema **children;
    struct ArrowSchema *dictionary;
    void (*release)(struct ArrowSchema *);
    void *private_data;
};

struct ArrowArray {
    int64_t length;
    int64_t null_count;
    int64_t offset;
    int64_t n_buffers;
    int64_t n_children;
    const void **buffers;
    struct ArrowArray **children;
    struct ArrowArray *dictionary;
    void (*release)(struct ArrowArray *);
    void *private_data;
};

/* A column as read here: validity bitmap (NULL: no nulls), int32 offsets or values, data, and the
 * index of logical slot 0 in those buffers (the array's own offset plus its parents'). */
typedef struct {
    const uint8_t *valid;
    const int32_t *off;
    const char *data;
    int64_t base;
} Col;

static inline int col_valid(const Col *c, int64_t i) {
    int64_t k = c->base + i;
    return !c->valid || ((c->valid[k >> 3] >> (k & 7)) & 1);
}

/* String value i (NULL when null). */
static inline const char *col_str(const Col *c, int64_t i, size_t *len) {
    if (!col_valid(c, i)) {
        *len = 0;
        return NULL;
    }
    int64_t k = c->base + i;
    *len = (size_t)(c->off[k + 1] - c->off[k]);
    return c->data + c->off[k];
}

/* List i as [*start, *end) in its child's logical slots. */
static inline void col_list(const Col *c, int64_t i, int64_t *start, int64_t *end) {
    int64_t k = c->base + i;
    *start = c->off[k];
    *end = c->off[k + 1];
}

static inline int32_t col_i32(const Col *c, int64_t i) { return c->off[c->base + i]; }

/* Child `name` of struct (a, s) with the struct's logical offset `base` (NULL: no such child or an
 * unexpected type, checked by format string). */
static inline int bind(struct ArrowArray *a, struct ArrowSchema *s, const char *name, const char *fmt, int64_t base,
                Col *out, struct ArrowArray **ca, struct ArrowSchema **cs) {
    for (int64_t k = 0; k < s->n_children; k++) {
        if (strcmp(s->children[k]->name, name) != 0) continue;
        struct ArrowArray *c = a->children[k];
        struct ArrowSchema *cschema = s->children[k];
        if (strcmp(cschema->format, fmt) != 0) return -1;
        out->base = base + c->offset;
        out->valid = (const uint8_t *)c->buffers[0]; /* NULL when the array has no nulls */
        out->off = c->n_buffers > 1 ? (const int32_t *)c->buffers[1] : NULL;
        out->data = c->n_buffers > 2 ? (const char *)c->buffers[2] : NULL;
        if (ca) *ca = c;
        if (cs) *cs = cschema;
        return 0;
    }
    return -1;
}

/* ------------------------------------------------------------------------------------------ */
/* Buffers                                                                                      */

typedef struct {
    char *p;
    size_t len, cap;
} Buf;

typedef struct {
    int oom;
} St;

static inline void put(St *st, Buf *b, const void *src, size_t n) {
    if (n == 0 || st->oom) return;
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n) cap *= 2;
        char *p = (char *)realloc(b->p, cap);
        if (!p) {
            st->oom = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, src, n);
    b->len += n;
}

static inline void puts_(St *st, Buf *b, const char *s) { put(st, b, s, strlen(s)); }

/* The article before a quoted word, as pipeline.errors.a_or_an(quoted(word)) chooses it: its regex
   AN_WORD on "'word'" (the closing quote follows the word, so "end of text" never applies here).
   NULL reads 'None' (Python's str of None). */
static inline int lower_(char c) { return (c >= 'A' && c <= 'Z') ? c + 32 : c; }
static inline int alnum_(char c) { c = (char)lower_(c); return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
static inline const char *article_quoted(const char *w, size_t n) {
    if (!w) return "a '";
    char c0 = n > 0 ? (char)lower_(w[0]) : '\'';
    char c1 = n > 1 ? (char)lower_(w[1]) : '\'';
    char c2 = n > 2 ? (char)lower_(w[2]) : '\'';
    int an = c0 == 'a' || c0 == 'e' || c0 == 'i' || c0 == 'o'
        || (c0 == 'h' && c1 == 'f' && !alnum_(c2))
        || (c0 == 'u' && ((c1 != 's' && c1 != 'r' && c1 != 'n' && c1 != 't')
                          || ((c1 == 'n' || c1 == 't') && c2 != 'i')));
    return an ? "an '" : "a '";
}

static inline void put_i64(St *st, Buf *b, int64_t v) {
    char tmp[24];
    size_t k = sizeof tmp;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do {
        tmp[--k] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0) tmp[--k] = '-';
    put(st, b, tmp + k, sizeof tmp - k);
}

/* A JSON string as orjson writes it: only '"', '\\' and control characters are escaped. */
static inline void put_json_str(St *st, Buf *b, const char *s, size_t n) {
    put(st, b, "\"", 1);
    size_t run = 0;
    for (size_t k = 0; k < n; k++) {
        char esc[6];
        size_t m = orjson_escape((unsigned char)s[k], esc);
        if (!m) continue;
        put(st, b, s + run, k - run);
        run = k + 1;
        put(st, b, esc, m);
    }
    put(st, b, s + run, n - run);
    put(st, b, "\"", 1);
}

/* One RFC 6901 pointer token ("/" + token with ~ and / escaped), as losses.pointer writes it. */
static inline void put_ptr(St *st, Buf *b, const char *s, size_t n) {
    put(st, b, "/", 1);
    size_t run = 0;
    for (size_t k = 0; k < n; k++) {
        if (s[k] != '~' && s[k] != '/') continue;
        put(st, b, s + run, k - run);
        put(st, b, s[k] == '~' ? "~0" : "~1", 2);
        run = k + 1;
    }
    put(st, b, s + run, n - run);
}

/* ------------------------------------------------------------------------------------------ */
/* JSON values stored as text (tools, tool_choice, extra_json): parsed with yyjson, written back   */
/* the way orjson.dumps(orjson.loads(text)) would, or refused (the row falls back)               */

#define MAX_KEYS 256
#define MAX_DEPTH 64

/* Is this raw number text exactly what orjson writes for the value orjson.loads reads from it?
 * Integers: up to 18 digits, no "-0". Floats: plain decimal notation with 1 to 15 significant
 * digits (those round-trip, so the shortest repr is the text itself), no trailing fraction zero
 * (but "N.0"), no exponent, and not below 1e-4 (orjson switches notation there). */
static inline int canonical_number(const char *s, size_t n) {
    size_t k = 0;
    if (k < n && s[k] == '-') k++;
    size_t int_start = k;
    while (k < n && s[k] >= '0' && s[k] <= '9') k++;
    size_t int_len = k - int_start;
    if (int_len == 0 || (int_len > 1 && s[int_start] == '0')) return 0;
    if (k == n) {
        if (int_len > 18) return 0;
        if (s[0] == '-' && int_len == 1 && s[int_start] == '0') return 0;
        return 1;
    }
    if (s[k] != '.') return 0;
    k++;
    size_t frac_start = k;
    while (k < n && s[k] >= '0' && s[k] <= '9') k++;
    size_t frac_len = k - frac_start;
    if (k != n || frac_len == 0) return 0;
    if (frac_len > 1 && s[n - 1] == '0') return 0;
    /* significant digits: from the first non-zero digit to the last non-zero digit */
    int first = -1, last = -1;
    for (size_t q = int_start; q < n; q++) {
        if (s[q] == '.' || s[q] == '0') continue;
        if (first < 0) first = (int)q;
        last = (int)q;
    }
    if (first < 0) return 1; /* 0.0 / -0.0 */
    int sig = last - first + 1 - (first < (int)frac_start - 1 && last > (int)frac_start - 1 ? 1 : 0);
    if (sig > 15) return 0;
    if (int_len == 1 && s[int_start] == '0') {
        /* 0.000x: below 1e-4 orjson writes an exponent */
        size_t zeros = 0;
        while (frac_start + zeros < n && s[frac_start + zeros] == '0') zeros++;
        if (zeros > 3) return 0;
    }
    return 1;
}

/* A string yyjson unescaped: refuse a lone surrogate (orjson.loads rejects it). */
static inline int valid_str(const char *s, size_t n) {
    for (size_t k = 0; k + 1 < n; k++) {
        if ((unsigned char)s[k] == 0xED && (unsigned char)s[k + 1] >= 0xA0) return 0;
    }
    return 1;
}

static inline int keq(yyjson_val *a, yyjson_val *b) {
    size_t n = yyjson_get_len(a);
    return n == yyjson_get_len(b) && memcmp(yyjson_get_str(a), yyjson_get_str(b), n) == 0;
}

/* Every value under v is one orjson writes back unchanged (see canonical_number), and no object
 * repeats a key (orjson.loads would keep one). */
static inline int canonical(yyjson_val *v, int depth) {
    if (depth > MAX_DEPTH) return 0;
    switch (yyjson_get_type(v)) {
        case YYJSON_TYPE_RAW: return canonical_number(yyjson_get_raw(v), yyjson_get_len(v));
        case YYJSON_TYPE_STR: return valid_str(yyjson_get_str(v), yyjson_get_len(v));
        case YYJSON_TYPE_NULL:
        case YYJSON_TYPE_BOOL: return 1;
        case YYJSON_TYPE_ARR: {
            size_t idx, max;
            yyjson_val *x;
            yyjson_arr_foreach(v, idx, max, x) {
                if (!canonical(x, depth + 1)) return 0;
            }
            return 1;
        }
        case YYJSON_TYPE_OBJ: {
            if (yyjson_obj_size(v) > MAX_KEYS) return 0;
            size_t idx, max;
            yyjson_val *k, *x;
            yyjson_obj_foreach(v, idx, max, k, x) {
                if (!valid_str(yyjson_get_str(k), yyjson_get_len(k)) || !canonical(x, depth + 1)) return 0;
                size_t idx2, max2;
                yyjson_val *k2, *x2;
                yyjson_obj_foreach(v, idx2, max2, k2, x2) {
                    if (idx2 >= idx) break;
                    if (keq(k, k2)) return 0;
                }
            }
            return 1;
        }
        default: return 0;
    }
}

/* Parse JSON text; NULL when it is not valid or not canonical (the row falls back). */
static inline yyjson_doc *parse(const char *s, size_t n) {
    yyjson_doc *doc = yyjson_read_opts((char *)s, n, YYJSON_READ_NUMBER_AS_RAW, NULL, NULL);
    if (!doc) return NULL;
    if (!canonical(yyjson_doc_get_root(doc), 0)) {
        yyjson_doc_free(doc);
        return NULL;
    }
    return doc;
}

static inline void put_value(St *st, Buf *b, yyjson_val *v) {
    switch (yyjson_get_type(v)) {
        case YYJSON_TYPE_RAW: put(st, b, yyjson_get_raw(v), yyjson_get_len(v)); break;
        case YYJSON_TYPE_STR: put_json_str(st, b, yyjson_get_str(v), yyjson_get_len(v)); break;
        case YYJSON_TYPE_NULL: puts_(st, b, "null"); break;
        case YYJSON_TYPE_BOOL: puts_(st, b, yyjson_get_bool(v) ? "true" : "false"); break;
        case YYJSON_TYPE_ARR: {
            size_t idx, max;
            yyjson_val *x;
            put(st, b, "[", 1);
            yyjson_arr_foreach(v, idx, max, x) {
                if (idx) put(st, b, ",", 1);
                put_value(st, b, x);
            }
            put(st, b, "]", 1);
            break;
        }
        case YYJSON_TYPE_OBJ: {
            size_t idx, max;
            yyjson_val *k, *x;
            put(st, b, "{", 1);
            yyjson_obj_foreach(v, idx, max, k, x) {
                if (idx) put(st, b, ",", 1);
                put_json_str(st, b, yyjson_get_str(k), yyjson_get_len(k));
                put(st, b, ":", 1);
                put_value(st, b, x);
            }
            put(st, b, "}", 1);
            break;
        }
        default: break;
    }
}

static inline int is_str(yyjson_val *v, const char *s) { return v && yyjson_is_str(v) && yyjson_equals_str(v, s); }

static inline int key_is(yyjson_val *k, const char *s) { return yyjson_equals_str(k, s); }

static inline int key_in(yyjson_val *k, const char *const *set) {
    for (; *set; set++)
        if (yyjson_equals_str(k, *set)) return 1;
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Buffers handed to Python                                                                     */

#define CAPSULE "chatlake.encode.buffer"

static inline void capsule_free(PyObject *cap) { free(PyCapsule_GetPointer(cap, CAPSULE)); }

/* Buffer b handed to Python without a copy: (address, size, owner), for pa.foreign_buffer; the
 * owner (a capsule) frees the memory when the last Arrow buffer over it goes. */
static inline PyObject *export_buf(Buf *b) {
    if (!b->p) {
        b->p = (char *)malloc(1);
        if (!b->p) return PyErr_NoMemory();
    }
    PyObject *cap = PyCapsule_New(b->p, CAPSULE, capsule_free);
    if (!cap) return NULL;
    void *p = b->p;
    b->p = NULL; /* the capsule owns it now */
    return Py_BuildValue("(KnN)", (unsigned long long)(uintptr_t)p, (Py_ssize_t)b->len, cap);
}

/* Reserve n more bytes up front (the output is about as large as the text it is made of: growing
 * it by doubling would copy it and fault its pages in again). */
static inline void reserve(St *st, Buf *b, size_t n) {
    if (b->cap >= b->len + n) return;
    char *p = (char *)realloc(b->p, b->len + n);
    if (!p) {
        st->oom = 1;
        return;
    }
    b->p = p;
    b->cap = b->len + n;
}

/* Bytes of string data in slots [a, z) of c (all of them for the whole column). */
static inline size_t col_bytes(const Col *c, int64_t a, int64_t z) {
    if (z <= a || !c->off) return 0;
    return (size_t)(c->off[c->base + z] - c->off[c->base + a]);
}

/* ------------------------------------------------------------------------------------------ */
/* Reading the canonical table (moved from encode.c)                                            */

static inline int str_eq(const char *p, size_t n, const char *s) { return p && strlen(s) == n && memcmp(p, s, n) == 0; }

static inline int has_null(Col *lists, Col *names, int64_t i, const char *name) {
    if (!col_valid(lists, i)) return 0;
    int64_t a, z;
    col_list(lists, i, &a, &z);
    for (int64_t k = a; k < z; k++) {
        size_t n;
        const char *s = col_str(names, k, &n);
        if (str_eq(s, n, name)) return 1;
    }
    return 0;
}

/* The struct array of list column `c` (schema `cs`): its validity as a Col, its array and schema. */
static inline int list_struct(struct ArrowArray *c, struct ArrowSchema *cs, Col *valid, struct ArrowArray **sa,
                       struct ArrowSchema **ss) {
    if (c->n_children != 1 || strcmp(cs->children[0]->format, "+s") != 0) return -1;
    *sa = c->children[0];
    *ss = cs->children[0];
    valid->valid = (const uint8_t *)(*sa)->buffers[0];
    valid->base = (*sa)->offset;
    valid->off = NULL;
    valid->data = NULL;
    return 0;
}

/* A list<string> column (null_fields): the list and its values. */
static inline int bind_names(struct ArrowArray *a, struct ArrowSchema *s, int64_t base, Col *list, Col *names) {
    struct ArrowArray *c;
    struct ArrowSchema *cs;
    if (bind(a, s, "null_fields", "+l", base, list, &c, &cs)) return -1;
    if (c->n_children != 1 || strcmp(cs->children[0]->format, "u") != 0) return -1;
    struct ArrowArray *v = c->children[0];
    names->valid = (const uint8_t *)v->buffers[0];
    names->off = (const int32_t *)v->buffers[1];
    names->data = (const char *)v->buffers[2];
    names->base = v->offset;
    return 0;
}

static inline int bind_blocks(struct ArrowArray *sa, struct ArrowSchema *ss, int64_t base, Col *text, Col *type,
                       Col *ann, Col *logp, Col *cache, Col *cit, Col *extra, Col *nulls, Col *null_names) {
    if (bind(sa, ss, "text", "u", base, text, NULL, NULL)) return -1;
    if (!type) return 0;
    return bind(sa, ss, "type", "u", base, type, NULL, NULL) || bind(sa, ss, "annotations", "u", base, ann, NULL, NULL) ||
           bind(sa, ss, "logprobs", "u", base, logp, NULL, NULL) ||
           bind(sa, ss, "cache_control", "u", base, cache, NULL, NULL) ||
           bind(sa, ss, "citations", "u", base, cit, NULL, NULL) ||
           bind(sa, ss, "extra_json", "u", base, extra, NULL, NULL) || bind_names(sa, ss, base, nulls, null_names);
}

#endif
