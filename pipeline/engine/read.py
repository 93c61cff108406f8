"""Reading one shard as a stream of canonical batches, each with the records it rejected.

A batch is at most ``chunk_bytes`` of JSONL or ``batch_rows`` rows, so a worker's memory is bounded
by one batch whatever the shard or input size (a JSON array or document: the whole document, up to
its ``max_document_bytes``).

Format ``auto`` (wire records of several formats): each batch's lines are classified at once by
:func:`pipeline.sources.wire_kind.classify` and every format's lines go to ``decode_lines`` (the
compiled decoder) together, one batch per format found, each saying its format (``Batch.format``).
A record that fits several formats takes the file's: the majority of the file's first
``HEAD_LINES`` records (:class:`FileFormat`), the same for every batch of every shard of the file.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.formats import DecodeResult, Rejected, decode_files, decode_lines
from pipeline.io.run_tables import rejected_row
from pipeline.jobs.files import SKIPPED, is_url, open_arrow, open_input
from pipeline.jobs.resolve import CANONICAL
from pipeline.schema import CONVERSATION_SCHEMA, cast_to_canonical
from pipeline.sources import read_source
from pipeline.sources.detect import WIRE
from pipeline.sources.inputs import (
    MAX_DOCUMENT_BYTES,
    MAX_RECORD_BYTES,
    over_budget,
    record_batches,
    skip_line,
    too_long,
)
from pipeline.sources.wire_kind import NO_FORMAT, classify_fits, follow_the_file, majority
from pipeline.storage import local_path

from .shards import Shard

Where = tuple[str | None, int]  # a record's (source_file, source_line)


class NumberedLines(Mapping[Where, bytes]):
    """A batch's input lines by ``(source_file, source_line)``, kept as the list they were read in.

    Only rejected records' lines are ever looked up; a dict of every line cost ~0.14 CPU s per
    200,000 lines (and the garbage collector's passes over its keys) for those few.
    """

    def __init__(self, label: str | None, first: int, lines: list[bytes]) -> None:
        self.label, self.first, self.lines = label, first, lines

    def __getitem__(self, key: Where) -> bytes:
        file, n = key
        k = n - self.first if isinstance(n, int) else -1
        if file != self.label or not 0 <= k < len(self.lines):
            raise KeyError(key)
        return self.lines[k]

    def __iter__(self) -> Iterator[Where]:
        return ((self.label, n) for n in range(self.first, self.first + len(self.lines)))

    def __len__(self) -> int:
        return len(self.lines)
UNDETECTED = "undetected"  # Batch.format of records format auto could not give a format
NO_FORMAT_ERROR = "$: auto: the record fits no wire format (docs/sources.md#auto)"
# Decode errors that mean the line was not a JSON record at all (stage ``read``, not ``decode``).
_READ_ERRORS = ("$: invalid JSON", "$: expected object")


@dataclass
class Batch:
    """Canonical rows of one batch, the input records it rejected, and how many records it read."""

    table: pa.Table
    rejected: list[dict[str, Any]]
    read: int
    blank: int = 0
    # (source_file, source_line) -> input text (JSONL inputs, dataset rows)
    raw: Mapping[Where, bytes] = field(default_factory=dict)
    nbytes: int = 0  # input bytes this batch covers, for progress
    source_counts: dict[str, int] = field(default_factory=dict)  # a source adapter's counts (by name)
    # lines the compiled decoder handed to the Python one, by reason (DecodeResult.native_fallback)
    native_fallback: dict[str, int] = field(default_factory=dict)
    format: str | None = None  # format auto: the wire format of this batch's records
    # format auto: records by the format chosen for them (``undetected``: none; a line that is not a
    # JSON object is undetected, though the first format's decoder rejects it)
    detected: dict[str, int] = field(default_factory=dict)


def _from_rejected(
    r: Rejected, shard: Shard, raw: Mapping[Where, bytes] | None = None, fmt: str | None = None
) -> dict[str, Any]:
    """A record the decoder (or a source adapter) rejected, with its original bytes when we hold them."""
    stage = "read" if r.error.startswith(_READ_ERRORS) else "decode"
    original = raw.get((r.file or shard.label, r.line)) if raw is not None else None
    return rejected_row(
        r.file or shard.label, r.line, stage, r.error,
        raw=original or r.input, input_format=fmt or shard.format,  # a placeholder b"": its text
    )  # fmt: skip


HEAD_LINES = 1_000  # format auto: the file's first records, whose majority format the file's records follow


class FileFormat:
    """Format ``auto``: the format of one file, which a record that fits several takes (the
    majority, by the rule, of the file's first ``HEAD_LINES`` records, None when they have none).
    Decided once per shard reader: from the first lines it decodes when the shard starts the file,
    else from the file's head read again (``head``), so every shard of a big file decides alike."""

    def __init__(self, shard: Shard, head: Any = None) -> None:
        self.shard, self.head = shard, head
        self.known = False
        self.major: str | None = None

    def of(self, lines: list[bytes]) -> str | None:
        if not self.known:
            starts_file = self.shard.start == 0 or self.head is None
            head = lines if starts_file else self.head()
            self.major = majority(classify_fits([x for x in head[:HEAD_LINES] if x.strip()])[0])
            self.known = True
        return self.major


def _jsonl_head(url: str, chunk_bytes: int) -> list[bytes]:
    """The first lines of a JSONL file (at most ``HEAD_LINES``, within ``chunk_bytes``), whole."""
    with open_input(url) as f:
        data = f.read(chunk_bytes)
        more = bool(f.read(1))
    lines = data.split(b"\n")
    if more:  # the last piece may be cut
        lines.pop()
    return lines[:HEAD_LINES]


def _decoded(
    shard: Shard, lines: list[bytes], first: int, nbytes: int, pre: list[Rejected] | None = None,
    placeholders: int = 0, file_format: FileFormat | None = None,
) -> Iterator[Batch]:
    """Decode the lines numbered from ``first`` in the shard's format (format auto: by record,
    a record that fits several following ``file_format``; without one, these lines' majority)."""
    raw = NumberedLines(shard.label, first, lines)
    pre = pre or []
    if shard.format != WIRE:
        res = decode_lines(lines, shard.format, source_file=shard.label, first_line=first)
        yield _batch(res, shard, raw, nbytes, pre, placeholders)
        return
    major = file_format.of(lines) if file_format is not None and lines else None
    kinds = follow_the_file(*classify_fits(lines), major=major)
    found = sorted({k for k in kinds if k})  # the wire formats in this batch
    # A line that is not a JSON object goes with the batch's first format (or, in a batch with none,
    # the file's), whose decoder rejects it as every decoder does ("invalid JSON", "not an object");
    # a JSON object that fits no format is rejected here, saying so.
    home = found[0] if found else major
    bare = any(k is None and line.strip() for line, k in zip(lines, kinds, strict=True))
    if not found and home is not None and bare:
        found = [home]
    route = [home if k is None else (k or None) for k in kinds]
    unfit = [
        Rejected(n, _text(line), NO_FORMAT_ERROR, shard.label)
        for n, (line, k, to) in enumerate(zip(lines, kinds, route, strict=True), first)
        if to is None and (k == NO_FORMAT or line.strip())
    ]  # fmt: skip
    counted = Counter(kinds)
    blanks = counted.pop(None, 0) - sum(1 for line in lines if not line.strip())  # non-blank unparsable
    detected = {k or UNDETECTED: n for k, n in counted.items()}
    if blanks + counted.get(NO_FORMAT, 0):
        detected[UNDETECTED] = blanks + counted.get(NO_FORMAT, 0)
    if unfit or not found:  # their own batch: read, not detected as any format (``Batch.format``)
        blank = sum(1 for line in lines if not line.strip()) - placeholders if not found else 0
        rejected = [_from_rejected(r, shard, raw, WIRE) for r in [*pre, *unfit]]
        yield Batch(CONVERSATION_SCHEMA.empty_table(), rejected, len(rejected), blank, raw, nbytes,
                    format=UNDETECTED, detected=detected)  # fmt: skip
        pre, placeholders, nbytes, detected = [], 0 if not found else placeholders, 0, {}
    for fmt in found:
        mine = lines
        if len(found) > 1 or unfit:  # blank out the others' lines: numbers stay, the decoder skips them
            mine = [line if to == fmt else b"" for line, to in zip(lines, route, strict=True)]
        res = decode_lines(mine, fmt, source_file=shard.label, first_line=first)
        if mine is not lines:
            res.blank_lines -= sum(1 for to in route if to != fmt)
        batch = _batch(res, shard, raw, nbytes, pre, placeholders, fmt)
        batch.detected = detected
        yield batch
        pre, placeholders, nbytes, detected = [], 0, 0, {}


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace").rstrip("\r\n")


def _batch(
    res: DecodeResult, shard: Shard, raw: Mapping[Where, bytes], nbytes: int, pre: list[Rejected],
    placeholders: int, fmt: str | None = None,
) -> Batch:  # fmt: skip
    rejected = [_from_rejected(r, shard, raw, fmt) for r in [*pre, *res.rejected]]
    return Batch(
        res.table, rejected, res.table.num_rows + len(rejected), res.blank_lines - placeholders, raw, nbytes,
        native_fallback=res.native_fallback, format=fmt,
    )  # fmt: skip


def _jsonl(shard: Shard, chunk_bytes: int) -> Iterator[Batch]:
    line = shard.first
    fmt = FileFormat(shard, lambda: _jsonl_head(shard.url, chunk_bytes)) if shard.format == WIRE else None
    remaining = shard.end - shard.start
    rest = b""
    cap = int(shard.options.get("max_record_bytes", MAX_RECORD_BYTES))
    with open_input(shard.url) as f:
        f.seek(shard.start)

        def read() -> bytes:
            nonlocal remaining
            block = f.read(min(chunk_bytes, remaining)) if remaining > 0 else b""
            if remaining > 0 and not block:
                raise OSError(f"{shard.url} ended before byte {shard.end}: did it change during the run?")
            remaining -= len(block)
            return block

        while remaining > 0 or rest:
            block = read()
            if b"\n" in rest:  # the text after a line over budget (skip_line): rare, joined
                block, rest = rest + block, b""
            if remaining > 0 and block.rfind(b"\n") < 0:  # (``rest`` holds no newline now)
                data = rest + block
                if len(data) > cap:  # a record over budget: skipped, not held
                    skipped, after = skip_line(read)
                    size = len(data) + skipped - (after is not None)  # the line without its newline
                    bad = too_long(line, data, size, cap, shard.label)
                    yield from _decoded(shard, [], line, size, [bad], file_format=fmt)
                    line, rest = line + 1, after or b""
                    continue
                rest = data
                continue
            # Split the block itself and put the tail of the previous one in front of its first line:
            # ``rest + block`` would copy every block once more, onto fresh pages (~0.6 CPU s per GB).
            nbytes = len(rest) + len(block)
            lines = block.split(b"\n")
            lines[0] = rest + lines[0]
            if remaining > 0:  # the text after the last newline waits for the next block
                rest = lines.pop()
                nbytes -= len(rest)
            else:  # the end of the range: a last line without a newline is a line
                if lines[-1] == b"":
                    lines.pop()
                rest = b""
            lines, bad = over_budget(lines, line, cap, shard.label)
            yield from _decoded(shard, lines, line, nbytes, bad, len(bad), fmt)
            line += len(lines)


def merge(parts: list[Batch], table: pa.Table | None = None) -> Batch:
    """Several batches as one (``table``: their rows, when the caller has them already)."""
    if table is None:
        tables = [cast_to_canonical(b.table) for b in parts]
        table = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
    counts: Counter[str] = Counter()
    fallback: Counter[str] = Counter()
    detected: Counter[str] = Counter()
    for b in parts:  # update keeps zero counts, unlike Counter addition
        counts.update(b.source_counts)
        fallback.update(b.native_fallback)
        detected.update(b.detected)
    return Batch(
        table=table,
        rejected=[r for b in parts for r in b.rejected],
        read=sum(b.read for b in parts),
        blank=sum(b.blank for b in parts),
        raw={k: v for b in parts for k, v in b.raw.items()},
        nbytes=sum(b.nbytes for b in parts),
        source_counts=dict(counts),
        native_fallback=dict(fallback),
        # format auto: one format if every batch had the same (else the shard's label, ``auto``)
        format=parts[0].format if len({b.format for b in parts}) == 1 else None,
        detected=dict(detected),
    )


def _small_files(shard: Shard, chunk_bytes: int) -> Iterator[Batch]:
    """The member files of a shard of small files, each record with its own file and line, in
    batches of about ``chunk_bytes`` of input: the files' lines are decoded in one call per batch
    (:func:`pipeline.formats.decode_files`), so a file costs its read, not a decode call and a
    batch. Format auto classifies per file: each file is decoded as itself, and the batches after
    decoding merged."""
    if shard.format == WIRE:
        yield from _small_files_auto(shard, chunk_bytes)
        return
    files: list[tuple[str, list[bytes]]] = []
    size = 0
    for member in shard.files():
        with open_input(member.url) as f:
            data = f.read()
        lines = data.split(b"\n")
        if lines[-1] == b"":  # a last line without a newline is a line; the empty piece after one is not
            lines.pop()
        files.append((member.label, lines))
        size += len(data)
        if size >= chunk_bytes:
            yield _files_batch(shard, files, size)
            files, size = [], 0
    if files:
        yield _files_batch(shard, files, size)


def _files_batch(shard: Shard, files: list[tuple[str, list[bytes]]], nbytes: int) -> Batch:
    raw = {(name, n): line for name, lines in files for n, line in enumerate(lines, 1)}
    return _batch(decode_files(files, shard.format), shard, raw, nbytes, [], 0)


def _small_files_auto(shard: Shard, chunk_bytes: int) -> Iterator[Batch]:
    parts: list[Batch] = []
    size = 0
    for member in shard.files():
        for b in _jsonl(member, chunk_bytes):
            if parts and b.format != parts[0].format:
                yield merge(parts)
                parts, size = [], 0
            parts.append(b)
            size += b.nbytes
            if size >= chunk_bytes:
                yield merge(parts)
                parts, size = [], 0
    if parts:
        yield merge(parts)


def _stream(shard: Shard, chunk_bytes: int) -> Iterator[Batch]:
    """A whole file read by pipeline.sources.inputs: compressed, a JSON array or document, stdin."""
    cap = int(shard.options.get("max_document_bytes", MAX_DOCUMENT_BYTES))
    record_cap = int(shard.options.get("max_record_bytes", MAX_RECORD_BYTES))
    fmt = FileFormat(shard)  # a whole file: its first batch starts it
    with open_input(shard.url) as f:
        for b in record_batches(f, shard.label, chunk_bytes, cap, record_cap):
            yield from _decoded(shard, b.lines, b.first_line, b.nbytes, b.rejected, b.placeholders, fmt)


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
        with open_input(shard.url) as f, _footer(shard.url, f) as footer:
            # a local file is read by Arrow's own I/O; a URL's Python file object without Arrow's
            # threads (left reading it at exit, they aborted the process: rc 134)
            remote = is_url(shard.url)
            pf = pq.ParquetFile(f if remote else local_path(shard.url), metadata=footer)
            # Read only the row groups that hold the range: shard k of a file must not decode the
            # k shards before it (a 200,000-row transform in 5,000-row shards read the file 20 times).
            groups, offset, first = [], 0, None
            for g in range(pf.metadata.num_row_groups):
                rows = pf.metadata.row_group(g).num_rows
                if offset < shard.end and offset + rows > shard.start:
                    groups.append(g)
                    first = offset if first is None else first
                offset += rows
            if groups:
                assert first is not None
                batches = _exact(_windowed(pf, groups, batch_rows, threads=not remote), batch_rows)
                yield from _slice(batches, shard.start - first, shard.end - first, batch_rows)
        return
    src = open_arrow(shard.url)
    try:
        yield from _slice(pa.ipc.open_stream(src), shard.start, shard.end, batch_rows)
    finally:
        src.close()


# The parsed footers of the Parquet inputs being read, by (url, size), with how many shards are
# reading each: the worker threads of a process read shards of one file at once, and a footer is
# large in memory (172 MB for the 1,948 row groups of the 960,731-request log: one copy per
# thread before). Dropped when its last reader is done, so it does not outlive the reads (stage 2
# of a threads job would carry it).
_FOOTERS: dict[tuple[str, int], list[Any]] = {}
_FOOTERS_LOCK = threading.Lock()


@contextlib.contextmanager
def _footer(url: str, f: Any) -> Iterator[pq.FileMetaData]:
    """The footer of the Parquet file ``f`` (open at ``url``), shared with the shards of the same
    file (and size) being read at the same time."""
    key = (url, f.seek(0, os.SEEK_END))
    f.seek(0)
    with _FOOTERS_LOCK:
        entry = _FOOTERS.get(key)
        if entry is not None:
            entry[1] += 1
    if entry is None:
        meta = pq.read_metadata(f)
        f.seek(0)
        with _FOOTERS_LOCK:
            entry = _FOOTERS.setdefault(key, [meta, 0])
            entry[1] += 1
    try:
        yield entry[0]
    finally:
        with _FOOTERS_LOCK:
            entry[1] -= 1
            if entry[1] == 0 and _FOOTERS.get(key) is entry:
                del _FOOTERS[key]


WINDOW_BATCHES = 4  # row groups are read batch_rows x this many rows (or one group) per reader


def _windowed(
    pf: pq.ParquetFile, groups: list[int], batch_rows: int, threads: bool = True
) -> Iterator[pa.RecordBatch]:
    """The rows of ``groups`` in order, read by a new reader every few row groups (at least
    ``WINDOW_BATCHES`` batches of rows each). One ``iter_batches`` over all of a shard's row groups
    keeps memory outside the Arrow pool for every group it has read until it is done: RSS grew by
    ~4 MB per 5,000 rows, ~0.6 GB for a stage-1 shard of 300,000 requests (issue 17)."""
    window: list[int] = []
    rows = 0
    for g in groups:
        window.append(g)
        rows += pf.metadata.row_group(g).num_rows
        if rows >= batch_rows * WINDOW_BATCHES or g == groups[-1]:
            yield from pf.iter_batches(batch_size=batch_rows, row_groups=window, use_threads=threads)
            window, rows = [], 0


def _exact(batches: Iterator[pa.RecordBatch], batch_rows: int) -> Iterator[pa.RecordBatch]:
    """The same rows re-cut into batches of exactly ``batch_rows`` rows (the last fewer), as one
    ``iter_batches`` over all the groups cuts them: :func:`_slice`'s batches, and so every batch
    the engine processes, stay the same whatever the windows of :func:`_windowed`."""
    pending: list[pa.RecordBatch] = []
    n = 0
    for b in batches:
        if not pending and b.num_rows == batch_rows:  # a whole batch inside a window: no copy
            yield b
            continue
        pending.append(b)
        n += b.num_rows
        while n >= batch_rows:
            table = pa.Table.from_batches(pending)
            yield table.slice(0, batch_rows).combine_chunks().to_batches()[0]
            pending = table.slice(batch_rows).to_batches()
            n -= batch_rows
    rest = [b for b in pending if b.num_rows]
    if rest:
        yield pa.Table.from_batches(rest).combine_chunks().to_batches()[0]


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

    def head() -> list[bytes]:
        first = next(_rows(replace(shard, start=0, end=HEAD_LINES), HEAD_LINES), None)
        return [orjson.dumps(_drop_nulls(r)) for r in first.to_pylist()] if first is not None else []

    fmt = FileFormat(shard, head)
    for table in _rows(shard, batch_rows):
        nbytes = round(per_row * table.num_rows)
        if shard.format == CANONICAL:
            yield Batch(cast_to_canonical(table), [], table.num_rows, nbytes=nbytes)
        else:
            # A dataset of wire records (e.g. an HF ``messages`` column): each row is one record.
            lines = [orjson.dumps(_drop_nulls(r)) for r in table.to_pylist()]
            yield from _decoded(shard, lines, row + 1, nbytes, file_format=fmt)
        row += table.num_rows


def _source(shard: Shard) -> Iterator[Batch]:
    for res in read_source(shard.url, shard.format, **shard.options):
        table = res.table if res.table is not None else CONVERSATION_SCHEMA.empty_table()
        rejected = [_from_rejected(r, shard) for r in res.rejected]
        counts = {f"{shard.format}:{k}": v for k, v in res.counts.items()}
        yield Batch(cast_to_canonical(table), rejected, table.num_rows + len(rejected), source_counts=counts)
    yield Batch(CONVERSATION_SCHEMA.empty_table(), [], 0, nbytes=shard.weight)


PARTITION = "partition"  # Shard.container of a partition of the two-stage job (engine/partition.py)


def read_table(path: str | Path, columns: list[str] | None = None) -> pa.Table:
    """A table file the engine wrote: Arrow IPC (``.arrow``: stage-1 partitions, the single-file
    layout's conversations) or Parquet; all columns, or ``columns``."""
    if Path(path).suffix == ".arrow":
        with pa.memory_map(str(path)) as src:
            table = pa.ipc.open_file(src).read_all()
        return table.select(columns) if columns else table
    return pq.read_table(path, columns=columns)


def _partition(shard: Shard) -> Iterator[Batch]:
    """One partition of a grouping job: its partition files (canonical rows, and any columns the
    steps before the grouping step added) as one batch, with the records stage 1 rejected that
    were routed to it (``options``: ``files`` and ``rejected``, absolute paths, in stage-1 order)."""
    # .arrow since stage 1 writes IPC (engine/partition.py, _Files); .parquet in older runs
    tables = [read_table(path) for path in shard.options["files"]]
    rejected = [r for path in shard.options["rejected"] for r in pq.read_table(path).to_pylist()]
    table = pa.concat_tables(tables) if tables else CONVERSATION_SCHEMA.empty_table()
    yield Batch(table, rejected, table.num_rows + len(rejected), nbytes=shard.weight)


def _skipped(shard: Shard) -> Iterator[Batch]:
    """A file no reader recognises (jobs/resolve.py): one rejected record, stage ``detect``, saying why."""
    row = rejected_row(shard.label, None, DETECT, shard.options["reason"])
    yield Batch(CONVERSATION_SCHEMA.empty_table(), [row], 1, nbytes=shard.weight)


DETECT = "detect"  # the stage of a file rejected whole


def read_shard(shard: Shard, chunk_bytes: int, batch_rows: int) -> Iterator[Batch]:
    """The batches of one shard, in input order."""
    if shard.container == SKIPPED:
        return _skipped(shard)
    if shard.container == PARTITION:
        return _partition(shard)
    if shard.members:
        return _small_files(shard, chunk_bytes)
    if shard.container == "jsonl":
        return _jsonl(shard, chunk_bytes)
    if shard.container == "stream":
        return _stream(shard, chunk_bytes)
    if shard.container in ("parquet", "arrow"):
        return _tabular(shard, batch_rows)
    return _source(shard)
