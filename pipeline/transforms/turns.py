"""The grouped turn view (Eleanor's turn counts), computed on the flat items (see ``_flat``).

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

from pipeline.transforms._flat import (
    Frame,
    arrow,
    child,
    eager,
    offsets_by_row,
    regroup,
    run_starts,
    scatter,
    segment_sums,
    series,
    split,
)
from pipeline.transforms._items import (
    IDX,
    LABELS,
    ROW,
    USER,
    label_code_of,
)
from pipeline.transforms._text import BlockTexts, block_texts, join_groups

TURN_DTYPE = pl.Struct({"label": pl.String, "first": pl.Int32, "last": pl.Int32, "preview": pl.String})
COUNT_COLUMNS = ("human_turns", "ai_turns", "tool_turns", "system_turns", "all_turns")


def turns(frame: Frame, preview_chars: int = 80) -> Frame:
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

    Computed on the flat items (one row per item, see :mod:`pipeline.transforms._flat`): labels,
    runs and counts are flat columns; only the turn list is re-wrapped per conversation.
    """
    return eager(frame, lambda df: _turns(df, preview_chars))


def _turns(df: pl.DataFrame, preview_chars: int) -> pl.DataFrame:
    n = len(df)
    flat = split(arrow(df.get_column("items")))
    items = flat.values
    parent = flat.parent()
    kind = child(items, "type")
    code = (
        pl.DataFrame([kind, child(items, "role")])
        .select(label_code_of(pl.col("type"), pl.col("role")))
        .to_series()
    )
    texts = block_texts(items, kind)

    # labelled items in conversation order; a run starts where the label or the conversation changes
    at = code.is_not_null().arg_true()
    long = pl.DataFrame(
        {ROW: parent.gather(at), IDX: flat.index(parent, at), "code": code.gather(at)}
    ).with_columns(
        ((pl.col("code") != pl.col("code").shift(1)) | (pl.col(ROW) != pl.col(ROW).shift(1)))
        .fill_null(True)
        .alias("__start")
    )
    start = long.get_column("__start")
    end = start.shift(-1).fill_null(True)
    heads = long.filter(start)

    # preview: the turn's non-empty item texts joined; a turn's blocks are contiguous and in order
    if preview_chars > 0:
        turn_of_item = scatter(len(items), at, start.cum_sum() - 1, pl.UInt32)
        turn_of_block = turn_of_item.gather(texts.owner)
        used = turn_of_block.is_not_null() & texts.nonempty.gather(texts.owner)
        keys, cut = turn_of_block.filter(used), texts.text.filter(used)
        preview = join_groups(keys, cut, len(heads), limit=preview_chars)
    else:
        preview = pl.repeat("", len(heads), dtype=pl.String, eager=True)
    head_code = heads.get_column("code")
    table = pl.DataFrame(
        {
            "label": pl.Series(LABELS).gather(head_code),
            "first": heads.get_column(IDX),
            "last": long.get_column(IDX).filter(end),
            "preview": preview,
        }
    )
    offsets = offsets_by_row(heads.get_column(ROW), n)
    turn_list = series(regroup(arrow(table.to_struct()), offsets), "turns").cast(pl.List(TURN_DTYPE))
    # COUNT_COLUMNS[:4] follow the order of LABELS
    flags = pl.DataFrame([(head_code == i).alias(name) for i, name in enumerate(COUNT_COLUMNS[:4])])
    counts = segment_sums(flags, offsets).with_columns(pl.all().cast(pl.Int32))
    counts = counts.with_columns((pl.col("human_turns") + pl.col("ai_turns")).alias("all_turns"))
    return df.with_columns(turn_list, *counts, _first_user_task(parent, code, texts, n))


def _first_user_task(parent: pl.Series, code: pl.Series, texts: BlockTexts, n: int) -> pl.Series:
    """Per conversation, the full text of its first user item with visible text (null: none)."""
    at = ((code == LABELS.index(USER)) & texts.nonempty).fill_null(False).arg_true()
    rows = parent.gather(at)
    chosen = at.filter(run_starts(rows))
    is_chosen = scatter(len(code), chosen, pl.repeat(True, len(chosen), eager=True), pl.Boolean)
    picked = texts.select(is_chosen.gather(texts.owner).fill_null(False))
    task = join_groups(parent.gather(picked.owner), picked.text, n, absent_null=True)
    return task.alias("first_user_task")
