"""``decode_files`` (many small files' lines in one decode call) gives what decoding each file
alone and concatenating gives: the same rows (ids hash each record's own file and line), the same
rejections with their file and line, the same blank count, in every wire format."""

from __future__ import annotations

import orjson
import pyarrow as pa
import pytest

from pipeline.formats import decode_files, decode_lines
from pipeline.synth import generate
from tests.cases import BAD_LINES


@pytest.mark.parametrize("fmt", ["responses", "chat", "anthropic"])
def test_one_call_equals_one_call_per_file(fmt: str) -> None:
    recs = [orjson.dumps(r) for r in generate(fmt, 30, seed=9)]
    bad = [line for f, line, _ in BAD_LINES if f == fmt]
    files = [(f"dir/f{k}.jsonl", [recs[k]]) for k in range(30)]
    files[4] = ("dir/f4.jsonl", [b"", recs[4], *bad, b"not json", b"   "])  # several lines, bad ones
    files[9] = ("dir/empty.jsonl", [])
    one = decode_files(files, fmt)
    each = [decode_lines(lines, fmt, source_file=name, first_line=1) for name, lines in files]
    assert one.table.equals(pa.concat_tables([r.table for r in each]))
    assert one.rejected == [r for res in each for r in res.rejected]
    assert one.blank_lines == sum(r.blank_lines for r in each) == 2
    assert len({*one.table.column("conversation_id").to_pylist()}) == one.table.num_rows
