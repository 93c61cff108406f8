"""The convert job: exact same-format output, bad lines quarantined with reasons, counts that add up."""

from __future__ import annotations

from pathlib import Path

import orjson
import pyarrow.parquet as pq
import pytest

from pipeline.convert import ConfigError, ConvertConfig, run_convert
from pipeline.losses import LossPolicy
from tests.cases import BAD_LINES, CASES
from tests.helpers import assert_identical


def _write_jsonl(path: Path, lines: list[bytes]) -> Path:
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    return path


def _read_jsonl(path: Path) -> list[dict]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


@pytest.mark.parametrize("fmt", list(CASES))
@pytest.mark.parametrize("workers", [1, 2])
def test_same_format_reproduces_every_record(fmt: str, workers: int, tmp_path: Path) -> None:
    records = [rec for _, rec in CASES[fmt]] * 3
    src = _write_jsonl(tmp_path / "in.jsonl", [orjson.dumps(r) for r in records])
    # tiny chunks so that two workers really split the file
    cfg = ConvertConfig(
        [src], fmt, fmt, tmp_path / "out.jsonl", tmp_path / "r.json", workers=workers, chunk_bytes=600
    )
    report = run_convert(cfg)
    assert (report["read"], report["written"], report["rejected"]) == (len(records), len(records), 0)
    for a, b in zip(records, _read_jsonl(tmp_path / "out.jsonl"), strict=True):
        assert_identical(a, b)
    assert orjson.loads((tmp_path / "r.json").read_bytes()) == report


def test_jsonl_to_parquet_and_back(tmp_path: Path) -> None:
    records = [rec for _, rec in CASES["anthropic"]]
    src = _write_jsonl(tmp_path / "in.jsonl", [orjson.dumps(r) for r in records])
    run_convert(ConvertConfig([src], "anthropic", "parquet", tmp_path / "c.parquet", workers=1))
    table = pq.read_table(tmp_path / "c.parquet")
    assert table.column("source_line").to_pylist() == list(range(1, len(records) + 1))
    assert table.column("source_file").to_pylist() == [str(src)] * len(records)
    report = run_convert(
        ConvertConfig([tmp_path / "c.parquet"], "parquet", "anthropic", tmp_path / "o.jsonl")
    )
    requests = sum("messages" in rec for rec in records)  # cases.py grows: count, don't hard-code
    assert report["by_record_kind"] == {"request": requests, "response": len(records) - requests}
    assert requests >= 3 and len(records) - requests == 2
    for a, b in zip(records, _read_jsonl(tmp_path / "o.jsonl"), strict=True):
        assert_identical(a, b)


@pytest.mark.parametrize("fmt", list(CASES))
def test_bad_lines_are_rejected_with_reason_and_the_job_goes_on(fmt: str, tmp_path: Path) -> None:
    good = [orjson.dumps(rec) for _, rec in CASES[fmt]]
    bad = [(line, err) for f, line, err in BAD_LINES if f == fmt]
    lines: list[bytes] = []
    expected: dict[int, tuple[bytes, str]] = {}
    for i in range(max(len(good), len(bad))):
        if i < len(good):
            lines.append(good[i])
        if i < len(bad):
            lines.append(bad[i][0])
            expected[len(lines)] = bad[i]
    lines.append(b"   ")  # blank lines are not records
    src = _write_jsonl(tmp_path / "in.jsonl", lines)
    report = run_convert(ConvertConfig([src], fmt, fmt, tmp_path / "out.jsonl", workers=1))
    assert report["read"] == report["written"] + report["rejected"] == len(lines) - 1
    assert (report["written"], report["rejected"], report["blank_lines"]) == (len(good), len(bad), 1)
    rejected = _read_jsonl(tmp_path / "out.jsonl.rejected.jsonl")
    assert [r["line"] for r in rejected] == sorted(expected)
    for r in rejected:
        line, err = expected[r["line"]]
        assert r["input"] == line.decode()
        assert r["error"].startswith(err), (r["error"], err)
        assert r["file"] == str(src)
    assert sum(report["rejected_reasons"].values()) == len(bad)
    assert report["by_format"] == {fmt: {"read": len(lines) - 1, "written": len(good), "rejected": len(bad)}}
    for a, b in zip([orjson.loads(g) for g in good], _read_jsonl(tmp_path / "out.jsonl"), strict=True):
        assert_identical(a, b)


def test_rejected_record_leaves_no_partial_rows(tmp_path: Path) -> None:
    """A record failing half-way (item 2 of 3) must not leave items 0-1 in the table."""
    lines = [
        b'{"input": [{"role": "user", "content": "a"}, '
        b'{"role": "user", "content": [{"type": "input_text", "text": "b"}]}, {"content": 1}]}',
        b'{"input": [{"role": "user", "content": [{"type": "input_text", "text": "ok"}]}]}',
    ]
    src = _write_jsonl(tmp_path / "in.jsonl", lines)
    run_convert(ConvertConfig([src], "responses", "parquet", tmp_path / "c.parquet", workers=1))
    table = pq.read_table(tmp_path / "c.parquet")
    [row] = table.to_pylist()
    assert row["source_line"] == 2 and row["n_items"] == 1
    assert row["items"][0]["content"][0]["text"] == "ok"


def test_multiple_inputs_keep_input_order(tmp_path: Path) -> None:
    a = _write_jsonl(tmp_path / "a.jsonl", [b'{"messages": [{"role": "user", "content": "a1"}]}'] * 2)
    b = _write_jsonl(tmp_path / "b.jsonl", [b'{"messages": [{"role": "user", "content": "b1"}]}'])
    run_convert(ConvertConfig([a, b], "chat", "parquet", tmp_path / "c.parquet"))
    t = pq.read_table(tmp_path / "c.parquet")
    assert t.column("source_file").to_pylist() == [str(a), str(a), str(b)]
    assert len(set(t.column("conversation_id").to_pylist())) == 3


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"source": "xml"}, "--from 'xml' is not a format"),
        ({"target": "yaml"}, "--to 'yaml' is not a format"),
        ({"inputs": [Path("/nonexistent.jsonl")]}, "does not exist"),
        ({"inputs": []}, "no input files"),
        ({"output": "SAME"}, "would overwrite an input"),
        ({"workers": 0}, "--workers must be at least 1"),
    ],
)
def test_bad_config_fails_before_any_work(change: dict, message: str, tmp_path: Path) -> None:
    src = _write_jsonl(tmp_path / "in.jsonl", [b'{"messages": []}'])
    kwargs = {"inputs": [src], "source": "chat", "target": "chat", "output": tmp_path / "out" / "o.jsonl"}
    kwargs.update(change)
    if kwargs["output"] == "SAME":
        kwargs["output"] = src
    with pytest.raises(ConfigError, match=message):
        run_convert(ConvertConfig(**kwargs))
    assert not (tmp_path / "out").exists()


def _policy_job(tmp_path: Path, policy: LossPolicy) -> dict:
    lines = [
        orjson.dumps({"messages": [{"role": "user", "content": "plain"}]}),
        orjson.dumps({"messages": [{"role": "user", "content": "hi", "name": "alice"}]}),
        orjson.dumps({"messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "x"}]}),
    ]
    src = _write_jsonl(tmp_path / "in.jsonl", lines)
    return run_convert(
        ConvertConfig([src], "chat", "responses", tmp_path / "out.jsonl", policy=policy, workers=1)
    )


def test_allow_policy_writes_all_and_records_losses(tmp_path: Path) -> None:
    report = _policy_job(tmp_path, LossPolicy())
    assert (report["read"], report["written"], report["rejected"]) == (3, 3, 0)
    assert report["losses"]["records_with_losses"] == 2
    assert report["losses"]["by_kind"] == {"name": 1, "instruction_position": 1}
    lines = _read_jsonl(tmp_path / "out.jsonl.losses.jsonl")
    assert [x["line"] for x in lines] == [2, 3]
    assert lines[0]["losses"] == [
        {"path": "/messages/0/name", "kind": "name", "detail": "'name' has no slot"}
    ]


def test_reject_policy_quarantines_exactly_the_lossy_records(tmp_path: Path) -> None:
    report = _policy_job(tmp_path, LossPolicy("reject"))
    assert (report["read"], report["written"], report["rejected"]) == (3, 1, 2)
    rejected = _read_jsonl(tmp_path / "out.jsonl.rejected.jsonl")
    assert [r["line"] for r in rejected] == [2, 3]
    assert rejected[0]["error"] == "loss: name (--on-loss reject)"
    assert rejected[0]["losses"][0]["path"] == "/messages/0/name"
    assert orjson.loads(rejected[0]["input"])["messages"][0]["name"] == "alice"
    assert _read_jsonl(tmp_path / "out.jsonl") == [{"input": [{"role": "user", "content": "plain"}]}]


def test_allow_loss_accepts_only_the_listed_kinds(tmp_path: Path) -> None:
    report = _policy_job(tmp_path, LossPolicy("reject", frozenset({"instruction_position"})))
    assert (report["written"], report["rejected"]) == (2, 1)
    assert report["rejected_reasons"] == {"loss: name (--on-loss reject)": 1}


def test_unknown_loss_kind_is_a_config_error() -> None:
    with pytest.raises(ValueError, match="unknown loss kinds"):
        LossPolicy("reject", frozenset({"nope"}))
