"""Writing the canonical table to Parquet: one place for the file options every sink uses."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.schema import CONVERSATION_SCHEMA

# Dictionary-encode only low-cardinality columns: trying it on texts, ids and encrypted blobs
# hashes every long unique string before Parquet falls back to plain encoding (~10% of the write).
DICTIONARY_COLUMNS = [
    "source_format",
    "record_kind",
    "model",
    "items_form",
    "instructions.form",
    "items.list.element.section",
    "items.list.element.type",
    "items.list.element.native_type",
    "items.list.element.role",
    "items.list.element.status",
    "items.list.element.phase",
    "items.list.element.content_form",
    "items.list.element.content.list.element.type",
    "items.list.element.summary.list.element.type",
    "items.list.element.null_fields.list.element",
]


def writer(where: Any, schema: pa.Schema = CONVERSATION_SCHEMA) -> pq.ParquetWriter:
    """A zstd Parquet writer for canonical tables (``where``: a path or a binary file object)."""
    return pq.ParquetWriter(where, schema, compression="zstd", use_dictionary=DICTIONARY_COLUMNS)


def table_writer(where: Any, schema: pa.Schema) -> pq.ParquetWriter:
    """A zstd Parquet writer for the run's other tables (losses, rejected, item and record indexes):
    every column dictionary-encoded, as their few distinct values (kinds, paths, file names) repeat."""
    return pq.ParquetWriter(where, schema, compression="zstd")
