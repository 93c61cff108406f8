"""A job with a grouping step (threads): every record of a thread threaded together, every record
accounted for (the two-stage job itself: test_partition.py)."""

from __future__ import annotations

from pathlib import Path

import orjson
import pyarrow as pa

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
    assert summary["read"] == len(lines) == summary["written"] + summary["rejected"] + summary["dropped"]
    kept = folder(tmp_path / "run", "conversations")
    assert kept.num_rows == 2  # the last request of each conversation
    assert [len(x) for x in kept.column("items").to_pylist()] == [7, 7]
    rejected = folder(tmp_path / "run", "rejected").to_pylist()
    assert [r["stage"] for r in rejected] == ["read"]  # only the bad line is rejected
    dropped = folder(tmp_path / "run", "dropped")
    assert dropped.num_rows == summary["dropped"] == 7
    leaves = set(kept.column("conversation_id").to_pylist())
    assert set(dropped.column("leaf_id").to_pylist()) <= leaves
    assert dropped.column("items").null_count == 7  # every one is its leaf's prefix, as written
    assert summary["dropped_by_reason"] == {
        "threads: items are a prefix of a longer record": 6,
        "threads: duplicate of an identical record": 1,
    }
    records = folder(tmp_path / "run", "records")
    assert sorted(set(records.column("status").to_pylist())) == ["dropped", "rejected", "written"]
    assert records.num_rows == summary["read"]


def test_every_dropped_record_is_rebuilt_from_its_leaf(tmp_path: Path) -> None:
    import polars as pl
    import pyarrow.parquet as pq

    from pipeline.engine.dropped import rebuild
    from pipeline.engine.process import to_disk
    from pipeline.formats import decode_lines
    from pipeline.schema import CONVERSATION_SCHEMA

    lines = [line for line in _log() if line != b"{not json"]
    table = to_disk(decode_lines(lines, "chat").table)
    # an item id the content hash leaves out: this request is still a prefix of its leaf, but its
    # items are not the leaf's as written, so its dropped row keeps them
    items = table.column("items").to_pylist()
    items[1][0]["id"] = "msg-other"
    table = table.set_column(
        table.schema.get_field_index("items"), "items", pa.array(items, table.schema.field("items").type)
    )
    pq.write_table(table, tmp_path / "log.parquet")
    job = write_job(
        tmp_path / "job.toml",
        [{"path": "log.parquet", "format": "canonical"}],
        {"path": "run", "target": "parquet", "shard_records": 3},
        steps=["threads:keep=leaves"],
    )
    summary = run_job(load_job(job))
    assert summary["rejected"] == 0 and summary["dropped"] == len(lines) - 2
    dropped = pl.from_arrow(folder(tmp_path / "run", "dropped"))
    leaves = pl.from_arrow(folder(tmp_path / "run", "conversations"))
    assert isinstance(dropped, pl.DataFrame) and isinstance(leaves, pl.DataFrame)
    assert dropped.get_column("items").null_count() == dropped.height - 1  # all but the edited one
    got = rebuild(dropped, leaves).select(CONVERSATION_SCHEMA.names).sort("conversation_id")
    want = pl.from_arrow(table)
    assert isinstance(want, pl.DataFrame)
    want = want.filter(pl.col("conversation_id").is_in(got.get_column("conversation_id").implode()))
    assert got.height == dropped.height
    assert got.equals(want.select(CONVERSATION_SCHEMA.names).sort("conversation_id"))
