"""Arrow arrays without needless copies.

``ChunkedArray.combine_chunks()`` copies every buffer even when there is a single chunk (pyarrow
26: ``concat_arrays`` of one array), and a batch's ``items`` column is a few hundred MB. Reading a
Parquet row-group window or taking rows gives one chunk, so the copy was pure cost: fresh pages,
which are expensive on the machines we measure on (docs/internals/profile.md).

>>> import pyarrow as pa
>>> a = pa.array([1, 2, 3])
>>> one_array(pa.chunked_array([a])).buffers()[1].address == a.buffers()[1].address
True
>>> one_array(pa.chunked_array([a, a])).to_pylist()
[1, 2, 3, 1, 2, 3]
"""

from __future__ import annotations

import pyarrow as pa


def one_array(arr: pa.Array | pa.ChunkedArray) -> pa.Array:
    """``arr`` as one array: its only chunk as it is (no copy), else the chunks concatenated.

    A chunk that is a slice (offset ≠ 0) is concatenated like several chunks, so callers that read
    buffers directly still see an array starting at offset 0, as ``combine_chunks`` gave them.
    """
    if not isinstance(arr, pa.ChunkedArray):
        return arr
    if arr.num_chunks == 1 and arr.chunk(0).offset == 0:
        return arr.chunk(0)
    return arr.combine_chunks()
