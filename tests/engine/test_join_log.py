"""The single-file join deletes each staged shard once appended and logs it (engine/join_log.py):
a run interrupted mid-join resumes without redoing the joined shards, and a log the temp files do
not back up is ignored (those shards are redone), both to the same bytes."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

import pipeline.cli as cli_module
from pipeline.engine import join_log
from pipeline.engine.single_file import final_paths, staging_dir
from pipeline.synth import write_jsonl


def _convert(src: Path, out: Path, code: int = 0) -> dict:
    report = out.with_name(out.name + ".report.json")
    argv = ["convert", str(src), "--from", "responses", "--to", "chat", "-o", str(out), "-q",
            "--losses", "jsonl", "--workers", "2", "--report", str(report)]  # fmt: skip
    res = CliRunner().invoke(cli_module.cli, argv)
    assert res.exit_code == code, res.output
    return orjson.loads(report.read_bytes()) if code == 0 else {}


@pytest.fixture
def src(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(cli_module, "SINGLE_FILE_SHARD_RECORDS", 50)  # 8 shards
    path = tmp_path / "in.jsonl"
    write_jsonl(path, "responses", 400, seed=3)
    return path


def _finals(out: Path) -> dict[str, bytes]:
    return {role: p.read_bytes() for role, p in final_paths(out, "chat", losses_format="jsonl").items()}


def _interrupt_after(monkeypatch: pytest.MonkeyPatch, joined: int) -> None:
    """Make the join fail right after it logged ``joined`` shards (the run fails, staging stays)."""
    save = join_log.JoinLog.save

    def failing_save(self: join_log.JoinLog, run_dir: Path) -> None:
        save(self, run_dir)
        if self.next == joined:
            raise KeyboardInterrupt("interrupted mid-join")

    monkeypatch.setattr(join_log.JoinLog, "save", failing_save)


def _reference_and_interrupted(
    src: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[Path, Path]:
    """An uninterrupted run's output, and a run's output path whose join failed after three shards."""
    ref, out = tmp_path / "ref.jsonl", tmp_path / "out.jsonl"
    _convert(src, ref)
    with monkeypatch.context() as m:
        _interrupt_after(m, 3)
        _convert(src, out, code=1)  # the CLI turns the interrupt into "Aborted!", exit 1
    return ref, out


def test_load_trusts_only_logs_the_temp_files_back_up(tmp_path: Path) -> None:
    for role, size in (("output", 10), ("losses", 4)):
        join_log.temp_path(tmp_path, role).write_bytes(b"x" * size)
    log = join_log.JoinLog(2, {"output": 10, "losses": 3}, ["output/part-00000.jsonl"])
    log.save(tmp_path)
    assert join_log.load(tmp_path) == log
    assert join_log.joined_files(tmp_path) == {"output/part-00000.jsonl"}
    join_log.temp_path(tmp_path, "output").write_bytes(b"x" * 9)  # shorter than logged: not on disk
    assert join_log.load(tmp_path) is None
    assert join_log.joined_files(tmp_path) == frozenset()
    join_log.temp_path(tmp_path, "output").unlink()
    assert join_log.load(tmp_path) is None
    (tmp_path / join_log.JOIN_LOG).write_bytes(b"{not json")
    assert join_log.load(tmp_path) is None


def test_staged_files_are_deleted_as_they_are_joined(
    src: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out.jsonl"
    _interrupt_after(monkeypatch, 3)
    _convert(src, out, code=1)  # the CLI turns the interrupt into "Aborted!", exit 1
    staging = staging_dir(out)
    log = join_log.load(staging)
    assert log is not None and log.next == 3
    assert len(log.files) == 3 * 3  # output, losses, rejected of three shards
    # deleted once logged: the interrupt fell between the third shard's log and its deletion
    assert [rel for rel in log.files if (staging / rel).exists()] == [
        f"{role}/part-00002.jsonl" for role in ("output", "losses", "rejected")
    ]
    assert not out.exists()


def test_resume_after_a_partial_join_redoes_no_joined_shard(
    src: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ref, out = _reference_and_interrupted(src, tmp_path, monkeypatch)
    # a half-appended fourth shard beyond the log: cut off on resume
    with open(join_log.temp_path(staging_dir(out), "output"), "ab") as f:
        f.write(b'{"half": ')
    report = _convert(src, out)
    assert report["shards_redone"] == {}
    assert report["shards_resumed"] == 8  # every shard finished before the join failed
    assert _finals(out) == _finals(ref)
    assert not staging_dir(out).exists()


def test_a_log_the_temp_files_do_not_back_up_is_ignored(
    src: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The temp files lost what the log says they hold (the machine went down before they reached
    the disk): the deleted shards are redone and the join starts over, to the same bytes."""
    ref, out = _reference_and_interrupted(src, tmp_path, monkeypatch)
    join_log.temp_path(staging_dir(out), "losses").write_bytes(b"")
    report = _convert(src, out)
    # the third shard's files were logged but not yet deleted: still there, kept
    assert sorted(report["shards_redone"]) == ["part-00000", "part-00001"]
    assert all("missing" in why for why in report["shards_redone"].values())
    assert _finals(out) == _finals(ref)
