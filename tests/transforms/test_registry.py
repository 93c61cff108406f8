"""Step configuration: bad steps fail before any work with a message saying what to fix."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from pipeline.cli import cli
from pipeline.errors import ConfigError
from pipeline.transforms import STEPS, make_step, parse_step


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("nope", "unknown step 'nope'; use one of role_swap"),
        ("window", "give last_turns, max_chars or both"),
        (
            "window:foo=1",
            "step window: unknown parameter 'foo'; allowed: last_turns, max_chars, keep_first_task",
        ),
        ("window:last_turns=x", "step window: last_turns: Input should be a valid integer"),
        ("window:last_turns=-1", "greater than or equal to 0"),
        ("role_swap:on_unsupported=skip", "on_unsupported: Input should be 'reject' or 'drop'"),
        ("place_system:text=x,anchor_patterns=(", "invalid regular expression '('"),
        ("parse_header:pattern=^x$", "needs a capture group"),
        ("compaction:markers=a|", "an empty marker would match every message"),
        ("window:last_turns", "expected key=value"),
    ],
)
def test_bad_specs(spec: str, message: str) -> None:
    with pytest.raises(ConfigError) as e:
        parse_step(spec)
    assert message in str(e.value)


def test_specs_parse() -> None:
    assert parse_step("place_system:text=a, b,position=append").params.text == "a, b"
    assert parse_step("compaction:markers=x|y").params.markers == ("x", "y")
    assert make_step("window", last_turns=3).params.last_turns == 3
    assert set(STEPS) >= {"role_swap", "synthetic_user_view", "turns", "compaction", "window", "compat"}


def test_cli_bad_step_exits_2_before_reading(tmp_path: Path) -> None:
    res = CliRunner().invoke(
        cli, ["transform", str(tmp_path / "missing.parquet"), "--step", "bogus", "-o", "x.parquet"]
    )
    assert res.exit_code == 2 and "unknown step 'bogus'" in res.output


def test_cli_counts_rejected_file_and_strict(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text(
        '{"messages": [{"role": "user", "content": "a"}]}\n'
        '{"messages": [{"role": "tool", "content": "r"}]}\n'
        "not json\n"
    )
    out = tmp_path / "out.parquet"
    args = ["transform", str(src), "--from", "chat", "--step", "role_swap", "--step", "turns", "-o", str(out)]
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 0, res.output
    assert "read 3 written 1 rejected 2" in res.output
    assert pq.read_table(out).column("human_turns").to_pylist() == [0]
    rej = pq.read_table(tmp_path / "out.parquet.rejected.parquet").to_pylist()
    assert [(r["stage"], r["step"], r["source_line"], r["input"]) for r in rej] == [
        ("read", None, 3, "not json"),  # not JSON at all: stage read (transform said decode before)
        ("transform", "role_swap", 2, '{"messages": [{"role": "tool", "content": "r"}]}'),
    ]
    assert rej[1]["reason"] == "role_swap: unsupported role 'tool' at item 0"
    out.unlink()
    res = CliRunner().invoke(cli, [*args, "--strict"])
    # --strict is checked after the run: the files are written, the first rejected record is named
    assert res.exit_code == 1 and f"({src}:3) rejected: $: invalid JSON" in res.output, res.output
    assert out.exists()
