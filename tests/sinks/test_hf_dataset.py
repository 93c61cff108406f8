"""``chatlake export-hf``: Hub layout, features, exact rows through ``datasets``, HF -> canonical -> HF."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import datasets
import huggingface_hub
import orjson
import pyarrow as pa
import pytest
import requests
import yaml
from click.testing import CliRunner

from pipeline import codec
from pipeline.cli import cli
from pipeline.encoders.repairs import new_name
from pipeline.encoders.rule_checks import violations
from pipeline.encoders.rules import RULE
from pipeline.formats import decode_records, encode_table
from pipeline.sinks.hf_dataset import ExportConfig, default_workers, export, features, push
from tests.audit.fixture import FixtureRun
from tests.helpers import assert_identical, repaired_convert_table

SHARD = re.compile(r"^data/(\w+)-(\d{5})-of-(\d{5})\.parquet$")


def _load(path: Path, **kw: Any) -> Any:
    """load_dataset with a cache of its own: datasets' default cache is keyed by the folder name and
    can hand back an older export from another folder of the same name."""
    return datasets.load_dataset(str(path), cache_dir=str(path.parent / f".cache-{path.name}"), **kw)


def _expected(fx: FixtureRun) -> dict[str, dict[str, Any]]:
    """What the HF target's repairs and encoder make of each written record, by conversation id
    (failures and refusals left out)."""
    ids = fx.conversations.column("conversation_id").to_pylist()
    return {
        cid: {"conversation_id": cid, "messages": rec["messages"], "tools": rec.get("tools")}
        for cid, c in zip(ids, repaired_convert_table(fx.conversations, "hf"), strict=True)
        if c.error is None and (rec := orjson.loads(c.record)) is not None
    }


def _strip_nulls(row: dict[str, Any]) -> dict[str, Any]:
    """A row without null message keys: typed features fill every absent key with None, so a
    dataset row cannot tell an absent key from a null one (docs/export.md); everything else must
    be identical."""
    def strip(d: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in d.items() if v is not None}

    def message(m: dict[str, Any]) -> dict[str, Any]:
        calls = m.get("tool_calls")  # a call's id is a typed field too (absent: id-less sources)
        return strip({**m, "tool_calls": [strip(c) for c in calls] if calls else calls})

    return {**row, "messages": [message(m) for m in row["messages"]]}


@pytest.fixture(scope="module")
def exported(fixture_run: FixtureRun, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("hf") / "out"
    export(ExportConfig(fixture_run.path, out, shard_rows=7))
    return out


def test_layout_and_card(exported: Path, fixture_run: FixtureRun) -> None:
    files = sorted(str(p.relative_to(exported)) for p in (exported / "data").iterdir())
    expected = _expected(fixture_run)
    n_shards = -(-len(expected) // 7)
    assert files == [f"data/train-{k:05d}-of-{n_shards:05d}.parquet" for k in range(n_shards)]
    card = (exported / "README.md").read_text()
    meta = yaml.safe_load(card.split("---\n")[1])
    assert meta["license"] == "other"
    assert meta["configs"] == [
        {"config_name": "default", "data_files": [{"split": "train", "path": "data/train-*"}]}
    ]
    assert meta["dataset_info"]["features"] == features("trl")._to_yaml_list()
    assert meta["dataset_info"]["splits"][0]["num_examples"] == len(expected)
    summary = json.loads((fixture_run.path / "summary.json").read_text())
    kind, n = next(iter(summary["losses_by_kind"].items()))
    assert f"| {kind} | {n} |" in card
    report = json.loads((exported / "export_report.json").read_text())
    assert report["exported"] + report["excluded"] == fixture_run.conversations.num_rows
    assert report["excluded"] == fixture_run.conversations.num_rows - len(expected) > 0
    assert all(r.startswith("encode: ") or r in RULE for r in report["excluded_by_reason"])


def test_load_dataset_gives_the_encoder_rows_exactly(exported: Path, fixture_run: FixtureRun) -> None:
    ds = _load(exported)
    assert list(ds) == ["train"]
    train = ds["train"]
    assert train.features == features("trl")
    expected = _expected(fixture_run)
    rows = list(train)
    assert [r["conversation_id"] for r in rows] == list(expected)  # run order kept
    with_calls = 0
    for row in rows:
        assert_identical(_strip_nulls(row), _strip_nulls(expected[row["conversation_id"]]))
        with_calls += any(m["tool_calls"] for m in row["messages"])
    assert with_calls >= 3  # argument objects really went through the Json feature
    assert any(r["tools"] for r in rows)


def test_hf_canonical_hf_gives_back_the_same_rows(exported: Path) -> None:
    rows = list(_load(exported, split="train"))
    res = decode_records(rows, "hf")
    assert res.rejected == []
    for a, b in zip(encode_table(res.table, "hf"), rows, strict=True):
        assert_identical(a, b)


def test_openai_style_and_split_by(fixture_run: FixtureRun, tmp_path: Path) -> None:
    out = tmp_path / "o"
    report = export(ExportConfig(fixture_run.path, out, style="openai", split_by="source_format"))
    expected = _expected(fixture_run)
    conv = fixture_run.conversations
    formats = dict(
        zip(conv.column("conversation_id").to_pylist(), conv.column("source_format").to_pylist(), strict=True)
    )
    want: dict[str, int] = {}
    for cid in expected:
        want[formats[cid]] = want.get(formats[cid], 0) + 1
    assert report.splits == dict(sorted(want.items()))
    files = sorted(str(p.relative_to(out)) for p in (out / "data").iterdir())
    assert [SHARD.match(f).group(1) for f in files] == sorted(want)  # type: ignore[union-attr]
    ds = _load(out)
    assert sorted(ds) == sorted(want)
    for split, d in ds.items():
        assert d.features == features("openai")
        for row in d:
            assert formats[row["conversation_id"]] == split
            want_row = expected[row["conversation_id"]]
            for m, e in zip(row["messages"], want_row["messages"], strict=True):
                for c, ec in zip(m["tool_calls"] or [], e.get("tool_calls", []), strict=True):
                    assert isinstance(c["function"]["arguments"], str)
                    assert_identical(json.loads(c["function"]["arguments"]), ec["function"]["arguments"])


def test_bad_config_exits_2(fixture_run: FixtureRun, exported: Path, tmp_path: Path) -> None:
    run = str(fixture_run.path)
    for args, message in [
        (["export-hf", run, str(exported)], f"{str(exported)!r} holds an earlier chatlake export; pass"),
        (["export-hf", run, str(tmp_path / "a"), "--split-by", "nope"], "is not a conversations column"),
        (["export-hf", run, str(tmp_path / "b"), "--split-by", "source_file"], "not valid split names"),
        (["export-hf", str(tmp_path), str(tmp_path / "c")], "has no Parquet shards"),
        (["export-hf", run, str(tmp_path / "d"), "--dry-run"], "--dry-run checks an upload"),
    ]:
        res = CliRunner().invoke(cli, args)
        assert res.exit_code == 2, (args, res.output)
        assert message in res.output, (args, res.output)
    assert not any((tmp_path / x).exists() for x in "abcd")  # nothing written


def test_push_dry_run_never_shows_the_token(
    fixture_run: FixtureRun, exported: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))  # no stored token from the machine
    monkeypatch.delenv("HF_TOKEN", raising=False)
    with pytest.raises(Exception, match="needs a Hugging Face token"):
        push(exported, "me/ds", dry_run=True)
    secret = "hf_" + "x" * 34
    monkeypatch.setenv("HF_TOKEN", secret)
    plan = push(exported, "me/ds", dry_run=True)
    n_files = sum(1 for p in exported.rglob("*") if p.is_file())
    assert plan == f"would upload {n_files} files to datasets/me/ds"
    out = tmp_path / "cli-out"
    seen: list[bool] = []

    def whoami(self: object, *a: object, **kw: object) -> dict[str, str]:
        seen.append(out.exists())
        return {"name": "me"}

    monkeypatch.setattr(huggingface_hub.HfApi, "whoami", whoami)
    res = CliRunner().invoke(
        cli, ["export-hf", str(fixture_run.path), str(out), "--push", "me/ds", "--dry-run"]
    )
    assert res.exit_code == 0, res.output
    assert seen == [False]  # the token was checked with the Hub before anything was written
    assert "would upload" in res.output and "account 'me'" in res.output and secret not in res.output


def test_push_checks_the_token_before_writing_anything(
    fixture_run: FixtureRun, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """No token: exit 2; a refused token: exit 2; no network: exit 1, one line; OUT_DIR never created."""
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.delenv("HF_TOKEN", raising=False)
    out = tmp_path / "out"
    args = ["export-hf", str(fixture_run.path), str(out), "--push", "me/ds", "--dry-run"]
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 2 and "needs a Hugging Face token" in res.output, res.output
    secret = "hf_" + "y" * 34
    monkeypatch.setenv("HF_TOKEN", secret)

    def offline(self: object, *a: object, **kw: object) -> None:
        raise requests.ConnectionError(f"Max retries exceeded (token {secret})")

    monkeypatch.setattr(huggingface_hub.HfApi, "whoami", offline)
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 1, res.output
    assert res.output.strip().count("\n") == 0 and "Traceback" not in res.output and secret not in res.output
    assert "could not reach the Hugging Face Hub to check the token (ConnectionError)" in res.output

    def refused(self: object, *a: object, **kw: object) -> None:
        response = requests.Response()
        response.status_code = 401
        raise huggingface_hub.errors.HfHubHTTPError("401 Unauthorized", response=response)

    monkeypatch.setattr(huggingface_hub.HfApi, "whoami", refused)
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 2 and "refused the token (HTTP 401)" in res.output, res.output
    assert secret not in res.output and not out.exists()


def test_push_without_network_fails_in_one_line(fixture_run: FixtureRun, tmp_path: Path) -> None:
    """The real huggingface_hub, offline (HF_HUB_OFFLINE=1 makes every Hub call fail at once)."""
    env = {**os.environ, "HF_TOKEN": "hf_" + "z" * 34, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "h")}
    out = tmp_path / "out"
    res = subprocess.run(
        [sys.executable, "-m", "pipeline", "export-hf", str(fixture_run.path), str(out), "--push", "me/ds",
         "--dry-run"], capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    assert res.returncode == 1, res.stderr
    assert res.stderr.startswith("Error: could not reach the Hugging Face Hub"), res.stderr
    assert res.stderr.count("\n") == 1
    assert "hf_zzz" not in res.stderr + res.stdout and not out.exists()


def test_a_second_export_says_how_to_proceed_and_overwrites_only_its_own_files(
    fixture_run: FixtureRun, tmp_path: Path
) -> None:
    run, out = str(fixture_run.path), tmp_path / "out"
    first = CliRunner().invoke(cli, ["export-hf", run, str(out), "--shard-rows", "7"])
    assert first.exit_code == 0, first.output
    before = sorted(p.relative_to(out).as_posix() for p in out.rglob("*"))
    again = CliRunner().invoke(cli, ["export-hf", run, str(out)])
    assert again.exit_code == 2 and "pass --overwrite to replace it" in again.output
    assert str(out) in again.output and "Traceback" not in again.output
    res = CliRunner().invoke(cli, ["export-hf", run, str(out), "--overwrite"])  # 1 shard instead of several
    assert res.exit_code == 0, res.output
    after = sorted(p.relative_to(out).as_posix() for p in out.rglob("*"))
    # the fixture run has records the HF rules repair: their losses are in repairs.jsonl
    assert after == ["README.md", "data", "data/train-00000-of-00001.parquet", "export_report.json",
                     "repairs.jsonl"] != before  # fmt: skip
    report = json.loads((out / "export_report.json").read_text())
    assert sorted(report["sha256"]) == ["README.md", "data/train-00000-of-00001.parquet", "repairs.jsonl"]
    assert len(list(_load(out, split="train"))) == report["exported"]
    # a file of the user's, or a card edited after the export: refused even with --overwrite
    for k, (name, text, why) in enumerate([
        ("notes.txt", "mine", "notes.txt was not written by export-hf"),
        ("README.md", "license: mit", "README.md was changed after the export"),
    ]):  # fmt: skip
        case = tmp_path / f"case{k}"
        assert CliRunner().invoke(cli, ["export-hf", run, str(case)]).exit_code == 0
        (case / name).write_text(text)
        kept = {p: p.read_bytes() for p in case.rglob("*") if p.is_file()}
        res = CliRunner().invoke(cli, ["export-hf", run, str(case), "--overwrite"])
        assert res.exit_code == 2 and why in res.output and "choose a new directory" in res.output, res.output
        assert {p: p.read_bytes() for p in case.rglob("*") if p.is_file()} == kept
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "keep.txt").write_text("x")
    res = CliRunner().invoke(cli, ["export-hf", run, str(foreign), "--overwrite"])
    assert res.exit_code == 2 and "no export_report.json" in res.output
    assert (foreign / "keep.txt").read_text() == "x"


@pytest.mark.parametrize("error", [KeyboardInterrupt, OSError(28, "No space left on device")])
def test_an_interrupted_export_leaves_nothing_half_written(
    fixture_run: FixtureRun, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, error: BaseException
) -> None:
    """Ctrl-C or a full disk after the data files: they are removed, and the same command works again."""
    import pipeline.sinks.hf_dataset as hf_dataset

    def card(*a: object, **kw: object) -> str:
        assert list((out / "data").iterdir())  # the shards were written by now
        raise error

    out = tmp_path / "out"
    real = hf_dataset.dataset_card
    monkeypatch.setattr(hf_dataset, "dataset_card", card)
    res = CliRunner().invoke(cli, ["export-hf", str(fixture_run.path), str(out), "--shard-rows", "7"])
    interrupted = error is KeyboardInterrupt
    code, said = (130, "interrupted: nothing was kept") if interrupted else (1, "no space left on the device")
    assert res.exit_code == code and said in res.output, res.output
    assert "Aborted!" not in res.output and "Traceback" not in res.output
    assert not out.exists()
    monkeypatch.setattr(hf_dataset, "dataset_card", real)
    res = CliRunner().invoke(cli, ["export-hf", str(fixture_run.path), str(out)])
    assert res.exit_code == 0, res.output


REASONING_ROWS = [
    {"messages": [{"role": "user", "content": "What is 2+2?"},
                  {"role": "assistant", "reasoning_content": "Add them.", "content": "4"}]},
    {"messages": [{"role": "user", "content": "Weather in Paris?"},
                  {"role": "assistant", "content": None, "reasoning_content": "Call the tool.",
                   "tool_calls": [{"id": "c1", "type": "function",
                                   "function": {"name": "get", "arguments": {"city": "Paris", "n": 1.0}}}]},
                  {"role": "tool", "tool_call_id": "c1", "name": "get", "content": "sunny"},
                  {"role": "assistant", "content": "Sunny.", "thinking": "gpt-oss keeps it here"}],
     "tools": [{"type": "function", "function": {"name": "get", "parameters": {"type": "object"}}}]},
    {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]},
]  # fmt: skip


def test_reasoning_content_and_argument_objects_are_exported(tmp_path: Path) -> None:
    """What Qwen3 / DeepSeek-R1 (``reasoning_content``) and gpt-oss (``thinking``) templates read
    reaches the dataset; a reasoning key that is not text is excluded with its reason."""
    bad = {"messages": [{"role": "assistant", "content": "x", "reasoning_content": ["not", "text"]}]}
    src = tmp_path / "hf.jsonl"
    src.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in [*REASONING_ROWS, bad]))
    res = CliRunner().invoke(cli, ["convert", str(src), "--from", "hf", "--to", "parquet", "--run-dir",
                                   str(tmp_path / "run"), "-q"])  # fmt: skip
    assert res.exit_code == 0, res.output
    res = CliRunner().invoke(cli, ["export-hf", str(tmp_path / "run"), str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    report = json.loads((tmp_path / "out" / "export_report.json").read_text())
    assert (report["exported"], report["excluded"]) == (3, 1)
    assert report["excluded_by_reason"] == {
        "message key 'reasoning_content' is not a string (chat templates read it as text)": 1
    }
    rows = list(_load(tmp_path / "out", split="train"))
    for row, want in zip(rows, REASONING_ROWS, strict=True):
        assert_identical(_strip_nulls(row)["messages"], _strip_nulls(want)["messages"])
    call = rows[1]["messages"][1]["tool_calls"][0]["function"]["arguments"]
    assert_identical(call, {"city": "Paris", "n": 1.0})  # an object, as templates take it


CHAT_REASONING = {
    "model": "deepseek-reasoner",
    "messages": [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": None, "reasoning_content": "Call the tool.",
         "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
        {"role": "assistant", "content": "Sunny.", "reasoning_content": "Say it.", "thinking": "gpt-oss"},
    ],
}  # fmt: skip


def test_chat_reasoning_content_is_exported(tmp_path: Path) -> None:
    """``export-hf`` of a Chat run: the ``reasoning_content`` / ``thinking`` features get the
    assistant's text (the row was excluded for an ``unknown_field`` key before)."""
    src = tmp_path / "chat.jsonl"
    src.write_bytes(orjson.dumps(CHAT_REASONING) + b"\n")
    res = CliRunner().invoke(cli, ["convert", str(src), "--from", "chat", "--to", "parquet", "--run-dir",
                                   str(tmp_path / "run"), "-q"])  # fmt: skip
    assert res.exit_code == 0, res.output
    res = CliRunner().invoke(cli, ["export-hf", str(tmp_path / "run"), str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    report = json.loads((tmp_path / "out" / "export_report.json").read_text())
    assert (report["exported"], report["excluded"]) == (1, 0), report
    [row] = list(_load(tmp_path / "out", split="train"))
    got = [(m["role"], m["reasoning_content"], m["thinking"]) for m in row["messages"]]
    assert got == [("user", None, None), ("assistant", "Call the tool.", None), ("tool", None, None),
                   ("assistant", "Say it.", "gpt-oss")]  # fmt: skip


TAU_LOG = [
    {"task_id": 10 + i, "reward": [1.0, 0.0, 0.5][i], "trial": 0,
     "traj": [{"role": "system", "content": "You are an airline agent."},
              {"role": "user", "content": f"change flight {i}"},
              {"role": "assistant", "content": f"done {i}"}]}
    for i in range(3)
]  # fmt: skip


def test_columns_carry_metadata_into_the_dataset_and_its_card(tmp_path: Path) -> None:
    """--columns: the source, sample id, model and tau-bench reward of each conversation, typed in
    the card's features; a name that is no scalar column fails before any work (exit 2)."""
    (tmp_path / "tau.json").write_bytes(orjson.dumps(TAU_LOG))
    run = tmp_path / "run"
    res = CliRunner().invoke(cli, ["convert", str(tmp_path / "tau.json"), "--from", "auto", "--to", "chat",
                                   "--run-dir", str(run), "-q"])  # fmt: skip
    assert res.exit_code == 0, res.output
    out = tmp_path / "hf"
    res = CliRunner().invoke(cli, ["export-hf", str(run), str(out), "--columns",
                                   "source,sample_id,reward,model,source_file", "-q"])  # fmt: skip
    assert res.exit_code == 0, res.output
    train = _load(out, split="train")
    assert train.features == features("trl", {
        "source": pa.string(), "sample_id": pa.string(), "reward": pa.float64(), "model": pa.string(),
        "source_file": pa.string(),
    })  # fmt: skip
    rows = sorted(train, key=lambda r: r["sample_id"])
    assert [(r["source"], r["sample_id"], r["reward"]) for r in rows] == [
        ("tau-bench", "10", 1.0), ("tau-bench", "11", 0.0), ("tau-bench", "12", 0.5)
    ]
    assert all(r["source_file"] == str(tmp_path / "tau.json") and r["model"] is None for r in rows)
    meta = yaml.safe_load((out / "README.md").read_text().split("---\n")[1])
    names = [f["name"] for f in meta["dataset_info"]["features"]]
    assert names == ["conversation_id", "messages", "tools", "source", "sample_id", "reward", "model",
                     "source_file"]  # fmt: skip
    bad = CliRunner().invoke(cli, ["export-hf", str(run), str(tmp_path / "x"), "--columns", "items"])
    assert bad.exit_code == 2 and "--columns 'items' is not a text or number column" in bad.output
    assert "source_file" in bad.output and not (tmp_path / "x").exists()


def test_batches_on_worker_processes_give_the_same_dataset(fixture_run: FixtureRun, tmp_path: Path) -> None:
    """Converted on 2 and 3 processes (this one and 1 or 2 more), a few rows at a time, and streamed
    into shards: the same files' rows, in run order, as in one process; the progress counts every
    conversation once."""
    from concurrent.futures import ProcessPoolExecutor

    from pipeline.engine import progress

    seen: list[int] = []
    real = progress.JobProgress.advance

    def advance(self: progress.JobProgress, records: int, nbytes: int) -> None:
        seen.append(records)
        real(self, records, nbytes)

    started: list[int] = []  # processes each pool started
    pool_init = ProcessPoolExecutor.__init__

    def init(self: ProcessPoolExecutor, max_workers: int, **kw: object) -> None:
        started.append(max_workers)
        pool_init(self, max_workers, **kw)  # type: ignore[arg-type]

    tables = []
    for workers in (1, 2, 3):
        out = tmp_path / f"w{workers}"
        seen.clear()
        with pytest.MonkeyPatch.context() as m:
            m.setattr(progress.JobProgress, "advance", advance)
            m.setattr(ProcessPoolExecutor, "__init__", init)
            export(ExportConfig(fixture_run.path, out, shard_rows=7, workers=workers, batch_rows=4,
                                columns=("source_format",)))  # fmt: skip
        assert sum(seen) == fixture_run.conversations.num_rows and max(seen) <= 4
        files = sorted((out / "data").glob("*.parquet"))
        import pyarrow.parquet as pq

        assert all(pq.ParquetFile(f).metadata.num_rows == 7 for f in files[:-1])
        tables.append(pa.concat_tables([pq.read_table(f) for f in files]))
        report = json.loads((out / "export_report.json").read_text())
    assert all(t.equals(tables[0]) for t in tables) and tables[0].num_rows == report["exported"]
    assert started == [1, 2]  # --workers N: this process converts too, beside N - 1 more


def test_overwrite_deletes_nothing_a_planted_report_points_outside_with(
    fixture_run: FixtureRun, tmp_path: Path
) -> None:
    """A downloaded export can carry an ``export_report.json`` listing ``../victim.txt`` or an
    absolute path: --overwrite deletes only listed files inside OUT_DIR whose size and sha256 match."""
    import hashlib

    run, out = str(fixture_run.path), tmp_path / "out"
    assert CliRunner().invoke(cli, ["export-hf", run, str(out)]).exit_code == 0
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    sha = hashlib.sha256(victim.read_bytes()).hexdigest()
    report = json.loads((out / "export_report.json").read_text())
    report["sha256"] |= {"../victim.txt": sha, str(victim): sha}
    (out / "export_report.json").write_text(json.dumps(report))
    res = CliRunner().invoke(cli, ["export-hf", run, str(out), "--overwrite"])
    assert res.exit_code == 0, res.output
    assert victim.read_text() == "precious"
    assert "left alone" in res.stderr and "../victim.txt" in res.stderr, res.stderr
    assert sorted(json.loads((out / "export_report.json").read_text())["sha256"]) == [
        "README.md", "data/train-00000-of-00001.parquet", "repairs.jsonl"
    ]



LONG_NAME = "lookup_" + "x" * 70
# Converted to Chat by a job, these records are exported to HF: the HF target's rules apply there.
RULE_RECORDS = [
    {  # Codex: a developer note between a call and its output (moved after the output)
        "input": [
            {"role": "user", "content": "list"},
            {"type": "function_call", "call_id": "c1", "name": "ls", "arguments": "{}"},
            {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "sandbox"}]},
            {"type": "function_call_output", "call_id": "c1", "output": "a b"},
            {"role": "assistant", "content": "two files"},
        ]
    },
    {  # a tool name longer than 64 characters (renamed with a hash suffix everywhere)
        "input": [
            {"role": "user", "content": "look"},
            {"type": "function_call", "call_id": "c1", "name": LONG_NAME, "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "found"},
        ],
        "tools": [{"type": "function", "name": LONG_NAME, "parameters": {"type": "object"}}],
    },
]
# Written as they are by a Chat run (the run's own format), refused by the HF rules at export.
UNREPAIRABLE = [
    {"messages": []},  # hf.messages_nonempty
    {  # a call nobody answers: hf.tool_results_follow_call (no repair fits)
        "messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": None,
             "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]},
        ]
    },
]  # fmt: skip


def test_export_repairs_or_refuses_records_that_break_an_hf_rule(tmp_path: Path) -> None:
    """export-hf goes through the HF target's rules as ``convert --to hf`` does: a Codex developer
    note between a call and its output moves after the output and a too-long tool name gets a
    hash-suffixed name, both exported with their losses in repairs.jsonl and counted by kind; a
    record no repair fits is not in the dataset and is counted under its rule's id; every row of
    the dataset passes the HF rules."""
    (tmp_path / "responses.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in RULE_RECORDS))
    (tmp_path / "chat.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in UNREPAIRABLE))
    run = tmp_path / "run"
    inputs = [str(tmp_path / "responses.jsonl"), str(tmp_path / "chat.jsonl")]
    args = ["--from", "auto", "--to", "chat", "--run-dir", str(run), "-q"]
    res = CliRunner().invoke(cli, ["convert", *inputs, *args])
    assert res.exit_code == 0, res.output
    summary = json.loads((run / "summary.json").read_text())
    assert (summary["written"], summary["rejected"]) == (4, 0), summary  # Chat rows are written as read
    out = tmp_path / "hf"
    res = CliRunner().invoke(cli, ["export-hf", str(run), str(out), "-q"])
    assert res.exit_code == 0, res.output
    report = json.loads((out / "export_report.json").read_text())
    assert (report["exported"], report["excluded"], report["repaired"]) == (2, 2, 2), report
    assert report["exported"] + report["excluded"] == summary["written"]
    assert report["excluded_by_reason"] == {"hf.messages_nonempty": 1, "hf.tool_results_follow_call": 1}
    assert report["repairs_by_kind"] == {"tool_name": 2, "moved_message": 1}
    new = new_name(LONG_NAME)
    assert len(new) == 64 and new.startswith("lookup_x")
    repairs = [orjson.loads(line) for line in (out / "repairs.jsonl").read_bytes().splitlines()]
    assert sorted(loss["detail"] for r in repairs for loss in r["losses"]) == sorted([
        "hf.tool_results_follow_call: a developer message between a tool call and its result moved to "
        "after the result at /input/3",
        f"hf.tool_name: '{LONG_NAME}' -> '{new}'",
        f"hf.tool_name: '{LONG_NAME}' -> '{new}'",
    ])  # fmt: skip
    assert report["sha256"]["repairs.jsonl"] and "repairs.jsonl" in (out / "README.md").read_text()
    rows = list(_load(out, split="train"))
    assert {r["conversation_id"] for r in rows} == {r["conversation_id"] for r in repairs}
    by_first = {r["messages"][0]["content"]: r for r in rows}
    roles = [m["role"] for m in by_first["list"]["messages"]]
    assert roles == ["user", "assistant", "tool", "system", "assistant"]
    text = orjson.dumps(by_first["look"]).decode()
    assert LONG_NAME not in text and text.count(new) == 3  # the tool, the call, its tool message
    # what `chatlake check --as hf` checks: every exported row passes the HF rules
    decoded = decode_records(rows, "hf")
    assert decoded.rejected == []
    assert violations(decoded.table, "hf").to_dicts() == []


def test_default_workers_follow_the_codec(monkeypatch: pytest.MonkeyPatch) -> None:
    """One process when the compiled HF encoder converts (a batch costs less to convert than to hand
    over); up to 2, one a core, when the per-record Python encoder does."""
    monkeypatch.delenv(codec.ENV, raising=False)
    if codec.native_encoder("hf") is not None:
        assert default_workers() == 1
    monkeypatch.setenv(codec.ENV, "0")
    assert default_workers() == min(2, os.cpu_count() or 1)
