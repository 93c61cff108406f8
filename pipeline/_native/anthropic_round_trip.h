/*
 * The compiled anthropic_round_trip.report (anthropic_round_trip.c), for the encoders of
 * Anthropic-source request rows to Responses and Chat.
 */
#ifndef CHATLAKE_ANTHROPIC_ROUND_TRIP_H
#define CHATLAKE_ANTHROPIC_ROUND_TRIP_H

#include <stdint.h>

#include "encode_common.h" /* Buf, Enc */

struct Enc;

/* Report, at the Anthropic source row's paths, what the way back (to_anthropic) changes, as
 * anthropic_round_trip.report(ctx, ids, media_in_results=..., emitted=...) does. The row is
 * e->r, its items [e->start, e->end), its losses from e->loss0 (the forward encoder's, already
 * reported). Call ids are the items' own (a row with an id-less call or result is refused).
 * emitted[i - e->start]: item i has an element in the target (NULL: every item). 0 or FALLBACK
 * (1: hand the row back whole); it uses the row state's turn arrays and the buffers paths, p1-p3, kb. */
int anthropic_report(struct Enc *e, int media_in_results, const uint8_t *emitted);

/* Ctx helpers of an Anthropic source (Enc.anthropic set), for the encoders of its rows; they use the
 * buffers p2 / p3 (path is the caller's).
 * at_lose_wrapper: Ctx.lose_wrapper(i), 0 or FALLBACK.
 * at_image_url: _context.anthropic_image_url of image block j's source (its keys without a slot
 * reported at path/source/KEY): 1 with the URL's text in url, 0 no URL (nothing reported), -1 hand back.
 * at_tool_reference: Ctx.tool_reference_text(j, path): 1 with the placeholder in text (its losses
 * reported), 0 it names no tool, -1 hand back. */
int at_lose_wrapper(struct Enc *e, int64_t i);
int at_image_url(struct Enc *e, int64_t j, Buf *path, Buf *url);
int at_tool_reference(struct Enc *e, int64_t j, Buf *path, Buf *text);

#endif
