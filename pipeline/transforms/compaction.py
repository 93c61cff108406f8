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
import pyarrow as pa

from pipeline.transforms._flat import Frame, arrow, child, eager, run_starts, scatter, split
from pipeline.transforms._items import ASSISTANT, USER
from pipeline.transforms._text import block_texts, join_groups

DEFAULT_MARKERS = (
    # Claude Code's continuation summary
    "session is being continued from a previous conversation",
    # Codex's compacted-history summary prefix
    "Another language model started to solve this problem",
)
DEFAULT_ITEM_TYPES = ("compaction", "compacted")


def compaction(
    frame: Frame,
    markers: tuple[str, ...] = DEFAULT_MARKERS,
    item_types: tuple[str, ...] = DEFAULT_ITEM_TYPES,
) -> Frame:
    """Add ``compacted``, ``compaction_count`` and ``first_compaction_index``.

    >>> from pipeline.formats import decode_records
    >>> rec = {"input": [{"role": "user", "content": "hi"}, {"type": "compaction", "encrypted_content": "e"}]}
    >>> compaction(pl.from_arrow(decode_records([rec], "responses").table)).select(
    ...     "compacted", "compaction_count", "first_compaction_index").row(0)
    (True, 1, 1)

    Computed on the flat items (see :mod:`pipeline.transforms._flat`); markers are searched in
    the content blocks' texts directly unless a marker contains ``\n`` (then it could span two
    blocks, and the item texts are joined first).
    """
    return eager(frame, lambda df: _compaction(df, markers, item_types))


def _contains(text: pl.Series, markers: tuple[str, ...]) -> pl.Series:
    """Whether each text contains one of ``markers`` (literal, case-sensitive)."""
    if len(markers) > 4:  # Aho-Corasick pays off with many patterns; a few memmem scans are faster
        return text.str.contains_any(list(markers))
    hit = text.str.contains(markers[0], literal=True)
    for m in markers[1:]:
        hit = hit | text.str.contains(m, literal=True)
    return hit


def compaction_flags(items: pa.Array, markers: tuple[str, ...], item_types: tuple[str, ...]) -> pl.Series:
    """Per flat item (a struct array of items, see ``_flat.split``): whether it is a compaction.

    The one place the rule lives: the ``compaction`` step counts these, ``threads`` cuts at them.
    """
    kind, role = child(items, "type"), child(items, "role")
    flag = kind.is_in(list(item_types)).fill_null(False)
    if markers:
        scanned = ((kind == "message") & role.is_in((USER, ASSISTANT))).fill_null(False)
        texts = block_texts(items, kind)
        texts = texts.select(scanned.gather(texts.owner))
        if any("\n" in m for m in markers):
            starts = (texts.owner != texts.owner.shift(1)).fill_null(True)
            group = starts.cum_sum() - 1  # the blocks of one item are contiguous
            joined = join_groups(group, texts.text, int(starts.sum()))
            hit_at = texts.owner.filter(starts).filter(_contains(joined, markers))
        else:  # a marker without "\n" cannot span the "\n" that joins two blocks
            hits = texts.owner.filter(_contains(texts.text, markers))
            hit_at = hits.filter(run_starts(hits))  # owners ascending: one entry per item
        flag = flag | scatter(
            len(items), hit_at, pl.repeat(True, len(hit_at), eager=True), pl.Boolean
        ).fill_null(False)
    return flag


def _compaction(df: pl.DataFrame, markers: tuple[str, ...], item_types: tuple[str, ...]) -> pl.DataFrame:
    flat = split(arrow(df.get_column("items")))
    parent = flat.parent()
    flag = compaction_flags(flat.values, markers, item_types)
    count = flat.segment_sum(flag).cast(pl.Int32)
    at = flag.arg_true()
    rows = parent.gather(at)
    first = run_starts(rows)
    first_index = scatter(len(df), rows.filter(first), flat.index(parent, at).filter(first), pl.Int32)
    return df.with_columns(
        (count > 0).alias("compacted"),
        count.alias("compaction_count"),
        first_index.alias("first_compaction_index"),
    )
