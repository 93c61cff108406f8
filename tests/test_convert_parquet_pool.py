"""JSONL -> Parquet through the worker pool gives the table a single in-process decode gives.

The pool path reads byte ranges in the workers (pipeline.io.jsonl) and hands tables back as
memory-mapped IPC files (pipeline.io.table_handoff); neither may change a row, its order or the
rejected lines. Checked on every hand-written case and bad line, and on the shared corpus.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pipeline.convert as convert
from pipeline.convert import ConvertConfig, _process_in_worker, process_chunk, run_convert
from pipeline.formats import decode_lines
from pipeline.io.jsonl import iter_chunks
from pipeline.losses import LossPolicy
from pipeline.schema import CONVERSATION_SCHEMA
from tests.cases import BAD_LINES, CASES
from tests.corpus import corpus_available, corpus_records


def _lines(fmt: str, corpus: bool) -> list[bytes]:
    records = [r for _, r in CASES[fmt]]
    if corpus:
        records += [c.record for c in corpus_records() if c.format == fmt]
    # json, not orjson: a corpus record may hold an integer orjson cannot write (it is then rejected)
    lines = [json.dumps(r, ensure_ascii=False).encode() for r in records]
    bad = [raw for _, raw, _ in BAD_LINES]
    # bad lines and a blank one spread through the file, so some chunks reject and some do not
    for i, raw in enumerate(bad):
        lines.insert((i * 7) % (len(lines) + 1), raw)
    lines.insert(len(lines) // 2, b"   ")
    return lines


def _convert_both_ways(fmt: str, lines: list[bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = tmp_path / "in.jsonl"
    src.write_bytes(b"\n".join(lines))  # no final newline: the last line must still be read
    handoff = tmp_path / "handoff"
    handoff.mkdir()
    monkeypatch.setattr(convert, "handoff_dir", lambda: str(handoff))
    pool = run_convert(ConvertConfig([src], fmt, "parquet", tmp_path / "pool.parquet", workers=2,
                                     chunk_bytes=4096))  # fmt: skip
    single = run_convert(ConvertConfig([src], fmt, "parquet", tmp_path / "one.parquet", workers=1))
    assert list(handoff.iterdir()) == []  # every handed-over table was taken and its directory removed

    expected = decode_lines(src.read_bytes().split(b"\n"), fmt, source_file=str(src))
    want = expected.table.cast(CONVERSATION_SCHEMA)
    for out in ("pool.parquet", "one.parquet"):
        assert pq.read_table(tmp_path / out).equals(want), out
    for report in (pool, single):
        assert report["read"] == want.num_rows + len(expected.rejected)
        assert report["rejected"] == len(expected.rejected)
    rejected = (tmp_path / "pool.parquet.rejected.jsonl").read_bytes()
    assert rejected == (tmp_path / "one.parquet.rejected.jsonl").read_bytes()
    assert rejected.count(b"\n") == len(expected.rejected) > 0


@pytest.mark.parametrize("fmt", sorted(CASES))
def test_pool_parquet_equals_one_decode_on_cases(
    fmt: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _convert_both_ways(fmt, _lines(fmt, corpus=False) * 5, tmp_path, monkeypatch)


@pytest.mark.skipif(
    not corpus_available(), reason="../shared/corpus not found: corpus conversion tests need it (CI has it)"
)
@pytest.mark.parametrize("fmt", sorted(CASES))
def test_pool_parquet_equals_one_decode_on_corpus(
    fmt: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _convert_both_ways(fmt, _lines(fmt, corpus=True), tmp_path, monkeypatch)


def test_worker_keeps_the_table_when_it_cannot_hand_it_off(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_bytes(b'{"messages": [{"role": "user", "content": "hi"}]}\n')
    [chunk] = iter_chunks(src)
    task = ("chat", "parquet", chunk, LossPolicy())
    res = _process_in_worker(task, str(tmp_path / "missing-dir" / "1.arrow"))  # cannot be written
    assert res.handed_off is None
    assert isinstance(res.table, pa.Table)
    assert res.table.equals(process_chunk(task).table)
    res = _process_in_worker(task, str(tmp_path / "1.arrow"))
    assert res.table is None and res.handed_off is not None
    assert convert._received(res).table.equals(process_chunk(task).table)
    assert not (tmp_path / "1.arrow").exists()
