"""A job killed with SIGKILL mid-way and started again ends byte-identical to an uninterrupted run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from pipeline import synth
from pipeline.engine.manifest import read as read_manifest
from pipeline.engine.writers import FOLDERS
from tests.engine.helpers import file_hashes, write_job

N, SHARD = 1_200, 50  # 24 shards: enough that a kill lands mid-way


def _job(tmp_path: Path, run: str, pool: str = "processes") -> Path:
    return write_job(
        tmp_path / f"{run}.toml",
        [{"path": "in.jsonl", "format": "responses"}],
        {"path": run, "target": "chat", "shard_records": SHARD},
        engine={"workers": 2, "chunk_bytes": 64 << 10, "pool": pool},
    )


def _run(job: Path, **kw: object) -> subprocess.Popen[bytes]:
    cmd = [sys.executable, "-m", "pipeline", "run", str(job), "--quiet", "--no-catalog"]
    return subprocess.Popen(cmd, cwd=job.parent, **kw)  # type: ignore[call-overload]


def _listed(run_dir: Path) -> int:
    try:
        return len(read_manifest(run_dir)["shards"])
    except (FileNotFoundError, orjson.JSONDecodeError):
        return 0


@pytest.mark.parametrize("pool", ["processes", "threads"])
def test_kill_9_then_resume_gives_byte_identical_shards(tmp_path: Path, pool: str) -> None:
    synth.write_jsonl(tmp_path / "in.jsonl", "responses", N, 3)
    total = N // SHARD

    ref = _run(_job(tmp_path, "ref"))
    assert ref.wait(timeout=600) == 0

    job = _job(tmp_path, "killed", pool)
    proc = _run(job, start_new_session=True)
    deadline = time.monotonic() + 600
    while _listed(tmp_path / "killed") < 3 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert proc.poll() is None, "the job finished before it could be killed; make it bigger"
    os.killpg(proc.pid, signal.SIGKILL)  # the whole process group, like a machine going down
    proc.wait()
    done_at_kill = _listed(tmp_path / "killed")
    assert 0 < done_at_kill < total, done_at_kill

    resumed = _run(job)
    assert resumed.wait(timeout=600) == 0
    summary = orjson.loads((tmp_path / "killed" / "summary.json").read_bytes())
    assert summary["shards_resumed"] >= done_at_kill and summary["shards"] == total
    assert summary["read"] == N == summary["written"] + summary["rejected"]
    ref_hashes = file_hashes(tmp_path / "ref")
    assert len(ref_hashes) == len(FOLDERS) * total + 1  # every folder x shards + manifest.json
    assert file_hashes(tmp_path / "killed") == ref_hashes
