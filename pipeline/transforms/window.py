"""Windows and slices over the turn view: shorter conversations that still make sense.

``window`` keeps the inline system/developer messages (instructions; top-level instructions are
untouched), the first user task (``keep_first_task``) and a suffix of whole turns: the last
``last_turns`` user/assistant/tool turns and/or as many trailing turns as fit in ``max_chars``
characters of visible text (both given: the shorter suffix). Items without a label (compaction,
references) are kept when they sit inside the suffix.

``slice_turns`` keeps turns ``[start:stop]`` of the ``turns`` list (Python slice semantics, negative
indices count from the end, Eleanor's ``__getitem__``) and every item between them.

Both never leave a tool output without its call: an output whose ``call_id`` belongs to a call of
the conversation that was not kept is dropped too. (An output that had no call to begin with stays.)
"""

from __future__ import annotations

import polars as pl

from pipeline.transforms._items import (
    CALL_KINDS,
    IDX,
    IT,
    ROW,
    SYSTEM,
    USER,
    explode_items,
    field,
    is_tool_output,
    items_form_after,
    label,
    regroup_items,
    text,
    with_row,
)


def _long(
    frame: pl.DataFrame | pl.LazyFrame, *, with_system: bool
) -> tuple[pl.DataFrame | pl.LazyFrame, ...]:
    """Exploded items with label/text and the per-turn table (``__k``: turn number in its row)."""
    long = explode_items(frame).with_columns(
        label(pl.col(IT)).alias("__label"), text(pl.col(IT)).alias("__text")
    )
    counted = pl.col("__label").is_not_null()
    if not with_system:
        counted = counted & (pl.col("__label") != SYSTEM)
    t = long.filter(counted)
    starts = (pl.col("__label") != pl.col("__label").shift(1)) | (pl.col(ROW) != pl.col(ROW).shift(1))
    t = t.with_columns(starts.fill_null(True).cum_sum().alias("__turn"))
    per_turn = t.group_by("__turn", maintain_order=True).agg(
        pl.col(ROW).first(),
        pl.col(IDX).first().alias("__first"),
        pl.col(IDX).last().alias("__last"),
        pl.col("__text").str.len_chars().sum().alias("__chars"),
    )
    per_turn = per_turn.with_columns(
        (pl.col("__turn") - pl.col("__turn").min().over(ROW)).cast(pl.Int64).alias("__k"),
        pl.len().over(ROW).cast(pl.Int64).alias("__T"),
    )
    return long, per_turn


def _drop_orphans(long: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame | pl.LazyFrame:
    """Apply ``__keep`` and drop kept tool outputs whose call exists but was not kept."""
    cid = field("call_id", pl.col(IT))
    is_call = field("type", pl.col(IT)).is_in(CALL_KINDS) | field("type", pl.col(IT)).str.ends_with("_call")
    calls = (
        long.filter(is_call & cid.is_not_null())
        .group_by(ROW, cid.alias("__cid"))
        .agg(pl.col("__keep").any().alias("__call_kept"))
    )
    kept = long.filter(pl.col("__keep")).with_columns(cid.alias("__cid"))
    kept = kept.join(calls, on=[ROW, "__cid"], how="left", maintain_order="left")
    orphan = is_tool_output(pl.col(IT)) & (pl.col("__call_kept") == False)  # noqa: E712 (null: no call)
    return kept.filter(~orphan.fill_null(False))


def _finish(f: pl.DataFrame | pl.LazyFrame, long: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame | pl.LazyFrame:
    n_before = pl.col("items").list.len()
    out = regroup_items(f.with_columns(n_before.alias("__n")), _drop_orphans(long).select(ROW, IT))
    changed = pl.col("items").list.len() != pl.col("__n")
    return out.with_columns(items_form_after(changed.fill_null(False))).drop(ROW, "__n")


def window(
    frame: pl.DataFrame | pl.LazyFrame,
    last_turns: int | None = None,
    max_chars: int | None = None,
    keep_first_task: bool = True,
) -> pl.DataFrame | pl.LazyFrame:
    """Keep instructions, the first task and the last turns (see the module doc)."""
    f = with_row(frame)
    long, per_turn = _long(f, with_system=False)
    cuts = []
    if last_turns is not None:
        cuts.append(pl.when(pl.col("__k") == pl.col("__T") - last_turns).then(pl.col("__first")).min())
        # fewer turns than asked: everything is in the window
        cuts.append(pl.when(pl.col("__T") <= last_turns).then(pl.lit(0)).otherwise(None).min())
    if max_chars is not None:
        suffix = pl.col("__chars").reverse().cum_sum().reverse()
        cuts.append(pl.col("__first").filter(suffix <= max_chars).min())
    per_row = per_turn.group_by(ROW).agg(*(c.alias(f"__c{i}") for i, c in enumerate(cuts)))
    never = pl.lit(2**31 - 1)
    # a cut of None means "keep no turn" (a conversation with no turns has no row here at all)
    cut_n = pl.coalesce("__c1", "__c0", never) if last_turns is not None else pl.lit(0)
    cut_c = pl.coalesce(pl.col(f"__c{len(cuts) - 1}"), never) if max_chars is not None else pl.lit(0)
    per_row = per_row.select(ROW, pl.max_horizontal(cut_n, cut_c).alias("__cut"))
    long = long.join(per_row, on=ROW, how="left", maintain_order="left")
    task = pl.lit(False)
    if keep_first_task:
        is_task = (pl.col("__label") == USER) & (pl.col("__text") != "")
        first_task = pl.col(IDX).filter(is_task).min().over(ROW)
        task = pl.col(IDX) == first_task
    keep = (
        (pl.col(IDX) >= pl.col("__cut").fill_null(0)) | (pl.col("__label") == SYSTEM) | task.fill_null(False)
    )
    return _finish(f, long.with_columns(keep.alias("__keep")))


def slice_turns(
    frame: pl.DataFrame | pl.LazyFrame, start: int | None = None, stop: int | None = None
) -> pl.DataFrame | pl.LazyFrame:
    """Keep turns ``[start:stop]`` of the turn list and the items between them (see the module doc)."""
    f = with_row(frame)
    long, per_turn = _long(f, with_system=True)
    T = pl.col("__T")

    def bound(v: int | None, default: pl.Expr) -> pl.Expr:
        if v is None:
            return default
        raw = pl.lit(v) if v >= 0 else T + v
        return pl.min_horizontal(pl.max_horizontal(raw, pl.lit(0)), T)

    s, e = bound(start, pl.lit(0)), bound(stop, T)
    per_row = per_turn.group_by(ROW).agg(
        pl.col("__first").filter(pl.col("__k") == s.first()).first().alias("__lo"),
        pl.col("__last").filter(pl.col("__k") == e.first() - 1).first().alias("__hi"),
        (s.first() < e.first()).alias("__any"),
    )
    long = long.join(per_row, on=ROW, how="left", maintain_order="left")
    keep = (
        pl.col("__any").fill_null(False) & (pl.col(IDX) >= pl.col("__lo")) & (pl.col(IDX) <= pl.col("__hi"))
    )
    return _finish(f, long.with_columns(keep.fill_null(False).alias("__keep")))
