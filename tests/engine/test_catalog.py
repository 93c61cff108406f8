"""The DuckDB run catalog (pipeline/catalog.py): runs recorded, listed latest first, values bound."""

from __future__ import annotations

from pathlib import Path

import duckdb

from pipeline.catalog import Catalog


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
