"""``--fresh`` empties only a chatlake run directory, and only of the files chatlake writes."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from pipeline.engine import run_job
from pipeline.errors import ConfigError
from pipeline.jobs import load_job
from tests.cases import CASES
from tests.engine.helpers import write_job, write_jsonl


def _job(tmp_path: Path, out: str = "run") -> Path:
    write_jsonl(tmp_path / "in.jsonl", [orjson.dumps(r) for _, r in CASES["chat"]])
    return write_job(tmp_path / "job.toml", [{"path": "in.jsonl", "format": "chat"}],
                     {"path": out, "target": "chat", "shard_records": 2}, engine={"workers": 1})  # fmt: skip


def test_fresh_refuses_a_directory_that_is_not_a_run(tmp_path: Path) -> None:
    job = load_job(_job(tmp_path, "thesis"))
    (tmp_path / "thesis" / "output").mkdir(parents=True)
    (tmp_path / "thesis" / "output" / "thesis.txt").write_text("three years of work")
    (tmp_path / "thesis" / "notes.md").write_text("notes")
    with pytest.raises(ConfigError, match="not a chatlake run directory"):
        run_job(job, fresh=True)
    assert (tmp_path / "thesis" / "output" / "thesis.txt").read_text() == "three years of work"
    assert sorted(p.name for p in (tmp_path / "thesis").iterdir()) == ["notes.md", "output"]


def test_fresh_deletes_only_what_chatlake_wrote(tmp_path: Path) -> None:
    job = load_job(_job(tmp_path))
    run_job(job)
    run = tmp_path / "run"
    (run / "output" / "mine.txt").write_text("keep me")
    (run / "README").write_text("keep me too")
    (run / "output" / ".part-00007.jsonl.123.tmp").write_text("half a shard of a killed run")
    summary = run_job(job, fresh=True)
    assert summary["shards_resumed"] == 0
    assert (run / "output" / "mine.txt").read_text() == "keep me"
    assert (run / "README").read_text() == "keep me too"
    assert not (run / "output" / ".part-00007.jsonl.123.tmp").exists()


def test_fresh_on_an_empty_or_absent_directory_just_runs(tmp_path: Path) -> None:
    job = load_job(_job(tmp_path))
    assert run_job(job, fresh=True)["status"] == "ok"  # absent
    job2 = load_job(_job(tmp_path, "empty"))
    (tmp_path / "empty").mkdir()
    assert run_job(job2, fresh=True)["status"] == "ok"


def test_stage1_partition_names_old_and_new_are_chatlake_s() -> None:
    """Stage-1 partition files are ``.arrow`` (since session 9) and ``.parquet`` in older runs;
    both, their temp files and the rejected file are chatlake's names (``--fresh`` and the temp
    cleanup may remove them); other names in ``partitions/`` are not."""
    from pipeline.engine.rundir import is_chatlake_name

    for name in ("part-00000.p0003.arrow", "part-00000.p0003.parquet", "part-00001.rejected.parquet",
                 ".part-00000.p0003.arrow.123.tmp", ".part-00002.rejected.parquet.9.tmp"):  # fmt: skip
        assert is_chatlake_name(f"partitions/{name}"), name
    for name in ("part-00000.p0003.csv", "mine.arrow", "part-00000.arrow.bak"):
        assert not is_chatlake_name(f"partitions/{name}"), name
