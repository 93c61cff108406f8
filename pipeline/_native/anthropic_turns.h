/*
 * The shapes of to_anthropic's turn rules (encode_anthropic.c): content blocks being assembled,
 * segments (one source element's share of an Anthropic message) and turns (messages assembled from
 * segments). The row encoder's state (Enc, encode_common.h) holds arrays of them, so every compiled
 * encoder that runs these rules shares one state and one batch loop. Included by encode_common.h
 * (after Buf, before Enc).
 */
#ifndef CHATLAKE_ANTHROPIC_TURNS_H
#define CHATLAKE_ANTHROPIC_TURNS_H

#include <stddef.h>
#include <stdint.h>

enum { S_TEXT, S_CALL, S_RESULT };    /* Seg.kind */
enum { B_TEXT, B_FRAG };              /* Blk.type: a text block (text kept raw: the prefill trim), or JSON */
enum { R_USER, R_ASSISTANT, R_SYSTEM }; /* Anthropic roles */

/* One Anthropic content block being assembled. */
typedef struct Blk {
    int type;
    const char *text; /* B_TEXT: the text (in the table), len may shrink (trailing whitespace) */
    size_t len;
    int in_scratch;   /* B_TEXT: the text is at scratch + off instead (a Chat message's refusal field) */
    size_t off, flen;       /* B_FRAG: its JSON in scratch */
    size_t path_off, path_len; /* source pointer of the block's text, in paths */
} Blk;

/* to_anthropic.Seg: one source element's share of an Anthropic message. */
typedef struct Seg {
    int kind, role;
    int64_t i;          /* the item */
    int64_t b0, nb;     /* its blocks: blk[b0 .. b0 + nb) */
    int string;         /* the source content was a plain string */
    const char *cid;    /* call id (calls and results) */
    size_t cid_len;
    int placed, alive;
} Seg;

/* to_anthropic.Turn: a message being assembled from segments (indices into seg). */
typedef struct Turn {
    int role;
    int64_t *s;
    int64_t n, cap;
} Turn;

/* The turn rules as encode_anthropic.c implements them (to_anthropic.py), for the other encoders'
 * Anthropic round-trip report (anthropic_round_trip.c). They work on the row state's blk / seg / turn
 * arrays and return 0 or FALLBACK (1: the row is handed back to the per-record encoder). */
struct Enc;

/* Ctx.item_ptr / message_ptr / content_ptr(i, k) (k < 0: None) of the row's source into b. */
int at_item_ptr(struct Enc *e, Buf *b, int64_t i);
int at_message_ptr(struct Enc *e, Buf *b, int64_t i);
int at_content_ptr(struct Enc *e, Buf *b, int64_t i, int64_t k);
/* A loss at path b with a fixed detail; is there a loss at exactly p among the row's [from, nloss)? */
void at_lose_p(struct Enc *e, const Buf *path, const char *kind, const char *detail);
int at_has_loss_at(struct Enc *e, const char *p, size_t n, int64_t from);
/* not s.strip() (Python's whitespace) */
int at_blank(const char *s, size_t n);
/* A new block / segment (its blocks start at the next new block); turns */
Blk *at_new_blk(struct Enc *e);
/* Block b's source pointer: path + suffix (NULL: none), kept in e->paths; a new text block from path */
void at_blk_path(struct Enc *e, Blk *b, const Buf *path, const char *suffix);
int at_text_blk(struct Enc *e, const char *text, size_t n, const Buf *path, const char *suffix);
int64_t at_new_seg(struct Enc *e, int kind, int role, int64_t i);
int at_turn_push(struct Enc *e, Turn *t, int64_t s);
Turn *at_turn_insert(struct Enc *e, int64_t k, int role);
/* to_anthropic._group: segment s appended to the last turn of its role, or to a new one */
int at_group(struct Enc *e, int64_t s);
/* to_anthropic.image_source: 1 a data URL of a media type Anthropic takes (*media_len: its length, at
 * u + 5), 2 an http(s) URL, 0 neither; IMAGE_MEDIA membership */
int at_image_source(const char *u, size_t n, size_t *media_len);
int at_image_media(const char *s, size_t n);
/* _context.is_hosted: a provider-run tool item */
int at_is_hosted(const char *t, size_t n);
/* to_anthropic._pair (with _merge_adjacent) and _strip_final over e->turn */
int at_pair(struct Enc *e);
int at_strip_final(struct Enc *e);

#endif
