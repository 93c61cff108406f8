"""Compaction signal: did the conversation go through context compaction, how often, where first.

An item counts as a compaction when its kind is one of ``item_types`` (Responses ``compaction``
items and Anthropic compaction blocks decode to ``compaction``; Codex rollouts' ``compacted``
entries) or when it is a *user or assistant message* whose text contains one of ``markers``
(literal, case-sensitive). Inline system / developer messages and the top-level instructions are
never scanned, so a system prompt quoting a marker cannot trigger it.

Added columns: ``compacted`` (bool), ``compaction_count`` (int32), ``first_compaction_index``
(int32, null when none).
"""

from __future__ import annotations

import polars as pl

from pipeline.transforms._items import ASSISTANT, ITEMS_DTYPE, USER, field, is_message, text

DEFAULT_MARKERS = (
    # Claude Code's continuation summary
    "session is being continued from a previous conversation",
    # Codex's compacted-history summary prefix
    "Another language model started to solve this problem",
)
DEFAULT_ITEM_TYPES = ("compaction", "compacted")


def is_compaction(markers: tuple[str, ...], item_types: tuple[str, ...]) -> pl.Expr:
    """Inside ``list.eval``: whether the item marks a compaction."""
    by_kind = field("type").is_in(list(item_types))
    if not markers:
        return by_kind
    scanned = is_message() & field("role").is_in((USER, ASSISTANT))
    return by_kind | (scanned & text().str.contains_any(list(markers)))


def compaction(
    frame: pl.DataFrame | pl.LazyFrame,
    markers: tuple[str, ...] = DEFAULT_MARKERS,
    item_types: tuple[str, ...] = DEFAULT_ITEM_TYPES,
) -> pl.DataFrame | pl.LazyFrame:
    """Add ``compacted``, ``compaction_count`` and ``first_compaction_index``.

    >>> from pipeline.formats import decode_records
    >>> rec = {"input": [{"role": "user", "content": "hi"}, {"type": "compaction", "encrypted_content": "e"}]}
    >>> compaction(pl.from_arrow(decode_records([rec], "responses").table)).select(
    ...     "compacted", "compaction_count", "first_compaction_index").row(0)
    (True, 1, 1)
    """
    flags = pl.col("items").fill_null(pl.lit([], ITEMS_DTYPE)).list.eval(is_compaction(markers, item_types))
    return (
        frame.with_columns(flags.alias("__flags"))
        .with_columns(
            (pl.col("__flags").list.sum() > 0).alias("compacted"),
            pl.col("__flags").list.sum().cast(pl.Int32).alias("compaction_count"),
            pl.col("__flags")
            .list.eval(pl.element().arg_true())
            .list.first()
            .cast(pl.Int32)
            .alias("first_compaction_index"),
        )
        .drop("__flags")
    )
