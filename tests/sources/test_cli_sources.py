"""``chatlake convert --from <source>|auto``: per-file sources through the convert job."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
from click.testing import CliRunner

from pipeline.cli import cli


def _rollout(path: Path) -> Path:
    lines = [
        {"timestamp": "t0", "type": "session_meta", "payload": {"id": "s1"}},
        {"timestamp": "t1", "type": "turn_context", "payload": {"model": "gpt-5"}},
        {
            "timestamp": "t2",
            "type": "response_item",
            "payload": {"type": "message", "role": "user", "content": "hi"},
        },
        {"timestamp": "t3", "type": "mystery", "payload": {}},
    ]
    path.write_bytes(b"\n".join(orjson.dumps(x) for x in lines) + b"\n")
    return path


def test_convert_auto_to_chat_with_report(tmp_path: Path) -> None:
    src = _rollout(tmp_path / "rollout.jsonl")
    out = tmp_path / "out.jsonl"
    res = CliRunner().invoke(
        cli,
        [
            "convert",
            str(src),
            "--from",
            "auto",
            "--to",
            "chat",
            "-o",
            str(out),
            "--report",
            str(tmp_path / "r.json"),
            "-q",
        ],
    )
    assert res.exit_code == 0, res.output
    assert [json.loads(x) for x in out.read_text().splitlines()] == [
        {"messages": [{"role": "user", "content": "hi"}], "model": "gpt-5"}
    ]
    report = json.loads((tmp_path / "r.json").read_text())
    assert (report["read"], report["written"], report["rejected"]) == (2, 1, 1)
    assert report["source_counts"]["codex-rollout:unknown_line_types:mystery"] == 1
    [rej] = [json.loads(x) for x in (tmp_path / "out.jsonl.rejected.jsonl").read_text().splitlines()]
    assert (rej["source_line"], rej["source_file"]) == (4, str(src)) and "unknown line type" in rej["reason"]
    assert rej["input_format"] == "codex-rollout" and "mystery" in rej["input"]


def test_convert_source_to_parquet_keeps_provenance(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    src = _rollout(tmp_path / "rollout.jsonl")
    out = tmp_path / "out.parquet"
    res = CliRunner().invoke(
        cli, ["convert", str(src), "--from", "codex-rollout", "--to", "parquet", "-o", str(out), "-q"]
    )
    assert res.exit_code == 0, res.output
    prov = pq.read_table(out).column("provenance").combine_chunks()
    assert prov.field("source").to_pylist() == ["codex-rollout"] and prov.field("session_id").to_pylist() == [
        "s1"
    ]


def test_auto_on_an_unknown_file_fails_before_work(tmp_path: Path) -> None:
    src = tmp_path / "x.json"
    src.write_text('{"hello": 1}')
    res = CliRunner().invoke(
        cli, ["convert", str(src), "--from", "auto", "--to", "chat", "-o", str(tmp_path / "o")]
    )
    assert res.exit_code == 2 and "could not tell what it is" in res.output
    assert not (tmp_path / "o").exists()
