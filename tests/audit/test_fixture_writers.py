"""The audit reads any run written per docs/run-layout.md: the engine's and the test-only writer's."""

from __future__ import annotations

from pathlib import Path

from pipeline.audit import load_query, open_run, query_names
from tests.audit.fixture import FixtureRun, write_test_run
from tests.audit.test_queries import REFERENCES, _close


def test_every_query_on_the_test_writers_run(fixture_run: FixtureRun, tmp_path: Path) -> None:
    fx = write_test_run(tmp_path / "run", tmp_path / "inputs")
    assert (fx.read, fx.conversations.num_rows, len(fx.rejected)) == (
        fixture_run.read,
        fixture_run.conversations.num_rows,
        len(fixture_run.rejected),
    )
    con = open_run(fx.path)
    for name in query_names():
        _close(load_query(name).run(con).to_pylist(), REFERENCES[name](fx))
