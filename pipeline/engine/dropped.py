"""The ``dropped`` table: records a grouping step (``threads:keep=leaves``) left out, listed, not lost.

A record ``keep=leaves`` drops is a prefix of a kept leaf (or a duplicate of a kept record), so
nothing of it needs encoding again: ``dropped/`` holds its canonical row as it entered the step
(``conversation_id``, provenance, every top-level field, ``n_items``) plus ``leaf_id`` (the
kept record that contains its items) and ``reason``, with ``items`` **null** when they are exactly
the leaf's first ``n_items`` items as written (the usual case). Rebuilding it:
``items = leaf.items[:n_items]`` when ``items`` is null, the row as it is otherwise (its items
differ from the leaf's in a field the content hash leaves out, e.g. an item ``id``, or a step after
``threads`` changed the leaf). ``rejected/`` keeps only the records that were really rejected.
Counts: ``read == written + rejected + dropped``.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.arrays import one_array
from pipeline.errors import LEAF_OF
from pipeline.transforms._flat import arrow, series, split

DROPPED = "dropped"  # the folder (run layout) and the role of FILE.dropped.parquet (single file)
KEYS = ["conversation_id", "source_file", "source_line"]
EXTRA = [pa.field("leaf_id", pa.string()), pa.field("reason", pa.string())]


def split_dropped(rejected: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``(dropped, rejected)``: the rows of ``apply_steps``' rejected frame that a grouping step
    dropped (their reason names the leaf that holds them; ``leaf_id`` added), and the others."""
    leaf = pl.col("reason").str.extract(LEAF_OF, 1)
    marked = rejected.with_columns(leaf.alias("leaf_id"))
    is_dropped = pl.col("leaf_id").is_not_null()
    return marked.filter(is_dropped), marked.filter(~is_dropped).drop("leaf_id")


def dropped_rows(source: pa.Table, kept: pl.DataFrame, dropped: pl.DataFrame) -> pa.Table:
    """The ``dropped/`` rows (module docstring) of the ``dropped`` keys (:func:`split_dropped`):
    their rows of ``source`` (the batch as it entered the steps), ``items`` null where they equal
    the leaf's first ``n_items`` items in ``kept`` (the rows the steps kept)."""
    # rows are found by their key columns and taken by Arrow: only ``items`` goes through Polars
    src = pl.from_arrow(source.select(KEYS))
    assert isinstance(src, pl.DataFrame)
    first = src.with_row_index("__src").group_by(KEYS, maintain_order=True).agg(pl.col("__src").first())
    leaf_at = (
        kept.select(pl.col("conversation_id").alias("leaf_id"))
        .with_row_index("__leaf")
        .unique("leaf_id", keep="first", maintain_order=True)
    )
    at = (
        dropped.select(*KEYS, "leaf_id", "reason")
        .cast(dict(src.schema))  # type: ignore[arg-type]
        .join(first, on=KEYS, how="left", nulls_equal=True, maintain_order="left")
        .join(leaf_at, on="leaf_id", how="left", maintain_order="left")
    )
    if at.get_column("__src").null_count():  # the step only drops rows it was given
        raise RuntimeError("a dropped record is not in its batch")
    rows = source.take(at.get_column("__src").to_arrow())
    own = one_array(rows.column("items"))
    same = _prefix_of_leaf(own, arrow(kept.get_column("items")), at.get_column("__leaf").to_numpy())
    items = pc.if_else(pa.array(same, pa.bool_()), pa.nulls(len(own), own.type), own)
    i = rows.schema.get_field_index("items")
    rows = rows.set_column(i, rows.schema.field(i), items)
    for name in ("leaf_id", "reason"):
        rows = rows.append_column(name, at.get_column(name).to_arrow().cast(pa.string()))
    return rows


def _prefix_of_leaf(own: pa.Array, leaves: pa.Array, leaf_row: np.ndarray) -> np.ndarray:
    """Per row of ``own`` (item lists): are its items exactly the first ones of ``leaves[leaf_row]``
    (NaN: no leaf)? Compared item by item on the flat items (no copy of a leaf per record: a leaf
    holds many dropped records)."""
    mine, theirs = split(own), split(leaves)
    offsets = mine.offsets.to_numpy()
    n = np.diff(offsets)
    found = ~np.isnan(leaf_row) if leaf_row.dtype.kind == "f" else np.ones(len(n), bool)
    row = np.where(found, np.nan_to_num(leaf_row), 0).astype(np.int64)
    leaf_offsets = theirs.offsets.to_numpy()
    fits = found & (leaf_offsets[row + 1] - leaf_offsets[row] >= n)
    if own.null_count:
        fits &= own.is_valid().to_numpy(zero_copy_only=False)
    parent = mine.parent().to_numpy()
    position = np.arange(len(parent), dtype=np.int64) - offsets[parent]
    at = np.where(fits[parent], leaf_offsets[row[parent]] + position, 0)
    equal = _equal_at(mine.values, np.arange(len(parent), dtype=np.int64), theirs.values, at)
    bad = np.concatenate([[0], np.cumsum(~equal)])
    return fits & (bad[offsets[1:]] - bad[offsets[:-1]] == 0)


def _equal_at(a: pa.Array, ia: np.ndarray, b: pa.Array, ib: np.ndarray) -> np.ndarray:
    """Per pair ``k``, is ``a[ia[k]]`` equal to ``b[ib[k]]`` in every field (null equal to null)?

    What Polars' ``eq_missing`` gives on the two gathered columns, computed without gathering
    nested values: structs field by field, lists of structs element by element on their flat
    values, the rest (strings, numbers, lists of strings) by ``eq_missing`` on gathered string
    views. ``eq_missing`` on a list of structs compares row by row: it was 1.6 of the 1.9 s this
    comparison took on 806,405 items (a keep=leaves batch of the synthetic request log).

    >>> s = pa.struct([("t", pa.string()), ("c", pa.list_(pa.struct([("x", pa.string())])))])
    >>> a = pa.array([{"t": "m", "c": [{"x": "hi"}]}, {"t": "m", "c": [{"x": "hi"}]}, None], s)
    >>> b = pa.array([{"t": "m", "c": [{"x": "ho"}]}, None, {"t": "m", "c": [{"x": "hi"}]}], s)
    >>> _equal_at(a, np.array([0, 1, 2, 2]), b, np.array([2, 2, 1, 0])).tolist()
    [True, True, True, False]
    """
    va = _valid(a)[ia]
    vb = _valid(b)[ib]
    equal = va == vb
    both = va & vb
    if not both.any():  # e.g. a field no item uses: null on both sides is all there is to compare
        return equal
    if pa.types.is_struct(a.type):
        for i in range(a.type.num_fields):
            equal &= ~both | _equal_at(a.field(i), ia, b.field(i), ib)
    elif _is_list(a.type) and pa.types.is_struct(a.type.value_type):
        equal &= ~both | _equal_lists_at(a, ia, b, ib)
    else:
        equal &= ~both | _equal_leaves_at(a, ia, b, ib)
    return equal


def _is_list(t: pa.DataType) -> bool:
    return pa.types.is_list(t) or pa.types.is_large_list(t)


def _valid(arr: pa.Array) -> np.ndarray:
    if arr.null_count == 0:
        return np.ones(len(arr), bool)
    return arr.is_valid().to_numpy(zero_copy_only=False)


def _equal_leaves_at(a: pa.Array, ia: np.ndarray, b: pa.Array, ib: np.ndarray) -> np.ndarray:
    sa, sb = series(a), series(b)
    return sa.gather(ia).eq_missing(sb.gather(ib)).to_numpy()


def _equal_lists_at(a: pa.Array, ia: np.ndarray, b: pa.Array, ib: np.ndarray) -> np.ndarray:
    """:func:`_equal_at` for lists of structs (the rows where both are valid): same length, and
    equal element by element (compared once on the flat values, summed back per pair)."""
    fa, fb = split(a), split(b)
    oa, ob = fa.offsets.to_numpy(), fb.offsets.to_numpy()
    na, nb = (oa[1:] - oa[:-1])[ia], (ob[1:] - ob[:-1])[ib]
    same = na == nb
    n = np.where(same, na, 0)
    ends = np.cumsum(n)
    total = int(ends[-1]) if len(ends) else 0
    pos = np.arange(total, dtype=np.int64) - np.repeat(ends - n, n)
    ea = np.repeat(oa[:-1][ia], n) + pos
    eb = np.repeat(ob[:-1][ib], n) + pos
    bad = np.concatenate([[0], np.cumsum(~_equal_at(fa.values, ea, fb.values, eb))])
    return same & (bad[ends] - bad[ends - n] == 0)


def rebuild(dropped: pl.DataFrame, leaves: pl.DataFrame) -> pl.DataFrame:
    """The dropped records as they entered the step: ``items`` from the leaf where null (the
    inverse of :func:`dropped_rows`; ``leaves``: the written records), without ``leaf_id``/``reason``."""
    items = leaves.select(pl.col("conversation_id").alias("leaf_id"), pl.col("items").alias("__leaf"))
    items = items.unique("leaf_id", keep="first", maintain_order=True)
    return (
        dropped.join(items, on="leaf_id", how="left", maintain_order="left")
        .with_columns(pl.coalesce("items", pl.col("__leaf").list.head(pl.col("n_items"))).alias("items"))
        .drop("__leaf", "leaf_id", "reason")
    )


def dropped_reasons(table: pa.Table) -> dict[str, int]:
    """Dropped records by reason without the leaf (``reason_of``'s counting, vectorized)."""
    reasons = pl.Series("reason", table.column("reason")).str.replace(LEAF_OF, "")
    counts = reasons.value_counts()
    return dict(zip(counts.get_column("reason").to_list(), counts.get_column("count").to_list(), strict=True))
