"""iter_chunks: line-aligned byte ranges that together hold every line exactly once, in order."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.io.jsonl import Chunk, iter_chunks


def _check(path: Path, data: bytes, chunk_bytes: int) -> list[Chunk]:
    chunks = list(iter_chunks(path, chunk_bytes))
    # the ranges tile the file with no gap or overlap
    assert b"".join(c.read() for c in chunks) == data
    assert [c.offset for c in chunks] == [sum(c.size for c in chunks[:i]) for i in range(len(chunks))]
    expected_lines = data.split(b"\n")
    if expected_lines[-1] == b"":
        expected_lines.pop()
    line = 1
    got: list[bytes] = []
    for c in chunks:
        assert c.size > 0
        assert c.first_line == line  # first_line counts the newlines before the chunk
        lines = c.lines()
        got += lines
        line += len(lines)
        # every chunk but the last ends with a newline: chunks never split a line
        if c is not chunks[-1]:
            assert c.read().endswith(b"\n")
    assert got == expected_lines
    return chunks


@settings(max_examples=200, deadline=None)
@given(
    lines=st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), max_size=30),
    final_newline=st.booleans(),
    chunk_bytes=st.integers(1, 64),
)
def test_chunks_tile_the_file(tmp_path_factory: pytest.TempPathFactory, lines: list[bytes],
                              final_newline: bool, chunk_bytes: int) -> None:
    data = b"\n".join(lines) + (b"\n" if final_newline and lines else b"")
    path = tmp_path_factory.mktemp("c") / "in.jsonl"
    path.write_bytes(data)
    _check(path, data, chunk_bytes)


def test_line_longer_than_a_chunk_is_not_split(tmp_path: Path) -> None:
    data = b"a\n" + b"x" * 1000 + b"\nb\n"
    (tmp_path / "in.jsonl").write_bytes(data)
    chunks = _check(tmp_path / "in.jsonl", data, 16)
    assert [c.lines() for c in chunks] == [[b"a"], [b"x" * 1000, b"b"]]


def test_empty_and_blank_files(tmp_path: Path) -> None:
    (tmp_path / "e.jsonl").write_bytes(b"")
    assert list(iter_chunks(tmp_path / "e.jsonl", 8)) == []
    _check(tmp_path / "e.jsonl", b"", 8)
    (tmp_path / "b.jsonl").write_bytes(b"\n\n\n")
    assert [c.lines() for c in _check(tmp_path / "b.jsonl", b"\n\n\n", 2)] == [[b"", b""], [b""]]


def test_changed_input_is_an_error_not_lost_lines(tmp_path: Path) -> None:
    path = tmp_path / "in.jsonl"
    path.write_bytes(b"a\nb\nc\n")
    [*_, last] = iter_chunks(path, 2)
    path.write_bytes(b"a\n")
    with pytest.raises(OSError, match="input changed while it was read"):
        last.lines()


def _fixed_block_chunks(data: bytes, chunk_bytes: int) -> list[tuple[int, bytes]]:
    """Reference: read fixed blocks of chunk_bytes, cut each at its last newline, carry the rest."""
    out, line, rest = [], 1, b""
    for start in range(0, len(data), chunk_bytes):
        block = rest + data[start : start + chunk_bytes]
        cut = block.rfind(b"\n")
        if cut < 0:
            rest = block
            continue
        out.append((line, block[: cut + 1]))
        line += block[: cut + 1].count(b"\n")
        rest = block[cut + 1 :]
    if rest:
        out.append((line, rest))
    return out


@settings(max_examples=200, deadline=None)
@given(
    lines=st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), max_size=30),
    final_newline=st.booleans(),
    chunk_bytes=st.integers(1, 64),
)
def test_chunks_end_where_fixed_block_reads_end(tmp_path_factory: pytest.TempPathFactory, lines: list[bytes],
                                                final_newline: bool, chunk_bytes: int) -> None:
    # same chunks as fixed-size block reads: the same row groups, so the same Parquet bytes
    data = b"\n".join(lines) + (b"\n" if final_newline and lines else b"")
    path = tmp_path_factory.mktemp("c") / "in.jsonl"
    path.write_bytes(data)
    got = [(c.first_line, c.read()) for c in iter_chunks(path, chunk_bytes)]
    assert got == _fixed_block_chunks(data, chunk_bytes)
