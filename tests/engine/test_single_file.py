"""``convert``/``transform -o FILE`` on the engine (single-file layout): exact same-format output, bad
lines quarantined with reasons and their original input, counts that add up, collisions refused."""

from __future__ import annotations

from pathlib import Path

import orjson
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from pipeline.cli import cli
from pipeline.losses import LossPolicy
from tests.cases import BAD_LINES, CASES
from tests.helpers import assert_identical


def run_convert(inputs: list[Path], source: str, target: str, output: Path, *args: str, code: int = 0) -> dict:  # noqa: E501
    """``chatlake convert`` through the CLI; returns its --report (beside the output)."""
    report = output.with_name(output.name + ".report.json")
    argv = ["convert", *map(str, inputs), "--from", source, "--to", target, "-o", str(output), "-q"]
    res = CliRunner().invoke(cli, [*argv, "--report", str(report), *args])
    assert res.exit_code == code, res.output
    return orjson.loads(report.read_bytes()) if code == 0 else {"output": res.output}


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
    report = run_convert([src], fmt, fmt, tmp_path / "out.jsonl", "--workers", str(workers))
    assert (report["read"], report["written"], report["rejected"]) == (len(records), len(records), 0)
    for a, b in zip(records, _read_jsonl(tmp_path / "out.jsonl"), strict=True):
        assert_identical(a, b)
    assert report["output"] == str(tmp_path / "out.jsonl")
    assert not (tmp_path / "out.jsonl.partial").exists()


def test_jsonl_to_parquet_and_back(tmp_path: Path) -> None:
    records = [rec for _, rec in CASES["anthropic"]]
    src = _write_jsonl(tmp_path / "in.jsonl", [orjson.dumps(r) for r in records])
    run_convert([src], "anthropic", "parquet", tmp_path / "c.parquet")
    table = pq.read_table(tmp_path / "c.parquet")
    assert table.column("source_line").to_pylist() == list(range(1, len(records) + 1))
    assert table.column("source_file").to_pylist() == [str(src)] * len(records)
    report = run_convert([tmp_path / "c.parquet"], "parquet", "anthropic", tmp_path / "o.jsonl")
    assert (report["read"], report["written"]) == (len(records), len(records))
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
    report = run_convert([src], fmt, fmt, tmp_path / "out.jsonl")
    assert report["read"] == report["written"] + report["rejected"] == len(lines) - 1
    assert (report["written"], report["rejected"], report["blank_lines"]) == (len(good), len(bad), 1)
    rejected = _read_jsonl(tmp_path / "out.jsonl.rejected.jsonl")
    assert [r["source_line"] for r in rejected] == sorted(expected)
    for r in rejected:
        line, err = expected[r["source_line"]]
        assert (r["input"], r["input_format"], r["input_encoding"]) == (line.decode(), fmt, "utf-8")
        assert r["reason"].startswith(err), (r["reason"], err)
        assert r["source_file"] == str(src)
    assert sum(report["rejected_by_reason"].values()) == len(bad)
    assert report["inputs"] == [{"path": str(src), "format": fmt, "read": len(lines) - 1}]
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
    run_convert([src], "responses", "parquet", tmp_path / "c.parquet")
    table = pq.read_table(tmp_path / "c.parquet")
    [row] = table.to_pylist()
    assert row["source_line"] == 2 and row["n_items"] == 1
    assert row["items"][0]["content"][0]["text"] == "ok"


def test_multiple_inputs_keep_input_order(tmp_path: Path) -> None:
    a = _write_jsonl(tmp_path / "a.jsonl", [b'{"messages": [{"role": "user", "content": "a1"}]}'] * 2)
    b = _write_jsonl(tmp_path / "b.jsonl", [b'{"messages": [{"role": "user", "content": "b1"}]}'])
    run_convert([a, b], "chat", "parquet", tmp_path / "c.parquet")
    t = pq.read_table(tmp_path / "c.parquet")
    assert t.column("source_file").to_pylist() == [str(a), str(a), str(b)]
    assert len(set(t.column("conversation_id").to_pylist())) == 3


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (["--from", "xml"], "'xml' is not one of"),
        (["--to", "yaml"], "'yaml' is not one of"),
        (["MISSING"], "matches no file"),
        (["-o", "SAME"], "would overwrite the input"),
        (["--report", "SAME"], "would overwrite the input"),
        (["--report", "OUT"], "is the same path as --output"),
        (["--report", "OUT.rejected.jsonl"], "is the same path as the rejected file"),
        (["--report", "OUT.losses.parquet"], "is the same path as the losses file"),
        (["--losses", "jsonl", "--report", "OUT.losses.jsonl"], "is the same path as the losses file"),
        (["--report", "OUT.partial/r.json"], "is inside the staging directory"),
        (["--workers", "0"], "--workers must be at least 1"),
    ],
)
def test_bad_config_fails_before_any_work(change: list[str], message: str, tmp_path: Path) -> None:
    """Exit 2 with a message, and nothing written (no output dir, no staging dir)."""
    src = _write_jsonl(tmp_path / "in.jsonl", [b'{"messages": []}'])
    out = tmp_path / "out" / "o.jsonl"
    opts = {"--from": "chat", "--to": "chat", "-o": str(out)}
    extra: list[str] = []
    inputs = [str(src)]
    if change == ["MISSING"]:
        inputs = [str(tmp_path / "missing.jsonl")]
    else:
        for option, given in zip(change[::2], change[1::2], strict=True):  # option, value pairs
            value = given.replace("SAME", str(src)).replace("OUT", str(out))
            if option in opts:
                opts[option] = value
            else:
                extra += [option, value]
    argv = ["convert", *inputs, *(x for kv in opts.items() for x in kv), *extra]
    res = CliRunner().invoke(cli, argv)
    assert res.exit_code == 2, res.output
    assert message in res.output
    assert not (tmp_path / "out").exists()


def test_another_commands_staging_dir_is_refused(tmp_path: Path) -> None:
    """An unfinished run of a different command over the same output name is not silently reused."""
    src = _write_jsonl(tmp_path / "in.jsonl", [b'{"messages": []}'])
    out = tmp_path / "o.jsonl"
    run_convert([src], "chat", "chat", out)
    staging = tmp_path / "o.jsonl.partial"
    staging.mkdir()
    (staging / "manifest.json").write_bytes(b'{"fingerprint": "another job"}')
    res = run_convert([src], "chat", "responses", out, code=2)
    assert "unfinished run of a different command" in res["output"] and "delete" in res["output"]
    (staging / "manifest.json").unlink()
    (staging / "mine.txt").write_text("not chatlake's")
    res = run_convert([src], "chat", "responses", out, code=2)
    assert "not chatlake's staging directory" in res["output"]
    assert (staging / "mine.txt").read_text() == "not chatlake's"


def _policy_job(tmp_path: Path, policy: LossPolicy) -> dict:
    lines = [
        orjson.dumps({"messages": [{"role": "user", "content": "plain"}]}),
        orjson.dumps({"messages": [{"role": "user", "content": "hi", "name": "alice"}]}),
        orjson.dumps({"messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "x"}]}),
    ]
    src = _write_jsonl(tmp_path / "in.jsonl", lines)
    args = ["--on-loss", policy.on_loss, "--allow-loss", ",".join(sorted(policy.allowed))]
    return run_convert([src], "chat", "responses", tmp_path / "out.jsonl", *args)


def test_allow_policy_writes_all_and_records_losses(tmp_path: Path) -> None:
    report = _policy_job(tmp_path, LossPolicy())
    assert (report["read"], report["written"], report["rejected"]) == (3, 3, 0)
    assert report["records_with_losses"] == 2
    assert report["losses_by_kind"] == {"name": 1, "instruction_position": 1}
    assert report["losses_file"] == str(tmp_path / "out.jsonl.losses.parquet")  # the default report
    lines = pq.read_table(tmp_path / "out.jsonl.losses.parquet").to_pylist()
    assert [x["source_line"] for x in lines] == [2, 3]
    assert {k: lines[0][k] for k in ("path", "kind", "detail", "source_format", "target_format")} == {
        "path": "/messages/0/name", "kind": "name", "detail": "'name' has no slot",
        "source_format": "chat", "target_format": "responses",
    }  # fmt: skip


def test_reject_policy_quarantines_exactly_the_lossy_records(tmp_path: Path) -> None:
    report = _policy_job(tmp_path, LossPolicy("reject"))
    assert (report["read"], report["written"], report["rejected"]) == (3, 1, 2)
    rejected = _read_jsonl(tmp_path / "out.jsonl.rejected.jsonl")
    assert [r["source_line"] for r in rejected] == [2, 3]
    assert rejected[0]["reason"] == "loss: name (on_loss = reject)"
    assert rejected[0]["stage"] == "loss_policy"
    assert orjson.loads(rejected[0]["input"])["messages"][0]["name"] == "alice"
    assert _read_jsonl(tmp_path / "out.jsonl") == [{"input": [{"role": "user", "content": "plain"}]}]


def test_allow_loss_accepts_only_the_listed_kinds(tmp_path: Path) -> None:
    report = _policy_job(tmp_path, LossPolicy("reject", frozenset({"instruction_position"})))
    assert (report["written"], report["rejected"]) == (2, 1)
    assert report["rejected_by_reason"] == {"loss: name (on_loss = reject)": 1}


def test_unknown_loss_kind_is_a_config_error() -> None:
    with pytest.raises(ValueError, match="unknown loss kinds"):
        LossPolicy("reject", frozenset({"nope"}))


@pytest.mark.parametrize("command", ["convert", "transform"])
def test_a_run_that_rejects_everything_writes_its_files_and_exits_1(command: str, tmp_path: Path) -> None:
    """A wrong --from rejects every line: the files are in place (nothing half-done to resume), the
    summary is printed, and the command exits 1 with the verdict's one line instead of exit 0."""
    src = _write_jsonl(tmp_path / "in.jsonl", [orjson.dumps(rec) for _, rec in CASES["chat"]])
    out = tmp_path / ("out.jsonl" if command == "convert" else "out.parquet")
    argv = (["convert", str(src), "--from", "responses", "--to", "chat"] if command == "convert"
            else ["transform", str(src), "--from", "responses", "--step", "turns"])  # fmt: skip
    res = CliRunner().invoke(cli, [*argv, "-o", str(out)])
    assert res.exit_code == 1, res.output
    assert f"all {len(CASES['chat'])} records rejected" in res.output
    assert "run the command again to resume" not in res.output and "Traceback" not in res.output
    assert out.is_file() and not (tmp_path / f"{out.name}.partial").exists()
    rejected = out.with_name(out.name + (".rejected.jsonl" if command == "convert" else ".rejected.parquet"))
    assert rejected.is_file()


def test_losses_as_parquet_by_default_and_as_json_lines_on_request(tmp_path: Path) -> None:
    """The default loss report ``OUTPUT.losses.parquet`` holds the very rows of ``--losses jsonl``'s
    ``OUTPUT.losses.jsonl`` (same columns and order); the output bytes are the same either way."""
    records = [rec for _, rec in CASES["responses"]] * 2
    src = _write_jsonl(tmp_path / "in.jsonl", [orjson.dumps(r) for r in records])
    a = run_convert([src], "responses", "chat", tmp_path / "a.jsonl", "--losses", "jsonl")
    b = run_convert([src], "responses", "chat", tmp_path / "b.jsonl", "--workers", "2")
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()
    assert b["losses_file"] == str(tmp_path / "b.jsonl.losses.parquet")
    assert a["losses_file"] == str(tmp_path / "a.jsonl.losses.jsonl")
    assert not (tmp_path / "b.jsonl.losses.jsonl").exists()
    assert not (tmp_path / "a.jsonl.losses.parquet").exists()
    jsonl = _read_jsonl(tmp_path / "a.jsonl.losses.jsonl")
    table = pq.read_table(tmp_path / "b.jsonl.losses.parquet")
    assert jsonl and table.to_pylist() == jsonl
    assert table.schema.names == list(jsonl[0])
    assert a["losses_by_kind"] == b["losses_by_kind"]


@pytest.mark.parametrize("losses", ["parquet", "jsonl"])
@pytest.mark.parametrize(
    "args", [["--to", "parquet", "-o", "x.parquet"], ["--to", "chat", "--run-dir", "runs/x"]]
)
def test_losses_option_needs_a_single_wire_file(args: list[str], losses: str, tmp_path: Path) -> None:
    src = _write_jsonl(tmp_path / "in.jsonl", [orjson.dumps(CASES["responses"][0][1])])
    res = CliRunner().invoke(cli, ["convert", str(src), "--from", "responses", *args, "--losses", losses])
    assert res.exit_code == 2
    assert "--losses goes with -o FILE and a wire target" in res.output


def test_first_rejected_reads_the_rejected_file_without_arrows_dataset_scan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``transform --strict`` names the first rejected record; reading it through ``pq.read_table``
    (a dataset scan on Arrow's I/O threads) aborted the process at exit about 1 run in 15, so the
    record is read by the synchronous reader, and the same record comes back."""
    from pipeline.engine.single_file import first_rejected

    lines = [line for fmt, line, _ in BAD_LINES[:3] if fmt == "responses"]
    (tmp_path / "in.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    res = CliRunner().invoke(cli, ["transform", str(tmp_path / "in.jsonl"), "--from", "responses",
                                   "--step", "turns", "-o", str(tmp_path / "o.parquet"), "-q"])  # fmt: skip
    rejected = tmp_path / "o.parquet.rejected.parquet"
    assert rejected.exists(), res.output
    expected = pq.read_table(rejected).slice(0, 1).to_pylist()[0]

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("pq.read_table: a dataset scan on Arrow's I/O threads")

    monkeypatch.setattr(pq, "read_table", refuse)
    assert first_rejected({"rejected_file": str(rejected)}) == expected
