"""The chatlake command: exit codes, output and help."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pyarrow.parquet as pq
import pytest
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


@pytest.mark.parametrize("log", [False, True], ids=["records", "request log"])
def test_synth_never_writes_through_a_link_at_o(tmp_path: Path, log: bool) -> None:
    """A link planted at -o is refused before any work (one line, exit 2), its target untouched; a
    file the user named is replaced whole by rename, no temp file left beside it."""
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    link = tmp_path / "out.jsonl"
    link.symlink_to(victim)
    base = ["synth", "--format", "chat", "--n", "3", *(["--request-log"] if log else [])]
    res = CliRunner().invoke(cli, [*base, "-o", str(link)])
    assert res.exit_code == 2, (res.output, res.exception)
    assert "symbolic link" in res.stderr and "Traceback" not in res.output
    assert victim.read_text() == "keep me\n" and link.is_symlink()
    mine = tmp_path / "mine.jsonl"
    mine.write_text("old\n")
    res = CliRunner().invoke(cli, [*base, "-o", str(mine)])
    assert res.exit_code == 0, res.output
    assert mine.read_bytes().count(b"\n") >= 3 and not mine.read_bytes().startswith(b"old")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine.jsonl", "out.jsonl", "victim.txt"]


@pytest.mark.parametrize("planted", ["jobs", "jobs/sample.toml"])
def test_quickstart_never_writes_through_a_planted_link(tmp_path: Path, planted: str) -> None:
    """A link planted in DIR (its jobs/ folder, or a file it writes, even one with the same bytes)
    is refused with one line and exit 2; nothing is written where it points."""
    root = Path(__file__).resolve().parents[1]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    demo = tmp_path / "demo"
    (demo / "jobs").mkdir(parents=True)
    if planted == "jobs":
        (demo / "jobs").rmdir()
        (demo / "jobs").symlink_to(elsewhere)
    else:
        target = elsewhere / "sample.toml"
        target.write_bytes((root / "jobs" / "sample.toml").read_bytes())
        (demo / planted).symlink_to(target)
    for p in elsewhere.iterdir():  # a year-2001 mtime: a write through the link, however soon, changes it
        os.utime(p, ns=(10**18, 10**18))
    before = {p.name: p.stat().st_mtime_ns for p in elsewhere.iterdir()}
    res = CliRunner().invoke(cli, ["quickstart", str(demo)])
    assert res.exit_code == 2, (res.output, res.exception)
    assert "symbolic link" in res.output and str(demo / planted) in res.output
    assert {p.name: p.stat().st_mtime_ns for p in elsewhere.iterdir()} == before
    assert not (demo / "data").exists()


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
    [row] = pq.read_table(tmp_path / "o.jsonl.losses.parquet").to_pylist()
    assert row["kind"] == "filled_default"


def test_convert_set_fields_under_on_loss_reject(tmp_path: Path) -> None:
    """--set writes the values into every record and reports them as additions (never refused)."""
    src = tmp_path / "in.jsonl"
    src.write_bytes(b'{"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}\n')
    out = tmp_path / "o.jsonl"
    argv = ["convert", str(src), "--from", "chat", "--to", "anthropic", "--on-loss", "reject", "-o", str(out),
            "--set", "max_tokens=1024", "--set", "model=claude-sonnet-4-5",
            "--report", str(tmp_path / "r.json")]  # fmt: skip
    result = CliRunner().invoke(cli, argv)
    assert result.exit_code == 0, result.output
    body = orjson.loads(out.read_bytes())
    assert (body["model"], body["max_tokens"]) == ("claude-sonnet-4-5", 1024)
    report = orjson.loads((tmp_path / "r.json").read_bytes())
    assert report["additions_by_kind"] == {"set": 1} and report["records_with_losses"] == 0
    kinds = pq.read_table(tmp_path / "o.jsonl.losses.parquet").column("kind").to_pylist()
    assert kinds == ["set", "set"]


def test_convert_reports_a_model_of_another_provider(tmp_path: Path) -> None:
    """A gpt- model carried to Anthropic is a model_provider loss: --on-loss reject refuses it and
    says so; the same command with --set model= writes it."""
    src = tmp_path / "in.jsonl"
    src.write_bytes(b'{"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}\n')
    argv = ["convert", str(src), "--from", "chat", "--to", "anthropic", "--on-loss", "reject",
            "-o", str(tmp_path / "o.jsonl")]  # fmt: skip
    result = CliRunner().invoke(cli, argv)
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "loss: model_provider (on_loss = reject)" in result.output
    assert "`--set model=NAME`" in result.output
    rejected = orjson.loads((tmp_path / "o.jsonl.rejected.jsonl").read_bytes())
    assert rejected["reason"] == "loss: model_provider (on_loss = reject)"
    result = CliRunner().invoke(cli, [*argv, "--set", "model=claude-haiku-4-5"])
    assert result.exit_code == 0, result.output


def test_convert_set_errors_exit_2_before_any_work(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_bytes(b'{"messages": [{"role": "user", "content": "hi"}]}\n')
    out = tmp_path / "o.jsonl"
    for extra, message in (
        (["--to", "chat", "--set", "max_tokens=5"], "its token limit is max_completion_tokens"),
        (["--to", "anthropic", "--set", "max_tokens=many"], "whole number of tokens"),
        (["--to", "anthropic", "--set", "max_tokens"], "write FIELD=VALUE"),
        (["--to", "hf", "--set", "model=x"], "no request fields to set"),
    ):
        result = CliRunner().invoke(cli, ["convert", str(src), "--from", "chat", "-o", str(out), *extra])
        assert result.exit_code == 2, (extra, result.output)
        assert message in result.output and "Traceback" not in result.output
        assert not out.exists() and not (tmp_path / "o.jsonl.partial").exists()


def test_version_names_the_release_and_the_active_codec(monkeypatch: pytest.MonkeyPatch) -> None:
    """``chatlake --version`` is what a bug report quotes: the installed version and which codec ran."""
    from importlib.metadata import version

    from pipeline.codec import status

    monkeypatch.delenv("CHATLAKE_NATIVE", raising=False)
    res = CliRunner().invoke(cli, ["--version"])
    assert res.exit_code == 0, res.output
    expected = "compiled (C over yyjson)" if status().native else "pure Python (`chatlake doctor` says why)"
    assert res.output == f"chatlake {version('chatlake')}, codec: {expected}\n"
    monkeypatch.setenv("CHATLAKE_NATIVE", "0")
    res = CliRunner().invoke(cli, ["--version"])
    assert res.output == f"chatlake {version('chatlake')}, codec: pure Python (`chatlake doctor` says why)\n"


def test_the_installed_version_is_the_changelogs_top_release() -> None:
    """pyproject.toml's version has its section at the top of CHANGELOG.md (what --version prints
    once installed)."""
    import re
    import tomllib

    root = Path(__file__).resolve().parents[1]
    declared = tomllib.loads((root / "pyproject.toml").read_text())["project"]["version"]
    top = re.search(r"^## \[(\d+\.\d+\.\d+)\]", (root / "CHANGELOG.md").read_text(), re.M)
    assert top is not None and top.group(1) == declared


def test_quickstart_writes_the_sample_job_and_data(tmp_path: Path) -> None:
    """`chatlake quickstart DIR`: the bundled job and data, runnable as the quick start says; never
    overwrites a file with other contents (exit 2), and is a no-op where the same files are."""
    runner = CliRunner()
    r = runner.invoke(cli, ["quickstart", str(tmp_path / "demo")])
    assert r.exit_code == 0, r.output
    root = Path(__file__).resolve().parents[1]
    for rel in ("jobs/sample.toml", *(f"data/sample-{f}.jsonl" for f in ("responses", "chat", "anthropic"))):
        assert (tmp_path / "demo" / rel).read_bytes() == (root / rel).read_bytes()
    assert "chatlake run jobs/sample.toml" in r.output
    assert runner.invoke(cli, ["quickstart", str(tmp_path / "demo")]).exit_code == 0  # the same files
    (tmp_path / "demo" / "jobs" / "sample.toml").write_text("name = 'mine'\n")
    r = runner.invoke(cli, ["quickstart", str(tmp_path / "demo")])
    assert r.exit_code == 2 and "sample.toml exists with other contents" in r.output
    assert (tmp_path / "demo" / "jobs" / "sample.toml").read_text() == "name = 'mine'\n"


LINE = '{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}\n'


@pytest.mark.parametrize("where", ["input", "-o", "-o inside", "--report", "--run-dir"])
def test_a_loop_of_links_in_any_path_is_one_line_and_exit_2(tmp_path: Path, where: str) -> None:
    (tmp_path / "in.jsonl").write_text(LINE)
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    args = {
        "input": [str(loop), "-o", str(tmp_path / "out.jsonl")],
        "-o": [str(tmp_path / "in.jsonl"), "-o", str(loop)],
        "-o inside": [str(tmp_path / "in.jsonl"), "-o", str(loop / "out.jsonl")],
        "--report": [str(tmp_path / "in.jsonl"), "-o", str(tmp_path / "out.jsonl"), "--report", str(loop)],
        "--run-dir": [str(tmp_path / "in.jsonl"), "--run-dir", str(loop)],
    }[where]
    res = CliRunner().invoke(cli, ["convert", *args, "--from", "chat", "--to", "chat", "-q"])
    assert res.exit_code == 2, (res.exit_code, res.output, res.exception)
    assert "Traceback" not in res.output and not isinstance(res.exception, RuntimeError)
    err = [line for line in res.stderr.splitlines() if line.startswith("Error: ")]
    assert len(err) == 1 and ("loop of symbolic links" in err[0] or "symbolic link" in err[0]), res.stderr
    assert not (tmp_path / "out.jsonl").exists()


def test_report_and_output_may_not_collide_with_an_input_or_each_other(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text(LINE)
    out = tmp_path / "out.jsonl"
    for extra, said in ((["--report", str(src)], "would overwrite the input"),
                        (["--report", str(out)], "is the same path as --output")):  # fmt: skip
        res = CliRunner().invoke(cli, ["convert", str(src), "--from", "chat", "--to", "chat", "-o", str(out),
                                       *extra])  # fmt: skip
        assert res.exit_code == 2 and said in res.stderr, res.output
        assert src.read_text() == LINE and not out.exists()


def test_report_written_atomically_never_through_a_link(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text(LINE)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    report = tmp_path / "r.json"
    report.symlink_to(victim)
    res = CliRunner().invoke(cli, ["convert", str(src), "--from", "chat", "--to", "chat", "-o",
                                   str(tmp_path / "out.jsonl"), "--report", str(report)])  # fmt: skip
    assert res.exit_code == 2 and "symbolic link" in res.stderr, res.output
    assert victim.read_text() == "precious" and not (tmp_path / "out.jsonl").exists()
    report.unlink()
    res = CliRunner().invoke(cli, ["convert", str(src), "--from", "chat", "--to", "chat", "-o",
                                   str(tmp_path / "out.jsonl"), "--report", str(report), "-q"])  # fmt: skip
    assert res.exit_code == 0, res.output
    assert orjson.loads(report.read_bytes())["written"] == 1
    names = ["in.jsonl", "victim.txt", "r.json", "out.jsonl", "out.jsonl.rejected.jsonl",
             "out.jsonl.losses.parquet", "out.jsonl.manifest.json"]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(names)  # no temp file left


def _deep_tool(levels: int) -> bytes:
    """A Chat record whose tool parameters nest ``levels`` lists and objects, alternately (the shape
    the mutation fuzzer makes of a schema)."""
    return (b'{"messages": [{"role": "user", "content": "hi"}], "tools": [{"type": "function", '
            b'"function": {"name": "f", "parameters": ' + b'[{"d":' * (levels // 2) + b"1"
            + b"}]" * (levels // 2) + b"}}]}")  # fmt: skip


@pytest.mark.parametrize("native", ["1", "0"])
def test_convert_rejects_a_record_nested_past_the_recursion_limit_and_writes_its_neighbours(
    tmp_path: Path, native: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A record ~500 levels deep (past Python's recursion limit for a recursive walk: it once ended
    a fuzzing run in RecursionError) is rejected alone with the nesting reason, in both codecs."""
    monkeypatch.setenv("CHATLAKE_NATIVE", native)
    good = b'{"messages": [{"role": "user", "content": "hi"}]}'
    src = tmp_path / "in.jsonl"
    src.write_bytes(b"\n".join([good, _deep_tool(516), good]) + b"\n")
    out, report = tmp_path / "o.jsonl", tmp_path / "r.json"
    argv = ["convert", str(src), "--from", "chat", "--to", "anthropic",
            "-o", str(out), "--report", str(report)]  # fmt: skip
    result = CliRunner().invoke(cli, argv)
    assert result.exit_code == 0, result.output
    assert len(out.read_bytes().splitlines()) == 2
    [rejected] = (tmp_path / "o.jsonl.rejected.jsonl").read_bytes().splitlines()
    where = "$.tools[0].function.parameters[0].d[0].d[0].d[0].d..."
    assert orjson.loads(rejected)["reason"] == f"{where}: nested deeper than 200 levels"
    summary = orjson.loads(report.read_bytes())
    assert (summary["read"], summary["written"], summary["rejected"]) == (3, 2, 1)
