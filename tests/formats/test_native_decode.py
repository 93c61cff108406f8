"""pipeline.formats._native_decode without the extension: what it does with what the C side says.

The byte-for-byte comparison with the Python decoder is tests/native/test_differential.py; these
cases drive the assembly with a stand-in module, so they run whether or not the extension is built.
"""

from __future__ import annotations

from types import SimpleNamespace

from pipeline.formats import DecodeResult, _decode_lines
from pipeline.formats._native_decode import decode


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
