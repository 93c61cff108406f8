"""Where inputs come from: a path or glob names each real file once, and ``**`` survives link loops."""

from __future__ import annotations

import os
from pathlib import Path

from pipeline.jobs import load_job
from pipeline.jobs.files import expand
from tests.engine.helpers import write_job, write_jsonl


def test_a_symlink_loop_under_a_double_star_glob_names_each_file_once(tmp_path: Path) -> None:
    data = tmp_path / "data"
    (data / "sub").mkdir(parents=True)
    write_jsonl(data / "a.jsonl", [b"{}"])
    write_jsonl(data / "sub" / "b.jsonl", [b"{}"])
    os.symlink(data, data / "sub" / "loop")  # data/sub/loop -> data: a directory cycle
    os.symlink(data / "a.jsonl", data / "alias.jsonl")  # the same file under a second name
    hits = expand("data/**/*.jsonl", tmp_path)
    assert hits == [str((data / "a.jsonl").resolve()), str((data / "sub" / "b.jsonl").resolve())]


def test_a_symlinked_directory_outside_the_tree_is_followed(tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    write_jsonl(tmp_path / "elsewhere" / "c.jsonl", [b"{}"])
    (tmp_path / "data").mkdir()
    os.symlink(tmp_path / "elsewhere", tmp_path / "data" / "link")
    assert expand("data/**/*.jsonl", tmp_path) == [str((tmp_path / "elsewhere" / "c.jsonl").resolve())]


def test_hidden_names_need_a_pattern_that_starts_with_a_dot(tmp_path: Path) -> None:
    (tmp_path / "d" / ".hidden").mkdir(parents=True)
    write_jsonl(tmp_path / "d" / ".hidden" / "x.jsonl", [b"{}"])
    write_jsonl(tmp_path / "d" / ".y.jsonl", [b"{}"])
    write_jsonl(tmp_path / "d" / "z.jsonl", [b"{}"])
    assert [Path(h).name for h in expand("d/**/*.jsonl", tmp_path)] == ["z.jsonl"]
    assert [Path(h).name for h in expand("d/.*.jsonl", tmp_path)] == [".y.jsonl"]


def test_a_file_named_by_two_patterns_is_read_once(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    write_jsonl(tmp_path / "data" / "a.jsonl", [b"{}"])
    os.symlink(tmp_path / "data" / "a.jsonl", tmp_path / "link.jsonl")
    job = load_job(write_job(tmp_path / "job.toml", [
        {"path": ["data/*.jsonl", "data/a.jsonl", "link.jsonl"], "format": "chat"},
        {"path": "data/**", "format": "chat"},
    ], {"path": "run", "target": "chat"}))  # fmt: skip
    assert [f.url for f in job.files] == [str((tmp_path / "data" / "a.jsonl").resolve())]
