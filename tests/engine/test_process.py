"""One shard's work: a job with a grouping step (threads) sees every record of a thread, every
record accounted for (the two-stage job itself: test_partition.py); a step-less convert to a file
decodes no fingerprints, with the same bytes."""

from __future__ import annotations

from contextlib import nullcontext
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from pipeline import fingerprint
from pipeline.cli import cli
from pipeline.engine import run_job
from pipeline.engine.process import _Counts, _taken
from pipeline.formats import _build
from pipeline.io.run_tables import LOSSES_SCHEMA
from pipeline.jobs import load_job
from pipeline.losses import ADDITIONS
from tests.cases import CASES
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


def _convert_cases(tmp_path: Path, fmt: str, target: str, *where: str) -> None:
    """``chatlake convert`` of every hand-written case of ``fmt`` (three times over, in
    ``tmp_path/in.jsonl``: the ids a record gets hash its file's name) to ``target``."""
    src = write_jsonl(tmp_path / "in.jsonl", [orjson.dumps(rec) for _, rec in CASES[fmt]] * 3)
    argv = ["convert", str(src), "--from", fmt, "--to", target, *where, "-q", "--workers", "1"]
    res = CliRunner().invoke(cli, argv)
    assert res.exit_code == 0, res.output


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the items the decoders fingerprint (``_build.fingerprints`` calls, by items)."""
    calls: list[int] = []
    real = _build.fingerprints

    def counted(items: pa.StructArray) -> pa.Array:
        calls.append(len(items))
        return real(items)

    monkeypatch.setattr(_build, "fingerprints", counted)
    return calls


@pytest.mark.parametrize(
    ("fmt", "target"), [("responses", "chat"), ("anthropic", "responses"), ("chat", "chat")]
)
def test_a_step_less_convert_to_a_file_fingerprints_nothing_and_writes_the_same_bytes(
    fmt: str, target: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # no canonical rows are written and the rows skip the edit check: the fingerprints are not needed
    calls = _counting(monkeypatch)
    (tmp_path / "skipped").mkdir()
    (tmp_path / "computed").mkdir()
    _convert_cases(tmp_path, fmt, target, "-o", str(tmp_path / "skipped" / "out.jsonl"))
    assert calls == []
    # the same convert with every fingerprint computed writes the same bytes
    monkeypatch.setattr(fingerprint, "unneeded", nullcontext)
    _convert_cases(tmp_path, fmt, target, "-o", str(tmp_path / "computed" / "out.jsonl"))
    assert sum(calls) > 0
    for name in ("out.jsonl", "out.jsonl.losses.parquet", "out.jsonl.rejected.jsonl"):
        assert (tmp_path / "skipped" / name).read_bytes() == (tmp_path / "computed" / name).read_bytes(), name


@pytest.mark.parametrize("where", [["-o", "out.parquet"], ["--run-dir", "run"]])
def test_canonical_rows_written_keep_their_fingerprints(
    where: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _counting(monkeypatch)
    target = "parquet" if where[0] == "-o" else "chat"
    _convert_cases(tmp_path, "responses", target, where[0], str(tmp_path / where[1]))
    assert sum(calls) > 0
    run = tmp_path / where[1]
    rows = pq.read_table(run) if where[0] == "-o" else folder(run, "conversations")
    items = [it for row in rows.column("items").to_pylist() for it in row]
    with_id = [it for it in items if it["id"] is not None]
    assert with_id and all(it["fingerprint"] is not None for it in with_id)


@pytest.mark.parametrize("with_additions", [False, True])
def test_loss_counts_count_losses_by_kind_and_additions_by_record(with_additions: bool) -> None:
    addition = sorted(ADDITIONS)[0]
    rows = [("a", "reasoning"), ("a", "reasoning"), ("a", "annotations"), ("b", "reasoning")]
    rows += [("c", "logprobs")]
    if with_additions:
        rows += [("a", addition), ("a", addition), ("d", addition)]
    losses = pa.Table.from_pylist(
        [{"conversation_id": cid, "kind": kind, "source_line": k} for k, (cid, kind) in enumerate(rows)],
        schema=LOSSES_SCHEMA,
    )
    counts = _Counts()
    counts.add_losses(losses)
    counts.add_losses(losses.slice(0, 1))  # a second batch: added up
    assert counts.loss_kinds == {"reasoning": 4, "annotations": 1, "logprobs": 1}
    assert counts.lossy == 3 + 1  # records a, b, c, then a again (each batch counts its own)
    assert counts.additions == ({addition: 2} if with_additions else {})  # records a and d


@pytest.mark.parametrize(
    "values",
    [["f"] * 4, ["f", "g", "f", "f"], ["f", None, None, "f"], [None] * 4],
)
def test_identity_columns_of_the_losses_are_taken_by_row(values: list[str | None]) -> None:
    col = pa.chunked_array([pa.array(values[:2], pa.string()), pa.array(values[2:], pa.string())])
    at = pa.array([0, 0, 1, 3, 3, 3, 2], pa.int64())
    taken = _taken(col, at)
    assert taken.type == pa.string() and taken.to_pylist() == col.take(at).to_pylist()
