"""The convert job: JSONL or canonical Parquet in, JSONL or canonical Parquet out.

Inputs are cut into line-aligned chunks; worker processes decode (and encode) chunks in parallel and
the parent writes their results in input order, so output order equals input order and memory is
bounded by ``workers x in-flight chunks``. Every non-blank input line is either written or
rejected; the report's counts always satisfy ``read == written + rejected``.
"""

from __future__ import annotations

import multiprocessing
import os
import re
import time
from collections import Counter, deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.formats import CODECS, WIRE_FORMATS, Rejected, decode_lines, gc_paused
from pipeline.formats._common import ConversationView, RecordError
from pipeline.io.jsonl import DEFAULT_CHUNK_BYTES, Chunk, iter_chunks
from pipeline.schema import CONVERSATION_SCHEMA, cast_to_canonical

PARQUET = "parquet"
FORMATS = (*WIRE_FORMATS, PARQUET)


class ConfigError(ValueError):
    """A job that cannot run as configured; the message says what to fix."""


@dataclass
class ConvertConfig:
    inputs: list[Path]
    source: str
    target: str
    output: Path
    report: Path | None = None
    workers: int = field(default_factory=lambda: min(2, os.cpu_count() or 1))
    chunk_bytes: int = DEFAULT_CHUNK_BYTES
    batch_rows: int = 20_000

    def validate(self) -> None:
        """Fail before any work, with a message that says what to fix."""
        if self.source not in FORMATS:
            raise ConfigError(f"--from {self.source!r} is not a format; use one of {', '.join(FORMATS)}")
        if self.target not in FORMATS:
            raise ConfigError(f"--to {self.target!r} is not a format; use one of {', '.join(FORMATS)}")
        if PARQUET not in (self.source, self.target) and self.source != self.target:
            raise ConfigError(
                f"converting {self.source} to {self.target} is not supported yet; "
                f"convert to parquet, or to {self.source}"
            )
        if not self.inputs:
            raise ConfigError("no input files given")
        for p in self.inputs:
            if not p.is_file():
                raise ConfigError(f"input {str(p)!r} does not exist or is not a file")
        out = self.output.resolve()
        for p in (self.output, rejected_path(self.output), *([self.report] if self.report else [])):
            if p.resolve() in {i.resolve() for i in self.inputs}:
                raise ConfigError(f"output {str(p)!r} would overwrite an input; choose another --output")
        if out.is_dir():
            raise ConfigError(f"--output {str(self.output)!r} is a directory; give a file path")
        if self.workers < 1:
            raise ConfigError("--workers must be at least 1")


def rejected_path(output: Path) -> Path:
    return output.with_name(output.name + ".rejected.jsonl")


@dataclass
class ChunkResult:
    table: pa.Table | None
    jsonl: bytes | None
    rejected: list[Rejected]
    read: int
    blank: int
    formats: Counter[str]  # records read, by format
    rejected_formats: Counter[str]
    record_kinds: Counter[str]  # records decoded, by request/response


def _encode_rows(
    table: pa.Table, fmt: str, lines: list[int], source_file: str | None
) -> tuple[bytes, list[Rejected], Counter[str]]:
    """Encode every row; a row that cannot be encoded is rejected (its input is its id)."""
    with gc_paused():
        return _encode_rows_unpaused(table, fmt, lines, source_file)


def _encode_rows_unpaused(
    table: pa.Table, fmt: str, lines: list[int], source_file: str | None
) -> tuple[bytes, list[Rejected], Counter[str]]:
    view = ConversationView(table)
    encode = CODECS[fmt].encode
    ids = table.column("conversation_id").to_pylist()
    out: list[bytes] = []
    rejected: list[Rejected] = []
    rejected_formats: Counter[str] = Counter()
    for r in range(view.n):
        try:
            if view.source_format[r] != fmt:
                raise RecordError(
                    "$", f"record is {view.source_format[r]}; converting it to {fmt} is not supported yet"
                )
            out.append(orjson.dumps(encode(view, r)))
        except (RecordError, ValueError, KeyError, TypeError) as e:
            rejected.append(Rejected(lines[r], ids[r], f"encode: {e}", source_file))
            rejected_formats[view.source_format[r]] += 1
    return (b"\n".join(out) + b"\n") if out else b"", rejected, rejected_formats


def process_chunk(task: tuple[str, str, Any]) -> ChunkResult:
    """Decode and/or encode one chunk (runs in a worker process)."""
    source, target, payload = task
    if source == PARQUET:
        source_file, first_row, table = payload
        table = cast_to_canonical(table)
        formats = Counter(table.column("source_format").to_pylist())
        kinds = Counter(table.column("record_kind").to_pylist())
        if target == PARQUET:
            return ChunkResult(table, None, [], table.num_rows, 0, formats, Counter(), kinds)
        # For Parquet input the "line" of a rejected row is its 1-based row number in the file.
        rows = list(range(first_row + 1, first_row + 1 + table.num_rows))
        data, rejected, rejected_formats = _encode_rows(table, target, rows, source_file)
        if rejected:
            all_kinds = table.column("record_kind").to_pylist()
            kinds.subtract(all_kinds[r.line - first_row - 1] for r in rejected)
        return ChunkResult(None, data, rejected, table.num_rows, 0, formats, rejected_formats, +kinds)
    chunk: Chunk = payload
    res = decode_lines(chunk.lines(), source, source_file=chunk.source_file, first_line=chunk.first_line)
    read = res.table.num_rows + len(res.rejected)
    formats = Counter({source: read})
    rejected_formats = Counter({source: len(res.rejected)})
    kinds = Counter(res.table.column("record_kind").to_pylist())
    if target == PARQUET:
        return ChunkResult(
            res.table, None, res.rejected, read, res.blank_lines, formats, rejected_formats, kinds
        )
    lines = res.table.column("source_line").to_pylist()
    data, rejected, more = _encode_rows(res.table, target, lines, chunk.source_file)
    rejected_formats.update(more)
    return ChunkResult(
        None, data, res.rejected + rejected, read, res.blank_lines, formats, rejected_formats, kinds
    )


def _tasks(cfg: ConvertConfig) -> Iterator[tuple[str, str, Any]]:
    for path in cfg.inputs:
        if cfg.source == PARQUET:
            row = 0
            pf = pq.ParquetFile(path)
            for batch in pf.iter_batches(batch_size=cfg.batch_rows):
                yield (cfg.source, cfg.target, (str(path), row, pa.Table.from_batches([batch])))
                row += batch.num_rows
        else:
            for chunk in iter_chunks(path, cfg.chunk_bytes):
                yield (cfg.source, cfg.target, chunk)


def _ordered(tasks: Iterator[tuple[str, str, Any]], workers: int) -> Iterator[ChunkResult]:
    """Run tasks on a process pool with at most ``2 x workers`` in flight, yielding in order."""
    first = next(tasks, None)
    if first is None:
        return
    second = next(tasks, None)
    if workers == 1 or second is None:  # small input: no pool start-up cost
        yield process_chunk(first)
        if second is not None:
            yield process_chunk(second)
        for t in tasks:
            yield process_chunk(t)
        return
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
        inflight: deque[Future[ChunkResult]] = deque(
            [pool.submit(process_chunk, first), pool.submit(process_chunk, second)]
        )
        for t in tasks:
            if len(inflight) >= 2 * workers:
                yield inflight.popleft().result()
            inflight.append(pool.submit(process_chunk, t))
        while inflight:
            yield inflight.popleft().result()


_PATH_PREFIX = re.compile(r"^\$[^:]*: ")


def reason_of(error: str) -> str:
    """The reason of a rejection without its location, for counting (``$.input[3]: x`` -> ``x``)."""
    return _PATH_PREFIX.sub("", error)


def run_convert(cfg: ConvertConfig, progress: Callable[[int], None] | None = None) -> dict[str, Any]:
    """Run a convert job and return its report (also written to ``cfg.report`` when set)."""
    cfg.validate()
    started = time.perf_counter()
    cfg.output.parent.mkdir(parents=True, exist_ok=True)
    read = written = blank = 0
    formats: Counter[str] = Counter()
    record_kinds: Counter[str] = Counter()
    rejected_by_format: Counter[str] = Counter()
    reasons: Counter[str] = Counter()
    n_rejected = 0
    writer: pq.ParquetWriter | None = None
    with open(rejected_path(cfg.output), "wb") as rej, open(cfg.output, "wb") as out:
        if cfg.target == PARQUET:
            writer = pq.ParquetWriter(out, CONVERSATION_SCHEMA, compression="zstd")
        for res in _ordered(_tasks(cfg), cfg.workers):
            read += res.read
            blank += res.blank
            formats.update(res.formats)
            rejected_by_format.update(res.rejected_formats)
            if res.table is not None:
                assert writer is not None
                writer.write_table(res.table)
                written += res.table.num_rows
            if res.jsonl is not None:
                out.write(res.jsonl)
                written += res.jsonl.count(b"\n")
            for r in res.rejected:
                rej.write(orjson.dumps(r.to_json()) + b"\n")
                reasons[reason_of(r.error)] += 1
            n_rejected += len(res.rejected)
            record_kinds.update(res.record_kinds)
            if progress is not None:
                progress(res.read)
        if writer is not None:
            writer.close()
    assert read == written + n_rejected, (read, written, n_rejected)
    report: dict[str, Any] = {
        "inputs": [str(p) for p in cfg.inputs],
        "from": cfg.source,
        "to": cfg.target,
        "output": str(cfg.output),
        "rejected_file": str(rejected_path(cfg.output)),
        "read": read,
        "written": written,
        "rejected": n_rejected,
        "blank_lines": blank,
        "by_format": {
            fmt: {
                "read": n,
                "written": n - rejected_by_format.get(fmt, 0),
                "rejected": rejected_by_format.get(fmt, 0),
            }
            for fmt, n in sorted(formats.items())
        },
        "by_record_kind": dict(sorted(record_kinds.items())),
        "rejected_reasons": dict(reasons.most_common()),
        "seconds": round(time.perf_counter() - started, 3),
    }
    if cfg.report is not None:
        cfg.report.parent.mkdir(parents=True, exist_ok=True)
        cfg.report.write_bytes(orjson.dumps(report, option=orjson.OPT_INDENT_2) + b"\n")
    return report
