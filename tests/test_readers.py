"""The canonical Parquet opens unchanged in DuckDB, Polars and datasets, with the same counts."""

from __future__ import annotations

from pathlib import Path

import datasets
import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.compute
import pyarrow.parquet as pq
import pytest

from pipeline.formats import decode_records, encode_table
from pipeline.schema import CONVERSATION_SCHEMA, cast_to_canonical
from tests.cases import CASES


@pytest.fixture(scope="module")
def parquet(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int, int]:
    table = pa.concat_tables(decode_records([r for _, r in c], fmt).table for fmt, c in CASES.items())
    path = tmp_path_factory.mktemp("readers") / "cases.parquet"
    pq.write_table(table, path, compression="zstd")
    return path, table.num_rows, sum(table.column("n_items").to_pylist())


def test_duckdb_unnest_items(parquet: tuple[Path, int, int]) -> None:
    path, rows, n_items = parquet
    con = duckdb.connect()
    got_rows = con.execute("SELECT count(*) FROM read_parquet(?)", [str(path)]).fetchone()
    got_items = con.execute(
        "SELECT count(*) FROM (SELECT unnest(items) AS it FROM read_parquet(?))", [str(path)]
    ).fetchone()
    assert got_rows == (rows,) and got_items == (n_items,)
    # missing vs null is one list_contains away
    nulls = con.execute(
        "SELECT count(*) FROM (SELECT unnest(items) AS it FROM read_parquet(?)) "
        "WHERE it.phase IS NULL AND list_contains(it.null_fields, 'phase')",
        [str(path)],
    ).fetchone()
    assert nulls == (1,)


def test_polars_reads_and_counts(parquet: tuple[Path, int, int]) -> None:
    path, rows, n_items = parquet
    df = pl.read_parquet(path)
    assert df.height == rows
    assert df.select(pl.col("items").list.len().sum()).item() == n_items
    phases = df.select(pl.col("items").explode().struct.field("phase").drop_nulls()).to_series().to_list()
    assert phases == ["commentary", "final_answer"]


def test_datasets_from_parquet(parquet: tuple[Path, int, int], tmp_path: Path) -> None:
    path, rows, n_items = parquet
    ds = datasets.Dataset.from_parquet(str(path), cache_dir=str(tmp_path / "hf"))
    assert ds.num_rows == rows
    assert sum(len(x) for x in ds["items"]) == n_items
    # Same types all the way down (datasets drops only the not-null flags), and it encodes back.
    schema = ds.data.table.schema
    assert [f.type for f in schema] == [f.type for f in CONVERSATION_SCHEMA]
    table = cast_to_canonical(ds.data.table)
    for fmt, cases in CASES.items():
        mine = table.filter(pa.compute.equal(table.column("source_format"), fmt))
        assert encode_table(mine, fmt) == [r for _, r in cases]
