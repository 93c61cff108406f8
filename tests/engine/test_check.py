"""chatlake check: counts per rule, the first offending records, exit codes."""

from __future__ import annotations

from pathlib import Path

import orjson
from click.testing import CliRunner

from pipeline.cli import cli
from pipeline.engine.check import TYPES, check_files
from tests.cases import RULE_BREAKERS

OK = {"messages": [{"role": "user", "content": "hi"}]}


def _write(path: Path, records: list, extra: bytes = b"") -> Path:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records) + extra)
    return path


def test_counts_rules_and_points_at_the_records(tmp_path: Path) -> None:
    bad = [rec for rule, fmt, rec in RULE_BREAKERS if fmt == "chat"]
    src = _write(tmp_path / "c.jsonl", [OK, *bad, OK], b"not json\n")
    res = check_files([str(src)], "chat")
    assert res.records == len(bad) + 3
    assert res.failing == len(bad) + 1  # every breaker, and the line that is not JSON
    expected = {rule for rule, fmt, _ in RULE_BREAKERS if fmt == "chat"}
    assert expected <= set(res.violations)
    assert res.violations[TYPES] == 1 and res.records_by_rule[TYPES] == 1
    first = res.examples[0]
    assert (first["file"], first["line"], first["rule"]) == (str(src), 2, "chat.messages_nonempty")
    assert [e["line"] for e in res.examples] == sorted(e["line"] for e in res.examples)
    assert res.examples[-1]["rule"] == TYPES


def test_exit_codes(tmp_path: Path) -> None:
    clean = _write(tmp_path / "ok.jsonl", [OK, OK])
    run = CliRunner().invoke(cli, ["check", str(clean), "--as", "chat"])
    assert run.exit_code == 0, run.output
    assert "2 records checked as chat: 2 pass, 0 fail" in run.output
    rule, _, rec = next(b for b in RULE_BREAKERS if b[1] == "anthropic")
    dirty = _write(tmp_path / "bad.jsonl", [rec])
    run = CliRunner().invoke(cli, ["check", str(dirty), "--as", "anthropic", "--json"])
    assert run.exit_code == 1
    out = orjson.loads(run.output)
    assert out["failing"] == 1 and out["violations_by_rule"] == {rule: 1}
    assert out["examples"][0]["line"] == 1
    run = CliRunner().invoke(cli, ["check", str(tmp_path / "missing.jsonl"), "--as", "chat"])
    assert run.exit_code == 2 and "matches no file" in run.output
    run = CliRunner().invoke(cli, ["check", str(clean), "--as", "sharegpt"])
    assert run.exit_code == 2
