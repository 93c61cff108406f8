"""Safe writes: a file chatlake writes is one it has just created, never reached through a link,
renamed into place only if its name still holds it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pipeline.engine.atomic import NewFile, UnsafePath, check_writable, write_atomic
from pipeline.errors import ConfigError


def test_write_atomic_refuses_a_link_planted_at_its_temp_name(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    (tmp_path / ".manifest.json.tmp").symlink_to(victim)
    with pytest.raises(UnsafePath, match="symbolic link"):
        write_atomic(tmp_path / "manifest.json", b"{}")
    assert victim.read_text() == "precious" and not (tmp_path / "manifest.json").exists()


def test_a_hard_link_at_the_temp_name_loses_its_name_not_its_bytes(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    os.link(victim, tmp_path / ".summary.json.tmp")  # like a temp file a killed run left, but shared
    write_atomic(tmp_path / "summary.json", b"new")
    assert victim.read_text() == "precious" and (tmp_path / "summary.json").read_bytes() == b"new"
    assert not (tmp_path / ".summary.json.tmp").exists()


def test_a_user_path_never_removes_what_is_at_its_temp_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``user=True`` (--report, --html): the temp name is unique, and a file already there is an error."""
    import secrets

    monkeypatch.setattr(secrets, "token_hex", lambda n: "beef")
    theirs = tmp_path / f".r.json.{os.getpid()}.beef.tmp"
    theirs.write_text("theirs")
    with pytest.raises(FileExistsError):
        write_atomic(tmp_path / "r.json", b"{}", user=True)
    assert theirs.read_text() == "theirs"


def test_a_writer_by_path_writes_the_created_file_even_if_its_name_is_swapped(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    new = NewFile(tmp_path / ".part-00000.jsonl.1.tmp")
    new.path.unlink()
    new.path.symlink_to(victim)  # swapped for a link after chatlake created it
    with open(new.where, "wb") as f:
        f.write(b"shard bytes")
    assert victim.read_text() == "precious"
    with pytest.raises(UnsafePath, match="was replaced while chatlake wrote it"):
        new.commit(tmp_path / "part-00000.jsonl")
    assert victim.read_text() == "precious" and not (tmp_path / "part-00000.jsonl").exists()


def test_commit_replaces_a_link_at_the_final_name_without_following_it(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    (tmp_path / "out.jsonl").symlink_to(victim)
    new = NewFile(tmp_path / ".out.jsonl.tmp")
    with new.open() as f:
        f.write(b"ours")
    new.commit(tmp_path / "out.jsonl")
    assert victim.read_text() == "precious"
    assert not (tmp_path / "out.jsonl").is_symlink() and (tmp_path / "out.jsonl").read_bytes() == b"ours"


def test_discard_removes_only_the_file_it_created(tmp_path: Path) -> None:
    new = NewFile(tmp_path / ".x.tmp")
    new.path.unlink()
    new.path.write_text("someone else's")
    new.discard()
    assert new.path.read_text() == "someone else's"


def test_check_writable_is_one_line_for_a_link_loop_and_a_link(tmp_path: Path) -> None:
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    with pytest.raises(ConfigError, match=r"--report .*symbolic link"):
        check_writable(loop, "--report")
    with pytest.raises(ConfigError, match=r"--html .*loop of symbolic links"):
        check_writable(loop / "r.html", "--html")
    check_writable(tmp_path / "a" / "b" / "r.json", "--report")  # a missing folder is fine ...
    assert not (tmp_path / "a").exists()  # ... and a check creates nothing
