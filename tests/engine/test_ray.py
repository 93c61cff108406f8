"""The Ray Data engine gives byte-identical output to the local engine on the same job."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson
import pytest

from pipeline.engine import run_job
from pipeline.engine.writers import FOLDERS
from pipeline.jobs import load_job
from tests.cases import BAD_LINES, CASES
from tests.engine.helpers import file_hashes, write_job, write_jsonl

# Ray's own DataContext properties warn about their deprecated names when the context is copied.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def test_ray_engine_output_equals_local_engine(local_ray: Any, tmp_path: Path) -> None:
    good = [orjson.dumps(r) for _, r in CASES["responses"]]
    lines = good * 3 + [b for f, b, _ in BAD_LINES if f == "responses"]
    write_jsonl(tmp_path / "in.jsonl", lines)
    summaries = {}
    for engine in ("local", "ray"):
        job = write_job(
            tmp_path / f"{engine}.toml",
            [{"path": "in.jsonl", "format": "responses"}],
            {"path": engine, "target": "chat", "shard_records": 7},
            steps=["turns", "role_swap:on_unsupported=drop"],
            engine={"kind": engine, "workers": 2},
        )
        summaries[engine] = run_job(load_job(job))
    local, ray_ = file_hashes(tmp_path / "local"), file_hashes(tmp_path / "ray")
    assert summaries["local"]["shards"] == -(-len(lines) // 7) > 2
    assert len(local) == len(FOLDERS) * summaries["local"]["shards"] + 1  # every folder x shards + manifest
    assert ray_ == local
    for k in ("read", "written", "rejected", "rejected_by_stage", "rejected_by_reason", "losses_by_kind"):
        assert summaries["ray"][k] == summaries["local"][k], k
    assert summaries["ray"]["engine"] == "ray" and summaries["ray"]["steps"] == ["turns", "role_swap"]
    assert summaries["ray"]["written"] > 0


def test_ray_runs_the_two_stage_threads_job_as_local_does(
    local_ray: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pipeline import synth
    from pipeline.engine import partition

    lines = b"".join(synth.request_log("responses", 12, seed=5, mean_requests=6)).splitlines()
    write_jsonl(tmp_path / "a.jsonl", lines[::2])
    write_jsonl(tmp_path / "b.jsonl", lines[1::2])
    monkeypatch.setattr(partition, "PARTITION_BYTES", 20_000)  # P is chosen by the driver
    summaries = {}
    for engine in ("local", "ray"):
        job = write_job(
            tmp_path / f"{engine}.toml",
            [{"path": p, "format": "responses"} for p in ("a.jsonl", "b.jsonl")],
            {"path": engine, "target": "parquet", "shard_records": 10},
            steps=["threads:keep=leaves"],
            engine={"kind": engine, "workers": 2},
        )
        summaries[engine] = run_job(load_job(job))
    local, ray_ = file_hashes(tmp_path / "local"), file_hashes(tmp_path / "ray")
    assert summaries["local"]["shards"] > 1 and any(p.startswith("partitions/") for p in local)
    assert ray_ == local
    for k in ("read", "written", "rejected", "rejected_by_reason", "inputs"):
        assert summaries["ray"][k] == summaries["local"][k], k


def test_ray_reads_its_input_from_s3_as_the_local_engine_does(s3: str, tmp_path: Path) -> None:
    """The same job over a JSONL object on the S3 server: Ray's tasks read their byte ranges from the
    store and write what the local engine writes. Run as a command (its own local Ray), so that the
    workers start with the environment that points them at the server, as on a cluster's nodes."""
    import subprocess
    import sys

    from pipeline.storage import filesystem

    good = [orjson.dumps(r) for _, r in CASES["responses"]]
    data = b"".join(line + b"\n" for line in good * 4)
    fs, path = filesystem(f"{s3}/in.jsonl")
    fs.pipe_file(path, data)
    summaries = {}
    for engine in ("local", "ray"):
        job = write_job(
            tmp_path / f"{engine}.toml",
            [{"path": f"{s3}/in.jsonl", "format": "responses"}],
            {"path": engine, "target": "chat", "shard_records": 7},
            engine={"kind": engine, "workers": 2},
        )
        cmd = [sys.executable, "-m", "pipeline", "run", str(job), "--json", "--no-catalog"]
        env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}  # a Ray of its own
        done = subprocess.run(cmd, capture_output=True, env=env, timeout=600, check=False)
        assert done.returncode == 0, done.stderr.decode()[-2000:]
        summaries[engine] = orjson.loads(done.stdout.splitlines()[-1])
    assert summaries["ray"]["engine"] == "ray" and summaries["ray"]["shards"] > 2
    assert summaries["ray"]["read"] == len(good) * 4 == summaries["local"]["read"]
    assert summaries["ray"]["inputs"][0]["path"] == f"{s3}/in.jsonl"
    assert file_hashes(tmp_path / "ray") == file_hashes(tmp_path / "local")
