"""The local engine's two pools (spawned processes, threads) write the same bytes and fail the same way."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import orjson
import pytest

from pipeline.engine import JobFailed, local, run_job
from pipeline.engine.manifest import read as read_manifest
from pipeline.errors import ConfigError
from pipeline.jobs import load_job
from tests.cases import BAD_LINES, CASES
from tests.engine.helpers import file_hashes, write_job, write_jsonl

SHARD = 5


def _input(tmp_path: Path) -> int:
    good = [orjson.dumps(r) for _, r in CASES["responses"]]
    lines = good * 3 + [b for f, b, _ in BAD_LINES if f == "responses"]
    write_jsonl(tmp_path / "in.jsonl", lines)
    return len(lines)


def _job(tmp_path: Path, run: str, **engine: Any) -> Path:
    return write_job(
        tmp_path / f"{run}.toml",
        [{"path": "in.jsonl", "format": "responses"}],
        {"path": run, "target": "chat", "shard_records": SHARD},
        steps=["turns", "role_swap:on_unsupported=drop"],
        engine={"workers": 2, "chunk_bytes": 1024, **engine},
    )


def test_threads_write_the_same_bytes_as_processes(tmp_path: Path) -> None:
    n = _input(tmp_path)
    summaries = {
        pool: run_job(load_job(_job(tmp_path, pool, pool=pool))) for pool in ("processes", "threads")
    }
    procs, threads = file_hashes(tmp_path / "processes"), file_hashes(tmp_path / "threads")
    assert summaries["threads"]["shards"] == -(-n // SHARD) > 4
    assert threads == procs  # every shard file and manifest.json
    for k in ("read", "written", "rejected", "rejected_by_reason", "losses_by_kind", "fallback_by_reason"):
        assert summaries["threads"][k] == summaries["processes"][k], k


def test_a_failing_shard_stops_the_other_threads_and_a_rerun_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _input(tmp_path)
    ref = run_job(load_job(_job(tmp_path, "ref", workers=1)))
    job = _job(tmp_path, "run", pool="threads")
    real = local.run_shard
    seen: list[str] = []

    def flaky(shard: dict[str, Any], work: Any, progress: Any = None) -> dict[str, Any]:
        seen.append(threading.current_thread().name)
        if shard["id"] == "part-00003":
            raise RuntimeError("disk on fire")
        return real(shard, work, progress)

    monkeypatch.setattr(local, "run_shard", flaky)
    with pytest.raises(JobFailed, match="RuntimeError: disk on fire"):
        run_job(load_job(job))
    assert all(name.startswith("chatlake-shard") for name in seen)  # ran on the pool's threads
    listed = read_manifest(tmp_path / "run")["shards"]
    assert len(listed) < ref["shards"]
    # no temp file left by a thread that was stopped mid-shard
    assert not [p for p in (tmp_path / "run").rglob(".*.tmp")]
    monkeypatch.setattr(local, "run_shard", real)
    summary = run_job(load_job(job))
    assert summary["shards_resumed"] == len(listed)
    assert file_hashes(tmp_path / "run") == file_hashes(tmp_path / "ref")


def test_pool_is_checked_before_work(tmp_path: Path) -> None:
    _input(tmp_path)
    with pytest.raises(ConfigError, match=r"engine\.pool is for the local engine"):
        load_job(_job(tmp_path, "ray", kind="ray", pool="threads"))
    with pytest.raises(ConfigError, match="pool"):
        load_job(_job(tmp_path, "bad", pool="fibers"))
    assert not (tmp_path / "ray").exists() and not (tmp_path / "bad").exists()


def test_ordered_hands_finished_shards_over_in_the_order_given(tmp_path: Path) -> None:
    """With ``ordered`` a shard that finishes first waits for the ones before it (the single-file
    layout appends shards in order): the first shard here finishes only after the second."""
    from pipeline.engine.process import Work
    from pipeline.engine.shards import Shard, shard_id

    # Shard 0 is held until shard 1 is finished (ordered) or handed over (not ordered: waiting on
    # the hand-over, not on the task's end, so the check cannot race the pool's bookkeeping).
    second_done = threading.Event()
    second_handed = threading.Event()
    hold = second_done

    def task(shard: dict[str, Any], work: Any, progress: Any = None) -> dict[str, Any]:
        if shard["id"] == shard_id(0):
            assert hold.wait(10)
        if shard["id"] == shard_id(1):
            second_done.set()
        return {"id": shard["id"]}

    shards = [Shard(shard_id(k), "in.jsonl", "jsonl", "responses", {}, 0, 1, 1, 1) for k in range(7)]
    work = Work(str(tmp_path), "chat", (), "allow", (), 1 << 20, 100)
    for ordered in (True, False):
        second_done.clear()
        second_handed.clear()
        hold = second_done if ordered else second_handed
        got: list[str] = []

        def done(entry: dict[str, Any], got: list[str] = got) -> None:
            got.append(entry["id"])
            if entry["id"] == shard_id(1):
                second_handed.set()

        local.execute(shards, work, 2, done, lambda r, b: None, "threads", task=task, ordered=ordered)
        assert sorted(got) == [s.id for s in shards]
        if ordered:
            assert got == [s.id for s in shards]
        else:  # without it, the second shard is handed over before the first
            assert got.index(shard_id(1)) < got.index(shard_id(0))
