/*
 * pipeline._native: the compiled core of chatlake's exact decoder.
 *
 * decode_lines(fmt, lines, source_file, first_line) parses JSONL lines of OpenAI Responses (request
 * bodies / Response objects) or Chat Completions (request bodies / completion objects) with the
 * vendored yyjson and walks them into flat Arrow buffers (one set per column of the canonical
 * table, see pipeline/schema.py). Python assembles the table from those buffers column at a time
 * (pipeline/formats/_native_decode.py).
 *
 * The walks mirror pipeline/formats/responses.py, chat.py, _common.py and _record.py rule for rule. A line
 * it cannot prove it stores byte-identically to the Python decoder is not decoded here: it is
 * returned as a fallback (index + reason) and the Python decoder handles that line alone. That
 * includes every line the Python decoder would reject, so rejection reasons have one source.
 *
 * Everything between taking the line pointers and building the result objects runs without the
 * GIL: the caller keeps the list of lines alive and the walk touches no Python object.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vendor/yyjson/yyjson.h"
#include "buf.h" /* Buf, St, put, JSON strings and values as orjson writes them */
#include "orjson_number.h"
#include "blake2b.h"

/* Deepest nesting decoded natively; deeper records go to the Python decoder (whose own limit,
 * orjson's 255 levels when serialising, decides). Also bounds the recursion of the checks. */
#define MAX_DEPTH 128
/* Objects with more keys than this go to Python (the duplicate-key check is quadratic). */
#define MAX_KEYS 1024

/* ------------------------------------------------------------------------------------------ */
/* Arrow-shaped columns (on buf.h's growable buffer)                                         */

/* A string column: int32 offsets (n + 1), data, one validity byte per value (a bitmap at export). */
typedef struct {
    Buf off, data, valid;
    int64_t n;
} StrCol;

/* An int32 column, or the offsets of a list column (then `vals` holds n + 1 offsets). */
typedef struct {
    Buf vals, valid;
    int64_t n;
} I32Col;

static void sc_init(St *st, StrCol *s) {
    int32_t zero = 0;
    put(st, &s->off, &zero, 4);
}

/* Close the value written into s->data since the last offset. */
static void sc_commit(St *st, StrCol *s) {
    if (s->data.len > INT32_MAX) st->overflow = 1;
    int32_t o = (int32_t)s->data.len;
    put(st, &s->off, &o, 4);
    put_byte(st, &s->valid, 1);
    s->n++;
}

static void sc_push(St *st, StrCol *s, const char *p, size_t n) {
    put(st, &s->data, p, n);
    sc_commit(st, s);
}

static void sc_null(St *st, StrCol *s) {
    if (st->oom) return;
    int32_t o = (int32_t)s->data.len;
    put(st, &s->off, &o, 4);
    put_byte(st, &s->valid, 0);
    s->n++;
}

static void sc_truncate(StrCol *s, int64_t n) {
    s->n = n;
    s->off.len = (size_t)(n + 1) * 4;
    int32_t end;
    memcpy(&end, s->off.p + (size_t)n * 4, 4);
    s->data.len = (size_t)end;
    s->valid.len = (size_t)n;
}

static void ic_push(St *st, I32Col *c, int32_t v, int valid) {
    put(st, &c->vals, &v, 4);
    put_byte(st, &c->valid, (char)valid);
    c->n++;
}

/* List offsets start with one 0; lc_push appends the end of the next list. */
static void lc_init(St *st, I32Col *c) {
    int32_t zero = 0;
    put(st, &c->vals, &zero, 4);
}

static void ic_truncate(I32Col *c, int64_t n, int is_list) {
    c->n = n;
    c->vals.len = (size_t)(n + (is_list ? 1 : 0)) * 4;
    c->valid.len = (size_t)n;
}

/* ------------------------------------------------------------------------------------------ */
/* Column inventory (names are what _native_decode.py reads)                                   */

enum {
    /* conversation level */
    S_CID, S_FMT, S_KIND, S_FILE, S_MODEL, S_IFORM, S_ITEMS_FORM, S_TOOLS, S_TOOL_CHOICE, S_EXTRA,
    S_NULLS,
    /* item level */
    S_SECTION, S_TYPE, S_NATIVE, S_ROLE, S_ID, S_CALL_ID, S_NAME, S_NAMESPACE, S_ARGUMENTS, S_INPUT,
    S_STATUS, S_PHASE, S_FORM, S_ENC, S_SIG, S_IEXTRA, S_WRAPPER, S_INULLS,
    /* three block levels: instructions content, item content, item summary */
    S_BLOCKS,
    N_STR = S_BLOCKS + 3 * 8
};
/* offsets of a block level's columns from its base */
enum { B_TYPE, B_TEXT, B_ANNOTATIONS, B_LOGPROBS, B_CACHE_CONTROL, B_CITATIONS, B_EXTRA, B_NULLS };
enum { LEVEL_INSTR, LEVEL_CONTENT, LEVEL_SUMMARY };

static const char *STR_NAMES[N_STR] = {
    "conversation_id", "source_format", "record_kind", "source_file", "model", "instructions.form",
    "items_form", "tools", "tool_choice", "extra_json", "null_fields.item",
    "items.section", "items.type", "items.native_type", "items.role", "items.id", "items.call_id",
    "items.name", "items.namespace", "items.arguments", "items.input", "items.status", "items.phase",
    "items.content_form", "items.encrypted_content", "items.signature", "items.extra_json",
    "items.wrapper_json", "items.null_fields.item",
    "instructions.content.type", "instructions.content.text", "instructions.content.annotations",
    "instructions.content.logprobs", "instructions.content.cache_control",
    "instructions.content.citations", "instructions.content.extra_json",
    "instructions.content.null_fields.item",
    "items.content.type", "items.content.text", "items.content.annotations", "items.content.logprobs",
    "items.content.cache_control", "items.content.citations", "items.content.extra_json",
    "items.content.null_fields.item",
    "items.summary.type", "items.summary.text", "items.summary.annotations", "items.summary.logprobs",
    "items.summary.cache_control", "items.summary.citations", "items.summary.extra_json",
    "items.summary.null_fields.item",
};

enum { I_GROUP, I_PART, I_NITEMS, N_INT };
static const char *INT_NAMES[N_INT] = {"items.group", "items.part", "n_items"};

enum {
    L_NULLS, L_ITEMS, L_INSTR_CONTENT, L_CONTENT, L_SUMMARY, L_INULLS, L_BNULLS, /* + level */
    N_LIST = L_BNULLS + 3
};
static const char *LIST_NAMES[N_LIST] = {
    "null_fields", "items", "instructions.content", "items.content", "items.summary",
    "items.null_fields", "instructions.content.null_fields", "items.content.null_fields",
    "items.summary.null_fields",
};

typedef struct {
    St st;
    StrCol s[N_STR];
    I32Col i[N_INT];
    I32Col l[N_LIST];
    Buf line;          /* int64 source_line of each native row */
    Buf row_index;     /* int64 index (in the input list) of each native row */
    int64_t rows;
    const char *source_file;
    Py_ssize_t source_file_len;
    int has_source_file;
} Ctx;

typedef struct {
    int64_t s[N_STR], i[N_INT], l[N_LIST], rows;
} Mark;

static void ctx_init(Ctx *c) {
    memset(c, 0, sizeof(*c));
    for (int k = 0; k < N_STR; k++) sc_init(&c->st, &c->s[k]);
    for (int k = 0; k < N_LIST; k++) lc_init(&c->st, &c->l[k]);
}

static void ctx_free(Ctx *c) {
    for (int k = 0; k < N_STR; k++) {
        free(c->s[k].off.p);
        free(c->s[k].data.p);
        free(c->s[k].valid.p);
    }
    for (int k = 0; k < N_INT; k++) {
        free(c->i[k].vals.p);
        free(c->i[k].valid.p);
    }
    for (int k = 0; k < N_LIST; k++) {
        free(c->l[k].vals.p);
        free(c->l[k].valid.p);
    }
    free(c->line.p);
    free(c->row_index.p);
}

static void mark(Ctx *c, Mark *m) {
    for (int k = 0; k < N_STR; k++) m->s[k] = c->s[k].n;
    for (int k = 0; k < N_INT; k++) m->i[k] = c->i[k].n;
    for (int k = 0; k < N_LIST; k++) m->l[k] = c->l[k].n;
    m->rows = c->rows;
}

static void rollback(Ctx *c, const Mark *m) {
    for (int k = 0; k < N_STR; k++) sc_truncate(&c->s[k], m->s[k]);
    for (int k = 0; k < N_INT; k++) ic_truncate(&c->i[k], m->i[k], 0);
    for (int k = 0; k < N_LIST; k++) ic_truncate(&c->l[k], m->l[k], 1);
    c->rows = m->rows;
    c->line.len = (size_t)m->rows * 8;
    c->row_index.len = (size_t)m->rows * 8;
}

/* Close one list whose values are the first `end` values of its child. */
static void list_close(Ctx *c, int l, int64_t end, int valid) {
    if (end > INT32_MAX) c->st.overflow = 1;
    I32Col *col = &c->l[l];
    int32_t e = (int32_t)end;
    put(&c->st, &col->vals, &e, 4);
    put_byte(&c->st, &col->valid, (char)valid);
    col->n++;
}

/* A null_fields list: names collected by a walk, pushed at the row's close (null when none). */
typedef struct {
    const char *name[16];
    int n;
} Nulls;

static void nulls_close(Ctx *c, int list, int child, const Nulls *nl) {
    StrCol *s = &c->s[child];
    for (int k = 0; k < nl->n; k++) sc_push(&c->st, s, nl->name[k], strlen(nl->name[k]));
    list_close(c, list, s->n, nl->n > 0);
}

/* ------------------------------------------------------------------------------------------ */
/* What the native decoder can prove it stores exactly                                         */

enum {
    FB_OK = 0,
    FB_NOT_BYTES,  /* a line that is not a bytes object */
    FB_PARSE,      /* yyjson refused it (invalid JSON, invalid UTF-8, lone surrogate, ...) */
    FB_DUP_KEY,    /* an object repeats a key (the Python dict keeps the last value) */
    FB_NUMBER,     /* a number whose text orjson would write differently, or a 19+ digit integer */
    FB_DEPTH,      /* nesting deeper than MAX_DEPTH */
    FB_BIG_OBJECT, /* an object with more than MAX_KEYS keys */
    FB_SHAPE,      /* a record the Python decoder rejects, or a shape not implemented natively */
    FB_VALIDATION, /* a record a Python decode rule rejects (validate_<format>: the API's required fields) */
    FB_COUNT
};
static const char *REASONS[FB_COUNT] = {
    "ok", "not_bytes", "parse", "duplicate_key", "number", "depth", "big_object", "shape", "validation",
};

static int check_value(yyjson_val *v, int depth) {
    if (depth > MAX_DEPTH) return FB_DEPTH;
    switch (yyjson_get_type(v)) {
        case YYJSON_TYPE_RAW:
            return orjson_number(yyjson_get_raw(v), yyjson_get_len(v)) ? FB_OK : FB_NUMBER;
        case YYJSON_TYPE_ARR: {
            size_t idx, max;
            yyjson_val *x;
            yyjson_arr_foreach(v, idx, max, x) {
                int r = check_value(x, depth + 1);
                if (r) return r;
            }
            return FB_OK;
        }
        case YYJSON_TYPE_OBJ: {
            size_t n = yyjson_obj_size(v);
            if (n > MAX_KEYS) return FB_BIG_OBJECT;
            size_t idx, max;
            yyjson_val *k, *x;
            yyjson_obj_foreach(v, idx, max, k, x) {
                /* keys and values alternate in yyjson's flat layout: earlier keys are reachable
                 * by walking from the first key again */
                yyjson_val *prev = unsafe_yyjson_get_first(v);
                const char *ks = yyjson_get_str(k);
                size_t kl = yyjson_get_len(k);
                for (size_t j = 0; j < idx; j++) {
                    if (yyjson_get_len(prev) == kl && memcmp(yyjson_get_str(prev), ks, kl) == 0)
                        return FB_DUP_KEY;
                    prev = unsafe_yyjson_get_next(prev + 1);
                }
                int r = check_value(x, depth + 1);
                if (r) return r;
            }
            return FB_OK;
        }
        default:
            return FB_OK;
    }
}

/* ------------------------------------------------------------------------------------------ */
/* The walks (pipeline/formats/responses.py, chat.py, _common.py, _record.py)                   */

static inline int key_is(yyjson_val *k, const char *lit, size_t n) {
    return yyjson_get_len(k) == n && memcmp(yyjson_get_str(k), lit, n) == 0;
}
#define KEY_IS(k, lit) key_is((k), (lit), sizeof(lit) - 1)

static inline int str_is(const char *s, size_t n, const char *lit) {
    return strlen(lit) == n && memcmp(s, lit, n) == 0;
}

/* Keep a key verbatim in the extra_json being written into `col` (opened on the first key). */
static void keep(St *st, StrCol *col, int *open, yyjson_val *k, yyjson_val *v) {
    put_byte(st, &col->data, *open ? ',' : '{');
    *open = 1;
    put_json_str(st, &col->data, yyjson_get_str(k), yyjson_get_len(k));
    put_byte(st, &col->data, ':');
    put_value(st, &col->data, v);
}

static void close_extra(St *st, StrCol *col, int open) {
    if (open) {
        put_byte(st, &col->data, '}');
        sc_commit(st, col);
    } else {
        sc_null(st, col);
    }
}

static void push_json(St *st, StrCol *col, yyjson_val *v) {
    if (v) {
        put_value(st, &col->data, v);
        sc_commit(st, col);
    } else {
        sc_null(st, col);
    }
}

/* A block holding only text (a plain-string content or instructions): BlockCols.add_text. */
static void text_block_typed(Ctx *c, int level, yyjson_val *text, const char *btype) {
    int base = S_BLOCKS + 8 * level;
    St *st = &c->st;
    if (btype) {
        sc_push(st, &c->s[base + B_TYPE], btype, strlen(btype));
    } else {
        sc_null(st, &c->s[base + B_TYPE]);
    }
    sc_push(st, &c->s[base + B_TEXT], yyjson_get_str(text), yyjson_get_len(text));
    for (int f = B_ANNOTATIONS; f <= B_EXTRA; f++) sc_null(st, &c->s[base + f]);
    list_close(c, L_BNULLS + level, c->s[base + B_NULLS].n, 0);
}

static void text_block(Ctx *c, int level, yyjson_val *text) { text_block_typed(c, level, text, NULL); }

static const char *BLOCK_JSON_KEYS[4] = {"annotations", "logprobs", "cache_control", "citations"};

/* _common.block_row: one content block (an object). */
static void block_row(Ctx *c, int level, yyjson_val *part) {
    int base = S_BLOCKS + 8 * level;
    St *st = &c->st;
    const char *text_key = "text";
    yyjson_val *tv = yyjson_obj_get(part, "type");
    if (tv && yyjson_is_str(tv)) {
        const char *t = yyjson_get_str(tv);
        size_t tl = yyjson_get_len(tv);
        if (str_is(t, tl, "refusal")) {
            text_key = "refusal";
        } else if (str_is(t, tl, "thinking")) {
            text_key = "thinking";
        }
    }
    size_t text_key_len = strlen(text_key);
    yyjson_val *type = NULL, *text = NULL, *json[4] = {NULL, NULL, NULL, NULL};
    Nulls nl = {.n = 0};
    int open = 0;
    StrCol *extra = &c->s[base + B_EXTRA];
    size_t idx, max;
    yyjson_val *k, *v;
    yyjson_obj_foreach(part, idx, max, k, v) {
        int is_type = KEY_IS(k, "type");
        if (is_type || key_is(k, text_key, text_key_len)) {
            if (yyjson_is_str(v)) {
                if (is_type) {
                    type = v;
                } else {
                    text = v;
                }
                continue;
            }
            if (yyjson_is_null(v)) {
                nl.name[nl.n++] = is_type ? "type" : "text";
                continue;
            }
        } else {
            int j = 0;
            for (; j < 4; j++) {
                if (key_is(k, BLOCK_JSON_KEYS[j], strlen(BLOCK_JSON_KEYS[j]))) break;
            }
            if (j < 4) {
                if (yyjson_is_null(v)) {
                    nl.name[nl.n++] = BLOCK_JSON_KEYS[j];
                } else {
                    json[j] = v;
                }
                continue;
            }
        }
        keep(st, extra, &open, k, v);
    }
    if (type) {
        sc_push(st, &c->s[base + B_TYPE], yyjson_get_str(type), yyjson_get_len(type));
    } else {
        sc_null(st, &c->s[base + B_TYPE]);
    }
    if (text) {
        sc_push(st, &c->s[base + B_TEXT], yyjson_get_str(text), yyjson_get_len(text));
    } else {
        sc_null(st, &c->s[base + B_TEXT]);
    }
    for (int j = 0; j < 4; j++) push_json(st, &c->s[base + B_ANNOTATIONS + j], json[j]);
    close_extra(st, extra, open);
    nulls_close(c, L_BNULLS + level, base + B_NULLS, &nl);
}

/* add_blocks: every element must be an object. Returns 0, or -1 to hand the record to Python. */
static int add_blocks(Ctx *c, int level, yyjson_val *arr) {
    size_t idx, max;
    yyjson_val *part;
    yyjson_arr_foreach(arr, idx, max, part) {
        if (!yyjson_is_obj(part)) return -1;
    }
    yyjson_arr_foreach(arr, idx, max, part) { block_row(c, level, part); }
    return 0;
}

/* Item keys with a string column, in the order of responses._SLOTS; their null_fields names. */
static const char *SLOT_KEYS[11] = {"type", "id", "call_id", "role", "name", "namespace",
                                    "arguments", "input", "status", "phase", "encrypted_content"};
static const char *SLOT_NULL_NAMES[11] = {"native_type", "id", "call_id", "role", "name", "namespace",
                                          "arguments", "input", "status", "phase",
                                          "encrypted_content"};
static const int SLOT_COLS[11] = {S_NATIVE, S_ID, S_CALL_ID, S_ROLE, S_NAME, S_NAMESPACE,
                                  S_ARGUMENTS, S_INPUT, S_STATUS, S_PHASE, S_ENC};

static int slot_of(yyjson_val *k) {
    const char *s = yyjson_get_str(k);
    size_t n = yyjson_get_len(k);
    for (int j = 0; j < 11; j++) {
        if (str_is(s, n, SLOT_KEYS[j])) return j;
    }
    return -1;
}

static void push_str(Ctx *c, int col, const char *s) { sc_push(&c->st, &c->s[col], s, strlen(s)); }

static void push_opt(Ctx *c, int col, yyjson_val *v) {
    if (v) {
        sc_push(&c->st, &c->s[col], yyjson_get_str(v), yyjson_get_len(v));
    } else {
        sc_null(&c->st, &c->s[col]);
    }
}

enum { SLOT_NATIVE, SLOT_ID, SLOT_CALL_ID, SLOT_ROLE, SLOT_NAME, SLOT_NAMESPACE, SLOT_ARGUMENTS,
       SLOT_INPUT, SLOT_STATUS, SLOT_PHASE, SLOT_ENC };

/* responses.FOREIGN_KEYS: the slot keys a modelled item type does not have, as a bit mask of slots;
 * such a key belongs to another item type and is kept in extra_json like any unknown key. */
#define SB(x) (1u << (x))
static unsigned foreign_slots(const char *kind, size_t n) {
    if (str_is(kind, n, "message"))
        return SB(SLOT_CALL_ID) | SB(SLOT_NAME) | SB(SLOT_NAMESPACE) | SB(SLOT_ARGUMENTS) | SB(SLOT_INPUT) |
               SB(SLOT_ENC);
    if (str_is(kind, n, "function_call")) return SB(SLOT_ROLE) | SB(SLOT_INPUT) | SB(SLOT_PHASE) | SB(SLOT_ENC);
    if (str_is(kind, n, "function_call_output") || str_is(kind, n, "custom_tool_call_output"))
        return SB(SLOT_ROLE) | SB(SLOT_ARGUMENTS) | SB(SLOT_INPUT) | SB(SLOT_PHASE) | SB(SLOT_ENC);
    if (str_is(kind, n, "custom_tool_call")) return SB(SLOT_ROLE) | SB(SLOT_ARGUMENTS) | SB(SLOT_PHASE) | SB(SLOT_ENC);
    if (str_is(kind, n, "reasoning"))
        return SB(SLOT_CALL_ID) | SB(SLOT_ROLE) | SB(SLOT_NAME) | SB(SLOT_NAMESPACE) | SB(SLOT_ARGUMENTS) |
               SB(SLOT_INPUT) | SB(SLOT_PHASE);
    return 0;
}
#undef SB

/* Which keys of `wrapper_from` form an item's wrapper_json: a Chat choice's keys but "message"
 * (always an object, "{}" too), an Anthropic message's keys but "role" and "content" (null when
 * there are none). */
enum { WRAP_CHOICE, WRAP_MESSAGE };

/* The parts of an item row only some formats set (Anthropic thinking / tool_use blocks). */
typedef struct {
    yyjson_val *signature;      /* string value of the signature column */
    yyjson_val *arguments_json; /* a value whose JSON text is the arguments column */
} ItemMore;

/* Close one item row (_build.close_item): its content / summary blocks were appended already, its
 * extra_json written into the column's data (`extra_open`); `role_literal` overrides slot role. */
static void push_item(Ctx *c, const char *section, int32_t group, int32_t part, const char *kind,
                      size_t kind_len, yyjson_val *slots[11], const char *role_literal, const char *form,
                      int extra_open, yyjson_val *wrapper_from, int wrapper_kind, const ItemMore *more,
                      const Nulls *nl, int has_content, int has_summary) {
    St *st = &c->st;
    push_str(c, S_SECTION, section);
    ic_push(st, &c->i[I_GROUP], group, 1);
    ic_push(st, &c->i[I_PART], part < 0 ? 0 : part, part >= 0);
    sc_push(st, &c->s[S_TYPE], kind, kind_len);
    for (int j = 0; j < 11; j++) {
        if (j == SLOT_ROLE && role_literal) {
            push_str(c, S_ROLE, role_literal);
        } else if (j == SLOT_ARGUMENTS && more && more->arguments_json) {
            push_json(st, &c->s[S_ARGUMENTS], more->arguments_json);
        } else {
            push_opt(c, SLOT_COLS[j], slots[j]);
        }
    }
    if (form) {
        push_str(c, S_FORM, form);
    } else {
        sc_null(st, &c->s[S_FORM]);
    }
    push_opt(c, S_SIG, more ? more->signature : NULL);
    close_extra(st, &c->s[S_IEXTRA], extra_open);
    StrCol *w = &c->s[S_WRAPPER];
    int first = 1;
    if (wrapper_from) {
        size_t idx, max;
        yyjson_val *k, *v;
        yyjson_obj_foreach(wrapper_from, idx, max, k, v) {
            if (wrapper_kind == WRAP_CHOICE ? KEY_IS(k, "message") : KEY_IS(k, "role") || KEY_IS(k, "content"))
                continue;
            put_byte(st, &w->data, first ? '{' : ',');
            first = 0;
            put_json_str(st, &w->data, yyjson_get_str(k), yyjson_get_len(k));
            put_byte(st, &w->data, ':');
            put_value(st, &w->data, v);
        }
        if (first && wrapper_kind == WRAP_CHOICE) put_byte(st, &w->data, '{');
    }
    if (wrapper_from && (!first || wrapper_kind == WRAP_CHOICE)) {
        put_byte(st, &w->data, '}');
        sc_commit(st, w);
    } else {
        sc_null(st, w);
    }
    nulls_close(c, L_INULLS, S_INULLS, nl);
    list_close(c, L_CONTENT, c->s[S_BLOCKS + 8 * LEVEL_CONTENT].n, has_content);
    list_close(c, L_SUMMARY, c->s[S_BLOCKS + 8 * LEVEL_SUMMARY].n, has_summary);
}

/* responses.decode_item. Returns 0, or -1 to hand the record to Python. */
static int decode_item(Ctx *c, yyjson_val *item, const char *section, int32_t index) {
    St *st = &c->st;
    if (!yyjson_is_obj(item)) return -1;
    yyjson_val *native = yyjson_obj_get(item, "type");
    const char *kind;
    size_t kind_len;
    if (native && yyjson_is_str(native)) {
        kind = yyjson_get_str(native);
        kind_len = yyjson_get_len(native);
    } else if (yyjson_obj_get(item, "role")) {
        kind = "message";
        kind_len = 7;
    } else if ((!native || yyjson_is_null(native)) && yyjson_obj_get(item, "id")) {
        kind = "item_reference";
        kind_len = 14;
    } else {
        return -1;
    }
    int is_message = str_is(kind, kind_len, "message");
    if (is_message) {
        yyjson_val *role = yyjson_obj_get(item, "role");
        if (!role || !yyjson_is_str(role)) return -1;
    }
    const char *payload_key = NULL;
    int lenient = 0;
    if (is_message || str_is(kind, kind_len, "reasoning")) {
        payload_key = "content";
    } else if (str_is(kind, kind_len, "function_call_output") ||
               str_is(kind, kind_len, "custom_tool_call_output")) {
        payload_key = "output";
        lenient = 1;
    }
    int reasoning = str_is(kind, kind_len, "reasoning");
    yyjson_val *slots[11] = {NULL};
    Nulls nl = {.n = 0};
    const char *form = NULL;
    int has_content = 0, has_summary = 0, open = 0;
    StrCol *extra = &c->s[S_IEXTRA];
    size_t idx, max;
    yyjson_val *k, *v;
    unsigned foreign = foreign_slots(kind, kind_len);
    yyjson_obj_foreach(item, idx, max, k, v) {
        int slot = slot_of(k);
        if (slot >= 0 && (foreign >> slot) & 1u) {
            keep(st, extra, &open, k, v);
        } else if (slot >= 0) {
            if (yyjson_is_str(v)) {
                slots[slot] = v;
            } else if (yyjson_is_null(v)) {
                nl.name[nl.n++] = SLOT_NULL_NAMES[slot];
            } else {
                keep(st, extra, &open, k, v);
            }
        } else if (payload_key && key_is(k, payload_key, strlen(payload_key))) {
            if (yyjson_is_str(v)) {
                form = "string";
                text_block(c, LEVEL_CONTENT, v);
                has_content = 1;
            } else if (lenient && !yyjson_is_arr(v) && !yyjson_is_null(v)) {
                keep(st, extra, &open, k, v);
                form = "absent";
            } else if (yyjson_is_arr(v)) {
                form = "parts";
                if (add_blocks(c, LEVEL_CONTENT, v)) return -1;
                has_content = 1;
            } else if (yyjson_is_null(v)) {
                form = "null";
            } else {
                return -1; /* expected string or array */
            }
        } else if (reasoning && KEY_IS(k, "summary") && (yyjson_is_arr(v) || yyjson_is_null(v))) {
            if (yyjson_is_null(v)) {
                nl.name[nl.n++] = "summary";
            } else {
                has_summary = 1;
                if (add_blocks(c, LEVEL_SUMMARY, v)) return -1;
            }
        } else {
            keep(st, extra, &open, k, v);
        }
    }
    if (payload_key && !form) form = "absent";
    push_item(c, section, index, -1, kind, kind_len, slots, NULL, form, open, NULL, 0, NULL, &nl, has_content,
              has_summary);
    return 0;
}

/* The item a string input stands for: one user message whose content is that string. */
static void string_input_item(Ctx *c, const char *section, yyjson_val *text) {
    yyjson_val *slots[11] = {NULL};
    Nulls nl = {.n = 0};
    text_block(c, LEVEL_CONTENT, text);
    push_item(c, section, 0, -1, "message", 7, slots, "user", "string", 0, NULL, 0, NULL, &nl, 1, 0);
}

/* ---- Chat (pipeline/formats/chat.py, _common.add_chat_message) ----------------------------- */

/* _common.add_chat_message (strict content): the head item of a message. Returns its role, or
 * NULL to hand the record to Python; *tool_calls is set when there are calls to split. */
static yyjson_val *chat_head(Ctx *c, yyjson_val *msg, const char *section, int32_t group,
                             yyjson_val *wrapper_from, yyjson_val **tool_calls) {
    St *st = &c->st;
    *tool_calls = NULL;
    if (!msg || !yyjson_is_obj(msg)) return NULL;
    yyjson_val *role = yyjson_obj_get(msg, "role");
    if (!role || !yyjson_is_str(role)) return NULL;
    const char *r = yyjson_get_str(role);
    size_t rl = yyjson_get_len(role);
    int output = str_is(r, rl, "tool") || str_is(r, rl, "function");
    yyjson_val *slots[11] = {NULL};
    slots[SLOT_ROLE] = role;
    Nulls nl = {.n = 0};
    const char *form = NULL;
    int has_content = 0, open = 0;
    StrCol *extra = &c->s[S_IEXTRA];
    size_t idx, max;
    yyjson_val *k, *v;
    yyjson_obj_foreach(msg, idx, max, k, v) {
        if (KEY_IS(k, "role")) continue;
        if (KEY_IS(k, "content")) {
            if (yyjson_is_str(v)) {
                form = "string";
                text_block(c, LEVEL_CONTENT, v);
                has_content = 1;
            } else if (yyjson_is_arr(v)) {
                form = "parts";
                if (add_blocks(c, LEVEL_CONTENT, v)) return NULL;
                has_content = 1;
            } else if (yyjson_is_null(v)) {
                form = "null";
            } else {
                return NULL; /* expected string or array */
            }
        } else if (KEY_IS(k, "name") || (output && KEY_IS(k, "tool_call_id"))) {
            /* tool_call_id pairs a tool / function message with its call; elsewhere it is kept */
            int slot = KEY_IS(k, "name") ? SLOT_NAME : SLOT_CALL_ID;
            if (yyjson_is_str(v)) {
                slots[slot] = v;
            } else if (yyjson_is_null(v)) {
                nl.name[nl.n++] = SLOT_NULL_NAMES[slot];
            } else {
                keep(st, extra, &open, k, v);
            }
        } else if (KEY_IS(k, "tool_calls") && yyjson_is_arr(v) && yyjson_arr_size(v) > 0) {
            *tool_calls = v;
        } else {
            keep(st, extra, &open, k, v);
        }
    }
    if (!form) form = "absent";
    const char *kind = output ? "function_call_output" : "message";
    push_item(c, section, group, -1, kind, strlen(kind), slots, NULL, form, open, wrapper_from, WRAP_CHOICE,
              NULL, &nl,
              has_content, 0);
    return role;
}

/* chat._decode_tool_call. Returns 0, or -1 to hand the record to Python. */
static int chat_tool_call(Ctx *c, yyjson_val *tc, yyjson_val *role, const char *section, int32_t group,
                          int32_t j) {
    St *st = &c->st;
    if (!yyjson_is_obj(tc)) return -1;
    yyjson_val *native = yyjson_obj_get(tc, "type");
    int custom = (native && yyjson_is_str(native) && str_is(yyjson_get_str(native), yyjson_get_len(native),
                                                             "custom")) ||
                 ((!native || yyjson_is_null(native)) && yyjson_obj_get(tc, "custom") &&
                  !yyjson_obj_get(tc, "function"));
    const char *sub_key = custom ? "custom" : "function";
    const char *value_key = custom ? "input" : "arguments";
    int value_slot = custom ? SLOT_INPUT : SLOT_ARGUMENTS;
    const char *kind = custom ? "custom_tool_call" : "function_call";
    if (!yyjson_obj_get(tc, sub_key)) return -1; /* tool call without its function / custom */
    yyjson_val *slots[11] = {NULL};
    slots[SLOT_ROLE] = role;
    Nulls nl = {.n = 0};
    int open = 0;
    StrCol *extra = &c->s[S_IEXTRA];
    size_t idx, max;
    yyjson_val *k, *v;
    yyjson_obj_foreach(tc, idx, max, k, v) {
        int slot = KEY_IS(k, "id") ? SLOT_CALL_ID : KEY_IS(k, "type") ? SLOT_NATIVE : -1;
        if (slot >= 0) {
            if (yyjson_is_str(v)) {
                slots[slot] = v;
            } else if (yyjson_is_null(v)) {
                nl.name[nl.n++] = SLOT_NULL_NAMES[slot];
            } else {
                keep(st, extra, &open, k, v);
            }
        } else if (key_is(k, sub_key, strlen(sub_key))) {
            if (!yyjson_is_obj(v)) return -1;
            /* name and the value key (string or null) to columns; every other sub-key kept, as one
             * object under the sub-key, where the sub-key stood */
            int sub_open = 0;
            size_t sidx, smax;
            yyjson_val *sk, *sv;
            yyjson_obj_foreach(v, sidx, smax, sk, sv) {
                int sslot = KEY_IS(sk, "name") ? SLOT_NAME
                            : key_is(sk, value_key, strlen(value_key)) ? value_slot
                                                                       : -1;
                if (sslot >= 0 && (yyjson_is_str(sv) || yyjson_is_null(sv))) {
                    if (yyjson_is_str(sv)) {
                        slots[sslot] = sv;
                    } else {
                        nl.name[nl.n++] = SLOT_NULL_NAMES[sslot];
                    }
                    continue;
                }
                if (!sub_open) {
                    put_byte(st, &extra->data, open ? ',' : '{');
                    open = 1;
                    put_json_str(st, &extra->data, sub_key, strlen(sub_key));
                    put_byte(st, &extra->data, ':');
                    put_byte(st, &extra->data, '{');
                    sub_open = 1;
                } else {
                    put_byte(st, &extra->data, ',');
                }
                put_json_str(st, &extra->data, yyjson_get_str(sk), yyjson_get_len(sk));
                put_byte(st, &extra->data, ':');
                put_value(st, &extra->data, sv);
            }
            if (sub_open) put_byte(st, &extra->data, '}');
        } else {
            keep(st, extra, &open, k, v);
        }
    }
    push_item(c, section, group, j, kind, strlen(kind), slots, NULL, NULL, open, NULL, 0, NULL, &nl, 0, 0);
    return 0;
}

/* chat.decode_message: the head item, then one item per tool call. */
static int chat_message(Ctx *c, yyjson_val *msg, const char *section, int32_t group,
                        yyjson_val *wrapper_from) {
    yyjson_val *tool_calls;
    yyjson_val *role = chat_head(c, msg, section, group, wrapper_from, &tool_calls);
    if (!role) return -1;
    if (tool_calls) {
        size_t idx, max;
        yyjson_val *tc;
        yyjson_arr_foreach(tool_calls, idx, max, tc) {
            if (chat_tool_call(c, tc, role, section, group, (int32_t)idx)) return -1;
        }
    }
    return 0;
}


/* ---- Anthropic (pipeline/formats/anthropic.py) --------------------------------------------- */

static int ends_with(const char *s, size_t n, const char *suffix) {
    size_t m = strlen(suffix);
    return n >= m && memcmp(s + n - m, suffix, m) == 0;
}

/* A block that becomes an item of its own (anthropic._ITEM_BLOCKS or a *_tool_result). */
static int item_block(const char *t, size_t n) {
    return str_is(t, n, "tool_use") || str_is(t, n, "server_tool_use") || str_is(t, n, "mcp_tool_use") ||
           str_is(t, n, "tool_result") || str_is(t, n, "thinking") || str_is(t, n, "redacted_thinking") ||
           str_is(t, n, "compaction") || ends_with(t, n, "_tool_result");
}

/* Set a string slot from a value (set_str): string to the slot, null to null_fields, else kept. */
static void set_str(Ctx *c, yyjson_val **slot, const char *null_name, Nulls *nl, int *open, yyjson_val *k,
                    yyjson_val *v) {
    if (yyjson_is_str(v)) {
        *slot = v;
    } else if (yyjson_is_null(v)) {
        nl->name[nl->n++] = null_name;
    } else {
        keep(&c->st, &c->s[S_IEXTRA], open, k, v);
    }
}

/* An Anthropic item block being decoded: its slots and the item fields anthropic._decode_item_block
 * sets per block type (then one push_item). */
typedef struct {
    yyjson_val *slots[11];
    ItemMore more;
    Nulls nl;
    const char *kind, *form;
    size_t kind_len;
    int has_content, open;
} BlockItem;

/* A key no field of this block type takes: kept in extra_json ("type" is the slot already set). */
static void keep_other(Ctx *c, BlockItem *b, yyjson_val *k, yyjson_val *v) {
    if (!KEY_IS(k, "type")) keep(&c->st, &c->s[S_IEXTRA], &b->open, k, v);
}

/* tool_use, server_tool_use, mcp_tool_use: id, name and input. */
static void tool_use_block(Ctx *c, yyjson_val *block, BlockItem *b) {
    size_t idx, max;
    yyjson_val *k, *v;
    yyjson_obj_foreach(block, idx, max, k, v) {
        if (KEY_IS(k, "id")) {
            set_str(c, &b->slots[SLOT_CALL_ID], "call_id", &b->nl, &b->open, k, v);
        } else if (KEY_IS(k, "name")) {
            set_str(c, &b->slots[SLOT_NAME], "name", &b->nl, &b->open, k, v);
        } else if (KEY_IS(k, "input")) {
            if (yyjson_is_null(v)) b->nl.name[b->nl.n++] = "arguments";
            else b->more.arguments_json = v;
        } else {
            keep_other(c, b, k, v);
        }
    }
}

/* tool_result and the hosted *_tool_result blocks: tool_use_id and (tool_result) content. Returns 0,
 * or -1 to hand the record to Python. */
static int tool_result_block(Ctx *c, yyjson_val *block, BlockItem *b, int tool_result) {
    size_t idx, max;
    yyjson_val *k, *v;
    yyjson_obj_foreach(block, idx, max, k, v) {
        if (KEY_IS(k, "tool_use_id")) {
            set_str(c, &b->slots[SLOT_CALL_ID], "call_id", &b->nl, &b->open, k, v);
        } else if (KEY_IS(k, "content") && tool_result && yyjson_is_str(v)) {
            b->form = "string";
            text_block(c, LEVEL_CONTENT, v);
            b->has_content = 1;
        } else if (KEY_IS(k, "content") && tool_result && yyjson_is_arr(v)) {
            b->form = "parts";
            if (add_blocks(c, LEVEL_CONTENT, v)) return -1;
            b->has_content = 1;
        } else if (KEY_IS(k, "content") && tool_result && yyjson_is_null(v)) {
            b->form = "null";
        } else {
            keep_other(c, b, k, v);
        }
    }
    if (!b->form) b->form = "absent";
    return 0;
}

/* thinking: its text as one thinking part, and its signature. */
static void thinking_block(Ctx *c, yyjson_val *block, BlockItem *b) {
    size_t idx, max;
    yyjson_val *k, *v;
    b->form = "absent";
    yyjson_obj_foreach(block, idx, max, k, v) {
        if (KEY_IS(k, "thinking") && yyjson_is_str(v)) {
            text_block_typed(c, LEVEL_CONTENT, v, "thinking");
            b->form = "parts";
            b->has_content = 1;
        } else if (KEY_IS(k, "thinking") && yyjson_is_null(v)) {
            b->form = "null";
        } else if (KEY_IS(k, "signature")) {
            set_str(c, &b->more.signature, "signature", &b->nl, &b->open, k, v);
        } else {
            keep_other(c, b, k, v);
        }
    }
}

/* redacted_thinking: its data as the encrypted content. */
static void redacted_thinking_block(Ctx *c, yyjson_val *block, BlockItem *b) {
    size_t idx, max;
    yyjson_val *k, *v;
    yyjson_obj_foreach(block, idx, max, k, v) {
        if (KEY_IS(k, "data")) set_str(c, &b->slots[SLOT_ENC], "encrypted_content", &b->nl, &b->open, k, v);
        else keep_other(c, b, k, v);
    }
}

/* compaction: its content string, encrypted content and signature. */
static void compaction_block(Ctx *c, yyjson_val *block, BlockItem *b) {
    size_t idx, max;
    yyjson_val *k, *v;
    yyjson_obj_foreach(block, idx, max, k, v) {
        if (KEY_IS(k, "content") && yyjson_is_str(v)) {
            b->form = "string";
            text_block(c, LEVEL_CONTENT, v);
            b->has_content = 1;
        } else if (KEY_IS(k, "content") && yyjson_is_null(v)) {
            b->form = "null";
        } else if (KEY_IS(k, "encrypted_content")) {
            set_str(c, &b->slots[SLOT_ENC], "encrypted_content", &b->nl, &b->open, k, v);
        } else if (KEY_IS(k, "signature")) {
            set_str(c, &b->more.signature, "signature", &b->nl, &b->open, k, v);
        } else {
            keep_other(c, b, k, v);
        }
    }
    if (!b->form) b->form = "absent";
}

/* anthropic._decode_item_block. Returns 0, or -1 to hand the record to Python. */
static int anthropic_item_block(Ctx *c, yyjson_val *block, yyjson_val *btype, const char *section,
                                int32_t group, int32_t j, yyjson_val *role, yyjson_val *wrapper_from) {
    const char *t = yyjson_get_str(btype);
    size_t tn = yyjson_get_len(btype);
    BlockItem b = {.kind = t, .kind_len = tn};
    b.slots[SLOT_NATIVE] = btype;
    b.slots[SLOT_ROLE] = role;
    if (str_is(t, tn, "tool_use") || str_is(t, tn, "server_tool_use") || str_is(t, tn, "mcp_tool_use")) {
        if (str_is(t, tn, "tool_use")) b.kind = "function_call", b.kind_len = 13;
        tool_use_block(c, block, &b);
    } else if (str_is(t, tn, "tool_result") || ends_with(t, tn, "_tool_result")) {
        int tool_result = str_is(t, tn, "tool_result");
        if (tool_result) b.kind = "function_call_output", b.kind_len = 20;
        if (tool_result_block(c, block, &b, tool_result)) return -1;
    } else if (str_is(t, tn, "thinking")) {
        b.kind = "reasoning", b.kind_len = 9;
        thinking_block(c, block, &b);
    } else if (str_is(t, tn, "redacted_thinking")) {
        b.kind = "reasoning", b.kind_len = 9;
        redacted_thinking_block(c, block, &b);
    } else { /* compaction */
        b.kind = "compaction", b.kind_len = 10;
        compaction_block(c, block, &b);
    }
    push_item(c, section, group, j, b.kind, b.kind_len, b.slots, NULL, b.form, b.open, wrapper_from, WRAP_MESSAGE,
              &b.more, &b.nl, b.has_content, 0);
    return 0;
}

/* anthropic.decode_message. `msg` is a message of `messages`; for a response it is NULL and
 * `role` / `content` come from the record. Returns 0, or -1 to hand the record to Python. */
static int anthropic_message(Ctx *c, yyjson_val *msg, const char *section, int32_t group, yyjson_val *role,
                             yyjson_val *content) {
    yyjson_val *wrapper_from = NULL;
    if (msg) {
        if (!yyjson_is_obj(msg)) return -1;
        role = yyjson_obj_get(msg, "role");
        if (!role || !yyjson_is_str(role)) return -1;
        content = yyjson_obj_get(msg, "content");
        wrapper_from = msg; /* null wrapper_json when it has no other key */
    }
    yyjson_val *slots[11] = {NULL};
    slots[SLOT_ROLE] = role;
    Nulls none = {.n = 0};
    if (!content || !yyjson_is_arr(content)) {
        const char *form;
        int has_content = 0;
        if (!content) {
            form = "absent";
        } else if (yyjson_is_str(content)) {
            form = "string";
            text_block(c, LEVEL_CONTENT, content);
            has_content = 1;
        } else if (yyjson_is_null(content)) {
            form = "null";
        } else {
            return -1; /* expected string or array */
        }
        push_item(c, section, group, -1, "message", 7, slots, NULL, form, 0, wrapper_from, WRAP_MESSAGE, NULL,
                  &none, has_content, 0);
        return 0;
    }
    int32_t pending = -1; /* part of the open run of content blocks, -1: none */
    int pending_wrapped = 0, first = 1;
    size_t idx, max;
    yyjson_val *block;
    yyjson_arr_foreach(content, idx, max, block) {
        if (!yyjson_is_obj(block)) return -1;
        yyjson_val *btype = yyjson_obj_get(block, "type");
        if (btype && yyjson_is_str(btype) && item_block(yyjson_get_str(btype), yyjson_get_len(btype))) {
            if (pending >= 0) {
                push_item(c, section, group, pending, "message", 7, slots, NULL, "parts", 0,
                          pending_wrapped ? wrapper_from : NULL, WRAP_MESSAGE, NULL, &none, 1, 0);
                pending = -1;
            }
            if (anthropic_item_block(c, block, btype, section, group, (int32_t)idx, role,
                                     first ? wrapper_from : NULL))
                return -1;
            first = 0;
            continue;
        }
        if (pending < 0) {
            pending = (int32_t)idx;
            pending_wrapped = first;
            first = 0;
        }
        block_row(c, LEVEL_CONTENT, block);
    }
    if (pending >= 0) {
        push_item(c, section, group, pending, "message", 7, slots, NULL, "parts", 0,
                  pending_wrapped ? wrapper_from : NULL, WRAP_MESSAGE, NULL, &none, 1, 0);
    } else if (first) { /* an empty content list: the message is kept */
        push_item(c, section, group, -1, "message", 7, slots, NULL, "parts", 0, wrapper_from, WRAP_MESSAGE, NULL,
                  &none, 1, 0);
    }
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Records the Python decoder rejects at decode ("Fields the API requires", docs/decoding.md)   */
/*
 * Before a walk, validate_<format>() looks for every shape a Python decode rule rejects and, on
 * a hit, hands the whole line to the Python decoder (fallback reason "validation"), which then
 * writes the rejection: the text of a reason has one source, the Python decoder. These checks
 * only detect; they never word an error.
 *
 * Whitelists, so that a rule added to Python later mostly lands on a shape already sent there:
 * roles (per format and position), content part / block types (per role), tool call types and
 * tool definition types are accepted only when they are among the values checked below; any
 * other value goes to Python even where today's Python accepts it (the Python decoder then
 * decodes it; the native decoder just does not).
 *
 * The rules, each with the Python function that applies it:
 *   _common.check_tools (via responses/chat/anthropic._tool_name, chat._check_tools.name_of):
 *     every object in a `tools` list, and a `tool_choice` object with a string type, that names a
 *     tool needs a string name (Responses: function / custom; Chat: `function` / `custom` object
 *     holding it; Anthropic: every tool, and a tool_choice of type "tool").
 *   _common.check_tools (branch abc2): a tool_choice object's type, if present, is a string.
 *   responses._tool_name: a tool needs a string type; a custom tool's `format` is an object.
 *   chat._check_tools.name_of: a function / custom tool's sub-object is an object; a custom
 *     tool's `format` is an object and a grammar format's `grammar` an object.
 *   anthropic._tool_name: a custom tool (no type, or "custom") has an object input_schema and,
 *     if present, a string description.
 *   responses._walk: a request's `input` is not null.
 *   responses.decode_item: a message's role is one of user/assistant/system/developer; its
 *     content is a string or an array (an assistant message may lack it); a non-string `type` is
 *     null or absent; function_call needs name/arguments, custom_tool_call name/input (string or
 *     null); a tool output's array `output` holds only objects with a string type, none of them
 *     output_text / refusal (whitelist: input_text / input_image / input_file).
 *   responses._check_part: a part is an object with a string type; not "text"/"image_url";
 *     output_text / refusal only in an assistant message; a refusal part has a string refusal.
 *   chat.decode_message: role one of system/developer/user/assistant/tool/function; content
 *     present unless the role is assistant; a function message has a string name; `refusal`
 *     only on an assistant message, a string or null; tool_calls only on an assistant message.
 *   chat._check_part: a part is an object with a string type; not input_text / output_text /
 *     input_image; a known type only in a role that takes it (user: text, image_url,
 *     input_audio, file; assistant: text, refusal; others: text); a refusal part's refusal a
 *     string, image_url / input_audio / file parts their object; image_url.url a string, its
 *     detail null or one of chat.IMAGE_DETAILS (whitelist).
 *   chat._decode_tool_call: type "function" or "custom"; the sub-object present, an object,
 *     with a string name and a string arguments / input.
 *   anthropic.decode_message: a message's role is user/assistant/system; content present; every
 *     block has a string type; tool_result only in a user message (or a response without a
 *     string role); tool_use / server_tool_use / mcp_tool_use not in a system message; no
 *     input_text / output_text / refusal blocks.
 *   anthropic._check_block: a tool_result's tool_use_id, unless absent or null, is a string, and
 *     its content array holds no input_text / output_text / refusal block and no block whose
 *     type is present but not a string; an
 *     image's object source of type base64 has string media_type and data, of type url a string
 *     url.
 *   anthropic._decode_item_block: a tool_use / server_tool_use / mcp_tool_use block has a
 *     string name and an object input.
 */

/* Is `v` a string equal to one of the NULL-terminated `list`? */
static int str_in(yyjson_val *v, const char *const *list) {
    if (!v || !yyjson_is_str(v)) return 0;
    const char *s = yyjson_get_str(v);
    size_t n = yyjson_get_len(v);
    for (; *list; list++) {
        if (str_is(s, n, *list)) return 1;
    }
    return 0;
}

static int is_str_lit(yyjson_val *v, const char *lit) {
    return v && yyjson_is_str(v) && str_is(yyjson_get_str(v), yyjson_get_len(v), lit);
}

/* _common.require: 1 (reject) unless obj[key] is a string (or, `nullable`, null). */
static int bad_str(yyjson_val *obj, const char *key, int nullable) {
    yyjson_val *v = yyjson_obj_get(obj, key);
    return !(v && (yyjson_is_str(v) || (nullable && yyjson_is_null(v))));
}

/* _common.require(kind=dict). */
static int bad_obj(yyjson_val *obj, const char *key) {
    yyjson_val *v = yyjson_obj_get(obj, key);
    return !(v && yyjson_is_obj(v));
}

enum { TOOLS_RESPONSES, TOOLS_CHAT, TOOLS_ANTHROPIC };

/* One tool definition (choice = 0) or tool_choice object with a string type (choice = 1): the
 * format's _tool_name / name_of plus the name check of _common.check_tools. Whitelist: a tool
 * type not listed here goes to Python. Returns 1 to hand the record to Python. */
static int bad_tool(int fmt, yyjson_val *tool, int choice) {
    static const char *const RESP_TOOLS[] = {"function", "custom", "web_search", "web_search_preview",
                                             "file_search", "computer_use_preview", "code_interpreter",
                                             "image_generation", "local_shell", "shell", "mcp",
                                             "apply_patch", "namespace", NULL};
    static const char *const RESP_CHOICES[] = {"function", "custom", "allowed_tools", "mcp", "web_search",
                                               "web_search_preview", "file_search", "computer_use_preview",
                                               "code_interpreter", "image_generation", NULL};
    yyjson_val *type = yyjson_obj_get(tool, "type");
    if (fmt == TOOLS_RESPONSES) {
        if (!str_in(type, choice ? RESP_CHOICES : RESP_TOOLS)) return 1;
        if (!choice && is_str_lit(type, "custom") && yyjson_obj_get(tool, "format") &&
            bad_obj(tool, "format"))
            return 1;
        if (is_str_lit(type, "function") || is_str_lit(type, "custom")) return bad_str(tool, "name", 0);
        return 0;
    }
    if (fmt == TOOLS_CHAT) {
        static const char *const KINDS[] = {"function", "custom", NULL};
        static const char *const CHOICES[] = {"function", "custom", "allowed_tools", NULL};
        if (!str_in(type, choice ? CHOICES : KINDS)) return 1;
        if (is_str_lit(type, "allowed_tools")) return 0;
        const char *kind = yyjson_get_str(type);
        if (bad_obj(tool, kind)) return 1;
        yyjson_val *spec = yyjson_obj_get(tool, kind);
        if (!choice && str_is(kind, strlen(kind), "custom") && yyjson_obj_get(spec, "format")) {
            if (bad_obj(spec, "format")) return 1;
            yyjson_val *format = yyjson_obj_get(spec, "format");
            if (is_str_lit(yyjson_obj_get(format, "type"), "grammar") && bad_obj(format, "grammar")) return 1;
        }
        return bad_str(spec, "name", 0);
    }
    /* Anthropic */
    if (choice) {
        static const char *const CHOICES[] = {"auto", "any", "tool", "none", NULL};
        if (!str_in(type, CHOICES)) return 1;
        return is_str_lit(type, "tool") && bad_str(tool, "name", 0);
    }
    if (!type || is_str_lit(type, "custom")) {
        if (bad_obj(tool, "input_schema")) return 1;
        if (yyjson_obj_get(tool, "description") && bad_str(tool, "description", 0)) return 1;
    } else if (!yyjson_is_str(type)) {
        return 1; /* a null or non-string type: not a shape the whitelist knows */
    }
    return bad_str(tool, "name", 0);
}

/* _common.check_tools. Returns 1 to hand the record to Python. */
static int bad_tools(int fmt, yyjson_val *rec) {
    yyjson_val *tools = yyjson_obj_get(rec, "tools");
    if (tools && yyjson_is_arr(tools)) {
        size_t idx, max;
        yyjson_val *tool;
        yyjson_arr_foreach(tools, idx, max, tool) {
            if (yyjson_is_obj(tool) && bad_tool(fmt, tool, 0)) return 1;
        }
    }
    yyjson_val *choice = yyjson_obj_get(rec, "tool_choice");
    if (!choice || !yyjson_is_obj(choice)) return 0;
    yyjson_val *type = yyjson_obj_get(choice, "type");
    if (type && !yyjson_is_str(type)) return 1; /* a present type is a string (branch abc2) */
    return type && bad_tool(fmt, choice, 1);
}

/* responses._check_part over a message's content array. Whitelist of part types. */
static int bad_responses_parts(yyjson_val *content, int assistant) {
    static const char *const INPUT[] = {"input_text", "input_image", "input_file", "input_audio", NULL};
    static const char *const OUTPUT[] = {"output_text", "refusal", NULL};
    size_t idx, max;
    yyjson_val *part;
    yyjson_arr_foreach(content, idx, max, part) {
        if (!yyjson_is_obj(part)) return 1;
        yyjson_val *type = yyjson_obj_get(part, "type");
        if (str_in(type, OUTPUT)) {
            if (!assistant) return 1;
            if (is_str_lit(type, "refusal") && bad_str(part, "refusal", 0)) return 1;
        } else if (!str_in(type, INPUT)) {
            return 1;
        }
    }
    return 0;
}

/* responses.decode_item's checks on one item. Returns 1 to hand the record to Python. */
static int bad_responses_item(yyjson_val *item) {
    static const char *const ROLES[] = {"user", "assistant", "system", "developer", NULL};
    if (!yyjson_is_obj(item)) return 1;
    yyjson_val *type = yyjson_obj_get(item, "type");
    if (type && !yyjson_is_str(type) && !yyjson_is_null(type)) return 1;
    int message = type ? is_str_lit(type, "message") : 0;
    if (!type || yyjson_is_null(type)) {
        if (yyjson_obj_get(item, "role")) {
            message = 1;
        } else if (!yyjson_obj_get(item, "id")) {
            return 1;
        }
    }
    if (message) {
        yyjson_val *role = yyjson_obj_get(item, "role");
        if (!str_in(role, ROLES)) return 1;
        yyjson_val *content = yyjson_obj_get(item, "content");
        int assistant = is_str_lit(role, "assistant");
        if (!content) return !assistant;
        if (yyjson_is_arr(content)) return bad_responses_parts(content, assistant);
        return !yyjson_is_str(content);
    }
    if (is_str_lit(type, "function_call")) return bad_str(item, "name", 1) || bad_str(item, "arguments", 1);
    if (is_str_lit(type, "custom_tool_call")) return bad_str(item, "name", 1) || bad_str(item, "input", 1);
    if (is_str_lit(type, "function_call_output") || is_str_lit(type, "custom_tool_call_output")) {
        /* the SDK's ...OutputContentList: input content only (whitelist) */
        static const char *const TOOL_OUTPUT[] = {"input_text", "input_image", "input_file", NULL};
        yyjson_val *output = yyjson_obj_get(item, "output");
        if (output && yyjson_is_arr(output)) {
            size_t idx, max;
            yyjson_val *part;
            yyjson_arr_foreach(output, idx, max, part) {
                if (!yyjson_is_obj(part) || !str_in(yyjson_obj_get(part, "type"), TOOL_OUTPUT)) return 1;
            }
        }
    }
    return 0;
}

static int bad_responses_items(yyjson_val *items) {
    if (!items || !yyjson_is_arr(items)) return 0;
    size_t idx, max;
    yyjson_val *item;
    yyjson_arr_foreach(items, idx, max, item) {
        if (bad_responses_item(item)) return 1;
    }
    return 0;
}

/* responses.is_response: a Response object (output) rather than a request body (input); one that
 * says so ("object": "response") whatever else it holds (input: [] stays an unmodelled key). */
static int is_response_object(yyjson_val *rec, yyjson_val *input) {
    if (!yyjson_obj_get(rec, "output")) return 0;
    yyjson_val *object = yyjson_obj_get(rec, "object");
    return !input || (object && yyjson_is_str(object) && yyjson_equals_str(object, "response"));
}

/* Records responses._walk / decode_item / _check_part / _tool_name reject. */
static int validate_responses(yyjson_val *rec) {
    if (bad_tools(TOOLS_RESPONSES, rec)) return 1;
    yyjson_val *input = yyjson_obj_get(rec, "input");
    if (input && yyjson_is_null(input)) return 1;
    int response = is_response_object(rec, input);
    return bad_responses_items(yyjson_obj_get(rec, "instructions")) ||
           bad_responses_items(response ? yyjson_obj_get(rec, "output") : input);
}

/* chat._check_part over a message's content array. */
static int bad_chat_parts(yyjson_val *content, yyjson_val *role) {
    static const char *const FOREIGN[] = {"input_text", "output_text", "input_image", NULL};
    static const char *const DETAILS[] = {"auto", "low", "high", "original", NULL}; /* chat.IMAGE_DETAILS */
    size_t idx, max;
    yyjson_val *part;
    int user = is_str_lit(role, "user"), assistant = is_str_lit(role, "assistant");
    yyjson_arr_foreach(content, idx, max, part) {
        if (!yyjson_is_obj(part)) return 1;
        yyjson_val *type = yyjson_obj_get(part, "type");
        if (!type || !yyjson_is_str(type)) return 1;
        if (is_str_lit(type, "text")) continue;
        if (is_str_lit(type, "refusal")) {
            if (!assistant || bad_str(part, "refusal", 0)) return 1;
        } else if (is_str_lit(type, "image_url")) {
            if (!user || bad_obj(part, "image_url")) return 1;
            yyjson_val *image = yyjson_obj_get(part, "image_url");
            if (bad_str(image, "url", 0)) return 1;
            yyjson_val *detail = yyjson_obj_get(image, "detail");
            if (detail && !yyjson_is_null(detail) && !str_in(detail, DETAILS)) return 1;
        } else if (is_str_lit(type, "input_audio") || is_str_lit(type, "file")) {
            if (!user || bad_obj(part, yyjson_get_str(type))) return 1;
        } else if (str_in(type, FOREIGN)) {
            return 1;
        }
        /* other types are decoded: logs hold "reasoning" parts, conversions report them */
    }
    return 0;
}

/* chat._decode_tool_call's checks on one call. */
static int bad_chat_call(yyjson_val *tc) {
    if (!yyjson_is_obj(tc)) return 1;
    yyjson_val *type = yyjson_obj_get(tc, "type");
    int custom = is_str_lit(type, "custom");
    if (!custom && !is_str_lit(type, "function")) return 1;
    yyjson_val *sub = yyjson_obj_get(tc, custom ? "custom" : "function");
    if (!sub || !yyjson_is_obj(sub)) return 1;
    return bad_str(sub, "name", 0) || bad_str(sub, custom ? "input" : "arguments", 0);
}

/* chat.decode_message's checks on one message (the walk sends non-objects and non-string roles
 * to Python itself). */
static int bad_chat_message(yyjson_val *msg) {
    static const char *const ROLES[] = {"system", "developer", "user", "assistant", "tool", "function", NULL};
    if (!msg || !yyjson_is_obj(msg)) return 1;
    yyjson_val *role = yyjson_obj_get(msg, "role");
    if (!str_in(role, ROLES)) return 1;
    int assistant = is_str_lit(role, "assistant");
    yyjson_val *content = yyjson_obj_get(msg, "content");
    if (!content && !assistant) return 1;
    if (is_str_lit(role, "function") && bad_str(msg, "name", 0)) return 1;
    if (yyjson_obj_get(msg, "refusal") && (!assistant || bad_str(msg, "refusal", 1))) return 1;
    if (content && yyjson_is_arr(content) && bad_chat_parts(content, role)) return 1;
    yyjson_val *calls = yyjson_obj_get(msg, "tool_calls");
    if (calls && yyjson_is_arr(calls) && yyjson_arr_size(calls) > 0) {
        if (!assistant) return 1;
        size_t idx, max;
        yyjson_val *tc;
        yyjson_arr_foreach(calls, idx, max, tc) {
            if (bad_chat_call(tc)) return 1;
        }
    }
    return 0;
}

/* Records chat._walk / decode_message / _check_part / _decode_tool_call / _check_tools reject. */
static int validate_chat(yyjson_val *rec) {
    if (bad_tools(TOOLS_CHAT, rec)) return 1;
    int response = yyjson_obj_get(rec, "choices") && !yyjson_obj_get(rec, "messages");
    yyjson_val *value = yyjson_obj_get(rec, response ? "choices" : "messages");
    if (!value || !yyjson_is_arr(value)) return 1;
    size_t idx, max;
    yyjson_val *entry;
    yyjson_arr_foreach(value, idx, max, entry) {
        if (response && !yyjson_is_obj(entry)) return 1;
        if (bad_chat_message(response ? yyjson_obj_get(entry, "message") : entry)) return 1;
    }
    return 0;
}

/* anthropic.decode_message's block checks (and _decode_item_block's). `role` is NULL for a
 * response without a string role. Whitelist of block types. */
static int bad_anthropic_blocks(yyjson_val *content, yyjson_val *role) {
    static const char *const FOREIGN[] = {"input_text", "output_text", "refusal", NULL};
    static const char *const CALLS[] = {"tool_use", "server_tool_use", "mcp_tool_use", NULL};
    size_t idx, max;
    yyjson_val *block;
    yyjson_arr_foreach(content, idx, max, block) {
        if (!yyjson_is_obj(block)) return 1;
        yyjson_val *type = yyjson_obj_get(block, "type");
        if (!type || !yyjson_is_str(type)) return 1;
        if (str_in(type, CALLS)) {
            if (is_str_lit(role, "system")) return 1;
            if (bad_str(block, "name", 0) || bad_obj(block, "input")) return 1;
        } else if (is_str_lit(type, "tool_result")) {
            if (role && !is_str_lit(role, "user")) return 1;
            yyjson_val *id = yyjson_obj_get(block, "tool_use_id");
            if (id && !yyjson_is_null(id) && !yyjson_is_str(id)) return 1;
            yyjson_val *inner = yyjson_obj_get(block, "content");
            if (inner && yyjson_is_arr(inner)) {
                size_t jdx, jmax;
                yyjson_val *part;
                yyjson_arr_foreach(inner, jdx, jmax, part) {
                    /* a type that is no string goes to Python too, which rejects it naming
                     * the field (anthropic._check_block) */
                    yyjson_val *ptype = yyjson_is_obj(part) ? yyjson_obj_get(part, "type") : NULL;
                    if ((ptype && !yyjson_is_str(ptype)) || str_in(ptype, FOREIGN)) return 1;
                }
            }
        } else if (is_str_lit(type, "image")) {
            yyjson_val *source = yyjson_obj_get(block, "source");
            if (source && yyjson_is_obj(source)) {
                yyjson_val *stype = yyjson_obj_get(source, "type");
                if (is_str_lit(stype, "base64") && (bad_str(source, "media_type", 0) || bad_str(source, "data", 0)))
                    return 1;
                if (is_str_lit(stype, "url") && bad_str(source, "url", 0)) return 1;
            }
        } else if (str_in(type, FOREIGN)) {
            return 1;
        }
        /* other types, unknown ones included, are decoded: logs hold them and Python keeps them */
    }
    return 0;
}

/* Records anthropic._walk / decode_message / _decode_item_block / _tool_name reject. */
static int validate_anthropic(yyjson_val *rec) {
    static const char *const ROLES[] = {"user", "assistant", "system", NULL};
    if (bad_tools(TOOLS_ANTHROPIC, rec)) return 1;
    int response = !yyjson_obj_get(rec, "messages") && yyjson_obj_get(rec, "content");
    if (response) {
        yyjson_val *content = yyjson_obj_get(rec, "content");
        yyjson_val *role = yyjson_obj_get(rec, "role");
        if (role && !yyjson_is_str(role)) role = NULL;
        return !yyjson_is_arr(content) || bad_anthropic_blocks(content, role);
    }
    yyjson_val *messages = yyjson_obj_get(rec, "messages");
    if (!messages || !yyjson_is_arr(messages)) return 1;
    size_t idx, max;
    yyjson_val *msg;
    yyjson_arr_foreach(messages, idx, max, msg) {
        if (!yyjson_is_obj(msg)) return 1;
        yyjson_val *role = yyjson_obj_get(msg, "role");
        if (!str_in(role, ROLES)) return 1;
        yyjson_val *content = yyjson_obj_get(msg, "content");
        if (!content) return 1;
        if (yyjson_is_arr(content) && bad_anthropic_blocks(content, role)) return 1;
    }
    return 0;
}

/* ---- BLAKE2b (RFC 7693, blake2b.h), for conversation_id: blake2b(raw, digest_size=16) + file + line ---- */

static void conversation_id(Ctx *c, const char *raw, size_t n, int64_t line, char *hex32) {
    Blake2b s;
    b2_init(&s, 16);
    b2_update(&s, (const uint8_t *)raw, n);
    char tail[32];
    uint8_t zero = 0;
    b2_update(&s, &zero, 1);
    if (c->has_source_file) b2_update(&s, (const uint8_t *)c->source_file, (size_t)c->source_file_len);
    b2_update(&s, &zero, 1);
    int tl = snprintf(tail, sizeof(tail), "%lld", (long long)line);
    b2_update(&s, (const uint8_t *)tail, (size_t)tl);
    b2_final_hex(&s, hex32);
}

/* ---- one record ---------------------------------------------------------------------------- */

enum { FMT_RESPONSES, FMT_CHAT, FMT_ANTHROPIC, N_FMT };
static const char *FMT_NAMES[N_FMT] = {"responses", "chat", "anthropic"};

/* What a walk says about the row it decoded (_record.RowEnd): the key it handled besides the
 * ones named here, record_kind and items_form. */
typedef struct {
    const char *key;
    const char *also; /* a second handled key, or NULL */
    int response;
    const char *items_form;
} RowEnd;

/* The form of a Responses instructions / Anthropic system value that is absent, null or a string (a
 * string is the instructions' one text block, *valid set); NULL for any other value: the caller's. */
static const char *instr_scalar(Ctx *c, yyjson_val *v, int *valid) {
    *valid = 0;
    if (!v) return "absent";
    if (yyjson_is_null(v)) return "null";
    if (!yyjson_is_str(v)) return NULL;
    text_block(c, LEVEL_INSTR, v);
    *valid = 1;
    return "string";
}

/* The row's instructions form and the end of its instruction block list (valid: it has one). */
static void instr_close(Ctx *c, const char *iform, int valid) {
    push_str(c, S_IFORM, iform);
    list_close(c, L_INSTR_CONTENT, c->s[S_BLOCKS + 8 * LEVEL_INSTR].n, valid);
}

/* responses._walk. Returns FB_OK or FB_SHAPE. */
static int walk_responses(Ctx *c, yyjson_val *rec, RowEnd *end) {
    yyjson_val *input = yyjson_obj_get(rec, "input");
    int response = is_response_object(rec, input);
    const char *key = response ? "output" : "input";
    yyjson_val *value = response ? yyjson_obj_get(rec, "output") : input;

    /* instructions: absent, null, string, or items (which go to the items column) */
    yyjson_val *instr = yyjson_obj_get(rec, "instructions");
    int instr_valid;
    const char *iform = instr_scalar(c, instr, &instr_valid);
    if (!iform) { /* items, or not modelled */
        if (!yyjson_is_arr(instr)) return FB_SHAPE;
        iform = "items";
        size_t idx, max;
        yyjson_val *it;
        yyjson_arr_foreach(instr, idx, max, it) {
            if (decode_item(c, it, "instructions", (int32_t)idx)) return FB_SHAPE;
        }
    }
    instr_close(c, iform, instr_valid);

    const char *items_form;
    if (!value) {
        if (!response) return FB_SHAPE; /* request body without 'input' */
        items_form = "absent";
    } else if (yyjson_is_str(value)) {
        items_form = "string";
        string_input_item(c, key, value);
    } else if (yyjson_is_arr(value)) {
        items_form = "parts";
        size_t idx, max;
        yyjson_val *it;
        yyjson_arr_foreach(value, idx, max, it) {
            if (decode_item(c, it, key, (int32_t)idx)) return FB_SHAPE;
        }
    } else if (yyjson_is_null(value)) {
        items_form = "null";
    } else {
        return FB_SHAPE;
    }
    end->key = key;
    end->also = "instructions";
    end->response = response;
    end->items_form = items_form;
    return FB_OK;
}

/* chat._walk. Returns FB_OK or FB_SHAPE. */
static int walk_chat(Ctx *c, yyjson_val *rec, RowEnd *end) {
    int response = yyjson_obj_get(rec, "choices") && !yyjson_obj_get(rec, "messages");
    const char *key = response ? "choices" : "messages";
    instr_close(c, "absent", 0);
    yyjson_val *value = yyjson_obj_get(rec, key);
    if (!value || !yyjson_is_arr(value)) return FB_SHAPE;
    size_t idx, max;
    yyjson_val *entry;
    yyjson_arr_foreach(value, idx, max, entry) {
        if (response) {
            if (!yyjson_is_obj(entry)) return FB_SHAPE;
            if (chat_message(c, yyjson_obj_get(entry, "message"), key, (int32_t)idx, entry)) return FB_SHAPE;
        } else if (chat_message(c, entry, key, (int32_t)idx, NULL)) {
            return FB_SHAPE;
        }
    }
    end->key = key;
    end->also = NULL;
    end->response = response;
    end->items_form = "parts";
    return FB_OK;
}

/* anthropic._walk. Returns FB_OK or FB_SHAPE. */
static int walk_anthropic(Ctx *c, yyjson_val *rec, RowEnd *end) {
    int response = !yyjson_obj_get(rec, "messages") && yyjson_obj_get(rec, "content");
    yyjson_val *system = yyjson_obj_get(rec, "system");
    int instr_valid;
    const char *iform = instr_scalar(c, system, &instr_valid);
    if (!iform) { /* blocks, or not modelled */
        if (!yyjson_is_arr(system) || add_blocks(c, LEVEL_INSTR, system)) return FB_SHAPE;
        iform = "parts";
        instr_valid = 1;
    }
    instr_close(c, iform, instr_valid);
    if (response) {
        yyjson_val *content = yyjson_obj_get(rec, "content");
        if (!yyjson_is_arr(content)) return FB_SHAPE;
        /* a role that is not a string stays verbatim in extra_json (a top-level key here) */
        yyjson_val *role = yyjson_obj_get(rec, "role");
        if (role && !yyjson_is_str(role)) role = NULL;
        if (anthropic_message(c, NULL, "output", 0, role, content)) return FB_SHAPE;
        end->key = "content";
        end->also = NULL; /* a response's "system" is decoded and also kept in extra_json */
    } else {
        yyjson_val *messages = yyjson_obj_get(rec, "messages");
        if (!messages || !yyjson_is_arr(messages)) return FB_SHAPE;
        size_t idx, max;
        yyjson_val *msg;
        yyjson_arr_foreach(messages, idx, max, msg) {
            if (anthropic_message(c, msg, "messages", (int32_t)idx, NULL, NULL)) return FB_SHAPE;
        }
        end->key = "messages";
        end->also = "system";
    }
    end->response = response;
    end->items_form = "parts";
    return FB_OK;
}

/* One parsed record: the format's walk, then the top-level keys (_record.add_top_level). Returns
 * FB_OK with one row appended, or FB_VALIDATION / FB_SHAPE (the caller rolls back what was
 * appended). */
static int decode_record(Ctx *c, int fmt, yyjson_val *rec, const char *raw, size_t raw_len, int64_t line,
                         int64_t index) {
    St *st = &c->st;
    if (!yyjson_is_obj(rec)) return FB_SHAPE;
    int64_t items_before = c->s[S_SECTION].n;
    int invalid = fmt == FMT_CHAT        ? validate_chat(rec)
                  : fmt == FMT_ANTHROPIC ? validate_anthropic(rec)
                                         : validate_responses(rec);
    if (invalid) return FB_VALIDATION;
    RowEnd end;
    int r = fmt == FMT_CHAT        ? walk_chat(c, rec, &end)
            : fmt == FMT_ANTHROPIC ? walk_anthropic(c, rec, &end)
                                   : walk_responses(c, rec, &end);
    if (r != FB_OK) return r;
    const char *key = end.key;
    int response = end.response;
    const char *items_form = end.items_form;
    const char *also = end.also;

    /* top-level keys: model, tools, tool_choice, every other key to extra_json */
    yyjson_val *model = NULL, *tools = NULL, *tool_choice = NULL;
    Nulls nl = {.n = 0};
    int open = 0;
    size_t idx, max;
    yyjson_val *k, *v;
    yyjson_obj_foreach(rec, idx, max, k, v) {
        if ((also && key_is(k, also, strlen(also))) || key_is(k, key, strlen(key))) continue;
        int is_model = KEY_IS(k, "model"), is_tools = KEY_IS(k, "tools");
        int is_tc = KEY_IS(k, "tool_choice");
        if (is_model && yyjson_is_str(v)) {
            model = v;
        } else if ((is_model || is_tools || is_tc) && yyjson_is_null(v)) {
            nl.name[nl.n++] = is_model ? "model" : is_tools ? "tools" : "tool_choice";
        } else if (is_tools) {
            tools = v;
        } else if (is_tc) {
            tool_choice = v;
        } else {
            keep(st, &c->s[S_EXTRA], &open, k, v);
        }
    }
    char hex[32];
    conversation_id(c, raw, raw_len, line, hex);
    sc_push(st, &c->s[S_CID], hex, 32);
    push_str(c, S_FMT, FMT_NAMES[fmt]);
    push_str(c, S_KIND, response ? "response" : "request");
    if (c->has_source_file) {
        sc_push(st, &c->s[S_FILE], c->source_file, (size_t)c->source_file_len);
    } else {
        sc_null(st, &c->s[S_FILE]);
    }
    put(st, &c->line, &line, 8);
    put(st, &c->row_index, &index, 8);
    push_opt(c, S_MODEL, model);
    push_str(c, S_ITEMS_FORM, items_form);
    push_json(st, &c->s[S_TOOLS], tools);
    push_json(st, &c->s[S_TOOL_CHOICE], tool_choice);
    close_extra(st, &c->s[S_EXTRA], open);
    nulls_close(c, L_NULLS, S_NULLS, &nl);
    int64_t n_items = c->s[S_SECTION].n - items_before;
    ic_push(st, &c->i[I_NITEMS], (int32_t)n_items, 1);
    list_close(c, L_ITEMS, c->s[S_SECTION].n, 1);
    c->rows++;
    return FB_OK;
}

/* What bytes.strip() removes; a line of only these (or empty) is blank. */
static int is_blank(const char *p, size_t n) {
    for (size_t k = 0; k < n; k++) {
        char ch = p[k];
        if (!(ch == ' ' || ch == '\t' || ch == '\n' || ch == '\v' || ch == '\f' || ch == '\r')) return 0;
    }
    return 1;
}

/* One line: blank, native row, or a fallback reason. */
static int decode_line(Ctx *c, int fmt, const char *p, size_t n, int64_t line, int64_t index) {
    yyjson_read_err err;
    yyjson_doc *doc = yyjson_read_opts((char *)p, n, YYJSON_READ_NUMBER_AS_RAW, NULL, &err);
    if (!doc) return FB_PARSE;
    yyjson_val *root = yyjson_doc_get_root(doc);
    int r = check_value(root, 1);
    if (r == FB_OK) {
        Mark m;
        mark(c, &m);
        r = decode_record(c, fmt, root, p, n, line, index);
        if (r != FB_OK || c->st.oom) rollback(c, &m);
    }
    yyjson_doc_free(doc);
    return r;
}

/* ------------------------------------------------------------------------------------------ */
/* Export: Arrow buffers as bytes                                                               */

static PyObject *bitmap_or_none(const Buf *valid, int64_t n, int64_t *null_count) {
    int64_t nulls = 0;
    for (int64_t k = 0; k < n; k++) nulls += !valid->p[k];
    *null_count = nulls;
    if (nulls == 0) Py_RETURN_NONE;
    PyObject *bm = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)((n + 7) / 8));
    if (!bm) return NULL;
    uint8_t *out = (uint8_t *)PyBytes_AS_STRING(bm);
    memset(out, 0, (size_t)((n + 7) / 8));
    for (int64_t k = 0; k < n; k++) {
        if (valid->p[k]) out[k >> 3] |= (uint8_t)(1u << (k & 7));
    }
    return bm;
}

/* A read-only buffer that owns a column's malloc'd memory: handing it to pa.py_buffer exports the
 * column without copying it (the memory is freed when Arrow drops its last reference). */
typedef struct {
    PyObject_HEAD
    uint8_t *p;
    Py_ssize_t len;
} OwnedBuffer;

static int owned_getbuffer(PyObject *self, Py_buffer *view, int flags) {
    OwnedBuffer *o = (OwnedBuffer *)self;
    static uint8_t empty[8];
    return PyBuffer_FillInfo(view, self, o->p ? o->p : empty, o->len, 1, flags);
}

static void owned_dealloc(PyObject *self) {
    free(((OwnedBuffer *)self)->p);
    Py_TYPE(self)->tp_free(self);
}

static PyBufferProcs OWNED_AS_BUFFER = {owned_getbuffer, NULL};

static PyTypeObject OwnedBufferType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "pipeline._native.Buffer",
    .tp_basicsize = sizeof(OwnedBuffer),
    .tp_dealloc = owned_dealloc,
    .tp_as_buffer = &OWNED_AS_BUFFER,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Memory of one decoded column buffer (read-only; use with pyarrow.py_buffer).",
};

/* Move a buffer's memory into an OwnedBuffer (trimmed to its length); the Buf is left empty. */
static PyObject *bytes_of(Buf *b) {
    OwnedBuffer *o = PyObject_New(OwnedBuffer, &OwnedBufferType);
    if (!o) return NULL;
    uint8_t *p = (uint8_t *)b->p;
    if (p && b->len < b->cap) {
        uint8_t *trimmed = (uint8_t *)realloc(p, b->len ? b->len : 1);
        if (trimmed) p = trimmed;
    }
    o->p = p;
    o->len = (Py_ssize_t)b->len;
    b->p = NULL;
    b->len = b->cap = 0;
    return (PyObject *)o;
}

/* (length, null_count, validity bitmap or None, buffer...) */
static PyObject *export_col(const Buf *valid, int64_t n, Buf *a, Buf *b2) {
    int64_t nulls;
    PyObject *bm = bitmap_or_none(valid, n, &nulls);
    if (!bm) return NULL;
    PyObject *x = bytes_of(a);
    PyObject *y = b2 ? bytes_of(b2) : NULL;
    if (!x || (b2 && !y)) {
        Py_DECREF(bm);
        Py_XDECREF(x);
        Py_XDECREF(y);
        return NULL;
    }
    if (b2) return Py_BuildValue("(LLNNN)", (long long)n, (long long)nulls, bm, x, y);
    return Py_BuildValue("(LLNN)", (long long)n, (long long)nulls, bm, x);
}

static int set_item(PyObject *d, const char *name, PyObject *v) {
    if (!v) return -1;
    int r = PyDict_SetItemString(d, name, v);
    Py_DECREF(v);
    return r;
}

static PyObject *export_ctx(Ctx *c) {
    PyObject *d = PyDict_New();
    if (!d) return NULL;
    for (int k = 0; k < N_STR; k++) {
        StrCol *s = &c->s[k];
        if (set_item(d, STR_NAMES[k], export_col(&s->valid, s->n, &s->off, &s->data))) goto fail;
    }
    for (int k = 0; k < N_INT; k++) {
        I32Col *i = &c->i[k];
        if (set_item(d, INT_NAMES[k], export_col(&i->valid, i->n, &i->vals, NULL))) goto fail;
    }
    for (int k = 0; k < N_LIST; k++) {
        I32Col *l = &c->l[k];
        if (set_item(d, LIST_NAMES[k], export_col(&l->valid, l->n, &l->vals, NULL))) goto fail;
    }
    if (set_item(d, "source_line", bytes_of(&c->line))) goto fail;
    if (set_item(d, "row_index", bytes_of(&c->row_index))) goto fail;
    if (set_item(d, "rows", PyLong_FromLongLong(c->rows))) goto fail;
    return d;
fail:
    Py_DECREF(d);
    return NULL;
}

/* ------------------------------------------------------------------------------------------ */

typedef struct {
    const char *p;
    Py_ssize_t n;
    int is_bytes;
} Line;

PyDoc_STRVAR(decode_lines_doc,
             "decode_lines(fmt, lines, source_file, first_line) -> (columns, blank_lines, fallbacks)\n\n"
             "Decode a list of JSONL lines (bytes) of format fmt (FORMATS). columns maps column\n"
             "paths to (length, null_count, validity bitmap or None, buffers...) of the native rows;\n"
             "fallbacks lists (index, reason) of the lines the Python decoder must handle.");

static PyObject *decode_lines(PyObject *self, PyObject *args) {
    (void)self;
    const char *fmt_name;
    PyObject *lines;
    PyObject *source_file;
    long long first_line;
    if (!PyArg_ParseTuple(args, "sO!OL", &fmt_name, &PyList_Type, &lines, &source_file, &first_line))
        return NULL;
    int fmt = -1;
    for (int f = 0; f < N_FMT; f++) {
        if (strcmp(fmt_name, FMT_NAMES[f]) == 0) fmt = f;
    }
    if (fmt < 0) {
        PyErr_Format(PyExc_ValueError, "pipeline._native does not decode format %s", fmt_name);
        return NULL;
    }
    Ctx *c = (Ctx *)malloc(sizeof(Ctx));
    if (!c) return PyErr_NoMemory();
    ctx_init(c);
    if (source_file != Py_None) {
        if (!PyBytes_Check(source_file)) {
            free(c);
            PyErr_SetString(PyExc_TypeError, "source_file must be bytes or None");
            return NULL;
        }
        c->has_source_file = 1;
        c->source_file = PyBytes_AS_STRING(source_file);
        c->source_file_len = PyBytes_GET_SIZE(source_file);
    }
    Py_ssize_t n = PyList_GET_SIZE(lines);
    Line *ls = (Line *)calloc((size_t)(n ? n : 1), sizeof(Line));
    uint8_t *reason = (uint8_t *)calloc((size_t)(n ? n : 1), 1);
    if (!ls || !reason) {
        free(ls);
        free(reason);
        ctx_free(c);
        free(c);
        return PyErr_NoMemory();
    }
    /* The list is the caller's own copy (nobody else mutates it) and holds every line alive
     * while the GIL is released. */
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *o = PyList_GET_ITEM(lines, k);
        if (PyBytes_Check(o)) {
            ls[k].p = PyBytes_AS_STRING(o);
            ls[k].n = PyBytes_GET_SIZE(o);
            ls[k].is_bytes = 1;
        }
    }
    int64_t blank = 0;
    const uint8_t BLANK = 255;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t k = 0; k < n; k++) {
        if (!ls[k].is_bytes) {
            reason[k] = FB_NOT_BYTES;
            continue;
        }
        if (is_blank(ls[k].p, (size_t)ls[k].n)) {
            reason[k] = BLANK;
            blank++;
            continue;
        }
        reason[k] = (uint8_t)decode_line(c, fmt, ls[k].p, (size_t)ls[k].n, first_line + k, k);
        if (c->st.oom || c->st.overflow) break;
    }
    Py_END_ALLOW_THREADS
    PyObject *result = NULL;
    if (c->st.oom) {
        PyErr_NoMemory();
    } else if (c->st.overflow) {
        /* a batch over 2 GiB in one column: the caller decodes it in Python */
        result = Py_NewRef(Py_None);
    } else {
        PyObject *cols = export_ctx(c);
        PyObject *fallbacks = PyList_New(0);
        if (cols && fallbacks) {
            for (Py_ssize_t k = 0; k < n; k++) {
                if (reason[k] == FB_OK || reason[k] == BLANK) continue;
                PyObject *t = Py_BuildValue("(ns)", k, REASONS[reason[k]]);
                if (!t || PyList_Append(fallbacks, t)) {
                    Py_XDECREF(t);
                    Py_CLEAR(cols);
                    break;
                }
                Py_DECREF(t);
            }
        }
        if (cols && fallbacks) {
            result = Py_BuildValue("(NLN)", cols, (long long)blank, fallbacks);
        } else {
            Py_XDECREF(cols);
            Py_XDECREF(fallbacks);
        }
    }
    free(ls);
    free(reason);
    ctx_free(c);
    free(c);
    return result;
}

PyDoc_STRVAR(blake2b_doc, "conversation_id_hex(raw, source_file, line) -> str (tests: the C BLAKE2b).");

static PyObject *conversation_id_hex(PyObject *self, PyObject *args) {
    (void)self;
    const char *raw;
    Py_ssize_t raw_len;
    PyObject *source_file;
    long long line;
    if (!PyArg_ParseTuple(args, "y#OL", &raw, &raw_len, &source_file, &line)) return NULL;
    Ctx c;
    memset(&c, 0, sizeof(c));
    if (source_file != Py_None) {
        if (!PyBytes_Check(source_file)) {
            PyErr_SetString(PyExc_TypeError, "source_file must be bytes or None");
            return NULL;
        }
        c.has_source_file = 1;
        c.source_file = PyBytes_AS_STRING(source_file);
        c.source_file_len = PyBytes_GET_SIZE(source_file);
    }
    char hex[32];
    conversation_id(&c, raw, (size_t)raw_len, line, hex);
    return PyUnicode_FromStringAndSize(hex, 32);
}

/* The Chat encoder lives in encode.c (its own file, so the decoder and encoder evolve apart). */
PyObject *chatlake_encode_chat(PyObject *self, PyObject *args);
extern const char chatlake_encode_chat_doc[];
/* ... the Responses encoder in encode_responses.c. */
PyObject *chatlake_encode_responses(PyObject *self, PyObject *args);
extern const char chatlake_encode_responses_doc[];
/* ... the Anthropic encoder in encode_anthropic.c. */
PyObject *chatlake_encode_anthropic(PyObject *self, PyObject *args);
extern const char chatlake_encode_anthropic_doc[];
/* ... and the same-format writers (Responses -> Responses, Chat -> Chat, Anthropic -> Anthropic) in
 * encode_same.c. */
PyObject *chatlake_encode_same_responses(PyObject *self, PyObject *args);
PyObject *chatlake_encode_same_chat(PyObject *self, PyObject *args);
PyObject *chatlake_encode_same_anthropic(PyObject *self, PyObject *args);
extern const char chatlake_encode_same_responses_doc[], chatlake_encode_same_chat_doc[],
    chatlake_encode_same_anthropic_doc[];
/* ... the Hugging Face (TRL) row encoder in encode_hf.c. */
PyObject *chatlake_encode_hf(PyObject *self, PyObject *args);
extern const char chatlake_encode_hf_doc[];
/* ... the Anthropic round-trip report alone, in anthropic_round_trip.c (the differential test's). */
PyObject *chatlake_anthropic_report(PyObject *self, PyObject *args);
extern const char chatlake_anthropic_report_doc[];
/* Item fingerprints and the MD5 they use: fingerprint.c, md5.c. */
PyObject *chatlake_fingerprints(PyObject *self, PyObject *args);
extern const char chatlake_fingerprints_doc[];
PyObject *chatlake_md5_hex(PyObject *self, PyObject *args);
extern const char chatlake_md5_hex_doc[];
/* JSON Lines out of Arrow columns (losses, output): lines.c. */
PyObject *chatlake_json_lines(PyObject *self, PyObject *args);
extern const char chatlake_json_lines_doc[];
PyObject *chatlake_join_lines(PyObject *self, PyObject *args);
extern const char chatlake_join_lines_doc[];

static PyMethodDef METHODS[] = {
    {"encode_chat", chatlake_encode_chat, METH_VARARGS, chatlake_encode_chat_doc},
    {"encode_responses", chatlake_encode_responses, METH_VARARGS, chatlake_encode_responses_doc},
    {"encode_anthropic", chatlake_encode_anthropic, METH_VARARGS, chatlake_encode_anthropic_doc},
    {"encode_same_responses", chatlake_encode_same_responses, METH_VARARGS, chatlake_encode_same_responses_doc},
    {"encode_same_chat", chatlake_encode_same_chat, METH_VARARGS, chatlake_encode_same_chat_doc},
    {"encode_same_anthropic", chatlake_encode_same_anthropic, METH_VARARGS, chatlake_encode_same_anthropic_doc},
    {"encode_hf", chatlake_encode_hf, METH_VARARGS, chatlake_encode_hf_doc},
    {"anthropic_report", chatlake_anthropic_report, METH_VARARGS, chatlake_anthropic_report_doc},
    {"fingerprints", chatlake_fingerprints, METH_VARARGS, chatlake_fingerprints_doc},
    {"md5_hex", chatlake_md5_hex, METH_VARARGS, chatlake_md5_hex_doc},
    {"json_lines", chatlake_json_lines, METH_VARARGS, chatlake_json_lines_doc},
    {"join_lines", chatlake_join_lines, METH_VARARGS, chatlake_join_lines_doc},
    {"decode_lines", decode_lines, METH_VARARGS, decode_lines_doc},
    {"conversation_id_hex", conversation_id_hex, METH_VARARGS, blake2b_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef MODULE = {
    PyModuleDef_HEAD_INIT, "pipeline._native",
    "chatlake's compiled exact decoder (yyjson " YYJSON_VERSION_STRING ").", -1, METHODS, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__native(void) {
    if (PyType_Ready(&OwnedBufferType) < 0) return NULL;
    PyObject *m = PyModule_Create(&MODULE);
    if (!m) return NULL;
    PyObject *formats = Py_BuildValue("(sss)", FMT_NAMES[0], FMT_NAMES[1], FMT_NAMES[2]);
    if (!formats || PyModule_AddStringConstant(m, "YYJSON_VERSION", YYJSON_VERSION_STRING) ||
        PyModule_AddIntConstant(m, "MAX_DEPTH", MAX_DEPTH) || PyModule_AddObjectRef(m, "FORMATS", formats)) {
        Py_XDECREF(formats);
        Py_DECREF(m);
        return NULL;
    }
    Py_DECREF(formats);
    return m;
}
