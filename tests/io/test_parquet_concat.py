"""Parquet files laid end to end with one merged footer (io/parquet_concat.py) are byte for byte
the file one writer makes from the same tables in the same order; footers round-trip exactly."""

from __future__ import annotations

import io

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.formats import decode_records
from pipeline.io import parquet_concat
from pipeline.io.parquet import table_writer
from pipeline.io.parquet import writer as canonical_writer
from pipeline.io.run_tables import LOSSES_SCHEMA
from pipeline.schema import cast_to_canonical
from pipeline.synth import generate


def _file(tables: list[pa.Table], schema: pa.Schema, open_writer: object) -> bytes:
    sink = io.BytesIO()
    w = open_writer(sink, schema)  # type: ignore[operator]
    for t in tables:
        w.write_table(t)
    w.close()
    return sink.getvalue()


def _joined(files: list[bytes]) -> bytes:
    out = bytearray(parquet_concat.MAGIC)
    groups, first = [], None
    for data in files:
        body, footer = parquet_concat.split(data)
        first = first or footer
        groups += parquet_concat.row_groups(footer, len(out))
        out += body
    return bytes(out + parquet_concat.merged_footer(first, groups))


def _losses(n: int, seed: int) -> pa.Table:
    return pa.table({
        "conversation_id": [f"c{seed}-{i % 7}" for i in range(n)], "source_file": ["in.jsonl"] * n,
        "source_line": list(range(n)), "source_format": ["responses"] * n, "target_format": ["chat"] * n,
        "kind": [("dropped_field", "moved_field")[i % 2] for i in range(n)],
        "path": [f"/items/{i}/x" for i in range(n)], "detail": [None if i % 3 else "why" for i in range(n)],
    }).cast(LOSSES_SCHEMA)  # fmt: skip


@pytest.mark.parametrize("shards", [1, 3, 17])  # 17: past the short list header (15 row groups)
def test_files_end_to_end_are_the_one_writers_bytes(shards: int) -> None:
    tables = [_losses(200 + 37 * k, k) for k in range(shards)]
    whole = _file(tables, LOSSES_SCHEMA, table_writer)
    joined = _joined([_file([t], LOSSES_SCHEMA, table_writer) for t in tables])
    assert joined == whole
    assert pq.read_table(pa.BufferReader(joined)).equals(pa.concat_tables(tables))


def test_canonical_tables_with_nested_items_join_to_the_same_bytes() -> None:
    tables = [cast_to_canonical(decode_records(generate("responses", 40, seed=k), "responses").table)
              for k in range(3)]  # fmt: skip
    schema = tables[0].schema
    whole = _file(tables, schema, canonical_writer)
    assert _joined([_file([t], schema, canonical_writer) for t in tables]) == whole


def test_empty_files_add_no_row_group_and_keep_the_schema() -> None:
    empty = _file([], LOSSES_SCHEMA, table_writer)
    some = _file([_losses(10, 1)], LOSSES_SCHEMA, table_writer)
    assert _joined([empty]) == empty
    assert pq.read_table(pa.BufferReader(_joined([some, empty]))).num_rows == 10


def test_a_footer_round_trips_and_a_non_parquet_file_is_refused() -> None:
    _, footer = parquet_concat.split(_file([_losses(50, 2)], LOSSES_SCHEMA, table_writer))
    assert parquet_concat.write_footer(parquet_concat.parse_footer(footer)) == footer
    with pytest.raises(ValueError, match="PAR1"):
        parquet_concat.split(b"PAR1 not a parquet file")
