"""Every kind of input a job reads: canonical Parquet, saved datasets, datasets' Parquet, fsspec URLs,
source adapters; and the JSONL shard planner."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.engine import run_job
from pipeline.engine.shards import jsonl_ranges
from pipeline.formats import decode_records
from pipeline.jobs import load_job
from tests.cases import CASES
from tests.corpus import CORPUS_DIR
from tests.engine.helpers import folder, output_lines, write_job
from tests.helpers import assert_identical

HF_RECORDS: list[dict[str, Any]] = [
    {"messages": [{"role": "user", "content": f"question {i}"},
                  {"role": "assistant", "content": f"answer {i}"}]}
    for i in range(7)
]


def _run(tmp_path: Path, inputs: list[dict[str, Any]], target: str, **output: Any) -> dict[str, Any]:
    job = write_job(tmp_path / "job.toml", inputs, {"path": "run", "target": target, **output},
                    engine={"workers": 1})  # fmt: skip
    return run_job(load_job(job))


def test_jsonl_ranges_cover_the_file_in_whole_lines(tmp_path: Path) -> None:
    data = b"".join(b"x" * (i % 13) + b"\n" for i in range(1000)) + b"tail without newline"
    (tmp_path / "f.jsonl").write_bytes(data)
    for records, scan in ((1, 7), (3, 64), (250, 100), (10_000, 1 << 20)):
        ranges = list(jsonl_ranges(str(tmp_path / "f.jsonl"), records, scan))
        assert b"".join(data[a:b] for a, b, _ in ranges) == data
        firsts = [first for _, _, first in ranges]
        assert firsts == list(range(1, 1002, records))
        for a, b, _ in ranges[:-1]:
            assert data[a:b].count(b"\n") == records and data[b - 1 : b] == b"\n"


def test_canonical_parquet_in_row_range_shards(tmp_path: Path) -> None:
    records = [r for _, r in CASES["anthropic"]] * 3
    table = decode_records(records, "anthropic").table
    pq.write_table(table, tmp_path / "lake.parquet", row_group_size=4)
    summary = _run(tmp_path, [{"path": "lake.parquet", "format": "canonical"}], "anthropic", shard_records=6)
    n = len(records)
    assert (summary["read"], summary["written"], summary["shards"]) == (n, n, -(-n // 6))
    assert folder(tmp_path / "run", "conversations").equals(table)
    for a, b in zip(records, output_lines(tmp_path / "run"), strict=True):
        assert_identical(a, orjson.loads(b))


def test_hf_dataset_saved_with_save_to_disk(tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets", reason="datasets is a declared dependency")
    ds = datasets.Dataset.from_list(HF_RECORDS)
    ds.save_to_disk(str(tmp_path / "saved"), max_shard_size="1KB")
    summary = _run(tmp_path, [{"path": "saved", "format": "hf"}], "hf", shard_records=3)
    assert summary["read"] == summary["written"] == 7 and summary["rejected"] == 0
    out = [orjson.loads(line) for line in output_lines(tmp_path / "run")]
    for a, b in zip(HF_RECORDS, out, strict=True):
        assert_identical(a, b)
    lines = folder(tmp_path / "run", "conversations").column("source_line").to_pylist()
    assert all(line >= 1 for line in lines)


def test_canonical_table_saved_as_a_dataset_dict(tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets", reason="datasets is a declared dependency")
    table = decode_records([r for _, r in CASES["chat"]], "chat").table
    dd = datasets.DatasetDict({"train": datasets.Dataset(table), "test": datasets.Dataset(table.slice(0, 2))})
    dd.save_to_disk(str(tmp_path / "dd"))
    summary = _run(tmp_path, [{"path": "dd", "format": "canonical"}], "chat")
    assert summary["read"] == summary["written"] == table.num_rows + 2
    assert [i["path"].rsplit("/", 2)[-2] for i in summary["inputs"]] == ["train", "test"]


def test_parquet_written_by_datasets_with_wire_records(tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets", reason="datasets is a declared dependency")
    datasets.Dataset.from_list(HF_RECORDS).to_parquet(str(tmp_path / "hf.parquet"))
    summary = _run(tmp_path, [{"path": "hf.parquet", "format": "hf"}], "chat")
    assert summary["read"] == summary["written"] == 7
    out = [orjson.loads(line) for line in output_lines(tmp_path / "run")]
    assert out[3] == {"messages": [{"role": "user", "content": "question 3"},
                                   {"role": "assistant", "content": "answer 3"}]}  # fmt: skip


def test_fsspec_url_with_a_glob(tmp_path: Path) -> None:
    fsspec = pytest.importorskip("fsspec", reason="fsspec comes with datasets")
    fs = fsspec.filesystem("memory")
    lines = [orjson.dumps(r) for _, r in CASES["responses"]]
    for name in ("b.jsonl", "a.jsonl"):
        fs.pipe(f"/bucket/{name}", b"".join(line + b"\n" for line in lines))
    try:
        summary = _run(tmp_path, [{"path": "memory://bucket/*.jsonl", "format": "responses"}], "responses",
                       shard_records=4)  # fmt: skip
    finally:
        fs.rm("/bucket", recursive=True)
    assert [i["path"] for i in summary["inputs"]] == ["memory:///bucket/a.jsonl", "memory:///bucket/b.jsonl"]
    assert summary["read"] == summary["written"] == 2 * len(lines)
    for a, b in zip(lines * 2, output_lines(tmp_path / "run"), strict=True):
        assert_identical(orjson.loads(a), orjson.loads(b))


def test_an_fsspec_url_whose_filesystem_is_not_installed_fails_fast(tmp_path: Path) -> None:
    from pipeline.errors import ConfigError

    job = write_job(tmp_path / "job.toml", [{"path": "nosuchproto://x/*.jsonl", "format": "chat"}],
                    {"path": "run"})  # fmt: skip
    with pytest.raises(ConfigError, match="nosuchproto"):
        load_job(job)


def _rollout() -> Path:
    files = sorted((CORPUS_DIR / "codex-rollouts-agentcmd").glob("*.jsonl"))
    if not files:
        pytest.skip(f"the shared corpus is absent ({CORPUS_DIR}); CI has it")
    return files[0]


@pytest.mark.corpus
@pytest.mark.parametrize("fmt", ["codex-rollout", "auto"])
def test_source_adapter_input(fmt: str, tmp_path: Path) -> None:
    from pipeline.sources import read_source

    path = _rollout()
    summary = _run(tmp_path, [{"path": str(path), "format": fmt}], "responses")
    tables = [r.table for r in read_source(path, "codex-rollout") if r.table is not None]
    expected = pa.concat_tables(tables) if tables else None
    conv = folder(tmp_path / "run", "conversations")
    assert summary["inputs"][0]["format"] == "codex-rollout"
    assert summary["read"] == summary["written"] + summary["rejected"]
    assert expected is not None and conv.num_rows == summary["written"] <= expected.num_rows
    assert conv.column("provenance").to_pylist()[0]["source"] == "codex-rollout"


@pytest.mark.parametrize("row_group_size", [1, 3, 7, 1000])
def test_parquet_shards_read_their_rows_whatever_the_row_groups(tmp_path: Path, row_group_size: int) -> None:
    """A shard reads only the row groups that hold its range (not the file from the start); its
    rows are exactly rows [start, end), whatever the row-group boundaries."""
    from pipeline.engine.read import read_shard
    from pipeline.engine.shards import Shard

    table = decode_records([rec for _, rec in CASES["responses"]] * 2, "responses").table
    path = tmp_path / "c.parquet"
    pq.write_table(table, path, row_group_size=row_group_size)
    n = table.num_rows
    for start, end in [(0, n), (0, 5), (4, 9), (5, n), (n - 1, n)]:
        shard = Shard("part-00000", str(path), "parquet", "canonical", {}, start, end, start + 1, 1)
        got = pa.concat_tables([b.table for b in read_shard(shard, 1 << 20, 4)])
        want = table.column("conversation_id")[start:end].to_pylist()
        assert got.column("conversation_id").to_pylist() == want
