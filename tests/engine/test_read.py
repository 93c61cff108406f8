"""Reading a JSONL shard in blocks (pipeline/engine/read.py ``_jsonl``): every line of the byte range
once, with its number, whatever the block size (lines across blocks, a last line without a newline,
blank lines, a range that starts mid-file), and the batches' bytes adding up to the range."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from pipeline import synth
from pipeline.engine.read import NumberedLines, read_shard
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
    got: dict[tuple[str | None, int], bytes] = {}
    for b in batches:
        assert not set(b.raw) & set(got), "a line read twice"
        got.update(b.raw)
    assert got == {(str(path), n): line for n, line in enumerate(lines[1:], 2)}  # by (file, line)
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


@pytest.mark.parametrize("window", [1, 2, 100])
@pytest.mark.parametrize(("start", "end"), [(0, 40), (5, 33), (11, 12), (17, 40)])
def test_parquet_rows_read_in_windows_are_cut_as_one_reader_cuts_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, window: int, start: int, end: int
) -> None:
    """``_rows`` reads a Parquet shard's row groups a window at a time (one reader over all of them
    holds memory per group read) and re-cuts the rows: the same tables, row for row and batch for
    batch, as one ``iter_batches`` over every group gives."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from pipeline.engine import read

    sizes = [3, 7, 1, 5, 9, 2, 6, 4, 3]  # uneven row groups, 40 rows
    path = tmp_path / "t.parquet"
    with pq.ParquetWriter(path, pa.schema([("x", pa.int64()), ("s", pa.string())])) as w:
        at = 0
        for n in sizes:
            w.write_table(pa.table({"x": range(at, at + n), "s": [f"r{i}" for i in range(at, at + n)]}))
            at += n
    assert pq.ParquetFile(path).metadata.num_row_groups == len(sizes)
    monkeypatch.setattr(read, "WINDOW_BATCHES", window)
    shard = Shard("part-00000", str(path), "parquet", "canonical", {}, start, end, 1, end - start)
    got = list(read._rows(shard, 4))
    # the reference: one reader over the groups that hold the range (as _rows picks them)
    bounds = [sum(sizes[:g]) for g in range(len(sizes) + 1)]
    groups = [g for g in range(len(sizes)) if bounds[g] < end and bounds[g + 1] > start]
    whole = pq.ParquetFile(path).iter_batches(batch_size=4, row_groups=groups)
    first = bounds[groups[0]]
    want = list(read._slice(whole, start - first, end - first, 4))
    assert [t.num_rows for t in got] == [t.num_rows for t in want]
    assert all(g.equals(w) for g, w in zip(got, want, strict=True))
    assert pa.concat_tables(got).column("x").to_pylist() == list(range(start, end))


def test_the_shards_of_one_parquet_file_share_its_parsed_footer(tmp_path: Path) -> None:
    """A footer is parsed once for the shards of a file (and size) read at the same time (a large
    file's footer is large in memory: one copy per worker before), dropped when the last is done;
    a file rewritten with another size is parsed again, and its shards read its new rows."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from pipeline.engine import read

    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"x": range(10)}), path, row_group_size=3)
    # other tests of this worker may have left readers of their own files: look at this file's only
    def mine() -> list[list]:
        return [entry for key, entry in read._FOOTERS.items() if key[0] == str(path)]

    with open(path, "rb") as f, open(path, "rb") as g, read._footer(str(path), f) as a:
        with read._footer(str(path), g) as b:
            assert a is b and a.num_rows == 10
        assert [n for _, n in mine()] == [1]  # one reader left
    assert mine() == []
    pq.write_table(pa.table({"x": range(25)}), path, row_group_size=3)
    shard = Shard("part-00000", str(path), "parquet", "canonical", {}, 20, 25, 1, 5)
    assert pa.concat_tables(read._rows(shard, 2)).column("x").to_pylist() == [20, 21, 22, 23, 24]
    assert mine() == []


@pytest.mark.parametrize("chunk", [1, 7, 300, 4096, 20_000, 40_000])
def test_a_line_over_budget_is_rejected_and_the_lines_after_it_read(tmp_path: Path, chunk: int) -> None:
    # the text after the skipped line's newline holds whole lines: each read once, with its number
    lines = [orjson.dumps(r) for r in synth.generate("responses", 8, seed=3)]
    cap = max(len(line) for line in lines) + 1
    long = b'{"input": "' + b"x" * (5 * cap) + b'"}'  # skipped across blocks that hold later lines too
    lines[3:3] = [long]  # before the short lines
    data = b"\n".join(lines) + b"\n"
    path = tmp_path / "in.jsonl"
    path.write_bytes(data)
    shard = Shard("part-00000", str(path), "jsonl", "responses", {"max_record_bytes": cap}, 0, len(data), 1, len(data))  # noqa: E501
    batches = list(read_shard(shard, chunk, 1000))
    got: dict[tuple[str | None, int], bytes] = {}
    for b in batches:
        assert not set(b.raw) & set(got), "a line read twice"
        got.update(b.raw)
    got.pop((str(path), 4), None)  # the long line: a placeholder where a block held it whole
    assert got == {(str(path), n): line for n, line in enumerate(lines, 1) if line is not long}
    assert [r["source_line"] for b in batches for r in b.rejected] == [4]
    # every byte counted for progress (a line skipped across blocks without its newline)
    assert len(data) - 1 <= sum(b.nbytes for b in batches) <= len(data)
    assert sum(b.read for b in batches) == len(lines)


def test_numbered_lines_look_up_a_line_by_file_and_number() -> None:
    lines = NumberedLines("a.jsonl", 5, [b"x", b"", b"z"])
    assert dict(lines) == {("a.jsonl", 5): b"x", ("a.jsonl", 6): b"", ("a.jsonl", 7): b"z"}
    assert lines.get(("a.jsonl", 7)) == b"z" and len(lines) == 3
    for missing in [("a.jsonl", 4), ("a.jsonl", 8), ("b.jsonl", 5), (None, 5), ("a.jsonl", None)]:
        assert lines.get(missing) is None  # type: ignore[arg-type]
        assert missing not in lines


def test_format_auto_decides_per_file_not_per_batch(tmp_path: Path) -> None:
    """A file of Chat bodies whose later part holds only rows without a request key (alone, HF rows
    by the rule, also valid Chat): read in batches of a few lines, the later batches, which alone
    would be all ``hf``, follow the file's format (the majority of its first records), and so does
    a later shard of the same file; a record that fits only its own format keeps it."""
    chat = [{"model": "gpt-4o", "messages": [{"role": "user", "content": f"q{k}"}]} for k in range(6)]
    bare = [{"messages": [{"role": "user", "content": f"b{k}"}]} for k in range(6)]
    own = {"input": "a Responses body"}  # fits no other format: per record
    lines = [orjson.dumps(r) for r in [*chat, *bare, own]]
    data = b"\n".join(lines) + b"\n"
    path = tmp_path / "c.jsonl"
    path.write_bytes(data)
    whole = Shard("part-00000", str(path), "jsonl", "auto", {}, 0, len(data), 1, len(data))
    batches = list(read_shard(whole, 3 * len(lines[-2]), 1000))  # about three lines a batch
    assert len([b for b in batches if b.read]) > 3
    found = [(b.format, b.table.column("source_line").to_pylist()) for b in batches if b.table.num_rows]
    by_line = {n: fmt for fmt, ns in found for n in ns}
    assert by_line == {**{n: "chat" for n in range(1, 13)}, 13: "responses"}
    # a later batch alone (the bare rows) is all hf: the file, not the batch, decided
    alone = list(read_shard(_auto(path, data, 6), len(data), 1000))
    assert {b.format for b in alone if b.table.num_rows} == {"chat", "responses"}
    (tmp_path / "bare.jsonl").write_bytes(b"\n".join(lines[6:12]) + b"\n")
    bare_file = tmp_path / "bare.jsonl"
    only = list(read_shard(_auto(bare_file, bare_file.read_bytes(), 0), 1 << 20, 1000))
    assert {b.format for b in only if b.table.num_rows} == {"hf"}


def _auto(path: Path, data: bytes, skip: int) -> Shard:
    """A format-auto shard of ``path`` from its line ``skip + 1`` to the end (a later shard)."""
    start = sum(len(x) + 1 for x in data.split(b"\n")[:skip])
    return Shard("part-00001", str(path), "jsonl", "auto", {}, start, len(data), skip + 1, len(data) - start)
