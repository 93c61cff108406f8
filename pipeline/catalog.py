"""The run catalog: every job run registered in an embedded DuckDB file.

The default file is per user, so ``chatlake runs`` lists the same runs from any directory:
``$XDG_DATA_HOME/chatlake/catalog.duckdb`` (``~/.local/share/chatlake/catalog.duckdb`` when
``XDG_DATA_HOME`` is unset); ``CHATLAKE_CATALOG`` or ``--catalog`` names another
(:func:`default_catalog`).

A run is inserted when it starts (status ``running``) and updated when it ends (``ok`` or
``failed``), so a killed run stays visible as ``running``. ``chatlake runs`` lists them. The
connection is opened per call and closed at once, so ``chatlake runs`` works while a job runs.
Values are always bound as parameters.

>>> cat = Catalog(":memory:")  # doctest: +SKIP
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb
import orjson


def default_catalog() -> Path:
    """The catalog file to use when none is given: ``CHATLAKE_CATALOG``, else the per-user one."""
    given = os.environ.get("CHATLAKE_CATALOG")
    if given:
        return Path(given)
    # XDG Base Directory spec: a relative XDG_DATA_HOME is invalid and must be ignored
    xdg = os.environ.get("XDG_DATA_HOME", "")
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".local" / "share"
    return base / "chatlake" / "catalog.duckdb"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id VARCHAR PRIMARY KEY,
    job VARCHAR NOT NULL,
    run_dir VARCHAR NOT NULL,
    engine VARCHAR,
    started_at TIMESTAMPTZ NOT NULL,
    finished_at TIMESTAMPTZ,
    status VARCHAR NOT NULL,
    "read" BIGINT,
    written BIGINT,
    rejected BIGINT,
    error VARCHAR,
    job_toml VARCHAR,
    summary JSON
)
"""

COLUMNS = ("run_id", "job", "started_at", "read", "written", "rejected", "status", "run_dir")


def _connect_retrying(path: str, read_only: bool, wait_s: float = 10.0) -> duckdb.DuckDBPyConnection:
    """DuckDB lets one process write a file at a time; another run may hold it for a moment."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            return duckdb.connect(path, read_only=read_only)
        except duckdb.IOException:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


class Catalog:
    """Runs recorded in one DuckDB file."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = str(default_catalog() if path is None else path)

    @contextmanager
    def _connect(self, read_only: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
        if not read_only:
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        con = _connect_retrying(self.path, read_only)
        try:
            if not read_only:
                con.execute(_SCHEMA)
            yield con
        finally:
            con.close()

    def start(self, run_id: str, job: str, run_dir: str, engine: str, started_at: str, job_toml: str) -> None:
        with self._connect() as con:
            con.execute(
                "INSERT INTO runs (run_id, job, run_dir, engine, started_at, status, job_toml) "
                "VALUES (?, ?, ?, ?, ?::TIMESTAMPTZ, 'running', ?)",
                [run_id, job, run_dir, engine, started_at, job_toml],
            )

    def finish(self, run_id: str, summary: dict[str, Any], status: str, error: str | None = None) -> None:
        with self._connect() as con:
            con.execute(
                "UPDATE runs SET finished_at = ?::TIMESTAMPTZ, status = ?, \"read\" = ?, written = ?, "
                "rejected = ?, error = ?, summary = ? WHERE run_id = ?",
                [
                    summary.get("finished_at"),
                    status,
                    summary.get("read"),
                    summary.get("written"),
                    summary.get("rejected"),
                    error,
                    orjson.dumps(summary).decode(),
                    run_id,
                ],
            )

    def runs(self, limit: int = 50, job: str | None = None) -> list[dict[str, Any]]:
        """The latest runs first: ``run_id, job, started_at, read, written, rejected, status, run_dir``."""
        if not Path(self.path).exists():
            return []
        with self._connect(read_only=True) as con:
            rows = con.execute(
                "SELECT run_id, job, strftime(started_at AT TIME ZONE 'UTC', '%Y-%m-%dT%H:%M:%SZ'), "
                "\"read\", written, rejected, status, run_dir FROM runs "
                "WHERE ?::VARCHAR IS NULL OR job = ? ORDER BY started_at DESC, run_id DESC LIMIT ?",
                [job, job, limit],
            ).fetchall()
        return [dict(zip(COLUMNS, r, strict=True)) for r in rows]

    def run_dir(self, run_id: str) -> str | None:
        """The run directory of ``run_id`` (or of ``latest``: the last run started), else None."""
        if not Path(self.path).exists():
            return None
        with self._connect(read_only=True) as con:
            row = con.execute(
                "SELECT run_dir FROM runs WHERE run_id = ? OR ? = 'latest' "
                "ORDER BY started_at DESC, run_id DESC LIMIT 1",
                [run_id, run_id],
            ).fetchone()
        return None if row is None else str(row[0])
