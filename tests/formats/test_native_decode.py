"""pipeline.formats._native_decode without the extension: what it does with what the C side says.

The byte-for-byte comparison with the Python decoder is tests/native/test_differential.py; these
cases drive the assembly with a stand-in module, so they run whether or not the extension is built.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import orjson
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.formats import DecodeResult, _decode_lines
from pipeline.formats._native_decode import _merge, decode


def _python(lines: list[bytes], file: str | None, numbers: list[int]) -> DecodeResult:
    return _decode_lines(lines, "responses", file, 1, numbers)


def test_a_batch_the_c_side_cannot_hold_is_decoded_in_python_and_counted() -> None:
    # decode_lines returns None when a column would pass 2 GiB (int32 offsets)
    native = SimpleNamespace(decode_lines=lambda *args: None)
    lines = [b'{"input": "a"}', b"", b'{"input": 1}', b'{"input": "b"}']
    out = decode(native, "responses", lines, "f.jsonl", 10, _python)
    assert out.fallback == {"batch_too_large": 4}
    assert out.table.column("source_line").to_pylist() == [10, 13]
    assert [r.line for r in out.rejected] == [12]
    assert out.blank_lines == 1


@settings(max_examples=200, deadline=None)
@given(st.lists(st.booleans(), max_size=30))
def test_native_and_python_rows_merge_in_line_order(from_python: list[bool]) -> None:
    """_merge interleaves the two decoders' rows by line index, whatever the runs of fallbacks."""
    lines = [orjson.dumps({"input": f"line {i}"}) for i in range(len(from_python))]
    table = _decode_lines(lines, "responses", "f.jsonl", 1).table
    where = np.array(from_python, bool)
    native_rows, python_rows = np.flatnonzero(~where), np.flatnonzero(where)
    merged = _merge(table.take(pa.array(native_rows, pa.int64())), native_rows,
                    table.take(pa.array(python_rows, pa.int64())), python_rows)  # fmt: skip
    assert merged.equals(table)
    assert merged.column("source_line").num_chunks == 1
