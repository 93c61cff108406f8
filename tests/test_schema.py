"""The canonical schema is plain, pinned and honoured by every engine we hand it to."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.formats import decode_records
from pipeline.schema import CONVERSATION_SCHEMA, cast_to_canonical
from tests.cases import CASES


def _walk(t: pa.DataType):
    yield t
    if pa.types.is_struct(t):
        for f in t:
            yield from _walk(f.type)
    elif pa.types.is_list(t):
        yield from _walk(t.value_type)


def test_schema_uses_only_plain_types() -> None:
    for f in CONVERSATION_SCHEMA:
        for t in _walk(f.type):
            assert not pa.types.is_union(t)
            assert not pa.types.is_large_string(t) and not pa.types.is_large_list(t)
            assert not pa.types.is_string_view(t) and not pa.types.is_dictionary(t)
            assert not pa.types.is_unsigned_integer(t)


def _table() -> pa.Table:
    return pa.concat_tables(decode_records([r for _, r in cases], fmt).table for fmt, cases in CASES.items())


def test_null_fields_invariant_every_listed_name_is_null() -> None:
    """A name in null_fields means the key was present with null: its column must be null."""
    rows = _table().to_pylist()
    checked = 0
    for row in rows:
        for item in row["items"]:
            for name in item["null_fields"] or []:
                assert item[name] is None, (name, item)
                checked += 1
            for block in item["content"] or []:
                for name in block["null_fields"] or []:
                    assert block[name] is None
                    checked += 1
        for name in row["null_fields"] or []:
            assert row[name] is None
    assert checked >= 8


def test_polars_roundtrip_casts_back_exactly(tmp_path: Path) -> None:
    table = _table()
    path = tmp_path / "c.parquet"
    pl.from_arrow(table).write_parquet(path)  # Polars writes large_* types
    back = pq.read_table(path)
    assert not back.schema.equals(CONVERSATION_SCHEMA, check_metadata=False)
    assert cast_to_canonical(back).equals(table)


def test_cast_rejects_foreign_tables() -> None:
    with pytest.raises(ValueError, match="missing columns"):
        cast_to_canonical(pa.table({"x": [1]}))
