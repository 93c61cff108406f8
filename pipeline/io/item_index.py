"""The item index: one flat row per item, written beside each conversations shard for audits.

Reading ``conversations.items`` means decoding every nested column of every item, text included
(about 40 s per million conversations in DuckDB or Polars, whatever the query needs). The audit
questions (kinds, roles, phases, tool pairing, turns, compaction) need only the scalar item fields,
so each run also writes ``RUN/items/part-NNNNN.parquet`` with those fields flat, plus sizes in place
of the nested content. It is derived data: ``conversations/`` stays the source of truth.

=================  =======================================================================
column             value
=================  =======================================================================
conversation_id,   of the conversation (``source_*`` as in ``conversations``)
source_*
item_index         0-based position in ``items``
section ... phase  the canonical item's scalar fields (see docs/schema.md), unchanged
null_fields        the item's ``null_fields`` (missing vs null of ``phase``, ...)
n_content          number of content blocks (null when content is absent / null)
n_summary          number of summary blocks (null when absent / null)
text_chars         characters of text over the content and summary blocks
arguments_chars    characters of ``arguments`` / ``input``
encrypted_bytes    UTF-8 bytes of ``encrypted_content``
=================  =======================================================================
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.arrays import one_array

SCALARS = (
    "section", "group", "part", "type", "native_type", "role", "id", "call_id", "name", "namespace",
    "status", "phase", "content_form",
)  # fmt: skip
KEYS = ("conversation_id", "source_format", "source_file", "source_line")

ITEM_INDEX_SCHEMA = pa.schema(
    [
        pa.field("conversation_id", pa.string()),
        pa.field("source_format", pa.string()),
        pa.field("source_file", pa.string()),
        pa.field("source_line", pa.int64()),
        pa.field("item_index", pa.int32()),
        *(pa.field(n, pa.int32() if n in ("group", "part") else pa.string()) for n in SCALARS),
        pa.field("null_fields", pa.list_(pa.field("item", pa.string()))),
        pa.field("n_content", pa.int32()),
        pa.field("n_summary", pa.int32()),
        pa.field("text_chars", pa.int64()),
        pa.field("arguments_chars", pa.int64()),
        pa.field("encrypted_bytes", pa.int64()),
    ]
)


def _chars(values: pa.Array) -> np.ndarray:
    return pc.fill_null(pc.utf8_length(values), 0).to_numpy().astype(np.int64)


def _block_chars(blocks: pa.ListArray, n: int) -> np.ndarray:
    """Sum of block text lengths per list element (``n`` elements)."""
    flat = blocks.flatten()
    if len(flat) == 0:
        return np.zeros(n, np.int64)
    parents = pc.list_parent_indices(blocks).to_numpy()
    return np.bincount(parents, weights=_chars(flat.field("text")), minlength=n).astype(np.int64)


def item_index(table: pa.Table) -> pa.Table:
    """The flat item rows of a canonical table (columns as in the module doc, in item order)."""
    items = one_array(table.column("items"))
    flat = items.flatten()
    n = len(flat)
    if n == 0:
        return ITEM_INDEX_SCHEMA.empty_table()
    parents = pc.list_parent_indices(items)
    offsets = items.offsets.to_numpy()
    position = np.arange(n, dtype=np.int64) + offsets[0] - offsets[parents.to_numpy()]
    content, summary = flat.field("content"), flat.field("summary")
    columns: dict[str, pa.Array] = {k: one_array(table.column(k)).take(parents) for k in KEYS}
    columns["item_index"] = pa.array(position, pa.int32())
    columns.update({name: flat.field(name) for name in SCALARS})
    columns["null_fields"] = flat.field("null_fields")
    columns["n_content"] = pc.list_value_length(content).cast(pa.int32())
    columns["n_summary"] = pc.list_value_length(summary).cast(pa.int32())
    columns["text_chars"] = pa.array(_block_chars(content, n) + _block_chars(summary, n))
    columns["arguments_chars"] = pa.array(_chars(flat.field("arguments")) + _chars(flat.field("input")))
    encrypted = pc.binary_length(flat.field("encrypted_content"))
    columns["encrypted_bytes"] = pc.fill_null(encrypted, 0).cast(pa.int64())
    return pa.table(columns).cast(ITEM_INDEX_SCHEMA)
