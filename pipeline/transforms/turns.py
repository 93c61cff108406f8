"""The grouped turn view (Eleanor's turn counts), computed over exploded items.

A turn is a maximal run of consecutive items with the same label (see ``_items.label``):

============  ==============================================================================
label         items
============  ==============================================================================
user          user messages
assistant     reasoning, assistant messages, function / custom / hosted tool calls (so reasoning
              plus parallel calls is one turn)
tool          tool outputs (Anthropic tool_result blocks included: never ``user``)
system        inline system / developer messages
(none)        compaction, item references, unknown kinds: in no turn, and they do not split one
============  ==============================================================================

Added columns: ``turns`` (list of ``{label, first, last, preview}``, item indices inclusive),
``human_turns``, ``ai_turns``, ``tool_turns``, ``system_turns``, ``all_turns`` (human + AI, as in
Eleanor) and ``first_user_task`` (the text of the first user message with text).
"""

from __future__ import annotations

import polars as pl

from pipeline.transforms._items import (
    ASSISTANT,
    IDX,
    ROW,
    SYSTEM,
    TOOL,
    USER,
    label,
    text,
    with_row,
)

TURN_DTYPE = pl.Struct({"label": pl.String, "first": pl.Int32, "last": pl.Int32, "preview": pl.String})
COUNT_COLUMNS = ("human_turns", "ai_turns", "tool_turns", "system_turns", "all_turns")


def labelled_items(
    frame: pl.DataFrame | pl.LazyFrame, preview_chars: int | None = None
) -> pl.DataFrame | pl.LazyFrame:
    """One row per labelled item: ``__row``, ``__idx``, ``__label``, ``__text``, ``__turn``.

    Label and text are computed inside the lists and only those small columns are exploded (the
    item structs are never copied). ``__turn`` numbers the runs globally (rows are contiguous, so a
    run starts where the label or the conversation changes); ``__text`` is cut to ``preview_chars``.
    """
    txt = text()
    if preview_chars is not None:
        txt = txt.str.slice(0, preview_chars)
    items = pl.col("items")
    long = (
        frame.select(
            ROW,
            items.list.eval(label()).alias("__label"),
            items.list.eval(txt).alias("__text"),
            items.list.eval(pl.int_range(pl.len(), dtype=pl.Int32)).alias(IDX),
        )
        .filter(pl.col(IDX).list.len() > 0)
        .explode(["__label", "__text", IDX])
        .filter(pl.col("__label").is_not_null())
    )
    starts = (pl.col("__label") != pl.col("__label").shift(1)) | (pl.col(ROW) != pl.col(ROW).shift(1))
    return long.with_columns(starts.fill_null(True).cum_sum().alias("__turn"))


def turn_table(long: pl.DataFrame | pl.LazyFrame, preview_chars: int) -> pl.DataFrame | pl.LazyFrame:
    """One row per turn: ``__row``, ``__turn``, label, first / last item index, preview."""
    # plain first/last/implode aggregations stay on Polars' fast group-by path; the preview is
    # joined afterwards as a list operation
    per_turn = long.group_by("__turn", maintain_order=True).agg(
        pl.col(ROW).first(),
        pl.col("__label").first().alias("label"),
        pl.col(IDX).first().alias("first"),
        pl.col(IDX).last().alias("last"),
        pl.col("__text").alias("preview"),
    )
    preview = pl.col("preview").list.eval(pl.element().filter(pl.element() != "")).list.join("\n")
    return per_turn.with_columns(preview.str.slice(0, preview_chars).alias("preview"))


def turns(frame: pl.DataFrame | pl.LazyFrame, preview_chars: int = 80) -> pl.DataFrame | pl.LazyFrame:
    """Add the turn list, the turn counts and ``first_user_task``.

    >>> from pipeline.formats import decode_records
    >>> rec = {"messages": [{"role": "user", "content": "weather?"},
    ...     {"role": "assistant", "content": None, "tool_calls": [
    ...         {"id": "c1", "type": "function", "function": {"name": "w", "arguments": "{}"}}]},
    ...     {"role": "tool", "tool_call_id": "c1", "content": "18C"},
    ...     {"role": "assistant", "content": "18C."}]}
    >>> out = turns(pl.from_arrow(decode_records([rec], "chat").table))
    >>> out.select("human_turns", "ai_turns", "tool_turns", "all_turns").row(0)
    (1, 2, 1, 3)
    """
    f = with_row(frame)
    long = labelled_items(f, preview_chars)
    per_turn = turn_table(long, preview_chars)
    lab = pl.col("label")
    counts = per_turn.group_by(ROW).agg(
        pl.struct("label", "first", "last", "preview").alias("turns"),
        (lab == USER).sum().alias("human_turns"),
        (lab == ASSISTANT).sum().alias("ai_turns"),
        (lab == TOOL).sum().alias("tool_turns"),
        (lab == SYSTEM).sum().alias("system_turns"),
    )
    task = (
        pl.col("items")
        .list.eval(pl.when((label() == USER) & (text() != "")).then(text()))
        .list.drop_nulls()
        .list.first()
        .alias("first_user_task")
    )
    out = f.with_columns(task).join(counts, on=ROW, how="left", maintain_order="left")
    zero = pl.lit(0, pl.Int32)
    return (
        out.with_columns(
            pl.col("turns").fill_null(pl.lit([], pl.List(TURN_DTYPE))).cast(pl.List(TURN_DTYPE)),
            *(pl.col(c).cast(pl.Int32).fill_null(zero) for c in COUNT_COLUMNS[:4]),
        )
        .with_columns(
            (pl.col("human_turns") + pl.col("ai_turns")).alias("all_turns"),
        )
        .select(pl.exclude(ROW, "first_user_task"), "first_user_task")
    )
