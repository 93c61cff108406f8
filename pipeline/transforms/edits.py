"""Request edits (Switchyard): a note on the last user turn, or a system prompt in front.

``append_note`` finds the last user-side item (a user message or a tool output: the input the
model answers next) and adds ``text`` after it:

* ``mode='block'``: on a user message, as an extra text block (``input_text`` for Responses,
  ``text`` otherwise; string content becomes a block list). After a tool output, as a new user
  message right after it -- for Anthropic inside the same user message, so the note follows its
  ``tool_result`` blocks.
* ``mode='message'``: always as a new user message right after that item.

A conversation with no user message or tool output is rejected. ``prepend_system`` inserts a
system (or developer) message at index 0. Both reject response objects. Inserted items have a
null id; edited items keep theirs (the encoders see the edit through the content fingerprint).
"""

from __future__ import annotations

import polars as pl

from pipeline.transforms._items import (
    BLOCKS_DTYPE,
    ERROR,
    ITEMS_DTYPE,
    TOOL,
    USER,
    block,
    insert_at,
    insert_section,
    items_form_after,
    label,
    new_message,
    next_group,
    request_only,
)


def _text_block_type() -> pl.Expr:
    return (
        pl.when(pl.col("source_format") == "responses").then(pl.lit("input_text")).otherwise(pl.lit("text"))
    )


def append_note(
    frame: pl.DataFrame | pl.LazyFrame, text_: str, mode: str = "block"
) -> pl.DataFrame | pl.LazyFrame:
    """Add ``text_`` after the last user turn (see the module doc)."""
    items = pl.col("items").fill_null(pl.lit([], ITEMS_DTYPE))
    at = items.list.eval(label().is_in((USER, TOOL)).arg_true()).list.last().cast(pl.Int32)
    target = items.list.get(at, null_on_oob=True)
    on_message = target.struct.field("type") == "message"
    btype = _text_block_type()
    # Anthropic keeps the note inside the tool_result's user message (same group, next part).
    same_message = (pl.col("source_format") == "anthropic") & ~on_message & pl.lit(mode == "block")
    new = new_message(
        section=target.struct.field("section"),
        group=pl.when(same_message).then(target.struct.field("group")).otherwise(next_group()),
        part=pl.when(same_message).then(target.struct.field("part") + 1),
        role=USER,
        text_=text_,
        block_type=btype if mode == "block" else None,
    )
    inserted = insert_at(at + 1, new)
    if mode == "block":
        old = target.struct.field("content")

        def typed(t: str) -> pl.Expr:
            return old.list.eval(pl.element().struct.with_fields(pl.lit(t).alias("type")))

        # String content is one untyped block; as a block list it needs its format's text type.
        retyped = (
            pl.when(pl.col("source_format") == "responses").then(typed("input_text")).otherwise(typed("text"))
        )
        blocks = (
            pl.when(target.struct.field("content_form") == "string")
            .then(retyped)
            .when(target.struct.field("content_form").is_in(("null", "absent")))
            .then(pl.lit([], BLOCKS_DTYPE))
            .otherwise(old)
        )
        edited = target.struct.with_fields(
            pl.lit("parts").alias("content_form"),
            pl.concat_list(blocks, pl.concat_list(block(btype, text_))).alias("content"),
        )
        replaced = pl.concat_list(items.list.head(at), pl.concat_list(edited), items.list.slice(at + 1))
        inserted = pl.when(on_message).then(replaced.cast(ITEMS_DTYPE)).otherwise(inserted)
    return frame.with_columns(
        inserted.alias("items"),
        pl.coalesce(
            request_only("append_note"),
            pl.when(at.is_null()).then(pl.lit("append_note: no user message or tool output to append to")),
        ).alias(ERROR),
        items_form_after(pl.lit(True)),
    )


def prepend_system(
    frame: pl.DataFrame | pl.LazyFrame, text_: str, role: str = "system"
) -> pl.DataFrame | pl.LazyFrame:
    """Insert a system (or developer) message at index 0."""
    msg = new_message(
        section=insert_section(), group=next_group(), part=None, role=role, text_=text_, block_type=None
    )
    return frame.with_columns(
        insert_at(pl.lit(0), msg).alias("items"),
        request_only("prepend_system").alias(ERROR),
        items_form_after(pl.lit(True)),
    )
