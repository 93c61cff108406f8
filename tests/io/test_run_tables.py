"""One shape of a rejected record and of a loss, whichever command wrote it (pipeline/io/run_tables.py).

``convert -o`` (Parquet losses by default, JSON lines with ``--losses jsonl``), ``transform -o``
(Parquet) and ``run`` (a run directory's ``rejected/`` and ``losses/``) over the same input give the
same rows, column for column, with the original input kept (bytes included when the line is not UTF-8).
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pyarrow.parquet as pq
from click.testing import CliRunner

from pipeline.cli import cli
from pipeline.io.run_tables import LOSSES_SCHEMA, REJECTED_SCHEMA, input_text, original_bytes
from tests.helpers import json_diff

TOOL = b'{"messages": [{"role": "user", "content": "q"}, {"role": "tool", "tool_call_id": "c", "content": "r"}]}'  # noqa: E501
LINES = [
    b'{"messages": [{"role": "user", "content": "plain"}]}',
    b'{"messages": [{"role": "user", "content": "hi", "name": "alice"}]}',  # loses its name -> responses
    b'{"messages": "hi"}',  # does not decode
    b'{"messages": [{"role": "user", "content": "caf\xe9"}]}',  # not UTF-8: not JSON either
    TOOL,  # role_swap rejects the tool role
]


def _cli(*args: str, code: int = 0) -> None:
    res = CliRunner().invoke(cli, [*args, "-q"], catch_exceptions=False)
    assert res.exit_code == code, res.output


def _jsonl(path: Path) -> list[dict]:
    return [orjson.loads(x) for x in path.read_bytes().splitlines()]


def _run(tmp_path: Path, name: str, steps: str, target: str) -> Path:
    job = tmp_path / f"{name}.toml"
    job.write_text(
        f'name = "{name}"\nsteps = [{steps}]\n[[inputs]]\npath = "in.jsonl"\nformat = "chat"\n'
        f'[output]\npath = "{name}"\ntarget = "{target}"\n'
    )
    _cli("run", str(job), "--no-catalog")
    return tmp_path / name


def _rows(run: Path, folder: str) -> list[dict]:
    rows = []
    for f in sorted((run / folder).glob("part-*.parquet")):
        t = pq.read_table(f)
        assert t.schema.equals(REJECTED_SCHEMA if folder == "rejected" else LOSSES_SCHEMA)
        rows += t.to_pylist()
    return rows


def test_convert_transform_and_run_write_the_same_shapes(tmp_path: Path, monkeypatch: object) -> None:
    monkeypatch.chdir(tmp_path)  # type: ignore[attr-defined]
    src = tmp_path / "in.jsonl"
    src.write_bytes(b"\n".join(LINES) + b"\n")
    # the absolute path, as a run directory records it (it is part of the conversation id)
    _cli("convert", str(src), "--from", "chat", "--to", "responses", "-o", "c.jsonl", "--losses", "jsonl")
    _cli("convert", str(src), "--from", "chat", "--to", "responses", "-o", "p.jsonl")  # Parquet losses
    _cli("transform", str(src), "--from", "chat", "--step", "role_swap", "-o", "t.parquet")
    run_convert = _run(tmp_path, "rc", "", "responses")
    run_transform = _run(tmp_path, "rt", '"role_swap"', "parquet")

    # convert: JSON objects with exactly the columns, in order
    rejected = _jsonl(tmp_path / "c.jsonl.rejected.jsonl")
    losses = _jsonl(tmp_path / "c.jsonl.losses.jsonl")
    assert rejected and losses
    assert all(list(r) == REJECTED_SCHEMA.names for r in rejected)
    assert all(list(x) == LOSSES_SCHEMA.names for x in losses)
    # ... the same rows as the run directory of the same job
    assert (rejected) == (_rows(run_convert, "rejected"))
    assert (losses) == (_rows(run_convert, "losses"))
    assert {x["kind"] for x in losses} >= {"name"}
    # the default loss report is Parquet with the same schema and rows
    p = pq.read_table(tmp_path / "p.jsonl.losses.parquet")
    assert p.schema.equals(LOSSES_SCHEMA)
    assert p.to_pylist() == losses

    # transform: Parquet with the schema, the same rows as the run directory with the same step
    t = pq.read_table(tmp_path / "t.parquet.rejected.parquet")
    assert t.schema.equals(REJECTED_SCHEMA)
    assert (t.to_pylist()) == (_rows(run_transform, "rejected"))

    # every rejection keeps its original input, byte for byte, and says what it is
    for rows in (rejected, t.to_pylist()):
        by_line = {r["source_line"]: r for r in rows}
        assert {line: original_bytes(r) for line, r in by_line.items()} == {
            n: LINES[n - 1] for n in by_line
        }
        assert all(r["input_format"] == "chat" for r in rows)
        assert by_line[4]["input_encoding"] == "base64" and by_line[3]["input_encoding"] == "utf-8"
    tool = [r for r in t.to_pylist() if r["stage"] == "transform"]
    assert [(r["source_line"], r["step"], r["input"]) for r in tool] == [(5, "role_swap", TOOL.decode())]


def test_refused_record_reason_and_input_from_parquet(tmp_path: Path, monkeypatch: object) -> None:
    """A record read from canonical Parquet is kept as its source record, encoded back."""
    monkeypatch.chdir(tmp_path)  # type: ignore[attr-defined]
    (tmp_path / "in.jsonl").write_bytes(LINES[1] + b"\n")
    _cli("convert", "in.jsonl", "--from", "chat", "--to", "parquet", "-o", "c.parquet")
    _cli("convert", "c.parquet", "--from", "parquet", "--to", "responses", "--on-loss", "reject",
         "-o", "o.jsonl", code=1)  # its one record is refused: every record rejected exits 1  # fmt: skip
    [row] = _jsonl(tmp_path / "o.jsonl.rejected.jsonl")
    assert (row["stage"], row["reason"]) == ("loss_policy", "loss: name (on_loss = reject)")
    assert (row["input_format"], row["input_encoding"]) == ("chat", "utf-8")
    assert json_diff(orjson.loads(row["input"]), orjson.loads(LINES[1])) is None  # exact, re-serialised


def test_input_text_round_trips_any_bytes() -> None:
    for raw in (b"", b"plain", "café".encode(), b"\xff\xfe\x00", "\u2028".encode()):
        text, encoding = input_text(raw)
        assert original_bytes({"input": text, "input_encoding": encoding}) == raw
    assert input_text(None) == (None, None)
