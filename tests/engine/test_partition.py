"""The two-stage job of the threads step: records of one thread in several files and shards come
out as the in-memory step gives them; counts add up; a run killed between the stages resumes."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pytest

from pipeline import synth
from pipeline.engine import partition, run_job
from pipeline.engine.read import read_table
from pipeline.engine.report import shards_text
from pipeline.engine.verify import verify
from pipeline.jobs import load_job
from pipeline.transforms import apply_steps, parse_step
from pipeline.transforms.threads import THREAD_COLUMNS
from tests.engine.helpers import file_hashes, folder, write_job, write_jsonl

THREADS = 24  # conversations of the synthetic log (with retries, branches and compactions)


def _files(tmp_path: Path, n: int = 3) -> list[dict[str, Any]]:
    """A synthetic Responses request log dealt round-robin into ``n`` files (every thread spread
    over all of them), plus a bad line in the second."""
    lines = b"".join(synth.request_log("responses", THREADS, seed=3, mean_requests=6)).splitlines()
    inputs = []
    for k in range(n):
        mine = lines[k::n] + ([b"{not json"] if k == 1 else [])
        write_jsonl(tmp_path / f"log{k}.jsonl", mine)
        inputs.append({"path": f"log{k}.jsonl", "format": "responses"})
    return inputs


def _job(tmp_path: Path, name: str, inputs: list[dict[str, Any]], step: str, **engine: Any) -> Path:
    return write_job(
        tmp_path / f"{name}.toml",
        inputs,
        {"path": name, "target": "parquet", "shard_records": 9},
        steps=[step],
        engine={"batch_rows": 4, **engine},
    )


@pytest.fixture
def small_partitions(monkeypatch: pytest.MonkeyPatch) -> None:
    """Partitions of ~20 KB of input: the test's log goes to several of them."""
    monkeypatch.setattr(partition, "PARTITION_BYTES", 20_000)


def _stage1_files(run: Path) -> list[Path]:
    """The stage-1 partition files of a run (Arrow IPC), in name order."""
    files = sorted((run / "partitions").glob("*.p*.arrow"))
    assert files and not list((run / "partitions").glob("*.p*.parquet"))
    return files


def _stage1_rows(run: Path) -> pa.Table:
    """Every record stage 1 partitioned (the partition files, concatenated)."""
    return pa.concat_tables([read_table(p) for p in _stage1_files(run)])


def _threads_of(df: pl.DataFrame) -> pl.DataFrame:
    return df.select("conversation_id", *THREAD_COLUMNS).sort("conversation_id")


def test_a_thread_spread_over_files_and_shards_equals_the_in_memory_step(
    tmp_path: Path, small_partitions: None
) -> None:
    summary = run_job(load_job(_job(tmp_path, "run", _files(tmp_path), "threads")))
    run = tmp_path / "run"
    doc = (run / "manifest.json").read_text()
    assert summary["shards"] > 2 and '"partitions"' in doc  # several partitions, stage 1 listed
    phases = summary["timings_s"]
    assert set(phases) == {"total", "partition", "thread", "link"}
    assert 0 < phases["partition"] + phases["thread"] + phases["link"] <= phases["total"]
    out = pl.from_arrow(folder(run, "conversations"))
    assert isinstance(out, pl.DataFrame)
    assert summary["read"] == summary["written"] + summary["rejected"] and summary["rejected"] == 1
    assert summary["inputs"][1]["read"] == len((tmp_path / "log1.jsonl").read_bytes().splitlines())
    # the reference: the step on every record at once, in memory
    plain = out.drop(*THREAD_COLUMNS)
    expected, rejected = apply_steps(plain, [parse_step("threads")])
    assert rejected.height == 0
    got, want = _threads_of(out), _threads_of(expected)
    assert got.equals(want), got.join(want, on="conversation_id", suffix="_want").filter(
        pl.any_horizontal(pl.col(c).ne_missing(pl.col(f"{c}_want")) for c in THREAD_COLUMNS)
    )
    assert out.get_column("continues_thread").drop_nulls().len() > 0  # the log has linked compactions
    assert out.get_column("thread_id").n_unique() >= THREADS
    assert verify(run) == []


def test_keep_leaves_counts_add_up_over_files(tmp_path: Path, small_partitions: None) -> None:

    from pipeline.engine.dropped import rebuild
    from pipeline.schema import CONVERSATION_SCHEMA

    summary = run_job(load_job(_job(tmp_path, "run", _files(tmp_path), "threads:keep=leaves")))
    run = tmp_path / "run"
    assert summary["read"] == summary["written"] + summary["rejected"] + summary["dropped"]
    kept = pl.from_arrow(folder(run, "conversations"))
    assert isinstance(kept, pl.DataFrame)
    assert kept.height == summary["written"] and kept.get_column("is_leaf").all()
    assert [r["stage"] for r in folder(run, "rejected").to_pylist()] == ["read"]  # the bad line alone
    # every dropped record, rebuilt from its leaf, is the record as stage 1 read it
    dropped = pl.from_arrow(folder(run, "dropped"))
    assert isinstance(dropped, pl.DataFrame) and dropped.height == summary["dropped"] > summary["written"]
    read = pl.from_arrow(_stage1_rows(run))
    assert isinstance(read, pl.DataFrame)
    got = rebuild(dropped, kept).select(CONVERSATION_SCHEMA.names).sort("conversation_id")
    want = read.join(got.select("conversation_id"), on="conversation_id", how="semi")
    assert got.equals(want.select(CONVERSATION_SCHEMA.names).sort("conversation_id"))
    assert verify(run) == []


def test_a_run_killed_between_the_stages_resumes(
    tmp_path: Path, small_partitions: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    inputs = _files(tmp_path)
    run_job(load_job(_job(tmp_path, "whole", inputs, "threads:keep=leaves")))

    def killed(*args: Any, **kwargs: Any) -> dict[str, Any]:
        raise KeyboardInterrupt  # the job stops after stage 1, before any partition is threaded

    job = load_job(_job(tmp_path, "run", inputs, "threads:keep=leaves", workers=1))
    with monkeypatch.context() as m:
        m.setattr(partition, "thread_partition", killed)
        with pytest.raises(KeyboardInterrupt):
            run_job(job)
    stage1 = sorted((tmp_path / "run" / "partitions").iterdir())
    assert stage1 and not list((tmp_path / "run" / "conversations").iterdir())
    for p in stage1:  # a year-2001 mtime: a rewrite, however soon after stage 1, changes it
        os.utime(p, ns=(10**18, 10**18))
    mtimes = [p.stat().st_mtime_ns for p in stage1]
    calls: list[str] = []
    real = partition.partition_shard

    def counted(shard: dict[str, Any], *args: Any) -> dict[str, Any]:
        calls.append(shard["id"])
        return real(shard, *args)

    monkeypatch.setattr(partition, "partition_shard", counted)
    summary = run_job(job)
    assert calls == []  # stage 1 was not redone
    assert [p.stat().st_mtime_ns for p in stage1] == mtimes
    kept = len({p.name.split(".")[0] for p in stage1})
    assert (summary["stage1_resumed"], summary["stage1_shards"], summary["shards_resumed"]) == (kept, kept, 0)
    # printed: every shard of both stages, of which stage 1's were kept (not "shards 1, resumed 15")
    assert shards_text(summary) == f"{kept + summary['shards']} ({kept} resumed)"
    whole, resumed = file_hashes(tmp_path / "whole"), file_hashes(tmp_path / "run")
    assert resumed == whole


def _user(t: str) -> dict[str, Any]:
    return {"role": "user", "content": t}


def _assistant(t: str) -> dict[str, Any]:
    return {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": t}]}


@pytest.mark.parametrize("keep", ["all", "leaves"])
def test_a_compaction_link_across_partitions_is_resolved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, keep: str
) -> None:
    """A thread that starts with a system prompt, compacted into a window of its user turns: the
    window's first item differs, so it lands in another partition; the link still equals the
    in-memory step's (the third pass)."""
    import orjson

    lines = []
    for t in range(6):
        source = [{"role": "system", "content": f"rules {t}"}, _user(f"task {t}")]
        for k in range(3):
            lines.append({"model": "m", "input": list(source)})
            source += [_assistant(f"a{t}.{k}"), _user(f"u{t}.{k}")]
        window = [_user(f"task {t}"), *[_user(f"u{t}.{k}") for k in range(2)]]
        window.append({"type": "compaction", "encrypted_content": f"enc-{t}"})
        after = [*window, _user(f"after {t}")]
        lines += [
            {"model": "m", "input": after},
            {"model": "m", "input": [*after, _assistant("ok"), _user("more")]},
        ]
    write_jsonl(tmp_path / "a.jsonl", [orjson.dumps(x) for x in lines[::2]])
    write_jsonl(tmp_path / "b.jsonl", [orjson.dumps(x) for x in lines[1::2]])
    inputs = [{"path": p, "format": "responses"} for p in ("a.jsonl", "b.jsonl")]
    monkeypatch.setattr(partition, "PARTITION_BYTES", 200)  # many partitions
    summary = run_job(load_job(_job(tmp_path, "run", inputs, f"threads:keep={keep}")))
    run = tmp_path / "run"
    out = pl.from_arrow(folder(run, "conversations"))
    assert isinstance(out, pl.DataFrame)
    # the reference: the step on every record at once (all records as stage 1 wrote them)
    everything = pl.from_arrow(_stage1_rows(run))
    assert isinstance(everything, pl.DataFrame)
    expected, _ = apply_steps(everything, [parse_step(f"threads:keep={keep}")])
    got, want = _threads_of(out), _threads_of(expected)
    assert got.equals(want), (got, want)
    linked = out.filter(pl.col("continues_thread").is_not_null())
    assert linked.height == (12 if keep == "all" else 6)
    # the links cross partitions: a linked record's partition differs from its source thread's
    part_of = {
        cid: p.name.split(".")[1]
        for p in _stage1_files(run)
        for cid in read_table(p, ["conversation_id"]).column(0).to_pylist()
    }
    pairs = linked.select("conversation_id", "continues_thread").rows()
    assert any(part_of[a] != part_of[b] for a, b in pairs)
    assert summary["read"] == summary["written"] + summary["rejected"] + summary.get("dropped", 0)
    assert verify(run) == []


def test_the_threads_audit_query_and_the_summary_agree(tmp_path: Path, small_partitions: None) -> None:
    """sql/threads_by_dataset.sql on a keep=all and a keep=leaves run of the same log: the same
    threads, requests and items (dedupe changes where records go, not what was read), equal to
    the summary's threads section and to a count over the records as read."""

    from pipeline.audit import load_query, open_run

    inputs = _files(tmp_path)
    figures = {}
    for keep in ("all", "leaves"):
        summary = run_job(load_job(_job(tmp_path, keep, inputs, f"threads:keep={keep}")))
        rows = load_query("threads_by_dataset").run(open_run(tmp_path / keep)).to_pylist()
        assert len(rows) == len(summary["threads"]) == len(inputs)
        for r, s in zip(rows, summary["threads"], strict=True):
            assert r.keys() == s.keys()
            for k in r:  # the ratios are DuckDB's and Polars' divisions of the same integers
                assert r[k] == (pytest.approx(s[k], rel=1e-12) if isinstance(s[k], float) else s[k]), k
        assert [r["dataset"] for r in rows] == sorted(str(tmp_path / i["path"]) for i in inputs)
        figures[keep] = rows
    assert figures["all"] == figures["leaves"]
    for keep in ("all", "leaves"):  # the files add up to the summary, dropped records included
        assert load_query("run_counts_mismatch").run(open_run(tmp_path / keep)).num_rows == 0
    read = pl.from_arrow(_stage1_rows(tmp_path / "all"))
    assert isinstance(read, pl.DataFrame)
    by_file = read.group_by("source_file").agg(
        pl.len().alias("requests"), pl.col("n_items").sum().alias("items")
    )
    want = {r["source_file"]: (r["requests"], r["items"]) for r in by_file.to_dicts()}
    assert {r["dataset"]: (r["requests"], r["items"]) for r in figures["all"]} == want
    kept = folder(tmp_path / "leaves", "conversations")
    assert sum(r["items_kept"] for r in figures["all"]) == pl.Series(kept.column("n_items")).sum()
    assert all(r["redundancy_ratio"] > 1 and r["requests_per_thread"] > 1 for r in figures["all"])


def test_no_threads_step_no_thread_rows(tmp_path: Path) -> None:
    from pipeline.audit import load_query, open_run

    inputs = _files(tmp_path, 1)
    run_job(load_job(_job(tmp_path, "plain", inputs, "turns")))
    assert load_query("threads_by_dataset").run(open_run(tmp_path / "plain")).num_rows == 0


def test_partitions_are_sized_by_the_input_as_json(tmp_path: Path) -> None:
    from pipeline.jobs.resolve import InputFile

    def job_of(*files: InputFile) -> Any:
        return type("J", (), {"files": list(files)})()

    mb = 1 << 20
    assert partition.partition_count(job_of(InputFile("a.jsonl", "jsonl", "responses", {}, 10 * mb))) == 1
    assert partition.partition_count(job_of(InputFile("a.jsonl", "jsonl", "responses", {}, 65 * mb))) == 2
    # canonical Parquet is packed: 64 MB of it holds about 9x as much JSON
    parquet = InputFile("a.parquet", "parquet", "canonical", {}, 64 * mb)
    assert partition.partition_count(job_of(parquet)) == 9
    gz = InputFile("a.jsonl.gz", "stream", "responses", {}, 64 * mb)
    assert partition.partition_count(job_of(gz, parquet)) == 15


def test_stage1_shards_grow_with_the_partitions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Stage-1 shards are ``ceil(P / STAGE1_SPREAD)`` job shards each, so the stage-1 files (one per
    shard and partition) do not grow as the square of the input; the output is the same."""
    inputs = _files(tmp_path)
    monkeypatch.setattr(partition, "PARTITION_BYTES", 2_000)  # P > STAGE1_SPREAD
    job = load_job(_job(tmp_path, "run", inputs, "threads:keep=leaves"))
    p = partition.partition_count(job)
    assert p > partition.STAGE1_SPREAD
    assert partition.stage1_records(job) == job.shard_records * -(-p // partition.STAGE1_SPREAD)
    summary = run_job(job)
    run = tmp_path / "run"
    stage1 = {f.name.split(".")[0] for f in (run / "partitions").iterdir()}
    records = sum(f["read"] for f in summary["inputs"])
    assert len(stage1) < records / job.shard_records  # fewer stage-1 shards than job shards
    # the same threads as with one partition (and so one stage-1 shard per job shard)
    monkeypatch.setattr(partition, "PARTITION_BYTES", 1 << 30)
    plain = load_job(_job(tmp_path, "one", inputs, "threads:keep=leaves"))
    assert partition.stage1_records(plain) == plain.shard_records
    run_job(plain)
    got = _threads_of(pl.from_arrow(folder(run, "conversations")))  # type: ignore[arg-type]
    want = _threads_of(pl.from_arrow(folder(tmp_path / "one", "conversations")))  # type: ignore[arg-type]
    assert got.equals(want)
    assert verify(run) == []


def test_stage1_batches_do_not_change_an_output_byte(tmp_path: Path, small_partitions: None) -> None:
    """Stage 1 writes each batch's rows of a partition as one piece of that partition's Arrow IPC
    file (engine/partition.py, ``_Files``: no Parquet writer holding a row group's metadata per
    piece). One record per batch (a piece per record) and one batch for the whole shard give
    byte-identical outputs: the pieces' boundaries do not reach stage 2's files."""
    inputs = _files(tmp_path)
    runs = {}
    for name, size in (("small", 1024), ("large", 1 << 24)):  # JSONL batches: chunk_bytes of input
        run_job(load_job(_job(tmp_path, name, inputs, "threads:keep=leaves", chunk_bytes=size)))
        runs[name] = tmp_path / name
        assert verify(runs[name]) == []
    pieces = {
        name: sum(pa.ipc.open_file(p).num_record_batches for p in _stage1_files(run))
        for name, run in runs.items()
    }
    assert pieces["small"] > 2 * pieces["large"]  # many more, smaller pieces
    outputs = {
        name: {
            k: v
            for k, v in file_hashes(run).items()
            if k.split("/")[0] in ("conversations", "dropped", "rejected")
        }
        for name, run in runs.items()
    }
    assert outputs["small"] and outputs["small"] == outputs["large"]
