/*
 * pipeline._native.encode_anthropic: the compiled Responses request body -> Anthropic Messages encoder.
 *
 * The specification is the per-record encoder (pipeline/encoders/to_anthropic.py with _context.py and
 * call_ids.py): for each canonical row it takes, this writes exactly the bytes of
 * orjson.dumps(convert_table(row, "anthropic")[0].record) and the row's losses in the order that
 * encoder reports them. It follows to_anthropic.encode step by step (leading system, segments, turn
 * grouping, call/result pairing, the final-prefill trim, vanished messages, rendering, ambiguous
 * neighbours, request fields) with the same data shapes (segments of blocks, turns of segments), so
 * the two can be read side by side.
 *
 * A row it cannot prove it encodes byte-identically is flagged and left to the per-record encoder
 * (pipeline/encoders/encode_rows.py); docs/internals/native-codec.md lists them: rows that are not
 * Responses request bodies, instructions given as parts or items, calls or outputs without a call
 * id, file parts where Anthropic takes documents, a tool whose type or name is not a string, JSON
 * values whose orjson text is not provably their stored text (encode_common.h: canonical).
 *
 * Input and output as encode.c (the Arrow C data interface in; text + int64 offsets, one byte per
 * row, and the loss columns out, handed to Python without a copy); the GIL is released for the walk.
 * The row state, column binding and batch loop are encode_common.h's (Enc, bind_all, run_encoder);
 * the turn rules' shapes (segments, turns, blocks) are anthropic_turns.h's.
 */
#include "encode_common.h"
#include "anthropic_turns.h"

static const char *const ROLE[] = {"user", "assistant", "system"};

/* ------------------------------------------------------------------------------------------ */
/* Losses                                                                                       */

void at_lose_p(Enc *e, const Buf *path, const char *kind, const char *detail) {
    lose(e, path->p, path->len, kind, detail, strlen(detail));
}

/* A loss at a fixed path with a fixed detail. */
static void lose_c(Enc *e, const char *path, const char *kind, const char *detail) {
    lose(e, path, strlen(path), kind, detail, strlen(detail));
}

static void lose_b(Enc *e, const Buf *path, const char *kind, const Buf *detail) {
    lose(e, path->p, path->len, kind, detail->p, detail->len);
}

/* Path of loss k (of the whole batch). */
static const char *loss_path(Enc *e, int64_t k, size_t *n) {
    const int64_t *off = (const int64_t *)e->path_off.p;
    *n = (size_t)(off[k + 1] - off[k]);
    return e->path.p + off[k];
}

/* Has this row a loss at exactly path p (losses [from, nloss))? */
int at_has_loss_at(Enc *e, const char *p, size_t n, int64_t from) {
    for (int64_t k = from; k < e->nloss; k++) {
        size_t m;
        const char *q = loss_path(e, k, &m);
        if (m == n && memcmp(p, q, n) == 0) return 1;
    }
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Small readers                                                                                */

/* Python's str.isspace for one code point (what str.strip and str.rstrip remove). */
static int py_space(uint32_t c) {
    return (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20) || c == 0x85 || c == 0xa0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f || c == 0x205f || c == 0x3000;
}

/* The code point that starts at s[k] (valid UTF-8: Arrow strings are) and its length. */
static uint32_t utf8_at(const char *s, size_t k, size_t *len) {
    const unsigned char *u = (const unsigned char *)s + k;
    if (u[0] < 0x80) return *len = 1, u[0];
    if (u[0] < 0xe0) return *len = 2, ((uint32_t)(u[0] & 0x1f) << 6) | (u[1] & 0x3f);
    if (u[0] < 0xf0) return *len = 3, ((uint32_t)(u[0] & 0x0f) << 12) | ((uint32_t)(u[1] & 0x3f) << 6) | (u[2] & 0x3f);
    return *len = 4, ((uint32_t)(u[0] & 0x07) << 18) | ((uint32_t)(u[1] & 0x3f) << 12) | ((uint32_t)(u[2] & 0x3f) << 6) |
                     (u[3] & 0x3f);
}

/* Length of s without its trailing Python whitespace (s.rstrip()). */
static size_t rstrip_len(const char *s, size_t n) {
    while (n) {
        size_t k = n - 1;
        while (k && ((unsigned char)s[k] & 0xc0) == 0x80) k--;
        size_t len;
        if (!py_space(utf8_at(s, k, &len))) break;
        n = k;
    }
    return n;
}

/* not s.strip(): empty or only whitespace */
int at_blank(const char *s, size_t n) { return rstrip_len(s, n) == 0; }

static int same(const char *a, size_t an, const char *b, size_t bn) {
    return (a == NULL) == (b == NULL) && (!a || (an == bn && memcmp(a, b, an) == 0));
}

/* An Anthropic request's /messages/G (anthropic_round_trip: its items all sit in messages). */
static int anthropic_message_ptr(Enc *e, Buf *b, int64_t i) {
    size_t n;
    const char *sec = col_str(&e->section, i, &n);
    if (!str_eq(sec, n, "messages") || !col_valid(&e->group, i)) return FALLBACK;
    b->len = 0;
    puts_(&e->st, b, "/messages/");
    put_i64(&e->st, b, col_i32(&e->group, i));
    return 0;
}

/* Ctx.item_ptr into b (reset first): Responses /input/G (or /input for the string shorthand), Chat
 * /messages/G, a call /messages/G/tool_calls/P; Anthropic /messages/G, a block /messages/G/content/P. */
int at_item_ptr(Enc *e, Buf *b, int64_t i) {
    size_t n;
    const char *sec = col_str(&e->section, i, &n);
    if (!sec) return FALLBACK;
    b->len = 0;
    if (e->anthropic) {
        if (anthropic_message_ptr(e, b, i)) return FALLBACK;
        if (col_valid(&e->part, i)) {
            puts_(&e->st, b, "/content/");
            put_i64(&e->st, b, col_i32(&e->part, i));
        }
        return 0;
    }
    if (e->chat) {
        if (!str_eq(sec, n, "messages") || !col_valid(&e->group, i)) return FALLBACK;
        puts_(&e->st, b, "/messages/");
        put_i64(&e->st, b, col_i32(&e->group, i));
        if (col_valid(&e->part, i)) {
            puts_(&e->st, b, "/tool_calls/");
            put_i64(&e->st, b, col_i32(&e->part, i));
        }
        return 0;
    }
    if (e->string_input && str_eq(sec, n, "input")) {
        puts_(&e->st, b, "/input");
        return 0;
    }
    if (!col_valid(&e->group, i)) return FALLBACK;
    put_ptr(&e->st, b, sec, n);
    put(&e->st, b, "/", 1);
    put_i64(&e->st, b, col_i32(&e->group, i));
    return 0;
}

int at_message_ptr(Enc *e, Buf *b, int64_t i) {
    if (e->anthropic) return anthropic_message_ptr(e, b, i);
    if (!e->chat) return at_item_ptr(e, b, i);
    size_t n;
    const char *sec = col_str(&e->section, i, &n);
    if (!str_eq(sec, n, "messages") || !col_valid(&e->group, i)) return FALLBACK;
    b->len = 0;
    puts_(&e->st, b, "/messages/");
    put_i64(&e->st, b, col_i32(&e->group, i));
    return 0;
}

/* Ctx.content_ptr(i, k) (k < 0: the content itself). */
int at_content_ptr(Enc *e, Buf *b, int64_t i, int64_t k) {
    if (e->anthropic) {
        size_t tl, fl;
        const char *t = col_str(&e->type, i, &tl);
        const char *form = col_str(&e->content_form, i, &fl);
        if (str_eq(t, tl, "message")) { /* its blocks sit in the message's content from `part` on */
            if (anthropic_message_ptr(e, b, i)) return FALLBACK;
            puts_(&e->st, b, "/content");
            if (str_eq(form, fl, "parts") && col_valid(&e->part, i)) {
                put(&e->st, b, "/", 1);
                put_i64(&e->st, b, col_i32(&e->part, i) + (k < 0 ? 0 : k));
            }
            return 0;
        }
        if (at_item_ptr(e, b, i)) return FALLBACK; /* a tool_result's own content list */
        puts_(&e->st, b, "/content");
        if (k >= 0) {
            put(&e->st, b, "/", 1);
            put_i64(&e->st, b, k);
        }
        return 0;
    }
    if (at_item_ptr(e, b, i)) return FALLBACK;
    size_t tl, fl;
    const char *t = col_str(&e->type, i, &tl);
    puts_(&e->st, b, !e->chat && ends_with(t, tl, "_output") ? "/output" : "/content");
    const char *form = col_str(&e->content_form, i, &fl);
    if (k >= 0 && str_eq(form, fl, "parts")) {
        put(&e->st, b, "/", 1);
        put_i64(&e->st, b, k);
    }
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Growing arrays                                                                               */

static int grow(Enc *e, void **p, int64_t *cap, int64_t need, size_t size) {
    if (need <= *cap) return 0;
    int64_t c = *cap ? *cap : 16;
    while (c < need) c *= 2;
    void *q = realloc(*p, (size_t)c * size);
    if (!q) {
        e->st.oom = 1;
        return FALLBACK;
    }
    memset((char *)q + (size_t)*cap * size, 0, (size_t)(c - *cap) * size); /* turns keep arrays: start NULL */
    *p = q;
    *cap = c;
    return 0;
}

Blk *at_new_blk(Enc *e) {
    if (grow(e, (void **)&e->blk, &e->capblk, e->nblk + 1, sizeof(Blk))) return NULL;
    Blk *b = &e->blk[e->nblk++];
    memset(b, 0, sizeof *b);
    return b;
}

void at_blk_path(Enc *e, Blk *b, const Buf *path, const char *suffix) {
    b->path_off = e->paths.len;
    put(&e->st, &e->paths, path->p, path->len);
    if (suffix) puts_(&e->st, &e->paths, suffix);
    b->path_len = e->paths.len - b->path_off;
}

int at_text_blk(Enc *e, const char *text, size_t n, const Buf *path, const char *suffix) {
    Blk *b = at_new_blk(e);
    if (!b) return FALLBACK;
    b->type = B_TEXT;
    b->text = text;
    b->len = n;
    at_blk_path(e, b, path, suffix);
    return 0;
}

/* Segment s's one block: the JSON fragment scratch[off, off + len) from source pointer path, with the
 * call id cid (a tool_use or tool_result segment). */
static int frag_seg(Enc *e, int64_t s, size_t off, size_t len, const Buf *path, const char *cid, size_t cl) {
    Blk *b = at_new_blk(e);
    if (!b) return FALLBACK;
    b->type = B_FRAG;
    b->off = off;
    b->flen = len;
    at_blk_path(e, b, path, NULL);
    e->seg[s].nb = 1;
    e->seg[s].cid = cid;
    e->seg[s].cid_len = cl;
    return 0;
}

int64_t at_new_seg(Enc *e, int kind, int role, int64_t i) {
    if (grow(e, (void **)&e->seg, &e->capseg, e->nseg + 1, sizeof(Seg))) return -1;
    Seg *s = &e->seg[e->nseg];
    memset(s, 0, sizeof *s);
    s->kind = kind;
    s->role = role;
    s->i = i;
    s->b0 = e->nblk;
    return e->nseg++;
}

int at_turn_push(Enc *e, Turn *t, int64_t s) {
    if (t->n + 1 > t->cap) {
        int64_t c = t->cap ? t->cap * 2 : 8;
        int64_t *q = (int64_t *)realloc(t->s, (size_t)c * sizeof(int64_t));
        if (!q) {
            e->st.oom = 1;
            return FALLBACK;
        }
        t->s = q;
        t->cap = c;
    }
    t->s[t->n++] = s;
    return 0;
}

static void turn_remove(Turn *t, int64_t s) {
    for (int64_t q = 0; q < t->n; q++) {
        if (t->s[q] != s) continue;
        memmove(t->s + q, t->s + q + 1, (size_t)(t->n - q - 1) * sizeof(int64_t));
        t->n--;
        return;
    }
}

/* A new empty turn at index k (the turn structs keep their arrays from row to row). */
Turn *at_turn_insert(Enc *e, int64_t k, int role) {
    if (grow(e, (void **)&e->turn, &e->capturn, e->nturn + 1, sizeof(Turn))) return NULL;
    Turn spare = e->turn[e->nturn];
    memmove(e->turn + k + 1, e->turn + k, (size_t)(e->nturn - k) * sizeof(Turn));
    e->turn[k] = spare;
    e->turn[k].n = 0;
    e->turn[k].role = role;
    e->nturn++;
    return &e->turn[k];
}

/* to_anthropic._group: segment s joins the last turn when it has the same role, else opens one. */
int at_group(Enc *e, int64_t s) {
    int role = e->seg[s].role;
    if (e->nturn && e->turn[e->nturn - 1].role == role) return at_turn_push(e, &e->turn[e->nturn - 1], s);
    Turn *t = at_turn_insert(e, e->nturn, role);
    return !t || at_turn_push(e, t, s);
}

static int ix_push(Enc *e, int64_t v) {
    if (grow(e, (void **)&e->ix, &e->capix, e->nix + 1, sizeof(int64_t))) return FALLBACK;
    e->ix[e->nix++] = v;
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Content blocks                                                                               */

/* Ctx.lose_part: a part the target cannot hold. */
static void lose_part(Enc *e, const Buf *path, const char *t, size_t tl, const char *where) {
    static const char *const map[][2] = {
        {"input_image", "image"}, {"image", "image"}, {"image_url", "image"}, {"input_file", "file"},
        {"document", "file"}, {"file", "file"}, {"input_audio", "audio"}, {"refusal", "refusal"},
    };
    const char *kind = "unknown_field";
    for (size_t k = 0; k < sizeof map / sizeof map[0]; k++)
        if (str_eq(t, tl, map[k][0])) kind = map[k][1];
    St *st = &e->st;
    e->tmp.len = 0;
    puts_(st, &e->tmp, article_quoted(t, tl));
    if (t) put(st, &e->tmp, t, tl);
    else puts_(st, &e->tmp, "None");
    puts_(st, &e->tmp, "' part has no equivalent in an Anthropic ");
    puts_(st, &e->tmp, where);
    puts_(st, &e->tmp, " message");
    lose_b(e, path, kind, &e->tmp);
}

/* A loss at path + suffix with a fixed detail (the pointer built in p3). */
static void lose_sub(Enc *e, const Buf *path, const char *suffix, const char *kind, const char *detail) {
    Buf *p = &e->p3;
    p->len = 0;
    put(&e->st, p, path->p, path->len);
    puts_(&e->st, p, suffix);
    at_lose_p(e, p, kind, detail);
}

/* A text block's explicit nulls (other than annotations and logprobs) and extra keys: no slot in an
 * Anthropic text block (t: its type, for the refusal's text key). */
static int text_keys_lost(Enc *e, int64_t j, const Buf *path, const char *t, size_t tl) {
    St *st = &e->st;
    Buf *p = &e->p3;
    if (col_valid(&e->bnulls, j)) {
        int64_t a, z;
        col_list(&e->bnulls, j, &a, &z);
        for (int64_t q = a; q < z; q++) {
            size_t n;
            const char *s = col_str(&e->bnull_names, q, &n);
            if (!s) return FALLBACK;
            if (str_eq(s, n, "annotations") || str_eq(s, n, "logprobs")) continue;
            p->len = 0;
            put(st, p, path->p, path->len);
            if (str_eq(s, n, "text") && str_eq(t, tl, "refusal")) put_ptr(st, p, "refusal", 7);
            else put_ptr(st, p, s, n);
            e->tmp.len = 0;
            puts_(st, &e->tmp, "explicit null '");
            put(st, &e->tmp, s, n);
            puts_(st, &e->tmp, "' dropped");
            lose_b(e, p, "unknown_field", &e->tmp);
        }
    }
    yyjson_doc *doc;
    if (col_json_obj(&e->bextra, j, &doc)) return FALLBACK;
    if (doc) {
        size_t idx, max;
        yyjson_val *k, *v;
        yyjson_obj_foreach(yyjson_doc_get_root(doc), idx, max, k, v) {
            const char *key = yyjson_get_str(k);
            size_t kl = yyjson_get_len(k);
            p->len = 0;
            put(st, p, path->p, path->len);
            put_ptr(st, p, key, kl);
            e->tmp.len = 0;
            puts_(st, &e->tmp, "'");
            put(st, &e->tmp, key, kl);
            puts_(st, &e->tmp, "' has no slot in an Anthropic text block");
            lose_b(e, p, str_eq(key, kl, "prompt_cache_breakpoint") ? "cache_control" : "unknown_field", &e->tmp);
        }
        yyjson_doc_free(doc);
    }
    return 0;
}

/* to_anthropic._text_block: block j (text or refusal) as a text Blk (with its path), or dropped. */
static int text_block(Enc *e, int64_t j, const Buf *path, const char *where, int *made) {
    St *st = &e->st;
    *made = 0;
    size_t tl;
    const char *t = col_str(&e->btype, j, &tl);
    int assistant = str_eq(where, strlen(where), "assistant");
    const char *back = e->chat ? "text" : assistant ? "output_text" : "input_text"; /* _text_type_back */
    Buf *p = &e->p3;
    if (str_eq(t, tl, "refusal")) {
        at_lose_p(e, path, "refusal", "a refusal became plain text (Anthropic has no refusal part)");
    } else if (!str_eq(t, tl, back)) {
        p->len = 0;
        put(st, p, path->p, path->len);
        puts_(st, p, "/type");
        e->tmp.len = 0;
        puts_(st, &e->tmp, article_quoted(t, tl));
        if (t) put(st, &e->tmp, t, tl);
        else puts_(st, &e->tmp, "None");
        puts_(st, &e->tmp, "' part comes back as '");
        puts_(st, &e->tmp, back);
        puts_(st, &e->tmp, "'");
        lose_b(e, p, "content_form", &e->tmp);
    }
    size_t al;
    const char *ann = col_str(&e->bann, j, &al);
    int ann_loss;
    if (!e->chat && assistant && !str_eq(t, tl, "refusal")) ann_loss = !str_eq(ann, al, "[]");
    else ann_loss = ann != NULL || has_null(&e->bnulls, &e->bnull_names, j, "annotations");
    if (ann_loss) lose_sub(e, path, "/annotations", "annotations", "Anthropic text blocks have no annotations");
    if (col_valid(&e->blogp, j) || has_null(&e->bnulls, &e->bnull_names, j, "logprobs"))
        lose_sub(e, path, "/logprobs", "logprobs", "Anthropic requests have no logprobs");
    if (text_keys_lost(e, j, path, t, tl)) return FALLBACK;
    size_t xl;
    const char *text = col_str(&e->btext, j, &xl);
    if (!text || at_blank(text, xl)) {
        at_lose_p(e, path, "empty_text", "Anthropic rejects empty or whitespace-only text blocks");
        return 0;
    }
    Blk *b = at_new_blk(e);
    if (!b) return FALLBACK;
    b->type = B_TEXT;
    b->text = text;
    b->len = xl;
    *made = 1;
    return 0;
}

/* to_anthropic._text_keys_on_image: a text part's keys on image block j (its text / annotations /
 * logprobs / citations columns, or an explicit null of those or of cache_control) have no slot in an
 * image block. */
static int text_keys_on_image(Enc *e, int64_t j, const Buf *path) {
    St *st = &e->st;
    Buf *p = &e->p3;
    static const char *const keys[] = {"text", "annotations", "logprobs", "citations", "cache_control"};
    Col *cols[] = {&e->btext, &e->bann, &e->blogp, &e->bcit, NULL};
    for (int q = 0; q < 5; q++) {
        if (!(cols[q] && col_valid(cols[q], j)) && !has_null(&e->bnulls, &e->bnull_names, j, keys[q])) continue;
        p->len = 0;
        put(st, p, path->p, path->len);
        put_ptr(st, p, keys[q], strlen(keys[q]));
        e->tmp.len = 0;
        puts_(st, &e->tmp, "'");
        puts_(st, &e->tmp, keys[q]);
        puts_(st, &e->tmp, "' has no slot in an Anthropic image block");
        lose_b(e, p, "unknown_field", &e->tmp);
    }
    return 0;
}

static const char *const IMAGE_MEDIA[] = {"image/jpeg", "image/png", "image/gif", "image/webp", NULL};

int at_image_media(const char *s, size_t n) {
    for (const char *const *m = IMAGE_MEDIA; *m; m++)
        if (str_eq(s, n, *m)) return 1;
    return 0;
}

/* to_anthropic.image_source's decision: 1 for a data URL "data:<media>;base64,<data>" of a media type
 * Anthropic takes (*media_len: the media type's length, at u + 5), 2 for an http(s) URL, else 0. */
int at_image_source(const char *u, size_t n, size_t *media_len) {
    if (n >= 5 && memcmp(u, "data:", 5) == 0) {
        const char *comma = memchr(u, ',', n);
        if (!comma) return 0;
        const char *head = u + 5;
        size_t hn = (size_t)(comma - head);
        const char *semi = memchr(head, ';', hn);
        if (!semi || !str_eq(semi + 1, (size_t)(comma - semi - 1), "base64")) return 0;
        *media_len = (size_t)(semi - head);
        return at_image_media(head, *media_len);
    }
    return ((n >= 8 && memcmp(u, "https://", 8) == 0) || (n >= 7 && memcmp(u, "http://", 7) == 0)) ? 2 : 0;
}

/* An image key with no slot in Anthropic: key (prefix + name) split at "/" into pointer tokens. */
static void image_key_lost(Enc *e, const Buf *path, const char *prefix, const char *name, size_t nl) {
    St *st = &e->st;
    Buf *key = &e->kb, *p = &e->p3;
    key->len = 0;
    puts_(st, key, prefix);
    put(st, key, name, nl);
    p->len = 0;
    put(st, p, path->p, path->len);
    size_t a = 0; /* "/".join(pointer(p)[1:] for p in key.split("/")) */
    for (size_t q = 0; q <= key->len; q++) {
        if (q < key->len && key->p[q] != '/') continue;
        put_ptr(st, p, key->p + a, q - a);
        a = q + 1;
    }
    e->tmp.len = 0;
    puts_(st, &e->tmp, "image '");
    put(st, &e->tmp, key->p, key->len);
    puts_(st, &e->tmp, "' has no slot in Anthropic");
    lose_b(e, p, str_eq(key->p, key->len, "prompt_cache_breakpoint") ? "cache_control" : "image", &e->tmp);
}

/* to_anthropic._image_block: an input_image / image_url part as an image block (detail lost). */
static int image_block(Enc *e, int64_t j, const Buf *path, int *made) {
    St *st = &e->st;
    *made = 0;
    yyjson_doc *doc;
    if (col_json_obj(&e->bextra, j, &doc)) return FALLBACK;
    yyjson_val *root = doc ? yyjson_doc_get_root(doc) : NULL;
    yyjson_val *url = root ? yyjson_obj_get(root, "image_url") : NULL, *inner = NULL;
    if (e->chat) { /* Chat nests it: {"image_url": {"url": ..., "detail": ...}} */
        inner = url && yyjson_is_obj(url) ? url : NULL;
        url = inner ? yyjson_obj_get(inner, "url") : NULL;
    }
    /* image_source */
    size_t off = e->scratch.len;
    int ok = 0;
    if (url && yyjson_is_str(url)) {
        const char *u = yyjson_get_str(url);
        size_t n = yyjson_get_len(url);
        size_t ml = 0;
        int kind = at_image_source(u, n, &ml);
        if (kind == 1) {
            ok = 1;
            const char *comma = memchr(u, ',', n);
            puts_(st, &e->scratch, "{\"type\":\"image\",\"source\":{\"type\":\"base64\",\"media_type\":");
            put_json_str(st, &e->scratch, u + 5, ml);
            puts_(st, &e->scratch, ",\"data\":");
            put_json_str(st, &e->scratch, comma + 1, n - (size_t)(comma + 1 - u));
            puts_(st, &e->scratch, "}}");
        } else if (kind == 2) {
            ok = 1;
            puts_(st, &e->scratch, "{\"type\":\"image\",\"source\":{\"type\":\"url\",\"url\":");
            put_json_str(st, &e->scratch, u, n);
            puts_(st, &e->scratch, "}}");
        }
    }
    if (!ok) {
        at_lose_p(e, path, "image", "no data URL (jpeg/png/gif/webp) or http(s) URL Anthropic can take");
        if (doc) yyjson_doc_free(doc);
        return 0;
    }
    /* the keys with no slot: Chat's every one but the url; Responses' every one but image_url and an
       "auto" detail, and a missing detail (it comes back "auto") */
    int has_detail = 0;
    if (e->chat) {
        size_t idx, max;
        yyjson_val *k, *v;
        if (inner) {
            yyjson_obj_foreach(inner, idx, max, k, v) {
                if (!key_is(k, "url")) image_key_lost(e, path, "image_url/", yyjson_get_str(k), yyjson_get_len(k));
            }
        }
        yyjson_obj_foreach(root, idx, max, k, v) {
            if (!key_is(k, "image_url")) image_key_lost(e, path, "", yyjson_get_str(k), yyjson_get_len(k));
        }
        has_detail = 1;
    } else if (root) {
        size_t idx, max;
        yyjson_val *k, *v;
        yyjson_obj_foreach(root, idx, max, k, v) {
            if (key_is(k, "image_url")) continue;
            if (key_is(k, "detail")) {
                has_detail = 1;
                if (is_str(v, "auto")) continue;
            }
            image_key_lost(e, path, "", yyjson_get_str(k), yyjson_get_len(k));
        }
    }
    if (!has_detail) {
        lose_sub(e, path, "/detail", "image", "image 'detail' has no slot in Anthropic");
    }
    if (doc) yyjson_doc_free(doc);
    Blk *b = at_new_blk(e);
    if (!b) return FALLBACK;
    b->type = B_FRAG;
    b->off = off;
    b->flen = e->scratch.len - off;
    *made = 1;
    return 0;
}

/* to_anthropic._content_blocks: item i's content into seg's blocks (where: the Anthropic role, or
 * "tool" for an output's content). */
static int content_blocks(Enc *e, int64_t i, const char *where, int64_t s) {
    size_t fl;
    const char *form = col_str(&e->content_form, i, &fl);
    Buf *path = &e->p2;
    if (str_eq(form, fl, "string")) {
        size_t n;
        const char *text = string_content(e, i, &n);
        if (!text) return FALLBACK;
        if (at_content_ptr(e, path, i, -1)) return FALLBACK;
        if (!at_blank(text, n)) {
            if (at_text_blk(e, text, n, path, NULL)) return FALLBACK;
            e->seg[s].nb++;
            e->seg[s].string = 1;
        } else {
            at_lose_p(e, path, "empty_text", "Anthropic rejects empty or whitespace-only text");
        }
        return 0;
    }
    if (!str_eq(form, fl, "parts")) return 0;
    int64_t a, z;
    col_list(&e->content, i, &a, &z);
    int media_ok = str_eq(where, strlen(where), "user") || str_eq(where, strlen(where), "tool");
    for (int64_t j = a; j < z; j++) {
        if (!col_valid(&e->blk_valid, j)) return FALLBACK;
        if (at_content_ptr(e, path, i, j - a)) return FALLBACK;
        size_t tl;
        const char *t = col_str(&e->btype, j, &tl);
        int made = 0, text = 0;
        int text_type = !t || str_eq(t, tl, "input_text") || str_eq(t, tl, "output_text") || str_eq(t, tl, "text");
        int text_part = text_type || (str_eq(t, tl, "refusal") && str_eq(where, strlen(where), "assistant"));
        int media = media_ok && (str_eq(t, tl, "input_image") || str_eq(t, tl, "image_url"));
        if ((text_part || media) && col_valid(&e->bcache, j)) {
            /* to_anthropic._part: an OpenAI part's cache_control is not sent (a document block
               reports every key it does not carry itself) */
            Buf *p = &e->p3;
            p->len = 0;
            put(&e->st, p, path->p, path->len);
            puts_(&e->st, p, "/cache_control");
            at_lose_p(e, p, "cache_control", "'cache_control' is not carried to Anthropic");
        }
        if (text_part) {
            if (text_block(e, j, path, where, &made)) return FALLBACK;
            text = 1;
        } else if (media_ok && (str_eq(t, tl, "input_image") || str_eq(t, tl, "image_url"))) {
            if (text_keys_on_image(e, j, path) || image_block(e, j, path, &made)) return FALLBACK;
        } else if (media_ok && (str_eq(t, tl, "input_file") || str_eq(t, tl, "file"))) {
            return FALLBACK; /* documents: left to the per-record encoder */
        } else {
            lose_part(e, path, t, tl, where);
        }
        if (!made) continue;
        at_blk_path(e, &e->blk[e->nblk - 1], path, text ? "/text" : NULL);
        e->seg[s].nb++;
    }
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Items -> segments                                                                            */

/* to_anthropic._item_keys_lost: id, status, phase, namespace, name and unknown keys (skip: "name"
 * for calls, "output" for outputs). */
static int item_keys_lost(Enc *e, int64_t i, const char *skip) {
    St *st = &e->st;
    Buf *base = &e->p1, *p = &e->p3;
    if (at_item_ptr(e, base, i)) return FALLBACK;
    static const char *const fields[][2] = {
        {"id", "item_id"}, {"status", "status"}, {"phase", "phase"}, {"namespace", "namespace"}, {"name", "name"},
    };
    Col *cols[] = {&e->id, &e->status, &e->phase, &e->namespace_, &e->name};
    size_t tl;
    const char *t = col_str(&e->type, i, &tl);
    for (int q = 0; q < 5; q++) {
        const char *f = fields[q][0];
        if (skip && strcmp(skip, f) == 0) continue;
        if (!col_valid(cols[q], i) && !has_null(&e->inulls, &e->inull_names, i, f)) continue;
        p->len = 0;
        put(st, p, base->p, base->len);
        if (!(q == 0 && str_eq(t, tl, "message"))) {
            put(st, p, "/", 1);
            puts_(st, p, f);
        }
        e->tmp.len = 0;
        puts_(st, &e->tmp, "Anthropic has no ");
        puts_(st, &e->tmp, f);
        puts_(st, &e->tmp, " here");
        lose_b(e, p, fields[q][1], &e->tmp);
    }
    if (has_null(&e->inulls, &e->inull_names, i, "native_type"))
        at_lose_p(e, base, "content_form", "an explicit null type tag is not kept");
    yyjson_doc *doc;
    if (col_json_obj(&e->iextra, i, &doc)) return FALLBACK;
    if (!doc) return 0;
    size_t idx, max;
    yyjson_val *k, *v;
    yyjson_obj_foreach(yyjson_doc_get_root(doc), idx, max, k, v) {
        const char *key = yyjson_get_str(k);
        size_t kl = yyjson_get_len(k);
        if (skip && str_eq(key, kl, skip)) continue;
        p->len = 0;
        put(st, p, base->p, base->len);
        put_ptr(st, p, key, kl);
        e->tmp.len = 0;
        puts_(st, &e->tmp, "'");
        put(st, &e->tmp, key, kl);
        puts_(st, &e->tmp, "' has no slot in Anthropic");
        int reasoning = str_eq(key, kl, "reasoning_content") || str_eq(key, kl, "reasoning");
        lose_b(e, p, reasoning ? "reasoning" : "unknown_field", &e->tmp);
    }
    yyjson_doc_free(doc);
    return 0;
}

/* A Chat message's refusal field (base: the message's pointer): its loss, and a non-blank refusal
 * text appended to segment s as a text block. */
static int chat_refusal(Enc *e, int64_t i, const Buf *base, int64_t s) {
    St *st = &e->st;
    size_t n;
    const char *x = col_str(&e->iextra, i, &n);
    yyjson_doc *doc = x ? parse(x, n) : NULL;
    if (x && !doc) return FALLBACK;
    yyjson_val *refusal = doc ? yyjson_obj_get(yyjson_doc_get_root(doc), "refusal") : NULL;
    if (refusal) {
        Buf *p = &e->p3; /* the refusal's pointer, also its text block's */
        p->len = 0;
        put(st, p, base->p, base->len);
        puts_(st, p, "/refusal");
        at_lose_p(e, p, "refusal", "the refusal field became plain text (or was empty)");
        const char *rt = yyjson_is_str(refusal) ? yyjson_get_str(refusal) : NULL;
        size_t rn = rt ? yyjson_get_len(refusal) : 0;
        if (rt && !at_blank(rt, rn)) { /* a refusal message becomes a text message */
            at_lose_p(e, base, "refusal", "the refusal text was added to the message content");
            Blk *b = at_new_blk(e);
            if (!b) {
                yyjson_doc_free(doc);
                return FALLBACK;
            }
            b->type = B_TEXT;
            b->in_scratch = 1;
            b->off = e->scratch.len;
            put(st, &e->scratch, rt, rn);
            b->len = rn;
            at_blk_path(e, b, p, NULL);
            e->seg[s].nb++;
            e->seg[s].string = 0;
        }
    }
    if (doc) yyjson_doc_free(doc);
    return 0;
}

/* to_anthropic._message_seg; *out = the segment or -1 (dropped). */
static int message_seg(Enc *e, int64_t i, int64_t *out) {
    St *st = &e->st;
    *out = -1;
    size_t rl;
    const char *role = col_str(&e->role, i, &rl);
    Buf *base = &e->p1;
    if (at_item_ptr(e, base, i)) return FALLBACK;
    int ar = R_USER;
    if (!role || rl == 0) {
        ar = R_USER;
    } else if (str_eq(role, rl, "developer")) {
        at_lose_p(e, base, "developer_role", "Anthropic has no developer role; it became system");
        ar = R_SYSTEM;
    } else if (str_eq(role, rl, "assistant")) {
        ar = R_ASSISTANT;
    } else if (str_eq(role, rl, "system")) {
        ar = R_SYSTEM;
    } else if (!str_eq(role, rl, "user")) {
        Buf *p = &e->p3;
        p->len = 0;
        put(st, p, base->p, base->len);
        puts_(st, p, "/role");
        e->tmp.len = 0;
        puts_(st, &e->tmp, "role '");
        put(st, &e->tmp, role, rl);
        puts_(st, &e->tmp, "' has no equivalent; sent as user");
        lose_b(e, p, "unknown_field", &e->tmp);
    }
    int64_t s = at_new_seg(e, S_TEXT, ar, i);
    if (s < 0) return FALLBACK;
    if (content_blocks(e, i, ROLE[ar], s)) return FALLBACK;
    if (item_keys_lost(e, i, e->chat ? "refusal" : NULL)) return FALLBACK;
    if (at_item_ptr(e, base, i)) return FALLBACK;
    if (e->chat && chat_refusal(e, i, base, s)) return FALLBACK;
    if (e->seg[s].nb) {
        *out = s;
        return 0;
    }
    e->nseg--; /* nothing Anthropic can hold */
    if (e->chat && i + 1 < e->end && col_valid(&e->group, i + 1) && col_i32(&e->group, i + 1) == col_i32(&e->group, i)) {
        size_t tl, fl;
        const char *t = col_str(&e->type, i + 1, &tl);
        if (is_call(t, tl)) { /* a call-only message comes back with null content */
            const char *form = col_str(&e->content_form, i, &fl);
            if (!str_eq(form, fl, "null") && !str_eq(form, fl, "string")) {
                if (at_content_ptr(e, base, i, -1)) return FALLBACK;
                at_lose_p(e, base, "content_form", "content without text comes back as null");
            }
            return 0;
        }
    }
    at_lose_p(e, base, "content_form", "a message with no text Anthropic can hold is dropped");
    return 0;
}

/* to_anthropic.tool_input: the call's arguments as the tool_use input object, written to scratch. */
static int tool_input(Enc *e, int64_t i) {
    St *st = &e->st;
    Buf *path = &e->p3;
    if (at_item_ptr(e, path, i)) return FALLBACK;
    puts_(st, path, e->chat ? "/function/arguments" : "/arguments");
    size_t n;
    const char *raw = col_str(&e->arguments, i, &n);
    if (!raw) {
        at_lose_p(e, path, "argument_string", "missing arguments sent as {}");
        puts_(st, &e->scratch, "{}");
        return 0;
    }
    yyjson_doc *doc = yyjson_read_opts((char *)raw, n, YYJSON_READ_NUMBER_AS_RAW, NULL, NULL);
    yyjson_val *root = doc ? yyjson_doc_get_root(doc) : NULL;
    if (!root || !yyjson_is_obj(root)) {
        /* not JSON (yyjson and orjson both read strict RFC 8259) or not an object: kept as text */
        if (doc) yyjson_doc_free(doc);
        at_lose_p(e, path, "argument_string", "arguments are not a JSON object; wrapped as {'_raw': text}");
        puts_(st, &e->scratch, "{\"_raw\":");
        put_json_str(st, &e->scratch, raw, n);
        put(st, &e->scratch, "}", 1);
        return 0;
    }
    if (!canonical(root, 0)) {
        yyjson_doc_free(doc);
        return FALLBACK;
    }
    size_t off = e->scratch.len;
    put_value(st, &e->scratch, root);
    yyjson_doc_free(doc);
    if (e->scratch.len - off != n || memcmp(e->scratch.p + off, raw, n) != 0)
        at_lose_p(e, path, "argument_string", "arguments re-serialised: formatting is not kept");
    return 0;
}

/* Ctx.lose_chat_call_keys(i, base, "tool_use") and the missing type tag (to_anthropic._call_keys_lost
 * for Chat). */
static int chat_call_keys_lost(Enc *e, int64_t i) {
    St *st = &e->st;
    Buf *base = &e->p1;
    if (at_item_ptr(e, base, i)) return FALLBACK;
    size_t tl;
    const char *t = col_str(&e->type, i, &tl);
    if (lose_chat_call_keys(e, i, base, str_eq(t, tl, "custom_tool_call"), "' has no slot in tool_use")) return FALLBACK;
    if (!col_valid(&e->native_type, i)) {
        puts_(st, base, "/type");
        at_lose_p(e, base, "content_form", "a tool call without type comes back with one");
    }
    return 0;
}

/* to_anthropic._call_seg (a call id is there: id-less calls fall back). */
static int call_seg(Enc *e, int64_t i, int64_t *out) {
    St *st = &e->st;
    size_t tl, cl, nl;
    const char *t = col_str(&e->type, i, &tl);
    const char *cid = col_str(&e->call_id, i, &cl);
    if (!cid) return FALLBACK;
    Buf *base = &e->p1;
    if (at_item_ptr(e, base, i)) return FALLBACK;
    const char *name = col_str(&e->name, i, &nl);
    size_t off = e->scratch.len;
    puts_(st, &e->scratch, "{\"type\":\"tool_use\",\"id\":");
    put_json_str(st, &e->scratch, cid, cl);
    puts_(st, &e->scratch, ",\"name\":");
    put_json_str(st, &e->scratch, name ? name : "", nl);
    puts_(st, &e->scratch, ",\"input\":");
    if (str_eq(t, tl, "custom_tool_call")) {
        /* in Chat the call changes kind inside tool_calls, where calls have no key to align on */
        Buf *where = &e->p2;
        if (at_message_ptr(e, where, i)) return FALLBACK;
        if (e->chat) puts_(st, where, "/tool_calls");
        at_lose_p(e, where, "custom_tool", "a free-form call was wrapped as tool_use input {'input': text}");
        size_t il;
        const char *in = col_str(&e->input, i, &il);
        puts_(st, &e->scratch, "{\"input\":");
        put_json_str(st, &e->scratch, in ? in : "", il);
        put(st, &e->scratch, "}", 1);
    } else if (tool_input(e, i)) {
        return FALLBACK;
    }
    put(st, &e->scratch, "}", 1);
    if (!name) {
        if (at_item_ptr(e, base, i)) return FALLBACK;
        at_lose_p(e, base, "name", "a call without a tool name was sent with name ''");
    }
    if (e->chat ? chat_call_keys_lost(e, i) : item_keys_lost(e, i, "name")) return FALLBACK;
    int64_t s = at_new_seg(e, S_CALL, R_ASSISTANT, i);
    if (s < 0) return FALLBACK;
    if (at_item_ptr(e, base, i) || frag_seg(e, s, off, e->scratch.len - off, base, cid, cl)) return FALLBACK;
    *out = s;
    return 0;
}

/* A text block's text (in the table, or in scratch). */
static const char *blk_text(Enc *e, const Blk *b) { return b->in_scratch ? e->scratch.p + b->off : b->text; }

/* Write blocks [b0, b0 + nb) as a JSON list's elements into b. */
static void put_blocks(Enc *e, Buf *b, int64_t b0, int64_t nb, int first) {
    St *st = &e->st;
    for (int64_t q = b0; q < b0 + nb; q++) {
        if (!first || q > b0) put(st, b, ",", 1);
        Blk *k = &e->blk[q];
        if (k->type == B_TEXT) {
            puts_(st, b, "{\"type\":\"text\",\"text\":");
            put_json_str(st, b, blk_text(e, k), k->len);
            put(st, b, "}", 1);
        } else {
            put(st, b, e->scratch.p + k->off, k->flen);
        }
    }
}

/* Ctx.lose_fields for an output: a call's keys it had. */
static void output_fields_lost(Enc *e, int64_t i, const Buf *base) {
    St *st = &e->st;
    static const char *const fields[][2] = {
        {"arguments", "argument_string"}, {"input", "custom_tool"}, {"encrypted_content", "encrypted_reasoning"},
    };
    Col *cols[] = {&e->arguments, &e->input, &e->encrypted_content};
    Buf *p = &e->p3;
    for (int q = 0; q < 3; q++) {
        const char *f = fields[q][0];
        if (!col_valid(cols[q], i) && !has_null(&e->inulls, &e->inull_names, i, f)) continue;
        p->len = 0;
        put(st, p, base->p, base->len);
        put_ptr(st, p, f, strlen(f));
        e->tmp.len = 0;
        puts_(st, &e->tmp, "'");
        puts_(st, &e->tmp, f);
        puts_(st, &e->tmp, "' has no slot");
        lose_b(e, p, fields[q][1], &e->tmp);
    }
}

/* to_anthropic._result_seg (an id-less output here has no call to pair with: ids_ok checked). */
static int result_seg(Enc *e, int64_t i, int64_t *out) {
    St *st = &e->st;
    size_t tl, cl, fl;
    const char *t = col_str(&e->type, i, &tl);
    const char *cid = col_str(&e->call_id, i, &cl);
    Buf *base = &e->p1;
    if (at_item_ptr(e, base, i)) return FALLBACK;
    if (str_eq(t, tl, "custom_tool_call_output"))
        at_lose_p(e, base, "custom_tool", "a custom tool output comes back as a function output");
    Buf *frag = &e->tmp2; /* the block, copied to scratch at the end (content blocks write to scratch) */
    frag->len = 0;
    puts_(st, frag, "{\"type\":\"tool_result\",\"tool_use_id\":");
    put_json_str(st, frag, cid ? cid : "", cl); /* call_id or "" */
    const char *form = col_str(&e->content_form, i, &fl);
    Buf *cp = &e->p2;
    if (str_eq(form, fl, "string")) {
        size_t n;
        const char *text = string_content(e, i, &n);
        if (!text) return FALLBACK;
        if (!at_blank(text, n)) {
            puts_(st, frag, ",\"content\":");
            put_json_str(st, frag, text, n);
        } else if (n) {
            if (at_content_ptr(e, cp, i, -1)) return FALLBACK;
            at_lose_p(e, cp, "empty_text", "a whitespace-only output was sent without content");
        }
    } else if (str_eq(form, fl, "parts")) {
        int64_t s = at_new_seg(e, S_TEXT, R_USER, i); /* a throwaway segment for the blocks */
        if (s < 0) return FALLBACK;
        int64_t b0 = e->nblk;
        if (content_blocks(e, i, "tool", s)) return FALLBACK;
        int64_t nb = e->seg[s].nb;
        e->nseg--;
        if (nb) {
            puts_(st, frag, ",\"content\":[");
            put_blocks(e, frag, b0, nb, 1);
            put(st, frag, "]", 1);
        } else {
            if (at_content_ptr(e, cp, i, -1)) return FALLBACK;
            at_lose_p(e, cp, "content_form", "an output with no content Anthropic can hold");
        }
        e->nblk = b0;
    } else {
        /* a JSON value output sits in the item's extra_json (Responses) */
        size_t n;
        const char *x = e->chat ? NULL : col_str(&e->iextra, i, &n);
        yyjson_doc *doc = x ? parse(x, n) : NULL;
        if (x && !doc) return FALLBACK;
        yyjson_val *v = doc ? yyjson_obj_get(yyjson_doc_get_root(doc), "output") : NULL;
        if (at_content_ptr(e, cp, i, -1)) {
            if (doc) yyjson_doc_free(doc);
            return FALLBACK;
        }
        if (v) {
            e->tmp.len = 0;
            put_value(st, &e->tmp, v);
            puts_(st, frag, ",\"content\":");
            put_json_str(st, frag, e->tmp.p, e->tmp.len);
            at_lose_p(e, cp, "content_form", "a JSON value output was sent as its JSON text");
        } else {
            at_lose_p(e, cp, "content_form", "a null or absent output was sent without content");
        }
        if (doc) yyjson_doc_free(doc);
    }
    put(st, frag, "}", 1);
    /* a Responses output kept verbatim was sent above; on a Chat tool message it is a stray key */
    if (item_keys_lost(e, i, e->chat ? NULL : "output")) return FALLBACK;
    if (at_item_ptr(e, base, i)) return FALLBACK;
    output_fields_lost(e, i, base);
    int64_t s = at_new_seg(e, S_RESULT, R_USER, i);
    if (s < 0) return FALLBACK;
    size_t off = e->scratch.len;
    put(st, &e->scratch, frag->p, frag->len);
    if (frag_seg(e, s, off, frag->len, base, cid, cl)) return FALLBACK;
    *out = s;
    return 0;
}

int at_is_hosted(const char *t, size_t n) {
    return ends_with(t, n, "_call") || ends_with(t, n, "_call_output") || ends_with(t, n, "_tool_result") ||
           ends_with(t, n, "_tool_use") || (n >= 4 && memcmp(t, "mcp_", 4) == 0);
}

/* to_anthropic._dropped: items Anthropic cannot hold. */
static int dropped(Enc *e, int64_t i) {
    St *st = &e->st;
    size_t tl;
    const char *t = col_str(&e->type, i, &tl);
    Buf *base = &e->p1;
    if (at_item_ptr(e, base, i)) return FALLBACK;
    if (str_eq(t, tl, "reasoning")) {
        at_lose_p(e, base, "reasoning", "OpenAI reasoning has no valid Anthropic thinking signature");
        if (col_valid(&e->encrypted_content, i)) {
            puts_(st, base, "/encrypted_content");
            at_lose_p(e, base, "encrypted_reasoning", "opaque reasoning state dropped");
        }
    } else if (str_eq(t, tl, "compaction") || str_eq(t, tl, "compaction_trigger")) {
        at_lose_p(e, base, "compaction", "Anthropic has no equivalent of an OpenAI compaction item");
    } else if (str_eq(t, tl, "item_reference")) {
        at_lose_p(e, base, "unknown_item", "an item reference cannot be resolved here");
    } else if (at_is_hosted(t, tl)) {
        e->tmp.len = 0;
        put(st, &e->tmp, "'", 1);
        put(st, &e->tmp, t, tl);
        puts_(st, &e->tmp, "' has no equivalent in Anthropic");
        lose_b(e, base, "hosted_tool", &e->tmp);
    } else {
        /* other item types (additional_tools, configuration_update, program, anything new): the
           per-record encoder decides (to_anthropic is gaining rules for some of them) */
        return FALLBACK;
    }
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Turns: grouping, tool pairing, merging                                                       */

static int in_list(const int64_t *xs, int64_t n, int64_t v) {
    for (int64_t q = 0; q < n; q++)
        if (xs[q] == v) return 1;
    return 0;
}

/* _answer's search: ix[0 .. *ncalls) the calls of turn k (a snapshot), then ix[*ncalls ..) the
 * result each finds in a later turn; a call nobody answers is dropped with its loss. */
static int find_results(Enc *e, int64_t k, int64_t *ncalls) {
    Buf *p = &e->p1;
    e->nix = 0;
    for (int64_t q = 0; q < e->turn[k].n; q++)
        if (e->seg[e->turn[k].s[q]].kind == S_CALL && ix_push(e, e->turn[k].s[q])) return FALLBACK;
    *ncalls = e->nix;
    for (int64_t c = 0; c < *ncalls; c++) {
        Seg *call = &e->seg[e->ix[c]];
        int64_t hit = -1;
        for (int64_t u = k + 1; u < e->nturn && hit < 0; u++) {
            for (int64_t q = 0; q < e->turn[u].n; q++) {
                int64_t s = e->turn[u].s[q];
                Seg *r = &e->seg[s];
                if (r->kind == S_RESULT && !r->placed && same(r->cid, r->cid_len, call->cid, call->cid_len) &&
                    !in_list(e->ix + *ncalls, e->nix - *ncalls, s)) {
                    hit = s;
                    break;
                }
            }
        }
        if (hit < 0) {
            turn_remove(&e->turn[k], e->ix[c]);
            if (at_item_ptr(e, p, call->i)) return FALLBACK;
            at_lose_p(e, p, "unanswered_call", "a call without output is dropped");
        } else if (ix_push(e, hit)) {
            return FALLBACK;
        }
    }
    return 0;
}

/* _jumped: result s moves to the head of turn k + 1; a loss at each segment it now precedes
 * although it came after them (the other found results aside). */
static int jumped(Enc *e, int64_t k, int64_t s, const int64_t *found, int64_t nfound) {
    Buf *p = &e->p1;
    for (int64_t u = k + 1; u < e->nturn; u++) {
        for (int64_t q = 0; q < e->turn[u].n; q++) {
            int64_t o = e->turn[u].s[q];
            if (o == s) return 0;
            if (in_list(found, nfound, o)) continue;
            if (at_message_ptr(e, p, e->seg[o].i)) return FALLBACK; /* _answer names the message it jumped */
            at_lose_p(e, p, "tool_output_order", "a later tool output moved before this");
        }
    }
    return 0;
}

/* to_anthropic._answer: move turn k's calls' outputs to the front of the next user message; drop
 * calls nobody answers. */
static int answer(Enc *e, int64_t k) {
    Buf *p = &e->p1;
    int64_t ncalls;
    if (find_results(e, k, &ncalls)) return FALLBACK;
    int64_t nfound = e->nix - ncalls;
    if (!nfound) return 0;
    if (k + 1 == e->nturn || e->turn[k + 1].role != R_USER) {
        if (!at_turn_insert(e, k + 1, R_USER)) return FALLBACK;
    }
    int64_t *found = e->ix + ncalls;
    /* the results the head already starts with */
    Turn *head = &e->turn[k + 1];
    int64_t nin = 0;
    while (nin < head->n && e->seg[head->s[nin]].kind == S_RESULT) nin++;
    int64_t *in_place = NULL;
    if (nin) {
        in_place = (int64_t *)malloc((size_t)nin * sizeof(int64_t));
        if (!in_place) {
            e->st.oom = 1;
            return FALLBACK;
        }
        memcpy(in_place, head->s, (size_t)nin * sizeof(int64_t));
    }
    int rc = 0;
    for (int64_t f = 0; f < nfound && !rc; f++) {
        int64_t s = found[f];
        if (!in_list(in_place, nin, s)) {
            if (at_item_ptr(e, p, e->seg[s].i)) {
                rc = FALLBACK;
                break;
            }
            at_lose_p(e, p, "tool_output_order", "moved right after the message with its call");
            rc = jumped(e, k, s, found, nfound);
        }
        for (int64_t u = k + 1; u < e->nturn; u++) {
            if (in_list(e->turn[u].s, e->turn[u].n, s)) {
                turn_remove(&e->turn[u], s);
                break;
            }
        }
        e->seg[s].placed = 1;
    }
    free(in_place);
    if (rc) return rc;
    /* head[:0] = sorted(found, key=item) */
    for (int64_t a = 1; a < nfound; a++) {
        int64_t v = found[a], b = a;
        while (b > 0 && e->seg[found[b - 1]].i > e->seg[v].i) {
            found[b] = found[b - 1];
            b--;
        }
        found[b] = v;
    }
    head = &e->turn[k + 1];
    for (int64_t f = 0; f < nfound; f++)
        if (at_turn_push(e, head, 0)) return FALLBACK;
    memmove(head->s + nfound, head->s, (size_t)(head->n - nfound) * sizeof(int64_t));
    memcpy(head->s, found, (size_t)nfound * sizeof(int64_t));
    return 0;
}

/* to_anthropic._pair then _merge_adjacent. */
int at_pair(Enc *e) {
    Buf *p = &e->p1;
    for (int64_t k = 0; k < e->nturn; k++) {
        if (e->turn[k].role == R_ASSISTANT && answer(e, k)) return FALLBACK;
        Turn *t = &e->turn[k];
        int64_t w = 0;
        for (int64_t q = 0; q < t->n; q++) {
            Seg *s = &e->seg[t->s[q]];
            if (s->kind == S_RESULT && !s->placed) {
                if (at_item_ptr(e, p, s->i)) return FALLBACK;
                at_lose_p(e, p, "orphan_output", "an output with no call right before it");
                continue;
            }
            t->s[w++] = t->s[q];
        }
        t->n = w;
    }
    /* _merge_adjacent: drop empty turns, join neighbours of the same role (structs swapped, not
       overwritten, so each keeps its array) */
    int64_t w = 0;
    for (int64_t k = 0; k < e->nturn; k++) {
        Turn *t = &e->turn[k];
        if (!t->n) continue;
        if (w && e->turn[w - 1].role == t->role) {
            for (int64_t q = 0; q < t->n; q++)
                if (at_turn_push(e, &e->turn[w - 1], t->s[q])) return FALLBACK;
            continue;
        }
        if (w != k) {
            Turn tmp = e->turn[w];
            e->turn[w] = *t;
            e->turn[k] = tmp;
        }
        w++;
    }
    e->nturn = w;
    return 0;
}

/* to_anthropic._strip_final: a final assistant message is a prefill (no trailing whitespace). */
int at_strip_final(Enc *e) {
    Buf *p = &e->p1;
    while (e->nturn && e->turn[e->nturn - 1].role == R_ASSISTANT) {
        Turn *t = &e->turn[e->nturn - 1];
        Seg *s = &e->seg[t->s[t->n - 1]];
        if (!s->nb) return 0;
        Blk *b = &e->blk[s->b0 + s->nb - 1];
        if (b->type != B_TEXT) return 0;
        size_t n = rstrip_len(blk_text(e, b), b->len);
        if (n == b->len) return 0;
        p->len = 0;
        put(&e->st, p, e->paths.p + b->path_off, b->path_len);
        if (n) {
            b->len = n;
            at_lose_p(e, p, "whitespace", "trailing whitespace of the final assistant text removed");
            return 0;
        }
        at_lose_p(e, p, "empty_text", "whitespace-only final assistant text dropped");
        s->nb--;
        s->string = 0;
        if (!s->nb) {
            t->n--;
            if (s->kind == S_TEXT) {
                if (at_item_ptr(e, p, s->i)) return FALLBACK;
                at_lose_p(e, p, "content_form", "the message had only whitespace");
            }
        }
        if (!t->n) e->nturn--;
    }
    return 0;
}

/* to_anthropic._vanished (Responses: only whole messages, none has tool_calls). */
/* Is a segment left in the turns (a call, with calls_only) whose source message is at p? -1: fall back. */
static int ptr_kept(Enc *e, const Buf *p, int calls_only) {
    Buf *p2 = &e->p2;
    for (int64_t o = 0; o < e->nseg; o++) {
        if (!e->seg[o].alive || (calls_only && e->seg[o].kind != S_CALL)) continue;
        if (at_message_ptr(e, p2, e->seg[o].i)) return -1;
        if (p2->len == p->len && memcmp(p2->p, p->p, p->len) == 0) return 1;
    }
    return 0;
}

static int vanished(Enc *e) {
    for (int64_t k = 0; k < e->nturn; k++)
        for (int64_t q = 0; q < e->turn[k].n; q++) e->seg[e->turn[k].s[q]].alive = 1;
    Buf *p = &e->p1, *p3 = &e->p3;
    if (e->chat) { /* a kept message whose every call was dropped has lost its tool_calls key */
        for (int64_t s = 0; s < e->nseg; s++) {
            if (e->seg[s].kind != S_CALL) continue;
            if (at_message_ptr(e, p, e->seg[s].i)) return FALLBACK;
            int first = 1; /* each message once, in source order */
            for (int64_t o = 0; o < s && first; o++) {
                if (e->seg[o].kind != S_CALL) continue;
                if (at_message_ptr(e, p3, e->seg[o].i)) return FALLBACK;
                first = !(p3->len == p->len && memcmp(p3->p, p->p, p->len) == 0);
            }
            if (!first) continue;
            int with_calls = ptr_kept(e, p, 1), kept = ptr_kept(e, p, 0);
            if (with_calls < 0 || kept < 0) return FALLBACK;
            if (with_calls || !kept) continue;
            puts_(&e->st, p, "/tool_calls");
            at_lose_p(e, p, "unanswered_call", "none of its calls is left");
        }
    }
    static const char *const kinds[] = {"content_form", "unanswered_call", "orphan_output"};
    for (int64_t s = 0; s < e->nseg; s++) {
        if (e->seg[s].alive) continue;
        if (at_message_ptr(e, p, e->seg[s].i)) return FALLBACK;
        int kept = ptr_kept(e, p, 0); /* another segment of the same source message is left */
        if (kept < 0) return FALLBACK;
        if (kept || at_has_loss_at(e, p->p, p->len, e->loss0)) continue;
        at_lose_p(e, p, kinds[e->seg[s].kind], "nothing of this message is left");
    }
    return 0;
}

/* to_anthropic._shape_losses for Responses. */
static int shape_losses(Enc *e, Seg *s, int as_string) {
    Buf *p = &e->p1;
    int64_t i = s->i;
    if (s->string && !as_string) {
        if (at_content_ptr(e, p, i, -1)) return FALLBACK;
        at_lose_p(e, p, "content_form", "string content became a block in a list");
    }
    if (e->chat) return 0;
    if (at_item_ptr(e, p, i)) return FALLBACK;
    size_t nl;
    const char *nt = col_str(&e->native_type, i, &nl);
    if (s->role == R_ASSISTANT && !as_string) {
        if (!str_eq(nt, nl, "message")) at_lose_p(e, p, "content_form", "comes back as an output message (type 'message')");
        if (!col_valid(&e->id, i) && !has_null(&e->inulls, &e->inull_names, i, "id"))
            at_lose_p(e, p, "item_id", "Anthropic has no message id; it comes back with a generated one");
        if (!col_valid(&e->status, i) && !has_null(&e->inulls, &e->inull_names, i, "status")) {
            puts_(&e->st, p, "/status");
            at_lose_p(e, p, "status", "Anthropic has no status; it comes back 'completed'");
        }
    } else if (nt && !e->string_input) {
        at_lose_p(e, p, "content_form", "the message type tag is not kept (it comes back without one)");
    }
    return 0;
}

/* to_anthropic._render: merge and shape losses, then the message's JSON into out. */
static int render(Enc *e, Turn *t, Buf *out) {
    St *st = &e->st;
    Buf *pa = &e->p2, *pb = &e->p3;
    for (int64_t q = 0; q + 1 < t->n; q++) {
        Seg *a = &e->seg[t->s[q]], *b = &e->seg[t->s[q + 1]];
        if (at_message_ptr(e, pa, a->i) || at_message_ptr(e, pb, b->i)) return FALLBACK;
        if (pa->len == pb->len && memcmp(pa->p, pb->p, pa->len) == 0) continue;
        if (a->kind == S_TEXT && b->kind == S_TEXT) {
            at_lose_p(e, pb, "message_merge", "joined the previous message of the same role");
            at_lose_p(e, pa, "message_merge", "the next message's text joined this one");
        } else if (e->chat && b->kind == S_CALL && (a->kind == S_TEXT || a->kind == S_CALL)) {
            at_lose_p(e, pb, "message_merge", "its calls joined the previous assistant message");
            at_lose_p(e, pa, "message_merge", "the next message's calls joined this one");
        } else if (e->chat && a->kind == S_CALL && b->kind == S_TEXT) { /* one message: text + calls */
            at_lose_p(e, pb, "message_merge", "its text joined the previous message's calls");
            at_lose_p(e, pa, "message_merge", "the next message's text joined this one");
        }
    }
    Seg *s0 = &e->seg[t->s[0]];
    int as_string = t->n == 1 && s0->kind == S_TEXT && s0->string && s0->nb == 1;
    for (int64_t q = 0; q < t->n; q++)
        if (e->seg[t->s[q]].kind == S_TEXT && shape_losses(e, &e->seg[t->s[q]], as_string)) return FALLBACK;
    puts_(st, out, "{\"role\":\"");
    puts_(st, out, ROLE[t->role]);
    puts_(st, out, "\",\"content\":");
    if (as_string) {
        Blk *b = &e->blk[s0->b0];
        put_json_str(st, out, blk_text(e, b), b->len);
    } else {
        put(st, out, "[", 1);
        int first = 1;
        for (int64_t q = 0; q < t->n; q++) {
            Seg *s = &e->seg[t->s[q]];
            if (!s->nb) continue;
            put_blocks(e, out, s->b0, s->nb, first);
            first = 0;
        }
        put(st, out, "]", 1);
    }
    put(st, out, "}", 1);
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Ambiguous neighbours                                                                         */

/* One element of a source list: its pointer (in paths) and shape. */
typedef struct {
    size_t off, len;
    const char *kind, *role, *cid;
    size_t kind_len, role_len, cid_len;
} Elem;

/* Is p a proper prefix (at a "/") of a loss path among losses [loss0, above_end)? */
static int above(Enc *e, const char *p, size_t n, int64_t above_end) {
    for (int64_t k = e->loss0; k < above_end; k++) {
        size_t m;
        const char *q = loss_path(e, k, &m);
        if (m > n && q[n] == '/' && memcmp(p, q, n) == 0) return 1;
    }
    return 0;
}

/* to_anthropic's touched(p): a loss at, under or above p. */
static int touched(Enc *e, const char *p, size_t n, int64_t above_end) {
    if (at_has_loss_at(e, p, n, e->loss0) || above(e, p, n, above_end)) return 1;
    for (size_t m = 1; m < n; m++)
        if (p[m] == '/' && at_has_loss_at(e, p, m, e->loss0)) return 1;
    return 0;
}

static int elem_same(const Elem *a, const Elem *b) {
    return same(a->kind, a->kind_len, b->kind, b->kind_len) && same(a->role, a->role_len, b->role, b->role_len) &&
           same(a->cid, a->cid_len, b->cid, b->cid_len);
}

/* The neighbour search over one list of n elements (their pointers in buf). */
static int ambiguous_list(Enc *e, Elem *el, int64_t n, const Buf *buf, int64_t above_end) {
    Buf *p = &e->p1;
    e->nix = 0;
    for (int64_t q = 0; q < n; q++)
        if (at_has_loss_at(e, buf->p + el[q].off, el[q].len, e->loss0) && ix_push(e, q)) return FALLBACK;
    while (e->nix) {
        int64_t m0 = e->ix[--e->nix];
        for (int step = -1; step <= 1; step += 2) {
            for (int64_t m = m0 + step; m >= 0 && m < n; m += step) {
                const char *ptr = buf->p + el[m].off;
                if (!touched(e, ptr, el[m].len, above_end)) break;
                if (elem_same(&el[m], &el[m0]) && !at_has_loss_at(e, ptr, el[m].len, e->loss0)) {
                    p->len = 0;
                    put(&e->st, p, ptr, el[m].len);
                    at_lose_p(e, p, "message_merge",
                           "a dropped or reshaped neighbour of the same kind makes this element's boundary ambiguous");
                    if (ix_push(e, m)) return FALLBACK;
                }
            }
        }
    }
    return 0;
}

/* el grown to hold at least `need` elements (*cap: what it holds); FALLBACK when out of memory. */
static int elems_reserve(Enc *e, Elem **el, int64_t *cap, int64_t need) {
    if (need <= *cap) return 0;
    Elem *q = (Elem *)realloc(*el, (size_t)need * sizeof(Elem));
    if (!q) {
        e->st.oom = 1;
        return FALLBACK;
    }
    *el = q;
    *cap = need;
    return 0;
}

/* Element x cleared, its pointer p appended to buf (x's off and len name it there); x. */
static Elem *elem_at(Enc *e, Elem *x, Buf *buf, const Buf *p) {
    memset(x, 0, sizeof *x);
    x->off = buf->len;
    x->len = p->len;
    put(&e->st, buf, p->p, p->len);
    return x;
}

/* The element lists searched (one at a time, in e->tmp2's pointers): reused from list to list. */
typedef struct {
    Elem *el;
    int64_t cap;
    int64_t above_end; /* losses [loss0, above_end) are the row's before the search */
} Elems;

/* The item list (Chat calls aside: their tool_calls lists are searched on their own). */
static int ambiguous_items(Enc *e, Elems *L) {
    Buf *buf = &e->tmp2, *p = &e->p2;
    buf->len = 0;
    int64_t m = 0;
    for (int64_t i = e->start; i < e->end; i++) {
        size_t tl;
        const char *t = col_str(&e->type, i, &tl);
        if (e->chat && is_call(t, tl)) continue;
        if (at_message_ptr(e, p, i)) return FALLBACK;
        if (m && L->el[m - 1].len == p->len && memcmp(buf->p + L->el[m - 1].off, p->p, p->len) == 0) continue;
        Elem *x = elem_at(e, &L->el[m++], buf, p); /* every field is set below */
        if (str_eq(t, tl, "message")) x->kind = "message", x->kind_len = 7;
        else x->kind = col_str(&e->native_type, i, &x->kind_len);
        x->role = col_str(&e->role, i, &x->role_len);
        if (str_eq(x->role, x->role_len, "developer")) x->role = "system", x->role_len = 6;
        x->cid = col_str(&e->call_id, i, &x->cid_len);
    }
    return e->st.oom || ambiguous_list(e, L->el, m, buf, L->above_end);
}

/* Item i's content list (its parts; text kinds alike). */
static int ambiguous_content(Enc *e, Elems *L, int64_t i) {
    Buf *buf = &e->tmp2, *p = &e->p2;
    int64_t a, z;
    col_list(&e->content, i, &a, &z);
    if (elems_reserve(e, &L->el, &L->cap, z - a)) return FALLBACK;
    buf->len = 0;
    for (int64_t j = a; j < z; j++) {
        if (at_content_ptr(e, p, i, j - a)) return FALLBACK;
        Elem *x = elem_at(e, &L->el[j - a], buf, p);
        size_t bl;
        const char *bt = col_str(&e->btype, j, &bl);
        int text = !bt || str_eq(bt, bl, "input_text") || str_eq(bt, bl, "output_text") || str_eq(bt, bl, "text") ||
                   str_eq(bt, bl, "refusal");
        if (text) x->kind = "text", x->kind_len = 4;
        else x->kind = bt, x->kind_len = bl;
    }
    return e->st.oom || ambiguous_list(e, L->el, z - a, buf, L->above_end);
}

/* Chat: the tool_calls list of the message whose calls are items [i, z) (calls of one message are
 * contiguous items; the same message's calls further on are not modelled: FALLBACK). */
static int ambiguous_calls(Enc *e, Elems *L, int64_t i, int64_t z) {
    Buf *buf = &e->tmp2, *p = &e->p2;
    for (int64_t q = z; q < e->end; q++) {
        size_t tl;
        const char *t = col_str(&e->type, q, &tl);
        if (is_call(t, tl) && col_i32(&e->group, q) == col_i32(&e->group, i)) return FALLBACK;
    }
    if (elems_reserve(e, &L->el, &L->cap, z - i)) return FALLBACK;
    buf->len = 0;
    for (int64_t q = i; q < z; q++) {
        if (at_item_ptr(e, p, q)) return FALLBACK;
        Elem *x = elem_at(e, &L->el[q - i], buf, p);
        x->kind = "call", x->kind_len = 4;
    }
    return e->st.oom || ambiguous_list(e, L->el, z - i, buf, L->above_end);
}

/* to_anthropic._ambiguous_neighbours: the items, then each content list, then (Chat) each
 * message's tool_calls list. */
static int ambiguous(Enc *e) {
    if (e->nloss == e->loss0) return 0; /* no loss: nothing to search from */
    int64_t n = e->end - e->start;
    Elems L = {(Elem *)malloc((size_t)(n + 1) * sizeof(Elem)), n + 1, e->nloss};
    if (!L.el) {
        e->st.oom = 1;
        return FALLBACK;
    }
    int rc = ambiguous_items(e, &L);
    for (int64_t i = e->start; !rc && i < e->end; i++) {
        size_t tl, fl;
        const char *t = col_str(&e->type, i, &tl);
        const char *form = col_str(&e->content_form, i, &fl);
        if (str_eq(form, fl, "parts") && !str_eq(t, tl, "reasoning")) rc = ambiguous_content(e, &L, i);
    }
    for (int64_t i = e->start; !rc && e->chat && i < e->end;) {
        size_t tl;
        const char *t = col_str(&e->type, i, &tl);
        if (!is_call(t, tl)) {
            i++;
            continue;
        }
        int64_t z = i;
        while (z < e->end && (t = col_str(&e->type, z, &tl), is_call(t, tl)) &&
               col_i32(&e->group, z) == col_i32(&e->group, i))
            z++;
        rc = ambiguous_calls(e, &L, i, z);
        i = z;
    }
    free(L.el);
    return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* Request fields                                                                               */

static const char CUSTOM_SCHEMA[] =
    "{\"type\":\"object\",\"properties\":{\"input\":{\"type\":\"string\"}},\"required\":[\"input\"]}";

/* `x or ""` for a tool's name: a string, or "" for null / missing; anything else falls back. */
static int put_name(Enc *e, Buf *b, yyjson_val *v) {
    if (v && yyjson_is_str(v)) put_json_str(&e->st, b, yyjson_get_str(v), yyjson_get_len(v));
    else if (!v || yyjson_is_null(v)) puts_(&e->st, b, "\"\"");
    else return FALLBACK;
    return 0;
}

/* to_anthropic._function_tool (Responses: fn is the tool itself; Chat: its "function" object). */
static int function_tool(Enc *e, yyjson_val *tool, const Buf *tpath, Buf *b) {
    St *st = &e->st;
    Buf *p = &e->p3, *path = &e->kb;
    yyjson_val *fn = tool;
    path->len = 0;
    put(st, path, tpath->p, tpath->len);
    if (e->chat) {
        fn = yyjson_obj_get(tool, "function");
        if (fn && !yyjson_is_obj(fn)) fn = NULL; /* read as {} */
        puts_(st, path, "/function");
    }
    puts_(st, b, "{\"name\":");
    if (put_name(e, b, fn ? yyjson_obj_get(fn, "name") : NULL)) return FALLBACK;
    yyjson_val *d = fn ? yyjson_obj_get(fn, "description") : NULL;
    if (d && yyjson_is_str(d)) {
        puts_(st, b, ",\"description\":");
        put_value(st, b, d);
    } else if (d) {
        lose_sub(e, path, "/description", "tools", "a non-string description has no slot in Anthropic");
    }
    puts_(st, b, ",\"input_schema\":");
    yyjson_val *params = fn ? yyjson_obj_get(fn, "parameters") : NULL;
    if (params && yyjson_is_obj(params)) {
        put_value(st, b, params);
    } else {
        puts_(st, b, "{\"type\":\"object\"}");
        lose_sub(e, path, "/parameters", "tools", "missing parameters became an empty object schema");
    }
    yyjson_val *strict = fn ? yyjson_obj_get(fn, "strict") : NULL;
    if (strict && yyjson_is_bool(strict)) { /* carried both ways */
        puts_(st, b, yyjson_get_bool(strict) ? ",\"strict\":true" : ",\"strict\":false");
    } else if (e->chat ? strict != NULL : (!strict || !yyjson_is_null(strict))) {
        /* the way back writes Responses tools with strict null, Chat tools without strict */
        lose_sub(e, path, "/strict", "tools", "strict is not restored from Anthropic tools");
    }
    /* a Responses tool's boolean defer_loading: both tools have it */
    yyjson_val *defer = !e->chat && fn ? yyjson_obj_get(fn, "defer_loading") : NULL;
    if (defer && !yyjson_is_bool(defer)) defer = NULL;
    if (defer) puts_(st, b, yyjson_get_bool(defer) ? ",\"defer_loading\":true" : ",\"defer_loading\":false");
    static const char *const known[] = {"name", "description", "parameters", "strict", "type", NULL};
    static const char *const chat_known[] = {"type", "function", NULL};
    size_t idx, max;
    yyjson_val *k, *v;
    for (int pass = 0; pass < 2; pass++) { /* the function's keys, then (Chat) the tool's */
        yyjson_val *obj = pass ? (e->chat ? tool : NULL) : fn;
        if (!obj) continue;
        yyjson_obj_foreach(obj, idx, max, k, v) {
            if (key_in(k, pass ? chat_known : known)) continue;
            if (!pass && defer && key_is(k, "defer_loading")) continue;
            p->len = 0;
            if (pass) put(st, p, tpath->p, tpath->len);
            else put(st, p, path->p, path->len);
            put_ptr(st, p, yyjson_get_str(k), yyjson_get_len(k));
            e->tmp.len = 0;
            puts_(st, &e->tmp, "tool '");
            put(st, &e->tmp, yyjson_get_str(k), yyjson_get_len(k));
            puts_(st, &e->tmp, "' has no slot in Anthropic");
            lose_b(e, p, "tools", &e->tmp);
        }
    }
    put(st, b, "}", 1);
    return 0;
}

/* to_anthropic._tools' rules for one tool of a Responses or Chat source (a ToolFn). */
static int anthropic_tool(Enc *e, yyjson_val *tool, size_t idx, Buf *path, Buf *b, int *wrote) {
    St *st = &e->st;
    yyjson_val *t = yyjson_is_obj(tool) ? yyjson_obj_get(tool, "type") : NULL;
    if (t && !yyjson_is_str(t) && !yyjson_is_null(t)) return FALLBACK; /* the loss quotes Python's str */
    if (is_str(t, "function")) {
        *wrote = 1;
        return function_tool(e, tool, path, b);
    }
    if (is_str(t, "custom")) {
        yyjson_val *spec = e->chat ? yyjson_obj_get(tool, "custom") : tool;
        if (spec && !yyjson_is_obj(spec)) spec = NULL; /* read as {} */
        *wrote = 1;
        puts_(st, b, "{\"name\":");
        if (put_name(e, b, spec ? yyjson_obj_get(spec, "name") : NULL)) return FALLBACK;
        puts_(st, b, ",\"input_schema\":");
        puts_(st, b, CUSTOM_SCHEMA);
        yyjson_val *d = spec ? yyjson_obj_get(spec, "description") : NULL;
        if (d && yyjson_is_str(d)) {
            puts_(st, b, ",\"description\":");
            put_value(st, b, d);
        }
        yyjson_val *defer = !e->chat && spec ? yyjson_obj_get(spec, "defer_loading") : NULL;
        if (defer && yyjson_is_bool(defer))
            puts_(st, b, yyjson_get_bool(defer) ? ",\"defer_loading\":true" : ",\"defer_loading\":false");
        put(st, b, "}", 1);
        e->tmp.len = 0;
        puts_(st, &e->tmp, "custom tool ");
        put_i64(st, &e->tmp, (int64_t)idx);
        puts_(st, &e->tmp, " became a tool taking {'input': text}; format lost");
        lose(e, "/tools", 6, "tools", e->tmp.p, e->tmp.len);
        return 0;
    }
    const char *ts = t && yyjson_is_str(t) ? yyjson_get_str(t) : NULL;
    size_t tl = ts ? yyjson_get_len(t) : 0;
    e->tmp.len = 0;
    puts_(st, &e->tmp, article_quoted(ts, tl));
    if (ts) put(st, &e->tmp, ts, tl);
    else puts_(st, &e->tmp, "None");
    puts_(st, &e->tmp, "' tool has no equivalent in Anthropic");
    lose_b(e, path, "tools", &e->tmp);
    return 0;
}

/* to_anthropic._tools: `,"tools":[...]` into out (or nothing, with its loss). */
static int tools_json(Enc *e, Buf *out) {
    return write_tools(e, out, &e->p2, anthropic_tool, "no tool Anthropic can declare");
}

/* to_anthropic._tool_choice (write_tool_choice's one). */
static int anthropic_tool_choice(Enc *e, yyjson_val *raw, Buf *out) {
    St *st = &e->st;
    const char *simple = NULL;
    if (is_str(raw, "auto")) simple = "auto";
    else if (is_str(raw, "required")) simple = "any";
    else if (is_str(raw, "none")) simple = "none";
    if (simple) {
        puts_(st, out, ",\"tool_choice\":{\"type\":\"");
        puts_(st, out, simple);
        puts_(st, out, "\"}");
    } else {
        /* Responses keeps the name flat on the choice; Chat in its "function" object */
        yyjson_val *inner = yyjson_is_obj(raw) && e->chat ? yyjson_obj_get(raw, "function") : raw;
        yyjson_val *name = yyjson_is_obj(inner) ? yyjson_obj_get(inner, "name") : NULL;
        int ok = yyjson_is_obj(raw) && is_str(yyjson_obj_get(raw, "type"), "function") && yyjson_is_obj(inner) && name &&
                 yyjson_is_str(name);
        if (ok) {
            static const char *const keep[] = {"type", "name", NULL};
            static const char *const chat_keep[] = {"type", "function", NULL};
            size_t idx, max;
            yyjson_val *k, *v;
            yyjson_obj_foreach(raw, idx, max, k, v) {
                if (!key_in(k, e->chat ? chat_keep : keep)) ok = 0;
            }
            if (e->chat) {
                yyjson_obj_foreach(inner, idx, max, k, v) {
                    if (!key_in(k, keep)) ok = 0;
                }
            }
        }
        if (ok) {
            puts_(st, out, ",\"tool_choice\":{\"type\":\"tool\",\"name\":");
            put_value(st, out, name);
            put(st, out, "}", 1);
        } else {
            lose_c(e, "/tool_choice", "tools", "tool_choice has no equivalent in Anthropic");
        }
    }
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* One row                                                                                      */

/* to_anthropic._leading_system: the system/developer messages before the first item shown. */
static int64_t leading_end(Enc *e) {
    int64_t i = e->start;
    for (; i < e->end; i++) {
        size_t tl, rl;
        const char *t = col_str(&e->type, i, &tl);
        const char *role = col_str(&e->role, i, &rl);
        if (str_eq(t, tl, "message")) {
            if (!(str_eq(role, rl, "system") || str_eq(role, rl, "developer"))) break;
        } else if (is_call(t, tl) || is_output(t, tl)) {
            break;
        }
    }
    return i;
}

static int is_leading(Enc *e, int64_t i, int64_t lead_end) {
    size_t tl, rl;
    const char *t = col_str(&e->type, i, &tl);
    const char *role = col_str(&e->role, i, &rl);
    return i < lead_end && str_eq(t, tl, "message") && (str_eq(role, rl, "system") || str_eq(role, rl, "developer"));
}

/* to_anthropic._system: the top-level system written to sys (",\"system\":..." or nothing). */
static int system_json(Enc *e, int64_t lead_end, Buf *sys) {
    St *st = &e->st;
    size_t fl;
    const char *form = col_str(&e->instr_form, e->r, &fl);
    Buf *key = &e->p2;
    key->len = 0;
    puts_(st, key, "/instructions");
    int64_t b0 = e->nblk, strings = 0;
    if (str_eq(form, fl, "null")) at_lose_p(e, key, "content_form", "explicit null instructions dropped");
    if (str_eq(form, fl, "string")) {
        int64_t a, z;
        col_list(&e->instr_content, e->r, &a, &z);
        if (z <= a || !col_valid(&e->instr_blk_valid, a)) return FALLBACK;
        size_t n;
        const char *text = col_str(&e->instr_text, a, &n);
        if (!text) return FALLBACK;
        if (at_blank(text, n)) {
            at_lose_p(e, key, "empty_text", "empty instructions produce no system prompt");
        } else {
            Blk *b = at_new_blk(e);
            if (!b) return FALLBACK;
            b->type = B_TEXT;
            b->text = text;
            b->len = n;
            strings++;
        }
    }
    int64_t any = 0;
    for (int64_t i = e->start; i < lead_end; i++) any += is_leading(e, i, lead_end);
    Buf *base = &e->p1;
    for (int64_t i = e->start; i < lead_end; i++) {
        if (!is_leading(e, i, lead_end)) continue;
        size_t rl;
        const char *role = col_str(&e->role, i, &rl);
        if (str_eq(role, rl, "developer")) {
            if (at_item_ptr(e, base, i)) return FALLBACK;
            at_lose_p(e, base, "developer_role", "developer became the system prompt");
        }
        int64_t s = at_new_seg(e, S_TEXT, R_SYSTEM, i);
        if (s < 0) return FALLBACK;
        if (content_blocks(e, i, "system", s)) return FALLBACK;
        if (item_keys_lost(e, i, NULL)) return FALLBACK;
        if (at_item_ptr(e, base, i)) return FALLBACK;
        if (!e->chat) /* the way back makes it the instructions */
            at_lose_p(e, base, "instruction_position", "a leading message became top-level system");
        else if (any > 1)
            at_lose_p(e, base, "message_merge", "leading system messages became one system prompt");
        if (!e->seg[s].nb) at_lose_p(e, base, "empty_text", "a system message with no text is dropped");
        if (e->seg[s].string) strings += e->seg[s].nb;
        e->nseg--; /* its blocks stay as pieces */
    }
    if (any && !e->chat) {
        key->len = 0;
        puts_(st, key, "/instructions");
        at_lose_p(e, key, "instruction_position", "leading messages joined the instructions");
    }
    int64_t n = e->nblk - b0;
    sys->len = 0;
    if (!n) return 0;
    puts_(st, sys, "\"system\":");
    if (n == 1 && strings == 1) {
        put_json_str(st, sys, blk_text(e, &e->blk[b0]), e->blk[b0].len);
    } else {
        put(st, sys, "[", 1);
        put_blocks(e, sys, b0, n, 1);
        put(st, sys, "]", 1);
    }
    put(st, sys, ",", 1);
    e->nblk = b0; /* written: the message blocks start afresh */
    return 0;
}

/* The source's keys for the output token limit, in order of preference (to_anthropic.TOKEN_KEYS). */
static const char *const *token_keys(Enc *e) {
    static const char *const responses[] = {"max_output_tokens", NULL};
    static const char *const chat[] = {"max_completion_tokens", "max_tokens", NULL};
    return e->chat ? chat : responses;
}

/* to_anthropic._max_tokens: the top-level extra keys parsed (*doc) and the max_tokens value. */
static int top_fields(Enc *e, int64_t *max_tokens, yyjson_doc **doc) {
    St *st = &e->st;
    size_t n;
    const char *x = col_str(&e->extra, e->r, &n);
    const char *const *keys = token_keys(e);
    *doc = NULL;
    *max_tokens = 4096;
    int found = 0;
    if (x) {
        *doc = parse(x, n);
        if (!*doc || !yyjson_is_obj(yyjson_doc_get_root(*doc))) return FALLBACK;
    }
    Buf *p = &e->p1;
    for (int q = 0; x && keys[q]; q++) {
        yyjson_val *v = yyjson_obj_get(yyjson_doc_get_root(*doc), keys[q]);
        if (!v) continue;
        int ok = 0;
        if (!found && yyjson_is_raw(v)) { /* an integer >= 1 */
            int64_t t;
            ok = orjson_positive_int(yyjson_get_raw(v), yyjson_get_len(v), &t);
            if (ok) {
                *max_tokens = t;
                found = 1;
            }
        }
        p->len = 0;
        put_ptr(st, p, keys[q], strlen(keys[q]));
        e->tmp.len = 0;
        put(st, &e->tmp, "'", 1);
        puts_(st, &e->tmp, keys[q]);
        if (ok && q) {
            puts_(st, &e->tmp, "' comes back as '");
            puts_(st, &e->tmp, keys[0]);
            puts_(st, &e->tmp, "'");
            lose_b(e, p, "request_field", &e->tmp);
            p->len = 0;
            put_ptr(st, p, keys[0], strlen(keys[0]));
            e->tmp.len = 0;
            put(st, &e->tmp, "'", 1);
            puts_(st, &e->tmp, keys[0]);
            puts_(st, &e->tmp, "' comes back instead of '");
            puts_(st, &e->tmp, keys[q]);
            puts_(st, &e->tmp, "'");
            lose_b(e, p, "request_field", &e->tmp);
        } else if (!ok) {
            puts_(st, &e->tmp, "' not used for Anthropic max_tokens");
            lose_b(e, p, "request_field", &e->tmp);
        }
    }
    if (!found) {
        p->len = 0;
        put_ptr(st, p, keys[0], strlen(keys[0]));
        at_lose_p(e, p, "filled_default", "no token limit; max_tokens 4096 was set");
    }
    return 0;
}

/* to_anthropic._stop_sequences: a Chat stop value Anthropic keeps (written to out), or 0. */
static int stop_sequences(Enc *e, yyjson_val *v, Buf *out) {
    if (yyjson_is_str(v)) {
        puts_(&e->st, out, ",\"stop_sequences\":[");
        put_value(&e->st, out, v);
        put(&e->st, out, "]", 1);
        return 1;
    }
    if (!yyjson_is_arr(v) || !yyjson_arr_size(v)) return 0;
    size_t idx, max;
    yyjson_val *x;
    yyjson_arr_foreach(v, idx, max, x) {
        if (!yyjson_is_str(x)) return 0;
    }
    puts_(&e->st, out, ",\"stop_sequences\":");
    put_value(&e->st, out, v);
    return 1;
}

/* call_ids.CallIds needs no id of its own: every call has one, and every id-less output finds no
 * unanswered call before it (pair_outputs would pair it by position and report generated_id). */
static int ids_ok(Enc *e) {
    e->nix = 0; /* the unanswered calls so far (-1: answered) */
    for (int64_t i = e->start; i < e->end; i++) {
        size_t tl, cl;
        const char *t = col_str(&e->type, i, &tl);
        const char *cid = col_str(&e->call_id, i, &cl);
        if (is_call(t, tl)) {
            if (!cid || ix_push(e, i)) return 0;
        } else if (is_output(t, tl)) {
            if (!cid) {
                for (int64_t q = 0; q < e->nix; q++)
                    if (e->ix[q] >= 0) return 0;
                continue;
            }
            /* by_id: the first call before it with that id, if it is still unanswered */
            for (int64_t q = e->start; q < i; q++) {
                size_t ql, il;
                const char *qt = col_str(&e->type, q, &ql);
                const char *qid = col_str(&e->call_id, q, &il);
                if (!is_call(qt, ql) || !same(qid, il, cid, cl)) continue;
                for (int64_t k = 0; k < e->nix; k++)
                    if (e->ix[k] == q) e->ix[k] = -1;
                break;
            }
        }
    }
    return 1;
}

/* Whether this row is one encode_anthropic takes: a Responses or Chat (e->chat) request body whose
 * instructions and items it models, with every call id present and unique. Sets the item range.
 * 0, or FALLBACK. */
static int row_taken(Enc *e) {
    int64_t r = e->r;
    size_t n, fl;
    const char *sf = col_str(&e->source_format, r, &n);
    e->chat = str_eq(sf, n, "chat");
    if (!e->chat && !str_eq(sf, n, "responses")) return FALLBACK;
    const char *rk = col_str(&e->record_kind, r, &n);
    if (!str_eq(rk, n, "request")) return FALLBACK;
    const char *form = col_str(&e->instr_form, r, &fl);
    if (!(str_eq(form, fl, "absent") || (!e->chat && (str_eq(form, fl, "null") || str_eq(form, fl, "string")))))
        return FALLBACK;
    const char *items_form = col_str(&e->items_form, r, &n);
    e->string_input = !e->chat && str_eq(items_form, n, "string");
    if (!e->string_input && !str_eq(items_form, n, "parts")) return FALLBACK;
    col_list(&e->items, r, &e->start, &e->end);
    for (int64_t i = e->start; i < e->end; i++) {
        size_t tl;
        if (!col_valid(&e->item_valid, i) || !col_str(&e->type, i, &tl)) return FALLBACK;
    }
    return ids_ok(e) ? 0 : FALLBACK;
}

/* to_anthropic._segments and _group: each item after the leading system messages becomes a
 * segment (or is dropped with its loss), same-role segments grouped into turns. */
static int segments(Enc *e, int64_t lead_end) {
    for (int64_t i = e->start; i < e->end; i++) {
        if (is_leading(e, i, lead_end)) continue;
        size_t tl;
        const char *t = col_str(&e->type, i, &tl);
        int64_t s = -1;
        if (str_eq(t, tl, "message")) {
            if (message_seg(e, i, &s)) return FALLBACK;
        } else if (is_call(t, tl)) {
            if (call_seg(e, i, &s)) return FALLBACK;
        } else if (is_output(t, tl)) {
            size_t rl;
            const char *role = col_str(&e->role, i, &rl);
            if (str_eq(role, rl, "function")) { /* a legacy Chat function result */
                if (at_item_ptr(e, &e->p1, i)) return FALLBACK;
                at_lose_p(e, &e->p1, "orphan_output", "a legacy function result has no call id to pair");
            } else if (result_seg(e, i, &s)) {
                return FALLBACK;
            }
        } else if (dropped(e, i)) {
            return FALLBACK;
        }
        if (s >= 0 && at_group(e, s)) return FALLBACK;
    }
    return 0;
}

/* The request fields after the messages (to_anthropic._top): max_tokens moved to mt_at in out
 * (_top builds its dict before the body), tools, tool_choice, the explicit nulls' losses, stop as
 * stop_sequences (Chat) and every other top-level key's loss; then the closing brace. */
static int request_fields(Enc *e, Buf *out, size_t mt_at) {
    St *st = &e->st;
    int64_t max_tokens;
    yyjson_doc *doc = NULL;
    int rc = FALLBACK;
    if (top_fields(e, &max_tokens, &doc)) goto done;
    char mt[48];
    int m = snprintf(mt, sizeof mt, "\"max_tokens\":%lld,", (long long)max_tokens);
    size_t tail = out->len - mt_at;
    put(st, out, mt, (size_t)m); /* grow, then shift the body right */
    if (!st->oom) {
        memmove(out->p + mt_at + m, out->p + mt_at, tail);
        memcpy(out->p + mt_at, mt, (size_t)m);
    }
    if (tools_json(e, out) || write_tool_choice(e, out, anthropic_tool_choice) || lose_null_fields(e)) goto done;
    if (doc) {
        size_t idx, max;
        yyjson_val *k, *v;
        yyjson_obj_foreach(yyjson_doc_get_root(doc), idx, max, k, v) {
            if (key_in(k, token_keys(e))) continue;
            if (e->chat && key_is(k, "stop") && stop_sequences(e, v, out)) {
                if (!stop_fits(v)) /* a list of 1 to 4 strings comes back as it is; a string as a list */
                    lose_c(e, "/stop", "request_field", "kept as stop_sequences, which does not map back to Chat");
                continue;
            }
            lose_key(e, NULL, NULL, k, "request_field", "", "' is not carried to Anthropic");
        }
    }
    put(st, out, "}", 1);
    rc = 0;
done:
    if (doc) yyjson_doc_free(doc);
    return rc;
}

/* One row; 0 (written) or FALLBACK (nothing kept: the caller rolls back). */
static int encode_row(Enc *e) {
    St *st = &e->st;
    if (row_taken(e)) return FALLBACK;
    e->loss0 = e->nloss;
    e->nblk = e->nseg = e->nturn = 0;
    e->scratch.len = e->paths.len = 0;
    if (e->string_input) lose_c(e, "/input", "content_form", "the string input shorthand becomes a user message");
    int64_t lead_end = leading_end(e);
    Buf sys = {0};
    int rc = FALLBACK;
    if (system_json(e, lead_end, &sys) || segments(e, lead_end)) goto done;
    if (at_pair(e) || at_strip_final(e) || vanished(e)) goto done;
    Buf *out = &e->out;
    puts_(st, out, "{");
    /* model and max_tokens come first (_top builds its dict before the body), losses after the body */
    size_t n;
    const char *model = col_str(&e->model, e->r, &n);
    if (model) {
        puts_(st, out, "\"model\":");
        put_json_str(st, out, model, n);
        put(st, out, ",", 1);
    }
    size_t mt_at = out->len; /* max_tokens goes here once _top has read it */
    put(st, out, sys.p, sys.len);
    puts_(st, out, "\"messages\":[");
    for (int64_t k = 0; k < e->nturn; k++) {
        if (k) put(st, out, ",", 1);
        if (render(e, &e->turn[k], out)) goto done;
    }
    put(st, out, "]", 1);
    if (ambiguous(e) || request_fields(e, out, mt_at)) goto done;
    rc = 0;
done:
    free(sys.p);
    return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* Entry point                                                                                  */

extern const char chatlake_encode_anthropic_doc[];
const char chatlake_encode_anthropic_doc[] =
    "encode_anthropic(batch) -> (text, offsets, native, loss_row, path, path_offsets, kind, kind_offsets, "
    "detail, detail_offsets)\n\n"
    "Encode a canonical RecordBatch's Responses request rows to Anthropic Messages request JSON (see "
    "pipeline/encoders/encode_rows.py). Each item is (address, size, owner) for pa.foreign_buffer. "
    "Offsets are int64 (n + 1); native has one byte per row (0: not encoded here, its text is empty and "
    "it has no losses).";

PyObject *chatlake_encode_anthropic(PyObject *self, PyObject *args);

PyObject *chatlake_encode_anthropic(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *batch;
    if (!PyArg_ParseTuple(args, "O", &batch)) return NULL;
    return run_encoder(batch, encode_row, "encode_anthropic");
}
