"""The chatlake command: exit codes, output and help."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
from click.testing import CliRunner

from pipeline.cli import cli


def test_convert_prints_summary_and_writes_report(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_bytes(b'{"messages": [{"role": "user", "content": "hi"}]}\nnot json\n')
    result = CliRunner().invoke(
        cli,
        [
            "convert",
            str(src),
            "--from",
            "chat",
            "--to",
            "parquet",
            "-o",
            str(tmp_path / "o.parquet"),
            "--report",
            str(tmp_path / "r.json"),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "read" in result.output and "rejected records" in result.output
    report = orjson.loads((tmp_path / "r.json").read_bytes())
    assert (report["read"], report["written"], report["rejected"]) == (2, 1, 1)


def test_bad_config_exits_2_with_a_message(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli, ["convert", str(tmp_path / "missing.jsonl"), "--from", "chat", "--to", "chat", "-o", "x.jsonl"]
    )
    assert result.exit_code == 2
    assert "matches no file" in result.output


def test_python_dash_m_works() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "pipeline", "--help"], capture_output=True, text=True, check=True
    )
    assert "convert" in out.stdout


def test_synth_is_deterministic_and_decodes(tmp_path: Path) -> None:
    runner = CliRunner()
    first = runner.invoke(cli, ["synth", "--format", "chat", "--n", "5", "--seed", "3"])
    second = runner.invoke(cli, ["synth", "--format", "chat", "--n", "5", "--seed", "3"])
    assert first.exit_code == 0 and first.stdout_bytes == second.stdout_bytes
    lines = first.stdout_bytes.splitlines()
    assert len(lines) == 5
    from pipeline.formats import decode_lines

    assert decode_lines(lines, "chat").rejected == []
    out = tmp_path / "s.jsonl"
    assert (
        runner.invoke(cli, ["synth", "--format", "chat", "--n", "5", "--seed", "3", "-o", str(out)]).exit_code
        == 0
    )
    assert out.read_bytes().splitlines() == lines


def test_allow_loss_with_unknown_kind_exits_2(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_bytes(b'{"messages": []}\n')
    result = CliRunner().invoke(
        cli,
        [
            "convert",
            str(src),
            "--from",
            "chat",
            "--to",
            "responses",
            "-o",
            str(tmp_path / "o.jsonl"),
            "--allow-loss",
            "name,bogus",
        ],
    )
    assert result.exit_code == 2 and "unknown loss kinds ['bogus']" in result.output


def test_convert_from_lists_each_format_once() -> None:
    """sharegpt is a wire format and a source: --from's choices (and its error) name it once."""
    res = CliRunner().invoke(cli, ["convert", "x.jsonl", "--from", "nope", "--to", "chat", "-o", "y.jsonl"])
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert res.output.count("'sharegpt'") == 1, res.output


def test_a_filled_default_is_not_refused_by_on_loss_reject(tmp_path: Path) -> None:
    """A plain one-message Chat conversation converts to Anthropic under --on-loss reject: the
    max_tokens chatlake fills is an addition, listed apart in the summary, not a loss."""
    src = tmp_path / "in.jsonl"
    src.write_bytes(b'{"messages": [{"role": "user", "content": "hi"}]}\n')
    out = tmp_path / "o.jsonl"
    argv = ["convert", str(src), "--from", "chat", "--to", "anthropic", "--on-loss", "reject", "-o", str(out),
            "--report", str(tmp_path / "r.json")]  # fmt: skip
    result = CliRunner().invoke(cli, argv)
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    hi = [{"role": "user", "content": "hi"}]
    assert orjson.loads(out.read_bytes()) == {"max_tokens": 4096, "messages": hi}
    assert "added (not losses; see the losses file): filled_default in 1 records" in result.output
    assert "lost something" not in result.output
    report = orjson.loads((tmp_path / "r.json").read_bytes())
    assert (report["written"], report["rejected"], report["records_with_losses"]) == (1, 0, 0)
    assert report["losses_by_kind"] == {} and report["additions_by_kind"] == {"filled_default": 1}
    [line] = (tmp_path / "o.jsonl.losses.jsonl").read_bytes().splitlines()
    assert orjson.loads(line)["kind"] == "filled_default"
