/*
 * The growable byte buffer every part of pipeline._native writes into (the decoder's Arrow columns,
 * the encoders' output, loss and scratch buffers), and JSON text exactly as orjson writes it on
 * top of it: strings (orjson_escape.h's rule) and the values yyjson parsed with numbers kept raw.
 *
 * Writing never fails midway: an allocation failure sets St.oom and every later write is a no-op,
 * so a walk checks once, at its end, whether its batch has to be abandoned.
 */
#ifndef CHATLAKE_BUF_H
#define CHATLAKE_BUF_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "vendor/yyjson/yyjson.h"
#include "orjson_escape.h"

typedef struct {
    char *p;
    size_t len, cap;
} Buf;

typedef struct {
    int oom;      /* an allocation failed: the whole batch is abandoned */
    int overflow; /* the decoder: a column passed 2 GiB of data (int32 offsets cannot hold it) */
} St;

static inline void put(St *st, Buf *b, const void *src, size_t n) {
    if (n == 0 || st->oom) return; /* memcpy into a still-NULL buffer is undefined even for 0 bytes */
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

static inline void put_byte(St *st, Buf *b, char c) {
    if (b->len < b->cap) {
        b->p[b->len++] = c;
    } else {
        put(st, b, &c, 1);
    }
}

static inline void puts_(St *st, Buf *b, const char *s) { put(st, b, s, strlen(s)); }

/* Reserve n more bytes up front (an encoder's output is about as large as the text it is made of:
 * growing it by doubling would copy it and fault its pages in again). */
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

/* The characters of a JSON string as orjson writes them, without the quotes: only '"', '\\' and
 * control characters are escaped, so several texts written one after the other are the JSON text
 * of their concatenation. */
static inline void put_json_chars(St *st, Buf *b, const char *s, size_t n) {
    size_t k = 0;
    while (k < n) { /* plain runs copied whole (orjson_plain_prefix), then the one byte to escape */
        size_t run = orjson_plain_prefix(s + k, n - k);
        put(st, b, s + k, run);
        k += run;
        if (k == n) break;
        char esc[6];
        put(st, b, esc, orjson_escape((unsigned char)s[k], esc));
        k++;
    }
}

/* A JSON string as orjson writes it. */
static inline void put_json_str(St *st, Buf *b, const char *s, size_t n) {
    put_byte(st, b, '"');
    put_json_chars(st, b, s, n);
    put_byte(st, b, '"');
}

/* Compact JSON of a value parsed with YYJSON_READ_NUMBER_AS_RAW (numbers copied verbatim), as
 * orjson.dumps writes it back; the caller has proven the value canonical (the decoder's
 * check_value, the encoders' canonical). */
static inline void put_value(St *st, Buf *b, yyjson_val *v) {
    switch (yyjson_get_type(v)) {
        case YYJSON_TYPE_RAW: put(st, b, yyjson_get_raw(v), yyjson_get_len(v)); break;
        case YYJSON_TYPE_STR: put_json_str(st, b, yyjson_get_str(v), yyjson_get_len(v)); break;
        case YYJSON_TYPE_NULL: puts_(st, b, "null"); break;
        case YYJSON_TYPE_BOOL: puts_(st, b, yyjson_get_bool(v) ? "true" : "false"); break;
        case YYJSON_TYPE_ARR: {
            size_t idx, max;
            yyjson_val *x;
            put_byte(st, b, '[');
            yyjson_arr_foreach(v, idx, max, x) {
                if (idx) put_byte(st, b, ',');
                put_value(st, b, x);
            }
            put_byte(st, b, ']');
            break;
        }
        case YYJSON_TYPE_OBJ: {
            size_t idx, max;
            yyjson_val *k, *x;
            put_byte(st, b, '{');
            yyjson_obj_foreach(v, idx, max, k, x) {
                if (idx) put_byte(st, b, ',');
                put_json_str(st, b, yyjson_get_str(k), yyjson_get_len(k));
                put_byte(st, b, ':');
                put_value(st, b, x);
            }
            put_byte(st, b, '}');
            break;
        }
        default: break;
    }
}

#endif
