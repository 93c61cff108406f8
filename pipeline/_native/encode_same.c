/*
 * pipeline._native.encode_same_{responses,chat,anthropic}: canonical rows written back to the wire format
 * they were decoded from (Responses -> Responses, Chat -> Chat, Anthropic -> Anthropic).
 *
 * The specification is pipeline/formats/<format>.encode followed by orjson.dumps: for every row it takes,
 * this writes exactly those bytes (and reports no loss: a same-format row has none; encode_rows adds the
 * `edited` losses of items changed by steps, and the `set` additions, as for the other encoders).
 *
 * What the Python codecs keep as JSON text (tools, tool_choice, extra_json, wrapper_json, a block's
 * annotations / logprobs / cache_control / citations, an Anthropic call's arguments) they write back
 * verbatim (orjson.Fragment, formats._common.splice): so does this, byte for byte, whatever the text is.
 * The one value the Python codec parses and re-serialises, a Chat tool call's extra_json (its keys are
 * merged into the call and its function / custom object), goes through encode_common.h's canonical check
 * and put_value. Every dict the Python codec builds is written as a stream of keys in its insertion order;
 * a key set twice (a dict assignment that would replace a value in place: e.g. a null_fields name that
 * repeats a modelled key) hands the row back, as do the other rows listed in docs/internals/native-codec.md.
 *
 * The batch loop and the Enc row state are encode_common.h's (run_encoder). Enc binds the columns the
 * cross-format encoders read; the ones only a same-format writer needs (every field of the instruction
 * and summary blocks, wrapper_json) are bound here from a second export of the same batch and reached
 * through a thread-local pointer for the duration of the call (run_encoder releases the GIL, so other
 * threads may run another batch at the same time).
 */
#include "encode_common.h"

typedef struct {
    Col valid, text, type, ann, logp, cache, cit, extra, nulls, null_names;
} Blocks;

typedef struct {
    Blocks content, summary, instr;
    Col summary_list, wrapper;
} Same;

static _Thread_local const Same *SAME;

static int bind_block_set(struct ArrowArray *lc, struct ArrowSchema *lcs, Blocks *b) {
    struct ArrowArray *sa;
    struct ArrowSchema *ss;
    if (list_struct(lc, lcs, &b->valid, &sa, &ss)) return -1;
    return bind_blocks(sa, ss, b->valid.base, &b->text, &b->type, &b->ann, &b->logp, &b->cache, &b->cit, &b->extra,
                       &b->nulls, &b->null_names);
}

/* The columns Enc does not bind (see the file's comment). */
static int bind_same(Same *x, struct ArrowArray *a, struct ArrowSchema *s) {
    int64_t base = a->offset;
    Col tmp, iv;
    struct ArrowArray *c, *lc, *ia;
    struct ArrowSchema *cs, *lcs, *is;
    if (bind(a, s, "instructions", "+s", base, &iv, &c, &cs)) return -1;
    if (bind(c, cs, "content", "+l", iv.base, &tmp, &lc, &lcs) || bind_block_set(lc, lcs, &x->instr)) return -1;
    if (bind(a, s, "items", "+l", base, &tmp, &c, &cs) || list_struct(c, cs, &iv, &ia, &is)) return -1;
    if (bind(ia, is, "wrapper_json", "u", iv.base, &x->wrapper, NULL, NULL)) return -1;
    if (bind(ia, is, "content", "+l", iv.base, &tmp, &lc, &lcs) || bind_block_set(lc, lcs, &x->content)) return -1;
    if (bind(ia, is, "summary", "+l", iv.base, &x->summary_list, &lc, &lcs) || bind_block_set(lc, lcs, &x->summary))
        return -1;
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Writing a Python dict as orjson does: keys in insertion order, then formats._common.splice   */

#define MAX_OBJ_KEYS 32

typedef struct {
    size_t start; /* where its "{" is in the output */
    int n;
    const char *k[MAX_OBJ_KEYS];
    size_t kl[MAX_OBJ_KEYS];
} Obj;

static inline void obj_open(Enc *e, Obj *o) {
    o->start = e->out.len;
    o->n = 0;
    put(&e->st, &e->out, "{", 1);
}

/* Start key k's value; FALLBACK when the dict already has k (the Python assignment would replace that
 * value in place, not append). */
static inline int obj_key(Enc *e, Obj *o, const char *k, size_t n) {
    for (int p = 0; p < o->n; p++)
        if (o->kl[p] == n && memcmp(o->k[p], k, n) == 0) return FALLBACK;
    if (o->n == MAX_OBJ_KEYS) return FALLBACK;
    if (o->n) put(&e->st, &e->out, ",", 1);
    o->k[o->n] = k;
    o->kl[o->n++] = n;
    put_json_str(&e->st, &e->out, k, n);
    put(&e->st, &e->out, ":", 1);
    return 0;
}

static inline int obj_lit(Enc *e, Obj *o, const char *k) { return obj_key(e, o, k, strlen(k)); }

/* Close the dict with formats._common.splice(d, extra): extra (a JSON object's text, NULL: none) of
 * more than 2 bytes is spliced in as bytes: d's text without its "}", a comma, extra without its "{";
 * extra alone when d is empty. */
static inline void obj_close(Enc *e, Obj *o, const char *extra, size_t xn) {
    if (extra && xn > 2) {
        if (o->n == 0) {
            e->out.len = o->start;
            put(&e->st, &e->out, extra, xn);
        } else {
            put(&e->st, &e->out, ",", 1);
            put(&e->st, &e->out, extra + 1, xn - 1);
        }
    } else {
        put(&e->st, &e->out, "}", 1);
    }
}

static inline void put_lit(Enc *e, const char *s) { puts_(&e->st, &e->out, s); }

/* A string column's value i: the JSON string, or null. */
static inline void put_str_or_null(Enc *e, const Col *c, int64_t i) {
    size_t n;
    const char *s = col_str(c, i, &n);
    if (s)
        put_json_str(&e->st, &e->out, s, n);
    else
        put_lit(e, "null");
}

/* List i of c as [*a, *z); a null list is empty (formats._common._list_offsets). */
static inline int lrange(const Col *c, int64_t i, int64_t *a, int64_t *z) {
    if (!col_valid(c, i)) {
        *a = *z = 0;
        return 0;
    }
    col_list(c, i, a, z);
    return 1;
}

/* Is `name` in null list i of (lists, names)? (ItemView.put's `field in nulls`) */
static inline int in_nulls(const Col *lists, const Col *names, int64_t i, const char *name) {
    return has_null((Col *)lists, (Col *)names, i, name);
}

/* ItemView.put: d[key] = the string field's value, or null when the field is in the item's null_fields. */
static inline int put_field(Enc *e, Obj *o, const char *key, const Col *c, const char *field, int64_t i) {
    size_t n;
    const char *s = col_str(c, i, &n);
    if (s) {
        if (obj_lit(e, o, key)) return FALLBACK;
        put_json_str(&e->st, &e->out, s, n);
    } else if (in_nulls(&e->inulls, &e->inull_names, i, field)) {
        if (obj_lit(e, o, key)) return FALLBACK;
        put_lit(e, "null");
    }
    return 0;
}

/* BlockView.block(j). */
static int write_block(Enc *e, const Blocks *b, int64_t j) {
    if (!col_valid(&b->valid, j)) return FALLBACK; /* a null block: the struct's children are not its value */
    Obj o;
    obj_open(e, &o);
    size_t tl, xl;
    const char *t = col_str(&b->type, j, &tl);
    const char *tk = "text";
    if (t) {
        if (str_eq(t, tl, "refusal")) tk = "refusal";
        else if (str_eq(t, tl, "thinking")) tk = "thinking";
        if (obj_lit(e, &o, "type")) return FALLBACK;
        put_json_str(&e->st, &e->out, t, tl);
    }
    const char *x = col_str(&b->text, j, &xl);
    if (x) {
        if (obj_lit(e, &o, tk)) return FALLBACK;
        put_json_str(&e->st, &e->out, x, xl);
    }
    static const char *const json_names[] = {"annotations", "logprobs", "cache_control", "citations"};
    const Col *json_cols[] = {&b->ann, &b->logp, &b->cache, &b->cit};
    for (int q = 0; q < 4; q++) {
        x = col_str(json_cols[q], j, &xl);
        if (!x) continue;
        if (obj_lit(e, &o, json_names[q])) return FALLBACK;
        put(&e->st, &e->out, x, xl); /* orjson.Fragment: verbatim */
    }
    if (col_valid(&b->nulls, j)) {
        int64_t a, z;
        col_list(&b->nulls, j, &a, &z);
        for (int64_t k = a; k < z; k++) {
            size_t n;
            const char *s = col_str(&b->null_names, k, &n);
            if (!s) return FALLBACK; /* d[None]: orjson refuses a non-string key (an error row) */
            if (str_eq(s, n, "text")) s = tk, n = strlen(tk);
            if (obj_key(e, &o, s, n)) return FALLBACK;
            put_lit(e, "null");
        }
    }
    x = col_str(&b->extra, j, &xl);
    obj_close(e, &o, x, xl);
    return 0;
}

static int write_blocks(Enc *e, const Blocks *b, int64_t a, int64_t z) {
    put(&e->st, &e->out, "[", 1);
    for (int64_t j = a; j < z; j++) {
        if (j > a) put(&e->st, &e->out, ",", 1);
        if (write_block(e, b, j)) return FALLBACK;
    }
    put(&e->st, &e->out, "]", 1);
    return 0;
}

enum { W_ABSENT, W_STRING, W_PARTS, W_NULL };

static inline int wire_kind(const Col *form, int64_t i) {
    size_t n;
    const char *f = col_str(form, i, &n);
    if (str_eq(f, n, "string")) return W_STRING;
    if (str_eq(f, n, "parts")) return W_PARTS;
    if (str_eq(f, n, "null")) return W_NULL;
    return W_ABSENT;
}

/* formats._common.wire_value of a present kind over blocks [a, z). The string form is the text of the
 * first block (Python indexes the flattened blocks: with no block of its own it would read another
 * item's, or fail: handed back). */
static int write_wire(Enc *e, int kind, const Blocks *b, int64_t a, int64_t z) {
    if (kind == W_STRING) {
        if (z <= a) return FALLBACK;
        put_str_or_null(e, &b->text, a);
        return 0;
    }
    if (kind == W_PARTS) return write_blocks(e, b, a, z);
    put_lit(e, "null");
    return 0;
}

/* The row's instructions / system (ConversationView.instructions_value) under `key`, unless absent. */
static int write_instructions(Enc *e, Obj *o, const char *key, int kind) {
    if (kind == W_ABSENT) return 0;
    int64_t a, z;
    lrange(&e->instr_content, e->r, &a, &z);
    if (obj_lit(e, o, key)) return FALLBACK;
    return write_wire(e, kind, &SAME->instr, a, z);
}

/* ConversationView.top: model, tools, tool_choice, the row's null_fields, then its extra_json. */
static int write_top(Enc *e, Obj *o) {
    int64_t r = e->r;
    size_t n;
    const char *s = col_str(&e->model, r, &n);
    if (s) {
        if (obj_lit(e, o, "model")) return FALLBACK;
        put_json_str(&e->st, &e->out, s, n);
    }
    s = col_str(&e->tools, r, &n);
    if (s) {
        if (obj_lit(e, o, "tools")) return FALLBACK;
        put(&e->st, &e->out, s, n);
    }
    s = col_str(&e->tool_choice, r, &n);
    if (s) {
        if (obj_lit(e, o, "tool_choice")) return FALLBACK;
        put(&e->st, &e->out, s, n);
    }
    if (col_valid(&e->nulls, r)) {
        int64_t a, z;
        col_list(&e->nulls, r, &a, &z);
        for (int64_t k = a; k < z; k++) {
            s = col_str(&e->null_names, k, &n);
            if (!s || obj_key(e, o, s, n)) return FALLBACK;
            put_lit(e, "null");
        }
    }
    s = col_str(&e->extra, r, &n);
    obj_close(e, o, s, n);
    return 0;
}

/* Checks every writer makes first: the row is `fmt`'s, its items list and instructions are not null, and
 * no item in it is null (their children would not be their values). Sets e->start, e->end. */
static int row_of(Enc *e, const char *fmt) {
    int64_t r = e->r;
    size_t n;
    const char *f = col_str(&e->source_format, r, &n);
    if (!str_eq(f, n, fmt)) return FALLBACK;
    if (!col_valid(&e->items, r) || !col_valid(&e->instr_valid, r)) return FALLBACK;
    col_list(&e->items, r, &e->start, &e->end);
    for (int64_t i = e->start; i < e->end; i++)
        if (!col_valid(&e->item_valid, i)) return FALLBACK;
    return 0;
}

static inline int is_response_row(Enc *e) {
    size_t n;
    const char *k = col_str(&e->record_kind, e->r, &n);
    return str_eq(k, n, "response");
}

static inline int section_is(Enc *e, int64_t i, const char *s) {
    size_t n;
    const char *x = col_str(&e->section, i, &n);
    return str_eq(x, n, s);
}

/* ------------------------------------------------------------------------------------------ */
/* Responses (formats/responses.py: encode, encode_item)                                        */

static int responses_item(Enc *e, int64_t i) {
    Obj o;
    obj_open(e, &o);
    size_t n;
    const char *s = col_str(&e->native_type, i, &n);
    if (s) {
        if (obj_lit(e, &o, "type")) return FALLBACK;
        put_json_str(&e->st, &e->out, s, n);
    }
    static const char *const names[] = {"id",     "call_id", "role",  "name",  "namespace",
                                        "arguments", "input", "status", "phase", "encrypted_content"};
    const Col *cols[] = {&e->id,    &e->call_id, &e->role,   &e->name,  &e->namespace_,
                         &e->arguments, &e->input, &e->status, &e->phase, &e->encrypted_content};
    for (int q = 0; q < 10; q++) {
        s = col_str(cols[q], i, &n);
        if (!s) continue;
        if (obj_lit(e, &o, names[q])) return FALLBACK;
        put_json_str(&e->st, &e->out, s, n);
    }
    if (col_valid(&e->inulls, i)) {
        int64_t a, z;
        col_list(&e->inulls, i, &a, &z);
        for (int64_t k = a; k < z; k++) {
            s = col_str(&e->inull_names, k, &n);
            if (!s) return FALLBACK;
            if (str_eq(s, n, "native_type")) s = "type", n = 4;
            if (obj_key(e, &o, s, n)) return FALLBACK;
            put_lit(e, "null");
        }
    }
    size_t tl;
    const char *t = col_str(&e->type, i, &tl);
    const char *payload = NULL;
    if (str_eq(t, tl, "message") || str_eq(t, tl, "reasoning")) payload = "content";
    else if (str_eq(t, tl, "function_call_output") || str_eq(t, tl, "custom_tool_call_output")) payload = "output";
    if (payload) {
        int kind = wire_kind(&e->content_form, i);
        if (kind != W_ABSENT) {
            int64_t a, z;
            lrange(&e->content, i, &a, &z);
            if (obj_lit(e, &o, payload) || write_wire(e, kind, &SAME->content, a, z)) return FALLBACK;
        }
    }
    if (str_eq(t, tl, "reasoning") && col_valid(&SAME->summary_list, i)) {
        int64_t a, z;
        col_list(&SAME->summary_list, i, &a, &z);
        if (obj_lit(e, &o, "summary") || write_blocks(e, &SAME->summary, a, z)) return FALLBACK;
    }
    s = col_str(&e->iextra, i, &n);
    obj_close(e, &o, s, n);
    return 0;
}

/* The items of `section`, in order, as a list. */
static int responses_items(Enc *e, const char *section) {
    put(&e->st, &e->out, "[", 1);
    int first = 1;
    for (int64_t i = e->start; i < e->end; i++) {
        if (!section_is(e, i, section)) continue;
        if (!first) put(&e->st, &e->out, ",", 1);
        first = 0;
        if (responses_item(e, i)) return FALLBACK;
    }
    put(&e->st, &e->out, "]", 1);
    return 0;
}

static int responses_row(Enc *e) {
    if (row_of(e, "responses")) return FALLBACK;
    const char *key = is_response_row(e) ? "output" : "input";
    Obj o;
    obj_open(e, &o);
    size_t n;
    const char *f = col_str(&e->instr_form, e->r, &n);
    if (str_eq(f, n, "items")) {
        if (obj_lit(e, &o, "instructions") || responses_items(e, "instructions")) return FALLBACK;
    } else if (write_instructions(e, &o, "instructions", wire_kind(&e->instr_form, e->r))) {
        return FALLBACK;
    }
    int form = wire_kind(&e->items_form, e->r);
    if (form == W_STRING) { /* the text of the first item of the section */
        int64_t i = e->start;
        while (i < e->end && !section_is(e, i, key)) i++;
        if (i == e->end) return FALLBACK; /* next() of nothing: StopIteration in the Python encoder */
        int64_t a, z;
        lrange(&e->content, i, &a, &z);
        if (obj_lit(e, &o, key) || write_wire(e, W_STRING, &SAME->content, a, z)) return FALLBACK;
    } else if (form == W_PARTS) {
        if (obj_lit(e, &o, key) || responses_items(e, key)) return FALLBACK;
    } else if (form == W_NULL) {
        if (obj_lit(e, &o, key)) return FALLBACK;
        put_lit(e, "null");
    }
    return write_top(e, &o);
}

/* ------------------------------------------------------------------------------------------ */
/* Chat (formats/chat.py: encode, encode_head, _encode_tool_call)                               */

static inline int same_group(Enc *e, int64_t i, int64_t j) {
    int vi = col_valid(&e->group, i), vj = col_valid(&e->group, j);
    if (!vi || !vj) return vi == vj; /* None == None */
    return col_i32(&e->group, i) == col_i32(&e->group, j);
}

static inline int is_call_item(Enc *e, int64_t i) {
    size_t n;
    const char *t = col_str(&e->type, i, &n);
    return is_call(t, n);
}

/* One tool call: {"id", "type", SUB: {"name", VALUE, **extra[SUB]}, **rest of extra}. The item's
 * extra_json is parsed and written again here (the Python codec merges it), so it must be canonical. */
static int chat_call(Enc *e, int64_t i) {
    size_t tl;
    const char *t = col_str(&e->type, i, &tl);
    int custom = str_eq(t, tl, "custom_tool_call");
    const char *sub_key = custom ? "custom" : "function";
    const char *value_key = custom ? "input" : "arguments";
    const Col *value_col = custom ? &e->input : &e->arguments;
    size_t xn;
    const char *x = col_str(&e->iextra, i, &xn);
    yyjson_doc *doc = NULL;
    yyjson_val *root = NULL, *sub_extra = NULL;
    if (x) {
        doc = parse(x, xn);
        if (!doc) return FALLBACK;
        root = yyjson_doc_get_root(doc);
        if (!yyjson_is_obj(root)) goto fail; /* extra.pop: an AttributeError or TypeError in Python */
        size_t idx, max;
        yyjson_val *k, *v;
        yyjson_obj_foreach(root, idx, max, k, v) {
            if (key_is(k, sub_key)) {
                if (!yyjson_is_obj(v)) goto fail; /* dict.update of a non-object */
                sub_extra = v;
            } else if (key_is(k, "id") || key_is(k, "type")) {
                goto fail; /* d.update would replace the modelled value in place */
            }
        }
        if (sub_extra) {
            yyjson_obj_foreach(sub_extra, idx, max, k, v) {
                if (key_is(k, "name") || key_is(k, value_key)) goto fail;
            }
        }
    }
    Obj o, so;
    obj_open(e, &o);
    if (put_field(e, &o, "id", &e->call_id, "call_id", i) || put_field(e, &o, "type", &e->native_type, "native_type", i))
        goto fail;
    if (obj_lit(e, &o, sub_key)) goto fail;
    obj_open(e, &so);
    if (put_field(e, &so, "name", &e->name, "name", i) || put_field(e, &so, value_key, value_col, value_key, i))
        goto fail;
    if (sub_extra) {
        size_t idx, max;
        yyjson_val *k, *v;
        yyjson_obj_foreach(sub_extra, idx, max, k, v) {
            if (obj_key(e, &so, yyjson_get_str(k), yyjson_get_len(k))) goto fail;
            put_value(&e->st, &e->out, v);
        }
    }
    put(&e->st, &e->out, "}", 1);
    if (root) {
        size_t idx, max;
        yyjson_val *k, *v;
        yyjson_obj_foreach(root, idx, max, k, v) {
            if (key_is(k, sub_key)) continue;
            if (obj_key(e, &o, yyjson_get_str(k), yyjson_get_len(k))) goto fail;
            put_value(&e->st, &e->out, v);
        }
    }
    put(&e->st, &e->out, "}", 1);
    if (doc) yyjson_doc_free(doc);
    return 0;
fail:
    if (doc) yyjson_doc_free(doc);
    return FALLBACK;
}

/* The message of head item h with its tool calls, items (h, z): {"role", "content", "name",
 * "tool_call_id", "tool_calls", **extra}. */
static int chat_message(Enc *e, int64_t h, int64_t z) {
    Obj o;
    obj_open(e, &o);
    if (obj_lit(e, &o, "role")) return FALLBACK;
    put_str_or_null(e, &e->role, h);
    int kind = wire_kind(&e->content_form, h);
    if (kind != W_ABSENT) {
        int64_t a, b;
        lrange(&e->content, h, &a, &b);
        if (obj_lit(e, &o, "content") || write_wire(e, kind, &SAME->content, a, b)) return FALLBACK;
    }
    if (put_field(e, &o, "name", &e->name, "name", h) || put_field(e, &o, "tool_call_id", &e->call_id, "call_id", h))
        return FALLBACK;
    if (z > h + 1) {
        if (obj_lit(e, &o, "tool_calls")) return FALLBACK;
        put(&e->st, &e->out, "[", 1);
        for (int64_t i = h + 1; i < z; i++) {
            if (i > h + 1) put(&e->st, &e->out, ",", 1);
            if (chat_call(e, i)) return FALLBACK;
        }
        put(&e->st, &e->out, "]", 1);
    }
    size_t n;
    const char *x = col_str(&e->iextra, h, &n);
    obj_close(e, &o, x, n);
    return 0;
}

static int chat_row(Enc *e) {
    if (row_of(e, "chat")) return FALLBACK;
    int response = is_response_row(e);
    Obj o;
    obj_open(e, &o);
    if (obj_lit(e, &o, response ? "choices" : "messages")) return FALLBACK;
    put(&e->st, &e->out, "[", 1);
    int64_t i = e->start;
    while (i < e->end) {
        int64_t h = i++;
        while (i < e->end && same_group(e, i, h) && is_call_item(e, i)) i++;
        if (h > e->start) put(&e->st, &e->out, ",", 1);
        if (response) { /* splice({"message": msg}, wrapper) */
            Obj w;
            obj_open(e, &w);
            if (obj_lit(e, &w, "message") || chat_message(e, h, i)) return FALLBACK;
            size_t n;
            const char *x = col_str(&SAME->wrapper, h, &n);
            obj_close(e, &w, x, n);
        } else if (chat_message(e, h, i)) {
            return FALLBACK;
        }
    }
    put(&e->st, &e->out, "]", 1);
    return write_top(e, &o);
}

/* ------------------------------------------------------------------------------------------ */
/* Anthropic (formats/anthropic.py: encode, _encode_content, _encode_item_block)                */

static int anthropic_item_block(Enc *e, int64_t i) {
    size_t tl;
    const char *t = col_str(&e->native_type, i, &tl);
    if (!t) return FALLBACK; /* _is_result(None): an AttributeError in Python */
    Obj o;
    obj_open(e, &o);
    if (obj_lit(e, &o, "type")) return FALLBACK;
    put_json_str(&e->st, &e->out, t, tl);
    int64_t a, z;
    if (str_eq(t, tl, "tool_use") || str_eq(t, tl, "server_tool_use") || str_eq(t, tl, "mcp_tool_use")) {
        if (put_field(e, &o, "id", &e->call_id, "call_id", i) || put_field(e, &o, "name", &e->name, "name", i))
            return FALLBACK;
        size_t n;
        const char *s = col_str(&e->arguments, i, &n);
        if (s) {
            if (obj_lit(e, &o, "input")) return FALLBACK;
            put(&e->st, &e->out, s, n); /* orjson.Fragment of our own JSON text */
        } else if (in_nulls(&e->inulls, &e->inull_names, i, "arguments")) {
            if (obj_lit(e, &o, "input")) return FALLBACK;
            put_lit(e, "null");
        }
    } else if (str_eq(t, tl, "tool_result") || ends_with(t, tl, "_tool_result")) {
        if (put_field(e, &o, "tool_use_id", &e->call_id, "call_id", i)) return FALLBACK;
        int kind = wire_kind(&e->content_form, i);
        if (kind != W_ABSENT) {
            lrange(&e->content, i, &a, &z);
            if (obj_lit(e, &o, "content") || write_wire(e, kind, &SAME->content, a, z)) return FALLBACK;
        }
    } else if (str_eq(t, tl, "thinking")) {
        int kind = wire_kind(&e->content_form, i);
        if (kind == W_PARTS) { /* the text of its first block */
            lrange(&e->content, i, &a, &z);
            if (obj_lit(e, &o, "thinking") || write_wire(e, W_STRING, &SAME->content, a, z)) return FALLBACK;
        } else if (kind == W_NULL) {
            if (obj_lit(e, &o, "thinking")) return FALLBACK;
            put_lit(e, "null");
        }
        if (put_field(e, &o, "signature", &e->signature, "signature", i)) return FALLBACK;
    } else if (str_eq(t, tl, "redacted_thinking")) {
        if (put_field(e, &o, "data", &e->encrypted_content, "encrypted_content", i)) return FALLBACK;
    } else {
        int kind = wire_kind(&e->content_form, i);
        if (kind != W_ABSENT) {
            lrange(&e->content, i, &a, &z);
            if (obj_lit(e, &o, "content") || write_wire(e, kind, &SAME->content, a, z)) return FALLBACK;
        }
        if (put_field(e, &o, "encrypted_content", &e->encrypted_content, "encrypted_content", i) ||
            put_field(e, &o, "signature", &e->signature, "signature", i))
            return FALLBACK;
    }
    size_t n;
    const char *x = col_str(&e->iextra, i, &n);
    obj_close(e, &o, x, n);
    return 0;
}

/* The content of items [a, z) of one message, under `key` of o unless absent (a lone message item
 * whose form is not parts gives its own string / null / absence; otherwise a block list). */
static int anthropic_content(Enc *e, Obj *o, int64_t a, int64_t z) {
    size_t tl;
    const char *t = a < z ? col_str(&e->type, a, &tl) : NULL;
    int64_t ba, bz;
    if (z - a == 1 && str_eq(t, tl, "message")) {
        int kind = wire_kind(&e->content_form, a);
        if (kind != W_PARTS) {
            if (kind == W_ABSENT) return 0;
            lrange(&e->content, a, &ba, &bz);
            if (obj_lit(e, o, "content")) return FALLBACK;
            return write_wire(e, kind, &SAME->content, ba, bz);
        }
    }
    if (obj_lit(e, o, "content")) return FALLBACK;
    put(&e->st, &e->out, "[", 1);
    int first = 1;
    for (int64_t i = a; i < z; i++) {
        t = col_str(&e->type, i, &tl);
        if (str_eq(t, tl, "message") && !col_valid(&e->native_type, i)) {
            lrange(&e->content, i, &ba, &bz);
            for (int64_t j = ba; j < bz; j++) {
                if (!first) put(&e->st, &e->out, ",", 1);
                first = 0;
                if (write_block(e, &SAME->content, j)) return FALLBACK;
            }
        } else {
            if (!first) put(&e->st, &e->out, ",", 1);
            first = 0;
            if (anthropic_item_block(e, i)) return FALLBACK;
        }
    }
    put(&e->st, &e->out, "]", 1);
    return 0;
}

static int anthropic_row(Enc *e) {
    if (row_of(e, "anthropic")) return FALLBACK;
    Obj o;
    obj_open(e, &o);
    if (is_response_row(e)) {
        if (anthropic_content(e, &o, e->start, e->end)) return FALLBACK;
    } else {
        if (write_instructions(e, &o, "system", wire_kind(&e->instr_form, e->r))) return FALLBACK;
        if (obj_lit(e, &o, "messages")) return FALLBACK;
        put(&e->st, &e->out, "[", 1);
        int64_t i = e->start;
        while (i < e->end) {
            int64_t j = i + 1;
            while (j < e->end && same_group(e, j, i)) j++;
            if (i > e->start) put(&e->st, &e->out, ",", 1);
            Obj m;
            obj_open(e, &m);
            if (obj_lit(e, &m, "role")) return FALLBACK;
            put_str_or_null(e, &e->role, i);
            if (anthropic_content(e, &m, i, j)) return FALLBACK;
            size_t n;
            const char *x = col_str(&SAME->wrapper, i, &n);
            obj_close(e, &m, x, n);
            i = j;
        }
        put(&e->st, &e->out, "]", 1);
    }
    return write_top(e, &o);
}

/* ------------------------------------------------------------------------------------------ */
/* Entry points                                                                                 */

static PyObject *run_same(PyObject *args, int (*row)(Enc *), const char *name) {
    PyObject *batch;
    if (!PyArg_ParseTuple(args, "O", &batch)) return NULL;
    struct ArrowArray arr;
    struct ArrowSchema sch;
    if (export_c(batch, &arr, &sch)) return NULL;
    Same x;
    memset(&x, 0, sizeof x);
    PyObject *result = NULL;
    if (strcmp(sch.format, "+s") != 0 || bind_same(&x, &arr, &sch)) {
        PyErr_Format(PyExc_ValueError, "%s: the batch does not have the canonical schema", name);
    } else {
        const Same *prev = SAME;
        SAME = &x;
        result = run_encoder(batch, row, name);
        SAME = prev;
    }
    release_c(&arr, &sch);
    return result;
}

#define SAME_DOC(fmt)                                                                                          \
    "encode_same_" fmt "(batch) -> (text, offsets, native, loss_row, path, path_offsets, kind, kind_offsets, " \
    "detail, detail_offsets)\n\n"                                                                              \
    "Write a canonical RecordBatch's " fmt " rows (request bodies and response objects) back to " fmt         \
    " JSON, byte for byte what pipeline.formats." fmt ".encode + orjson.dumps give (see "                      \
    "pipeline/encoders/encode_rows.py). Output as for encode_chat; native is 0 for the rows handed back."

extern const char chatlake_encode_same_responses_doc[], chatlake_encode_same_chat_doc[],
    chatlake_encode_same_anthropic_doc[];
const char chatlake_encode_same_responses_doc[] = SAME_DOC("responses");
const char chatlake_encode_same_chat_doc[] = SAME_DOC("chat");
const char chatlake_encode_same_anthropic_doc[] = SAME_DOC("anthropic");

PyObject *chatlake_encode_same_responses(PyObject *self, PyObject *args);
PyObject *chatlake_encode_same_chat(PyObject *self, PyObject *args);
PyObject *chatlake_encode_same_anthropic(PyObject *self, PyObject *args);

PyObject *chatlake_encode_same_responses(PyObject *self, PyObject *args) {
    (void)self;
    return run_same(args, responses_row, "encode_same_responses");
}

PyObject *chatlake_encode_same_chat(PyObject *self, PyObject *args) {
    (void)self;
    return run_same(args, chat_row, "encode_same_chat");
}

PyObject *chatlake_encode_same_anthropic(PyObject *self, PyObject *args) {
    (void)self;
    return run_same(args, anthropic_row, "encode_same_anthropic");
}
