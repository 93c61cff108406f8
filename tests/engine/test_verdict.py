"""A run that did nothing must not look like a run that worked: the verdict and exit code 1."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from pipeline.cli import cli
from pipeline.engine import TooManyRejected, run_job
from pipeline.jobs import load_job
from tests.cases import CASES
from tests.engine.helpers import write_job, write_jsonl

CHAT = [orjson.dumps(r) for _, r in CASES["chat"]]


def _job(tmp_path: Path, lines: list[bytes], fmt: str, **loss: object) -> Path:
    write_jsonl(tmp_path / "in.jsonl", lines)
    return write_job(tmp_path / "job.toml", [{"path": "in.jsonl", "format": fmt}],
                     {"path": "run", "target": "chat"}, loss=loss or None, engine={"workers": 1})  # fmt: skip


def _summary(tmp_path: Path) -> dict:
    return orjson.loads((tmp_path / "run" / "summary.json").read_bytes())


def test_a_wrong_from_exits_1_after_writing_the_run_and_names_the_format(tmp_path: Path) -> None:
    job = _job(tmp_path, CHAT, "responses")
    res = CliRunner().invoke(cli, ["run", str(job), "--no-catalog"])
    assert res.exit_code == 1, res.output
    assert "Traceback" not in res.output and isinstance(res.exception, SystemExit)
    n = len(CHAT)
    assert f"all {n} records rejected at decode: `request body without 'input'`" in res.output
    assert "they look like `chat` records: try `--from chat`" in res.output
    assert "chatlake run test-job -> chat (rejected)" in res.output  # the table is printed as usual
    verdict = _summary(tmp_path)["verdict"]
    assert (verdict["ok"], verdict["rejected_share"], verdict["max_rejected_share"]) == (False, 1.0, None)
    assert "--from chat" in verdict["message"]


def test_run_job_raises_with_the_summary_and_the_catalog_records_why(tmp_path: Path) -> None:
    from pipeline.catalog import Catalog

    cat = tmp_path / "cat.duckdb"
    with pytest.raises(TooManyRejected) as e:
        run_job(load_job(_job(tmp_path, CHAT, "responses")), catalog=cat)
    assert e.value.summary["status"] == "rejected"
    [row] = Catalog(cat).runs()
    assert row["status"] == "rejected"


def test_some_rejected_records_do_not_fail_by_default(tmp_path: Path) -> None:
    job = _job(tmp_path, [*CHAT, b"{broken"], "chat")
    res = CliRunner().invoke(cli, ["run", str(job), "--no-catalog", "--quiet"])
    assert (res.exit_code, res.output) == (0, "")
    assert _summary(tmp_path)["verdict"]["ok"] is True


def test_max_rejected_share_from_the_job_file_and_the_command_line(tmp_path: Path) -> None:
    lines = [*CHAT[:2], b"{broken", b"[1]", b"nope"]  # 3 of 5 rejected
    job = _job(tmp_path, lines, "chat", max_rejected_share=0.5)
    res = CliRunner().invoke(cli, ["run", str(job), "--no-catalog", "--quiet"])
    assert res.exit_code == 1, res.output
    assert "3 of 5 records rejected (60%, more than max_rejected_share 0.5) at read" in res.output
    res = CliRunner().invoke(cli, ["run", str(job), "--no-catalog", "--quiet", "--max-rejected-share", "0.6"])
    assert res.exit_code == 0, res.output  # 0.6 is not more than 0.6
    bad = CliRunner().invoke(cli, ["run", str(job), "--no-catalog", "--max-rejected-share", "2"])
    assert bad.exit_code == 2 and "Traceback" not in bad.output


def test_an_empty_input_is_not_a_failure(tmp_path: Path) -> None:
    res = CliRunner().invoke(cli, ["run", str(_job(tmp_path, [], "chat")), "--no-catalog", "--quiet"])
    assert res.exit_code == 0, res.output


def test_a_pretty_printed_json_file_is_read_as_one_record(tmp_path: Path) -> None:
    """It used to reject every line (and the verdict named it); it is read whole now
    (pipeline/sources/inputs.py)."""
    pretty = orjson.dumps(CASES["chat"][0][1], option=orjson.OPT_INDENT_2)
    (tmp_path / "in.json").write_bytes(pretty)
    job = write_job(tmp_path / "job.toml", [{"path": "in.json", "format": "chat"}],
                    {"path": "run", "target": "chat"}, engine={"workers": 1})  # fmt: skip
    res = CliRunner().invoke(cli, ["run", str(job), "--no-catalog", "--json"])
    assert res.exit_code == 0, res.output
    summary = orjson.loads(res.output.strip().splitlines()[-1])
    assert (summary["read"], summary["written"]) == (1, 1)


def test_a_step_that_rejects_everything_names_itself_and_its_parameter(tmp_path: Path) -> None:
    tools = [r for _, r in CASES["chat"] if any(m.get("tool_calls") for m in r.get("messages", []))]
    assert tools, "tests.cases has a chat conversation with tool calls"
    write_jsonl(tmp_path / "in.jsonl", [orjson.dumps(r) for r in tools])
    out = {"path": "run", "target": "chat"}
    job = write_job(tmp_path / "job.toml", [{"path": "in.jsonl", "format": "chat"}], out, steps=["role_swap"])
    res = CliRunner().invoke(cli, ["run", str(job), "--no-catalog", "--quiet"])
    assert res.exit_code == 1, res.output
    assert f"all {len(tools)} records rejected by step `role_swap`: `role_swap: " in res.output
    assert "set `role_swap:on_unsupported=drop`" in res.output


def test_convert_run_dir_gets_the_same_verdict(tmp_path: Path) -> None:
    src = write_jsonl(tmp_path / "in.jsonl", CHAT)
    run = str(tmp_path / "run")
    args = ["convert", str(src), "--from", "responses", "--to", "chat", "--run-dir", run, "-q"]
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 1, res.output
    assert f"all {len(CHAT)} records rejected at decode" in res.output
    assert (tmp_path / "run" / "summary.json").exists()


def test_a_loss_policy_that_rejects_everything_names_the_kinds_to_allow(tmp_path: Path) -> None:
    named = [orjson.dumps({"model": "m", "messages": [{"role": "user", "content": f"hi {i}", "name": "bob"}]})
             for i in range(3)]  # fmt: skip
    write_jsonl(tmp_path / "in.jsonl", named)  # a message name has no slot in Responses: loss `name`
    job = write_job(tmp_path / "job.toml", [{"path": "in.jsonl", "format": "chat"}],
                    {"path": "run", "target": "responses"}, loss={"on_loss": "reject"})  # fmt: skip
    with pytest.raises(TooManyRejected) as e:
        run_job(load_job(job))
    assert e.value.summary["rejected_by_stage"] == {"loss_policy": 3}
    assert str(e.value) == (
        "all 3 records rejected at loss_policy: `loss: name (on_loss = reject)`; to write them, accept "
        'those losses: `--allow-loss name` or `--on-loss allow` (a job file: `[loss] allow = ["name"]`)'
    )
