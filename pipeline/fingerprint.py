"""Item content fingerprints: how an encoder knows an item changed after it was decoded.

An item id or an ``encrypted_content`` / thinking ``signature`` belongs to the exact content the
provider produced. When a transform or a user edits that content, re-sending the old id or opaque
state is wrong (the provider would restore or verify the old content). So every decoded item that
carries such state gets ``fingerprint`` = 64 bits of MD5 over its content fields; encoders recompute
it and drop the stale state of every item whose fingerprint no longer matches (reported as loss kind
``edited``). Items without id, encrypted content or signature have nothing stale and no fingerprint.

What counts as content: ``type``, ``role``, ``name``, ``namespace``, ``call_id``, ``arguments``,
``input``, ``content_form``, the item's ``extra_json``, and every content and summary block's
``type``, ``text`` and ``extra_json``. Not content: ``id``, ``status``, ``phase``, the opaque state
itself, and annotations/logprobs (provider output metadata).

The hash is MD5 (fixed, unlike Polars' or DuckDB's internal hashes, which may change between
versions): files written by one version are checked by the next. :data:`FINGERPRINT_SQL` (DuckDB,
over the flat item struct array) defines it and computes it on the pure-Python path; the compiled
codec computes the same strings in C (``pipeline/_native/fingerprint.c``, GIL released, ~1/5 of the CPU;
tests/native/test_fingerprint.py checks they are equal).

>>> import pyarrow as pa
>>> from pipeline.formats import decode_records
>>> t = decode_records([{"input": [{"type": "message", "id": "msg_1", "role": "user", "content": "hi"},
...                                {"role": "user", "content": "no id"}]}], "responses").table
>>> [it["fingerprint"] is not None for it in t.column("items")[0].as_py()]
[True, False]
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

import duckdb
import pyarrow as pa

from pipeline import codec
from pipeline.arrays import one_array

# Separators below U+0020 cannot collide with JSON text (JSON escapes them); NUL marks a null value.
_BLOCKS = (
    "coalesce(array_to_string(list_transform({col}, lambda b: concat_ws(chr(29), coalesce(b.type, chr(0)), "
    "coalesce(b.text, chr(0)), coalesce(b.extra_json, chr(0)))), chr(30)), chr(0))"
)
_FIELDS = ("type", "role", "name", "namespace", "call_id", "arguments", "input", "content_form", "extra_json")
FINGERPRINT_SQL = (
    "SELECT CASE WHEN id IS NOT NULL OR encrypted_content IS NOT NULL OR signature IS NOT NULL "
    "THEN left(md5(concat_ws(chr(31), "
    + ", ".join(f"coalesce({f}, chr(0))" for f in _FIELDS)
    + ", "
    + _BLOCKS.format(col="content")
    + ", "
    + _BLOCKS.format(col="summary")
    + ")), 16) END AS fingerprint FROM items"
)

_local = threading.local()

# Set by :func:`unneeded`: decoders in this context leave every item's fingerprint null.
_UNNEEDED: ContextVar[bool] = ContextVar("fingerprints_unneeded", default=False)


@contextmanager
def unneeded() -> Iterator[None]:
    """Decode without item fingerprints (all null) in this context (this thread).

    For a caller that neither writes the decoded rows nor checks them for edits: a step-less
    ``convert -o`` to a wire target writes only the encoded records, and its rows, decoded here and
    changed by nothing, skip the edit check (``encode_rows(as_decoded=True)``). A null fingerprint
    reads as "not edited" everywhere (:mod:`pipeline.encoders.edits`), so the encoders write the
    same bytes; the fingerprints were about 5 % of such a convert's CPU.
    """
    token = _UNNEEDED.set(True)
    try:
        yield
    finally:
        _UNNEEDED.reset(token)


def needed() -> bool:
    """Whether decoders compute item fingerprints here (not inside :func:`unneeded`)."""
    return not _UNNEEDED.get()


def _connection() -> duckdb.DuckDBPyConnection:
    # One in-memory database per thread: connecting costs milliseconds, and decode runs per chunk.
    con = getattr(_local, "con", None)
    if con is None:
        con = _local.con = duckdb.connect(config={"threads": 1})
    return con


def fingerprints(items: pa.StructArray | pa.ChunkedArray) -> pa.Array:
    """The fingerprint of every item of a flat item struct array (null where it has no state).

    Order is kept: element ``i`` belongs to item ``i``. Computed in C when the compiled codec is
    active and the array has the canonical field types, else by :func:`duckdb_fingerprints`.
    """
    if len(items) == 0:
        return pa.array([], pa.string())
    items = one_array(items)
    native = codec.native_fingerprints()
    if native is not None:
        try:
            valid, nulls, offsets, data = (
                b if type(b) is int else pa.foreign_buffer(*b) for b in native.fingerprints(items)
            )
        except ValueError:  # not the canonical field types (e.g. large_string from Polars): the reference
            return duckdb_fingerprints(items)
        return pa.Array.from_buffers(pa.string(), len(items), [valid, offsets, data], nulls)
    return duckdb_fingerprints(items)


def duckdb_fingerprints(items: pa.StructArray) -> pa.Array:
    """:func:`fingerprints` by :data:`FINGERPRINT_SQL` in DuckDB: the reference the C is tested against."""
    if len(items) == 0:
        return pa.array([], pa.string())
    out = run_sql(pa.Table.from_struct_array(items), FINGERPRINT_SQL).column(0)
    return one_array(out).cast(pa.string())


def run_sql(table: pa.Table, sql: str) -> pa.Table:
    """``sql`` run by DuckDB over ``table`` registered as ``items`` (one in-memory database per
    thread): every content hash of chatlake runs here, so all of them use the same fixed MD5."""
    con = _connection()
    con.register("items", table)
    try:
        return con.sql(sql).to_arrow_table()
    finally:
        con.unregister("items")
