/*
 * pipeline._native.encode_chat: the compiled Responses request body -> Chat Completions encoder.
 *
 * The specification is the per-record encoder (pipeline/encoders/to_chat.py with _context.py and
 * call_ids.py): for each canonical row this writes exactly the bytes of
 * orjson.dumps(convert_table(row, "chat")[0].record) and the row's losses in the order that encoder
 * reports them. A row it cannot prove it encodes byte-identically is flagged and left to the
 * per-record encoder (pipeline/encoders/encode_rows.py), e.g. rows that are not Responses request
 * bodies, instructions given as parts or items, calls or outputs without a call id (ids generated
 * and paired by position), Anthropic-style images, file and audio parts, JSON values whose orjson
 * text is not provably their stored text (floats outside a plain range, duplicate keys, huge integers).
 *
 * Input: the table's one RecordBatch through the Arrow C data interface (RecordBatch._export_to_c
 * into structs allocated here). Chosen over passing buffers one by one because the struct and list
 * nesting (items, their content blocks, null_fields at three levels) comes with its offsets and
 * validity in one call, and the release callback keeps the batch's memory alive while the GIL is
 * released. Output: a few bytes objects (one text buffer + int64 offsets per string column) that
 * Python wraps with pa.LargeStringArray.from_buffers, no per-row Python.
 */
#include "encode_common.h" /* Python.h, yyjson, the Arrow C data interface, buffers, JSON writing */
#include "anthropic_round_trip.h"

/* ------------------------------------------------------------------------------------------ */
/* The encoder                                                                                  */

enum { C_ABSENT, C_NULL, C_VALUE };


/* Item i's pointer in its source record (Ctx.item_ptr for Responses; an Anthropic row's) into b. */
static int item_ptr(Enc *e, Buf *b, int64_t i) {
    if (e->anthropic) return at_item_ptr(e, b, i);
    size_t n;
    const char *sec = col_str(&e->section, i, &n);
    if (!sec) return FALLBACK;
    b->len = 0;
    if (e->string_input && n == 5 && memcmp(sec, "input", 5) == 0) {
        puts_(&e->st, b, "/input");
        return 0;
    }
    if (!col_valid(&e->group, i)) return FALLBACK;
    put_ptr(&e->st, b, sec, n);
    put(&e->st, b, "/", 1);
    put_i64(&e->st, b, col_i32(&e->group, i));
    return 0;
}

static const Field MSG_UNUSED[] = {
    FIELD("id", "item_id", id), FIELD("status", "status", status), FIELD("phase", "phase", phase),
    FIELD("call_id", "unknown_field", call_id), FIELD("name", "name", name),
    FIELD("namespace", "namespace", namespace_), FIELD("arguments", "argument_string", arguments),
    FIELD("input", "custom_tool", input), FIELD("encrypted_content", "encrypted_reasoning", encrypted_content),
    {NULL, NULL, 0, NULL},
};
static const Field CALL_UNUSED[] = {
    FIELD("id", "item_id", id), FIELD("status", "status", status), FIELD("namespace", "namespace", namespace_),
    FIELD("phase", "phase", phase), FIELD("encrypted_content", "encrypted_reasoning", encrypted_content),
    {NULL, NULL, 0, NULL},
};
/* ... of an Anthropic source's message (to_chat._message_losses; Ctx.wire_key: tool_use_id) */
static const Field A_MSG_UNUSED[] = {
    FIELD("id", "item_id", id), FIELD("status", "status", status), FIELD("phase", "phase", phase),
    {"call_id", "unknown_field", offsetof(Enc, call_id), "tool_use_id"}, FIELD("namespace", "namespace", namespace_),
    FIELD("encrypted_content", "encrypted_reasoning", encrypted_content),
    FIELD("signature", "thinking_signature", signature), {NULL, NULL, 0, NULL},
};
/* to_chat._OUTPUT_LOST: an output item's keys a tool message has no slot for (a call's keys too) */
static const Field OUT_UNUSED[] = {
    FIELD("name", "name", name), FIELD("id", "item_id", id), FIELD("status", "status", status),
    FIELD("namespace", "namespace", namespace_), FIELD("phase", "phase", phase),
    FIELD("arguments", "argument_string", arguments), FIELD("input", "custom_tool", input),
    FIELD("encrypted_content", "encrypted_reasoning", encrypted_content), {NULL, NULL, 0, NULL},
};
/* ... an Anthropic source's (Ctx.wire_key: arguments is input) */
static const Field A_OUT_UNUSED[] = {
    FIELD("name", "name", name), FIELD("id", "item_id", id), FIELD("status", "status", status),
    FIELD("namespace", "namespace", namespace_), FIELD("phase", "phase", phase),
    {"arguments", "argument_string", offsetof(Enc, arguments), "input"}, FIELD("input", "custom_tool", input),
    FIELD("encrypted_content", "encrypted_reasoning", encrypted_content), {NULL, NULL, 0, NULL},
};


/* Ctx.content_ptr(i, k) into b: the item's pointer + /content (/output for outputs) [+ /k]. */
static int content_ptr(Enc *e, Buf *b, int64_t i, int64_t k, int output) {
    if (e->anthropic) return at_content_ptr(e, b, i, k);
    if (item_ptr(e, b, i)) return FALLBACK;
    puts_(&e->st, b, output ? "/output" : "/content");
    if (k >= 0) {
        put(&e->st, b, "/", 1);
        put_i64(&e->st, b, k);
    }
    return 0;
}


/* A text part (to_chat._text_part's text branch): its part-type, annotations and text losses, then
 * {"type":"text","text":...}. */
static int text_only_part(Enc *e, int64_t j, Buf *path, int assistant, Buf *out, int first, int *wrote) {
    St *st = &e->st;
    size_t tl, xl;
    const char *t = col_str(&e->btype, j, &tl);
    const char *text = col_str(&e->btext, j, &xl);
    const char *expected = assistant ? "output_text" : "input_text";
    if (!e->anthropic && !str_eq(t, tl, expected)) { /* (a Responses source's part type) */
        e->tmp.len = 0;
        puts_(st, &e->tmp, article_quoted(t, tl));
        if (t) put(st, &e->tmp, t, tl);
        else puts_(st, &e->tmp, "None");
        puts_(st, &e->tmp, "' part comes back as '");
        puts_(st, &e->tmp, expected);
        puts_(st, &e->tmp, "'");
        lose(e, path->p, path->len, "content_form", e->tmp.p, e->tmp.len);
    }
    size_t al;
    const char *ann = col_str(&e->bann, j, &al);
    int empty_ann = assistant && ann && al == 2 && memcmp(ann, "[]", 2) == 0;
    static const char *const carried[] = {"type", "text", NULL};
    static const char *const carried_ann[] = {"type", "text", "annotations", NULL};
    /* ... and with the cache hint a Chat text part has the slot for (_context.cache_breakpoint) */
    static const char *const carried_c[] = {"type", "text", "prompt_cache_breakpoint", NULL};
    static const char *const carried_ann_c[] = {"type", "text", "annotations", "prompt_cache_breakpoint", NULL};
    Buf cache = {0}; /* (not an Anthropic source's) */
    int got = e->anthropic ? 0 : put_cache_breakpoint(e, j, &cache);
    if (got < 0 || lose_block_keys(e, j, path, got ? (empty_ann ? carried_ann_c : carried_c)
                                                   : (empty_ann ? carried_ann : carried))) {
        free(cache.p);
        return FALLBACK;
    }
    if (got && assistant) { /* carried: the Responses output_text it comes back as has no slot */
        size_t pl = path->len;
        puts_(st, path, "/prompt_cache_breakpoint");
        lose_s(e, path->p, path->len, "cache_control",
               "carried to Chat's text part; the Responses output_text it comes back as has no slot");
        path->len = pl;
    }
    if (assistant && !ann && str_eq(t, tl, "output_text")) {
        size_t pl = path->len;
        puts_(st, path, "/annotations");
        lose_s(e, path->p, path->len, "annotations", "no annotations: [] comes back");
        path->len = pl;
    }
    if (!text) {
        size_t pl = path->len;
        puts_(st, path, "/text");
        lose_s(e, path->p, path->len, "content_form", "a part without text gets ''");
        path->len = pl;
    }
    if (!first) put(st, out, ",", 1);
    puts_(st, out, "{\"type\":\"text\",\"text\":");
    put_json_str(st, out, text ? text : "", xl);
    put(st, out, cache.p, cache.len);
    free(cache.p);
    put(st, out, "}", 1);
    *wrote = 1;
    return 0;
}

/* An input_image part with a string image_url as a Chat image_url part (its detail kept when Chat
 * takes it, else reported); *wrote 0 when it has none (then lost as a part). */
static int input_image_part(Enc *e, int64_t j, Buf *path, Buf *out, int first, int *wrote) {
    St *st = &e->st;
    size_t xn;
    const char *x = col_str(&e->bextra, j, &xn);
    yyjson_doc *doc = x ? parse(x, xn) : NULL;
    if (x && !doc) return FALLBACK;
    yyjson_val *root = doc ? yyjson_doc_get_root(doc) : NULL;
    yyjson_val *url = root && yyjson_is_obj(root) ? yyjson_obj_get(root, "image_url") : NULL;
    if (url && yyjson_is_str(url)) {
        yyjson_val *detail = yyjson_obj_get(root, "detail");
        Buf part = {0};
        puts_(st, &part, "{\"type\":\"image_url\",\"image_url\":{\"url\":");
        put_value(st, &part, url);
        size_t pl = path->len;
        puts_(st, path, "/detail");
        if (is_str(detail, "auto") || is_str(detail, "low") || is_str(detail, "high") ||
            is_str(detail, "original")) {
            puts_(st, &part, ",\"detail\":");
            put_value(st, &part, detail);
        } else if (!detail) {
            lose_s(e, path->p, path->len, "image", "no detail: Responses requires one, 'auto' comes back");
        } else {
            e->tmp.len = 0;
            puts_(st, &e->tmp, "detail ");
            if (yyjson_is_null(detail)) {
                puts_(st, &e->tmp, "None");
            } else if (yyjson_is_str(detail) && plain_repr(yyjson_get_str(detail), yyjson_get_len(detail))) {
                put(st, &e->tmp, "'", 1);
                put(st, &e->tmp, yyjson_get_str(detail), yyjson_get_len(detail));
                put(st, &e->tmp, "'", 1);
            } else {
                free(part.p);
                yyjson_doc_free(doc);
                return FALLBACK;
            }
            puts_(st, &e->tmp, " is not one of Chat's ('auto', 'low', 'high', 'original')");
            lose(e, path->p, path->len, "image", e->tmp.p, e->tmp.len);
        }
        path->len = pl;
        put(st, &part, "}", 1);
        yyjson_doc_free(doc);
        static const char *const carried[] = {"type", "image_url", "detail", NULL};
        static const char *const carried_c[] = {"type", "image_url", "detail", "prompt_cache_breakpoint", NULL};
        int got = e->anthropic ? 0 : put_cache_breakpoint(e, j, &part); /* a Chat image_url part has its slot */
        if (got < 0 || lose_block_keys(e, j, path, got ? carried_c : carried)) {
            free(part.p);
            return FALLBACK;
        }
        put(st, &part, "}", 1);
        if (!first) put(st, out, ",", 1);
        put(st, out, part.p, part.len);
        free(part.p);
        *wrote = 1;
        return 0;
    }
    if (doc) yyjson_doc_free(doc);
    return 0;
}

/* to_chat._text_part: block j (the k-th of item i) as a Chat part appended to `out` (with a leading
 * comma unless first), or dropped with a loss. *wrote says which. */
static int text_part(Enc *e, int64_t i, int64_t j, int64_t k, int allow_media, int output, int assistant,
                     Buf *out, int first, int *wrote) {
    St *st = &e->st;
    Buf path = e->ptr; /* handed back to e->ptr at the end (it may have grown) */
    *wrote = 0;
    int rc = 0;
    if (content_ptr(e, &path, i, k, output)) {
        e->ptr = path;
        return FALLBACK;
    }
    size_t tl;
    const char *t = col_str(&e->btype, j, &tl);
    size_t xl;
    const char *text = col_str(&e->btext, j, &xl);
    int text_type = !t || str_eq(t, tl, "input_text") || str_eq(t, tl, "output_text") || str_eq(t, tl, "text");
    if (text_type) {
        rc = text_only_part(e, j, &path, assistant, out, first, wrote);
        goto done;
    }
    if (str_eq(t, tl, "refusal")) {
        static const char *const carried[] = {"type", "refusal", NULL};
        if (lose_block_keys(e, j, &path, carried)) {
            rc = FALLBACK;
            goto done;
        }
        if (!first) put(st, out, ",", 1);
        puts_(st, out, "{\"type\":\"refusal\",\"refusal\":");
        put_json_str(st, out, text ? text : "", xl);
        put(st, out, "}", 1);
        *wrote = 1;
        goto done;
    }
    if (allow_media && str_eq(t, tl, "image")) {
        if (!e->anthropic) { /* another source's Anthropic-style block: left to to_chat */
            rc = FALLBACK;
            goto done;
        }
        int got = at_image_url(e, j, &path, &e->kb); /* kb: lose_block_keys uses tmp and tmp2 */
        static const char *const carried[] = {"type", "source", NULL};
        if (got < 0 || (got && lose_block_keys(e, j, &path, carried))) {
            rc = FALLBACK;
            goto done;
        }
        if (got) {
            if (!first) put(st, out, ",", 1);
            puts_(st, out, "{\"type\":\"image_url\",\"image_url\":{\"url\":");
            put_json_str(st, out, e->kb.p, e->kb.len);
            puts_(st, out, "}}");
            *wrote = 1;
            goto done;
        }
    }
    if (allow_media && str_eq(t, tl, "input_image")) {
        rc = input_image_part(e, j, &path, out, first, wrote);
        if (rc || *wrote) goto done;
    }
    size_t dxl;
    const char *dx = str_eq(t, tl, "document") ? col_str(&e->bextra, j, &dxl) : NULL;
    if (allow_media && (str_eq(t, tl, "input_file") || str_eq(t, tl, "input_audio") ||
                        (dx && document_may_convert(dx, dxl)))) {
        rc = FALLBACK; /* file and audio parts (Ctx.openai_file): left to the per-record encoder */
        goto done;
    }
    if (str_eq(t, tl, "tool_reference")) { /* Ctx.tool_reference_text: a text placeholder */
        int got = at_tool_reference(e, j, &path, &e->kb);
        if (got < 0) {
            rc = FALLBACK;
            goto done;
        }
        if (got) {
            if (!first) put(st, out, ",", 1);
            puts_(st, out, "{\"type\":\"text\",\"text\":");
            put_json_str(st, out, e->kb.p, e->kb.len);
            put(st, out, "}", 1);
            *wrote = 1;
            goto done;
        }
    }
    /* ctx.lose_part(path, t, "Chat here") */
    e->tmp.len = 0;
    puts_(st, &e->tmp, article_quoted(t, tl));
    put(st, &e->tmp, t, tl);
    puts_(st, &e->tmp, "' part has no equivalent in Chat here");
    lose(e, path.p, path.len, part_loss_kind(t, tl), e->tmp.p, e->tmp.len);
done:
    e->ptr = path;
    return rc;
}

/* Item i's content as a Chat value written to e->scratch: *state C_ABSENT / C_NULL / C_VALUE, and
 * whether it is truthy (Python's `and content`) and a non-empty string. */
static int item_content(Enc *e, int64_t i, int allow_media, int output, int *state, size_t *off, size_t *len,
                        int *truthy, int *nonempty_str) {
    St *st = &e->st;
    size_t fl;
    const char *form = col_str(&e->content_form, i, &fl);
    int64_t a, z;
    col_list(&e->content, i, &a, &z);
    *off = e->scratch.len;
    *len = 0;
    *truthy = 0;
    *nonempty_str = 0;
    if (str_eq(form, fl, "string")) {
        if (!col_valid(&e->content, i) || z - a != 1 || !col_valid(&e->blk_valid, a)) return FALLBACK;
        size_t tl;
        const char *text = col_str(&e->btext, a, &tl);
        if (!text) return FALLBACK;
        put_json_str(st, &e->scratch, text, tl);
        *state = C_VALUE;
        *truthy = *nonempty_str = tl > 0;
    } else if (str_eq(form, fl, "parts")) {
        size_t rl;
        const char *role = col_str(&e->role, i, &rl);
        size_t yl;
        const char *ty = col_str(&e->type, i, &yl);
        int assistant = str_eq(role, rl, "assistant") && str_eq(ty, yl, "message");
        put(st, &e->scratch, "[", 1);
        int first = 1;
        for (int64_t j = a; j < z; j++) {
            if (!col_valid(&e->blk_valid, j)) return FALLBACK;
            int wrote;
            if (text_part(e, i, j, j - a, allow_media, output, assistant, &e->scratch, first, &wrote)) return FALLBACK;
            if (wrote) first = 0;
        }
        put(st, &e->scratch, "]", 1);
        *state = C_VALUE;
        *truthy = !first;
    } else if (str_eq(form, fl, "null")) {
        puts_(st, &e->scratch, "null");
        *state = C_NULL;
    } else {
        *state = C_ABSENT;
    }
    *len = e->scratch.len - *off;
    return 0;
}

static Msg *new_msg(Enc *e, int64_t item, const char *role, size_t role_len) {
    if (e->nmsgs == e->capmsgs) {
        int64_t cap = e->capmsgs ? e->capmsgs * 2 : 16;
        Msg *p = (Msg *)realloc(e->msgs, (size_t)cap * sizeof(Msg));
        if (!p) {
            e->st.oom = 1;
            return NULL;
        }
        e->msgs = p;
        e->capmsgs = cap;
    }
    Msg *m = &e->msgs[e->nmsgs++];
    memset(m, 0, sizeof *m);
    m->item = item;
    m->role = role;
    m->role_len = role_len;
    m->calls_first = e->ncalls;
    return m;
}

static int add_call(Enc *e, size_t off, size_t len) {
    if (e->ncalls == e->capcalls) {
        int64_t cap = e->capcalls ? e->capcalls * 2 : 16;
        Range *p = (Range *)realloc(e->calls, (size_t)cap * sizeof(Range));
        if (!p) {
            e->st.oom = 1;
            return FALLBACK;
        }
        e->calls = p;
        e->capcalls = cap;
    }
    e->calls[e->ncalls].off = off;
    e->calls[e->ncalls].len = len;
    e->ncalls++;
    return 0;
}


/* A Responses function or custom tool as a Chat tool (the type's sub-object holding its keys; a
 * custom tool's grammar format nested as Chat writes it). */
static void put_chat_tool(Enc *e, yyjson_val *tool, int function, Buf *out) {
    St *st = &e->st;
    static const char *const fn_keys[] = {"name", "description", "parameters", "strict", NULL};
    static const char *const cu_keys[] = {"name", "description", NULL};
    const char *const *keys = function ? fn_keys : cu_keys;
    puts_(st, out, function ? "{\"type\":\"function\",\"function\":{" : "{\"type\":\"custom\",\"custom\":{");
    int first = 1;
    for (const char *const *kk = keys; *kk; kk++) {
        yyjson_val *v = yyjson_obj_get(tool, *kk);
        if (!v) continue;
        if (!first) put(st, out, ",", 1);
        first = 0;
        put_json_str(st, out, *kk, strlen(*kk));
        put(st, out, ":", 1);
        put_value(st, out, v);
    }
    if (!function) {
        yyjson_val *fmt = yyjson_obj_get(tool, "format");
        if (fmt && yyjson_is_obj(fmt) && is_str(yyjson_obj_get(fmt, "type"), "grammar")) {
            if (!first) put(st, out, ",", 1);
            first = 0;
            puts_(st, out, "\"format\":{\"type\":\"grammar\",\"grammar\":{");
            size_t k3, m3;
            yyjson_val *fk, *fv;
            int ff = 1;
            yyjson_obj_foreach(fmt, k3, m3, fk, fv) {
                if (key_is(fk, "type")) continue;
                if (!ff) put(st, out, ",", 1);
                ff = 0;
                put_value(st, out, fk);
                put(st, out, ":", 1);
                put_value(st, out, fv);
            }
            puts_(st, out, "}}");
        } else if (fmt && !yyjson_is_null(fmt)) {
            if (!first) put(st, out, ",", 1);
            first = 0;
            puts_(st, out, "\"format\":");
            put_value(st, out, fmt);
        }
    }
    puts_(st, out, "}}");
}

/* to_chat._tools' rules for one tool of a Responses or (e->anthropic) Anthropic source (a ToolFn). */
static int chat_tool(Enc *e, yyjson_val *tool, size_t idx, Buf *path, Buf *out, int *wrote) {
    (void)idx;
    St *st = &e->st;
    if (!yyjson_is_obj(tool)) {
        lose_s(e, path->p, path->len, "tools", "not a tool object");
        return 0;
    }
    yyjson_val *t = yyjson_obj_get(tool, "type");
    int function = is_str(t, "function"), custom = is_str(t, "custom");
    yyjson_val *schema = e->anthropic ? yyjson_obj_get(tool, "input_schema") : NULL;
    if (schema && (!t || yyjson_is_null(t) || custom)) { /* an Anthropic tool */
        static const char *const flags[] = {"strict", NULL}; /* Chat's function has strict */
        lose_anthropic_tool_keys(e, tool, path, "' has no slot in Chat", flags);
        *wrote = 1;
        puts_(st, out, "{\"type\":\"function\",\"function\":{\"name\":");
        yyjson_val *name = yyjson_obj_get(tool, "name");
        if (name) put_value(st, out, name);
        else puts_(st, out, "\"\"");
        yyjson_val *desc = yyjson_obj_get(tool, "description");
        if (desc) {
            puts_(st, out, ",\"description\":");
            put_value(st, out, desc);
        }
        puts_(st, out, ",\"parameters\":");
        put_value(st, out, schema);
        yyjson_val *strict = yyjson_obj_get(tool, "strict");
        if (strict && yyjson_is_bool(strict))
            puts_(st, out, yyjson_get_bool(strict) ? ",\"strict\":true" : ",\"strict\":false");
        puts_(st, out, "}}");
        return 0;
    }
    if (e->anthropic) function = custom = 0; /* (to_chat._tools' Responses branches) */
    if (!function && !custom) {
        e->tmp.len = 0;
        if (!t || yyjson_is_null(t)) puts_(st, &e->tmp, "a 'None");
        else if (yyjson_is_str(t)) {
            puts_(st, &e->tmp, article_quoted(yyjson_get_str(t), yyjson_get_len(t)));
            put(st, &e->tmp, yyjson_get_str(t), yyjson_get_len(t));
        }
        else return FALLBACK; /* a non-string tag: its Python str() is not written here */
        puts_(st, &e->tmp, "' tool has no equivalent in Chat");
        lose(e, path->p, path->len, "tools", e->tmp.p, e->tmp.len);
        return 0;
    }
    static const char *const fn_known[] = {"name", "description", "parameters", "strict", "type", NULL};
    static const char *const cu_known[] = {"name", "description", "format", "type", NULL};
    size_t k2, m2;
    yyjson_val *key, *val;
    yyjson_obj_foreach(tool, k2, m2, key, val) {
        if (key_in(key, function ? fn_known : cu_known)) continue;
        lose_key(e, path, NULL, key, "tools", "tool ", "' has no slot in Chat");
    }
    if (function) { /* the way back sets them (required on Responses): to_chat._tools */
        static const char *const required[] = {"parameters", "strict", NULL};
        for (const char *const *rq = required; *rq; rq++) {
            if (yyjson_obj_get(tool, *rq)) continue;
            e->tmp2.len = 0;
            put(st, &e->tmp2, path->p, path->len);
            put(st, &e->tmp2, "/", 1);
            puts_(st, &e->tmp2, *rq);
            e->tmp.len = 0;
            puts_(st, &e->tmp, "absent '");
            puts_(st, &e->tmp, *rq);
            puts_(st, &e->tmp, "' comes back null");
            lose(e, e->tmp2.p, e->tmp2.len, "filled_default", e->tmp.p, e->tmp.len);
        }
    }
    *wrote = 1;
    put_chat_tool(e, tool, function, out);
    return 0;
}

/* to_chat._tools: `,"tools":[...]` into b (or nothing, with the "no tool survives" loss). */
static int tools_json_once(Enc *e, Buf *b) {
    return write_tools(e, b, &e->aux[2], chat_tool, "no tool survives the conversion");
}

/* tools_json_once, or its result for the previous row's tools when they are the same text. */
static int tools_json(Enc *e, Buf *b) {
    St *st = &e->st;
    size_t n;
    const char *text = col_str(&e->tools, e->r, &n);
    if (!text) return 0;
    if (e->anthropic) { /* another source's rules: not cached (nor is the cache kept) */
        e->tc.valid = 0;
        return tools_json_once(e, b);
    }
    if (e->tc.valid && e->tc.len == n && memcmp(e->tc.text, text, n) == 0) {
        if (e->tc.rc) return FALLBACK;
        put(st, b, e->tc.frag.p, e->tc.frag.len);
        const int64_t *lens = (const int64_t *)e->tc.lens.p;
        const char *t = e->tc.texts.p;
        for (int64_t k = 0; k < e->tc.nl; k++) {
            const int64_t *l = lens + 3 * k;
            lose_n(e, t, (size_t)l[0], t + l[0], (size_t)l[1], t + l[0] + l[1], (size_t)l[2]);
            t += l[0] + l[1] + l[2];
        }
        return 0;
    }
    size_t b0 = b->len;
    int64_t n0 = e->nloss;
    int rc = tools_json_once(e, b);
    e->tc.valid = 1;
    e->tc.text = text;
    e->tc.len = n;
    e->tc.rc = rc;
    e->tc.frag.len = e->tc.texts.len = e->tc.lens.len = 0;
    e->tc.nl = 0;
    if (!rc) {
        put(st, &e->tc.frag, b->p + b0, b->len - b0);
        const int64_t *po = (const int64_t *)e->path_off.p, *ko = (const int64_t *)e->kind_off.p,
                      *dof = (const int64_t *)e->detail_off.p;
        for (int64_t k = n0; k < e->nloss; k++) {
            int64_t l[3] = {po[k + 1] - po[k], ko[k + 1] - ko[k], dof[k + 1] - dof[k]};
            put(st, &e->tc.texts, e->path.p + po[k], (size_t)l[0]);
            put(st, &e->tc.texts, e->kind.p + ko[k], (size_t)l[1]);
            put(st, &e->tc.texts, e->detail.p + dof[k], (size_t)l[2]);
            put(st, &e->tc.lens, l, sizeof l);
        }
        e->tc.nl = e->nloss - n0;
    }
    return rc;
}

/* to_chat._tool_choice for an Anthropic source (_choice_keys: type, disable_parallel_tool_use and a
 * tool choice's name). */
static int anthropic_tool_choice(Enc *e, yyjson_val *raw, Buf *b) {
    St *st = &e->st;
    if (yyjson_is_obj(raw)) {
        yyjson_val *t = yyjson_obj_get(raw, "type");
        if (t && (yyjson_is_arr(t) || yyjson_is_obj(t))) return FALLBACK; /* {...}.get(t): TypeError */
        int tool = is_str(t, "tool");
        size_t idx, max;
        yyjson_val *key, *val;
        int other = 0; /* keys_except(raw, {"type", "name"}) */
        yyjson_obj_foreach(raw, idx, max, key, val) {
            if (!key_is(key, "type") && !key_is(key, "name")) other = 1;
            if (key_is(key, "type") || key_is(key, "disable_parallel_tool_use") || (tool && key_is(key, "name")))
                continue;
            lose_key(e, NULL, "/tool_choice", key, "tools", "tool_choice ", "' has no slot in Chat");
        }
        if (other) lose_s(e, "/tool_choice", 12, "tools", "disable_parallel_tool_use has no slot in Chat tool_choice");
        const char *mapped = is_str(t, "auto") ? "auto" : is_str(t, "any") ? "required" : is_str(t, "none") ? "none" : NULL;
        if (mapped) {
            puts_(st, b, ",\"tool_choice\":\"");
            puts_(st, b, mapped);
            put(st, b, "\"", 1);
            return 0;
        }
        if (tool) {
            puts_(st, b, ",\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":");
            put_get(st, b, raw, "name");
            puts_(st, b, "}}");
            return 0;
        }
    }
    lose_s(e, "/tool_choice", 12, "tools", "tool_choice has no equivalent in Chat");
    return 0;
}

/* to_chat._tool_choice: `,"tool_choice":...` into b, or dropped with a loss (write_tool_choice's one). */
static int chat_tool_choice(Enc *e, yyjson_val *raw, Buf *b) {
    St *st = &e->st;
    if (e->anthropic) return anthropic_tool_choice(e, raw, b);
    if (yyjson_is_obj(raw)) {
        /* a Responses choice's keys (Anthropic's disable_parallel_tool_use is no key here) */
        static const char *const known[] = {"type", "name", NULL};
        size_t idx, max;
        yyjson_val *key, *val;
        yyjson_obj_foreach(raw, idx, max, key, val) {
            if (key_in(key, known)) continue;
            lose_key(e, NULL, "/tool_choice", key, "tools", "tool_choice ", "' has no slot in Chat");
        }
    }
    if (is_str(raw, "none") || is_str(raw, "auto") || is_str(raw, "required")) {
        puts_(st, b, ",\"tool_choice\":");
        put_value(st, b, raw);
    } else if (yyjson_is_obj(raw) && (is_str(yyjson_obj_get(raw, "type"), "function") ||
                                      is_str(yyjson_obj_get(raw, "type"), "custom"))) {
        int function = is_str(yyjson_obj_get(raw, "type"), "function");
        puts_(st, b, function ? ",\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":"
                              : ",\"tool_choice\":{\"type\":\"custom\",\"custom\":{\"name\":");
        put_get(st, b, raw, "name");
        puts_(st, b, "}}");
    } else {
        lose_s(e, "/tool_choice", 12, "tools", "tool_choice has no equivalent in Chat");
    }
    return 0;
}

/* to_chat._top's rule for one top-level key (openai_top_extra's carry): carried, max_output_tokens
 * and max_tokens renamed, or reported. */
/* _context.format_to_chat: a Responses text.format as `,"response_format":...` (a json_schema
 * one's keys nested in "json_schema"), or reported. */
/* Writes a Responses text.format as Chat's response_format; 1 when written, 0 when reported whole. */
static int chat_format(Enc *e, yyjson_val *fmt, Buf *b) {
    St *st = &e->st;
    static const char *const keys[] = {JSON_SCHEMA_KEYS, NULL};
    yyjson_val *type, *k, *v;
    int t = format_type(fmt, &type), n = 0;
    if (!t) {
        lose_s(e, "/text/format", 12, "request_field", "this text format has no Chat response_format");
        return 0;
    }
    puts_(st, b, ",\"response_format\":{\"type\":");
    put_value(st, b, type);
    if (t == 2) puts_(st, b, ",\"json_schema\":{");
    size_t idx, max;
    yyjson_obj_foreach(fmt, idx, max, k, v) {
        if (key_is(k, "type")) continue;
        if (t == 2 && key_in(k, keys)) {
            if (n++) put_byte(st, b, ',');
            put_json_str(st, b, yyjson_get_str(k), yyjson_get_len(k));
            put_byte(st, b, ':');
            put_value(st, b, v);
        } else {
            lose_key(e, NULL, "/text/format", k, "request_field", "format ", "' has no slot in Chat");
        }
    }
    if (t == 2) put_byte(st, b, '}');
    put_byte(st, b, '}');
    return 1;
}

static int chat_top_key(Enc *e, yyjson_val *k, yyjson_val *v, Buf *b, int *n_renamed) {
    St *st = &e->st;
    static const char *const same[] = {"temperature", "top_p", "parallel_tool_calls", "metadata", "store",
                                       "user", "n", "seed", OPENAI_SHARED_KEYS, NULL};
    static const char *const renamed[] = {"max_output_tokens", "max_tokens", NULL};
    if (key_in(k, same)) {
        put(st, b, ",", 1);
        put_value(st, b, k);
        put(st, b, ":", 1);
        put_value(st, b, v);
    } else if (key_in(k, renamed)) {
        if ((*n_renamed)++) return FALLBACK; /* two keys onto one: dict order rules we do not model */
        puts_(st, b, ",\"max_completion_tokens\":");
        put_value(st, b, v);
    } else if (e->anthropic && key_is(k, "stop_sequences") && stop_fits(v)) {
        puts_(st, b, ",\"stop\":");
        put_value(st, b, v);
    } else if (!e->anthropic && (key_is(k, "reasoning") || key_is(k, "text")) && yyjson_is_obj(v) &&
               yyjson_obj_size(v)) { /* to_chat._nested: the keys Chat types at its top level */
        int reasoning = key_is(k, "reasoning"), carried = 0;
        size_t i2, m2;
        yyjson_val *sk, *sv;
        yyjson_obj_foreach(v, i2, m2, sk, sv) {
            if (!reasoning && key_is(sk, "format")) {
                carried |= chat_format(e, sv, b);
            } else if (reasoning ? key_is(sk, "effort") : key_is(sk, "verbosity")) {
                puts_(st, b, reasoning ? ",\"reasoning_effort\":" : ",\"verbosity\":");
                put_value(st, b, sv);
                carried = 1;
            } else {
                lose_key(e, NULL, reasoning ? "/reasoning" : "/text", sk, "request_field",
                         reasoning ? "reasoning " : "text ", "' has no slot in Chat");
            }
        }
        if (!carried) /* nothing of it reaches Chat: the object itself does not come back */
            lose_s(e, reasoning ? "/reasoning" : "/text", reasoning ? 10 : 5, "request_field",
                   reasoning ? "'reasoning' has nothing Chat can hold" : "'text' has nothing Chat can hold");
    } else if (!e->anthropic && key_is(k, "service_tier")) { /* a Responses tier Chat takes */
        static const char *const tiers[] = {CHAT_SERVICE_TIERS, NULL};
        if (yyjson_is_str(v) && key_in(v, tiers)) {
            puts_(st, b, ",\"service_tier\":");
            put_value(st, b, v);
        } else {
            lose_s(e, "/service_tier", 13, "request_field", "'service_tier' is not one Chat takes");
        }
    } else {
        lose_key(e, NULL, NULL, k, "request_field", "", "' is not carried to Chat");
    }
    return 0;
}

static void put_msg(Enc *e, Buf *b, const Msg *m) {
    St *st = &e->st;
    puts_(st, b, "{\"role\":");
    put_json_str(st, b, m->role, m->role_len);
    if (m->tcid) {
        puts_(st, b, ",\"tool_call_id\":");
        put_json_str(st, b, m->tcid, m->tcid_len);
    }
    if (m->content != C_ABSENT && !m->content_last) {
        puts_(st, b, ",\"content\":");
        put(st, b, e->scratch.p + m->c_off, m->c_len);
    }
    if (m->ncalls) {
        puts_(st, b, ",\"tool_calls\":[");
        for (int64_t q = 0; q < m->ncalls; q++) {
            if (q) put(st, b, ",", 1);
            const Range *rg = &e->calls[m->calls_first + q];
            put(st, b, e->scratch.p + rg->off, rg->len);
        }
        put(st, b, "]", 1);
    }
    if (m->content != C_ABSENT && m->content_last) {
        puts_(st, b, ",\"content\":");
        put(st, b, e->scratch.p + m->c_off, m->c_len);
    }
    put(st, b, "}", 1);
}

/* Whether this row is one encode_chat takes: a Responses or Anthropic request body (*anthropic set)
 * whose calls and outputs all carry their own call id (else call_ids.py generates and pairs them).
 * Sets the row's item range and input form. 0, or FALLBACK. */
static int row_taken(Enc *e, int *anthropic) {
    int64_t r = e->r;
    size_t n, n2;
    const char *s = col_str(&e->source_format, r, &n);
    const char *k = col_str(&e->record_kind, r, &n2);
    *anthropic = str_eq(s, n, "anthropic");
    if ((!*anthropic && !str_eq(s, n, "responses")) || !str_eq(k, n2, "request")) return FALLBACK;
    if (!col_valid(&e->items, r) || !col_valid(&e->instr_valid, r)) return FALLBACK;
    const char *form = col_str(&e->items_form, r, &n);
    if (!str_eq(form, n, "string") && !str_eq(form, n, "parts")) return FALLBACK;
    e->string_input = str_eq(form, n, "string");
    if (*anthropic && e->string_input) return FALLBACK;
    col_list(&e->items, r, &e->start, &e->end);
    for (int64_t i = e->start; i < e->end; i++) {
        if (!col_valid(&e->item_valid, i)) return FALLBACK;
        const char *t = col_str(&e->type, i, &n);
        if (!t) return FALLBACK;
        if ((is_call(t, n) || is_output(t, n)) && !col_valid(&e->call_id, i)) return FALLBACK;
        if (*anthropic && (str_eq(t, n, "custom_tool_call") || str_eq(t, n, "custom_tool_call_output")))
            return FALLBACK; /* (none comes from the Anthropic decoder) */
        size_t nl;
        const char *nt = col_str(&e->native_type, i, &nl);
        if (*anthropic && str_eq(t, n, "message") && str_eq(nt, nl, "redacted_thinking"))
            return FALLBACK; /* (wire_key: its encrypted_content is "data") */
    }
    return 0;
}

/* A leading system message of the text c_off .. scratch's end (a JSON value in scratch). */
static int system_msg(Enc *e, size_t c_off) {
    Msg *m = new_msg(e, -1, "system", 6);
    if (!m) return FALLBACK;
    m->content = C_VALUE;
    m->c_off = c_off;
    m->c_len = e->scratch.len - c_off;
    return 0;
}

/* An Anthropic source's system blocks [a, z): one leading system message of text parts. */
static int system_blocks(Enc *e, int64_t a, int64_t z) {
    St *st = &e->st;
    size_t off = e->scratch.len;
    put(st, &e->scratch, "[", 1);
    Buf *p = &e->ptr2;
    for (int64_t j = a; j < z; j++) {
        if (!col_valid(&e->instr_blk_valid, j)) return FALLBACK;
        p->len = 0;
        puts_(st, p, "/system/");
        put_i64(st, p, j - a);
        size_t pl = p->len;
        if (col_valid(&e->instr_cache, j)) {
            puts_(st, p, "/cache_control");
            lose_s(e, p->p, p->len, "cache_control", "Chat has no cache_control");
            p->len = pl;
        }
        if (col_valid(&e->instr_cit, j)) {
            puts_(st, p, "/citations");
            lose_s(e, p->p, p->len, "citations", "Chat has no citations");
            p->len = pl;
        }
        if (col_valid(&e->instr_extra, j))
            lose_s(e, p->p, p->len, "unknown_field", "system block keys have no slot in Chat");
        size_t tl;
        const char *text = col_str(&e->instr_text, j, &tl);
        if (j > a) put(st, &e->scratch, ",", 1);
        puts_(st, &e->scratch, "{\"type\":\"text\",\"text\":");
        put_json_str(st, &e->scratch, text ? text : "", text ? tl : 0);
        put(st, &e->scratch, "}", 1);
    }
    put(st, &e->scratch, "]", 1);
    lose_s(e, "/system", 7, "instruction_position", "system blocks became a leading system message");
    return z > a ? system_msg(e, off) : 0;
}

/* to_chat._instructions: the row's instructions (an Anthropic source's system) as a leading system
 * message, or their loss. */
static int instructions(Enc *e) {
    int64_t r = e->r;
    size_t n;
    const char *instr = col_str(&e->instr_form, r, &n);
    const char *ikey = e->anthropic ? "/system" : "/instructions"; /* to_chat._instructions' key */
    size_t ikl = strlen(ikey);
    int64_t a, z;
    if (str_eq(instr, n, "null")) {
        lose_s(e, ikey, ikl, "instruction_position", "explicit null instructions dropped");
    } else if (str_eq(instr, n, "string")) {
        if (!col_valid(&e->instr_content, r)) return FALLBACK;
        col_list(&e->instr_content, r, &a, &z);
        if (z - a != 1 || !col_valid(&e->instr_blk_valid, a)) return FALLBACK;
        size_t tl;
        const char *text = col_str(&e->instr_text, a, &tl);
        if (!text) return FALLBACK;
        if (!tl) {
            lose_s(e, ikey, ikl, "empty_text", "empty instructions produce no system message");
        } else {
            lose_s(e, ikey, ikl, "instruction_position", "instructions became a leading system message");
            size_t off = e->scratch.len;
            put_json_str(&e->st, &e->scratch, text, tl);
            return system_msg(e, off);
        }
    } else if (e->anthropic && str_eq(instr, n, "parts")) { /* system blocks: a leading system message */
        col_list(&e->instr_content, r, &a, &z);
        return system_blocks(e, a, z);
    } else if (instr && !str_eq(instr, n, "absent")) {
        return FALLBACK; /* parts (system blocks) and items (an error in to_chat) */
    }
    return 0;
}

/* The assistant message tool calls attach to (to_chat.encode's one piece of state): its index in
 * e->msgs and its first item, or -1. */
typedef struct {
    int64_t msg, first;
} Cur;

/* to_chat._message_losses for message i (base: its pointer). */
static int message_losses(Enc *e, int64_t i, int nonempty) {
    St *st = &e->st;
    Buf *base = &e->base;
    lose_fields(e, i, base, e->anthropic ? A_MSG_UNUSED : MSG_UNUSED);
    size_t cfl, rl;
    const char *cform = col_str(&e->content_form, i, &cfl);
    const char *role_raw = col_str(&e->role, i, &rl);
    int assistant = !e->anthropic && str_eq(role_raw, rl, "assistant"); /* (a Responses source's rules) */
    int parts = str_eq(cform, cfl, "parts");
    size_t bl = base->len;
    if (!e->anthropic && (col_valid(&e->native_type, i) || has_null(&e->inulls, &e->inull_names, i, "native_type")) &&
        (!assistant || !parts)) {
        puts_(st, base, "/type");
        lose_s(e, base->p, base->len, "content_form", "Chat messages have no type tag");
        base->len = bl;
    }
    if (assistant && str_eq(cform, cfl, "string") && !nonempty)
        lose_s(e, base->p, base->len, "content_form", "an empty assistant text has no item on the way back");
    if (assistant && str_eq(cform, cfl, "absent"))
        lose_s(e, base->p, base->len, "content_form", "an assistant message without content has no item on the way back");
    if (assistant && parts) {
        if (!col_valid(&e->id, i) && !has_null(&e->inulls, &e->inull_names, i, "id")) {
            puts_(st, base, "/id");
            lose_s(e, base->p, base->len, "generated_id", "no id: one is generated on the way back");
            base->len = bl;
        }
        if (!col_valid(&e->status, i) && !has_null(&e->inulls, &e->inull_names, i, "status")) {
            puts_(st, base, "/status");
            lose_s(e, base->p, base->len, "status", "no status: 'completed' comes back");
            base->len = bl;
        }
        if (!col_valid(&e->native_type, i)) {
            puts_(st, base, "/type");
            lose_s(e, base->p, base->len, "content_form", "comes back as a typed output message");
            base->len = bl;
        }
    }
    return lose_extra(e, i, base);
}

/* Message item i: a new message, or its text merged into the assistant message cur (before the
 * calls it followed). */
static int message_item(Enc *e, int64_t i, Cur *cur) {
    St *st = &e->st;
    Buf *base = &e->base;
    size_t rl;
    const char *role_raw = col_str(&e->role, i, &rl);
    const char *role = role_raw && rl ? role_raw : "user";
    size_t role_len = role_raw && rl ? rl : 4;
    int state, truthy, nonempty;
    size_t off, len;
    if (item_content(e, i, str_eq(role, role_len, "user"), 0, &state, &off, &len, &truthy, &nonempty)) return FALLBACK;
    if (message_losses(e, i, nonempty)) return FALLBACK;
    int is_assistant = str_eq(role, role_len, "assistant");
    if (is_assistant && cur->msg >= 0 && e->msgs[cur->msg].content != C_VALUE && state != C_ABSENT && truthy) {
        Msg *m = &e->msgs[cur->msg];
        m->content_last = m->content == C_ABSENT && m->ncalls > 0;
        m->content = C_VALUE;
        m->c_off = off;
        m->c_len = len;
        m->content_str = 0; /* only the first message matters, and it is never merged into */
        lose_s(e, base->p, base->len, "text_order", "the text is placed before the tool calls it followed");
        Buf *fp = &e->ptr2;
        if (item_ptr(e, fp, cur->first)) return FALLBACK;
        lose_s(e, fp->p, fp->len, "text_order", "the calls now come after the text");
        return 0;
    }
    Msg *m = new_msg(e, i, role, role_len);
    if (!m) return FALLBACK;
    if (state != C_ABSENT) {
        size_t cfl;
        const char *cform = col_str(&e->content_form, i, &cfl);
        m->content = state;
        m->c_off = off;
        m->c_len = len;
        m->content_str = nonempty && str_eq(cform, cfl, "string");
    } else if (!is_assistant) {
        m->content = C_VALUE;
        m->c_off = e->scratch.len;
        puts_(st, &e->scratch, "\"\"");
        m->c_len = 2;
        Buf *cp = &e->ptr2;
        if (content_ptr(e, cp, i, -1, 0)) return FALLBACK;
        lose_s(e, cp->p, cp->len, "content_form", "absent content written as ''");
    }
    cur->msg = is_assistant ? e->nmsgs - 1 : -1;
    cur->first = is_assistant ? i : -1;
    return 0;
}

/* Call item i: a tool_calls entry of the assistant message cur (a new one with null content when
 * there is none). */
static int call_item(Enc *e, int64_t i, Cur *cur) {
    St *st = &e->st;
    Buf *base = &e->base;
    if (cur->msg < 0) {
        Msg *m = new_msg(e, i, "assistant", 9);
        if (!m) return FALLBACK;
        m->content = C_NULL;
        m->c_off = e->scratch.len;
        puts_(st, &e->scratch, "null");
        m->c_len = 4;
        cur->msg = e->nmsgs - 1;
        cur->first = i;
    }
    lose_fields(e, i, base, CALL_UNUSED);
    size_t tl, nl, vl, cl;
    const char *t = col_str(&e->type, i, &tl);
    int custom = str_eq(t, tl, "custom_tool_call");
    const char *name = col_str(&e->name, i, &nl);
    const char *value = col_str(custom ? &e->input : &e->arguments, i, &vl);
    const char *cid = col_str(&e->call_id, i, &cl);
    size_t bl = base->len;
    if (!name) {
        puts_(st, base, "/name");
        lose_s(e, base->p, base->len, "content_form", "a missing or null 'name' becomes ''");
        base->len = bl;
    }
    if (!value) {
        puts_(st, base, custom || e->anthropic ? "/input" : "/arguments"); /* Ctx.wire_key */
        lose_s(e, base->p, base->len, "content_form",
               custom ? "a missing or null 'input' becomes ''" : "a missing or null 'arguments' becomes ''");
        base->len = bl;
    }
    if (lose_extra(e, i, base)) return FALLBACK;
    size_t off = e->scratch.len;
    puts_(st, &e->scratch, "{\"id\":");
    put_json_str(st, &e->scratch, cid, cl);
    puts_(st, &e->scratch, custom ? ",\"type\":\"custom\",\"custom\":{\"name\":"
                                  : ",\"type\":\"function\",\"function\":{\"name\":");
    put_json_str(st, &e->scratch, name ? name : "", nl);
    puts_(st, &e->scratch, custom ? ",\"input\":" : ",\"arguments\":");
    put_json_str(st, &e->scratch, value ? value : "", vl);
    puts_(st, &e->scratch, "}}");
    /* calls of one message are contiguous in e->calls: only calls append there, always to cur */
    Msg *m = &e->msgs[cur->msg];
    if (m->ncalls && m->calls_first + m->ncalls != e->ncalls) return FALLBACK;
    if (!m->ncalls) m->calls_first = e->ncalls;
    if (add_call(e, off, e->scratch.len - off)) return FALLBACK;
    m->ncalls++;
    return 0;
}

/* Tool output item i: a tool message (its kind is inferred in Chat: from the row's custom calls). */
static int output_item(Enc *e, int64_t i) {
    St *st = &e->st;
    Buf *base = &e->base;
    size_t tl, cl;
    const char *t = col_str(&e->type, i, &tl);
    const char *cid = col_str(&e->call_id, i, &cl);
    int state, truthy, nonempty;
    size_t off, len;
    if (item_content(e, i, 0, 1, &state, &off, &len, &truthy, &nonempty)) return FALLBACK;
    Msg *m = new_msg(e, i, "tool", 4);
    if (!m) return FALLBACK;
    m->tcid = cid;
    m->tcid_len = cl;
    if (state != C_VALUE) {
        Buf *cp = &e->ptr2;
        if (content_ptr(e, cp, i, -1, 1)) return FALLBACK;
        lose_s(e, cp->p, cp->len, "content_form", "Chat tool messages need content; wrote ''");
        off = e->scratch.len;
        puts_(st, &e->scratch, "\"\"");
        len = 2;
    }
    m->content = C_VALUE;
    m->c_off = off;
    m->c_len = len;
    lose_fields(e, i, base, e->anthropic ? A_OUT_UNUSED : OUT_UNUSED);
    if (lose_extra(e, i, base)) return FALLBACK;
    /* the kind Chat infers: custom when any custom call of the row has this id */
    int custom = 0;
    for (int64_t q = e->start; q < e->end && !custom; q++) {
        size_t ql, il;
        const char *qt = col_str(&e->type, q, &ql);
        if (!str_eq(qt, ql, "custom_tool_call")) continue;
        const char *qid = col_str(&e->call_id, q, &il);
        custom = il == cl && memcmp(qid, cid, cl) == 0;
    }
    if (!e->anthropic && custom != str_eq(t, tl, "custom_tool_call_output"))
        lose_s(e, base->p, base->len, "content_form", "Chat tool messages have no kind; it is inferred from the call");
    return 0;
}


/* The row's items, in order, as messages (e->msgs) and their tool calls. */
static int items(Enc *e) {
    Cur cur = {-1, -1};
    for (int64_t i = e->start; i < e->end; i++) {
        size_t tl;
        const char *t = col_str(&e->type, i, &tl);
        if (item_ptr(e, &e->base, i)) return FALLBACK;
        if (e->anthropic && at_lose_wrapper(e, i)) return FALLBACK;
        if (str_eq(t, tl, "message")) {
            if (message_item(e, i, &cur)) return FALLBACK;
        } else if (is_call(t, tl)) {
            if (call_item(e, i, &cur)) return FALLBACK;
        } else if (is_output(t, tl)) {
            if (output_item(e, i)) return FALLBACK;
            cur.msg = cur.first = -1;
        } else if (dropped_item(e, i, t, tl, "Chat")) {
            cur.msg = cur.first = -1;
        }
    }
    return 0;
}

/* One row; 0 (written) or FALLBACK (nothing kept: the caller rolls back). */
static int encode_row(Enc *e) {
    St *st = &e->st;
    int anthropic; /* Anthropic request bodies: to_chat.py's Anthropic branches, then the report */
    if (row_taken(e, &anthropic)) return FALLBACK;
    e->nmsgs = e->ncalls = 0;
    e->scratch.len = 0;
    e->base.len = 0;
    e->anthropic = anthropic;
    e->loss0 = e->nloss;
    int rc = FALLBACK;
    if (e->string_input) lose_s(e, "/input", 6, "content_form", "the string input shorthand becomes a user message");
    if (instructions(e) || items(e)) goto done;
    /* _leading_system_will_become_instructions (no instructions message reaches here first) */
    if (!anthropic && e->nmsgs && e->msgs[0].item >= 0 && str_eq(e->msgs[0].role, e->msgs[0].role_len, "system") &&
        e->msgs[0].content == C_VALUE && e->msgs[0].content_str) {
        static const char d[] = "a leading system message and top-level instructions look the same in Chat";
        if (item_ptr(e, &e->base, e->msgs[0].item)) goto done;
        lose_s(e, e->base.p, e->base.len, "instruction_position", d);
        lose_s(e, "/instructions", 13, "instruction_position", d);
    }
    puts_(st, &e->out, "{\"messages\":[");
    for (int64_t q = 0; q < e->nmsgs; q++) {
        if (q) put(st, &e->out, ",", 1);
        put_msg(e, &e->out, &e->msgs[q]);
    }
    put(st, &e->out, "]", 1);
    size_t n;
    const char *model = col_str(&e->model, e->r, &n);
    if (model) {
        puts_(st, &e->out, ",\"model\":");
        put_json_str(st, &e->out, model, n);
    }
    if (tools_json(e, &e->out) || write_tool_choice(e, &e->out, chat_tool_choice) ||
        openai_top_extra(e, &e->out, chat_top_key))
        goto done;
    put(st, &e->out, "}", 1);
    rc = anthropic ? anthropic_report(e, 0, NULL) : 0; /* Chat keeps no media in tool results */
done:
    e->anthropic = 0;
    return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* Entry point                                                                                  */

extern const char chatlake_encode_chat_doc[];
const char chatlake_encode_chat_doc[] =
             "encode_chat(batch) -> (text, offsets, native, loss_row, path, path_offsets, kind, kind_offsets, "
             "detail, detail_offsets)\n\n"
             "Encode a canonical RecordBatch's Responses request rows to Chat request JSON (see "
             "pipeline/encoders/encode_rows.py). Each item is (address, size, owner) for pa.foreign_buffer. "
             "Offsets are int64 (n + 1); native has one byte per row (0: not encoded here, its text is "
             "empty and it has no losses).";

PyObject *chatlake_encode_chat(PyObject *self, PyObject *args);

PyObject *chatlake_encode_chat(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *batch;
    if (!PyArg_ParseTuple(args, "O", &batch)) return NULL;
    return run_encoder(batch, encode_row, "encode_chat");
}

