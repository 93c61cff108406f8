/*
 * pipeline._native.encode_hf: the compiled Responses / Chat request body -> Hugging Face (TRL)
 * conversational row encoder.
 *
 * The specification is the per-record encoder (pipeline/encoders/to_hf.py with _context.py and
 * call_ids.py): for each canonical row this writes exactly the bytes of
 * orjson.dumps(convert_table(row, "hf")[0].record) and the row's losses in the order that encoder
 * reports them. A row it cannot prove it encodes byte-identically is handed back whole to the
 * per-record encoder (pipeline/encoders/encode_rows.py): rows that are not Responses or Chat request
 * bodies, instructions given as items or parts, tool-call arguments that are not empty and do not parse, or parse to an
 * object whose orjson text is not provably what yyjson read (encode_common.h's canonical), a tools
 * value stored as a JSON string, a tool whose type tag is neither a string nor null, JSON values
 * (extra_json, tools) outside the canonical subset.
 *
 * Every message is written as it is met (the one assistant message tool calls attach to is always
 * the last one written, so it is left open until the next item closes it); losses go to the loss
 * columns in the order to_hf.encode reports them. Input and output as the other encoders
 * (encode_common.h's run_encoder).
 */
#include "encode_common.h" /* Python.h, yyjson, the Arrow C data interface, buffers, JSON writing */

#define TARGET_DETAIL " has no slot in HF"

/* to_hf.KEY_KINDS: an unmodelled key whose loss has its own kind. */
static const char *key_kind(yyjson_val *k) {
    static const char *const kinds[][2] = {
        {"refusal", "refusal"}, {"audio", "audio"}, {"cache_control", "cache_control"},
        {"prompt_cache_breakpoint", "cache_control"}, {"citations", "citations"}, {"is_error", "tool_error"},
    };
    for (size_t q = 0; q < sizeof kinds / sizeof kinds[0]; q++)
        if (key_is(k, kinds[q][0])) return kinds[q][1];
    return "unknown_field";
}

/* to_hf.lose_keys over an extra_json (column c, slot i) at base: one loss per key, `skip` (NULL or a
 * yyjson object whose keys are kept) excepted; tail: "' has no slot in HF" / "... in HF text".
 * 0, or FALLBACK when the value is not a canonical JSON object. */
static int lose_extra_keys(Enc *e, const Col *c, int64_t i, const Buf *base, const char *tail,
                           const char *const *skip) {
    yyjson_doc *doc;
    if (col_json_obj(c, i, &doc)) return FALLBACK;
    if (!doc) return 0;
    size_t idx, max;
    yyjson_val *k, *v;
    yyjson_obj_foreach(yyjson_doc_get_root(doc), idx, max, k, v) {
        if (skip && key_in(k, skip)) continue;
        lose_key(e, base, NULL, k, key_kind(k), "", tail);
    }
    yyjson_doc_free(doc);
    return 0;
}

/* Item i's pointer in its source record (to_hf's item_ptr: Ctx.item_ptr for Responses and Chat). */
static int item_ptr(Enc *e, Buf *b, int64_t i) {
    size_t n;
    const char *sec = col_str(&e->section, i, &n);
    if (!sec || !col_valid(&e->group, i) || (e->chat && str_eq(sec, n, "choices"))) return FALLBACK;
    b->len = 0;
    if (!e->chat && e->string_input && str_eq(sec, n, "input")) {
        puts_(&e->st, b, "/input");
        return 0;
    }
    put_ptr(&e->st, b, sec, n);
    put_byte(&e->st, b, '/');
    put_i64(&e->st, b, col_i32(&e->group, i));
    if (e->chat && col_valid(&e->part, i)) {
        puts_(&e->st, b, "/tool_calls/");
        put_i64(&e->st, b, col_i32(&e->part, i));
    }
    return 0;
}

/* Ctx.message_ptr: the native message item i came from (a Chat call's message), else the item. */
static int message_ptr(Enc *e, Buf *b, int64_t i) {
    if (!e->chat) return item_ptr(e, b, i);
    size_t n;
    const char *sec = col_str(&e->section, i, &n);
    if (!sec || !col_valid(&e->group, i) || str_eq(sec, n, "choices")) return FALLBACK; /* (a response's) */
    b->len = 0;
    put_ptr(&e->st, b, sec, n);
    put_byte(&e->st, b, '/');
    put_i64(&e->st, b, col_i32(&e->group, i));
    return 0;
}

static int is_form(Enc *e, int64_t i, const char *form) {
    size_t n;
    const char *f = col_str(&e->content_form, i, &n);
    return str_eq(f, n, form);
}

/* Ctx.content_ptr(i, k): the item's pointer + /content (a Responses output's /output) [+ /k when its
 * content is a list; k < 0: none]. */
static int content_ptr(Enc *e, Buf *b, int64_t i, int64_t k) {
    if (item_ptr(e, b, i)) return FALLBACK;
    size_t tl;
    const char *t = col_str(&e->type, i, &tl);
    puts_(&e->st, b, !e->chat && ends_with(t, tl, "_output") ? "/output" : "/content");
    if (k >= 0 && is_form(e, i, "parts")) {
        put_byte(&e->st, b, '/');
        put_i64(&e->st, b, k);
    }
    return 0;
}

/* to_hf._block_text for block j (path: its pointer): its text's characters appended to out, or
 * dropped and reported. 0 or FALLBACK. */
static int block_text(Enc *e, int64_t j, Buf *path, Buf *out, int64_t *ntexts) {
    St *st = &e->st;
    size_t tl;
    const char *t = col_str(&e->btype, j, &tl);
    if (t && !str_eq(t, tl, "input_text") && !str_eq(t, tl, "output_text") && !str_eq(t, tl, "text") &&
        !str_eq(t, tl, "refusal")) {
        const char *kind = str_eq(t, tl, "input_image") || str_eq(t, tl, "image") || str_eq(t, tl, "image_url") ? "image"
                           : str_eq(t, tl, "input_file") || str_eq(t, tl, "document") || str_eq(t, tl, "file") ? "file"
                                                                                                              : "unknown_field";
        e->tmp.len = 0;
        puts_(st, &e->tmp, article_quoted(t, tl));
        put(st, &e->tmp, t, tl);
        puts_(st, &e->tmp, "' part has no place in HF text");
        lose(e, path->p, path->len, kind, e->tmp.p, e->tmp.len);
        return 0;
    }
    if (str_eq(t, tl, "refusal")) lose_s(e, path->p, path->len, "refusal", "a refusal became plain text");
    size_t pl = path->len, al;
    const char *ann = col_str(&e->bann, j, &al);
    if (ann && !(al == 2 && memcmp(ann, "[]", 2) == 0)) {
        puts_(st, path, "/annotations");
        lose_s(e, path->p, path->len, "annotations", "HF text has no annotations");
        path->len = pl;
    }
    static const char *const keys[] = {"logprobs", "cache_control", "citations"};
    const Col *cols[] = {&e->blogp, &e->bcache, &e->bcit};
    for (int q = 0; q < 3; q++) {
        if (!col_valid(cols[q], j)) continue;
        put_byte(st, path, '/');
        puts_(st, path, keys[q]);
        e->tmp.len = 0;
        puts_(st, &e->tmp, "HF text has no ");
        puts_(st, &e->tmp, keys[q]);
        lose(e, path->p, path->len, keys[q], e->tmp.p, e->tmp.len);
        path->len = pl;
    }
    if (lose_extra_keys(e, &e->bextra, j, path, "' has no slot in HF text", NULL)) return FALLBACK;
    size_t xl;
    const char *text = col_str(&e->btext, j, &xl);
    if (text) put_json_chars(st, out, text, xl);
    (*ntexts)++;
    return 0;
}

/* Content states (to_hf.flatten's string / None / ...). */
enum { C_ABSENT, C_NULL, C_VALUE };

/* to_hf.flatten: item i's content as one JSON string written to out (*state C_VALUE), or C_NULL /
 * C_ABSENT with nothing written. A list's parts are joined and reported. 0 or FALLBACK. */
static int flatten(Enc *e, int64_t i, Buf *out, int *state) {
    St *st = &e->st;
    size_t fl;
    const char *form = col_str(&e->content_form, i, &fl);
    int64_t a, z;
    col_list(&e->content, i, &a, &z);
    if (str_eq(form, fl, "string")) {
        if (!col_valid(&e->content, i) || z - a != 1 || !col_valid(&e->blk_valid, a)) return FALLBACK;
        size_t tl;
        const char *text = col_str(&e->btext, a, &tl);
        if (!text) return FALLBACK;
        put_json_str(st, out, text, tl);
        *state = C_VALUE;
        return 0;
    }
    if (str_eq(form, fl, "null")) {
        *state = C_NULL;
        return 0;
    }
    if (!str_eq(form, fl, "parts")) {
        *state = C_ABSENT;
        return str_eq(form, fl, "absent") ? 0 : FALLBACK;
    }
    Buf path = e->ptr; /* handed back to e->ptr at the end (it may have grown) */
    int rc = 0;
    int64_t ntexts = 0;
    put_byte(st, out, '"');
    for (int64_t j = a; j < z && !rc; j++) {
        if (!col_valid(&e->blk_valid, j) || content_ptr(e, &path, i, j - a)) rc = FALLBACK;
        else rc = block_text(e, j, &path, out, &ntexts);
    }
    put_byte(st, out, '"');
    if (!rc && !(rc = content_ptr(e, &path, i, -1)))
        lose_s(e, path.p, path.len, ntexts > 1 ? "block_boundary" : "content_form",
               "a content list became one HF string (parts joined with no separator)");
    e->ptr = path;
    *state = C_VALUE;
    return rc;
}

/* to_hf.item_fields with no carried keys (the source is not a dataset format): the fields HF has no
 * slot for, the Responses type tag of a message, then every unmodelled key but `kept`. */
static int item_fields(Enc *e, int64_t i, const Buf *base, const char *const *kept) {
    St *st = &e->st;
    static const char *const fields[][2] = {
        {"id", "item_id"}, {"status", "status"}, {"phase", "phase"}, {"namespace", "namespace"}};
    const Col *cols[] = {&e->id, &e->status, &e->phase, &e->namespace_};
    for (int q = 0; q < 4; q++) {
        if (!col_valid(cols[q], i) && !has_null(&e->inulls, &e->inull_names, i, fields[q][0])) continue;
        e->tmp2.len = 0;
        put(st, &e->tmp2, base->p, base->len);
        put_byte(st, &e->tmp2, '/');
        puts_(st, &e->tmp2, fields[q][0]);
        e->tmp.len = 0;
        puts_(st, &e->tmp, "HF has no ");
        puts_(st, &e->tmp, fields[q][0]);
        lose(e, e->tmp2.p, e->tmp2.len, fields[q][1], e->tmp.p, e->tmp.len);
    }
    size_t tl;
    const char *t = col_str(&e->type, i, &tl);
    if (!e->chat && col_valid(&e->native_type, i) && str_eq(t, tl, "message")) {
        e->tmp2.len = 0;
        put(st, &e->tmp2, base->p, base->len);
        puts_(st, &e->tmp2, "/type");
        lose_s(e, e->tmp2.p, e->tmp2.len, "content_form", "HF messages have no type tag");
    }
    if (col_valid(&e->wrapper, i)) return FALLBACK; /* (an Anthropic message's keys: not taken here) */
    return lose_extra_keys(e, &e->iextra, i, base, "'" TARGET_DETAIL, kept);
}

/* The row being written: whether the last message is still open (an assistant message tool calls
 * may attach to), whether it holds tool calls yet. */
typedef struct {
    int open, calls;
} Cur;

static void close_msg(Enc *e, Cur *cur) {
    if (!cur->open) return;
    if (cur->calls) put_byte(&e->st, &e->out, ']');
    put_byte(&e->st, &e->out, '}');
    cur->open = cur->calls = 0;
}

/* to_hf._message: message item i (base: its pointer) written, left open when it is an assistant's. */
static int message_item(Enc *e, int64_t i, int first, Cur *cur) {
    St *st = &e->st;
    Buf *out = &e->out;
    size_t rl;
    const char *role = col_str(&e->role, i, &rl);
    if (!role) role = "user", rl = 4;
    else if (str_eq(role, rl, "developer")) {
        lose_s(e, e->base.p, e->base.len, "developer_role", "the developer message became a system message");
        role = "system", rl = 6;
    }
    int assistant = str_eq(role, rl, "assistant");
    if (!first) put_byte(st, out, ',');
    puts_(st, out, "{\"role\":");
    put_json_str(st, out, role, rl);
    size_t mark = out->len;
    puts_(st, out, ",\"content\":");
    int state;
    if (flatten(e, i, out, &state)) return FALLBACK;
    if (state == C_NULL && assistant) {
        puts_(st, out, "null");
    } else if (state != C_VALUE) {
        out->len = mark;
        if (!assistant) {
            if (content_ptr(e, &e->ptr2, i, -1)) return FALLBACK;
            lose_s(e, e->ptr2.p, e->ptr2.len, "content_form", "null or absent content written as ''");
            puts_(st, out, ",\"content\":\"\"");
        }
    }
    size_t nl;
    const char *name = col_str(&e->name, i, &nl);
    if (name) {
        puts_(st, out, ",\"name\":");
        put_json_str(st, out, name, nl);
    }
    /* to_hf.reasoning_keys: a Chat source's assistant reasoning text, kept on the message */
    const char *kept[3] = {NULL, NULL, NULL};
    if (e->chat && assistant && col_valid(&e->iextra, i)) {
        yyjson_doc *doc;
        if (col_json_obj(&e->iextra, i, &doc)) return FALLBACK;
        static const char *const reasoning[] = {"reasoning_content", "thinking"};
        int nk = 0;
        for (int q = 0; q < 2; q++) {
            yyjson_val *v = yyjson_obj_get(yyjson_doc_get_root(doc), reasoning[q]);
            if (!v || !yyjson_is_str(v)) continue;
            kept[nk++] = reasoning[q];
            put_byte(st, out, ',');
            put_json_str(st, out, reasoning[q], strlen(reasoning[q]));
            put_byte(st, out, ':');
            put_value(st, out, v);
        }
        yyjson_doc_free(doc);
    }
    if (item_fields(e, i, &e->base, kept)) return FALLBACK;
    cur->open = 1;
    cur->calls = 0;
    if (!assistant) close_msg(e, cur);
    return 0;
}

/* to_hf.parse_arguments + arguments_object for function call i: the arguments object written to out
 * (`path`: the arguments' pointer for the argument_string loss). 0 or FALLBACK. */
static int arguments(Enc *e, int64_t i, const Buf *path, Buf *out) {
    St *st = &e->st;
    size_t n;
    const char *raw = col_str(&e->arguments, i, &n);
    if (!raw) {
        puts_(st, out, "{}");
        lose_s(e, path->p, path->len, "argument_string", "no arguments; wrote {}");
        return 0;
    }
    size_t w = 0;
    while (w < n && (raw[w] == ' ' || raw[w] == '\t' || raw[w] == '\n' || raw[w] == '\r')) w++;
    yyjson_doc *doc = NULL;
    if (w < n) {
        doc = yyjson_read_opts((char *)raw, n, YYJSON_READ_NUMBER_AS_RAW, NULL, NULL);
        if (!doc) return FALLBACK; /* text orjson may read otherwise than yyjson: left to the Python */
    }
    yyjson_val *root = doc ? yyjson_doc_get_root(doc) : NULL;
    if (!root || !yyjson_is_obj(root)) { /* not a JSON object (empty, or another value): wrapped */
        if (doc) yyjson_doc_free(doc);
        puts_(st, out, "{\"_raw_arguments\":");
        put_json_str(st, out, raw, n);
        put_byte(st, out, '}');
        lose_s(e, path->p, path->len, "argument_string", "not a JSON object; wrapped as {'_raw_arguments': ...}");
        return 0;
    }
    if (!canonical(root, 0)) {
        yyjson_doc_free(doc);
        return FALLBACK;
    }
    size_t at = out->len;
    put_value(st, out, root);
    yyjson_doc_free(doc);
    if (st->oom) return FALLBACK;
    if (out->len - at != n || memcmp(out->p + at, raw, n) != 0)
        lose_s(e, path->p, path->len, "argument_string", "re-serialised as compact JSON");
    return 0;
}

/* to_hf._call: call item i as a tool call of the open assistant message (a new one when none is). */
static int call_item(Enc *e, int64_t i, int first, Cur *cur) {
    St *st = &e->st;
    Buf *out = &e->out;
    size_t tl, nl, cl;
    const char *t = col_str(&e->type, i, &tl);
    int custom = str_eq(t, tl, "custom_tool_call");
    if (!cur->open) {
        if (!first) put_byte(st, out, ',');
        puts_(st, out, "{\"role\":\"assistant\"");
        cur->open = 1;
        cur->calls = 0;
    }
    puts_(st, out, cur->calls ? "," : ",\"tool_calls\":[");
    cur->calls = 1;
    size_t ntl;
    const char *nt = col_str(&e->native_type, i, &ntl);
    if (e->chat && !custom && !str_eq(nt, ntl, "function")) { /* to_hf.call_type_kept */
        if (message_ptr(e, &e->ptr2, i)) return FALLBACK;
        puts_(st, &e->ptr2, "/tool_calls");
        lose_s(e, e->ptr2.p, e->ptr2.len, "content_form", "a call without type 'function' gets it");
    }
    const char *cid = col_str(&e->call_id, i, &cl);
    const char *name = col_str(&e->name, i, &nl);
    put_byte(st, out, '{');
    if (cid) {
        puts_(st, out, "\"id\":");
        put_json_str(st, out, cid, cl);
        put_byte(st, out, ',');
    }
    puts_(st, out, "\"type\":\"function\",\"function\":{\"name\":");
    put_json_str(st, out, name ? name : "", name ? nl : 0);
    puts_(st, out, ",\"arguments\":");
    if (custom) {
        if (e->chat) {
            if (message_ptr(e, &e->ptr2, i)) return FALLBACK;
            puts_(st, &e->ptr2, "/tool_calls");
        } else {
            e->ptr2.len = 0;
            put(st, &e->ptr2, e->base.p, e->base.len);
        }
        lose_s(e, e->ptr2.p, e->ptr2.len, "custom_tool", "a custom tool call became a function call {'input': ...}");
        size_t il;
        const char *input = col_str(&e->input, i, &il);
        puts_(st, out, "{\"input\":");
        put_json_str(st, out, input ? input : "", input ? il : 0);
        put_byte(st, out, '}');
    } else {
        e->ptr2.len = 0; /* to_hf.field_ptr(i, "arguments") */
        put(st, &e->ptr2, e->base.p, e->base.len);
        puts_(st, &e->ptr2, e->chat ? "/function/arguments" : "/arguments");
        if (arguments(e, i, &e->ptr2, out)) return FALLBACK;
    }
    puts_(st, out, "}}");
    return item_fields(e, i, &e->base, NULL);
}

/* call_ids.pair_outputs (by id): the first call before output i with its call id, or -1. */
static int64_t paired_call(Enc *e, int64_t i) {
    size_t cl;
    const char *cid = col_str(&e->call_id, i, &cl);
    if (!cid) return -1;
    for (int64_t q = e->start; q < i; q++) {
        size_t tl, ql;
        const char *t = col_str(&e->type, q, &tl);
        if (!is_call(t, tl)) continue;
        const char *qid = col_str(&e->call_id, q, &ql);
        if (qid && ql == cl && memcmp(qid, cid, cl) == 0) return q;
    }
    return -1;
}

/* to_hf._tool_message: output item i as a tool message. */
static int output_item(Enc *e, int64_t i, int first) {
    St *st = &e->st;
    Buf *out = &e->out;
    Buf *base = &e->base;
    size_t tl, cl, nl;
    const char *t = col_str(&e->type, i, &tl);
    if (str_eq(t, tl, "custom_tool_call_output"))
        lose_s(e, base->p, base->len, "custom_tool", "a custom tool output became a function call output");
    if (!first) put_byte(st, out, ',');
    puts_(st, out, "{\"role\":\"tool\"");
    const char *cid = col_str(&e->call_id, i, &cl);
    if (cid) {
        puts_(st, out, ",\"tool_call_id\":");
        put_json_str(st, out, cid, cl);
    }
    int64_t call = paired_call(e, i);
    const char *own = col_str(&e->name, i, &nl);
    const char *name = own;
    if (!name && call >= 0) name = col_str(&e->name, call, &nl);
    if (name) {
        puts_(st, out, ",\"name\":");
        put_json_str(st, out, name, nl);
    }
    if (call < 0) lose_s(e, base->p, base->len, "orphan_output", "no matching call: the tool message has no name");
    if (own) {
        size_t bl = base->len;
        puts_(st, base, "/name");
        lose_s(e, base->p, base->len, "name", "a tool output's own name does not come back");
        base->len = bl;
    }
    size_t mark = out->len;
    puts_(st, out, ",\"content\":");
    int state;
    if (flatten(e, i, out, &state)) return FALLBACK;
    if (state != C_VALUE) {
        out->len = mark;
        if (content_ptr(e, &e->ptr2, i, -1)) return FALLBACK;
        lose_s(e, e->ptr2.p, e->ptr2.len, "content_form", "null or absent tool output written as ''");
        puts_(st, out, ",\"content\":\"\"");
    }
    put_byte(st, out, '}');
    return item_fields(e, i, base, NULL);
}


/* Whether call i is answered by id (call_ids.pair_outputs): the first call with its id, and an
 * output with that id comes after it. */
static int answered(Enc *e, int64_t i) {
    size_t cl;
    const char *cid = col_str(&e->call_id, i, &cl);
    if (!cid) return 0;
    for (int64_t q = e->start; q < e->end; q++) {
        size_t tl, ql;
        const char *t = col_str(&e->type, q, &tl);
        int call = is_call(t, tl);
        if (q == i || (!call && (q < i || !is_output(t, tl)))) continue;
        const char *qid = col_str(&e->call_id, q, &ql);
        if (!qid || ql != cl || memcmp(qid, cid, cl) != 0) continue;
        if (call && q < i) return 0; /* an earlier call holds the id */
        if (!call) return 1;
    }
    return 0;
}

/* call_ids.report_way_back: the ids the way back from HF generates, reported where a direct
 * conversion reports them (CallIds): each id-less call, then each id-less output paired by
 * position with the oldest call no output answers (HF writes no id for either). */
static int way_back(Enc *e) {
    int idless_output = 0;
    for (int64_t i = e->start; i < e->end; i++) {
        size_t tl;
        const char *t = col_str(&e->type, i, &tl);
        if (col_valid(&e->call_id, i)) continue;
        if (is_output(t, tl)) idless_output = 1;
        if (!is_call(t, tl)) continue;
        if (item_ptr(e, &e->ptr2, i)) return FALLBACK;
        lose_s(e, e->ptr2.p, e->ptr2.len, "generated_id", "the way back from this target gives the call an id");
    }
    int64_t pending = 0; /* calls waiting for an id-less output, oldest first (only their count matters) */
    for (int64_t i = e->start; i < e->end && idless_output; i++) {
        size_t tl;
        const char *t = col_str(&e->type, i, &tl);
        if (is_output(t, tl) && !col_valid(&e->call_id, i)) {
            if (!pending) continue;
            pending--;
            if (item_ptr(e, &e->ptr2, i)) return FALLBACK;
            lose_s(e, e->ptr2.p, e->ptr2.len, "generated_id",
                   "the way back from this target gives the output its call's id (paired by position)");
        } else if (is_call(t, tl) && !answered(e, i)) {
            pending++;
        }
    }
    return 0;
}

/* Whether this row is one encode_hf takes: a Responses or Chat (e->chat) request body. Sets the
 * row's item range and input form. 0 or FALLBACK. */
static int row_taken(Enc *e) {
    int64_t r = e->r;
    size_t n, n2;
    const char *s = col_str(&e->source_format, r, &n);
    const char *k = col_str(&e->record_kind, r, &n2);
    e->chat = str_eq(s, n, "chat");
    if ((!e->chat && !str_eq(s, n, "responses")) || !str_eq(k, n2, "request")) return FALLBACK;
    if (!col_valid(&e->items, r) || !col_valid(&e->instr_valid, r)) return FALLBACK;
    const char *form = col_str(&e->items_form, r, &n);
    e->string_input = str_eq(form, n, "string");
    if (!str_eq(form, n, "parts") && !(e->string_input && !e->chat)) return FALLBACK;
    col_list(&e->items, r, &e->start, &e->end);
    for (int64_t i = e->start; i < e->end; i++) {
        if (!col_valid(&e->item_valid, i)) return FALLBACK;
        const char *t = col_str(&e->type, i, &n);
        if (!t) return FALLBACK;
    }
    return 0;
}

/* to_hf._instructions: the leading system message (*wrote), or the instructions' loss. */
static int instructions(Enc *e, int *wrote) {
    St *st = &e->st;
    int64_t r = e->r;
    size_t n;
    const char *instr = col_str(&e->instr_form, r, &n);
    const char *key = e->chat ? "/system" : "/instructions";
    *wrote = 0;
    if (str_eq(instr, n, "absent")) return 0;
    if (str_eq(instr, n, "null")) {
        lose_s(e, key, strlen(key), "instruction_position", "explicit null instructions dropped");
        return 0;
    }
    if (!str_eq(instr, n, "string") || !col_valid(&e->instr_content, r)) return FALLBACK; /* items, parts */
    int64_t a, z;
    col_list(&e->instr_content, r, &a, &z);
    if (z - a != 1 || !col_valid(&e->instr_blk_valid, a)) return FALLBACK;
    size_t tl;
    const char *text = col_str(&e->instr_text, a, &tl);
    if (!text) return FALLBACK;
    if (!tl) {
        lose_s(e, key, strlen(key), "empty_text", "empty instructions produce no system message");
        return 0;
    }
    lose_s(e, key, strlen(key), "instruction_position", "instructions became a leading system message");
    puts_(st, &e->out, "{\"role\":\"system\",\"content\":");
    put_json_str(st, &e->out, text, tl);
    put_byte(st, &e->out, '}');
    *wrote = 1;
    return 0;
}

/* to_hf.leading_system_note (a Responses source): a first system message (after the items HF
 * drops) and the top-level prompt look the same in HF. */
static int leading_system_note(Enc *e, int has_instructions) {
    if (e->chat || has_instructions) return 0;
    for (int64_t i = e->start; i < e->end; i++) {
        size_t tl, rl;
        const char *t = col_str(&e->type, i, &tl);
        if (!str_eq(t, tl, "message") && !is_call(t, tl) && !is_output(t, tl)) continue;
        const char *role = col_str(&e->role, i, &rl);
        if (str_eq(t, tl, "message") && (str_eq(role, rl, "system") || str_eq(role, rl, "developer")) &&
            (is_form(e, i, "string") || is_form(e, i, "parts"))) {
            static const char d[] = "a leading system message and the top-level system prompt look the same in HF";
            if (item_ptr(e, &e->ptr2, i)) return FALLBACK;
            lose_s(e, e->ptr2.p, e->ptr2.len, "instruction_position", d);
            lose_s(e, "/instructions", 13, "instruction_position", d);
        }
        return 0;
    }
    return 0;
}

/* The row's items in order (to_hf.encode's loop). */
static int items(Enc *e, int first) {
    Cur cur = {0, 0};
    for (int64_t i = e->start; i < e->end; i++) {
        size_t tl;
        const char *t = col_str(&e->type, i, &tl);
        if (item_ptr(e, &e->base, i)) return FALLBACK;
        if (str_eq(t, tl, "message")) {
            close_msg(e, &cur);
            if (message_item(e, i, first, &cur)) return FALLBACK;
            first = 0;
        } else if (is_call(t, tl)) {
            if (call_item(e, i, first, &cur)) return FALLBACK;
            first = 0;
        } else if (is_output(t, tl)) {
            close_msg(e, &cur);
            if (output_item(e, i, first)) return FALLBACK;
            first = 0;
        } else if (dropped_item(e, i, t, tl, "HF")) {
            close_msg(e, &cur);
        }
    }
    close_msg(e, &cur);
    return 0;
}

/* to_hf._schema for one tool of the row's list (path: "/tools/N"): `{"type":"function","function":...}`
 * written to out (*wrote), or its loss. Also whether it is exactly a Chat function tool
 * (`{"type": "function", "function": {...}}`, nothing else: to_hf.tools_kept). 0 or FALLBACK. */
static int hf_tool(Enc *e, yyjson_val *tool, Buf *path, Buf *out, int *wrote, int *chat_shaped) {
    St *st = &e->st;
    *wrote = *chat_shaped = 0;
    if (!yyjson_is_obj(tool)) {
        lose_s(e, path->p, path->len, "tools", "not a tool object");
        return 0;
    }
    yyjson_val *t = yyjson_obj_get(tool, "type");
    yyjson_val *fn = yyjson_obj_get(tool, "function");
    size_t idx, max;
    yyjson_val *k, *v;
    if (is_str(t, "function") && fn && yyjson_is_obj(fn)) {
        static const char *const known[] = {"type", "function", NULL};
        yyjson_obj_foreach(tool, idx, max, k, v) {
            if (!key_in(k, known)) lose_key(e, path, NULL, k, "tools", "tool ", "' has no slot");
        }
        *chat_shaped = yyjson_obj_size(tool) == 2;
        puts_(st, out, "{\"type\":\"function\",\"function\":");
        put_value(st, out, fn);
        put_byte(st, out, '}');
        *wrote = 1;
        return 0;
    }
    if (!e->chat && is_str(t, "function")) {
        static const char *const known[] = {"type", "name", "description", "parameters", "strict", NULL};
        yyjson_obj_foreach(tool, idx, max, k, v) {
            if (!key_in(k, known)) lose_key(e, path, NULL, k, "tools", "tool ", "' has no slot");
        }
        puts_(st, out, "{\"type\":\"function\",\"function\":{");
        int firstk = 1;
        for (int q = 1; q < 5; q++) {
            yyjson_val *x = yyjson_obj_get(tool, known[q]);
            if (!x) continue;
            if (!firstk) put_byte(st, out, ',');
            firstk = 0;
            put_json_str(st, out, known[q], strlen(known[q]));
            put_byte(st, out, ':');
            put_value(st, out, x);
        }
        puts_(st, out, "}}");
        *wrote = 1;
        return 0;
    }
    int untyped = !t || yyjson_is_null(t);
    yyjson_val *name = yyjson_obj_get(tool, "name");
    if (untyped && name && yyjson_is_str(name)) { /* a bare schema */
        puts_(st, out, "{\"type\":\"function\",\"function\":");
        put_value(st, out, tool);
        put_byte(st, out, '}');
        *wrote = 1;
        return 0;
    }
    if (!untyped && !yyjson_is_str(t)) return FALLBACK; /* its Python str() is not written here */
    e->tmp.len = 0;
    if (untyped) puts_(st, &e->tmp, "a 'None");
    else {
        puts_(st, &e->tmp, article_quoted(yyjson_get_str(t), yyjson_get_len(t)));
        put(st, &e->tmp, yyjson_get_str(t), yyjson_get_len(t));
    }
    puts_(st, &e->tmp, "' tool has no equivalent here");
    lose(e, path->p, path->len, "tools", e->tmp.p, e->tmp.len);
    return 0;
}

/* to_hf.function_schemas + tools_kept: `,"tools":[...]` when the row has tools, with their losses. */
static int tools(Enc *e) {
    St *st = &e->st;
    Buf *out = &e->out;
    yyjson_doc *doc;
    if (col_json(&e->tools, e->r, &doc)) return FALLBACK;
    if (!doc) return 0;
    yyjson_val *raw = yyjson_doc_get_root(doc);
    int rc = 0, same = 0;
    if (yyjson_is_str(raw)) {
        rc = FALLBACK; /* a JSON string of tools (HF rows kept in Arrow): parsed again by the Python */
    } else if (!yyjson_is_arr(raw)) {
        lose_s(e, "/tools", 6, "tools", "tools is not a list");
        puts_(st, out, ",\"tools\":[]");
    } else {
        puts_(st, out, ",\"tools\":[");
        same = 1;
        int kept = 0;
        size_t idx, max;
        yyjson_val *tool;
        yyjson_arr_foreach(raw, idx, max, tool) {
            tool_ptr(st, &e->aux[1], idx);
            size_t mark = out->len;
            if (kept) put_byte(st, out, ',');
            int wrote, shaped;
            if ((rc = hf_tool(e, tool, &e->aux[1], out, &wrote, &shaped))) break;
            if (wrote) kept = 1;
            else out->len = mark;
            same &= shaped;
        }
        put_byte(st, out, ']');
    }
    if (!rc && e->chat && !same) lose_s(e, "/tools", 6, "tools", "the tools come back in another shape");
    yyjson_doc_free(doc);
    return rc;
}

/* to_hf.top_level for a source that is not a dataset format: model, tool_choice, explicit nulls and
 * every other top-level key reported. */
static int top_level(Enc *e) {
    St *st = &e->st;
    int64_t r = e->r;
    if (col_valid(&e->model, r)) lose_s(e, "/model", 6, "request_field", "HF rows have no model");
    if (col_valid(&e->tool_choice, r)) lose_s(e, "/tool_choice", 12, "tools", "HF has no tool_choice");
    if (col_valid(&e->nulls, r)) {
        int64_t a, z;
        col_list(&e->nulls, r, &a, &z);
        for (int64_t q = a; q < z; q++) {
            size_t n;
            const char *s = col_str(&e->null_names, q, &n);
            if (!s) return FALLBACK;
            e->tmp2.len = 0; /* "/" + name, not a pointer token (to_hf.top_level) */
            put_byte(st, &e->tmp2, '/');
            put(st, &e->tmp2, s, n);
            e->tmp.len = 0;
            puts_(st, &e->tmp, "explicit null '");
            put(st, &e->tmp, s, n);
            puts_(st, &e->tmp, "' dropped");
            lose(e, e->tmp2.p, e->tmp2.len, "request_field", e->tmp.p, e->tmp.len);
        }
    }
    yyjson_doc *doc;
    if (col_json_obj(&e->extra, r, &doc)) return FALLBACK;
    if (!doc) return 0;
    size_t idx, max;
    yyjson_val *k, *v;
    yyjson_obj_foreach(yyjson_doc_get_root(doc), idx, max, k, v) {
        lose_key(e, NULL, NULL, k, "request_field", "", "' is not carried to HF");
    }
    yyjson_doc_free(doc);
    return 0;
}

/* One row; 0 (written) or FALLBACK (nothing kept: the caller rolls back). */
static int encode_row(Enc *e) {
    St *st = &e->st;
    if (row_taken(e)) return FALLBACK;
    if (e->string_input) lose_s(e, "/input", 6, "content_form", "the string input shorthand becomes a user message");
    puts_(st, &e->out, "{\"messages\":[");
    int system;
    if (instructions(e, &system) || leading_system_note(e, system) || way_back(e) || items(e, !system))
        return FALLBACK;
    put_byte(st, &e->out, ']');
    if (tools(e) || top_level(e)) return FALLBACK;
    put_byte(st, &e->out, '}');
    return st->oom ? FALLBACK : 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Entry point                                                                                  */

extern const char chatlake_encode_hf_doc[];
const char chatlake_encode_hf_doc[] =
    "encode_hf(batch) -> (text, offsets, native, loss_row, path, path_offsets, kind, kind_offsets, "
    "detail, detail_offsets)\n\n"
    "Encode a canonical RecordBatch's Responses and Chat request rows to Hugging Face conversational "
    "rows (see pipeline/encoders/encode_rows.py). Each item is (address, size, owner) for "
    "pa.foreign_buffer. Offsets are int64 (n + 1); native has one byte per row (0: not encoded here, "
    "its text is empty and it has no losses).";

PyObject *chatlake_encode_hf(PyObject *self, PyObject *args);

PyObject *chatlake_encode_hf(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *batch;
    if (!PyArg_ParseTuple(args, "O", &batch)) return NULL;
    return run_encoder(batch, encode_row, "encode_hf");
}
