"""Schemas of a run directory's ``losses/`` and ``rejected/`` tables (docs/run-layout.md).

One definition for every writer (the batch engine, ``chatlake transform``) and for the tests that
build run directories by hand, so the contract the audit reads cannot drift between them.
"""

from __future__ import annotations

import pyarrow as pa

LOSSES_SCHEMA = pa.schema(
    [
        pa.field("conversation_id", pa.string()),
        pa.field("source_file", pa.string()),
        pa.field("source_line", pa.int64()),
        pa.field("source_format", pa.string()),
        pa.field("target_format", pa.string()),
        pa.field("kind", pa.string()),
        pa.field("path", pa.string()),
        pa.field("detail", pa.string()),
    ]
)

REJECTED_SCHEMA = pa.schema(
    [
        pa.field("source_file", pa.string()),
        pa.field("source_line", pa.int64()),
        pa.field("conversation_id", pa.string()),
        pa.field("stage", pa.string()),
        pa.field("step", pa.string()),
        pa.field("reason", pa.string()),
        pa.field("input", pa.string()),
    ]
)
