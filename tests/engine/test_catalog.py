"""The DuckDB run catalog (pipeline/catalog.py): runs recorded, listed latest first, values bound."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from pipeline.catalog import Catalog, default_catalog


def test_runs_are_listed_latest_first_and_values_are_bound(tmp_path: Path) -> None:
    cat = Catalog(tmp_path / "sub" / "c.duckdb")
    assert Catalog(tmp_path / "absent.duckdb").runs() == []
    nasty = "x'); DROP TABLE runs; --"
    cat.start("r1", nasty, "/runs/a", "local", "2026-01-01T00:00:00Z", "name = 'x'")
    cat.start("r2", "b", "/runs/b", "ray", "2026-01-02T00:00:00Z", "")
    cat.finish("r1", {"finished_at": "2026-01-01T00:01:00Z", "read": 3, "written": 2, "rejected": 1}, "ok")
    rows = cat.runs()
    assert [r["run_id"] for r in rows] == ["r2", "r1"]
    assert rows[1] == {
        "run_id": "r1", "job": nasty, "started_at": "2026-01-01T00:00:00Z", "read": 3, "written": 2,
        "rejected": 1, "status": "ok", "run_dir": "/runs/a",
    }  # fmt: skip
    assert rows[0]["status"] == "running" and rows[0]["read"] is None
    assert [r["run_id"] for r in cat.runs(job="b")] == ["r2"]
    assert [r["run_id"] for r in cat.runs(limit=1)] == ["r2"]
    con = duckdb.connect(str(tmp_path / "sub" / "c.duckdb"), read_only=True)
    summary = con.execute("SELECT summary->>'$.read' FROM runs WHERE run_id = 'r1'").fetchone()
    con.close()
    assert summary == ("3",)


def test_the_default_catalog_is_per_user_and_can_be_overridden(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert default_catalog() == tmp_path / "data" / "chatlake" / "catalog.duckdb"
    assert Catalog().path == str(tmp_path / "data" / "chatlake" / "catalog.duckdb")
    monkeypatch.setenv("XDG_DATA_HOME", "relative/dir")  # invalid per the XDG spec: ignored
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_catalog() == tmp_path / "home" / ".local" / "share" / "chatlake" / "catalog.duckdb"
    monkeypatch.delenv("XDG_DATA_HOME")
    assert default_catalog() == tmp_path / "home" / ".local" / "share" / "chatlake" / "catalog.duckdb"
    monkeypatch.setenv("CHATLAKE_CATALOG", str(tmp_path / "mine.duckdb"))
    assert default_catalog() == tmp_path / "mine.duckdb"


def test_run_dir_looks_up_a_run_id_or_the_latest_run(tmp_path: Path) -> None:
    cat = Catalog(tmp_path / "c.duckdb")
    assert cat.run_dir("latest") is None  # no catalog file yet
    cat.start("r1", "a", "/runs/a", "local", "2026-01-01T00:00:00Z", "")
    cat.start("r2", "b", "/runs/b", "local", "2026-01-02T00:00:00Z", "")
    assert (cat.run_dir("r1"), cat.run_dir("r2"), cat.run_dir("latest")) == ("/runs/a", "/runs/b", "/runs/b")
    assert cat.run_dir("r3") is None
