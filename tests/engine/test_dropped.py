"""pipeline/engine/dropped.py: taking the dropped rows out of a many-chunk partition."""

from __future__ import annotations

import numpy as np
import polars as pl
import pyarrow as pa
import pytest

from pipeline.engine.dropped import _rows_at


def _chunked() -> pa.Table:
    """A table of nested rows in several chunks, as a partition read from many stage-1 files."""
    parts = [
        pa.table({"k": [i, i + 1], "items": [[{"t": str(i)}], [{"t": str(i + 1)}, {"t": "x"}]]})
        for i in range(0, 10, 2)
    ]
    return pa.concat_tables(parts)


@pytest.mark.parametrize(
    "at",
    [[], [0], [0, 3, 4, 9], list(range(10)), [4, 2], [3, 3], [0, 5, 5, 7]],
    ids=["none", "one", "ascending", "all", "descending", "repeat", "ascending-repeat"],
)
def test_rows_at_equals_take(at: list[int]) -> None:
    """The filter path (ascending, no repeats) and the take path give the rows of a take."""
    t = _chunked()
    assert t.column("items").num_chunks == 5
    idx = np.array(at, np.uint32)  # as Polars' row index gives them
    got = _rows_at(t, idx)
    assert got.equals(t.take(pa.array(at, pa.int64())))
    assert got.column("k").to_pylist() == at


def test_equal_items_is_struct_eq_missing() -> None:
    """Field-by-field equality gives what ``eq_missing`` on the item structs gives, nulls included."""
    from pipeline.engine.dropped import _equal_items

    item = pa.struct([("type", pa.string()), ("content", pa.list_(pa.struct([("text", pa.string())])))])
    a = pa.array(
        [
            {"type": "message", "content": [{"text": "hi"}]},
            {"type": "message", "content": [{"text": "hi"}]},
            {"type": "message", "content": None},
            None,
            None,
            {"type": None, "content": []},
        ],
        item,
    )
    b = pa.array(
        [
            {"type": "message", "content": [{"text": "hi"}]},
            {"type": "message", "content": [{"text": "ho"}]},
            {"type": "message", "content": []},
            None,
            {"type": None, "content": None},
            {"type": None, "content": []},
        ],
        item,
    )
    sa, sb = pl.Series(a), pl.Series(b)
    got = _equal_items(sa, sb)
    assert got.tolist() == sa.eq_missing(sb).to_list() == [True, False, False, True, False, True]
