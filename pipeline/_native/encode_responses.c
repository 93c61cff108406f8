/*
 * pipeline._native.encode_responses: the compiled Chat request body -> Responses request encoder.
 *
 * The specification is the per-record encoder (pipeline/encoders/to_responses.py with _context.py
 * and call_ids.py): for each canonical row it takes, this writes exactly the bytes of
 * orjson.dumps(convert_table(row, "responses")[0].record) and the row's losses in the order that
 * encoder reports them. A row it cannot prove it encodes byte-identically is flagged and left to the
 * per-record encoder (pipeline/encoders/encode_rows.py): rows that are not Chat request bodies, items
 * other than messages, calls and outputs, file parts, and JSON values whose orjson text is not provably their stored
 * text (see encode_common.h). The input, output and batch loop are encode_common.h's (run_encoder).
 *
 * Anthropic request bodies (e->anthropic) go through the same functions with to_responses.py's
 * Anthropic branches, then the compiled anthropic_round_trip.report (anthropic_round_trip.c).
 */
#include "encode_common.h" /* Python.h, yyjson, the Arrow C data interface, Enc, losses, JSON writing */
#include "blake2b.h"
#include "anthropic_round_trip.h"

/* Ctx.message_ptr: the Chat message item i came from. */
static int chat_message_ptr(Enc *e, Buf *b, int64_t i) {
    size_t n;
    const char *sec = col_str(&e->section, i, &n);
    if (!sec || !col_valid(&e->group, i)) return FALLBACK;
    b->len = 0;
    put_ptr(&e->st, b, sec, n);
    put(&e->st, b, "/", 1);
    put_i64(&e->st, b, col_i32(&e->group, i));
    return 0;
}

/* Item i's pointer in its Chat source record (Ctx.item_ptr): its message's, and a call's
 * /tool_calls/P after it. */
static int chat_item_ptr(Enc *e, Buf *b, int64_t i) {
    if (chat_message_ptr(e, b, i)) return FALLBACK;
    if (col_valid(&e->part, i)) {
        puts_(&e->st, b, "/tool_calls/");
        put_i64(&e->st, b, col_i32(&e->part, i));
    }
    return 0;
}

/* Ctx.lose_fields of a Chat message: the fields a Responses message has no slot for (tool_call_id is
 * the Chat key of call_id). */
static const Field MSG_UNUSED[] = {
    FIELD("name", "name", name), FIELD("id", "item_id", id), FIELD("status", "status", status),
    FIELD("phase", "phase", phase), {"call_id", "unknown_field", offsetof(Enc, call_id), "tool_call_id"},
    FIELD("namespace", "namespace", namespace_), FIELD("encrypted_content", "encrypted_reasoning", encrypted_content),
    FIELD("signature", "thinking_signature", signature), FIELD("arguments", "argument_string", arguments),
    FIELD("input", "custom_tool", input), {NULL, NULL, 0, NULL},
};
/* ... and of a tool output (to_responses._output) */
static const Field OUT_UNUSED[] = {
    FIELD("id", "item_id", id), FIELD("status", "status", status), FIELD("phase", "phase", phase),
    FIELD("namespace", "namespace", namespace_), FIELD("encrypted_content", "encrypted_reasoning", encrypted_content),
    FIELD("signature", "thinking_signature", signature), {NULL, NULL, 0, NULL},
};

/* ... and of an Anthropic message (Ctx.wire_key: call_id is tool_use_id, arguments input) */
static const Field A_MSG_UNUSED[] = {
    FIELD("name", "name", name), FIELD("id", "item_id", id), FIELD("status", "status", status),
    FIELD("phase", "phase", phase), {"call_id", "unknown_field", offsetof(Enc, call_id), "tool_use_id"},
    FIELD("namespace", "namespace", namespace_), FIELD("encrypted_content", "encrypted_reasoning", encrypted_content),
    FIELD("signature", "thinking_signature", signature), {"arguments", "argument_string", offsetof(Enc, arguments), "input"},
    FIELD("input", "custom_tool", input), {NULL, NULL, 0, NULL},
};

/* Ctx.content_ptr(i): the source's pointer to item i's content. */
static int content_ptr(Enc *e, Buf *b, int64_t i) {
    if (e->anthropic) return at_content_ptr(e, b, i, -1);
    if (chat_item_ptr(e, b, i)) return FALLBACK;
    puts_(&e->st, b, "/content");
    return 0;
}

/* to_responses._part's Anthropic image (anthropic_image_url) and tool_reference (Ctx.tool_reference_text)
 * blocks: written (*wrote 1), or not (*wrote 0: the caller reports the part as dropped). */
static int anthropic_part(Enc *e, int64_t j, const char *t, size_t tl, Buf *path, Buf *out, int first, int *wrote) {
    St *st = &e->st;
    Buf *v = &e->kb; /* (lose_block_keys uses tmp and tmp2; the report's kb is free until the end) */
    int got = str_eq(t, tl, "tool_reference") ? at_tool_reference(e, j, path, v) : at_image_url(e, j, path, v);
    *wrote = got == 1;
    if (got != 1) return got < 0 ? FALLBACK : 0;
    if (!first) put(st, out, ",", 1);
    if (str_eq(t, tl, "tool_reference")) {
        puts_(st, out, "{\"type\":\"input_text\",\"text\":");
    } else {
        lose_s(e, path->p, path->len, "image", "Responses images have a required detail; filled 'auto'");
        puts_(st, out, "{\"type\":\"input_image\",\"detail\":\"auto\",\"image_url\":");
    }
    put_json_str(st, out, v->p, v->len);
    put(st, out, "}", 1);
    return 0;
}

/* A Chat image_url part with an image_url object as a Responses input_image (a missing or null
 * detail filled 'auto', with its loss); *wrote 0 when it has no such object (then lost as a part). */
static int image_url_part(Enc *e, int64_t j, Buf *path, Buf *out, int first, int *wrote) {
    St *st = &e->st;
    size_t bl;
    const char *bx = col_str(&e->bextra, j, &bl);
    yyjson_doc *doc = bx ? parse(bx, bl) : NULL;
    if (bx && !doc) return FALLBACK;
    yyjson_val *root = doc ? yyjson_doc_get_root(doc) : NULL;
    yyjson_val *img = root && yyjson_is_obj(root) ? yyjson_obj_get(root, "image_url") : NULL;
    if (img && yyjson_is_obj(img)) {
        static const char *const carried[] = {"type", "image_url", NULL};
        static const char *const carried_c[] = {"type", "image_url", "prompt_cache_breakpoint", NULL};
        Buf *cache = &e->kb; /* an input_image has the cache hint's slot (_context.cache_breakpoint) */
        cache->len = 0;
        int got = e->anthropic ? 0 : put_cache_breakpoint(e, j, cache);
        if (got < 0 || lose_block_keys(e, j, path, got ? carried_c : carried)) {
            yyjson_doc_free(doc);
            return FALLBACK;
        }
        static const char *const img_keys[] = {"url", "detail", NULL};
        size_t idx, max;
        yyjson_val *key, *val;
        yyjson_obj_foreach(img, idx, max, key, val) {
            if (!key_in(key, img_keys)) lose_key(e, path, "/image_url", key, "image", "", "' is not carried");
        }
        yyjson_val *detail = yyjson_obj_get(img, "detail");
        yyjson_val *url = yyjson_obj_get(img, "url");
        size_t pl = path->len;
        if (!detail) {
            puts_(st, path, "/image_url");
            lose_s(e, path->p, path->len, "image", "Responses requires detail; filled 'auto'");
        } else if (yyjson_is_null(detail)) {
            puts_(st, path, "/image_url/detail");
            lose_s(e, path->p, path->len, "image", "a null detail: Responses requires one; filled 'auto'");
        } else if (!yyjson_is_str(detail)) {
            yyjson_doc_free(doc);
            return FALLBACK; /* `detail or "auto"`: Python truthiness of other values is not modelled */
        }
        path->len = pl;
        if (!first) put(st, out, ",", 1);
        puts_(st, out, "{\"type\":\"input_image\",\"detail\":");
        if (detail && yyjson_is_str(detail) && yyjson_get_len(detail)) put_value(st, out, detail);
        else puts_(st, out, "\"auto\"");
        puts_(st, out, ",\"image_url\":");
        if (url) put_value(st, out, url);
        else puts_(st, out, "null");
        put(st, out, cache->p, cache->len);
        put(st, out, "}", 1);
        *wrote = 1;
    }
    if (doc) yyjson_doc_free(doc);
    return 0;
}

/* to_responses._part: block j (the k-th of item i) as a Responses part appended to `out` (with a
 * leading comma unless first), or dropped with a loss; *wrote says which. */
static int part(Enc *e, int64_t i, int64_t j, int64_t k, int assistant, Buf *out, int first, int *wrote) {
    St *st = &e->st;
    Buf path = e->ptr; /* handed back to e->ptr at the end (it may have grown) */
    int rc = FALLBACK;
    *wrote = 0;
    if (e->anthropic) {
        if (at_content_ptr(e, &path, i, k)) goto done;
    } else {
        if (chat_item_ptr(e, &path, i)) goto done;
        puts_(st, &path, "/content/");
        put_i64(st, &path, k);
    }
    size_t tl, xl;
    const char *t = col_str(&e->btype, j, &tl);
    const char *text = col_str(&e->btext, j, &xl);
    if (!t || str_eq(t, tl, "input_text") || str_eq(t, tl, "output_text") || str_eq(t, tl, "text")) {
        static const char *const carried[] = {"type", "text", NULL};
        static const char *const carried_c[] = {"type", "text", "prompt_cache_breakpoint", NULL};
        Buf *cache = &e->kb; /* an input_text has the cache hint's slot, an output_text none */
        cache->len = 0;
        int got = assistant || e->anthropic ? 0 : put_cache_breakpoint(e, j, cache);
        if (got < 0 || lose_block_keys(e, j, &path, got ? carried_c : carried)) goto done;
        size_t pl = path.len;
        if (!t) { /* (the content form is parts here) */
            puts_(st, &path, "/type");
            lose_s(e, path.p, path.len, "content_form", "a part without a type gets one");
            path.len = pl;
        }
        if (!text) {
            puts_(st, &path, "/text");
            lose_s(e, path.p, path.len, "content_form", "a part without text gets ''");
            path.len = pl;
        }
        if (!first) put(st, out, ",", 1);
        puts_(st, out, assistant ? "{\"type\":\"output_text\",\"text\":" : "{\"type\":\"input_text\",\"text\":");
        put_json_str(st, out, text ? text : "", text ? xl : 0);
        put(st, out, cache->p, cache->len);
        puts_(st, out, assistant ? ",\"annotations\":[]}" : "}");
        *wrote = 1;
        rc = 0;
        goto done;
    }
    if (str_eq(t, tl, "refusal")) {
        static const char *const carried[] = {"type", "refusal", NULL};
        if (lose_block_keys(e, j, &path, carried)) goto done;
        if (!first) put(st, out, ",", 1);
        puts_(st, out, "{\"type\":\"refusal\",\"refusal\":");
        put_json_str(st, out, text ? text : "", text ? xl : 0);
        put(st, out, "}", 1);
        *wrote = 1;
        rc = 0;
        goto done;
    }
    if (str_eq(t, tl, "image_url")) {
        if (image_url_part(e, j, &path, out, first, wrote)) goto done;
        if (*wrote) {
            rc = 0;
            goto done;
        }
    }
    if (!assistant && str_eq(t, tl, "file")) goto done; /* file parts (Ctx.openai_file): left to it */
    if (!assistant && str_eq(t, tl, "document")) {
        size_t dxl;
        const char *dx = col_str(&e->bextra, j, &dxl);
        if (document_may_convert(dx, dxl)) goto done;
    }
    if (e->anthropic && (str_eq(t, tl, "image") || str_eq(t, tl, "tool_reference"))) {
        int done_ = 0;
        if (anthropic_part(e, j, t, tl, &path, out, first, &done_)) goto done;
        if (done_) {
            *wrote = 1;
            rc = 0;
            goto done;
        }
    } else if (str_eq(t, tl, "image") || str_eq(t, tl, "tool_reference")) {
        goto done; /* (another source's) an Anthropic image, a tool_reference: the per-record encoder's */
    }
    /* ctx.lose_part(path, t, "Responses here") */
    e->tmp.len = 0;
    puts_(st, &e->tmp, article_quoted(t, tl));
    put(st, &e->tmp, t, tl);
    puts_(st, &e->tmp, "' part has no equivalent in Responses here");
    lose(e, path.p, path.len, part_loss_kind(t, tl), e->tmp.p, e->tmp.len);
    rc = 0;
done:
    e->ptr = path;
    return rc;
}

enum { C_ABSENT, C_NULL, C_VALUE };

/* Ctx.content_value with _part: item i's content as JSON written to `out`. *state: C_ABSENT / C_NULL /
 * C_VALUE; *truthy: a non-empty string or list; *empty_str: the string "". */
static int content(Enc *e, int64_t i, int assistant, Buf *out, int *state, int *truthy, int *empty_str) {
    size_t n;
    const char *form = col_str(&e->content_form, i, &n);
    *truthy = *empty_str = 0;
    if (str_eq(form, n, "absent")) {
        *state = C_ABSENT;
        return 0;
    }
    if (str_eq(form, n, "null")) {
        *state = C_NULL;
        return 0;
    }
    *state = C_VALUE;
    if (!col_valid(&e->content, i)) return FALLBACK;
    int64_t a, z;
    col_list(&e->content, i, &a, &z);
    if (str_eq(form, n, "string")) {
        if (z - a != 1 || !col_valid(&e->blk_valid, a)) return FALLBACK;
        size_t tl;
        const char *text = col_str(&e->btext, a, &tl);
        if (!text) return FALLBACK;
        put_json_str(&e->st, out, text, tl);
        *truthy = tl > 0;
        *empty_str = tl == 0;
        return 0;
    }
    if (!str_eq(form, n, "parts")) return FALLBACK;
    put(&e->st, out, "[", 1);
    int first = 1;
    for (int64_t j = a; j < z; j++) {
        if (!col_valid(&e->blk_valid, j)) return FALLBACK;
        int wrote;
        if (part(e, i, j, j - a, assistant, out, first, &wrote)) return FALLBACK;
        if (wrote) first = 0;
    }
    put(&e->st, out, "]", 1);
    *truthy = !first;
    return 0;
}

static const char *const FN_KEYS[] = {"name", "description", "parameters", "strict", NULL};

/* A Chat function tool's "function" object as a flat Responses function tool (strict and parameters
 * set to null when absent, with their filled_default losses). */
static void function_tool(Enc *e, yyjson_val *fn, Buf *path, Buf *b) {
    St *st = &e->st;
    size_t q, qm;
    yyjson_val *k, *v;
    puts_(st, b, "{\"type\":\"function\"");
    for (const char *const *f = FN_KEYS; *f; f++) {
        yyjson_val *val = yyjson_obj_get(fn, *f);
        if (!val) continue;
        puts_(st, b, ",\"");
        puts_(st, b, *f);
        puts_(st, b, "\":");
        put_value(st, b, val);
    }
    yyjson_obj_foreach(fn, q, qm, k, v) {
        if (!key_in(k, FN_KEYS)) lose_key(e, path, "/function", k, "tools", "tool ", "' has no slot in Responses");
    }
    static const char *const required[] = {"parameters", "strict"};
    for (int m = 0; m < 2; m++) {
        if (yyjson_obj_get(fn, required[m])) continue;
        puts_(st, b, ",\"");
        puts_(st, b, required[m]);
        puts_(st, b, "\":null");
        size_t pl = path->len;
        puts_(st, path, "/function/");
        puts_(st, path, required[m]);
        e->tmp.len = 0;
        puts_(st, &e->tmp, "'");
        puts_(st, &e->tmp, required[m]);
        puts_(st, &e->tmp, "' set to null");
        lose(e, path->p, path->len, "filled_default", e->tmp.p, e->tmp.len);
        path->len = pl;
    }
    put(st, b, "}", 1);
}

/* A Chat custom tool's "custom" object as a flat Responses custom tool (a grammar format's
 * sub-object flattened into the format). */
static void custom_tool(Enc *e, yyjson_val *custom, Buf *path, Buf *b) {
    St *st = &e->st;
    size_t q, qm;
    yyjson_val *k, *v;
    puts_(st, b, "{\"type\":\"custom\"");
    static const char *const ckeys[] = {"name", "description", NULL};
    for (const char *const *f = ckeys; *f; f++) {
        yyjson_val *val = yyjson_obj_get(custom, *f);
        if (!val) continue;
        puts_(st, b, ",\"");
        puts_(st, b, *f);
        puts_(st, b, "\":");
        put_value(st, b, val);
    }
    static const char *const carried[] = {"name", "description", "format", NULL};
    yyjson_obj_foreach(custom, q, qm, k, v) {
        if (!key_in(k, carried)) lose_key(e, path, "/custom", k, "tools", "tool ", "' has no slot in Responses");
    }
    yyjson_val *fmt = yyjson_obj_get(custom, "format");
    yyjson_val *grammar = fmt && yyjson_is_obj(fmt) ? yyjson_obj_get(fmt, "grammar") : NULL;
    if (fmt && yyjson_is_obj(fmt) && is_str(yyjson_obj_get(fmt, "type"), "grammar") && grammar &&
        yyjson_is_obj(grammar)) {
        /* {"type": "grammar", **grammar}: a "type" in the grammar keeps the first place */
        puts_(st, b, ",\"format\":{\"type\":");
        yyjson_val *gt = yyjson_obj_get(grammar, "type");
        if (gt) put_value(st, b, gt);
        else puts_(st, b, "\"grammar\"");
        yyjson_obj_foreach(grammar, q, qm, k, v) {
            if (key_is(k, "type")) continue;
            put(st, b, ",", 1);
            put_json_str(st, b, yyjson_get_str(k), yyjson_get_len(k));
            put(st, b, ":", 1);
            put_value(st, b, v);
        }
        put(st, b, "}", 1);
        static const char *const fkeys[] = {"type", "grammar", NULL};
        yyjson_obj_foreach(fmt, q, qm, k, v) {
            if (!key_in(k, fkeys)) lose_key(e, path, "/custom/format", k, "tools", "format ", "' has no slot");
        }
    } else if (fmt && !yyjson_is_null(fmt)) {
        puts_(st, b, ",\"format\":");
        put_value(st, b, fmt);
    }
    put(st, b, "}", 1);
}

/* to_responses._tools' rules for one tool of a Chat or (e->anthropic) Anthropic source (a ToolFn). */
static int responses_tool(Enc *e, yyjson_val *tool, size_t idx, Buf *path, Buf *b, int *wrote) {
    (void)idx;
    St *st = &e->st;
    if (!yyjson_is_obj(tool)) {
        lose_s(e, path->p, path->len, "tools", "not a tool object");
        return 0;
    }
    size_t q, qm;
    yyjson_val *k, *v;
    yyjson_val *type = yyjson_obj_get(tool, "type");
    if (e->anthropic) { /* an Anthropic tool with input_schema and no type (or "custom") */
        yyjson_val *schema = yyjson_obj_get(tool, "input_schema");
        if (!schema || !(!type || yyjson_is_null(type) || is_str(type, "custom"))) {
            lose_s(e, path->p, path->len, "tools", "this tool has no equivalent in Responses here");
            return 0;
        }
        *wrote = 1;
        yyjson_val *name = yyjson_obj_get(tool, "name");
        yyjson_val *desc = yyjson_obj_get(tool, "description");
        puts_(st, b, "{\"type\":\"function\",\"name\":");
        if (name) put_value(st, b, name);
        else puts_(st, b, "null");
        puts_(st, b, ",\"parameters\":");
        put_value(st, b, schema);
        /* a boolean strict and defer_loading: Responses' function tool has both */
        yyjson_val *strict = yyjson_obj_get(tool, "strict");
        yyjson_val *defer = yyjson_obj_get(tool, "defer_loading");
        if (strict && yyjson_is_bool(strict))
            puts_(st, b, yyjson_get_bool(strict) ? ",\"strict\":true" : ",\"strict\":false");
        else
            puts_(st, b, ",\"strict\":null");
        if (desc) {
            puts_(st, b, ",\"description\":");
            put_value(st, b, desc);
        }
        if (defer && yyjson_is_bool(defer))
            puts_(st, b, yyjson_get_bool(defer) ? ",\"defer_loading\":true" : ",\"defer_loading\":false");
        put(st, b, "}", 1);
        static const char *const flags[] = {"strict", "defer_loading", NULL};
        lose_anthropic_tool_keys(e, tool, path, "' has no slot in Responses", flags);
        return 0;
    }
    /* a function tool is built from its "function" object, a custom one from "custom": the other
       type's object is a key like any other (a tool of another type is lost whole) */
    static const char *const tool_keys[] = {"type", "function", "custom", NULL};
    static const char *const function_keys[] = {"type", "function", NULL};
    static const char *const custom_keys[] = {"type", "custom", NULL};
    const char *const *carried = is_str(type, "function") ? function_keys
                                 : is_str(type, "custom") ? custom_keys
                                                          : tool_keys;
    yyjson_obj_foreach(tool, q, qm, k, v) {
        if (!key_in(k, carried)) lose_key(e, path, NULL, k, "tools", "tool ", "' has no slot in Responses");
    }
    yyjson_val *fn = yyjson_obj_get(tool, "function");
    yyjson_val *custom = yyjson_obj_get(tool, "custom");
    if (is_str(type, "function") && fn && yyjson_is_obj(fn)) {
        *wrote = 1;
        function_tool(e, fn, path, b);
    } else if (is_str(type, "custom") && custom && yyjson_is_obj(custom)) {
        *wrote = 1;
        custom_tool(e, custom, path, b);
    } else {
        lose_s(e, path->p, path->len, "tools", "this tool has no equivalent in Responses here");
    }
    return 0;
}

/* to_responses._tools: `,"tools":[...]` into b, or nothing with the "no tool survives" loss. */
static int tools_json(Enc *e, Buf *b) {
    return write_tools(e, b, &e->aux[2], responses_tool, "no tool survives the conversion");
}

/* to_responses._top's tool_choice: `,"tool_choice":...` into b, or dropped with a loss
 * (write_tool_choice's one). */
static int responses_tool_choice(Enc *e, yyjson_val *raw, Buf *b) {
    St *st = &e->st;
    yyjson_val *type = yyjson_is_obj(raw) ? yyjson_obj_get(raw, "type") : NULL;
    if (type && (yyjson_is_arr(type) || yyjson_is_obj(type))) return FALLBACK; /* raw.get(raw.get("type")): TypeError */
    if (yyjson_is_obj(raw)) {
        Buf *path = &e->aux[2];
        path->len = 0;
        puts_(st, path, "/tool_choice");
        size_t q, qm;
        yyjson_val *k, *v;
        /* what the choice's type carries: Anthropic's tool choice names its tool flat, Chat's function /
           custom choice in its sub-object */
        int sub = !e->anthropic && (is_str(type, "function") || is_str(type, "custom"));
        int flat = e->anthropic && is_str(type, "tool");
        yyjson_obj_foreach(raw, q, qm, k, v) {
            int known = key_is(k, "type") || (flat && key_is(k, "name")) ||
                        (sub && yyjson_equals_strn(k, yyjson_get_str(type), yyjson_get_len(type)));
            if (!known) lose_key(e, path, NULL, k, "tools", "tool_choice ", "' has no slot");
        }
        yyjson_val *inner = yyjson_is_str(type) ? yyjson_obj_get(raw, yyjson_get_str(type)) : NULL;
        if (inner && yyjson_is_obj(inner)) {
            /* f"/tool_choice/{raw['type']}": the type is not escaped as a pointer token */
            put(st, path, "/", 1);
            put(st, path, yyjson_get_str(type), yyjson_get_len(type));
            static const char *const name[] = {"name", NULL};
            yyjson_obj_foreach(inner, q, qm, k, v) {
                if (!key_in(k, name)) lose_key(e, path, NULL, k, "tools", "tool_choice ", "' has no slot");
            }
        }
    }
    yyjson_val *fn = yyjson_is_obj(raw) ? yyjson_obj_get(raw, "function") : NULL;
    yyjson_val *custom = yyjson_is_obj(raw) ? yyjson_obj_get(raw, "custom") : NULL;
    if (is_str(raw, "none") || is_str(raw, "auto") || is_str(raw, "required")) {
        puts_(st, b, ",\"tool_choice\":");
        put_value(st, b, raw);
        if (e->anthropic) { /* Anthropic's choice is an object: the way back writes one */
            e->tmp.len = 0;
            puts_(st, &e->tmp, "a tool_choice string comes back from Responses as an object, not '");
            put(st, &e->tmp, yyjson_get_str(raw), yyjson_get_len(raw));
            puts_(st, &e->tmp, "'");
            lose(e, "/tool_choice", 12, "tools", e->tmp.p, e->tmp.len);
        }
    } else if (is_str(type, "auto") || is_str(type, "any") || is_str(type, "none")) {
        const char *to = is_str(type, "auto") ? "auto" : is_str(type, "any") ? "required" : "none";
        puts_(st, b, ",\"tool_choice\":\"");
        puts_(st, b, to);
        put(st, b, "\"", 1);
        if (!e->anthropic) { /* Anthropic's own shape comes back; an OpenAI source gets the string */
            e->tmp.len = 0;
            puts_(st, &e->tmp, "a tool_choice object comes back as '");
            puts_(st, &e->tmp, to);
            puts_(st, &e->tmp, "'");
            lose(e, "/tool_choice", 12, "tools", e->tmp.p, e->tmp.len);
        }
    } else if ((is_str(type, "function") && fn && yyjson_is_obj(fn)) ||
               (is_str(type, "custom") && custom && yyjson_is_obj(custom))) {
        yyjson_val *obj = is_str(type, "function") ? fn : custom;
        puts_(st, b, is_str(type, "function") ? ",\"tool_choice\":{\"type\":\"function\",\"name\":"
                                              : ",\"tool_choice\":{\"type\":\"custom\",\"name\":");
        put_get(st, b, obj, "name");
        put(st, b, "}", 1);
    } else if (is_str(type, "tool")) {
        puts_(st, b, ",\"tool_choice\":{\"type\":\"function\",\"name\":");
        put_get(st, b, raw, "name");
        put(st, b, "}", 1);
    } else {
        lose_s(e, "/tool_choice", 12, "tools", "tool_choice has no equivalent in Responses");
    }
    return 0;
}

/* A Chat key Responses nests in its "text" object (to_responses._top: the object stands where the
 * first of them was): `,"text":{` the first time, else the written object reopened when nothing
 * followed it (`,` before the next key). FALLBACK when another key came between them (the Python
 * encoder places it). */
static int text_open(Enc *e, Buf *b) {
    if (!e->text_end) {
        puts_(&e->st, b, ",\"text\":{");
    } else if (b->len == e->text_end) {
        b->len--; /* its closing brace */
        put_byte(&e->st, b, ',');
    } else {
        return FALLBACK;
    }
    return 0;
}

static void text_close(Enc *e, Buf *b) {
    put_byte(&e->st, b, '}');
    e->text_end = b->len;
}

/* _context.format_to_responses: a Chat response_format as text.format (a json_schema one's keys
 * flat beside "type"), or reported. 0 or FALLBACK (text_open). */
static int responses_format(Enc *e, yyjson_val *fmt, Buf *b) {
    St *st = &e->st;
    static const char *const keys[] = {JSON_SCHEMA_KEYS, NULL};
    yyjson_val *type, *k, *v;
    int t = format_type(fmt, &type);
    yyjson_val *schema = t == 2 ? yyjson_obj_get(fmt, "json_schema") : NULL;
    if (!t || (t == 2 && !yyjson_is_obj(schema))) {
        lose_s(e, "/response_format", 16, "request_field", "'response_format' is not carried to Responses");
        return 0;
    }
    if (text_open(e, b)) return FALLBACK;
    puts_(st, b, "\"format\":{\"type\":");
    put_value(st, b, type);
    size_t idx, max;
    yyjson_obj_foreach(fmt, idx, max, k, v) {
        if (key_is(k, "type") || (t == 2 && key_is(k, "json_schema"))) continue;
        lose_key(e, NULL, "/response_format", k, "request_field", "response_format ", "' has no slot in Responses");
    }
    if (t == 2) {
        yyjson_obj_foreach(schema, idx, max, k, v) {
            if (key_in(k, keys)) {
                put_byte(st, b, ',');
                put_json_str(st, b, yyjson_get_str(k), yyjson_get_len(k));
                put_byte(st, b, ':');
                put_value(st, b, v);
            } else {
                lose_key(e, NULL, "/response_format/json_schema", k, "request_field", "json_schema ",
                         "' has no slot in Responses");
            }
        }
    }
    put_byte(st, b, '}');
    text_close(e, b);
    return 0;
}

/* to_responses._top's rule for one top-level key (openai_top_extra's carry): carried, the first of
 * max_completion_tokens / max_tokens as max_output_tokens, or reported. */
static int responses_top_key(Enc *e, yyjson_val *k, yyjson_val *v, Buf *b, int *have_max) {
    St *st = &e->st;
    static const char *const same[] = {"temperature", "top_p", "parallel_tool_calls", "metadata", "store", "user",
                                       OPENAI_SHARED_KEYS, NULL};
    static const char *const renamed[] = {"max_completion_tokens", "max_tokens", NULL};
    if (key_in(k, same) || (!e->anthropic && key_is(k, "service_tier"))) { /* every Chat tier */
        put(st, b, ",", 1);
        put_json_str(st, b, yyjson_get_str(k), yyjson_get_len(k));
        put(st, b, ":", 1);
        put_value(st, b, v);
    } else if (!e->anthropic && key_is(k, "reasoning_effort")) { /* _context.CHAT_NESTED_KEYS */
        puts_(st, b, ",\"reasoning\":{\"effort\":");
        put_value(st, b, v);
        put_byte(st, b, '}');
    } else if (!e->anthropic && key_is(k, "response_format")) {
        return responses_format(e, v, b);
    } else if (!e->anthropic && key_is(k, "verbosity")) {
        if (text_open(e, b)) return FALLBACK;
        puts_(st, b, "\"verbosity\":");
        put_value(st, b, v);
        text_close(e, b);
    } else if (key_in(k, renamed) && !*have_max) {
        *have_max = 1;
        puts_(st, b, ",\"max_output_tokens\":");
        put_value(st, b, v);
        if (key_is(k, "max_tokens") && !e->anthropic) {
            static const char d[] = "the deprecated max_tokens comes back as max_completion_tokens";
            lose_s(e, "/max_tokens", 11, "request_field", d);
            lose_s(e, "/max_completion_tokens", 22, "request_field", d);
        }
    } else {
        lose_key(e, NULL, NULL, k, "request_field", "", "' is not carried to Responses");
    }
    return 0;
}

/* Ctx.generated_id(prefix, i) into out (NUL-terminated, at most GEN_ID bytes with it): prefix_ +
 * blake2b(f"{conversation_id}/{i - start}", digest_size=12) in hex. Its length, or 0 (no id). */
#define GEN_ID 32
static size_t generated_id(Enc *e, const char *prefix, int64_t i, char *out) {
    size_t n, pl = strlen(prefix);
    const char *cid = col_str(&e->conversation_id, e->r, &n);
    if (!cid || pl + 1 + 24 + 1 > GEN_ID) return 0;
    char local[24];
    int ln = snprintf(local, sizeof local, "/%lld", (long long)(i - e->start));
    Blake2b s;
    b2_init(&s, 12);
    b2_update(&s, (const uint8_t *)cid, n);
    b2_update(&s, (const uint8_t *)local, (size_t)ln);
    memcpy(out, prefix, pl);
    out[pl] = '_';
    b2_final_hex_n(&s, out + pl + 1, 12);
    out[pl + 25] = 0;
    return pl + 25;
}

/* ... as a JSON string into b. */
static int put_generated_id(Enc *e, Buf *b, const char *prefix, int64_t i) {
    char id[GEN_ID];
    size_t n = generated_id(e, prefix, i, id);
    if (!n) return FALLBACK;
    put_json_str(&e->st, b, id, n);
    return 0;
}

/* A call's or output's call id in this row (call_ids.CallIds.call_id): its own, generated, its
 * call's (an output paired by position), or none (p NULL: an output with no call to pair with). */
typedef struct {
    const char *p;
    size_t n;
    char gen[GEN_ID];
} Cid;

/* call_ids.CallIds for a row where a call or output has no id: cids[i - start] for every item, the
 * generated_id losses in CallIds' order (calls, then paired outputs). 0 or FALLBACK. */
static int call_ids(Enc *e, Cid *cids) {
    int64_t m = e->end - e->start;
    int64_t *pending = (int64_t *)malloc((size_t)(m ? m : 1) * sizeof(int64_t));
    int64_t *pair = (int64_t *)malloc((size_t)(m ? m : 1) * sizeof(int64_t));
    char *answered = (char *)calloc((size_t)(m ? m : 1), 1);
    int64_t npend = 0;
    int rc = FALLBACK;
    if (!pending || !pair || !answered) goto done;
    for (int64_t i = e->start; i < e->end; i++) {
        Cid *c = &cids[i - e->start];
        c->p = col_str(&e->call_id, i, &c->n);
        pair[i - e->start] = -1;
    }
    /* pair_outputs(positional=True): outputs with an id first, each with the first call before it
     * with that id; then each id-less output with the oldest call before it that no output answers
     * by id and no earlier id-less output took (a call whose own output comes later is not free). */
    for (int64_t i = e->start; i < e->end; i++) {
        size_t tl;
        const char *t = col_str(&e->type, i, &tl);
        Cid *c = &cids[i - e->start];
        if (!is_output(t, tl) || !c->p) continue;
        for (int64_t q = e->start; q < i; q++) {
            size_t ql;
            const char *qt = col_str(&e->type, q, &ql);
            const Cid *d = &cids[q - e->start];
            if (is_call(qt, ql) && d->p && d->n == c->n && memcmp(d->p, c->p, c->n) == 0) {
                pair[i - e->start] = q;
                answered[q - e->start] = 1;
                break;
            }
        }
    }
    int64_t head = 0; /* pending[head..npend): calls waiting, oldest first */
    for (int64_t i = e->start; i < e->end; i++) {
        size_t tl;
        const char *t = col_str(&e->type, i, &tl);
        const Cid *c = &cids[i - e->start];
        if (is_output(t, tl) && !c->p) {
            if (head < npend) pair[i - e->start] = pending[head++];
        } else if (is_call(t, tl) && !answered[i - e->start]) {
            pending[npend++] = i;
        }
    }
    Buf *ptr = &e->ptr2;
    for (int64_t i = e->start; i < e->end; i++) {
        size_t tl;
        const char *t = col_str(&e->type, i, &tl);
        Cid *c = &cids[i - e->start];
        if (!is_call(t, tl) || c->p) continue;
        c->n = generated_id(e, "call", i, c->gen);
        if (!c->n || chat_item_ptr(e, ptr, i)) goto done;
        c->p = c->gen;
        lose_s(e, ptr->p, ptr->len, "generated_id", "a call without id got one");
    }
    for (int64_t i = e->start; i < e->end; i++) {
        Cid *c = &cids[i - e->start];
        if (pair[i - e->start] < 0 || c->p) continue;
        const Cid *d = &cids[pair[i - e->start] - e->start];
        if (d->p == d->gen) { /* a generated id: copied, so each entry owns its text */
            memcpy(c->gen, d->gen, GEN_ID);
            c->p = c->gen;
        } else {
            c->p = d->p;
        }
        c->n = d->n;
        if (chat_item_ptr(e, ptr, i)) goto done;
        lose_s(e, ptr->p, ptr->len, "generated_id", "an output without a call id got its call's id (paired by position)");
    }
    rc = 0;
done:
    free(pending);
    free(pair);
    free(answered);
    return rc;
}

/* Item i's call id: cids' (a row with id-less calls or outputs) or its own. */
static const char *call_id_of(Enc *e, const Cid *cids, int64_t i, size_t *n) {
    if (!cids) return col_str(&e->call_id, i, n);
    *n = cids[i - e->start].n;
    return cids[i - e->start].p;
}

/* The rest of to_responses._message once its content is in e->aux[1] (state, truthy, empty_str as
 * content() gave them) and its refusal known (a non-null value, or NULL): no item (with its loss), a
 * plain message, or an output message with a generated id. */
static int message_item(Enc *e, int64_t i, const Buf *base, Buf *out, const char *role, size_t rl, int state,
                        int truthy, int empty_str, yyjson_val *refusal, int *kept, int *assistant_text) {
    St *st = &e->st;
    Buf *cbuf = &e->aux[1];
    int assistant = str_eq(role, rl, "assistant");
    int list = state == C_VALUE && cbuf->len && cbuf->p[0] == '[';
    if (state != C_VALUE || (empty_str && assistant)) {
        if (!refusal) {
            int followed = 0;
            if (i + 1 < e->end && col_valid(&e->group, i + 1) && col_i32(&e->group, i + 1) == col_i32(&e->group, i)) {
                size_t tl;
                const char *t = col_str(&e->type, i + 1, &tl);
                followed = is_call(t, tl);
            }
            if (state == C_NULL && followed) return 0;
            if (followed) {
                Buf *p = &e->ptr2;
                if (content_ptr(e, p, i)) return FALLBACK;
                lose_s(e, p->p, p->len, "content_form", "absent or empty content comes back as null");
            } else {
                lose_s(e, base->p, base->len, "content_form", "a message with no content has no item in Responses");
            }
            return 0;
        }
        cbuf->len = 0; /* content = [] */
        puts_(st, cbuf, "[]");
        list = 1;
        truthy = 0;
    }
    *kept = 1;
    if (assistant && (list || refusal)) {
        puts_(st, out, "{\"type\":\"message\",\"id\":");
        if (put_generated_id(e, out, "msg", i)) return FALLBACK;
        puts_(st, out, ",\"role\":\"assistant\",\"status\":\"completed\",\"content\":");
        if (list) {
            put(st, out, cbuf->p, cbuf->len - 1); /* without its closing bracket */
        } else {
            puts_(st, out, "[{\"type\":\"output_text\",\"text\":");
            put(st, out, cbuf->p, cbuf->len);
            puts_(st, out, ",\"annotations\":[]}");
            truthy = 1;
        }
        if (refusal) {
            if (truthy) put(st, out, ",", 1);
            puts_(st, out, "{\"type\":\"refusal\",\"refusal\":");
            put_value(st, out, refusal);
            put(st, out, "}", 1);
            truthy = 1;
            Buf *p = &e->ptr2;
            p->len = 0;
            put(st, p, base->p, base->len);
            puts_(st, p, "/refusal");
            lose_s(e, p->p, p->len, "refusal", "the refusal field became a refusal part");
        }
        puts_(st, out, "]}");
        lose_s(e, base->p, base->len, "generated_id", "an output message needs an id; generated");
        *assistant_text = truthy;
        return 0;
    }
    puts_(st, out, "{\"role\":");
    put_json_str(st, out, role, rl);
    puts_(st, out, ",\"content\":");
    put(st, out, cbuf->p, cbuf->len);
    put(st, out, "}", 1);
    *assistant_text = assistant && truthy;
    return 0;
}

/* to_responses._message for a Chat source: the item written to `out` (*kept: 1), or no item
 * (*kept: 0) with its loss. *assistant_text: the item is an assistant message with truthy content. */
static int message(Enc *e, int64_t i, const Buf *base, Buf *out, int *kept, int *assistant_text) {
    St *st = &e->st;
    size_t rl;
    const char *role = col_str(&e->role, i, &rl);
    if (!role || !rl) role = "user", rl = 4;
    int assistant = str_eq(role, rl, "assistant");
    Buf *cbuf = &e->aux[1];
    cbuf->len = 0;
    int state, truthy, empty_str;
    *kept = *assistant_text = 0;
    if (content(e, i, assistant, cbuf, &state, &truthy, &empty_str)) return FALLBACK;
    lose_fields(e, i, base, e->anthropic ? A_MSG_UNUSED : MSG_UNUSED);
    /* extra: a refusal (a value: an output message's refusal part; null: a loss), then the rest */
    yyjson_doc *doc;
    yyjson_val *refusal = NULL; /* a non-null refusal value (in doc) */
    if (col_json_obj(&e->iextra, i, &doc)) return FALLBACK;
    if (doc) {
        yyjson_val *root = yyjson_doc_get_root(doc);
        refusal = e->anthropic ? NULL : yyjson_obj_get(root, "refusal"); /* a Chat message's field */
        if (refusal && yyjson_is_null(refusal)) {
            refusal = NULL;
            size_t bl = base->len;
            Buf *p = &e->ptr2;
            p->len = 0;
            put(st, p, base->p, bl);
            puts_(st, p, "/refusal");
            lose_s(e, p->p, p->len, "refusal", "an explicit null refusal has no slot");
        }
        size_t idx, max;
        yyjson_val *k, *v;
        yyjson_obj_foreach(root, idx, max, k, v) {
            if (e->anthropic || !key_is(k, "refusal"))
                lose_key(e, base, NULL, k, "unknown_field", "", "' has no slot in Responses");
        }
    }
    int rc = message_item(e, i, base, out, role, rl, state, truthy, empty_str, refusal, kept, assistant_text);
    if (doc) yyjson_doc_free(doc);
    return rc;
}

/* to_responses._output: a tool message as a function_call_output / custom_tool_call_output. */
static int output(Enc *e, int64_t i, const Buf *base, Buf *out, const Cid *cids) {
    St *st = &e->st;
    size_t cl, rl;
    const char *cid = call_id_of(e, cids, i, &cl);
    int custom = 0; /* its call id is a custom call's (any item of the row) */
    for (int64_t q = e->start; q < e->end && !custom; q++) {
        size_t ql, il;
        const char *qt = col_str(&e->type, q, &ql);
        if (!str_eq(qt, ql, "custom_tool_call")) continue;
        const char *qid = call_id_of(e, cids, q, &il);
        custom = qid && il == cl && memcmp(qid, cid, cl) == 0;
    }
    Buf *cbuf = &e->aux[1];
    cbuf->len = 0;
    int state, truthy, empty_str;
    if (content(e, i, 0, cbuf, &state, &truthy, &empty_str)) return FALLBACK;
    if (state != C_VALUE) {
        Buf *p = &e->ptr2;
        if (content_ptr(e, p, i)) return FALLBACK;
        lose_s(e, p->p, p->len, "content_form", "a tool output needs output; wrote ''");
        puts_(st, cbuf, "\"\"");
    }
    puts_(st, out, custom ? "{\"type\":\"custom_tool_call_output\",\"call_id\":" : "{\"type\":\"function_call_output\",\"call_id\":");
    put_json_str(st, out, cid, cl);
    puts_(st, out, ",\"output\":");
    put(st, out, cbuf->p, cbuf->len);
    const char *role = col_str(&e->role, i, &rl);
    if (!e->anthropic && str_eq(role, rl, "function"))
        lose_s(e, base->p, base->len, "role", "a legacy 'function' message comes back as a 'tool' message");
    size_t nl;
    const char *name = col_str(&e->name, i, &nl);
    Buf *p = &e->ptr2;
    p->len = 0;
    put(st, p, base->p, base->len);
    puts_(st, p, "/name");
    if (name) {
        puts_(st, out, ",\"name\":");
        put_json_str(st, out, name, nl);
        if (!e->anthropic) lose_s(e, p->p, p->len, "name", "kept in Responses, but Chat tool messages have no name slot");
    } else if (has_null(&e->inulls, &e->inull_names, i, "name")) {
        lose_s(e, p->p, p->len, "name", "an explicit null name");
    }
    put(st, out, "}", 1);
    lose_fields(e, i, base, OUT_UNUSED);
    yyjson_doc *doc;
    if (col_json_obj(&e->iextra, i, &doc)) return FALLBACK;
    if (doc) {
        yyjson_val *root = yyjson_doc_get_root(doc);
        if (yyjson_obj_get(root, "is_error")) {
            p->len = 0;
            put(st, p, base->p, base->len);
            puts_(st, p, "/is_error");
            lose_s(e, p->p, p->len, "tool_error", "Responses tool outputs have no error flag");
        }
        size_t idx, max;
        yyjson_val *k, *v;
        yyjson_obj_foreach(root, idx, max, k, v) {
            if (!key_is(k, "is_error")) lose_key(e, base, NULL, k, "unknown_field", "", "' has no slot in Responses");
        }
        yyjson_doc_free(doc);
    }
    return 0;
}

/* to_responses._call for a Chat or (e->anthropic) Anthropic source. */
static int call(Enc *e, int64_t i, const Buf *base, Buf *out, const Cid *cids) {
    St *st = &e->st;
    size_t tl, cl, nl, vl;
    const char *t = col_str(&e->type, i, &tl);
    int custom = str_eq(t, tl, "custom_tool_call");
    const char *cid = call_id_of(e, cids, i, &cl);
    const char *name = col_str(&e->name, i, &nl);
    const char *value = col_str(custom ? &e->input : &e->arguments, i, &vl);
    puts_(st, out, custom ? "{\"type\":\"custom_tool_call\",\"call_id\":" : "{\"type\":\"function_call\",\"call_id\":");
    put_json_str(st, out, cid, cl);
    puts_(st, out, ",\"name\":");
    put_json_str(st, out, name ? name : "", name ? nl : 0);
    puts_(st, out, custom ? ",\"input\":" : ",\"arguments\":");
    put_json_str(st, out, value ? value : "", value ? vl : 0);
    put(st, out, "}", 1);
    if (e->anthropic) return lose_extra(e, i, base);
    return lose_chat_call_keys(e, i, base, custom, "' has no slot in Responses");
}

/* ------------------------------------------------------------------------------------------ */
/* Anthropic request bodies (to_responses.py's Anthropic branches, then anthropic_round_trip.report) */

/* to_responses._reasoning: a thinking block as a reasoning item (a redacted one is dropped). */
static int reasoning(Enc *e, int64_t i, const Buf *base, Buf *out, int *kept) {
    St *st = &e->st;
    size_t n;
    const char *nt = col_str(&e->native_type, i, &n);
    *kept = 0;
    if (str_eq(nt, n, "redacted_thinking")) {
        lose_s(e, base->p, base->len, "reasoning", "redacted thinking has no equivalent in Responses");
        return 0;
    }
    puts_(st, out, "{\"type\":\"reasoning\",\"id\":");
    if (put_generated_id(e, out, "rs", i)) return FALLBACK;
    puts_(st, out, ",\"summary\":[],\"content\":[");
    const char *form = col_str(&e->content_form, i, &n);
    if (str_eq(form, n, "parts")) { /* ctx.blocks(i): none unless the form is parts */
        int64_t a, z;
        col_list(&e->content, i, &a, &z);
        for (int64_t j = a; j < z; j++) {
            if (!col_valid(&e->blk_valid, j)) return FALLBACK;
            size_t tl;
            const char *text = col_str(&e->btext, j, &tl);
            if (j > a) put(st, out, ",", 1);
            puts_(st, out, "{\"type\":\"reasoning_text\",\"text\":");
            put_json_str(st, out, text ? text : "", text ? tl : 0);
            put(st, out, "}", 1);
        }
    }
    puts_(st, out, "]}");
    if (col_valid(&e->signature, i)) {
        Buf *p = &e->ptr2;
        p->len = 0;
        put(st, p, base->p, base->len);
        puts_(st, p, "/signature");
        lose_s(e, p->p, p->len, "thinking_signature", "a thinking signature has no slot");
    }
    lose_s(e, base->p, base->len, "generated_id", "a reasoning item needs an id; generated");
    if (lose_extra(e, i, base)) return FALLBACK;
    *kept = 1;
    return 0;
}

/* The request fields after the items, as to_responses._top writes them: model, tools, tool_choice
 * and the other top-level keys, and the closing brace. */
static int request_tail(Enc *e) {
    St *st = &e->st;
    size_t n;
    const char *model = col_str(&e->model, e->r, &n);
    if (model) {
        puts_(st, &e->out, ",\"model\":");
        put_json_str(st, &e->out, model, n);
    }
    if (tools_json(e, &e->out) || write_tool_choice(e, &e->out, responses_tool_choice) ||
        openai_top_extra(e, &e->out, responses_top_key))
        return FALLBACK;
    put(st, &e->out, "}", 1);
    return 0;
}

/* to_responses._instructions for an Anthropic source: its system (a string, null, or blocks joined)
 * as `"instructions":...,`. */
static int anthropic_instructions(Enc *e) {
    St *st = &e->st;
    size_t n;
    int64_t a, z;
    const char *form = col_str(&e->instr_form, e->r, &n);
    if (str_eq(form, n, "string")) {
        col_list(&e->instr_content, e->r, &a, &z);
        size_t tl;
        const char *text = a < z ? col_str(&e->instr_text, a, &tl) : NULL;
        if (!text) return FALLBACK;
        puts_(st, &e->out, "\"instructions\":");
        put_json_str(st, &e->out, text, tl);
        put(st, &e->out, ",", 1);
    } else if (str_eq(form, n, "null")) {
        puts_(st, &e->out, "\"instructions\":null,");
    } else if (str_eq(form, n, "parts")) { /* system blocks joined */
        col_list(&e->instr_content, e->r, &a, &z);
        Buf *p = &e->ptr2, *joined = &e->tmp2;
        joined->len = 0;
        for (int64_t j = a; j < z; j++) {
            if (!col_valid(&e->instr_blk_valid, j)) return FALLBACK;
            size_t tl;
            const char *text = col_str(&e->instr_text, j, &tl);
            if (text) put(st, joined, text, tl);
            p->len = 0;
            puts_(st, p, "/system/");
            put_i64(st, p, j - a);
            size_t pl = p->len;
            if (col_valid(&e->instr_cache, j)) {
                puts_(st, p, "/cache_control");
                lose_s(e, p->p, p->len, "cache_control", "instructions have no cache_control");
                p->len = pl;
            }
            if (col_valid(&e->instr_cit, j) || col_valid(&e->instr_extra, j))
                lose_s(e, p->p, p->len, "unknown_field", "system block keys have no slot");
        }
        lose_s(e, "/system", 7, z - a > 1 ? "block_boundary" : "content_form", "system blocks joined");
        puts_(st, &e->out, "\"instructions\":");
        put_json_str(st, &e->out, joined->p, joined->len);
        put(st, &e->out, ",", 1);
    }
    return 0;
}

/* Item i of an Anthropic source written into item (*kept) or dropped with its loss. */
static int anthropic_item(Enc *e, int64_t i, Buf *item, int *kept) {
    St *st = &e->st;
    Buf *base = &e->base;
    size_t tl;
    const char *t = col_str(&e->type, i, &tl);
    int assistant_text;
    if (str_eq(t, tl, "message")) return message(e, i, base, item, kept, &assistant_text);
    if (str_eq(t, tl, "function_call")) {
        *kept = 1;
        return call(e, i, base, item, NULL);
    }
    if (str_eq(t, tl, "function_call_output")) {
        *kept = 1;
        return output(e, i, base, item, NULL);
    }
    if (str_eq(t, tl, "reasoning")) return reasoning(e, i, base, item, kept);
    if (str_eq(t, tl, "compaction")) { /* Anthropic's beta compaction: provider-side state */
        lose_s(e, base->p, base->len, "hosted_tool", "'compaction' is not carried");
        return 0;
    }
    e->tmp.len = 0; /* ctx.lose_item */
    put(st, &e->tmp, "'", 1);
    put(st, &e->tmp, t, tl);
    puts_(st, &e->tmp, "' has no equivalent in Responses");
    lose(e, base->p, base->len, at_is_hosted(t, tl) ? "hosted_tool" : "unknown_item", e->tmp.p, e->tmp.len);
    return 0;
}

static int anthropic_body(Enc *e, uint8_t *emitted) {
    St *st = &e->st;
    Buf *item = &e->aux[0];
    put(st, &e->out, "{", 1);
    if (anthropic_instructions(e)) return FALLBACK;
    puts_(st, &e->out, "\"input\":[");
    int64_t nitems = 0;
    for (int64_t i = e->start; i < e->end; i++) {
        if (at_lose_wrapper(e, i) || at_item_ptr(e, &e->base, i)) return FALLBACK;
        item->len = 0;
        int kept = 0;
        if (anthropic_item(e, i, item, &kept)) return FALLBACK;
        if (!kept) continue;
        emitted[i - e->start] = 1;
        if (nitems++) put(st, &e->out, ",", 1);
        put(st, &e->out, item->p, item->len);
    }
    put(st, &e->out, "]", 1);
    if (request_tail(e)) return FALLBACK;
    return anthropic_report(e, 1, emitted);
}

/* An Anthropic request row: the items this file writes exactly (messages, tool_use / tool_result
 * with their ids, thinking, compaction, other items dropped with their loss). */
static int anthropic_row(Enc *e) {
    size_t n;
    const char *k = col_str(&e->record_kind, e->r, &n);
    if (!str_eq(k, n, "request") || !col_valid(&e->items, e->r)) return FALLBACK;
    const char *form = col_str(&e->instr_form, e->r, &n);
    if (!str_eq(form, n, "absent") && !str_eq(form, n, "null") && !str_eq(form, n, "string") &&
        !str_eq(form, n, "parts"))
        return FALLBACK;
    const char *items_form = col_str(&e->items_form, e->r, &n);
    if (!str_eq(items_form, n, "parts")) return FALLBACK;
    col_list(&e->items, e->r, &e->start, &e->end);
    for (int64_t i = e->start; i < e->end; i++) {
        if (!col_valid(&e->item_valid, i)) return FALLBACK;
        const char *t = col_str(&e->type, i, &n);
        if (!t || str_eq(t, n, "custom_tool_call") || str_eq(t, n, "custom_tool_call_output")) return FALLBACK;
        /* an id-less call or result: call_ids.py generates and pairs by position */
        if ((str_eq(t, n, "function_call") || str_eq(t, n, "function_call_output")) && !col_valid(&e->call_id, i))
            return FALLBACK;
        size_t nl;
        const char *nt = col_str(&e->native_type, i, &nl);
        if (str_eq(t, n, "message") && str_eq(nt, nl, "redacted_thinking"))
            return FALLBACK; /* (wire_key: its encrypted_content is "data") */
    }
    Buf *mask = &e->scratch; /* (a Chat row's attach buffer; the report does not use it) */
    mask->len = 0;
    int64_t m = e->end - e->start;
    if (m) {
        reserve(&e->st, mask, (size_t)m);
        if (e->st.oom) return FALLBACK;
        memset(mask->p, 0, (size_t)m);
    }
    e->anthropic = 1;
    e->loss0 = e->nloss;
    int rc = anthropic_body(e, (uint8_t *)mask->p);
    e->anthropic = 0;
    return rc;
}

/* Whether this row is one encode_responses takes as Chat: a request body with no instructions whose
 * items are messages, calls and outputs (*idless: a call or output lacks its call id). Sets the
 * row's item range. 0, or FALLBACK. */
static int chat_row_taken(Enc *e, int *idless) {
    int64_t r = e->r;
    size_t n, n2;
    const char *s = col_str(&e->source_format, r, &n);
    const char *k = col_str(&e->record_kind, r, &n2);
    if (!str_eq(s, n, "chat") || !str_eq(k, n2, "request")) return FALLBACK;
    if (!col_valid(&e->items, r)) return FALLBACK;
    const char *instr = col_str(&e->instr_form, r, &n);
    if (col_valid(&e->instr_valid, r) && instr && !str_eq(instr, n, "absent")) return FALLBACK;
    col_list(&e->items, r, &e->start, &e->end);
    *idless = 0;
    for (int64_t i = e->start; i < e->end; i++) {
        if (!col_valid(&e->item_valid, i)) return FALLBACK;
        const char *t = col_str(&e->type, i, &n);
        if (!t) return FALLBACK;
        if (is_call(t, n) || is_output(t, n)) {
            if (!col_valid(&e->call_id, i)) *idless = 1;
        } else if (!str_eq(t, n, "message")) {
            return FALLBACK; /* reasoning (a generated id), hosted items: the per-record encoder's */
        }
    }
    return 0;
}

/* The leading system message that becomes instructions (a plain, non-empty string): written as
 * `"instructions":...,` with its loss, *first moved past it. */
static int leading_instructions(Enc *e, int64_t *first) {
    St *st = &e->st;
    int64_t i = *first;
    if (i >= e->end) return 0;
    size_t tl, rl, fl;
    const char *t = col_str(&e->type, i, &tl);
    const char *role = col_str(&e->role, i, &rl);
    const char *form = col_str(&e->content_form, i, &fl);
    if (!str_eq(t, tl, "message") || !str_eq(role, rl, "system") || !str_eq(form, fl, "string") ||
        col_valid(&e->name, i) || col_valid(&e->iextra, i) || !col_valid(&e->content, i))
        return 0;
    int64_t a, z;
    col_list(&e->content, i, &a, &z);
    size_t xl;
    const char *text = z - a == 1 ? col_str(&e->btext, a, &xl) : NULL;
    if (!text) return FALLBACK;
    if (!xl) return 0;
    puts_(st, &e->out, "\"instructions\":"); /* the leading system prompt is what instructions are for */
    put_json_str(st, &e->out, text, xl);
    put(st, &e->out, ",", 1);
    if (chat_item_ptr(e, &e->base, i)) return FALLBACK;
    lose_s(e, e->base.p, e->base.len, "instruction_position", "the leading system message became instructions");
    *first = i + 1;
    return 0;
}

/* How Chat's way back would regroup the items written so far (to_chat.encode's attach state): the
 * pointer of the message a following call attaches to, and whether the last written items are calls
 * with no assistant text before them. */
typedef struct {
    Buf *ptr;
    int attaches, bare_calls;
} Attach;

/* Chat message i written into item (*kept), with the message_merge losses of the way back. */
static int chat_message(Enc *e, int64_t i, Buf *item, int *kept, Attach *at, int *is_assistant) {
    St *st = &e->st;
    int assistant_text;
    if (message(e, i, &e->base, item, kept, &assistant_text)) return FALLBACK;
    int followed = 0;
    if (i + 1 < e->end && col_i32(&e->group, i + 1) == col_i32(&e->group, i)) {
        size_t nl;
        const char *nt = col_str(&e->type, i + 1, &nl);
        followed = is_call(nt, nl);
    }
    if (!*kept && followed && at->attaches) {
        static const char d[] = "its calls join the previous assistant message";
        if (chat_message_ptr(e, &e->ptr2, i)) return FALLBACK;
        lose_s(e, e->ptr2.p, e->ptr2.len, "message_merge", d);
        size_t al = at->ptr->len;
        puts_(st, at->ptr, "/tool_calls");
        lose_s(e, at->ptr->p, at->ptr->len, "message_merge", d);
        at->ptr->len = al;
    }
    if (*kept && assistant_text && at->bare_calls) {
        static const char d[] = "its text joins the previous message's calls on the way back";
        if (chat_message_ptr(e, &e->ptr2, i)) return FALLBACK;
        lose_s(e, e->ptr2.p, e->ptr2.len, "message_merge", d);
        lose_s(e, at->ptr->p, at->ptr->len, "message_merge", d);
    }
    size_t rl;
    const char *role = col_str(&e->role, i, &rl);
    *is_assistant = str_eq(role, rl, "assistant");
    return 0;
}

/* The Chat items from first on, written as the input list. */
static int chat_items(Enc *e, int64_t first, const Cid *cids) {
    St *st = &e->st;
    Buf *base = &e->base, *item = &e->aux[0];
    Attach at = {&e->scratch, 0, 0}; /* (scratch: a Chat row's attach buffer) */
    at.ptr->len = 0;
    puts_(st, &e->out, "\"input\":[");
    int nitems = 0;
    for (int64_t i = first; i < e->end; i++) {
        size_t tl;
        const char *t = col_str(&e->type, i, &tl);
        if (chat_item_ptr(e, base, i)) return FALLBACK;
        item->len = 0;
        int kept = 1, is_c = 0, is_assistant = 0;
        if (str_eq(t, tl, "message")) {
            if (chat_message(e, i, item, &kept, &at, &is_assistant)) return FALLBACK;
        } else if (is_call(t, tl)) {
            if (call(e, i, base, item, cids)) return FALLBACK;
            is_c = 1;
        } else if (cids && !cids[i - e->start].p) {
            lose_s(e, base->p, base->len, "orphan_output", "a tool output with no call to pair with is dropped");
            kept = 0;
        } else if (output(e, i, base, item, cids)) {
            return FALLBACK;
        }
        if (!kept) continue;
        if (nitems++) put(st, &e->out, ",", 1);
        put(st, &e->out, item->p, item->len);
        at.bare_calls = is_c && (at.bare_calls || !at.attaches);
        at.attaches = is_assistant || is_c;
        if (at.attaches && chat_message_ptr(e, at.ptr, i)) return FALLBACK;
    }
    put(st, &e->out, "]", 1);
    return 0;
}

/* One row; 0 (written) or FALLBACK (nothing kept: the caller rolls back). */
static int encode_row(Enc *e) {
    size_t n;
    const char *s = col_str(&e->source_format, e->r, &n);
    if (str_eq(s, n, "anthropic")) return anthropic_row(e);
    int idless;
    if (chat_row_taken(e, &idless)) return FALLBACK;
    Cid *cids = NULL; /* call ids when a call or output has none (call_ids.py) */
    int rc = FALLBACK;
    put(&e->st, &e->out, "{", 1);
    int64_t first = e->start;
    if (leading_instructions(e, &first)) goto done;
    if (idless) { /* CallIds(ctx): ids generated and paired, reported after the leading system message */
        cids = (Cid *)malloc((size_t)(e->end - e->start) * sizeof(Cid));
        if (!cids || call_ids(e, cids)) goto done;
    }
    if (chat_items(e, first, cids) || request_tail(e)) goto done;
    rc = 0;
done:
    free(cids);
    return rc;
}

extern const char chatlake_encode_responses_doc[];
const char chatlake_encode_responses_doc[] =
    "encode_responses(batch) -> (text, offsets, native, loss_row, path, path_offsets, kind, kind_offsets, "
    "detail, detail_offsets)\n\n"
    "Encode a canonical RecordBatch's Chat request rows to Responses request JSON (see "
    "pipeline/encoders/encode_rows.py); the same outputs as encode_chat.";

PyObject *chatlake_encode_responses(PyObject *self, PyObject *args);

PyObject *chatlake_encode_responses(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *batch;
    if (!PyArg_ParseTuple(args, "O", &batch)) return NULL;
    return run_encoder(batch, encode_row, "encode_responses");
}
