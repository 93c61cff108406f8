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


@pytest.mark.parametrize("planted", [".chatlake.lock", ".manifest.json.tmp", ".summary.json.tmp", "output",
                                     "output/.part-00000.jsonl.1.tmp", "output/part-00000.jsonl"])
def test_a_run_directory_with_a_link_where_chatlake_writes_is_refused(tmp_path: Path, planted: str) -> None:
    job = load_job(_job(tmp_path))
    run_job(job)  # a finished run of this very job: only the planted link is wrong
    run = tmp_path / "run"
    victim = tmp_path / "victim"
    victim.mkdir() if planted == "output" else victim.write_text("precious")
    (run / planted).unlink() if (run / planted).is_file() else None
    if planted == "output":
        import shutil

        shutil.rmtree(run / "output")
    (run / planted).symlink_to(victim)
    for fresh in (False, True):
        with pytest.raises(ConfigError, match=rf"holds a symbolic link where chatlake writes \({planted}\)"):
            run_job(job, fresh=fresh)
    assert victim.read_text() == "precious" if planted != "output" else not list(victim.iterdir())


def test_a_link_in_the_run_directory_is_one_line_and_exit_2(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from pipeline.cli import cli

    jobfile = _job(tmp_path)
    (tmp_path / "run").mkdir()
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "run" / "output").symlink_to(tmp_path / "elsewhere")
    res = CliRunner().invoke(cli, ["run", str(jobfile), "--no-catalog", "--quiet"])
    assert res.exit_code == 2 and res.stderr.count("\n") == 1, res.output
    assert "symbolic link where chatlake writes (output)" in res.stderr and "Traceback" not in res.output
    assert not list((tmp_path / "elsewhere").iterdir())


def test_a_run_into_a_user_directory_is_refused_and_overwrites_nothing(tmp_path: Path) -> None:
    job = load_job(_job(tmp_path, "mine"))
    (tmp_path / "mine" / "output").mkdir(parents=True)
    (tmp_path / "mine" / "output" / "part-00000.jsonl").write_text("my own data\n")
    for fresh in (False, True):
        with pytest.raises(ConfigError, match="is not empty and is not a chatlake run directory"):
            run_job(job, fresh=fresh)
    assert (tmp_path / "mine" / "output" / "part-00000.jsonl").read_text() == "my own data\n"
    assert sorted(p.name for p in (tmp_path / "mine").iterdir()) == ["output"]


def test_fresh_without_a_manifest_deletes_no_file_named_like_a_shard(tmp_path: Path) -> None:
    job = load_job(_job(tmp_path, "look-alike"))
    run = tmp_path / "look-alike"
    for rel in ("output/part-00007.jsonl", "conversations/part-00003.parquet"):
        (run / rel).parent.mkdir(parents=True, exist_ok=True)
        (run / rel).write_text("not chatlake's")
    with pytest.raises(ConfigError, match="not a chatlake run directory"):
        run_job(job, fresh=True)
    assert (run / "output" / "part-00007.jsonl").read_text() == "not chatlake's"
    assert (run / "conversations" / "part-00003.parquet").read_text() == "not chatlake's"


def test_a_run_killed_before_its_first_shard_is_still_chatlake_s(tmp_path: Path) -> None:
    """The manifest is written before any shard: a directory with only the lock, a manifest temp
    file and empty layout folders (an older run's start) is a run to resume."""
    job = load_job(_job(tmp_path))
    run = tmp_path / "run"
    (run / "output").mkdir(parents=True)
    (run / "conversations").mkdir()
    (run / ".chatlake.lock").write_text("")
    (run / ".manifest.json.tmp").write_text("{")
    assert run_job(job)["status"] == "ok"


def test_fresh_deletes_only_listed_files_that_are_unchanged(tmp_path: Path) -> None:
    job = load_job(_job(tmp_path))
    run_job(job)
    run = tmp_path / "run"
    shard = run / "output" / "part-00000.jsonl"
    shard.write_bytes(shard.read_bytes() + b"{}\n")  # edited by hand since: not chatlake's any more
    kept = {p: p.read_bytes() for p in run.rglob("*") if p.is_file() and p.name != ".chatlake.lock"}
    with pytest.raises(ConfigError, match=r"--fresh deletes only files manifest.json lists.*output/part-0"):
        run_job(job, fresh=True)
    assert {p: p.read_bytes() for p in run.rglob("*") if p.is_file()} == kept  # nothing deleted


def test_fresh_never_deletes_a_path_the_manifest_points_outside_with(tmp_path: Path) -> None:
    job = load_job(_job(tmp_path))
    run_job(job)
    run = tmp_path / "run"
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    import hashlib

    doc = orjson.loads((run / "manifest.json").read_bytes())
    entry = {"path": "../victim.txt", "bytes": victim.stat().st_size,
             "sha256": hashlib.sha256(victim.read_bytes()).hexdigest(), "rows": 0}  # fmt: skip
    doc["shards"][0]["files"]["evil"] = entry
    doc["shards"][0]["files"]["evil2"] = {**entry, "path": str(victim)}
    (run / "manifest.json").write_bytes(orjson.dumps(doc))
    assert run_job(job, fresh=True)["status"] == "ok"
    assert victim.read_text() == "precious"
