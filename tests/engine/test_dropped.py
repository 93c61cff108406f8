"""pipeline/engine/dropped.py: taking the dropped rows out of a many-chunk partition."""

from __future__ import annotations

import numpy as np
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
