"""pipeline/engine/dropped.py: the exact comparison of a dropped record's items with its leaf's."""

from __future__ import annotations

import numpy as np
import polars as pl
import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from pipeline.engine.dropped import _equal_at
from pipeline.schema import ITEM

BLOCK = pa.struct([("text", pa.string()), ("tags", pa.list_(pa.string()))])
SMALL_ITEM = pa.struct([("type", pa.string()), ("n", pa.int32()), ("content", pa.list_(BLOCK))])


def _reference(a: pa.Array, ia: np.ndarray, b: pa.Array, ib: np.ndarray) -> list[bool]:
    """Polars' ``eq_missing`` on the gathered item structs: what ``_equal_at`` must give."""
    sa, sb = pl.Series(a).gather(ia), pl.Series(b).gather(ib)
    return sa.eq_missing(sb).to_list()


def test_equal_at_is_struct_eq_missing() -> None:
    """Field by field, element by element: what ``eq_missing`` on the item structs gives, nulls included."""
    item = pa.struct([("type", pa.string()), ("content", pa.list_(pa.struct([("text", pa.string())])))])
    a = pa.array(
        [
            {"type": "message", "content": [{"text": "hi"}]},
            {"type": "message", "content": [{"text": "hi"}]},
            {"type": "message", "content": None},
            None,
            None,
            {"type": None, "content": []},
            {"type": "message", "content": [{"text": "hi"}, None]},
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
            {"type": "message", "content": [{"text": "hi"}, None]},
        ],
        item,
    )
    at = np.arange(len(a))
    got = _equal_at(a, at, b, at)
    assert got.tolist() == _reference(a, at, b, at) == [True, False, False, True, False, True, True]


_text = st.sampled_from(["", "a", "b", " a", "a long text that is not inlined in a view"]) | st.none()
_block = st.none() | st.fixed_dictionaries({"text": _text, "tags": st.none() | st.lists(_text, max_size=2)})
_item = st.none() | st.fixed_dictionaries(
    {
        "type": st.sampled_from(["message", "reasoning"]) | st.none(),
        "n": st.none() | st.integers(0, 2),
        "content": st.none() | st.lists(_block, max_size=3),
    }
)


@given(
    st.lists(_item, min_size=1, max_size=8),
    st.lists(_item, min_size=1, max_size=8),
    st.lists(st.tuples(st.integers(0, 7), st.integers(0, 7)), max_size=20),
    st.integers(0, 2),
)
def test_equal_at_matches_eq_missing_on_any_pairs(
    left: list, right: list, pairs: list[tuple[int, int]], skip: int
) -> None:
    """Any items, any pairs of positions, either side a slice: the same answer as ``eq_missing``."""
    a = pa.array([None] * skip + left, SMALL_ITEM).slice(skip)  # a slice: offsets that do not start at 0
    b = pa.array(right, SMALL_ITEM)
    ia = np.array([i % len(left) for i, _ in pairs], np.int64)
    ib = np.array([j % len(right) for _, j in pairs], np.int64)
    assert _equal_at(a, ia, b, ib).tolist() == _reference(a, ia, b, ib)


def test_equal_at_on_canonical_items_with_string_views() -> None:
    """The canonical item type against the same items as Polars hands them back (string views,
    large lists): equal where the items are, unequal where one block text differs."""
    rows = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
        {"type": "function_call", "call_id": "c1", "arguments": "{}", "content": None, "null_fields": ["id"]},
    ]
    a = pa.array(rows, ITEM)
    other = [dict(rows[0], content=[{"type": "input_text", "text": "hi!"}]), rows[1]]
    b = pl.Series(pa.array(rows + other, ITEM)).to_arrow(compat_level=pl.CompatLevel.newest())
    assert b.type != a.type  # views and large lists on one side
    got = _equal_at(a, np.array([0, 1, 0, 1]), b, np.array([0, 1, 2, 3]))
    assert got.tolist() == [True, True, False, True]
