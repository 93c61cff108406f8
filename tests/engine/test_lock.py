"""One run at a time per run directory: the second is refused, naming the first."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import orjson
import pytest

from pipeline.engine import run_job
from pipeline.engine.lock import LOCK, RunLocked, run_lock
from pipeline.errors import ConfigError
from pipeline.jobs import load_job
from tests.cases import CASES
from tests.engine.helpers import write_job, write_jsonl


def test_a_second_holder_is_refused_naming_the_first(tmp_path: Path) -> None:
    with run_lock(tmp_path):
        doc = orjson.loads((tmp_path / LOCK).read_bytes())
        assert doc["pid"] == os.getpid() and doc["host"] == socket.gethostname()
        named = rf"in use by another chatlake run \(pid {os.getpid()} on .*, since "
        with pytest.raises(RunLocked, match=named), run_lock(tmp_path):
            pass
    assert not (tmp_path / LOCK).exists()
    with run_lock(tmp_path):  # free again once released
        pass


def test_a_stale_lock_file_of_a_dead_run_does_not_block(tmp_path: Path) -> None:
    (tmp_path / LOCK).write_bytes(b'{"pid": 1, "host": "gone", "since": "yesterday"}')
    with run_lock(tmp_path):
        assert orjson.loads((tmp_path / LOCK).read_bytes())["pid"] == os.getpid()


def test_run_job_is_refused_while_the_run_directory_is_locked(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "in.jsonl", [orjson.dumps(r) for _, r in CASES["chat"]])
    job = load_job(write_job(tmp_path / "job.toml", [{"path": "in.jsonl", "format": "chat"}],
                             {"path": "run", "target": "chat"}, engine={"workers": 1}))  # fmt: skip
    (tmp_path / "run").mkdir()
    with run_lock(tmp_path / "run"):
        with pytest.raises(ConfigError, match="in use by another chatlake run"):
            run_job(job)
        assert sorted(p.name for p in (tmp_path / "run").iterdir()) == [LOCK]  # nothing was done
    assert run_job(job)["status"] == "ok"


def test_a_lock_file_planted_as_a_link_is_refused_and_its_target_untouched(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    run = tmp_path / "run"
    run.mkdir()
    (run / LOCK).symlink_to(victim)
    with pytest.raises(ConfigError, match="symbolic link"), run_lock(run):
        pass
    assert victim.read_text() == "precious"
    (run / LOCK).unlink()
    os.link(victim, run / LOCK)  # a hard link: truncating the lock would truncate the victim
    with pytest.raises(ConfigError, match="hard link"), run_lock(run):
        pass
    assert victim.read_text() == "precious"
