"""The record index: one flat row per written or rejected record, written beside each shard for audits.

The audit's per-record questions (turns, compaction, losses per record, the worst records) would
otherwise window over every item or count-distinct over every loss of the run. The writer knows
those facts while it holds a batch, so it writes them once: ``RUN/records/part-NNNNN.parquet``,
computed from the batch's canonical table, its item index and its losses with Arrow compute and
numpy (no per-row Python). Like the item index it is derived data: ``conversations/``,
``losses/`` and ``rejected/`` stay the source of truth.

==========================  ================================================================
column                      value
==========================  ================================================================
conversation_id             of the record (null for a rejected record that never decoded)
shard                       the shard id, ``part-NNNNN``
source_file, source_line    where the record came from
source_format               of a written record (null for a rejected one)
target_format               the run's target for a written record (null for a rejected one)
status                      ``written`` or ``rejected``
stage                       the rejection stage (``read``, ``decode``, ...); null when written
n_items                     items of the written record
human_turns ... system_turns turns, with the rule of ``sql/turn_count_distribution.sql``
all_turns                   human_turns + ai_turns
compactions                 compaction items
items_after_last_compaction items after the last compaction item (null: no compaction)
compaction_encrypted_bytes  bytes of the compaction items' ``encrypted_content``
losses                      loss rows reported for the record in ``losses/``, additions left out
loss_kinds                  its distinct loss kinds (additions left out), sorted
loss_paths                  its first 5 loss pointers (additions left out), sorted (byte order)
==========================  ================================================================

Every count column is null for a rejected record (nothing of it was written).

>>> from pipeline.formats import decode_records
>>> from pipeline.io.item_index import item_index
>>> t = decode_records([{"input": [{"role": "user", "content": "hi"},
...     {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"},
...     {"type": "function_call_output", "call_id": "c", "output": "x"}]}], "responses").table
>>> r = written_records(t, item_index(t), None, "part-00000", "chat").to_pylist()[0]
>>> [r[k] for k in ("n_items", "human_turns", "ai_turns", "tool_turns", "all_turns")]
[3, 1, 1, 1, 2]
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.losses import ADDITIONS
from pipeline.transforms import _items

MAX_PATHS = 5
# records kept per shard in top_losses/; sql/worst_records.sql reads it for n <= this (same number)
TOP_LOSSES = 100
TOP_LOSSES_COLUMNS = (
    "conversation_id", "source_file", "source_line", "source_format", "losses", "loss_kinds", "loss_paths",
)  # fmt: skip

TURN_COLUMNS = ("human_turns", "ai_turns", "tool_turns", "system_turns")
# side codes: 1 + the transforms' label code (the index into _items.LABELS), so the turn rule has one
# definition (_items.label_code_of); 0 = the item has no side (compaction, references, unknown kinds)
USER, ASSISTANT, TOOL, SYSTEM = (
    1 + _items.LABELS.index(label) for label in (_items.USER, _items.ASSISTANT, _items.TOOL, _items.SYSTEM)
)

RECORD_INDEX_SCHEMA = pa.schema(
    [
        pa.field("conversation_id", pa.string()),
        pa.field("shard", pa.string()),
        pa.field("source_file", pa.string()),
        pa.field("source_line", pa.int64()),
        pa.field("source_format", pa.string()),
        pa.field("target_format", pa.string()),
        pa.field("status", pa.string()),
        pa.field("stage", pa.string()),
        pa.field("n_items", pa.int32()),
        *(pa.field(n, pa.int32()) for n in TURN_COLUMNS),
        pa.field("all_turns", pa.int32()),
        pa.field("compactions", pa.int32()),
        pa.field("items_after_last_compaction", pa.int32()),
        pa.field("compaction_encrypted_bytes", pa.int64()),
        pa.field("losses", pa.int32()),
        pa.field("loss_kinds", pa.list_(pa.field("item", pa.string()))),
        pa.field("loss_paths", pa.list_(pa.field("item", pa.string()))),
    ]
)


def _mask(values: pa.Array) -> np.ndarray:
    """A boolean Arrow result as numpy, null as False."""
    return pc.fill_null(values, False).to_numpy(zero_copy_only=False)


def item_sides(items: pa.Table) -> np.ndarray:
    """The turn side of every item-index row (0: none), as in ``sql/turn_count_distribution.sql``.

    The side is the label of the transforms' turn view (:func:`pipeline.transforms._items.label_code_of`:
    tool outputs first, messages by role, reasoning / calls / server blocks assistant), except that
    items of a Responses ``instructions`` list have none (the audit counts the conversation only).

    ========================  =========  ============  ====
    type                      role       section       side
    ========================  =========  ============  ====
    message                   user       input         1 (USER)
    function_call             null       input         2 (ASSISTANT)
    function_call_output      null       input         3 (TOOL)
    message                   developer  input         4 (SYSTEM)
    message                   developer  instructions  0
    compaction                null       input         0
    ========================  =========  ============  ====
    """
    if items.num_rows == 0:
        return np.zeros(0, np.int8)
    kinds = pc.dictionary_encode(items.column("type").combine_chunks(), null_encoding="encode")
    roles = pc.dictionary_encode(items.column("role").combine_chunks(), null_encoding="encode")
    # Label each (kind, role) pair of the two dictionaries once (a few dozen rows), then look every
    # item up by its pair: cheaper than moving every item's strings into Polars to label them there.
    n_roles = len(roles.dictionary)
    pair = np.arange(len(kinds.dictionary) * n_roles)
    pairs = pl.DataFrame(
        {"type": pl.Series(kinds.dictionary).gather(pair // n_roles),
         "role": pl.Series(roles.dictionary).gather(pair % n_roles)}
    )  # fmt: skip
    code = pairs.select(_items.label_code_of(pl.col("type"), pl.col("role"))).to_series()
    side_of_pair = (code.cast(pl.Int8) + 1).fill_null(0).to_numpy()
    side = side_of_pair[kinds.indices.to_numpy().astype(np.int64) * n_roles + roles.indices.to_numpy()]
    side[_mask(pc.equal(items.column("section"), "instructions"))] = 0
    return side


def turn_counts(parents: np.ndarray, sides: np.ndarray, n: int) -> dict[str, np.ndarray]:
    """Turns per record: a turn opens where a sided item's side differs from the previous sided item's.

    ``parents`` (record row of each item, non-decreasing) and ``sides`` are per item, in item order.
    """
    keep = sides > 0
    p, s = parents[keep], sides[keep]
    opens = np.ones(len(s), bool)
    opens[1:] = (s[1:] != s[:-1]) | (p[1:] != p[:-1])
    return {
        name: np.bincount(p[opens & (s == code)], minlength=n).astype(np.int32)
        for name, code in zip(TURN_COLUMNS, (USER, ASSISTANT, TOOL, SYSTEM), strict=True)
    }


def _lists(groups: np.ndarray, values: pa.Array, n: int) -> pa.ListArray:
    """``values`` (sorted by group) as one list per group row ``0..n-1`` (empty lists for the rest)."""
    offsets = np.zeros(n + 1, np.int32)
    np.cumsum(np.bincount(groups, minlength=n), out=offsets[1:])
    return pa.ListArray.from_arrays(pa.array(offsets), values)


def _rows_of(ids: pa.ChunkedArray | pa.Array, conversation_ids: pa.Array) -> np.ndarray:
    """``pc.index_in(ids, value_set=conversation_ids)`` as numpy, -1 where not found, looked up
    once per run of equal ids.

    The engine's losses come grouped by record (~10 rows each): comparing neighbours is cheaper
    than hashing every row's id, and the run heads are looked up as before.
    """
    ids = ids.combine_chunks() if isinstance(ids, pa.ChunkedArray) else ids
    n = len(ids)
    starts = np.zeros(1 if n else 0, np.int64)
    if n > 1:
        # a null id starts a run of its own (null equals nothing here)
        same = pc.fill_null(pc.equal(ids.slice(1), ids.slice(0, n - 1)), False)
        starts = np.r_[starts, 1 + np.flatnonzero(~same.to_numpy(zero_copy_only=False))]
    heads = pc.fill_null(pc.index_in(ids.take(pa.array(starts)), value_set=conversation_ids), -1)
    return np.repeat(heads.to_numpy().astype(np.int64), np.diff(np.r_[starts, n]))


def _sorted_by(rows: np.ndarray, texts: pa.Array) -> bool:
    """Are the pairs (``rows``, ``texts``) already in ascending order (texts non-null)?"""
    if len(rows) < 2:
        return True
    step = np.diff(rows)
    if (step < 0).any():
        return False
    back = pc.less(texts.slice(1), texts.slice(0, len(texts) - 1)).to_numpy(zero_copy_only=False)
    return not (back & (step == 0)).any()


def _distinct_kinds(rows: np.ndarray, kinds: pa.Array) -> pa.Table:
    """The distinct (row, kind) pairs, sorted by row then kind (byte order): the few kinds ranked
    once, the pairs as integers (no hash of every row's kind string)."""
    if kinds.null_count:  # not written by chatlake's encoders; the general way
        pairs = pa.table({"row": rows, "kind": kinds}).group_by(["row", "kind"]).aggregate([])
        return pairs.sort_by([("row", "ascending"), ("kind", "ascending")])
    coded = pc.dictionary_encode(kinds)
    order = pc.sort_indices(coded.dictionary).to_numpy()
    rank = np.empty(len(order), np.int64)
    rank[order] = np.arange(len(order))
    m = max(len(order), 1)
    pairs = np.unique(rows * m + rank[coded.indices.to_numpy()])
    return pa.table({"row": pairs // m, "kind": coded.dictionary.take(pa.array(order[pairs % m]))})


def loss_facts(conversation_ids: pa.Array, losses: pa.Table | None) -> dict[str, pa.Array]:
    """Per record row: ``losses`` (count), ``loss_kinds`` (distinct, sorted), ``loss_paths`` (first 5).

    Additions (:data:`pipeline.losses.ADDITIONS`) are not losses: they are left out, so a record
    whose only report is a filled default is not lossy.
    """
    n = len(conversation_ids)
    if losses is not None and losses.num_rows:
        losses = losses.select(["conversation_id", "kind", "path"])  # copy no other column
        added = pc.is_in(losses.column("kind"), value_set=pa.array(sorted(ADDITIONS), pa.string()))
        if pc.any(added).as_py():
            losses = losses.filter(pc.invert(added))
    if losses is None or losses.num_rows == 0:
        empty = pa.array(np.zeros(n + 1, np.int32))
        return {
            "losses": pa.array(np.zeros(n, np.int32)),
            "loss_kinds": pa.ListArray.from_arrays(empty, pa.array([], pa.string())),
            "loss_paths": pa.ListArray.from_arrays(empty, pa.array([], pa.string())),
        }
    rows = _rows_of(losses.column("conversation_id"), conversation_ids)
    own = pa.table({"row": rows, "kind": losses.column("kind"), "path": losses.column("path")})
    if (rows < 0).any():  # losses of other records
        found = rows >= 0
        own, rows = own.filter(pa.array(found)), rows[found]
    counts = np.bincount(rows, minlength=n).astype(np.int32)
    kinds = _distinct_kinds(rows, own.column("kind").combine_chunks())
    # The engine hands losses sorted by record, then path: check that (one pass) before sorting.
    path = own.column("path").combine_chunks()
    if not (path.null_count == 0 and _sorted_by(rows, path)):
        own = own.take(pc.sort_indices(own, [("row", "ascending"), ("path", "ascending")]))
    by_path = own
    path_rows = by_path.column("row").to_numpy()
    starts = np.zeros(n + 1, np.int64)
    np.cumsum(counts, out=starts[1:])
    first = (np.arange(len(path_rows)) - starts[path_rows]) < MAX_PATHS
    return {
        "losses": pa.array(counts),
        "loss_kinds": _lists(kinds.column("row").to_numpy(), kinds.column("kind").combine_chunks(), n),
        "loss_paths": _lists(path_rows[first], by_path.column("path").combine_chunks().filter(first), n),
    }


def written_records(
    table: pa.Table, items: pa.Table, losses: pa.Table | None, shard: str, target: str | None
) -> pa.Table:
    """The record-index rows of written conversations.

    ``items`` is ``item_index(table)`` (flat items in record order), ``losses`` the losses reported
    for these records (LOSSES_SCHEMA columns; losses of other records are ignored).
    """
    n = table.num_rows
    ids = table.column("conversation_id").combine_chunks()
    n_items = pc.fill_null(pc.list_value_length(table.column("items")), 0).to_numpy().astype(np.int32)
    parents = np.repeat(np.arange(n), n_items)
    position = items.column("item_index").to_numpy().astype(np.int64)
    turns = turn_counts(parents, item_sides(items), n)
    compaction = _mask(pc.equal(items.column("type"), "compaction"))
    compactions = np.bincount(parents[compaction], minlength=n).astype(np.int32)
    last = np.full(n, -1, np.int64)
    np.maximum.at(last, parents[compaction], position[compaction])
    encrypted = items.column("encrypted_bytes").to_numpy()[compaction]
    columns: dict[str, Any] = {
        "conversation_id": ids,
        "shard": pa.repeat(pa.scalar(shard, pa.string()), n),
        "source_file": table.column("source_file"),
        "source_line": table.column("source_line"),
        "source_format": table.column("source_format"),
        "target_format": pa.repeat(pa.scalar(target, pa.string()), n),  # all null without a target
        "status": pa.repeat(pa.scalar("written", pa.string()), n),
        "stage": pa.nulls(n, pa.string()),
        "n_items": pa.array(n_items),
        **{k: pa.array(v) for k, v in turns.items()},
        "all_turns": pa.array(turns["human_turns"] + turns["ai_turns"]),
        "compactions": pa.array(compactions),
        "items_after_last_compaction": pa.array(n_items - 1 - last, mask=compactions == 0).cast(pa.int32()),
        "compaction_encrypted_bytes": pa.array(
            np.bincount(parents[compaction], weights=encrypted, minlength=n).astype(np.int64)
        ),
        **loss_facts(ids, losses),
    }
    return pa.table(columns).cast(RECORD_INDEX_SCHEMA)


def rejected_records(rows: list[dict[str, Any]], shard: str) -> pa.Table:
    """The record-index rows of rejected records (``rows``: rows of ``rejected/``)."""
    n = len(rows)
    if n == 0:
        return RECORD_INDEX_SCHEMA.empty_table()
    # Rejections are few and arrive as Python rows already (as for rejected/ itself).
    columns = {k: [r[k] for r in rows] for k in ("conversation_id", "source_file", "source_line", "stage")}
    columns["shard"] = [shard] * n
    columns["status"] = ["rejected"] * n
    table = pa.Table.from_pydict(columns)
    full = {f.name: table[f.name] if f.name in columns else pa.nulls(n, f.type) for f in RECORD_INDEX_SCHEMA}
    return pa.table(full).cast(RECORD_INDEX_SCHEMA)


def dropped_records(dropped: pa.Table, shard: str) -> pa.Table:
    """The record-index rows (status ``dropped``) of records a grouping step dropped (``dropped/``
    rows: engine/dropped.py); ``n_items`` is the record's own."""
    n = dropped.num_rows
    columns = {
        k: dropped.column(k)
        for k in ("conversation_id", "source_file", "source_line", "source_format", "n_items")
    }
    columns["shard"] = pa.repeat(pa.scalar(shard, pa.string()), n)
    columns["status"] = pa.repeat(pa.scalar("dropped", pa.string()), n)
    full = {
        f.name: columns[f.name] if f.name in columns else pa.nulls(n, f.type) for f in RECORD_INDEX_SCHEMA
    }
    return pa.table(full).cast(RECORD_INDEX_SCHEMA)


def top_losses(records: pa.Table, k: int = TOP_LOSSES) -> pa.Table:
    """The ``k`` written records with the most losses (ties: by ``conversation_id``), record-index columns.

    Written per shard as ``top_losses/``: the run's top ``n <= k`` records are among the union of
    every shard's top ``k`` (a record outranked by fewer than ``n`` records of the run is outranked
    by fewer than ``n`` of its shard), so ``worst_records`` reads a few rows per shard. Applying it
    to the concatenated tops of a shard's batches gives the shard's top ``k``.
    """
    lossy = records.filter(pc.fill_null(pc.greater(records.column("losses"), 0), False))
    order = pc.sort_indices(lossy, [("losses", "descending"), ("conversation_id", "ascending")])
    return lossy.take(order[:k]).select(list(TOP_LOSSES_COLUMNS))
