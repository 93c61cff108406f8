"""Fault injection: kill -9 of the parent or of a worker, a full disk, a read-only output, two runs
at once. Each ends with a one-line error and the documented exit code, or with a rerun whose files
equal an uninterrupted run's; no orphaned worker keeps writing.

Every fault is injected into a real ``python -m pipeline`` child process.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest

from pipeline import synth
from tests.engine.helpers import file_hashes, write_job

N, SHARD = 600, 50  # 12 shards


def _job(tmp_path: Path, run: str, *, n_in: str = "in.jsonl", shard: int = SHARD, **engine: object) -> Path:
    return write_job(
        tmp_path / f"{run}.toml",
        [{"path": n_in, "format": "responses"}],
        {"path": run, "target": "chat", "shard_records": shard},
        engine={"workers": 2, "chunk_bytes": 64 << 10, **engine},
    )


def _cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "pipeline", *args]


def _run(job: Path, *extra: str, **kw: object) -> subprocess.Popen[bytes]:
    cmd = _cmd("run", str(job), "--quiet", "--no-catalog", *extra)
    return subprocess.Popen(cmd, cwd=job.parent, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)  # type: ignore[call-overload]


def _listed(run_dir: Path) -> int:
    try:
        return len(orjson.loads((run_dir / "manifest.json").read_bytes())["shards"])
    except (FileNotFoundError, orjson.JSONDecodeError):
        return 0


def _children(pid: int) -> list[int]:
    """The live child processes of ``pid`` (from /proc)."""
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2 :].split()
            if int(fields[1]) == pid and fields[0] != "Z":
                out.append(int(d.name))
    return out


def _workers(pid: int) -> list[int]:
    """The pool workers among the children (not multiprocessing's resource tracker)."""
    out = []
    for c in _children(pid):
        try:
            if b"resource_tracker" not in Path(f"/proc/{c}/cmdline").read_bytes():
                out.append(c)
        except OSError:
            continue
    return out


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"  # a zombie has stopped: nobody reaped it yet


def _wait_for(cond: Callable[[], bool], proc: subprocess.Popen[bytes], what: str,
              timeout: float = 120.0) -> None:  # fmt: skip
    """Poll ``cond`` until it holds; fail if the job ends first."""
    deadline = time.monotonic() + timeout
    while not cond():
        assert proc.poll() is None, f"the job ended before {what}: {proc.communicate()}"
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.005)


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """The input, and the files of an uninterrupted run of it."""
    base = tmp_path_factory.mktemp("faults")
    synth.write_jsonl(base / "in.jsonl", "responses", N, 5)
    ref = _run(_job(base, "ref"))
    assert ref.wait(timeout=300) == 0, ref.communicate()
    return base / "in.jsonl", file_hashes(base / "ref")


def test_workers_die_with_a_parent_killed_alone(tmp_path: Path) -> None:
    # One big batch per shard: a worker that outlived its parent would go on for seconds.
    synth.write_jsonl(tmp_path / "big.jsonl", "responses", 1600, 9)
    job = _job(tmp_path, "run", n_in="big.jsonl", shard=800, chunk_bytes=64 << 20, batch_rows=100_000)
    proc = _run(job)
    _wait_for(lambda: len(_workers(proc.pid)) >= 2, proc, "the workers started")
    items = tmp_path / "run" / "items"
    _wait_for(lambda: items.is_dir() and any(items.glob(".*.tmp")), proc, "a worker writing")
    workers = _workers(proc.pid)
    os.kill(proc.pid, signal.SIGKILL)  # the parent only, not its process group
    proc.wait()
    time.sleep(0.5)
    survivors = [w for w in workers if _alive(w)]
    for w in survivors:  # do not leave them running whatever the outcome
        os.kill(w, signal.SIGKILL)
    assert survivors == [], "workers outlived their killed parent"
