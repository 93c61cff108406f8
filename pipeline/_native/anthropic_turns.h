/*
 * The shapes of to_anthropic's turn rules (encode_anthropic.c): content blocks being assembled,
 * segments (one source element's share of an Anthropic message) and turns (messages assembled from
 * segments). The row encoder's state (Enc, encode_common.h) holds arrays of them, so every compiled
 * encoder that runs these rules shares one state and one batch loop.
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

#endif
