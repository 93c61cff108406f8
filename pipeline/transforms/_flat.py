"""Flat views of list columns (one entry per element, with its row), and the zero-copy way back.

The steps that touch every item of every conversation (role_swap, turns, compaction) do not use
``list.eval`` over item structs, which evaluates per list. They split the ``items`` list once into
its flat values plus the row layout, compute on flat columns with Polars (one vectorized pass per
column), and rebuild the nested output only where it changes: a struct with one child replaced, a
list re-wrapped with its original offsets, or new offsets after dropping elements.

Polars hands its string views to Arrow as ``string_view`` without copying (``CompatLevel.newest``)
and takes them back the same way, so moving between the two costs nothing. Arrow's compute kernels
mostly lack ``string_view`` support, so string work stays in Polars and Arrow only re-wraps buffers
(struct children, list offsets, validity).

>>> import pyarrow as pa
>>> f = split(pa.array([["a", "b"], None, [], ["c"]], pa.large_list(pa.string_view())))
>>> f.parent().to_list(), f.index(f.parent()).to_list()
([0, 0, 3], [0, 1, 0])
>>> keep = pl.Series([False, True, True])
>>> pl.from_arrow(regroup(gather(f.values, keep.arg_true()), f.kept_offsets(keep), f.nulls)).to_list()
[['b'], None, [], ['c']]
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.arrays import one_array

NEWEST = pl.CompatLevel.newest()

Frame = TypeVar("Frame", pl.DataFrame, pl.LazyFrame)


def eager(frame: Frame, fn: Callable[[pl.DataFrame], pl.DataFrame]) -> Frame:
    """Run a DataFrame function on a DataFrame or a LazyFrame, returning the same kind.

    The flat steps need the materialized buffers, so a lazy input is collected here (the plan up to
    this step runs first) and the result handed back lazy for the next step.
    """
    if isinstance(frame, pl.LazyFrame):
        return fn(frame.collect()).lazy()
    return fn(frame)


def arrow(s: pl.Series) -> pa.Array:
    """A Polars series as one Arrow array, strings as views (no copy of the string bytes).

    A series of several chunks is exported chunk by chunk and concatenated by Arrow: Polars'
    own rechunk of the nested ``items`` column costs about 3.5x Arrow's (measured on 50,000
    synthetic conversations in two chunks: 235 ms against 66 ms of CPU), up to a third of the
    three flat steps' time on a table read from Parquet.
    """
    if s.n_chunks() > 1:
        return one_array(s.to_frame().to_arrow(compat_level=NEWEST).column(0))
    return one_array(s.to_arrow(compat_level=NEWEST))


def series(arr: pa.Array | pa.ChunkedArray, name: str = "") -> pl.Series:
    """An Arrow array as a Polars series (views and buffers are reused, not copied)."""
    s = pl.from_arrow(arr)
    assert isinstance(s, pl.Series)
    return s.alias(name)


def child(arr: pa.Array, name: str) -> pl.Series:
    """A struct array's field as a Polars series (parent nulls propagate to the field)."""
    return series(pc.struct_field(arr, name), name)


def with_children(arr: pa.Array, children: dict[str, pa.Array]) -> pa.StructArray:
    """``arr`` (a struct array) with the named children replaced; every other child is reused."""
    cols = [children[f.name] if f.name in children else pc.struct_field(arr, f.name) for f in arr.type]
    fields = [pa.field(f.name, c.type, f.nullable) for f, c in zip(arr.type, cols, strict=True)]
    mask = arr.is_null() if arr.null_count else None
    return pa.StructArray.from_arrays(cols, fields=fields, mask=mask)


@dataclass(frozen=True)
class Flat:
    """A list column as its flat ``values`` plus the layout (``offsets``, null rows) to rebuild it.

    ``values`` holds the elements of every row in order; a null or empty list contributes none.
    ``offsets`` has ``rows + 1`` entries starting at 0; ``nulls`` marks null lists (None: none).
    """

    values: pa.Array
    offsets: pa.Int64Array
    nulls: pa.BooleanArray | None

    @property
    def rows(self) -> int:
        return len(self.offsets) - 1

    def parent(self) -> pl.Series:
        """The row of each element (Int64)."""
        normal = pa.LargeListArray.from_arrays(self.offsets, pa.nulls(len(self.values), pa.null()))
        return series(pc.list_parent_indices(normal), "__row")

    def index(self, parent: pl.Series, at: pl.Series | None = None) -> pl.Series:
        """The position inside its list (Int32) of every element, or of the elements at ``at``.

        ``parent`` is :meth:`parent` (all elements).
        """
        if at is None:
            at, rows = pl.int_range(0, len(parent), eager=True, dtype=pl.Int64), parent
        else:
            rows = parent.gather(at)
        return (at.cast(pl.Int64) - series(self.offsets).gather(rows)).cast(pl.Int32)

    def rewrap(self, values: pa.Array) -> pa.LargeListArray:
        """``values`` (aligned with :attr:`values`) as a list column with this layout."""
        return pa.LargeListArray.from_arrays(self.offsets, values, mask=self.nulls)

    def segment_sum(self, values: pl.Series) -> pl.Series:
        """Per row, the sum of ``values`` (aligned with the elements); 0 for an empty or null row."""
        return segment_sum(values, self.offsets)

    def kept_offsets(self, keep: pl.Series) -> pa.Int64Array:
        """Offsets of the rows once only the elements where ``keep`` is true remain."""
        return _offsets_of(self.offsets, keep)


def split(arr: pa.Array | pa.ChunkedArray) -> Flat:
    """Split a list array into :class:`Flat` (handles slices and null lists with stale backing)."""
    arr = one_array(arr)
    if arr.null_count == 0 and pa.types.is_large_list(arr.type):
        # no null list can hide stale values: the array's own offsets, shifted to start at 0
        offsets = arr.offsets
        if offsets[0].as_py() != 0:
            offsets = pc.subtract(offsets, offsets[0])
        return Flat(arr.flatten(), offsets, None)  # type: ignore[arg-type]
    lengths = pc.fill_null(pc.list_value_length(arr), 0).cast(pa.int64())
    offsets = pa.concat_arrays([pa.array([0], pa.int64()), pc.cumulative_sum(lengths)])
    nulls = arr.is_null() if arr.null_count else None
    return Flat(arr.flatten(), offsets, nulls)


def cumulative(values: pl.Series) -> pa.Int64Array:
    """``[0, v0, v0 + v1, ...]`` (nulls count 0), so a segment's sum is ``c[end] - c[start]``.

    Arrow's cumulative sum: several times faster than Polars' ``cum_sum`` here.
    """
    ints = arrow(values.cast(pl.Int64))
    running = pc.cumulative_sum(pc.fill_null(ints, 0) if ints.null_count else ints)
    return pa.concat_arrays([pa.array([0], pa.int64()), running])  # type: ignore[return-value]


def segment_sum(values: pl.Series, offsets: pa.Int64Array) -> pl.Series:
    """Per segment ``[offsets[i], offsets[i+1])``, the sum of ``values`` (Int64)."""
    c = cumulative(values)
    return series(pc.subtract(pc.take(c, offsets[1:]), pc.take(c, offsets[:-1])))


def segment_sums(values: pl.DataFrame, offsets: pa.Int64Array) -> pl.DataFrame:
    """:func:`segment_sum` of every column of ``values``, same names."""
    return pl.DataFrame([segment_sum(values[name], offsets).alias(name) for name in values.columns])


def _offsets_of(offsets: pa.Int64Array, keep: pl.Series) -> pa.Int64Array:
    return pc.take(cumulative(keep), offsets)  # type: ignore[return-value]


def run_starts(values: pl.Series) -> pl.Series:
    """Whether each entry differs from the one before it (the first is true): on an ascending
    series, the first occurrence of each value, without the hashing of ``is_first_distinct``.

    >>> run_starts(pl.Series([0, 0, 2, 5, 5])).to_list()
    [True, False, True, True, False]
    """
    return values.ne_missing(values.shift(1)).fill_null(True)


def offsets_by_row(rows: pl.Series, n_rows: int) -> pa.Int64Array:
    """Offsets of ``n_rows`` lists from the (ascending) row of each element."""
    bounds = pl.int_range(0, n_rows + 1, eager=True, dtype=rows.dtype)
    return arrow(rows.search_sorted(bounds, side="left").cast(pl.Int64))  # type: ignore[return-value]


def regroup(
    values: pa.Array, offsets: pa.Int64Array, nulls: pa.BooleanArray | None = None
) -> pa.LargeListArray:
    """Flat ``values`` as a list column with the given ``offsets`` (and null rows)."""
    return pa.LargeListArray.from_arrays(offsets, values, mask=nulls)


def gather(values: pa.Array, at: pl.Series) -> pa.Array:
    """``values[at]``, through Polars (Arrow's take has no ``string_view`` kernel)."""
    return arrow(series(values).gather(at))


def scatter(n: int, at: pl.Series, values: pl.Series, dtype: pl.DataType) -> pl.Series:
    """A length-``n`` series of nulls with ``values`` put at positions ``at``."""
    out = pl.repeat(None, n, dtype=dtype, eager=True)
    if len(at):
        out.scatter(at, values)
    return out
