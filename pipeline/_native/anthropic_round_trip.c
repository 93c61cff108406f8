/*
 * The compiled anthropic_round_trip.report: what an Anthropic request body loses when it comes back
 * from Chat or Responses, named at its own paths (pipeline/encoders/anthropic_round_trip.py is the
 * specification, read side by side).
 *
 * Like the Python, it runs the Anthropic encoder's own turn rules (encode_anthropic.c's at_pair and
 * at_strip_final through anthropic_turns.h, not a copy) on segments built from the source row, so the
 * report is what the way back does by construction.
 *
 * anthropic_report() is for the encoders of Anthropic-source rows (encode_responses, encode_chat);
 * the entry point chatlake_anthropic_report runs it alone over a batch, so that the port is checked
 * against the Python report row by row (tests/native/test_anthropic_round_trip_differential.py).
 */
#include "encode_common.h"
#include "anthropic_turns.h"
#include "anthropic_round_trip.h"

#define DEFAULT_MAX_TOKENS "4096"

static int role_of(const char *s, size_t n) {
    if (str_eq(s, n, "assistant")) return R_ASSISTANT;
    if (str_eq(s, n, "system")) return R_SYSTEM;
    return R_USER; /* "user", and any role outside ROLES */
}

/* _image_survives: 1 / 0, or -1 (fall back: a value the Python would raise on). */
static int image_survives(Enc *e, int64_t j) {
    yyjson_doc *doc;
    if (col_json_obj(&e->bextra, j, &doc)) return -1;
    yyjson_val *src = doc ? yyjson_obj_get(yyjson_doc_get_root(doc), "source") : NULL;
    int ok = 0;
    if (src && yyjson_is_obj(src)) {
        yyjson_val *t = yyjson_obj_get(src, "type");
        if (is_str(t, "url")) {
            yyjson_val *u = yyjson_obj_get(src, "url");
            size_t ml;
            ok = u && yyjson_is_str(u) && at_image_source(yyjson_get_str(u), yyjson_get_len(u), &ml) != 0;
        } else if (is_str(t, "base64")) {
            yyjson_val *m = yyjson_obj_get(src, "media_type");
            if (m && (yyjson_is_arr(m) || yyjson_is_obj(m))) ok = -1; /* unhashable: `in frozenset` raises */
            else ok = m && yyjson_is_str(m) && at_image_media(yyjson_get_str(m), yyjson_get_len(m));
        }
    }
    if (doc) yyjson_doc_free(doc);
    return ok;
}

/* _message_seg: the blocks of message item i that come back (text with a non-blank text, user images). */
static int message_seg(Enc *e, int64_t i, int role, int64_t *out) {
    Buf *p = &e->p2;
    int64_t s = at_new_seg(e, S_TEXT, role, i);
    if (s < 0) return FALLBACK;
    *out = s;
    size_t fl;
    const char *form = col_str(&e->content_form, i, &fl);
    int64_t a, z;
    col_list(&e->content, i, &a, &z);
    if (str_eq(form, fl, "string")) {
        size_t n;
        const char *text = string_content(e, i, &n);
        if (!text || at_content_ptr(e, p, i, -1)) return FALLBACK;
        if (!at_blank(text, n)) {
            if (at_text_blk(e, text, n, p, NULL)) return FALLBACK;
            e->seg[s].nb = 1;
            e->seg[s].string = 1;
        } else {
            at_lose_p(e, p, "empty_text", "empty or blank text is not sent back to Anthropic");
        }
        return 0;
    }
    if (!str_eq(form, fl, "parts")) return 0;
    for (int64_t j = a; j < z; j++) {
        if (!col_valid(&e->blk_valid, j)) return FALLBACK;
        size_t tl, n;
        const char *t = col_str(&e->btype, j, &tl);
        if (at_content_ptr(e, p, i, j - a)) return FALLBACK;
        if (str_eq(t, tl, "text")) {
            const char *text = col_str(&e->btext, j, &n);
            if (text && !at_blank(text, n)) {
                if (at_text_blk(e, text, n, p, "/text")) return FALLBACK;
                e->seg[s].nb++;
            } else {
                at_lose_p(e, p, "empty_text", "an empty or blank text block is not sent back to Anthropic");
            }
        } else if (str_eq(t, tl, "image") && role == R_USER) {
            int ok = image_survives(e, j);
            if (ok < 0) return FALLBACK;
            if (ok) {
                Blk *b = at_new_blk(e); /* {"type": "image"}: not text (the prefill trim stops at it) */
                if (!b) return FALLBACK;
                b->type = B_FRAG;
                at_blk_path(e, b, p, NULL);
                e->seg[s].nb++;
            } else {
                at_lose_p(e, p, "image", "this image source does not convert back to an Anthropic image");
            }
        }
        /* every other block was reported by the forward encoder, which dropped it */
    }
    return 0;
}

/* _result_content: a tool_result's content comes back only where it has a non-blank text (or, when
 * the target kept them, an image). */
static int result_content(Enc *e, int64_t i, int media) {
    Buf *p = &e->p2;
    size_t fl;
    const char *form = col_str(&e->content_form, i, &fl);
    int64_t a, z;
    col_list(&e->content, i, &a, &z);
    if (str_eq(form, fl, "string")) {
        size_t n;
        const char *text = string_content(e, i, &n);
        if (!text || at_content_ptr(e, p, i, -1)) return FALLBACK;
        if (!n) at_lose_p(e, p, "content_form", "an empty output comes back without content");
        else if (at_blank(text, n)) at_lose_p(e, p, "empty_text", "a blank output comes back without content");
        return 0;
    }
    if (!str_eq(form, fl, "parts")) return 0;
    int64_t kept = 0;
    for (int64_t j = a; j < z; j++) {
        if (!col_valid(&e->blk_valid, j)) return FALLBACK;
        size_t tl, n;
        const char *t = col_str(&e->btype, j, &tl);
        if (str_eq(t, tl, "text")) {
            const char *text = col_str(&e->btext, j, &n);
            if (text && !at_blank(text, n)) {
                kept++;
            } else {
                if (at_content_ptr(e, p, i, j - a)) return FALLBACK;
                at_lose_p(e, p, "empty_text", "an empty or blank text block is not sent back");
            }
        } else if (str_eq(t, tl, "image") && media) {
            int ok = image_survives(e, j);
            if (ok < 0) return FALLBACK;
            kept += ok;
        } else if (str_eq(t, tl, "tool_reference")) {
            yyjson_doc *doc;
            if (col_json_obj(&e->bextra, j, &doc)) return FALLBACK;
            yyjson_val *name = doc ? yyjson_obj_get(yyjson_doc_get_root(doc), "tool_name") : NULL;
            if (name && yyjson_is_str(name)) kept++; /* its text placeholder comes back */
            if (doc) yyjson_doc_free(doc);
        }
    }
    if (!kept) {
        if (at_content_ptr(e, p, i, -1)) return FALLBACK;
        at_lose_p(e, p, "content_form", "no block of this output comes back: no content");
    }
    return 0;
}

/* _request_fields: max_tokens (a positive integer, else the default) and no other top-level field
 * comes back. */
static int request_fields(Enc *e) {
    St *st = &e->st;
    yyjson_doc *doc;
    if (col_json_obj(&e->extra, e->r, &doc)) return FALLBACK;
    yyjson_val *root = doc ? yyjson_doc_get_root(doc) : NULL;
    yyjson_val *limit = root ? yyjson_obj_get(root, "max_tokens") : NULL;
    int usable = 0;
    if (limit && yyjson_is_raw(limit)) /* an integer of at least 1 */
        usable = orjson_positive_int(yyjson_get_raw(limit), yyjson_get_len(limit), NULL);
    if (!usable)
        lose_s(e, "/max_tokens", 11, "filled_default", "no usable max_tokens: the way back sets " DEFAULT_MAX_TOKENS);
    if (root) {
        size_t idx, max;
        yyjson_val *k, *v;
        Buf *p = &e->p2, *d = &e->p3;
        yyjson_obj_foreach(root, idx, max, k, v) {
            if (key_is(k, "max_tokens")) continue;
            if (key_is(k, "stop_sequences") && stop_fits(v)) continue; /* Chat's stop: the same list back */
            p->len = 0;
            put_ptr(st, p, yyjson_get_str(k), yyjson_get_len(k));
            if (at_has_loss_at(e, p->p, p->len, e->loss0)) continue;
            d->len = 0;
            put(st, d, "'", 1);
            put(st, d, yyjson_get_str(k), yyjson_get_len(k));
            puts_(st, d, "' is carried, but does not come back to Anthropic");
            lose(e, p->p, p->len, "request_field", d->p, d->len);
        }
        yyjson_doc_free(doc);
    }
    return 0;
}

/* _system: a blank or null system does not come back. */
static int system_(Enc *e) {
    size_t fl;
    const char *form = col_str(&e->instr_form, e->r, &fl);
    if (str_eq(form, fl, "string")) {
        int64_t a, z;
        col_list(&e->instr_content, e->r, &a, &z);
        size_t n;
        const char *text = a < z ? col_str(&e->instr_text, a, &n) : NULL;
        if (!text) return FALLBACK;
        if (at_blank(text, n)) lose_s(e, "/system", 7, "empty_text", "a blank system prompt does not come back");
    } else if (str_eq(form, fl, "null")) {
        lose_s(e, "/system", 7, "content_form", "an explicit null system does not come back");
    }
    return 0;
}

static void lose_group(Enc *e, int32_t g, const char *kind, const char *detail) {
    Buf *p = &e->p2;
    p->len = 0;
    puts_(&e->st, p, "/messages/");
    put_i64(&e->st, p, g);
    at_lose_p(e, p, kind, detail);
}

/* _segments of the report: a segment per source message and per tool_use / tool_result, as the
 * Anthropic encoder would build them from the rows that come back. */
static int report_segments(Enc *e, int media_in_results) {
    for (int64_t i = e->start; i < e->end; i++) {
        size_t tl, rl, n;
        const char *t = col_str(&e->type, i, &tl);
        int64_t s;
        if (str_eq(t, tl, "message")) {
            const char *role = col_str(&e->role, i, &rl);
            if (message_seg(e, i, role_of(role, rl), &s)) return FALLBACK;
        } else if (str_eq(t, tl, "function_call") || str_eq(t, tl, "function_call_output")) {
            int call = tl == strlen("function_call");
            if (!call && result_content(e, i, media_in_results)) return FALLBACK;
            const char *cid = col_str(&e->call_id, i, &n);
            if (!cid) return FALLBACK; /* ids the forward encoder generated: not modelled here */
            s = at_new_seg(e, call ? S_CALL : S_RESULT, call ? R_ASSISTANT : R_USER, i);
            if (s < 0) return FALLBACK;
            e->seg[s].cid = cid;
            e->seg[s].cid_len = n;
        }
    }
    return 0;
}

/* _leading_system: the leading system segments of the emitted items (their indexes into lead, as
 * at_pair uses ix), each with its loss; then every other non-empty segment grouped into turns. */
static int report_turns(Enc *e, const uint8_t *emitted, Buf *lead, int64_t *nlead) {
    lead->len = 0;
    *nlead = 0;
    for (int64_t s = 0; s < e->nseg; s++) {
        Seg *g = &e->seg[s];
        if (emitted && !emitted[g->i - e->start]) continue;
        if (g->role != R_SYSTEM) break;
        put(&e->st, lead, &s, sizeof s);
        (*nlead)++;
        lose_group(e, col_i32(&e->group, g->i), "system_position", "a leading system message comes back as /system");
    }
    if (*nlead) lose_s(e, "/system", 7, "system_position", "leading system messages join the top-level system");
    for (int64_t s = 0; s < e->nseg; s++) {
        Seg *g = &e->seg[s];
        if (!g->nb && g->kind == S_TEXT) continue;
        if (e->st.oom) return FALLBACK;
        int is_lead = 0;
        for (int64_t q = 0; q < *nlead; q++) is_lead |= ((const int64_t *)lead->p)[q] == s;
        if (!is_lead && at_group(e, s)) return FALLBACK;
    }
    return 0;
}

/* Is a segment of message group g in turn k before position q (q < 0: anywhere in it)? */
static int turn_has_group(Enc *e, int64_t k, int64_t q_end, int32_t g) {
    int64_t n = q_end < 0 ? e->turn[k].n : q_end;
    for (int64_t q = 0; q < n; q++)
        if (col_i32(&e->group, e->seg[e->turn[k].s[q]].i) == g) return 1;
    return 0;
}

/* where: each source message, in the order it first comes back, and the turns its blocks are in:
 * split across turns, or in a turn of the other role. */
static void split_losses(Enc *e) {
    for (int64_t k = 0; k < e->nturn; k++) {
        for (int64_t q = 0; q < e->turn[k].n; q++) {
            int32_t g = col_i32(&e->group, e->seg[e->turn[k].s[q]].i);
            int seen = turn_has_group(e, k, q, g); /* first appearance only */
            for (int64_t k2 = 0; k2 < k && !seen; k2++) seen = turn_has_group(e, k2, -1, g);
            if (seen) continue;
            int64_t first = k, split = 0, last_i = -1;
            for (int64_t k2 = k; k2 < e->nturn; k2++)
                for (int64_t q2 = 0; q2 < e->turn[k2].n; q2++) {
                    int64_t i2 = e->seg[e->turn[k2].s[q2]].i;
                    if (col_i32(&e->group, i2) != g) continue;
                    if (k2 != first) split = 1;
                    last_i = i2; /* roles[ptr]: the last segment's item role wins */
                }
            if (split) {
                lose_group(e, g, "message_split", "its blocks come back as separate messages (by role)");
                continue;
            }
            size_t rl;
            const char *role = col_str(&e->role, last_i, &rl);
            int r = str_eq(role, rl, "user") ? R_USER : str_eq(role, rl, "assistant") ? R_ASSISTANT : -1;
            if (r >= 0 && e->turn[first].role != r)
                lose_group(e, g, "message_split", "it comes back as a message of the other role");
        }
    }
}

/* kept = where | leading: a message with nothing kept and no loss at its pointer yet. */
static void vanished_losses(Enc *e, const int64_t *leads, int64_t nlead) {
    Buf *p = &e->p3;
    for (int64_t i = e->start; i < e->end; i++) {
        int32_t g = col_i32(&e->group, i);
        int kept = 0;
        for (int64_t k = 0; k < e->nturn && !kept; k++) kept = turn_has_group(e, k, -1, g);
        for (int64_t q = 0; q < nlead && !kept; q++) kept = col_i32(&e->group, e->seg[leads[q]].i) == g;
        if (kept) continue;
        p->len = 0;
        puts_(&e->st, p, "/messages/");
        put_i64(&e->st, p, g);
        if (at_has_loss_at(e, p->p, p->len, e->loss0)) continue;
        at_lose_p(e, p, "content_form", "nothing of this message comes back to Anthropic");
    }
}

static int report(Enc *e, int media_in_results, const uint8_t *emitted) {
    size_t n;
    /* every item sits in a message (message_ptr is /messages/G): compare messages by group */
    for (int64_t i = e->start; i < e->end; i++) {
        const char *sec = col_str(&e->section, i, &n);
        if (!str_eq(sec, n, "messages") || !col_valid(&e->group, i)) return FALLBACK;
    }
    e->nblk = e->nseg = e->nturn = e->nix = 0;
    e->paths.len = 0;
    if (request_fields(e) || system_(e) || report_segments(e, media_in_results)) return FALLBACK;
    Buf *lead = &e->kb; /* the leading system segments (at_pair uses ix) */
    int64_t nlead;
    if (report_turns(e, emitted, lead, &nlead) || at_pair(e) || at_strip_final(e)) return FALLBACK;
    if (e->st.oom) return FALLBACK;
    for (int64_t k = 0; k < e->nturn; k++) { /* the messages _merge_adjacent joined */
        Turn *t = &e->turn[k];
        for (int64_t q = 0; q + 1 < t->n; q++) {
            int32_t ga = col_i32(&e->group, e->seg[t->s[q]].i), gb = col_i32(&e->group, e->seg[t->s[q + 1]].i);
            if (ga == gb) continue;
            lose_group(e, gb, "message_merge", "comes back joined to the previous message of the same role");
            lose_group(e, ga, "message_merge", "the next message of the same role comes back joined to it");
        }
    }
    split_losses(e);
    vanished_losses(e, (const int64_t *)lead->p, nlead);
    return e->st.oom ? FALLBACK : 0;
}


int anthropic_report(Enc *e, int media_in_results, const uint8_t *emitted) {
    int chat = e->chat, anthropic = e->anthropic;
    e->anthropic = 1; /* the pointers are the Anthropic source's while the turn rules run */
    e->chat = 0;
    int rc = report(e, media_in_results, emitted);
    e->anthropic = anthropic;
    e->chat = chat;
    return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* Ctx helpers of an Anthropic source, for the encoders of its rows                              */

int at_lose_wrapper(Enc *e, int64_t i) {
    size_t n;
    const char *x = col_str(&e->wrapper, i, &n);
    if (!x) return 0;
    yyjson_doc *doc = parse(x, n);
    if (!doc) return FALLBACK;
    yyjson_val *root = yyjson_doc_get_root(doc);
    Buf *base = &e->p2, *d = &e->p3;
    if (!yyjson_is_obj(root) || at_message_ptr(e, base, i)) {
        yyjson_doc_free(doc);
        return FALLBACK;
    }
    size_t bl = base->len, idx, max;
    yyjson_val *k, *v;
    yyjson_obj_foreach(root, idx, max, k, v) {
        base->len = bl;
        put_ptr(&e->st, base, yyjson_get_str(k), yyjson_get_len(k));
        d->len = 0;
        puts_(&e->st, d, "message key '");
        put(&e->st, d, yyjson_get_str(k), yyjson_get_len(k));
        puts_(&e->st, d, "' has no slot");
        lose(e, base->p, base->len, key_is(k, "id") ? "item_id" : "unknown_field", d->p, d->len);
    }
    yyjson_doc_free(doc);
    return 0;
}

int at_tool_reference(Enc *e, int64_t j, Buf *path, Buf *text) {
    yyjson_doc *doc;
    if (col_json_obj(&e->bextra, j, &doc)) return -1;
    yyjson_val *name = doc ? yyjson_obj_get(yyjson_doc_get_root(doc), "tool_name") : NULL;
    int got = 0;
    if (name && yyjson_is_str(name)) {
        Buf *d = &e->p3;
        d->len = 0;
        puts_(&e->st, d, "written as the text '[tool_reference: ");
        put(&e->st, d, yyjson_get_str(name), yyjson_get_len(name));
        puts_(&e->st, d, "]'");
        lose(e, path->p, path->len, "tool_reference", d->p, d->len);
        static const char *const carried[] = {"type", "tool_name", NULL};
        text->len = 0;
        puts_(&e->st, text, "[tool_reference: ");
        put(&e->st, text, yyjson_get_str(name), yyjson_get_len(name));
        put(&e->st, text, "]", 1);
        got = lose_block_keys(e, j, path, carried) ? -1 : 1;
    }
    if (doc) yyjson_doc_free(doc);
    return got;
}

int at_image_url(Enc *e, int64_t j, Buf *path, Buf *url) {
    St *st = &e->st;
    yyjson_doc *doc;
    if (col_json_obj(&e->bextra, j, &doc)) return -1;
    yyjson_val *src = doc ? yyjson_obj_get(yyjson_doc_get_root(doc), "source") : NULL;
    int got = 0;
    if (src && yyjson_is_obj(src)) {
        yyjson_val *t = yyjson_obj_get(src, "type");
        yyjson_val *u = yyjson_obj_get(src, "url");
        yyjson_val *media = yyjson_obj_get(src, "media_type");
        yyjson_val *data = yyjson_obj_get(src, "data");
        int is_url = is_str(t, "url") && u && yyjson_is_str(u);
        int is_b64 = !is_url && is_str(t, "base64") && media && yyjson_is_str(media) && data && yyjson_is_str(data);
        if (is_url || is_b64) {
            static const char *const url_keys[] = {"type", "url", NULL};
            static const char *const b64_keys[] = {"type", "media_type", "data", NULL};
            size_t pl = path->len, idx, max;
            yyjson_val *k, *v;
            Buf *d = &e->p3;
            yyjson_obj_foreach(src, idx, max, k, v) {
                if (key_in(k, is_url ? url_keys : b64_keys)) continue;
                path->len = pl;
                puts_(st, path, "/source");
                put_ptr(st, path, yyjson_get_str(k), yyjson_get_len(k));
                d->len = 0;
                puts_(st, d, "image source '");
                put(st, d, yyjson_get_str(k), yyjson_get_len(k));
                puts_(st, d, "' has no slot in a URL");
                lose(e, path->p, path->len, "image", d->p, d->len);
            }
            path->len = pl;
            if (is_url && yyjson_get_len(u) >= 5 && memcmp(yyjson_get_str(u), "data:", 5) == 0) {
                puts_(st, path, "/source");
                lose_s(e, path->p, path->len, "image", "a 'url' source holding a data: URL comes back as base64");
                path->len = pl;
            }
            url->len = 0;
            if (is_url) {
                put(st, url, yyjson_get_str(u), yyjson_get_len(u));
            } else {
                puts_(st, url, "data:");
                put(st, url, yyjson_get_str(media), yyjson_get_len(media));
                puts_(st, url, ";base64,");
                put(st, url, yyjson_get_str(data), yyjson_get_len(data));
            }
            got = 1;
        }
    }
    if (doc) yyjson_doc_free(doc);
    return got;
}

/* ------------------------------------------------------------------------------------------ */
/* The report alone over a batch (the differential test's entry point)                          */

static int report_row(Enc *e, int media) {
    size_t n;
    const char *sf = col_str(&e->source_format, e->r, &n);
    if (!str_eq(sf, n, "anthropic")) return FALLBACK;
    const char *rk = col_str(&e->record_kind, e->r, &n);
    if (!str_eq(rk, n, "request")) return FALLBACK;
    col_list(&e->items, e->r, &e->start, &e->end);
    for (int64_t i = e->start; i < e->end; i++) {
        size_t tl;
        if (!col_valid(&e->item_valid, i) || !col_str(&e->type, i, &tl)) return FALLBACK;
    }
    e->loss0 = e->nloss;
    return anthropic_report(e, media, NULL);
}

static int report_row_media(Enc *e) { return report_row(e, 1); }
static int report_row_no_media(Enc *e) { return report_row(e, 0); }

extern const char chatlake_anthropic_report_doc[];
const char chatlake_anthropic_report_doc[] =
    "anthropic_report(batch, media_in_results) -> (text, offsets, native, loss_row, path, path_offsets, kind, "
    "kind_offsets, detail, detail_offsets)\n\n"
    "The compiled anthropic_round_trip.report alone (no output text) over a canonical RecordBatch's Anthropic "
    "request rows whose calls and results all have ids, with every item emitted: the loss columns as "
    "encode_anthropic returns them (native 0: a row it hands back). For the differential test.";

PyObject *chatlake_anthropic_report(PyObject *self, PyObject *args);

PyObject *chatlake_anthropic_report(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *batch;
    int media;
    if (!PyArg_ParseTuple(args, "Op", &batch, &media)) return NULL;
    return run_encoder(batch, media ? report_row_media : report_row_no_media, "anthropic_report");
}
