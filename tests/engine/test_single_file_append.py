"""The single-file layout writes each byte once (engine/single_file.py): shards go from the workers'
memory straight into the temp files, in shard order, each listed in the manifest with where it
ends and its sha256. A run killed in the middle of an append resumes after the last listed shard
(the half-appended one cut off), a listed shard whose bytes changed is redone with every shard
after it, and every resumed run gives the uninterrupted run's bytes."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

import pipeline.cli as cli_module
from pipeline.engine import single_file
from pipeline.engine.manifest import read as read_manifest
from pipeline.engine.single_file import final_paths, staging_dir, temp_path
from pipeline.synth import write_jsonl

SHARDS = 8


def _argv(kind: str, src: Path, out: Path, losses: str) -> list[str]:
    """``convert`` to Chat JSONL, or (``parquet``) to one canonical Parquet file."""
    argv = ["convert", str(src), "--from", "responses", "-o", str(out), "-q", "--workers", "2"]
    return [*argv, "--to", "chat", "--losses", losses] if kind == "convert" else [*argv, "--to", "parquet"]


def _run(kind: str, src: Path, out: Path, code: int = 0, losses: str = "parquet") -> dict[str, Any]:
    report = out.with_name(out.name + ".report.json")
    res = CliRunner().invoke(cli_module.cli, [*_argv(kind, src, out, losses), "--report", str(report)])
    assert res.exit_code == code, res.output
    return orjson.loads(report.read_bytes()) if code == 0 else {}


@pytest.fixture
def src(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(cli_module, "SINGLE_FILE_SHARD_RECORDS", 50)
    path = tmp_path / "in.jsonl"
    write_jsonl(path, "responses", 50 * SHARDS - 1, seed=3)
    lines = path.read_bytes().splitlines(keepends=True)
    lines.insert(120, b'{"input": 7}\n')  # a rejected record: the rejected file has content too
    path.write_bytes(b"".join(lines))
    return path


def _finals(kind: str, out: Path, losses: str = "parquet") -> dict[str, bytes]:
    target = "chat" if kind == "convert" else "parquet"
    return {role: p.read_bytes() for role, p in final_paths(out, target, losses_format=losses).items()}


def _interrupt_in_append(monkeypatch: pytest.MonkeyPatch, shard: int) -> None:
    """Make the append of shard number ``shard`` stop halfway through its output (a kill there)."""
    add = single_file.Appender.add
    seen = [0]

    def failing_add(self: single_file.Appender, entry: dict[str, Any]) -> None:
        if seen[0] == shard:
            out = self.files["output"]
            part = entry["parts"]["output" if "output" in entry["parts"] else "conversations"]
            data = b"".join(bytes(c) for c in part["data"]) if part["kind"] == "jsonl" else part["data"]
            out.write(data[: len(data) // 2])
            out.flush()
            raise KeyboardInterrupt("killed mid-append")
        seen[0] += 1
        add(self, entry)

    monkeypatch.setattr(single_file.Appender, "add", failing_add)


@pytest.mark.parametrize("kind", ["convert", "parquet"])
def test_a_run_killed_mid_append_resumes_after_the_last_listed_shard(
    kind: str, src: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both kinds of temp file: JSON lines, and a Parquet file (FILE itself for ``--to parquet``)."""
    ref, out = tmp_path / "ref" / "o", tmp_path / "out" / "o"
    ref.parent.mkdir(), out.parent.mkdir()
    _run(kind, src, ref)
    with monkeypatch.context() as m:
        _interrupt_in_append(m, 3)
        _run(kind, src, out, code=130)  # Ctrl-C: exit 130
    staging = staging_dir(out)
    assert not any(p.exists() for p in final_paths(out, "chat" if kind == "convert" else "parquet").values())
    listed = read_manifest(staging)["shards"]
    assert [s["id"] for s in listed] == ["part-00000", "part-00001", "part-00002"]
    # the half-appended fourth shard is in the temp file, past the last listed end
    assert temp_path(staging, "output").stat().st_size > listed[-1]["files"][
        "output" if kind == "convert" else "conversations"]["end"]  # fmt: skip
    # nothing of any shard was staged as a file of its own: the temp files are all there is
    assert sorted(p.name for p in staging.rglob("*") if p.is_file() and p.name.startswith("part-")) == []
    report = _run(kind, src, out)
    assert report["shards_resumed"] == 3
    assert report["shards_redone"] == {}
    assert _finals(kind, out) == _finals(kind, ref)
    assert not staging.exists()


def test_a_listed_shard_whose_bytes_changed_is_redone_with_the_shards_after_it(
    src: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ref, out = tmp_path / "ref.jsonl", tmp_path / "out.jsonl"
    _run("convert", src, ref, losses="jsonl")
    with monkeypatch.context() as m:
        _interrupt_in_append(m, 5)
        _run("convert", src, out, code=130, losses="jsonl")
    staging = staging_dir(out)
    listed = read_manifest(staging)["shards"]
    at = listed[1]["files"]["losses"]["end"] - 10  # a byte of the second shard's losses
    with open(temp_path(staging, "losses"), "r+b") as f:
        f.seek(at)
        byte = f.read(1)
        f.seek(at)
        f.write(bytes([byte[0] ^ 0x20]))
    report = _run("convert", src, out, losses="jsonl")
    assert report["shards_resumed"] == 1
    assert sorted(report["shards_redone"]) == [f"part-{k:05d}" for k in range(1, 5)]
    assert "differ from the manifest" in report["shards_redone"]["part-00001"]
    assert _finals("convert", out, "jsonl") == _finals("convert", ref, "jsonl")


def test_temp_files_shorter_than_listed_are_cut_back_and_the_rest_redone(
    src: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The machine went down before the temp files reached the disk: what they lost is redone."""
    ref, out = tmp_path / "ref.jsonl", tmp_path / "out.jsonl"
    _run("convert", src, ref)
    with monkeypatch.context() as m:
        _interrupt_in_append(m, 4)
        _run("convert", src, out, code=130)
    staging = staging_dir(out)
    listed = read_manifest(staging)["shards"]
    os.truncate(temp_path(staging, "output"), listed[2]["files"]["output"]["end"] - 1)
    report = _run("convert", src, out)
    assert report["shards_resumed"] == 2
    assert sorted(report["shards_redone"]) == ["part-00002", "part-00003"]
    assert _finals("convert", out) == _finals("convert", ref)


def test_each_byte_is_written_once(src: Path, tmp_path: Path) -> None:
    """What the command writes (every write call of the process, ``wchar``) is the final files once,
    plus the manifest: not twice, as staging shards and then joining them did."""
    io_file = Path("/proc/self/io")
    if not io_file.is_file():
        pytest.skip("needs Linux's /proc/self/io to count the bytes a process writes")

    def written() -> int:
        fields = dict(line.split(": ") for line in io_file.read_text().splitlines())
        return int(fields["wchar"])

    out = tmp_path / "out.jsonl"
    before = written()
    _run("convert", src, out, losses="jsonl")
    total = written() - before
    finals = sum(len(b) for b in _finals("convert", out, "jsonl").values())
    assert finals < total < 1.3 * finals, (total, finals)
