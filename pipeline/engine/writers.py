"""The files of one shard, written to temp files and renamed into place together.

A shard's files appear under their final names only once all of them are complete, and the shard is
listed in ``manifest.json`` only after that: a run killed at any moment leaves either a finished
shard or temp files that the next run deletes. Parquet is written with fixed settings and no
timestamps, so the same rows always give the same bytes.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipeline import codec
from pipeline.arrays import one_array
from pipeline.io import shard_counts
from pipeline.io.item_index import ITEM_INDEX_SCHEMA, item_index
from pipeline.io.parquet import table_writer
from pipeline.io.parquet import writer as canonical_writer
from pipeline.io.parquet_concat import split
from pipeline.io.record_index import (
    RECORD_INDEX_SCHEMA,
    TOP_LOSSES_COLUMNS,
    dropped_records,
    rejected_records,
    top_losses,
    written_records,
)
from pipeline.io.run_tables import LOSSES_SCHEMA, REJECTED_SCHEMA
from pipeline.schema import CONVERSATION_SCHEMA

from .atomic import NewFile
from .dropped import DROPPED, EXTRA

# the columns of an empty dropped/ file (a shard that dropped nothing)
_DROPPED_EMPTY = pa.schema([*CONVERSATION_SCHEMA, *EXTRA], metadata=CONVERSATION_SCHEMA.metadata)

# records/ and the *_counts/ folders are derived audit facts (docs/run-layout.md)
FACTS = ("records", "top_losses", *shard_counts.FOLDERS)
FOLDERS = ("conversations", "items", *FACTS, "output", "losses", "rejected")
TMP_SUFFIX = ".tmp"
RUN = "run"  # a run directory: every table and audit fact (docs/run-layout.md)
# convert/transform -o FILE: only what the single file and its rejected/losses files are joined from
SINGLE_FILE = "single-file"


class ArrowTable:
    """Writes tables to a zstd-compressed Arrow IPC file (``schema`` like a ParquetWriter's).

    The single-file layout's conversations beside a Parquet output: the join writes the one
    Parquet file from them. Compressed because plain buffers
    need several times the disk of the final file (a request log of 960,731 requests staged 17 GB
    for a 1.7 GB Parquet file; 20,000 synthetic Responses records: 121 MB plain, 51 MB LZ4, 33 MB
    zstd for about 0.2 CPU s more, beside a 30 MB Parquet file).
    """

    OPTIONS = pa.ipc.IpcWriteOptions(compression="zstd")

    def __init__(self, path: NewFile | Path, schema: pa.Schema) -> None:
        self.schema = schema
        self._sink = pa.OSFile(path.where if isinstance(path, NewFile) else str(path), "wb")
        self._w = pa.ipc.new_file(self._sink, schema, options=self.OPTIONS)

    def write_table(self, table: pa.Table) -> None:
        self._w.write_table(table)

    def close(self) -> None:
        self._w.close()
        self._sink.close()


class HashedFile:
    """A file written front to back that hashes (sha256) what it writes, as it writes it.

    A shard's manifest entry carries each file's sha256: taken from the bytes already in memory,
    the file is not read back at commit (on a 200,000-record convert, ~1.5 GB of output and
    losses).
    """

    def __init__(self, path: NewFile) -> None:
        self._f = path.open()
        self._sha = hashlib.sha256()

    def write(self, data: bytes | pa.Buffer) -> None:
        self._f.write(data)
        self._sha.update(data)  # releases the GIL on large data, like the write

    def hexdigest(self) -> str:
        return self._sha.hexdigest()

    def close(self) -> None:
        self._f.close()


def ndjson_polars(table: pa.Table) -> bytes:
    """Every row of ``table`` as a JSON object (every column, nulls included) per line, by Polars.

    The reference of :func:`jsonl_parts` (and what it falls back to): the bytes the losses and
    rejected files beside a single JSONL output have always had.
    """
    frame = pl.from_arrow(table)
    assert isinstance(frame, pl.DataFrame)
    out = io.BytesIO()
    frame.write_ndjson(out)
    return out.getvalue()


def jsonl_parts(table: pa.Table) -> list[bytes | pa.Buffer]:
    """:func:`ndjson_polars`'s bytes for ``table``, in pieces to write one after the other.

    With the compiled codec, written in C (``json_lines``, GIL released) batch by batch; a column
    type it does not take (only strings and int64: the losses and rejected schemas) falls back.
    """
    if not table.num_rows:
        return []
    native = codec.native_lines()
    # column names reach C as C strings: one with a NUL inside would be cut there
    if native is not None and not any("\x00" in name for name in table.column_names):
        try:
            return [pa.foreign_buffer(*native.json_lines(b)) for b in table.to_batches() if b.num_rows]
        except ValueError:
            pass
    return [ndjson_polars(table)]


class JsonlTable:
    """Writes tables as JSON Lines (one object per row, every column, nulls included).

    The single-file layout's losses and rejections beside a JSONL output: written in the worker,
    so joining the shards is a plain concatenation.
    """

    def __init__(self, path: NewFile) -> None:
        self.file = HashedFile(path)

    def write_table(self, table: pa.Table) -> None:
        for part in jsonl_parts(table):
            self.file.write(part)

    def close(self) -> None:
        self.file.close()


def folders(layout: str, encoded: bool) -> tuple[str, ...]:
    """The folders a run of this layout writes (``output`` only for a wire target)."""
    if layout == SINGLE_FILE:
        return ("output", "losses", "rejected") if encoded else ("conversations", "rejected")
    return FOLDERS if encoded else tuple(f for f in FOLDERS if f != "output")


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            h.update(block)
    return h.hexdigest()


class ShardWriter:
    """Streams one shard's conversations, encoded output, losses and rejections to temp files.

    Beside them it writes the shard's audit facts: the item index, the record index and the
    per-shard counts. Losses given to :meth:`losses` are joined to the records of the next
    :meth:`conversations` call (the engine reports a batch's losses before its conversations).
    """

    def __init__(
        self,
        run_dir: Path,
        shard: str,
        encoded: bool,
        target: str | None = None,
        layout: str = RUN,
        dropped: bool = False,
        losses_format: str = "jsonl",
    ) -> None:
        self.shard, self.target = shard, target
        # dropped/: a job with a grouping step (engine/dropped.py)
        names = folders(layout, encoded) + ((DROPPED,) if dropped else ())
        # beside a single JSONL file, losses and rejections are JSONL too (joined by concatenation);
        # beside a single Parquet file, conversations are Arrow (compressed once, by the join)
        ext = dict.fromkeys(names, "parquet") | {"output": "jsonl"}
        if layout == SINGLE_FILE:
            ext |= {"losses": "jsonl", "rejected": "jsonl"} if encoded else {"conversations": "arrow"}
            if losses_format == "parquet":  # FILE.losses.parquet: staged as Arrow, written once by the join
                ext["losses"] = "arrow"
        self.final = {name: run_dir / name / f"{shard}.{ext[name]}" for name in names}
        # The single-file layout pays for no audit facts, and for no conversations/ with a wire target.
        self.facts = "items" in names
        self.keep_conversations = "conversations" in names
        # The pid keeps a stray worker of a killed run from writing into this run's temp files.
        self.tmp = {k: p.with_name(f".{p.name}.{os.getpid()}{TMP_SUFFIX}") for k, p in self.final.items()}
        # created here, exclusively and never through a link; writers open these very files
        self.new: dict[str, NewFile] = {}
        try:
            for k, p in self.tmp.items():
                self.new[k] = NewFile(p)
        except BaseException:
            for f in self.new.values():
                f.discard()
            raise
        self.rows = dict.fromkeys(self.final, 0)
        self._conv: pq.ParquetWriter | ArrowTable | None = None
        self._items: pq.ParquetWriter | None = None
        self._records: pq.ParquetWriter | None = None
        if self.facts:
            self._items = table_writer(self.new["items"].where, ITEM_INDEX_SCHEMA)
            self._records = table_writer(self.new["records"].where, RECORD_INDEX_SCHEMA)
        self._counts: dict[str, list[pa.Table]] = {name: [] for name in shard_counts.FOLDERS}
        self._top: list[pa.Table] = []  # each batch's top_losses, reduced to the shard's at commit
        self._pending_losses: list[pa.Table] = []
        self._losses: pq.ParquetWriter | JsonlTable | ArrowTable | None = None
        if "losses" in names:
            self._losses = self._table_writer("losses", LOSSES_SCHEMA)
        self._rejected = self._table_writer("rejected", REJECTED_SCHEMA)
        self._dropped: pq.ParquetWriter | None = None
        self._dropped_schema: pa.Schema | None = None
        self._out = HashedFile(self.new["output"]) if encoded else None

    def _table_writer(self, name: str, schema: pa.Schema) -> pq.ParquetWriter | JsonlTable | ArrowTable:
        if self.final[name].suffix == ".jsonl":
            return JsonlTable(self.new[name])
        if self.final[name].suffix == ".arrow":
            return ArrowTable(self.new[name], schema)
        return table_writer(self.new[name].where, schema)

    def conversations(self, table: pa.Table) -> None:
        if not self.keep_conversations:
            return
        if self._conv is None:
            schema = table.schema.with_metadata(CONVERSATION_SCHEMA.metadata)
            if self.final["conversations"].suffix == ".arrow":
                self._conv = ArrowTable(self.new["conversations"], schema)
            else:
                self._conv = canonical_writer(self.new["conversations"].where, schema)
        losses = pa.concat_tables(self._pending_losses) if self._pending_losses else None
        self._pending_losses = []
        if table.num_rows:
            self._conv.write_table(table.cast(self._conv.schema))
            self.rows["conversations"] += table.num_rows
            if self._items is None or self._records is None:
                return
            index = item_index(table)
            self._items.write_table(index)
            self.rows["items"] += index.num_rows
            records = written_records(table, index, losses, self.shard, self.target)
            self._write_records(records)
            parents = pc.list_parent_indices(one_array(table.column("items"))).to_numpy()
            self._counts["item_counts"].append(shard_counts.item_counts(index, parents))
            self._counts["phase_counts"].append(shard_counts.phase_counts(index))

    def _write_records(self, records: pa.Table) -> None:
        assert self._records is not None
        self._records.write_table(records)
        self.rows["records"] += records.num_rows
        self._counts["record_counts"].append(shard_counts.record_counts(records))
        self._top.append(top_losses(records))

    def output(self, data: bytes | pa.Buffer, rows: int) -> None:
        assert self._out is not None
        self._out.write(data)
        self.rows["output"] += rows

    def losses(self, table: pa.Table) -> None:
        """Write a batch's losses (a ``LOSSES_SCHEMA`` table) as one row group."""
        n = table.num_rows
        if n and self._losses is not None:
            table = table.cast(LOSSES_SCHEMA)
            self._losses.write_table(table)
            self.rows["losses"] += n
            if self.facts:
                self._pending_losses.append(table)
                self._counts["loss_counts"].append(shard_counts.loss_counts(table))

    def rejected(self, rows: list[dict[str, Any]]) -> None:
        if rows:
            self._rejected.write_table(pa.Table.from_pylist(rows, schema=REJECTED_SCHEMA))
            self.rows["rejected"] += len(rows)
            if self.facts:
                self._write_records(rejected_records(rows, self.shard))

    def dropped(self, table: pa.Table) -> None:
        """Write records a grouping step dropped (engine/dropped.py), and their record-index rows."""
        if self._dropped is None:
            self._dropped = canonical_writer(
                self.new[DROPPED].where, table.schema.with_metadata(CONVERSATION_SCHEMA.metadata)
            )
        self._dropped.write_table(table.cast(self._dropped.schema))
        self.rows[DROPPED] += table.num_rows
        if self.facts:
            self._write_records(dropped_records(table, self.shard))

    def commit(self) -> dict[str, dict[str, Any]]:
        """Close, hash and rename every file into place; returns ``{folder: {path, rows, bytes, sha256}}``."""
        if DROPPED in self.tmp and self._dropped is None:  # none dropped: still one (empty) file
            self._dropped = canonical_writer(self.new[DROPPED].where, _DROPPED_EMPTY)
        if self._dropped is not None:
            self._dropped.close()
        if self.keep_conversations:
            if self._conv is None:  # a shard with no batch at all still has its (empty) file
                self.conversations(CONVERSATION_SCHEMA.empty_table())
            assert self._conv is not None
            self._conv.close()
        if self._items is not None and self._records is not None:
            self._items.close()
            self._records.close()
            self._commit_facts()
        if self._losses is not None:
            self._losses.close()
        self._rejected.close()
        if self._out is not None:
            self._out.close()
        # files written through a HashedFile were hashed as they were written; the rest are read back
        hashed = {
            "output": self._out,
            "losses": self._losses.file if isinstance(self._losses, JsonlTable) else None,
            "rejected": self._rejected.file if isinstance(self._rejected, JsonlTable) else None,
        }
        files = {}
        for k, tmp in self.tmp.items():
            h = hashed.get(k)
            files[k] = {
                "path": f"{k}/{self.final[k].name}",
                "rows": self.rows[k],
                "bytes": tmp.stat().st_size,
                "sha256": h.hexdigest() if h is not None else sha256_file(tmp),
            }
        for k, new in self.new.items():
            new.commit(self.final[k])
        return files

    def _commit_facts(self) -> None:
        for name, parts in self._counts.items():
            counts = shard_counts.merge(name, parts)
            pq.write_table(counts, self.new[name].where, compression="zstd")
            self.rows[name] = counts.num_rows
        top = top_losses(pa.concat_tables(self._top)) if self._top else None
        if top is None:
            top = RECORD_INDEX_SCHEMA.empty_table().select(list(TOP_LOSSES_COLUMNS))
        pq.write_table(top, self.new["top_losses"].where, compression="zstd")
        self.rows["top_losses"] = top.num_rows

    def abort(self) -> None:
        for w in (
            self._conv,
            self._items,
            self._records,
            self._losses,
            self._rejected,
            self._out,
            self._dropped,
        ):
            if w is not None:
                # Closing a half-written file after an error: the original error is what matters.
                with contextlib.suppress(Exception):
                    w.close()
        for new in self.new.values():
            new.discard()


class _MemoryParquet:
    """One table of a shard written to a whole Parquet file in memory (its writer made on first use)."""

    def __init__(self, open_writer: Any, schema: pa.Schema | None) -> None:
        self.open_writer, self.schema = open_writer, schema
        self.sink = pa.BufferOutputStream()
        self.w: pq.ParquetWriter | None = None
        self.rows = 0

    def write_table(self, table: pa.Table) -> None:
        if self.w is None:
            schema = self.schema or table.schema.with_metadata(CONVERSATION_SCHEMA.metadata)
            self.w = self.open_writer(self.sink, schema)
        if table.num_rows:
            self.w.write_table(table.cast(self.w.schema))
            self.rows += table.num_rows

    def close(self) -> pa.Buffer:
        if self.w is None:  # nothing given: still a whole (empty) file, with the role's columns
            self.w = self.open_writer(self.sink, self.schema or CONVERSATION_SCHEMA)
        self.w.close()
        return self.sink.getvalue()


class MemoryShardWriter:
    """A shard of ``convert``/``transform -o FILE`` held in memory until the parent appends it.

    The single-file layout writes every byte once (engine/single_file.py): the worker keeps the
    shard's JSON lines (as the encoder's buffers) and writes its tables as whole Parquet files in
    memory; :meth:`commit` returns their sizes and sha256 and leaves the bytes in :attr:`parts`,
    which the parent appends, in shard order, to the temp files that become ``FILE`` and its side
    files. Nothing of the shard touches the disk before that. Same calls as :class:`ShardWriter`.

    ``parts``: role -> ``{"kind": "jsonl", "data": [buffers], "rows": n}`` or
    ``{"kind": "parquet", "data": whole Parquet file, "rows": n}``.
    """

    def __init__(self, encoded: bool, losses_format: str = "jsonl") -> None:
        self.encoded = encoded
        self.jsonl: dict[str, list[bytes | pa.Buffer]] = {}
        self.tables: dict[str, _MemoryParquet] = {}
        self.rows: dict[str, int] = {}
        if encoded:
            self.jsonl = {"output": [], "rejected": []}
            if losses_format == "parquet":
                self.tables["losses"] = _MemoryParquet(table_writer, LOSSES_SCHEMA)
            else:
                self.jsonl["losses"] = []
        else:
            self.tables["conversations"] = _MemoryParquet(canonical_writer, None)
            self.tables["rejected"] = _MemoryParquet(canonical_writer, REJECTED_SCHEMA)
        self.rows = dict.fromkeys([*self.jsonl, *self.tables], 0)
        self.parts: dict[str, dict[str, Any]] = {}

    def _lines(self, role: str, table: pa.Table) -> None:
        self.jsonl[role] += jsonl_parts(table)
        self.rows[role] += table.num_rows

    def conversations(self, table: pa.Table) -> None:
        if "conversations" in self.tables:
            self.tables["conversations"].write_table(table)

    def output(self, data: bytes | pa.Buffer, rows: int) -> None:
        self.jsonl["output"].append(data)
        self.rows["output"] += rows

    def losses(self, table: pa.Table) -> None:
        if not table.num_rows or not self.encoded:
            return
        table = table.cast(LOSSES_SCHEMA)
        if "losses" in self.tables:
            self.tables["losses"].write_table(table)
        else:
            self._lines("losses", table)

    def rejected(self, rows: list[dict[str, Any]]) -> None:
        if not rows:
            return
        table = pa.Table.from_pylist(rows, schema=REJECTED_SCHEMA)
        if "rejected" in self.tables:
            self.tables["rejected"].write_table(table)
        else:
            self._lines("rejected", table)

    def dropped(self, table: pa.Table) -> None:
        raise RuntimeError("a grouping job stages its shards (engine/single_file.py): no dropped rows here")

    def commit(self) -> dict[str, dict[str, Any]]:
        """The shard's ``{role: {rows, bytes, sha256}}`` (of the bytes the parent will append: the
        JSON lines, or a Parquet file's column chunks); the bytes themselves go to :attr:`parts`."""
        files: dict[str, dict[str, Any]] = {}
        for role, chunks in self.jsonl.items():
            sha, n = hashlib.sha256(), 0
            for c in chunks:
                sha.update(c)  # releases the GIL on large data
                n += len(c)
            files[role] = {"rows": self.rows[role], "bytes": n, "sha256": sha.hexdigest()}
            self.parts[role] = {"kind": "jsonl", "data": chunks, "rows": self.rows[role]}
        for role, t in self.tables.items():
            data = t.close()
            body, _ = split(data)
            files[role] = {"rows": t.rows, "bytes": len(body), "sha256": hashlib.sha256(body).hexdigest()}
            self.parts[role] = {"kind": "parquet", "data": data, "rows": t.rows}
        return files

    def abort(self) -> None:
        self.jsonl.clear()
        self.tables.clear()
