"""JSON pointers into a source record as Polars expressions over the flat item columns.

Vectorized twins of ``Ctx.item_ptr`` (:mod:`pipeline.encoders._context`): the columnar encoders'
losses (``encode_rows``) and the target rules (``rules``) name items with them.
"""

from __future__ import annotations

import polars as pl


def item_pointer() -> pl.Expr:
    """An item's pointer in its Responses, Chat or Anthropic source record (``Ctx.item_ptr``), as an
    expression over the row's ``source_format`` and ``items_form`` and the item's ``section``,
    ``group`` and ``part`` (a Chat tool call's index in its message's ``tool_calls``, an Anthropic
    item's first block in its message's ``content``). Null for other sources (no compiled encoder
    takes their rows), when ``section`` is null, or when ``group`` is null where the pointer needs it.

    =========  ==========  ========  =====  ====  ==============================
    source     items_form  section   group  part  pointer
    =========  ==========  ========  =====  ====  ==============================
    responses  string      input     0            /input
    responses  parts       input     3            /input/3
    responses  parts       output    1            /output/1
    chat       parts       messages  2      1     /messages/2/tool_calls/1
    chat       parts       choices   0            /choices/0/message
    anthropic  parts       messages  2      1     /messages/2/content/1
    anthropic  parts       output    0      1     /content/1
    anthropic  parts       output    0            /
    =========  ==========  ========  =====  ====  ==============================
    """
    src, items_form, section = pl.col("source_format"), pl.col("items_form"), pl.col("section")
    group, part = pl.col("group").cast(pl.String), pl.col("part").cast(pl.String)
    # section names are fixed ("input", "output", "messages", ...): nothing for a JSON pointer to escape
    base = pl.concat_str(pl.lit("/"), section, pl.lit("/"), group)
    chat = pl.when(section == "choices").then(pl.concat_str(pl.lit("/choices/"), group, pl.lit("/message")))
    chat = chat.otherwise(base)
    messages = pl.when(section == "output").then(pl.lit(""))
    messages = messages.otherwise(pl.concat_str(pl.lit("/messages/"), group))
    return (
        pl.when(src == "responses")
        .then(pl.when((items_form == "string") & (section == "input")).then(pl.lit("/input")).otherwise(base))
        .when(src == "chat")
        .then(pl.when(part.is_null()).then(chat).otherwise(pl.concat_str(chat, pl.lit("/tool_calls/"), part)))
        .when(src == "anthropic")
        .then(
            pl.when(part.is_not_null())
            .then(pl.concat_str(messages, pl.lit("/content/"), part))
            .when(section == "output")
            .then(pl.lit("/"))
            .otherwise(messages)
        )
    )


def any_item_pointer() -> pl.Expr:
    """:func:`item_pointer`, and for HF and ShareGPT rows their own (``/messages/2``, a call's
    ``/messages/2/tool_calls/0``; ``/conversations/3``): every source format's item pointer."""
    group, part = pl.col("group").cast(pl.String), pl.col("part").cast(pl.String)
    hf = pl.concat_str(pl.lit("/messages/"), group)
    hf = pl.when(part.is_null()).then(hf).otherwise(pl.concat_str(hf, pl.lit("/tool_calls/"), part))
    src = pl.col("source_format")
    return (
        pl.when(src == "hf")
        .then(hf)
        .when(src == "sharegpt")
        .then(pl.concat_str(pl.lit("/conversations/"), group))
        .otherwise(item_pointer())
    )
