"""``chatlake run`` / ``chatlake runs`` / ``chatlake convert --run-dir``: output, JSON, exit codes."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from pipeline.cli import cli
from tests.cases import CASES
from tests.engine.helpers import file_hashes, output_lines, write_job, write_jsonl
from tests.helpers import assert_identical


def _job(tmp_path: Path, **output: object) -> Path:
    write_jsonl(tmp_path / "in.jsonl", [orjson.dumps(r) for _, r in CASES["chat"]] + [b"{broken"])
    return write_job(tmp_path / "job.toml", [{"path": "in.jsonl", "format": "chat"}],
                     {"path": "run", "target": "chat", **output}, engine={"workers": 1})  # fmt: skip


def test_run_prints_a_summary_table_and_registers_the_run(tmp_path: Path) -> None:
    job = _job(tmp_path)
    catalog = str(tmp_path / "cat.duckdb")
    res = CliRunner().invoke(cli, ["run", str(job), "--catalog", catalog])
    assert res.exit_code == 0, res.output
    assert "chatlake run test-job -> chat (ok)" in res.output
    assert "rejected by stage: read 1" in res.output
    res = CliRunner().invoke(cli, ["runs", "--catalog", catalog, "--json"])
    assert res.exit_code == 0, res.output
    [row] = [orjson.loads(line) for line in res.output.splitlines()]
    got = (row["job"], row["read"], row["written"], row["rejected"], row["status"])
    n = len(CASES["chat"])
    assert got == ("test-job", n + 1, n, 1, "ok")
    table = CliRunner().invoke(cli, ["runs", "--catalog", catalog, "--job", "test-job"])
    assert table.exit_code == 0 and "test-job" in table.output
    none = CliRunner().invoke(cli, ["runs", "--catalog", catalog, "--job", "other", "--json"])
    assert none.exit_code == 0 and none.output == ""


def test_run_json_prints_only_the_summary(tmp_path: Path) -> None:
    res = CliRunner().invoke(cli, ["run", str(_job(tmp_path)), "--json", "--no-catalog"])
    assert res.exit_code == 0, res.output
    summary = orjson.loads(res.output)
    assert summary == orjson.loads((tmp_path / "run" / "summary.json").read_bytes())
    n = len(CASES["chat"])
    assert (summary["read"], summary["written"], summary["rejected"]) == (n + 1, n, 1)


def test_run_quiet_prints_nothing(tmp_path: Path) -> None:
    res = CliRunner().invoke(cli, ["run", str(_job(tmp_path)), "--quiet", "--no-catalog"])
    assert (res.exit_code, res.output) == (0, "")


def test_bad_job_exits_2_before_any_work(tmp_path: Path) -> None:
    job = _job(tmp_path, shard_records=-1)
    res = CliRunner().invoke(cli, ["run", str(job), "--no-catalog"])
    assert res.exit_code == 2
    assert "output.shard_records: Input should be greater than or equal to 1" in res.output
    assert not (tmp_path / "run").exists()


def test_a_job_failing_while_running_exits_1_and_is_recorded_as_failed(tmp_path: Path) -> None:
    (tmp_path / "broken.arrow").write_bytes(b"this is not an arrow stream")
    job = write_job(tmp_path / "job.toml", [{"path": "broken.arrow", "format": "canonical"}], {"path": "run"})
    catalog = str(tmp_path / "cat.duckdb")
    res = CliRunner().invoke(cli, ["run", str(job), "--catalog", catalog])
    assert res.exit_code == 1
    assert "the job failed" in res.output
    res = CliRunner().invoke(cli, ["runs", "--catalog", catalog, "--json"])
    assert orjson.loads(res.output)["status"] == "failed"


def test_convert_with_run_dir_is_a_one_step_job(tmp_path: Path) -> None:
    records = [r for _, r in CASES["responses"]]
    write_jsonl(tmp_path / "in.jsonl", [orjson.dumps(r) for r in records])
    res = CliRunner().invoke(
        cli,
        ["convert", str(tmp_path / "in.jsonl"), "--from", "responses", "--to", "responses",
         "--run-dir", str(tmp_path / "run"), "--workers", "1", "--quiet"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    for a, b in zip(records, output_lines(tmp_path / "run"), strict=True):
        assert_identical(a, orjson.loads(b))
    summary = orjson.loads((tmp_path / "run" / "summary.json").read_bytes())
    assert (summary["job"], summary["read"], summary["written"]) == ("convert", len(records), len(records))


def test_convert_needs_exactly_one_of_output_and_run_dir(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "in.jsonl", [b"{}"])
    both = ["convert", str(tmp_path / "in.jsonl"), "--from", "chat", "--to", "chat",
            "-o", str(tmp_path / "o"), "--run-dir", str(tmp_path / "r")]  # fmt: skip
    assert CliRunner().invoke(cli, both).exit_code == 2
    neither = ["convert", str(tmp_path / "in.jsonl"), "--from", "chat", "--to", "chat"]
    res = CliRunner().invoke(cli, neither)
    assert res.exit_code == 2 and "give either --output FILE or --run-dir DIR" in res.output


def test_a_job_file_that_is_not_utf8_exits_2_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "job.toml").write_bytes(b'name = "caf\xe9"\n')
    res = CliRunner().invoke(cli, ["run", str(tmp_path / "job.toml"), "--no-catalog"])
    assert res.exit_code == 2 and res.exception is not None and isinstance(res.exception, SystemExit)
    assert res.output.strip().splitlines() == [
        f"Error: the job file {str(tmp_path / 'job.toml')!r} is not UTF-8 text (byte 0xe9 at offset 11); "
        "save it as UTF-8"
    ]


def test_runs_fits_80_columns_and_shows_the_run_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = _job(tmp_path)
    monkeypatch.chdir(tmp_path)  # the run directory is shown relative to the current directory
    catalog = str(tmp_path / "cat.duckdb")
    assert CliRunner().invoke(cli, ["run", str(job), "--catalog", catalog, "-q"]).exit_code == 0
    res = CliRunner(env={"COLUMNS": "80"}).invoke(cli, ["runs", "--catalog", catalog])
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert max(len(line) for line in lines) <= 80, res.output
    [row] = CliRunner().invoke(cli, ["runs", "--catalog", catalog, "--json"]).output.splitlines()
    run_id, run_dir = orjson.loads(row)["run_id"], orjson.loads(row)["run_dir"]
    assert any(line.strip().startswith(run_id) for line in lines), res.output  # not folded
    assert run_dir == str(tmp_path / "run") and any(line.strip() == "run" for line in lines), res.output


def test_run_uses_the_per_user_catalog_from_any_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    job = _job(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert CliRunner().invoke(cli, ["run", str(job), "-q"]).exit_code == 0
    assert (tmp_path / "data" / "chatlake" / "catalog.duckdb").is_file()
    assert not (tmp_path / "chatlake.duckdb").exists()
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    res = CliRunner().invoke(cli, ["runs", "--json"])
    assert res.exit_code == 0 and orjson.loads(res.output)["job"] == "test-job"


@pytest.mark.parametrize(
    "args",
    [["verify", "{run}"], ["audit", "{run}", "-Q", "rejected_records_by_reason"],
     ["sql", "{run}", "SELECT read FROM summary"], ["export-hf", "{run}", "{out}"]],
)  # fmt: skip
def test_commands_that_read_a_run_accept_its_id_or_latest(tmp_path: Path, args: list[str]) -> None:
    catalog = str(tmp_path / "cat.duckdb")
    assert CliRunner().invoke(cli, ["run", str(_job(tmp_path)), "--catalog", catalog, "-q"]).exit_code == 0
    [row] = CliRunner().invoke(cli, ["runs", "--catalog", catalog, "--json"]).output.splitlines()
    for i, run in enumerate((orjson.loads(row)["run_id"], "latest", str(tmp_path / "run"))):
        argv = [a.format(run=run, out=tmp_path / f"hf{i}") for a in args]
        res = CliRunner().invoke(cli, [*argv, "--catalog", catalog])
        assert res.exit_code == 0, (run, res.output)
    argv = [a.format(run="no-such-run", out=tmp_path / "x") for a in args]
    bad = CliRunner().invoke(cli, [*argv, "--catalog", catalog])
    assert bad.exit_code == 2 and "Traceback" not in bad.output
    assert "'no-such-run' is neither a run directory nor a run id in the catalog" in bad.output


def test_ctrl_c_says_how_to_resume(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline.engine import local

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(local, "execute", interrupted)
    catalog = str(tmp_path / "cat.duckdb")
    res = CliRunner().invoke(cli, ["run", str(_job(tmp_path)), "--catalog", catalog, "-q"])
    assert res.exit_code == 130, res.output
    assert "Aborted!" not in res.output and "Traceback" not in res.output
    kept = f"interrupted: the finished shards are kept in {tmp_path / 'run'}; "
    assert kept + "run the same command again to resume" in res.output
    fresh = CliRunner().invoke(cli, ["run", str(_job(tmp_path)), "--no-catalog", "-q", "--fresh"])
    assert fresh.exit_code == 130 and "run the same command again without --fresh to resume" in fresh.output
    [row] = CliRunner().invoke(cli, ["runs", "--catalog", catalog, "--json"]).output.splitlines()
    assert orjson.loads(row)["status"] == "failed"


def test_the_summary_says_how_many_loss_kinds_it_does_not_list() -> None:
    import io

    from rich.console import Console

    from pipeline.engine.report import print_summary

    kinds = {f"kind_{i}": 10 - i for i in range(8)}
    summary = {"job": "j", "target": "chat", "status": "ok", "read": 3, "written": 3, "rejected": 0,
               "shards": 1, "records_with_losses": 3, "losses_by_kind": kinds,
               "run_dir": "runs/j"}  # fmt: skip
    out = io.StringIO()
    print_summary(summary, Console(file=out, width=200))
    line = next(x for x in out.getvalue().splitlines() if "records lost something" in x)
    assert line == (
        "3 records lost something (kind_0 10, kind_1 9, kind_2 8, kind_3 7, kind_4 6, kind_5 5, and 2 more)"
    )


def test_runs_says_where_it_looked_when_there_are_none(tmp_path: Path) -> None:
    catalog = str(tmp_path / "none.duckdb")
    res = CliRunner().invoke(cli, ["runs", "--catalog", catalog])
    assert res.exit_code == 0
    assert res.output == f"no runs in the catalog {catalog} (`chatlake run JOB.toml` registers one)\n"


def test_a_renamed_job_does_not_take_over_another_jobs_run_directory(tmp_path: Path) -> None:
    """Same inputs, steps and target under another name: exit 2 naming both jobs, nothing touched
    (docs/jobs.md: the run directory is the job's; the catalog lists runs by job name)."""
    job = _job(tmp_path)
    assert CliRunner().invoke(cli, ["run", str(job), "--no-catalog", "-q"]).exit_code == 0
    before = file_hashes(tmp_path / "run")
    renamed = tmp_path / "renamed.toml"
    renamed.write_text(job.read_text().replace('name = "test-job"', 'name = "other-job"'))
    assert renamed.read_text() != job.read_text()
    res = CliRunner().invoke(cli, ["run", str(renamed), "--no-catalog", "-q"])
    assert res.exit_code == 2, res.output
    assert "holds a run of job 'test-job', not 'other-job'" in res.output
    assert "--fresh" in res.output and "Traceback" not in res.output
    assert file_hashes(tmp_path / "run") == before
    again = CliRunner().invoke(cli, ["run", str(job), "--no-catalog", "-q"])  # its own job resumes
    assert again.exit_code == 0, again.output
    fresh = CliRunner().invoke(cli, ["run", str(renamed), "--no-catalog", "-q", "--fresh"])
    assert fresh.exit_code == 0, fresh.output
    assert orjson.loads((tmp_path / "run" / "manifest.json").read_bytes())["job"] == "other-job"


@pytest.mark.parametrize("command", ["convert", "transform"])
def test_ctrl_c_on_a_single_file_output_says_how_to_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    from pipeline.engine import local
    from pipeline.engine.single_file import staging_dir

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(local, "execute", interrupted)
    src = Path(__file__).parents[2] / "data" / "sample-responses.jsonl"
    out = tmp_path / ("out.jsonl" if command == "convert" else "out.parquet")
    how = ["--to", "chat"] if command == "convert" else ["--step", "role_swap"]
    res = CliRunner().invoke(cli, [command, str(src), "--from", "responses", *how, "-o", str(out), "-q"])
    assert res.exit_code == 130, res.output
    assert "Aborted!" not in res.output and "Traceback" not in res.output
    said = " ".join(res.output.split())  # click wraps nothing, but the path may be long
    assert f"interrupted: the finished shards are kept in {staging_dir(out)}; run the same command again " \
        "to resume" in said
    assert not out.exists()


def test_transform_threads_summary_counts_the_dropped_records(tmp_path: Path) -> None:
    """threads:keep=leaves drops the records its leaves contain: transform's line says how many,
    so read = written + rejected + dropped at a glance."""
    import re

    log = tmp_path / "log.jsonl"
    assert CliRunner().invoke(cli, ["synth", "--format", "responses", "--n", "20", "--request-log",
                                    "-o", str(log)]).exit_code == 0  # fmt: skip
    out = tmp_path / "t.parquet"
    res = CliRunner().invoke(cli, ["transform", str(log), "--from", "responses", "--step",
                                   "threads:keep=leaves", "-o", str(out)])  # fmt: skip
    assert res.exit_code == 0, res.output
    m = re.search(r"read (\d+) written (\d+) rejected (\d+) dropped (\d+) \(in their leaves\)", res.output)
    assert m, res.output
    read, written, rejected, dropped = map(int, m.groups())
    assert dropped > 0 and read == written + rejected + dropped


@pytest.mark.parametrize("command", ["run", "convert"])
@pytest.mark.parametrize(
    ("error", "resume"),
    [
        (OSError(28, "No space left on device"), True),
        (MemoryError(), True),
        (ValueError("offset overflow while concatenating arrays"), False),  # Arrow's ArrowInvalid
        (RuntimeError("counts do not add up"), False),
    ],
    ids=["full disk", "memory", "offset overflow", "a bug"],
)
def test_only_a_failure_that_can_pass_is_offered_a_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str, error: Exception, resume: bool
) -> None:
    """An archive whose rows overflowed Arrow's offsets said "run again to resume" and failed the
    same way on every rerun: the resume is offered only for a failure of the machine."""
    from pipeline.engine import local

    def failing(*args: object, **kwargs: object) -> None:
        raise error

    monkeypatch.setattr(local, "execute", failing)
    if command == "run":
        argv = ["run", str(_job(tmp_path)), "--no-catalog", "-q"]
    else:
        src = write_jsonl(tmp_path / "in.jsonl", [orjson.dumps(r) for _, r in CASES["chat"]])
        argv = ["convert", str(src), "--from", "chat", "--to", "responses", "-o", str(tmp_path / "o.jsonl")]
    res = CliRunner().invoke(cli, argv)
    assert res.exit_code == 1 and "the job failed: " in res.output and "Traceback" not in res.output
    assert ("run the command again to resume" in res.output) is resume
    assert ("running it again fails the same way" in res.output) is not resume
