"""pipeline/engine/dropped.py: the exact comparison of a dropped record's items with its leaf's."""

from __future__ import annotations

import polars as pl
import pyarrow as pa

from pipeline.engine.dropped import _equal_items


def test_equal_items_is_struct_eq_missing() -> None:
    """Field-by-field equality gives what ``eq_missing`` on the item structs gives, nulls included."""
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
