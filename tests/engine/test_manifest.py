"""The manifest grows by one journal line per finished shard (engine/manifest.py): ``manifest.json``
is not rewritten per shard, reading it applies the journal, a line cut short by a kill is ignored,
and saving folds the journal in, to the bytes a manifest saved whole would have."""

from __future__ import annotations

from pathlib import Path

import orjson

from pipeline.engine.manifest import JOURNAL, MANIFEST, Manifest, read


def _entry(k: int, rows: int = 1) -> dict:
    return {"id": f"part-{k:05d}", "read": rows, "files": {}}


def test_adding_shards_appends_one_line_each_and_leaves_the_manifest_alone(tmp_path: Path) -> None:
    m = Manifest(tmp_path, "job", "fp")
    m.add(_entry(0))  # the first shard writes manifest.json whole: the directory is a run from now on
    first = (tmp_path / MANIFEST).read_bytes()
    inode = (tmp_path / MANIFEST).stat().st_ino
    for k in range(1, 300):
        m.add(_entry(k))
    assert (tmp_path / MANIFEST).read_bytes() == first
    assert (tmp_path / MANIFEST).stat().st_ino == inode  # not replaced either
    lines = (tmp_path / JOURNAL).read_bytes().splitlines()
    assert len(lines) == 299
    assert sum(len(line) + 1 for line in lines) == (tmp_path / JOURNAL).stat().st_size
    assert [s["id"] for s in read(tmp_path)["shards"]] == [f"part-{k:05d}" for k in range(300)]
    assert len(Manifest.open(tmp_path, "job", "fp").shards) == 300


def test_a_later_line_replaces_an_earlier_one_and_a_cut_line_is_ignored(tmp_path: Path) -> None:
    m = Manifest(tmp_path, "job", "fp")
    for k in range(3):
        m.add(_entry(k))
    m.add(_entry(1, rows=7))  # a shard's entry listed again (a rewritten file): the last one counts
    m.add_partition({"id": "part-00000", "files": {}})
    with open(tmp_path / JOURNAL, "ab") as f:
        f.write(b'{"shards": {"id": "part-00003", "re')  # a kill in the middle of a line
    doc = read(tmp_path)
    assert [(s["id"], s["read"]) for s in doc["shards"]] == [
        ("part-00000", 1), ("part-00001", 7), ("part-00002", 1)]  # fmt: skip
    assert [p["id"] for p in doc["partitions"]] == ["part-00000"]
    opened = Manifest.open(tmp_path, "job", "fp")
    assert sorted(opened.shards) == ["part-00000", "part-00001", "part-00002"]


def test_saving_folds_the_journal_in_to_the_bytes_of_a_whole_save(tmp_path: Path) -> None:
    journaled, whole = tmp_path / "a", tmp_path / "b"
    journaled.mkdir(), whole.mkdir()
    m = Manifest(journaled, "job", "fp")
    for k in range(5):
        m.add(_entry(k))
    m.save()
    assert not (journaled / JOURNAL).exists()
    w = Manifest(whole, "job", "fp")
    w.shards = {e["id"]: e for e in (_entry(k) for k in range(5))}
    w.save()
    assert (journaled / MANIFEST).read_bytes() == (whole / MANIFEST).read_bytes()
    assert orjson.loads((journaled / MANIFEST).read_bytes())["shards"][4]["id"] == "part-00004"
