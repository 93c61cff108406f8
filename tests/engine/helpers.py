"""Writing small jobs and reading back their run directories, for the engine tests."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.engine.manifest import read as read_manifest


def toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return orjson.dumps(v).decode()
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    return str(v)


def write_job(
    path: Path,
    inputs: list[dict[str, Any]],
    output: dict[str, Any],
    *,
    name: str = "test-job",
    steps: list[Any] | None = None,
    loss: dict[str, Any] | None = None,
    engine: dict[str, Any] | None = None,
    set_fields: dict[str, Any] | None = None,
) -> Path:
    """A job file from plain values (tables as dicts); steps are strings or dicts with a name."""
    lines = [f"name = {toml_value(name)}"]
    if steps and all(isinstance(s, str) for s in steps):
        lines.append(f"steps = {toml_value(steps)}")
    for inp in inputs:
        lines.append("[[inputs]]")
        lines += [f"{k} = {toml_value(v)}" for k, v in inp.items() if k != "options"]
        if inp.get("options"):
            lines.append("[inputs.options]")
            lines += [f"{k} = {toml_value(v)}" for k, v in inp["options"].items()]
    for s in steps or []:
        if isinstance(s, dict):
            lines.append("[[steps]]")
            lines += [f"{k} = {toml_value(v)}" for k, v in s.items()]
    for section, values in (("output", output), ("loss", loss), ("engine", engine), ("set", set_fields)):
        if values:
            lines.append(f"[{section}]")
            lines += [f"{k} = {toml_value(v)}" for k, v in values.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


def write_jsonl(path: Path, lines: list[bytes]) -> Path:
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    return path


def folder(run_dir: Path, name: str) -> pa.Table:
    """All shards of one folder of a run, concatenated in shard order."""
    parts = sorted((run_dir / name).glob("part-*.parquet"))
    return pa.concat_tables([pq.read_table(p) for p in parts]) if parts else pa.table({})


def output_lines(run_dir: Path) -> list[bytes]:
    parts = sorted((run_dir / "output").glob("part-*.jsonl"))
    return [line for p in parts for line in p.read_bytes().splitlines()]


def file_hashes(run_dir: Path) -> dict[str, str]:
    """sha256 of every shard file and of manifest.json, by path relative to the run directory."""
    out = {}
    for p in sorted(run_dir.rglob("*")):
        if p.is_file() and p.name != "summary.json":
            out[str(p.relative_to(run_dir))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def relist(run_dir: Path) -> None:
    """Make manifest.json list the files as they are now (bytes, sha256): for tests that edit shard
    files on purpose and want the run to pass the integrity checks that compare them to the manifest.
    """
    doc = read_manifest(run_dir)  # with the journal of a run that did not finish
    (run_dir / "manifest.journal").unlink(missing_ok=True)
    for s in doc["shards"]:
        for f in s["files"].values():
            p = run_dir / f["path"]
            if p.is_file():
                f.update(bytes=p.stat().st_size, sha256=hashlib.sha256(p.read_bytes()).hexdigest())
    (run_dir / "manifest.json").write_bytes(orjson.dumps(doc))
