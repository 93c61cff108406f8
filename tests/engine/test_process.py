"""A job with a grouping step (threads): every record of a thread threaded together, every record
accounted for (the two-stage job itself: test_partition.py)."""

from __future__ import annotations

from pathlib import Path

import orjson

from pipeline.engine import run_job
from pipeline.jobs import load_job
from tests.engine.helpers import folder, write_job, write_jsonl


def _log() -> list[bytes]:
    """A request log of two conversations (turn k repeats turn k-1), a duplicate and a bad line."""
    lines = []
    for t in range(2):
        history = [{"role": "user", "content": f"task {t}"}]
        for k in range(4):
            lines.append(orjson.dumps({"model": "m", "messages": history}))
            history += [{"role": "assistant", "content": f"a{k}"}, {"role": "user", "content": f"u{k}"}]
    lines.insert(3, lines[2])  # a duplicate
    lines.insert(5, b"{not json")
    return lines


def test_threads_in_a_job_sees_every_batch_and_shard(tmp_path: Path) -> None:
    lines = _log()
    write_jsonl(tmp_path / "log.jsonl", lines)
    job = write_job(
        tmp_path / "job.toml",
        [{"path": "log.jsonl", "format": "chat"}],
        {"path": "run", "target": "parquet", "shard_records": 2},  # a thread over several shards
        steps=["threads:keep=leaves"],
        engine={"batch_rows": 2, "chunk_bytes": 1024},
    )
    summary = run_job(load_job(job))
    assert summary["read"] == len(lines) == summary["written"] + summary["rejected"]
    kept = folder(tmp_path / "run", "conversations")
    assert kept.num_rows == 2  # the last request of each conversation
    assert [len(x) for x in kept.column("items").to_pylist()] == [7, 7]
    rejected = folder(tmp_path / "run", "rejected").to_pylist()
    by_stage = sorted(r["stage"] for r in rejected)
    assert by_stage == ["read"] + ["transform"] * 7
    leaves = set(kept.column("conversation_id").to_pylist())
    for r in rejected:
        if r["stage"] == "transform":
            assert r["step"] == "threads" and r["input"] is not None
            leaf = r["reason"].rsplit("(in leaf ", 1)[1].rstrip(")")
            assert leaf in leaves
    assert summary["rejected_by_reason"] == {
        "threads: items are a prefix of a longer record": 6,
        "threads: duplicate of an identical record": 1,
        **{k: v for k, v in summary["rejected_by_reason"].items() if not k.startswith("threads")},
    }


def test_dropped_records_of_a_parquet_input_keep_their_input(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    from pipeline.engine.process import to_disk
    from pipeline.formats import decode_lines
    from tests.helpers import json_diff

    lines = [line for line in _log() if line != b"{not json"]
    table = to_disk(decode_lines(lines, "chat").table)
    pq.write_table(table, tmp_path / "log.parquet")
    job = write_job(
        tmp_path / "job.toml",
        [{"path": "log.parquet", "format": "canonical"}],
        {"path": "run", "target": "parquet"},
        steps=["threads:keep=leaves"],
    )
    summary = run_job(load_job(job))
    assert summary["rejected"] == len(lines) - 2
    by_id = dict(zip(table.column("conversation_id").to_pylist(), lines, strict=True))
    for r in folder(tmp_path / "run", "rejected").to_pylist():
        assert r["input_format"] == "chat"
        assert json_diff(orjson.loads(by_id[r["conversation_id"]]), orjson.loads(r["input"])) is None
