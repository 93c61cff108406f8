"""``chatlake export-hf``: Hub layout, features, exact rows through ``datasets``, HF -> canonical -> HF."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import datasets
import pytest
import yaml
from click.testing import CliRunner

from pipeline.cli import cli
from pipeline.encoders import convert_table
from pipeline.formats import decode_records, encode_table
from pipeline.sinks.hf_dataset import ExportConfig, export, features, push
from tests.audit.fixture import FixtureRun
from tests.helpers import assert_identical

SHARD = re.compile(r"^data/(\w+)-(\d{5})-of-(\d{5})\.parquet$")


def _load(path: Path, **kw: Any) -> Any:
    """load_dataset with a cache of its own: datasets' default cache is keyed by the folder name and
    can hand back an older export from another folder of the same name."""
    return datasets.load_dataset(str(path), cache_dir=str(path.parent / f".cache-{path.name}"), **kw)


def _expected(fx: FixtureRun) -> dict[str, dict[str, Any]]:
    """What the HF encoder makes of each written record, by conversation id (failures left out)."""
    ids = fx.conversations.column("conversation_id").to_pylist()
    return {
        cid: {"conversation_id": cid, "messages": c.record["messages"], "tools": c.record.get("tools")}
        for cid, c in zip(ids, convert_table(fx.conversations, "hf"), strict=True)
        if c.error is None
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
    assert all(r.startswith("encode: ") for r in report["excluded_by_reason"])


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
        (["export-hf", run, str(exported)], "is not empty"),
        (["export-hf", run, str(tmp_path / "a"), "--split-by", "nope"], "is not a conversations column"),
        (["export-hf", run, str(tmp_path / "b"), "--split-by", "source_file"], "not valid split names"),
        (["export-hf", str(tmp_path), str(tmp_path / "c")], "has no Parquet shards"),
    ]:
        res = CliRunner().invoke(cli, args)
        assert res.exit_code == 2, (args, res.output)
        assert message in res.output, (args, res.output)


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
    res = CliRunner().invoke(
        cli, ["export-hf", str(fixture_run.path), str(out), "--push", "me/ds", "--dry-run"]
    )
    assert res.exit_code == 0, res.output
    assert "would upload" in res.output and secret not in res.output
