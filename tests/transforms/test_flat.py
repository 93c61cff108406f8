"""The flat-column helpers behind role_swap, turns and compaction (``_flat``, ``_text``)."""

from __future__ import annotations

import polars as pl
import pyarrow as pa

from pipeline.transforms._flat import regroup, segment_sum, series, split, with_children
from pipeline.transforms._text import join_groups

VIEW_LIST = pa.large_list(pa.string_view())


def test_split_sliced_and_null_lists_with_stale_values() -> None:
    # row 1 is null but its offsets still cover "x": the flat values must not include it
    values = pa.array(["a", "b", "x", "c", "d"], pa.string_view())
    offsets = pa.array([0, 2, 3, 3, 5], pa.int64())
    arr = pa.LargeListArray.from_arrays(offsets, values, mask=pa.array([False, True, False, False]))
    f = split(arr)
    assert series(f.values).to_list() == ["a", "b", "c", "d"]
    assert f.offsets.to_pylist() == [0, 2, 2, 2, 4]
    assert f.parent().to_list() == [0, 0, 3, 3]
    assert f.index(f.parent()).to_list() == [0, 1, 0, 1]
    assert pl.from_arrow(f.rewrap(f.values)).to_list() == [["a", "b"], None, [], ["c", "d"]]  # type: ignore[union-attr]
    s = split(pa.array([["a"], ["b", "c"], ["d"]], VIEW_LIST).slice(1))  # offsets not starting at 0
    assert (s.offsets.to_pylist(), series(s.values).to_list()) == ([0, 2, 3], ["b", "c", "d"])


def test_kept_offsets_regroup_and_segment_sum() -> None:
    f = split(pa.array([["a", "b", "c"], [], None, ["d", "e"]], VIEW_LIST))
    keep = pl.Series([True, False, True, False, True])
    kept = series(f.values).gather(keep.arg_true()).to_arrow(compat_level=pl.CompatLevel.newest())
    out = pl.from_arrow(regroup(kept, f.kept_offsets(keep), f.nulls))
    assert out.to_list() == [["a", "c"], [], None, ["e"]]  # type: ignore[union-attr]
    assert segment_sum(pl.Series([1, 2, None, 4, 5]), f.offsets).to_list() == [3, 0, 0, 9]


def test_with_children_replaces_one_child_and_keeps_struct_nulls() -> None:
    arr = pa.array(
        [{"a": 1, "b": "x"}, None, {"a": 3, "b": "z"}], pa.struct({"a": pa.int64(), "b": pa.string()})
    )
    out = with_children(arr, {"b": pa.array(["X", None, "Z"])})
    assert out.to_pylist() == [{"a": 1, "b": "X"}, None, {"a": 3, "b": "Z"}]


def test_join_groups_single_several_empty_and_limit() -> None:
    keys = pl.Series([0, 0, 2, 3], dtype=pl.UInt32)
    texts = pl.Series(["ab", "cd", "xyz", ""])
    assert join_groups(keys, texts, 5).to_list() == ["ab\ncd", "", "xyz", "", ""]
    assert join_groups(keys, texts, 5, limit=2).to_list() == ["ab", "", "xy", "", ""]
    assert join_groups(keys, texts, 5, limit=3).to_list() == ["ab\n", "", "xyz", "", ""]
    assert join_groups(keys, texts, 5, absent_null=True).to_list() == ["ab\ncd", None, "xyz", "", None]
    none = pl.Series([], dtype=pl.UInt32)
    assert join_groups(none, pl.Series([], dtype=pl.String), 2, absent_null=True).to_list() == [None, None]
