"""Per-shard counts: small pre-aggregated tables written beside each shard for the canned audit queries.

A record lives in exactly one shard (and one batch of it), so sums of these counts over shards are
exact, including the "how many records / conversations" columns: the canned queries read a few
rows per shard instead of every item or loss of the run (docs/run-layout.md has the columns).

=================  ==================================================  ===============================
folder             one row per shard and                               counts
=================  ==================================================  ===============================
``record_counts``  source_file, source_format, target_format,          records, losses, n_items, turn
                   status, stage, lossy, all_turns                     sums, compaction sums and max
``item_counts``    source_format, type, role                           items, conversations
``phase_counts``   source_format, phase (assistant messages only;      messages
                   ``(null)`` / ``(absent)`` as in phase_coverage)
``loss_counts``    source_file, source_format, target_format, kind      losses, records
=================  ==================================================  ===============================

Each table is computed per batch (:func:`batch_counts`) and the batches are merged when the shard
is committed (:func:`merge`).

>>> import pyarrow as pa
>>> a = pa.table({"source_format": ["chat"], "type": ["message"], "role": ["user"],
...               "items": [2], "conversations": [1]})
>>> merge("item_counts", [a, a]).to_pylist()
[{'source_format': 'chat', 'type': 'message', 'role': 'user', 'items': 4, 'conversations': 2}]
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.arrays import one_array
from pipeline.io.record_index import TURN_COLUMNS

_S, _I = pa.string(), pa.int64()

SCHEMAS: dict[str, pa.Schema] = {
    "record_counts": pa.schema(
        [
            ("source_file", _S),
            ("source_format", _S),
            ("target_format", _S),
            ("status", _S),
            ("stage", _S),
            ("lossy", pa.bool_()),
            ("all_turns", pa.int32()),
            ("records", _I),
            ("losses", _I),
            ("n_items", _I),
            *((n, _I) for n in TURN_COLUMNS),
            ("compacted", _I),
            ("compactions", _I),
            ("max_compactions", _I),
            ("items_after_last_compaction", _I),
            ("compaction_encrypted_bytes", _I),
        ]
    ),
    "item_counts": pa.schema(
        [("source_format", _S), ("type", _S), ("role", _S), ("items", _I), ("conversations", _I)]
    ),
    "phase_counts": pa.schema([("source_format", _S), ("phase", _S), ("messages", _I)]),
    "loss_counts": pa.schema(
        [
            ("source_file", _S),
            ("source_format", _S),
            ("target_format", _S),
            ("kind", _S),
            ("losses", _I),
            ("records", _I),
        ]
    ),
}
FOLDERS = tuple(SCHEMAS)

# how each count column is merged across batches (everything else is a group key)
_MAX = {"max_compactions"}
_KEYS = {name: [n for n in s.names if s.field(n).type != _I] for name, s in SCHEMAS.items()}


_OPTIONS = {
    "sum": pc.ScalarAggregateOptions(min_count=0),  # a group of only nulls sums to 0, not null
    "max": pc.ScalarAggregateOptions(min_count=0),
    "count": pc.CountOptions(mode="all"),
    "count_distinct": pc.CountOptions(mode="all"),
}


def _group(table: pa.Table, name: str, aggregations: list[tuple[str, str, str]]) -> pa.Table:
    """``table`` grouped by the keys of ``name`` with ``(column, function, output)`` aggregations.

    Null keys form their own group (as in SQL ``GROUP BY``); the output is cast to ``SCHEMAS[name]``.
    """
    keys = _KEYS[name]
    out = table.group_by(keys, use_threads=False).aggregate([(c, f, _OPTIONS[f]) for c, f, _ in aggregations])
    cols = {n: out.column(n) for n in keys}
    cols.update({o: out.column(f"{c}_{f}") for c, f, o in aggregations})  # aggregate()'s names
    return pa.table(cols).select(SCHEMAS[name].names).cast(SCHEMAS[name])


def record_counts(records: pa.Table) -> pa.Table:
    """``record_counts`` of record-index rows (written and rejected)."""
    if records.num_rows == 0:
        return SCHEMAS["record_counts"].empty_table()
    losses = records.column("losses")
    compactions = pc.fill_null(records.column("compactions"), 0)
    t = records.append_column("lossy", pc.greater(losses, 0)).append_column(
        "compacted", pc.cast(pc.greater(compactions, 0), pa.int64())
    )
    sums = ["losses", "n_items", *TURN_COLUMNS, "compacted", "compactions",
            "items_after_last_compaction", "compaction_encrypted_bytes"]  # fmt: skip
    t = t.set_column(t.schema.get_field_index("compactions"), "compactions", compactions)
    for c in sums:
        t = t.set_column(t.schema.get_field_index(c), c, pc.cast(t.column(c), pa.int64()))
    aggs = [("status", "count", "records"), ("compactions", "max", "max_compactions")]
    return _group(t, "record_counts", aggs + [(c, "sum", c) for c in sums])


def item_counts(items: pa.Table, parents: np.ndarray) -> pa.Table:
    """``item_counts`` of item-index rows (``parents``: the record row of each item)."""
    t = items.select(["source_format", "type", "role"]).append_column("parent", pa.array(parents))
    return _group(
        t, "item_counts", [("parent", "count", "items"), ("parent", "count_distinct", "conversations")]
    )


def phase_counts(items: pa.Table) -> pa.Table:
    """``phase_counts`` of item-index rows: the phase state of every assistant message."""
    t, role = items.column("type"), items.column("role")
    assistant = pc.and_(pc.equal(t, "message"), pc.equal(role, "assistant"))
    msgs = items.filter(pc.fill_null(assistant, False))
    nulls = one_array(msgs.column("null_fields"))
    flat_phase = pc.fill_null(pc.equal(pc.list_flatten(nulls), "phase"), False).to_numpy(zero_copy_only=False)
    parents = pc.list_parent_indices(nulls).to_numpy()
    sent_null = np.bincount(parents[flat_phase], minlength=msgs.num_rows) > 0
    state = pc.if_else(pa.array(sent_null), "(null)", "(absent)")
    t = pa.table(
        {"source_format": msgs.column("source_format"),
         "phase": pc.coalesce(msgs.column("phase"), state)}
    )  # fmt: skip
    return _group(t.append_column("one", pa.array(np.ones(msgs.num_rows, np.int64))), "phase_counts",
                  [("one", "count", "messages")])  # fmt: skip


def loss_counts(losses: pa.Table) -> pa.Table:
    """``loss_counts`` of loss rows (LOSSES_SCHEMA)."""
    return _group(
        losses, "loss_counts",
        [("kind", "count", "losses"), ("conversation_id", "count_distinct", "records")],
    )  # fmt: skip


def merge(name: str, parts: list[pa.Table]) -> pa.Table:
    """The batches' tables of one kind as one table: counts summed (``max_*`` maxed) per key."""
    schema = SCHEMAS[name]
    if not parts:
        return schema.empty_table()
    table = pa.concat_tables(parts)
    counts = [n for n in schema.names if n not in _KEYS[name]]
    aggs = [(c, "max" if c in _MAX else "sum", c) for c in counts]
    return _group(table, name, aggs)
