"""Reading a JSONL shard in blocks (pipeline/engine/read.py ``_jsonl``): every line of the byte range
once, with its number, whatever the block size (lines across blocks, a last line without a newline,
blank lines, a range that starts mid-file), and the batches' bytes adding up to the range."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from pipeline import synth
from pipeline.engine.read import read_shard
from pipeline.engine.shards import Shard


def _shard(path: Path, start: int, end: int, first: int) -> Shard:
    return Shard("part-00000", str(path), "jsonl", "responses", {}, start, end, first, end - start)


@pytest.mark.parametrize("chunk", [1, 7, 300, 4096, 1 << 20])
@pytest.mark.parametrize("tail", [b"\n", b""])
def test_every_line_once_with_its_number(tmp_path: Path, chunk: int, tail: bytes) -> None:
    lines = [orjson.dumps(r) for r in synth.generate("responses", 12, seed=2)]
    lines[3:3] = [b"", b"not json", b""]  # blank and rejected lines keep their numbers too
    data = b"\n".join(lines) + tail
    path = tmp_path / "in.jsonl"
    path.write_bytes(data)
    start = len(lines[0]) + 1  # a range that starts at line 2, as a later shard does
    batches = list(read_shard(_shard(path, start, len(data), 2), chunk, 1000))
    got: dict[int, bytes] = {}
    for b in batches:
        assert not set(b.raw) & set(got), "a line read twice"
        got.update(b.raw)
    assert got == dict(enumerate(lines[1:], 2))
    assert sum(b.nbytes for b in batches) == len(data) - start
    assert sum(b.read for b in batches) == len(lines) - 1 - 2  # two blank lines are not records
    assert sum(b.blank for b in batches) == 2


def test_read_table_reads_arrow_and_parquet_alike(tmp_path: Path) -> None:
    """``read_table`` (stage-1 partition files are Arrow IPC; a run staged before they were, and the
    job's Parquet files, are Parquet): the same table from either container, all or some columns."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from pipeline.engine.read import read_table
    from pipeline.engine.writers import ArrowTable

    table = pa.table({"a": [1, 2, 3], "b": ["x", None, "z"], "c": [[1], [], [2, 3]]})
    pq.write_table(table, tmp_path / "t.parquet")
    w = ArrowTable(tmp_path / "t.arrow", table.schema)
    w.write_table(table.slice(0, 1))
    w.write_table(table.slice(1))
    w.close()
    for name in ("t.parquet", "t.arrow"):
        assert read_table(tmp_path / name).equals(table), name
        assert read_table(tmp_path / name, ["c", "a"]).equals(table.select(["c", "a"])), name
