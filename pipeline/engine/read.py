"""Reading one shard as a stream of canonical batches, each with the records it rejected.

A batch is at most ``chunk_bytes`` of JSONL or ``batch_rows`` rows, so a worker's memory is bounded
by one batch whatever the shard or input size.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.formats import Rejected, decode_lines
from pipeline.io.run_tables import rejected_row
from pipeline.jobs.files import open_arrow, open_input
from pipeline.jobs.resolve import CANONICAL
from pipeline.schema import CONVERSATION_SCHEMA, cast_to_canonical
from pipeline.sources import read_source

from .shards import Shard

# Decode errors that mean the line was not a JSON record at all (stage ``read``, not ``decode``).
_READ_ERRORS = ("$: invalid JSON", "$: expected object")


@dataclass
class Batch:
    """Canonical rows of one batch, the input records it rejected, and how many records it read."""

    table: pa.Table
    rejected: list[dict[str, Any]]
    read: int
    blank: int = 0
    raw: dict[int, bytes] = field(default_factory=dict)  # source_line -> input text (JSONL inputs)
    nbytes: int = 0  # input bytes this batch covers, for progress
    source_counts: dict[str, int] = field(default_factory=dict)  # a source adapter's counts (by name)
    # lines the compiled decoder handed to the Python one, by reason (DecodeResult.native_fallback)
    native_fallback: dict[str, int] = field(default_factory=dict)


def _from_rejected(r: Rejected, shard: Shard, raw: dict[int, bytes] | None = None) -> dict[str, Any]:
    """A record the decoder (or a source adapter) rejected, with its original bytes when we hold them."""
    stage = "read" if r.error.startswith(_READ_ERRORS) else "decode"
    original = raw.get(r.line) if raw is not None else None
    return rejected_row(
        r.file or shard.url, r.line, stage, r.error,
        raw=original if original is not None else r.input, input_format=shard.format,
    )  # fmt: skip


def _jsonl(shard: Shard, chunk_bytes: int) -> Iterator[Batch]:
    line = shard.first
    remaining = shard.end - shard.start
    rest = b""
    with open_input(shard.url) as f:
        f.seek(shard.start)
        while remaining > 0 or rest:
            block = f.read(min(chunk_bytes, remaining)) if remaining > 0 else b""
            if remaining > 0 and not block:
                raise OSError(f"{shard.url} ended before byte {shard.end}: did it change during the run?")
            remaining -= len(block)
            data = rest + block
            cut = data.rfind(b"\n") if remaining > 0 else len(data) - 1
            if cut < 0:
                rest = data
                continue
            data, rest = data[: cut + 1], data[cut + 1 :]
            lines = data.split(b"\n")
            if lines[-1] == b"":
                lines.pop()
            res = decode_lines(lines, shard.format, source_file=shard.url, first_line=line)
            raw = dict(enumerate(lines, line))
            yield Batch(
                res.table,
                [_from_rejected(r, shard, raw) for r in res.rejected],
                res.table.num_rows + len(res.rejected),
                res.blank_lines,
                raw,
                len(data),
                native_fallback=res.native_fallback,
            )
            line += len(lines)


def _drop_nulls(value: Any) -> Any:
    """Datasets fill keys absent from a row with null when they unify row schemas: treat those as absent."""
    if isinstance(value, dict):
        return {k: _drop_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_nulls(v) for v in value]
    return value


def _rows(shard: Shard, batch_rows: int) -> Iterator[pa.Table]:
    """Rows ``[start, end)`` of a Parquet or arrow file, ``batch_rows`` at a time."""
    if shard.container == "parquet":
        with open_input(shard.url) as f:
            pf = pq.ParquetFile(f)
            yield from _slice(pf.iter_batches(batch_size=batch_rows), shard.start, shard.end, batch_rows)
        return
    src = open_arrow(shard.url)
    try:
        yield from _slice(pa.ipc.open_stream(src), shard.start, shard.end, batch_rows)
    finally:
        src.close()


def _slice(batches: Any, start: int, end: int, batch_rows: int) -> Iterator[pa.Table]:
    pos = 0
    pending: list[pa.RecordBatch] = []
    n = 0
    for b in batches:
        a, z = pos, pos + b.num_rows
        pos = z
        if z <= start:
            continue
        if a >= end:
            break
        part = b.slice(max(start - a, 0), min(end, z) - max(start, a))
        pending.append(part)
        n += part.num_rows
        if n >= batch_rows:
            yield pa.Table.from_batches(pending).combine_chunks()
            pending, n = [], 0
    if pending:
        yield pa.Table.from_batches(pending).combine_chunks()


def _tabular(shard: Shard, batch_rows: int) -> Iterator[Batch]:
    row = shard.start
    per_row = shard.weight / max(shard.end - shard.start, 1)
    for table in _rows(shard, batch_rows):
        nbytes = round(per_row * table.num_rows)
        if shard.format == CANONICAL:
            yield Batch(cast_to_canonical(table), [], table.num_rows, nbytes=nbytes)
        else:
            # A dataset of wire records (e.g. an HF ``messages`` column): each row is one record.
            lines = [orjson.dumps(_drop_nulls(r)) for r in table.to_pylist()]
            res = decode_lines(lines, shard.format, source_file=shard.url, first_line=row + 1)
            raw = dict(enumerate(lines, row + 1))
            yield Batch(
                res.table,
                [_from_rejected(r, shard, raw) for r in res.rejected],
                res.table.num_rows + len(res.rejected),
                res.blank_lines,
                raw,
                nbytes,
                native_fallback=res.native_fallback,
            )
        row += table.num_rows


def _source(shard: Shard) -> Iterator[Batch]:
    for res in read_source(shard.url, shard.format, **shard.options):
        table = res.table if res.table is not None else CONVERSATION_SCHEMA.empty_table()
        rejected = [_from_rejected(r, shard) for r in res.rejected]
        counts = {f"{shard.format}:{k}": v for k, v in res.counts.items()}
        yield Batch(cast_to_canonical(table), rejected, table.num_rows + len(rejected), source_counts=counts)
    yield Batch(CONVERSATION_SCHEMA.empty_table(), [], 0, nbytes=shard.weight)


def read_shard(shard: Shard, chunk_bytes: int, batch_rows: int) -> Iterator[Batch]:
    """The batches of one shard, in input order."""
    if shard.container == "jsonl":
        return _jsonl(shard, chunk_bytes)
    if shard.container in ("parquet", "arrow"):
        return _tabular(shard, batch_rows)
    return _source(shard)
