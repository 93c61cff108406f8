/*
 * What the compiled encoders share (encode.c, encode_responses.c, encode_anthropic.c,
 * encode_same.c and the line writers): the Arrow C data interface and column readers, the check that
 * a stored JSON value is written back byte-identically (canonical), handing buffers to Python,
 * and the row encoder's state (Enc), loss columns, item-field losses, binding of the canonical
 * batch and the batch loop (run_encoder). The byte buffer and JSON writing are buf.h's (the
 * decoder's too). Header-only (static inline): each encoder is one translation unit and includes it once.
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
#include "buf.h" /* Buf, St, put, put_json_str, put_value */
#include "orjson_number.h"

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

/* The C data interface export of a pyarrow object (array or record batch) into arr and sch (zeroed
 * first, so release_c is safe whatever happens); -1 with the Python error set when it fails. */
static inline int export_c(PyObject *obj, struct ArrowArray *arr, struct ArrowSchema *sch) {
    memset(arr, 0, sizeof *arr);
    memset(sch, 0, sizeof *sch);
    PyObject *ok = PyObject_CallMethod(obj, "_export_to_c", "KK", (unsigned long long)(uintptr_t)arr,
                                       (unsigned long long)(uintptr_t)sch);
    if (!ok) return -1;
    Py_DECREF(ok);
    return 0;
}

/* Release what export_c exported (nothing when it exported nothing). */
static inline void release_c(struct ArrowArray *arr, struct ArrowSchema *sch) {
    if (arr->release) arr->release(arr);
    if (sch->release) sch->release(sch);
}

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
/* Buffers (Buf, St, put, put_json_str, put_value: buf.h)                                      */

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

/* Every value under v is one orjson writes back unchanged (see orjson_number.h), and no object
 * repeats a key (orjson.loads would keep one). */
static inline int canonical(yyjson_val *v, int depth) {
    if (depth > MAX_DEPTH) return 0;
    switch (yyjson_get_type(v)) {
        case YYJSON_TYPE_RAW: return orjson_number(yyjson_get_raw(v), yyjson_get_len(v));
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

/* path = "/tools/N", tool N's pointer (the path of its losses). */
static inline void tool_ptr(St *st, Buf *path, size_t idx) {
    path->len = 0;
    puts_(st, path, "/tools/");
    put_i64(st, path, (int64_t)idx);
}

/* Python's obj.get(key) written as JSON: the value, or null when obj has no such key. */
static inline void put_get(St *st, Buf *b, yyjson_val *obj, const char *key) {
    yyjson_val *v = yyjson_obj_get(obj, key);
    if (v) put_value(st, b, v);
    else puts_(st, b, "null");
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

/* Bytes of string data in slots [a, z) of c (all of them for the whole column). */
static inline size_t col_bytes(const Col *c, int64_t a, int64_t z) {
    if (z <= a || !c->off) return 0;
    return (size_t)(c->off[c->base + z] - c->off[c->base + a]);
}

/* ------------------------------------------------------------------------------------------ */
/* One row encoder's state, loss columns, item-field losses, binding and the batch loop        */
/* (moved from encode.c so every encoder shares them)                                          */

/* One Chat message of the row being written. */
typedef struct {
    int64_t item;         /* the item it came from (-1: the instructions) */
    const char *role;     /* role text (static or in the table) */
    size_t role_len;
    int content;          /* C_ABSENT / C_NULL / C_VALUE (text at c_off, c_len in scratch) */
    size_t c_off, c_len;
    int content_str;      /* the content is a non-empty string (the leading-system rule) */
    int content_last;     /* content set after tool_calls were added (key order) */
    int64_t calls_first, ncalls; /* ranges of its tool calls in Enc.calls */
    const char *tcid;     /* tool messages: tool_call_id */
    size_t tcid_len;
} Msg;

typedef struct {
    size_t off, len;
} Range;

#include "anthropic_turns.h" /* the Anthropic turn rules' shapes: Enc holds them */

typedef struct Enc {
    St st;
    /* columns */
    Col conversation_id, source_format, record_kind, model, instr_form, items_form, tools, tool_choice, extra, nulls,
        null_names;
    Col instr_valid, instr_content, instr_blk_valid, instr_text;
    Col instr_cache, instr_cit, instr_extra; /* system blocks' keys (an Anthropic source's) */
    Col items, item_valid, section, group, part, type, native_type, role, id, call_id, name, namespace_, arguments,
        input, status, phase, content_form, content, encrypted_content, signature, iextra, inulls, inull_names;
    Col wrapper; /* an Anthropic message's opened keys (wrapper_json) */
    Col blk_valid, btype, btext, bann, blogp, bcache, bcit, bextra, bnulls, bnull_names;
    /* row state */
    int64_t r, start, end;
    int string_input;
    Msg *msgs;
    int64_t nmsgs, capmsgs;
    Range *calls;
    int64_t ncalls, capcalls;
    Buf scratch, tmp, tmp2, base, ptr, ptr2; /* reused row after row */
    Buf aux[3]; /* reused row after row, an encoder's own (lose_* use tmp and tmp2) */
    /* output */
    Buf out, out_off, native;
    Buf loss_row, path, path_off, kind, kind_off, detail, detail_off;
    int64_t nloss;
    /* the previous row's tools: rows of one log repeat their tool set (see tools_json) */
    struct {
        const char *text;
        size_t len;
        int valid, rc;
        Buf frag, texts, lens; /* the written fragment; its losses' path/kind/detail and lengths */
        int64_t nl;
    } tc;
    /* the Anthropic turn rules' state (encode_anthropic.c, anthropic_turns.h), reused row after row */
    int chat;      /* the row is a Chat request (calls nested in their assistant message), else Responses */
    int anthropic; /* the row is an Anthropic request body (anthropic_round_trip.c): pointers into /messages */
    int64_t loss0; /* the row's first loss */
    Blk *blk;
    int64_t nblk, capblk;
    Seg *seg;
    int64_t nseg, capseg;
    Turn *turn;
    int64_t nturn, capturn;
    int64_t *ix; /* scratch index lists (found calls, element lists) */
    int64_t nix, capix;
    Buf paths, p1, p2, p3, kb;
    size_t text_end; /* a Chat source's Responses "text" object: the output length just after it (0: none) */
} Enc;

#define FALLBACK 1

/* Value i of JSON-text column c (tools, tool_choice, an extra_json) parsed into *doc (NULL when the
 * value is null, nothing to do); FALLBACK when it is not canonical JSON (see parse). */
static inline int col_json(const Col *c, int64_t i, yyjson_doc **doc) {
    size_t n;
    const char *x = col_str(c, i, &n);
    *doc = NULL;
    if (!x) return 0;
    *doc = parse(x, n);
    return *doc ? 0 : FALLBACK;
}

/* col_json for a value the Python iterates as a dict (an extra_json): FALLBACK also when it is not
 * an object (.items() / .get would raise). */
static inline int col_json_obj(const Col *c, int64_t i, yyjson_doc **doc) {
    if (col_json(c, i, doc)) return FALLBACK;
    if (*doc && !yyjson_is_obj(yyjson_doc_get_root(*doc))) {
        yyjson_doc_free(*doc);
        *doc = NULL;
        return FALLBACK;
    }
    return 0;
}

static inline void lose_n(Enc *e, const char *path, size_t path_len, const char *kind, size_t kind_len,
                   const char *detail, size_t detail_len) {
    St *st = &e->st;
    put(st, &e->loss_row, &e->r, 8);
    put(st, &e->path, path, path_len);
    int64_t o = (int64_t)e->path.len;
    put(st, &e->path_off, &o, 8);
    put(st, &e->kind, kind, kind_len);
    o = (int64_t)e->kind.len;
    put(st, &e->kind_off, &o, 8);
    put(st, &e->detail, detail, detail_len);
    o = (int64_t)e->detail.len;
    put(st, &e->detail_off, &o, 8);
    e->nloss++;
}

static inline void lose(Enc *e, const char *path, size_t path_len, const char *kind, const char *detail,
                 size_t detail_len) {
    lose_n(e, path, path_len, kind, strlen(kind), detail, detail_len);
}

static inline void lose_s(Enc *e, const char *path, size_t path_len, const char *kind, const char *detail) {
    lose(e, path, path_len, kind, detail, strlen(detail));
}

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

/* Report `path` + `pre` + /KEY with `kind` and `lead` + "'KEY" + `tail` for a key of a JSON object
 * (path NULL: none; the path and detail are built in tmp2 and tmp). */
static inline void lose_key(Enc *e, const Buf *path, const char *pre, yyjson_val *k, const char *kind,
                            const char *lead, const char *tail) {
    e->tmp2.len = 0;
    if (path) put(&e->st, &e->tmp2, path->p, path->len);
    if (pre) puts_(&e->st, &e->tmp2, pre);
    put_ptr(&e->st, &e->tmp2, yyjson_get_str(k), yyjson_get_len(k));
    e->tmp.len = 0;
    puts_(&e->st, &e->tmp, lead);
    puts_(&e->st, &e->tmp, "'");
    put(&e->st, &e->tmp, yyjson_get_str(k), yyjson_get_len(k));
    puts_(&e->st, &e->tmp, tail);
    lose(e, e->tmp2.p, e->tmp2.len, kind, e->tmp.p, e->tmp.len);
}

/* openai_top_extra's and to_anthropic's lose_nulls: for each name in row r's null_fields, in order, a
 * request_field loss "explicit null 'X' dropped" at /X (every target drops them all: none has a slot
 * for an explicit null). 0, or FALLBACK when a name is null. */
static inline int lose_null_fields(Enc *e) {
    St *st = &e->st;
    if (!col_valid(&e->nulls, e->r)) return 0;
    int64_t a, z;
    col_list(&e->nulls, e->r, &a, &z);
    for (int64_t q = a; q < z; q++) {
        size_t n;
        const char *s = col_str(&e->null_names, q, &n);
        if (!s) return FALLBACK;
        e->tmp2.len = 0;
        put_ptr(st, &e->tmp2, s, n);
        e->tmp.len = 0;
        puts_(st, &e->tmp, "explicit null '");
        put(st, &e->tmp, s, n);
        puts_(st, &e->tmp, "' dropped");
        lose(e, e->tmp2.p, e->tmp2.len, "request_field", e->tmp.p, e->tmp.len);
    }
    return 0;
}

/* The item fields a target may have no slot for: name, loss kind (Ctx.FIELD_KINDS), column, and the
 * source's key when it is not the field's name (Ctx.wire_key: Chat's tool_call_id; NULL: the name). */
typedef struct {
    const char *name;
    const char *kind;
    size_t col; /* offsetof(Enc, column) */
    const char *key;
} Field;

#define FIELD(n, k, c) {n, k, offsetof(Enc, c), NULL}

/* Ctx.lose_fields: each field item i had (a value or an explicit null) has no slot. */
static inline void lose_fields(Enc *e, int64_t i, const Buf *base, const Field *fields) {
    for (; fields->name; fields++) {
        const Col *c = (const Col *)((const char *)e + fields->col);
        if (!col_valid(c, i) && !has_null(&e->inulls, &e->inull_names, i, fields->name)) continue;
        const char *key = fields->key ? fields->key : fields->name;
        size_t n = strlen(key);
        e->tmp2.len = 0;
        put(&e->st, &e->tmp2, base->p, base->len);
        put_ptr(&e->st, &e->tmp2, key, n);
        e->tmp.len = 0;
        put(&e->st, &e->tmp, "'", 1);
        put(&e->st, &e->tmp, key, n);
        puts_(&e->st, &e->tmp, "' has no slot");
        lose(e, e->tmp2.p, e->tmp2.len, fields->kind, e->tmp.p, e->tmp.len);
    }
}

/* Ctx.lose_extra: every unmodelled key of item i (an Anthropic source's is_error and cache_control
 * have kinds of their own: Ctx.ANTHROPIC_KEY_KINDS). */
static inline int lose_extra(Enc *e, int64_t i, const Buf *base) {
    yyjson_doc *doc;
    if (col_json_obj(&e->iextra, i, &doc)) return FALLBACK;
    if (!doc) return 0;
    size_t idx, max;
    yyjson_val *k, *v;
    yyjson_obj_foreach(yyjson_doc_get_root(doc), idx, max, k, v) {
        const char *kind = !e->anthropic ? "unknown_field"
                           : key_is(k, "is_error") ? "tool_error"
                           : key_is(k, "cache_control") ? "cache_control" : "unknown_field";
        lose_key(e, base, NULL, k, kind, "", "' has no slot in the target");
    }
    yyjson_doc_free(doc);
    return 0;
}

/* Ctx.lose_chat_call_keys: the keys of the `function` / `custom` object of a Chat call's extra_json
 * (item i), then its other keys, each an unknown_field with no slot (`tail`: "' has no slot in ...").
 * FALLBACK when the extra_json or that object is not an object (Python iterates what is there). */
static inline int lose_chat_call_keys(Enc *e, int64_t i, const Buf *base, int custom, const char *tail) {
    yyjson_doc *doc;
    if (col_json(&e->iextra, i, &doc)) return FALLBACK;
    if (!doc) return 0;
    yyjson_val *root = yyjson_doc_get_root(doc);
    const char *sub_key = custom ? "custom" : "function";
    yyjson_val *sub = yyjson_is_obj(root) ? yyjson_obj_get(root, sub_key) : NULL;
    if (!yyjson_is_obj(root) || (sub && !yyjson_is_obj(sub))) {
        yyjson_doc_free(doc);
        return FALLBACK;
    }
    size_t idx, max;
    yyjson_val *k, *v;
    if (sub) {
        const char *pre = custom ? "/custom" : "/function";
        yyjson_obj_foreach(sub, idx, max, k, v) lose_key(e, base, pre, k, "unknown_field", "", tail);
    }
    yyjson_obj_foreach(root, idx, max, k, v) {
        if (!key_is(k, sub_key)) lose_key(e, base, NULL, k, "unknown_field", "", tail);
    }
    yyjson_doc_free(doc);
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* tools and tool_choice: the walk every target shares (each target's own rules are its callback) */

/* One element of the row's tools list written by a target's rules (to_chat._tools,
 * to_responses._tools, to_anthropic._tools): into out, *wrote = 1 when the tool is kept, else its
 * loss reported at path ("/tools/N"). 0, or FALLBACK for a value the target's Python would fail on. */
typedef int (*ToolFn)(Enc *e, yyjson_val *tool, size_t idx, Buf *path, Buf *out, int *wrote);

/* The row's tools as every target writes them: `,"tools":[...]` into b, each element by one(); when
 * the value is not a list, or a non-empty list keeps no tool, nothing is written and none_detail is
 * the loss at /tools (an empty list is kept as it is). path: scratch for the element pointers. */
static inline int write_tools(Enc *e, Buf *b, Buf *path, ToolFn one, const char *none_detail) {
    St *st = &e->st;
    yyjson_doc *doc;
    if (col_json(&e->tools, e->r, &doc)) return FALLBACK;
    if (!doc) return 0;
    yyjson_val *raw = yyjson_doc_get_root(doc);
    size_t start = b->len;
    puts_(st, b, ",\"tools\":[");
    int64_t kept = 0;
    int rc = 0;
    if (yyjson_is_arr(raw)) {
        size_t idx, max;
        yyjson_val *tool;
        yyjson_arr_foreach(raw, idx, max, tool) {
            tool_ptr(st, path, idx);
            size_t mark = b->len;
            if (kept) put_byte(st, b, ',');
            int wrote = 0;
            rc = one(e, tool, idx, path, b, &wrote);
            if (rc) break;
            if (wrote) kept++;
            else b->len = mark;
        }
    }
    put_byte(st, b, ']');
    if (!rc && !kept && !(yyjson_is_arr(raw) && yyjson_arr_size(raw) == 0)) {
        b->len = start;
        lose_s(e, "/tools", 6, "tools", none_detail);
    }
    yyjson_doc_free(doc);
    return rc;
}

/* The row's tool_choice, parsed, handed to a target's rules (one), which write `,"tool_choice":...`
 * into b or report its loss. 0, or FALLBACK (a value outside the canonical subset, or one() says so). */
static inline int write_tool_choice(Enc *e, Buf *b, int (*one)(Enc *e, yyjson_val *raw, Buf *b)) {
    yyjson_doc *doc;
    if (col_json(&e->tool_choice, e->r, &doc)) return FALLBACK;
    if (!doc) return 0;
    int rc = one(e, yyjson_doc_get_root(doc), b);
    yyjson_doc_free(doc);
    return rc;
}

/* One top-level key an OpenAI target may carry, written by the target's rules (to_chat._top,
 * to_responses._top) into b or reported; *state: the target's own, 0 at the first key. 0 or FALLBACK. */
typedef int (*TopKeyFn)(Enc *e, yyjson_val *k, yyjson_val *v, Buf *b, int *state);

/* _context.openai_top_extra: the request's explicit nulls reported, then each unmodelled top-level
 * key in source order handed to carry() (an Anthropic source's metadata, {user_id} where OpenAI's is
 * a free map, reported here). */
static inline int openai_top_extra(Enc *e, Buf *b, TopKeyFn carry) {
    if (lose_null_fields(e)) return FALLBACK;
    e->text_end = 0;
    yyjson_doc *doc;
    if (col_json_obj(&e->extra, e->r, &doc)) return FALLBACK;
    if (!doc) return 0;
    int state = 0, rc = 0;
    size_t idx, max;
    yyjson_val *k, *v;
    yyjson_obj_foreach(yyjson_doc_get_root(doc), idx, max, k, v) {
        if (e->anthropic && key_is(k, "metadata")) {
            lose_s(e, "/metadata", 9, "request_field", "Anthropic metadata is not OpenAI metadata");
        } else if ((rc = carry(e, k, v, b, &state))) {
            break;
        }
    }
    yyjson_doc_free(doc);
    return rc;
}

/* _context.OPENAI_SHARED_KEYS: top-level request keys Chat and Responses both type alike. */
#define OPENAI_SHARED_KEYS \
    "prompt_cache_key", "prompt_cache_retention", "safety_identifier", "top_logprobs", "moderation"

/* _context.JSON_SCHEMA_KEYS: the keys of a json_schema response format both OpenAI APIs type. */
#define JSON_SCHEMA_KEYS "name", "description", "schema", "strict"

/* _context.FORMAT_TYPES: a response format's "type" (its value in *type) when it is one both OpenAI
 * APIs take: 2 for json_schema, 1 for text / json_object, else 0. */
static inline int format_type(yyjson_val *fmt, yyjson_val **type) {
    static const char *const simple[] = {"text", "json_object", NULL};
    *type = yyjson_is_obj(fmt) ? yyjson_obj_get(fmt, "type") : NULL;
    if (!yyjson_is_str(*type)) return 0;
    return key_is(*type, "json_schema") ? 2 : key_in(*type, simple) ? 1 : 0;
}

/* _context.stop_fits: a list of 1 to 4 strings (CHAT_MAX_STOP). */
static inline int stop_fits(yyjson_val *v) {
    size_t n = yyjson_arr_size(v), idx, max;
    yyjson_val *x;
    if (!yyjson_is_arr(v) || n < 1 || n > 4) return 0;
    yyjson_arr_foreach(v, idx, max, x) {
        if (!yyjson_is_str(x)) return 0;
    }
    return 1;
}

/* _context.CHAT_SERVICE_TIERS: the service tiers a Chat request takes. */
#define CHAT_SERVICE_TIERS "auto", "default", "flex", "scale", "priority", "fast"

/* An Anthropic source's tool (name, description, input_schema, and the boolean `flags` the caller
 * carried: _context.anthropic_tool_flags): the keys the OpenAI targets have no slot for, then its
 * "type" tag (custom or null), which is not kept. */
static inline void lose_anthropic_tool_keys(Enc *e, yyjson_val *tool, const Buf *path, const char *no_slot,
                                            const char *const *flags) {
    static const char *const known[] = {"name", "description", "input_schema", "type", NULL};
    size_t idx, max;
    yyjson_val *k, *v;
    yyjson_obj_foreach(tool, idx, max, k, v) {
        if (key_in(k, known) || (yyjson_is_bool(v) && key_in(k, flags))) continue;
        lose_key(e, path, NULL, k, "tools", "tool ", no_slot);
    }
    if (yyjson_obj_get(tool, "type")) lose_s(e, path->p, path->len, "tools", "the tool's 'type' tag is not kept");
}

/* The modelled key names of source block j (type, its text key, the JSON columns, explicit nulls)
 * in the order ContentBlocks.block rebuilds them, at most 15; 0 or FALLBACK (a repeated key). */
static inline int block_key_names(Enc *e, int64_t j, const char **names, size_t *lens, int *nn) {
    size_t tl;
    const char *t = col_str(&e->btype, j, &tl);
    const char *text_key = "text";
    if (str_eq(t, tl, "refusal")) text_key = "refusal";
    if (str_eq(t, tl, "thinking")) text_key = "thinking";
    *nn = 0;
    if (t) names[*nn] = "type", lens[(*nn)++] = 4;
    if (col_valid(&e->btext, j)) names[*nn] = text_key, lens[(*nn)++] = strlen(text_key);
    static const char *const json_names[] = {"annotations", "logprobs", "cache_control", "citations"};
    Col *json_cols[] = {&e->bann, &e->blogp, &e->bcache, &e->bcit};
    for (int q = 0; q < 4; q++)
        if (col_valid(json_cols[q], j)) names[*nn] = json_names[q], lens[(*nn)++] = strlen(json_names[q]);
    if (!col_valid(&e->bnulls, j)) return 0;
    int64_t a, z;
    col_list(&e->bnulls, j, &a, &z);
    for (int64_t q = a; q < z; q++) {
        if (*nn >= 15) return FALLBACK;
        size_t n;
        const char *s = col_str(&e->bnull_names, q, &n);
        if (!s) return FALLBACK;
        if (str_eq(s, n, "text")) s = text_key, n = strlen(text_key);
        for (int p = 0; p < *nn; p++) /* a repeated key: dict order rules we do not model */
            if (lens[p] == n && memcmp(names[p], s, n) == 0) return FALLBACK;
        names[*nn] = s, lens[(*nn)++] = n;
    }
    return 0;
}

/* Block key s (path: the block's pointer) reported as Ctx.lose_block_keys does, unless carried. */
static inline void lose_block_key(Enc *e, const Buf *path, const char *s, size_t n, const char *const *carried) {
    static const char *const kinds[][2] = {
        {"annotations", "annotations"}, {"logprobs", "logprobs"}, {"cache_control", "cache_control"},
        {"citations", "citations"}, {"image_url", "image"}, {"detail", "image"}, {"file_id", "file"},
        {"source", "image"}, {"prompt_cache_breakpoint", "cache_control"},
    };
    for (const char *const *c = carried; *c; c++)
        if (str_eq(s, n, *c)) return;
    const char *kind = "unknown_field";
    for (size_t m = 0; m < sizeof kinds / sizeof kinds[0]; m++)
        if (str_eq(s, n, kinds[m][0])) kind = kinds[m][1];
    e->tmp2.len = 0;
    put(&e->st, &e->tmp2, path->p, path->len);
    put_ptr(&e->st, &e->tmp2, s, n);
    e->tmp.len = 0;
    put(&e->st, &e->tmp, "'", 1);
    put(&e->st, &e->tmp, s, n);
    puts_(&e->st, &e->tmp, "' is not carried");
    lose(e, e->tmp2.p, e->tmp2.len, kind, e->tmp.p, e->tmp.len);
}

/* The key names of source block j in the order ContentBlocks.block rebuilds them (the modelled
 * ones, then its extra_json's); each one not in `carried` reported as Ctx.lose_block_keys does.
 * 0 or FALLBACK (an extra key repeating a modelled one). */
static inline int lose_block_keys(Enc *e, int64_t j, const Buf *path, const char *const *carried) {
    const char *names[16];
    size_t lens[16];
    int nn;
    if (block_key_names(e, j, names, lens, &nn)) return FALLBACK;
    size_t xn;
    const char *x = col_str(&e->bextra, j, &xn);
    yyjson_doc *doc = NULL;
    yyjson_val *root = NULL;
    size_t idx, max;
    yyjson_val *k, *v;
    if (x && xn > 2) {
        doc = parse(x, xn);
        if (!doc) return FALLBACK;
        root = yyjson_doc_get_root(doc);
        int repeated = !yyjson_is_obj(root);
        if (!repeated) {
            yyjson_obj_foreach(root, idx, max, k, v) {
                for (int p = 0; p < nn; p++)
                    repeated |= lens[p] == yyjson_get_len(k) && memcmp(names[p], yyjson_get_str(k), lens[p]) == 0;
            }
        }
        if (repeated) {
            yyjson_doc_free(doc);
            return FALLBACK;
        }
    }
    for (int q = 0; q < nn; q++) lose_block_key(e, path, names[q], lens[q], carried);
    if (root) {
        yyjson_obj_foreach(root, idx, max, k, v) lose_block_key(e, path, yyjson_get_str(k), yyjson_get_len(k), carried);
        yyjson_doc_free(doc);
    }
    return 0;
}

/* _context.cache_breakpoint for a Chat or Responses row (the caller checks): block j's
 * prompt_cache_breakpoint (OpenAI's cache hint, in its extra_json) when it is an object, written to
 * `out` as ,"prompt_cache_breakpoint":VALUE (the value as orjson writes it back): 1; 0 when there is
 * none to carry; -1 when the extra_json does not parse (or not provably as orjson reads it: the row
 * falls back). */
static inline int put_cache_breakpoint(Enc *e, int64_t j, Buf *out) {
    size_t xn;
    const char *x = col_str(&e->bextra, j, &xn);
    if (!x) return 0;
    yyjson_doc *doc = parse(x, xn);
    if (!doc) return -1;
    yyjson_val *root = yyjson_doc_get_root(doc);
    yyjson_val *v = yyjson_is_obj(root) ? yyjson_obj_get(root, "prompt_cache_breakpoint") : NULL;
    int got = v && yyjson_is_obj(v);
    if (got) {
        puts_(&e->st, out, ",\"prompt_cache_breakpoint\":");
        put_value(&e->st, out, v);
    }
    yyjson_doc_free(doc);
    return got;
}

/* Whether an Anthropic document block (its extra_json x) may become an OpenAI file part
 * (Ctx.openai_file: a base64 or url source): such rows are left to the per-record encoder; any
 * other document is dropped here as there. Unparseable: 1 (left to it too). */
static inline int document_may_convert(const char *x, size_t n) {
    if (!x) return 0;
    yyjson_doc *doc = parse(x, n);
    if (!doc) return 1;
    yyjson_val *root = yyjson_doc_get_root(doc);
    yyjson_val *src = yyjson_is_obj(root) ? yyjson_obj_get(root, "source") : NULL;
    yyjson_val *t = yyjson_is_obj(src) ? yyjson_obj_get(src, "type") : NULL;
    int may = t && (yyjson_equals_str(t, "base64") || yyjson_equals_str(t, "url"));
    yyjson_doc_free(doc);
    return may;
}

static inline const char *part_loss_kind(const char *t, size_t n) {
    static const char *const map[][2] = {
        {"input_image", "image"}, {"image", "image"}, {"image_url", "image"}, {"input_file", "file"},
        {"document", "file"}, {"file", "file"}, {"input_audio", "audio"}, {"refusal", "refusal"},
    };
    for (size_t k = 0; k < sizeof map / sizeof map[0]; k++)
        if (str_eq(t, n, map[k][0])) return map[k][1];
    return "unknown_field";
}

/* A string whose Python repr is '...' (printable ASCII, no quote or backslash). */
static inline int plain_repr(const char *s, size_t n) {
    for (size_t k = 0; k < n; k++)
        if (s[k] < 0x20 || s[k] > 0x7e || s[k] == '\'' || s[k] == '\\') return 0;
    return 1;
}

/* The text of item i's string-form content as the Anthropic encoders read it (its first block's);
 * NULL when it has none (the row falls back). */
static inline const char *string_content(Enc *e, int64_t i, size_t *n) {
    int64_t a, z;
    col_list(&e->content, i, &a, &z);
    return a < z ? col_str(&e->btext, a, n) : NULL;
}

/* Call and output item types (to_*.py: CALLS, OUTPUTS). */
static inline int is_call(const char *t, size_t n) { return str_eq(t, n, "function_call") || str_eq(t, n, "custom_tool_call"); }

static inline int is_output(const char *t, size_t n) {
    return str_eq(t, n, "function_call_output") || str_eq(t, n, "custom_tool_call_output");
}

static inline int ends_with(const char *t, size_t n, const char *suffix) {
    size_t m = strlen(suffix);
    return n >= m && memcmp(t + n - m, suffix, m) == 0;
}

/* An item the target (Chat, HF) has no message for -- reasoning, compaction, references, hosted and
 * unknown items -- and its losses at e->base (to_chat's and to_hf.lose_item's, the target named in
 * the details). Returns whether it ends the assistant message calls attach to. */
static inline int dropped_item(Enc *e, int64_t i, const char *t, size_t tl, const char *target) {
    St *st = &e->st;
    Buf *base = &e->base;
    if (str_eq(t, tl, "reasoning")) {
        e->tmp.len = 0;
        puts_(st, &e->tmp, target);
        puts_(st, &e->tmp, " has no reasoning");
        lose(e, base->p, base->len, "reasoning", e->tmp.p, e->tmp.len);
        size_t bl = base->len;
        if (col_valid(&e->encrypted_content, i)) {
            int data = 0; /* Ctx.wire_key: a redacted thinking block's data */
            if (e->anthropic) {
                size_t nl;
                const char *nt = col_str(&e->native_type, i, &nl);
                data = str_eq(nt, nl, "redacted_thinking");
            }
            puts_(st, base, data ? "/data" : "/encrypted_content");
            lose_s(e, base->p, base->len, "encrypted_reasoning", "dropped");
            base->len = bl;
        }
        if (col_valid(&e->signature, i)) {
            puts_(st, base, "/signature");
            lose_s(e, base->p, base->len, "thinking_signature", "dropped");
            base->len = bl;
        }
        return 0;
    }
    if (str_eq(t, tl, "compaction")) {
        e->tmp.len = 0;
        puts_(st, &e->tmp, target);
        puts_(st, &e->tmp, " has no compaction items");
        lose(e, base->p, base->len, "compaction", e->tmp.p, e->tmp.len);
        return 1;
    }
    if (str_eq(t, tl, "item_reference")) {
        lose_s(e, base->p, base->len, "unknown_item", "an item reference cannot be resolved here");
        return 0;
    }
    int hosted = ends_with(t, tl, "_call") || ends_with(t, tl, "_call_output") || ends_with(t, tl, "_tool_result") ||
                 ends_with(t, tl, "_tool_use") || (tl >= 4 && memcmp(t, "mcp_", 4) == 0);
    e->tmp.len = 0;
    put_byte(st, &e->tmp, '\'');
    put(st, &e->tmp, t, tl);
    puts_(st, &e->tmp, "' has no equivalent in ");
    puts_(st, &e->tmp, target);
    lose(e, base->p, base->len, hosted ? "hosted_tool" : "unknown_item", e->tmp.p, e->tmp.len);
    return 1;
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

static inline int bind_all(Enc *e, struct ArrowArray *a, struct ArrowSchema *s) {
    int64_t base = a->offset;
    struct ArrowArray *c, *sa;
    struct ArrowSchema *cs, *ss;
    if (bind(a, s, "conversation_id", "u", base, &e->conversation_id, NULL, NULL) ||
        bind(a, s, "source_format", "u", base, &e->source_format, NULL, NULL) ||
        bind(a, s, "record_kind", "u", base, &e->record_kind, NULL, NULL) ||
        bind(a, s, "model", "u", base, &e->model, NULL, NULL) ||
        bind(a, s, "items_form", "u", base, &e->items_form, NULL, NULL) ||
        bind(a, s, "tools", "u", base, &e->tools, NULL, NULL) ||
        bind(a, s, "tool_choice", "u", base, &e->tool_choice, NULL, NULL) ||
        bind(a, s, "extra_json", "u", base, &e->extra, NULL, NULL) || bind_names(a, s, base, &e->nulls, &e->null_names))
        return -1;
    /* instructions: struct<form, content: list<block>> */
    if (bind(a, s, "instructions", "+s", base, &e->instr_valid, &c, &cs)) return -1;
    int64_t ib = e->instr_valid.base;
    if (bind(c, cs, "form", "u", ib, &e->instr_form, NULL, NULL)) return -1;
    struct ArrowArray *lc;
    struct ArrowSchema *lcs;
    if (bind(c, cs, "content", "+l", ib, &e->instr_content, &lc, &lcs)) return -1;
    if (list_struct(lc, lcs, &e->instr_blk_valid, &sa, &ss)) return -1;
    if (bind_blocks(sa, ss, e->instr_blk_valid.base, &e->instr_text, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL) ||
        bind(sa, ss, "cache_control", "u", e->instr_blk_valid.base, &e->instr_cache, NULL, NULL) ||
        bind(sa, ss, "citations", "u", e->instr_blk_valid.base, &e->instr_cit, NULL, NULL) ||
        bind(sa, ss, "extra_json", "u", e->instr_blk_valid.base, &e->instr_extra, NULL, NULL))
        return -1;
    /* items: list<item> */
    if (bind(a, s, "items", "+l", base, &e->items, &c, &cs)) return -1;
    struct ArrowArray *ia;
    struct ArrowSchema *is;
    if (list_struct(c, cs, &e->item_valid, &ia, &is)) return -1;
    int64_t b2 = e->item_valid.base;
    static const char *const names[] = {"section", "type", "native_type", "role", "id", "call_id", "name",
                                        "namespace", "arguments", "input", "status", "phase", "content_form",
                                        "encrypted_content", "signature", "extra_json", "wrapper_json"};
    Col *cols[] = {&e->section, &e->type, &e->native_type, &e->role, &e->id, &e->call_id, &e->name,
                   &e->namespace_, &e->arguments, &e->input, &e->status, &e->phase, &e->content_form,
                   &e->encrypted_content, &e->signature, &e->iextra, &e->wrapper};
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
        if (bind(ia, is, names[k], "u", b2, cols[k], NULL, NULL)) return -1;
    if (bind(ia, is, "group", "i", b2, &e->group, NULL, NULL) || bind(ia, is, "part", "i", b2, &e->part, NULL, NULL) ||
        bind_names(ia, is, b2, &e->inulls, &e->inull_names))
        return -1;
    if (bind(ia, is, "content", "+l", b2, &e->content, &lc, &lcs)) return -1;
    if (list_struct(lc, lcs, &e->blk_valid, &sa, &ss)) return -1;
    return bind_blocks(sa, ss, e->blk_valid.base, &e->btext, &e->btype, &e->bann, &e->blogp, &e->bcache, &e->bcit,
                       &e->bextra, &e->bnulls, &e->bnull_names);
}

static inline void enc_free(Enc *e) {
    Buf *bufs[] = {&e->scratch, &e->tmp, &e->tmp2, &e->base, &e->ptr, &e->ptr2, &e->out, &e->out_off, &e->native, &e->loss_row, &e->path,
                   &e->path_off, &e->kind, &e->kind_off, &e->detail, &e->detail_off};
    for (size_t k = 0; k < sizeof bufs / sizeof bufs[0]; k++) free(bufs[k]->p);
    free(e->msgs);
    free(e->calls);
    free(e->tc.frag.p);
    free(e->tc.texts.p);
    free(e->tc.lens.p);
    for (int k = 0; k < 3; k++) free(e->aux[k].p);
    Buf *abufs[] = {&e->paths, &e->p1, &e->p2, &e->p3, &e->kb};
    for (size_t k = 0; k < sizeof abufs / sizeof abufs[0]; k++) free(abufs[k]->p);
    for (int64_t k = 0; k < e->capturn; k++) free(e->turn[k].s);
    free(e->turn);
    free(e->blk);
    free(e->seg);
    free(e->ix);
}

/* The entry points' common body: bind the canonical RecordBatch `batch` (Arrow C data interface), run
 * `row` over every row with the GIL released (a row it returns FALLBACK for is rolled back: no text,
 * no losses, native byte 0), and hand the output buffers to Python. `name` prefixes the errors. */
static inline PyObject *run_encoder(PyObject *batch, int (*row)(Enc *), const char *name) {
    struct ArrowArray arr;
    struct ArrowSchema sch;
    if (export_c(batch, &arr, &sch)) return NULL;
    Enc *e = (Enc *)calloc(1, sizeof(Enc));
    PyObject *result = NULL;
    if (!e) {
        PyErr_NoMemory();
        goto out;
    }
    if (strcmp(sch.format, "+s") != 0 || bind_all(e, &arr, &sch)) {
        PyErr_Format(PyExc_ValueError, "%s: the batch does not have the canonical schema", name);
        goto out;
    }
    int64_t n = arr.length;
    Py_BEGIN_ALLOW_THREADS
    St *st = &e->st;
    if (n) {
        int64_t i0, i1, b0 = 0, b1 = 0, z;
        col_list(&e->items, 0, &i0, &z);
        col_list(&e->items, n - 1, &z, &i1);
        if (i1 > i0) { /* the blocks of items i0 .. i1 - 1 */
            col_list(&e->content, i0, &b0, &z);
            col_list(&e->content, i1 - 1, &z, &b1);
        }
        size_t text = col_bytes(&e->btext, b0, b1) + col_bytes(&e->arguments, i0, i1) + col_bytes(&e->input, i0, i1) +
                      col_bytes(&e->tools, 0, n) + col_bytes(&e->extra, 0, n) + col_bytes(&e->model, 0, n);
        reserve(st, &e->out, text + text / 8 + (size_t)(i1 - i0) * 48 + (size_t)n * 64);
        reserve(st, &e->out_off, (size_t)(n + 1) * 8);
        reserve(st, &e->native, (size_t)n);
    }
    int64_t zero = 0;
    put(st, &e->out_off, &zero, 8);
    put(st, &e->path_off, &zero, 8);
    put(st, &e->kind_off, &zero, 8);
    put(st, &e->detail_off, &zero, 8);
    for (int64_t r = 0; r < n && !st->oom; r++) {
        e->r = r;
        size_t out_len = e->out.len, nloss = (size_t)e->nloss;
        size_t lens[7] = {e->loss_row.len, e->path.len, e->path_off.len, e->kind.len, e->kind_off.len, e->detail.len,
                          e->detail_off.len};
        uint8_t native = row(e) == 0;
        if (!native) { /* roll back what the row wrote */
            e->out.len = out_len;
            e->nloss = (int64_t)nloss;
            Buf *bufs[7] = {&e->loss_row, &e->path, &e->path_off, &e->kind, &e->kind_off, &e->detail, &e->detail_off};
            for (int k = 0; k < 7; k++) bufs[k]->len = lens[k];
        }
        int64_t o = (int64_t)e->out.len;
        put(st, &e->out_off, &o, 8);
        put(st, &e->native, &native, 1);
    }
    Py_END_ALLOW_THREADS
    if (e->st.oom) {
        PyErr_NoMemory();
        goto out;
    }
    result = Py_BuildValue("(NNNNNNNNNN)", export_buf(&e->out), export_buf(&e->out_off), export_buf(&e->native),
                           export_buf(&e->loss_row), export_buf(&e->path), export_buf(&e->path_off),
                           export_buf(&e->kind), export_buf(&e->kind_off), export_buf(&e->detail),
                           export_buf(&e->detail_off));
out:
    if (e) {
        enc_free(e);
        free(e);
    }
    release_c(&arr, &sch);
    return result;
}

#endif
