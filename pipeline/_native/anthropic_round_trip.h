/*
 * The compiled anthropic_round_trip.report (anthropic_round_trip.c), for the encoders of
 * Anthropic-source request rows to Responses and Chat.
 */
#ifndef CHATLAKE_ANTHROPIC_ROUND_TRIP_H
#define CHATLAKE_ANTHROPIC_ROUND_TRIP_H

#include <stdint.h>

struct Enc;

/* Report, at the Anthropic source row's paths, what the way back (to_anthropic) changes, as
 * anthropic_round_trip.report(ctx, ids, media_in_results=..., emitted=...) does. The row is
 * e->r, its items [e->start, e->end), its losses from e->loss0 (the forward encoder's, already
 * reported). Call ids are the items' own (a row with an id-less call or result is refused).
 * emitted[i - e->start]: item i has an element in the target (NULL: every item). 0 or FALLBACK
 * (1: hand the row back whole); it uses the row state's turn arrays and the buffers paths, p1-p3, kb. */
int anthropic_report(struct Enc *e, int media_in_results, const uint8_t *emitted);

#endif
