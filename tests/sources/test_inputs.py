"""Reading wire records whatever the file's shape (pipeline/sources/inputs.py)."""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
from typing import Any

import orjson
import pyarrow as pa
import pytest

from pipeline.formats import MAX_DEPTH
from pipeline.sources.inputs import compression_of, is_document, record_batches
from tests.cases import CASES

RECORDS = [r for fmt in sorted(CASES) for _, r in CASES[fmt]]
JSONL = b"".join(orjson.dumps(r) + b"\n" for r in RECORDS)


def _zstd(data: bytes) -> bytes:
    return pa.compress(data, codec="zstd", asbytes=True)  # a zstd frame, as the zstd tool writes


def _zstd_stream(data: bytes) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.CompressedOutputStream(sink, "zstd") as out:
        out.write(data)
    return sink.getvalue().to_pybytes()


COMPRESSORS = {"gzip": gzip.compress, "bz2": bz2.compress, "xz": lzma.compress, "zstd": _zstd_stream}


def _read(data: bytes, chunk_bytes: int = 1 << 20, cap: int = 1 << 30) -> tuple[list[tuple[int, bytes]], list]:  # noqa: E501
    lines, rejected = [], []
    for b in record_batches(io.BytesIO(data), "f", chunk_bytes, cap):
        lines.extend((n, line) for n, line in enumerate(b.lines, b.first_line) if line)
        rejected.extend(b.rejected)
    return lines, rejected


def test_jsonl_in_small_chunks_keeps_line_numbers() -> None:
    lines, rejected = _read(JSONL + b"\n" + b'{"input": "last, no newline"}', chunk_bytes=100)
    assert rejected == []
    assert [n for n, _ in lines] == [*range(1, len(RECORDS) + 1), len(RECORDS) + 2]
    assert [orjson.loads(x) for _, x in lines[:-1]] == RECORDS


@pytest.mark.parametrize("kind", sorted(COMPRESSORS))
def test_compressed_is_streamed_with_decompressed_line_numbers(kind: str) -> None:
    data = COMPRESSORS[kind](JSONL)
    assert compression_of(data) == kind
    lines, rejected = _read(data, chunk_bytes=64)
    assert rejected == [] and [n for n, _ in lines] == list(range(1, len(RECORDS) + 1))
    assert [orjson.loads(x) for _, x in lines] == RECORDS


def test_zstd_frame_with_known_size() -> None:
    lines, _ = _read(_zstd(JSONL))
    assert len(lines) == len(RECORDS)


def test_json_array_numbers_elements_from_1() -> None:
    lines, rejected = _read(orjson.dumps(RECORDS, option=orjson.OPT_INDENT_2))
    assert rejected == [] and [n for n, _ in lines] == list(range(1, len(RECORDS) + 1))
    assert [orjson.loads(x) for _, x in lines] == RECORDS


def test_pretty_printed_document_is_one_record() -> None:
    doc = orjson.dumps(RECORDS[0], option=orjson.OPT_INDENT_2)
    for data in (doc, gzip.compress(doc)):
        lines, rejected = _read(data)
        assert rejected == [] and [(n, orjson.loads(x)) for n, x in lines] == [(1, RECORDS[0])]


def test_array_element_too_deep_is_rejected_alone() -> None:
    deep = "[" * (MAX_DEPTH + 5) + "]" * (MAX_DEPTH + 5)
    data = b'[{"input": "a"}, {"input": ' + deep.encode() + b'}, {"input": "c"}]'
    lines, rejected = _read(data)
    assert [n for n, _ in lines] == [1, 3]
    assert [r.line for r in rejected] == [2] and "nested" in rejected[0].error


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        (b'{"input": 1e400}', "$[1].input: number too large for a 64-bit float"),
        (b'{"input": ' + b"[" * 1100 + b"]" * 1100 + b"}", f"$[1]: nested deeper than {MAX_DEPTH} levels (more than 1024)"),  # noqa: E501
        (b'{"input": "b", "input": "c"}', "$[1].input: duplicate key 'input' (JSON pointer /input)"),
    ],
)  # fmt: skip
def test_array_element_over_a_limit_is_rejected_alone_with_its_text(bad: bytes, reason: str) -> None:
    """Past orjson's own limits (1024 levels, a double's range) the parse of the whole array fails:
    the elements are then parsed one by one, so the good neighbours are still written."""
    data = b'[{"input": "a"},\n ' + bad + b',\n {"input": "c"}]'
    lines, rejected = _read(data)
    assert [(n, orjson.loads(x)) for n, x in lines] == [(1, {"input": "a"}), (3, {"input": "c"})]
    assert [(r.line, r.error, r.input) for r in rejected] == [(2, reason, bad.decode())]


def test_document_over_the_cap_is_one_rejection() -> None:
    lines, rejected = _read(orjson.dumps(RECORDS), cap=1000)
    assert lines == [] and len(rejected) == 1
    assert "max_document_bytes = 1000" in rejected[0].error and rejected[0].line == 1


def test_invalid_json_document() -> None:
    """One line that is not JSON: one rejection. Several: read as JSON Lines (each line then goes to
    the decoder and is rejected by its number), since it may be JSONL with a broken first line."""
    lines, rejected = _read(b'[{"input": "a"}, {"input": ')
    assert lines == [] and len(rejected) == 1 and "invalid JSON" in rejected[0].error
    lines, rejected = _read(b'[{"input": "a"},\n {"input": ')
    assert rejected == [] and lines == [(1, b'[{"input": "a"},'), (2, b' {"input": ')]


def test_corrupt_and_truncated_streams_keep_what_was_read() -> None:
    data = gzip.compress(JSONL)
    lines, rejected = _read(data[: len(data) // 2], chunk_bytes=64)  # cut off half way
    assert len(rejected) == 1 and "cannot read the rest of the input" in rejected[0].error
    assert rejected[0].line == len(lines) + 1
    bad = data[:20] + bytes(b ^ 0xFF for b in data[20:60]) + data[60:]
    lines, rejected = _read(bad)
    assert len(rejected) == 1 and rejected[0].file == "f"


def test_empty_inputs() -> None:
    for data in (b"", b"\n\n", gzip.compress(b""), b"[]"):
        assert _read(data) == ([], [])


def test_a_broken_first_line_does_not_make_a_document() -> None:
    """JSON Lines whose first line is cut off (or an array) stay JSON Lines: the bad line is
    rejected by the decoder later, its neighbours are read."""
    good = orjson.dumps(RECORDS[0])
    for first in (b'{"input": [', b"[1, 2", b"[1, 2]", b'{\n"input"'):
        data = first + b"\n" + good + b"\n" + good + b"\n"
        lines, rejected = _read(data)
        assert rejected == [] and [n for n, _ in lines][-2:] == [len(lines) - 1, len(lines)]
        assert lines[-1] == (len(lines), good) and len(lines) >= 3
    lines, _ = _read(b"[1, 2]\n")  # a one-line array alone is a document
    assert [x for _, x in lines] == [b"1", b"2"]
    # told from the first bytes: JSON Lines with a broken first line are not read whole
    data = b'{"input": [\n' + good + b"\n" + good + b"\n"
    assert not is_document(data) and is_document(orjson.dumps(RECORDS[0], option=orjson.OPT_INDENT_2))
    lines, rejected = _read(data, cap=10)  # (so no document cap applies to them)
    assert rejected == [] and len(lines) == 3


class _Counting(io.RawIOBase):
    """A readable stream of ``head`` + ``size`` bytes of ``x`` (no line end) + ``tail``, made as it
    is read, that records the largest read asked of it (a bomb that is never held whole)."""

    def __init__(self, head: bytes, size: int, tail: bytes) -> None:
        self.parts = [head, size, tail]
        self.largest = 0

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        self.largest = max(self.largest, len(b))
        while self.parts:
            part = self.parts[0]
            if isinstance(part, int):
                n = min(part, len(b))
                b[:n] = b"x" * n
                self.parts[0] = part - n
                if self.parts[0] == 0:
                    self.parts.pop(0)
                return n
            if part:
                n = min(len(part), len(b))
                b[:n] = part[:n]
                self.parts[0] = part[n:]
                return n
            self.parts.pop(0)
        return 0


@pytest.mark.parametrize("kind", sorted(COMPRESSORS))
def test_a_line_over_the_record_budget_is_rejected_alone(kind: str) -> None:
    """A line with no line end was held whole, however long: a few MB of gzip held gigabytes."""
    long_line = b'{"input": "' + b"a" * 50_000 + b'"}'
    data = COMPRESSORS[kind](b'{"input": "one"}\n' + long_line + b'\n{"input": "three"}\n')
    out = list(record_batches(io.BytesIO(data), "f", 1024, 1 << 30, 10_000))
    lines = [(n, x) for b in out for n, x in enumerate(b.lines, b.first_line) if x]
    assert lines == [(1, b'{"input": "one"}'), (3, b'{"input": "three"}')]
    [r] = [r for b in out for r in b.rejected]
    assert (r.line, r.file) == (2, "f")
    assert r.error == (
        f"$: a line of {len(long_line)} bytes, more than max_record_bytes = 10000: a record is read "
        "whole, so it is not read; raise the input option max_record_bytes"
    )
    assert r.input.startswith('{"input": "aaa') and len(r.input) < 300


def test_a_line_over_the_record_budget_is_skipped_not_held() -> None:
    """1 GiB of one line is read a block at a time and never joined: the rejection comes with the
    lines after it, and no read asks for more than a block."""
    stream = _Counting(b'{"input": "a"}\n', 1 << 30, b'\n{"input": "b"}\n')
    out = list(record_batches(io.BufferedReader(stream, 1 << 16), "f", 1 << 20, 1 << 30, 4 << 20))
    lines = [(n, x) for b in out for n, x in enumerate(b.lines, b.first_line) if x]
    assert lines == [(1, b'{"input": "a"}'), (3, b'{"input": "b"}')]
    [r] = [r for b in out for r in b.rejected]
    assert r.line == 2 and r.error.startswith(f"$: a line of {1 << 30} bytes, more than max_record_bytes")
    assert stream.largest <= 1 << 24


def test_a_line_over_the_record_budget_within_a_block_is_rejected_alone() -> None:
    data = b'{"input": "a"}\n' + b"[" * 300 + b'\n{"input": "b"}\n'
    out = list(record_batches(io.BytesIO(data), "f", 1 << 20, 1 << 30, 100))
    assert [(b.first_line, b.lines, b.placeholders) for b in out] == [
        (1, [b'{"input": "a"}', b"", b'{"input": "b"}'], 1)
    ]
    [r] = [r for b in out for r in b.rejected]
    assert (r.line, r.error.split(",")[0]) == (2, "$: a line of 300 bytes")
