"""The audit facts (records/, *_counts/): written by the engine, equal to the views derived in SQL, and
runs without them (written before, or resumed across the change) still audited correctly."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.audit import load_query, open_run, query_names
from pipeline.audit.derived import DERIVED
from pipeline.audit.views import written_facts
from pipeline.io.record_index import TOP_LOSSES
from pipeline.io.shard_counts import SCHEMAS
from pipeline.losses import ADDITIONS
from tests.audit.fixture import FixtureRun
from tests.audit.test_queries import REFERENCES, _close
from tests.audit.test_queries import ref_worst_records as REF_WORST
from tests.engine.helpers import relist

FACTS = list(DERIVED)


def _copy(fx: FixtureRun, tmp_path: Path) -> Path:
    run = tmp_path / "run"
    shutil.copytree(fx.path, run)
    return run


def test_the_engine_writes_every_fact_for_every_shard(fixture_run: FixtureRun) -> None:
    assert written_facts(fixture_run.path) == FACTS
    shards = sorted(p.name for p in (fixture_run.path / "conversations").glob("*.parquet"))
    assert len(shards) > 3
    con = open_run(fixture_run.path)
    [(n, written, rejected)] = con.sql(
        "SELECT count(*), count(*) FILTER (status = 'written'), count(*) FILTER (status = 'rejected') "
        "FROM records"
    ).fetchall()
    assert (n, written, rejected) == (
        fixture_run.read, fixture_run.conversations.num_rows, len(fixture_run.rejected)
    )  # fmt: skip


def _derived(run: Path) -> duckdb.DuckDBPyConnection:
    """A connection whose fact views are the SQL-derived ones, whatever the run has on disk."""
    con = open_run(run)
    for sql in DERIVED.values():
        con.execute(sql)
    return con


def test_written_records_equal_the_derived_view(fixture_run: FixtureRun) -> None:
    written = open_run(fixture_run.path)
    derived = _derived(fixture_run.path)
    cols = "* EXCLUDE (shard)"
    order = "ORDER BY status, source_file, source_line"
    a = written.sql(f"SELECT {cols} FROM records {order}").to_arrow_table()
    b = derived.sql(f"SELECT {cols} FROM records {order}").to_arrow_table()
    assert a.num_rows == fixture_run.read
    assert a.to_pylist() == b.to_pylist()
    shards = written.sql("SELECT DISTINCT shard FROM records ORDER BY 1").fetchall()
    assert [s for (s,) in shards] == sorted(p.stem for p in (fixture_run.path / "records").glob("*.parquet"))


@pytest.mark.parametrize("name", list(SCHEMAS))
def test_shard_counts_sum_to_the_derived_view(fixture_run: FixtureRun, name: str) -> None:
    """Per-shard rows summed per key equal the counts derived over the whole run."""
    schema = SCHEMAS[name]
    counts = [f.name for f in schema if pa.types.is_int64(f.type)]  # the rest are group keys
    keys = [n for n in schema.names if n not in counts]
    agg = ", ".join(f"{'max' if n.startswith('max_') else 'sum'}({n})::BIGINT AS {n}" for n in counts)
    key_list = ", ".join(keys)
    sql = f"SELECT {key_list}, {agg} FROM {name} GROUP BY ALL ORDER BY ALL"
    a = open_run(fixture_run.path).sql(sql).fetchall()
    b = _derived(fixture_run.path).sql(sql).fetchall()
    assert a and a == b


@pytest.mark.parametrize("missing", ["all", "one_shard"])
def test_runs_without_the_facts_are_audited_from_the_old_tables(
    fixture_run: FixtureRun, tmp_path: Path, missing: str
) -> None:
    """A run written before the facts (no folders), or resumed across the change (some shards lack them)."""
    run = _copy(fixture_run, tmp_path)
    for name in FACTS:
        if missing == "all":
            shutil.rmtree(run / name)
        else:
            (run / name / "part-00001.parquet").unlink()
    assert written_facts(run) == []
    # as that run's manifest would be: it lists only the files its shards have
    doc = json.loads((run / "manifest.json").read_text())
    for s in doc["shards"]:
        s["files"] = {k: f for k, f in s["files"].items() if (run / f["path"]).is_file()}
    (run / "manifest.json").write_text(json.dumps(doc))
    con = open_run(run)
    for name in query_names():
        _close(load_query(name).run(con).to_pylist(), REFERENCES[name](fixture_run))


def test_the_documented_cli_views_answer_every_query(fixture_run: FixtureRun) -> None:
    """docs/audit.md's views.sql for the plain ``duckdb`` CLI, run as the CLI would on the fixture run."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "audit.md").read_text()
    views = doc.split("-- views.sql (replace runs/r1 with your run directory)\n", 1)[1].split("```", 1)[0]
    con = duckdb.connect()
    con.execute(views.replace("runs/r1", str(fixture_run.path)))
    documented = {k for (k,) in con.sql("SELECT kind FROM loss_kinds WHERE addition").fetchall()}
    assert documented == ADDITIONS, "docs/audit.md's loss_kinds view must list pipeline.losses.ADDITIONS"
    for name in query_names():
        query = load_query(name)
        rows = con.sql(query.sql, params=query.bind() or None).to_arrow_table().to_pylist()
        _close(rows, REFERENCES[name](fixture_run))


def test_worst_records_beyond_the_per_shard_top(fixture_run: FixtureRun, tmp_path: Path) -> None:
    """n above the per-shard top (TOP_LOSSES) reads the record index; the guard in the SQL uses the same n."""
    sql = load_query("worst_records").sql
    assert f"$n <= {TOP_LOSSES}" in sql and f"$n > {TOP_LOSSES}" in sql
    con = open_run(fixture_run.path)
    for n in ("1", "3", str(TOP_LOSSES), str(TOP_LOSSES + 1), "100000"):
        _close(load_query("worst_records").run(con, {"n": n}).to_pylist(), REF_WORST(fixture_run, int(n)))
    # a run whose shards keep a top of 1 only: n = 3 must then not be answered from top_losses alone
    run = _copy(fixture_run, tmp_path)
    for p in (run / "top_losses").glob("*.parquet"):
        pq.write_table(pq.read_table(p).slice(0, 1), p)
    relist(run)
    # the test can fail: top_losses is read (for some n the shards' first records are not the worst)
    query, con = load_query("worst_records"), open_run(run)
    answers = {n: query.run(con, {"n": str(n)}).to_pylist() for n in range(2, 9)}
    assert any(a != REF_WORST(fixture_run, n) for n, a in answers.items())
