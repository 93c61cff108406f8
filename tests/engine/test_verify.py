"""``chatlake verify``: a finished run is OK; each kind of damage is named, with exit 1."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from pipeline import synth
from pipeline.cli import cli
from pipeline.engine import run_job
from pipeline.engine.verify import damaged_files, quick_check, verify
from pipeline.engine.writers import sha256_file
from pipeline.jobs import load_job
from tests.engine.helpers import write_job


@pytest.fixture(scope="module")
def good_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("verify")
    synth.write_jsonl(base / "in.jsonl", "responses", 60, 2)
    with open(base / "in.jsonl", "ab") as f:
        f.write(b"{not json\n")
    job = write_job(base / "job.toml", [{"path": "in.jsonl", "format": "responses"}],
                    {"path": "run", "target": "chat", "shard_records": 20},
                    engine={"workers": 1})  # fmt: skip
    summary = run_job(load_job(job))
    assert summary["rejected"] == 1 and summary["records_with_losses"] > 0 and summary["shards"] == 4
    return base / "run"


@pytest.fixture
def run(good_run: Path, tmp_path: Path) -> Path:
    shutil.copytree(good_run, tmp_path / "run")
    return tmp_path / "run"


def _relist(run: Path, rel: str, **fields: int) -> None:
    """Make manifest.json agree with the file ``rel`` as it is now (so only deeper checks can tell)."""
    doc = orjson.loads((run / "manifest.json").read_bytes())
    for s in doc["shards"]:
        for f in s["files"].values():
            if f["path"] == rel:
                f.update(bytes=(run / rel).stat().st_size, sha256=sha256_file(run / rel), **fields)
    (run / "manifest.json").write_bytes(orjson.dumps(doc))


def _set_summary(run: Path, **values: int) -> None:
    doc = orjson.loads((run / "summary.json").read_bytes())
    doc.update(values)
    (run / "summary.json").write_bytes(orjson.dumps(doc))


def test_a_finished_run_is_ok(good_run: Path) -> None:
    assert verify(good_run) == [] and quick_check(good_run) == [] and damaged_files(good_run) == []
    res = CliRunner().invoke(cli, ["verify", str(good_run)])
    assert res.exit_code == 0, res.output
    ok = f"OK {good_run}: 4 shards complete and as listed; read 61 = written 60 + rejected 1\n"
    assert res.output == ok


def _truncate(run: Path) -> None:
    p = run / "items" / "part-00002.parquet"
    p.write_bytes(p.read_bytes()[:-10])


def _flip(run: Path) -> None:
    p = run / "losses" / "part-00001.parquet"
    data = bytearray(p.read_bytes())
    data[len(data) // 2] ^= 0x40
    p.write_bytes(bytes(data))


def _orphan_loss(run: Path) -> None:
    rel = "losses/part-00000.parquet"
    t = pq.read_table(run / rel)
    ids = t.column("conversation_id").to_pylist()
    ids[0] = "written-by-nobody"
    pq.write_table(t.set_column(0, "conversation_id", pa.array(ids, pa.string())), run / rel)
    _relist(run, rel)


def _extra_output_line(run: Path) -> None:
    rel = "output/part-00003.jsonl"
    with open(run / rel, "ab") as f:
        f.write(b'{"messages": []}\n')
    _relist(run, rel, rows=orjson.loads((run / "manifest.json").read_bytes())["shards"][3]["written"] + 1)


def _unlisted_shard(run: Path) -> None:
    doc = orjson.loads((run / "manifest.json").read_bytes())
    doc["shards"] = doc["shards"][:-1]
    (run / "manifest.json").write_bytes(orjson.dumps(doc))


def _counts(run: Path) -> None:
    doc = orjson.loads((run / "manifest.json").read_bytes())
    doc["shards"][1]["written"] += 1
    (run / "manifest.json").write_bytes(orjson.dumps(doc))


def _incomplete(run: Path) -> None:
    doc = orjson.loads((run / "manifest.json").read_bytes())
    del doc["shards"][2]["files"]["rejected"]
    (run / "manifest.json").write_bytes(orjson.dumps(doc))
    (run / "rejected" / "part-00002.parquet").unlink()


def _stray_temp(run: Path) -> None:
    (run / "losses" / ".part-00009.parquet.7.tmp").write_text("x")


SUMMARY_SAYS = "summary.json: read 61, the shards of manifest.json add up to 60"
DAMAGE: dict[str, tuple[Callable[[Path], None], list[str]]] = {
    "truncated": (_truncate, ["items/part-00002.parquet: 1"]),
    "bit flip": (_flip, ["losses/part-00001.parquet: sha256 differs"]),
    "deleted": (
        lambda r: (r / "output" / "part-00000.jsonl").unlink(),
        ["output/part-00000.jsonl: missing"],
    ),
    "stray": (lambda r: (r / "output" / "notes.txt").write_text("x"), ["output/notes.txt: stray file"]),
    "temp": (_stray_temp, ["part-00009.parquet.7.tmp: stray"]),
    "orphan loss": (
        _orphan_loss,
        ["losses/part-00000.parquet: losses of records not written by shard part-00000: "
         "'written-by-nobody' (1)"],
    ),
    "output line": (_extra_output_line, ["output/part-00003.jsonl: 1 lines, but shard part-00003 wrote 0"]),
    "unlisted": (
        _unlisted_shard,
        ["conversations/part-00003.parquet: stray file", SUMMARY_SAYS,
         "summary.json: shards 4, manifest.json lists 3"],
    ),
    "counts": (
        _counts,
        ["part-00001: read 20 != written 21 + rejected 0",
         "conversations/part-00001.parquet: 20 rows, but shard part-00001 wrote 21",
         "manifest.json: read 61 != written 61 + rejected 1"],
    ),
    "summary": (
        lambda r: _set_summary(r, written=59),
        ["summary.json: written 59, the shards of manifest.json add up to 60"],
    ),
    "incomplete": (_incomplete, ["part-00002: no rejected/ file listed (an incomplete shard)"]),
}  # fmt: skip


@pytest.mark.parametrize("damage", DAMAGE)
def test_each_kind_of_damage_is_named(run: Path, damage: str) -> None:
    make, expected = DAMAGE[damage]
    make(run)
    problems = verify(run)
    for e in expected:
        assert any(e in p for p in problems), (e, problems)
    res = CliRunner().invoke(cli, ["verify", str(run)])
    assert res.exit_code == 1, res.output
    assert res.output.splitlines()[0] == f"{run}: {len(problems)} problem{'s' * (len(problems) > 1)}"


def test_verify_of_no_directory_exits_2(tmp_path: Path) -> None:
    res = CliRunner().invoke(cli, ["verify", str(tmp_path / "nope")])
    assert res.exit_code == 2 and "does not exist" in res.output
