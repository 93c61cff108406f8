"""``chatlake audit`` and ``chatlake sql`` over the fixture run: exit codes and exact output."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from pipeline.cli import cli
from tests.audit.fixture import FixtureRun
from tests.audit.test_queries import ref_loss_totals_by_kind, ref_worst_records


def test_audit_json_matches_the_reference(fixture_run: FixtureRun) -> None:
    res = CliRunner().invoke(cli, ["audit", str(fixture_run.path), "-Q", "worst_records", "-p", "n=2",
                                   "--format", "json"])  # fmt: skip
    assert res.exit_code == 0, res.output
    assert json.loads(res.output) == {"worst_records": ref_worst_records(fixture_run, 2)}


def test_audit_csv_and_markdown(fixture_run: FixtureRun) -> None:
    ref = ref_loss_totals_by_kind(fixture_run)
    res = CliRunner().invoke(
        cli, ["audit", str(fixture_run.path), "-Q", "loss_totals_by_kind", "--format", "csv"]
    )
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert lines[0] == "kind,losses,records,share_of_written,addition"
    assert (
        lines[1]
        == f"{ref[0]['kind']},{ref[0]['losses']},{ref[0]['records']},{ref[0]['share_of_written']!r},False"
    )
    assert len(lines) == len(ref) + 1
    res = CliRunner().invoke(
        cli, ["audit", str(fixture_run.path), "-Q", "run_counts_mismatch", "--format", "markdown"]
    )
    assert res.exit_code == 0 and "### run_counts_mismatch" in res.output and "(no rows)" in res.output


def test_audit_all_queries_as_a_table_and_html(fixture_run: FixtureRun, tmp_path: Path) -> None:
    html = tmp_path / "r.html"
    res = CliRunner().invoke(cli, ["audit", str(fixture_run.path), "--html", str(html)])
    assert res.exit_code == 0, res.output
    assert "tool_pairing_problems" in res.output and "call_dup" in res.output
    assert html.read_text().count("<svg") == 4


def test_bad_arguments_exit_2(fixture_run: FixtureRun, tmp_path: Path) -> None:
    run = str(fixture_run.path)
    for args, message in [
        (["audit", run, "-Q", "nope"], "no audit query 'nope'"),
        (["audit", run, "-Q", "worst_records", "-p", "n=ten"], "expected an INTEGER value"),
        (["audit", run, "-Q", "phase_coverage", "-p", "n=3"], "no selected query has this parameter"),
        (["audit", run, "-p", "n"], "write it as NAME=VALUE"),
        (["audit", str(tmp_path / "none")], "does not exist"),
        (["audit", run, "-Q", "worst_records", "-p", "n=-1"],
         "n=-1: out of range; n is an INTEGER from 0 to 2147483647"),
        (["audit", run, "-Q", "worst_records", "-p", "n=12345678901234567890"], "n is an INTEGER from 0 to"),
        (["audit", run, "-Q", "../sql/worst_records"], "no audit query '../sql/worst_records'"),
        (["audit", run, "-Q", "/work/main/sql/worst_records"], "no audit query"),
        (["audit", run, "-Q", "sub/../worst_records"], "no audit query"),
        (["sql", run, "SELEC 1"], "SQL error"),
    ]:
        res = CliRunner().invoke(cli, args)
        assert res.exit_code == 2, (args, res.output)
        assert message in res.output, (args, res.output)


def test_sql_has_the_views(fixture_run: FixtureRun) -> None:
    res = CliRunner().invoke(cli, ["sql", str(fixture_run.path), "--format", "csv",
        "SELECT (SELECT count(*) FROM conversations) AS c, (SELECT count(*) FROM rejected) AS r, "
        "(SELECT count(*) FROM losses) AS l, (SELECT sum(n_items) FROM conversations) = "
        "(SELECT count(*) FROM items) AS same"])  # fmt: skip
    assert res.exit_code == 0, res.output
    f = fixture_run
    assert res.output == f"c,r,l,same\n{f.conversations.num_rows},{len(f.rejected)},{len(f.losses)},True\n"


def _flip_footer(path: Path) -> None:
    """Flip a byte of the Parquet footer's magic: every reader fails on it. (A flip in the middle of
    a data page may decode silently, depending on where the page boundaries fall, which depends on
    the run's paths: audit and sql find such a flip only when the read fails; verify, resume and
    export-hf compare sha256.)"""
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("damage", ["flip", "truncate"])
def test_a_damaged_shard_is_one_line_naming_it(fixture_run: FixtureRun, tmp_path: Path, damage: str) -> None:
    run = tmp_path / "run"
    shutil.copytree(fixture_run.path, run)
    victims = [run / "conversations" / "part-00000.parquet", run / "record_counts" / "part-00000.parquet"]
    for v in victims:
        _flip_footer(v) if damage == "flip" else v.write_bytes(v.read_bytes()[:-20])
    # a flip is found while reading (exit 1), a truncation by the size check before (exit 2)
    code, named = (1, "sha256 differs") if damage == "flip" else (2, "bytes, manifest.json says")
    for args in (["audit", str(run)], ["sql", str(run), "SELECT * FROM conversations"],
                 ["export-hf", str(run), str(tmp_path / "hf")]):  # fmt: skip
        res = CliRunner().invoke(cli, args)
        assert res.exit_code == code, (args, res.output)
        assert res.exception is None or isinstance(res.exception, SystemExit), (args, res.exception)
        lines = res.output.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"Error: {run} is "), (args, res.output)
        assert "part-00000.parquet: " in lines[0] and named in lines[0], (args, res.output)


def test_csv_writes_floats_in_full(fixture_run: FixtureRun) -> None:
    """6 significant digits are for people (table, markdown); CSV is read back by other tools."""
    query = "SELECT 1/3 AS x, 2.5 AS y"
    res = CliRunner().invoke(cli, ["sql", str(fixture_run.path), "--format", "csv", query])
    assert (res.exit_code, res.output) == (0, f"x,y\n{1 / 3!r},2.5\n")
    assert res.output.splitlines()[1].split(",")[0] == "0.3333333333333333"
    table = CliRunner().invoke(cli, ["sql", str(fixture_run.path), "SELECT 1/3 AS x"])
    assert "0.333333" in table.output and "0.3333333" not in table.output


def test_sql_does_not_echo_the_query_as_a_title(fixture_run: FixtureRun) -> None:
    query = "SELECT count(*) AS conversations_written FROM conversations WHERE n_items > 0"
    res = CliRunner().invoke(cli, ["sql", str(fixture_run.path), query])
    assert res.exit_code == 0, res.output
    assert "conversations_written" in res.output
    assert "SELECT" not in res.output and "n_items" not in res.output
