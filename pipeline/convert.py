"""The convert job: JSONL or canonical Parquet in, JSONL or canonical Parquet out.

Inputs are cut into line-aligned chunks; worker processes decode (and encode) chunks in parallel and
the parent writes their results in input order, so output order equals input order and memory is
bounded by ``workers x in-flight chunks``. Every non-blank input line is either written or
rejected; the report's counts always satisfy ``read == written + rejected``.

Workers read their own byte range of the input (the parent only finds the boundaries) and hand
decoded tables back as memory-mapped Arrow IPC files, not pickles; docs/ingest-profile.md says
what each part of an ingest costs.
"""

from __future__ import annotations

import multiprocessing
import os
import tempfile
import time
from collections import Counter, deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.errors import ConfigError, reason_of
from pipeline.formats import WIRE_FORMATS, Rejected, decode_lines
from pipeline.io.jsonl import DEFAULT_CHUNK_BYTES, Chunk, iter_chunks
from pipeline.io.parquet import writer as parquet_writer
from pipeline.io.table_handoff import HandedOff, hand_off, handoff_dir, take
from pipeline.losses import LossPolicy
from pipeline.schema import cast_to_canonical
from pipeline.sources import SOURCES, detect_source, read_source

PARQUET = "parquet"
FORMATS = (*WIRE_FORMATS, PARQUET)
AUTO = "auto"
# --from also takes a source adapter (read per file, not in line chunks) or "auto" (detected per file)
# (each once: sharegpt is both a wire format and a source)
INPUT_FORMATS = tuple(dict.fromkeys((*FORMATS, *SOURCES, AUTO)))


@dataclass
class ConvertConfig:
    inputs: list[Path]
    source: str
    target: str
    output: Path
    report: Path | None = None
    workers: int = field(default_factory=lambda: min(2, os.cpu_count() or 1))
    chunk_bytes: int = DEFAULT_CHUNK_BYTES
    batch_rows: int = 5_000  # Parquet rows per task: each becomes ~1M Python objects when encoded
    policy: LossPolicy = field(default_factory=LossPolicy)

    def validate(self) -> None:
        """Fail before any work, with a message that says what to fix."""
        from pipeline.encoders import supported  # see _encode_rows: workers need not import encoders

        if self.source not in INPUT_FORMATS:
            raise ConfigError(
                f"--from {self.source!r} is not a format; use one of {', '.join(INPUT_FORMATS)}"
            )
        if self.target not in FORMATS:
            raise ConfigError(f"--to {self.target!r} is not a format; use one of {', '.join(FORMATS)}")
        # a source adapter yields rows of several wire formats: every target is checked per row
        if self.source in FORMATS and PARQUET not in (self.source, self.target) and not supported(
            self.source, self.target
        ):
            raise ConfigError(
                f"converting {self.source} to {self.target} is not supported yet; "
                f"convert to parquet, or to {self.source}"
            )
        if not self.inputs:
            raise ConfigError("no input files given")
        for p in self.inputs:
            if not p.is_file():
                raise ConfigError(f"input {str(p)!r} does not exist or is not a file")
            if self.source == AUTO and detect_source(p) is None:
                raise ConfigError(
                    f"cannot tell which source {str(p)!r} is; pass --from with one of {', '.join(SOURCES)}"
                )
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


def losses_path(output: Path) -> Path:
    return output.with_name(output.name + ".losses.jsonl")


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
    losses: bytes = b""  # {"line", "losses"} lines for written records that lost something
    loss_kinds: Counter[str] = field(default_factory=Counter)
    lossy_records: int = 0
    source_counts: Counter[str] = field(default_factory=Counter)  # source adapters' line/record counts
    handed_off: HandedOff | None = None  # ``table``, written by a worker for the parent to map


def process_source_file(source: str, target: str, path: str, policy: LossPolicy) -> ChunkResult:
    """Read one file with a source adapter (runs in a worker); ``read`` counts conversations + rejects."""
    name = detect_source(Path(path)) if source == AUTO else source
    assert name is not None  # validate() checked it
    results = list(read_source(Path(path), name))
    table = pa.concat_tables([r.table for r in results])
    rejected = [x for r in results for x in r.rejected]
    counts: Counter[str] = Counter()
    for r in results:
        counts.update(r.counts)
    read = table.num_rows + len(rejected)
    formats = Counter(table.column("source_format").to_pylist())
    source_rejected = Counter({name: len(rejected)} if rejected else {})  # no wire format yet
    formats.update(source_rejected)
    kinds = Counter(table.column("record_kind").to_pylist())
    if target == PARQUET:
        res = ChunkResult(table, None, rejected, read, 0, formats, source_rejected, kinds)
    else:
        lines = table.column("source_line").to_pylist()
        enc = _encode_rows(table, target, lines, path, policy)
        rejected_formats = source_rejected + enc.rejected_formats
        res = ChunkResult(
            None, enc.data, rejected + enc.rejected, read, 0, formats, rejected_formats, kinds,
            enc.losses, enc.loss_kinds, enc.lossy_records,
        )  # fmt: skip
    res.source_counts = Counter({f"{name}:{k}": v for k, v in counts.items()})
    return res


@dataclass
class _Encoded:
    data: bytes
    rejected: list[Rejected]
    rejected_formats: Counter[str]
    losses: bytes
    loss_kinds: Counter[str]
    lossy_records: int


def _encode_rows(
    table: pa.Table,
    target: str,
    lines: list[int],
    source_file: str | None,
    policy: LossPolicy,
    raw: dict[int, bytes] | None = None,
) -> _Encoded:
    """Encode every row; a row that fails, or whose losses the policy refuses, is rejected.

    :func:`encode_rows` converts column at a time where it can (Responses -> Chat) and gives the
    same bytes as the per-record encoders; only rejected rows are visited one by one here.
    """
    # Imported here: the encoders (and Polars) cost a spawned worker ~0.45 s of start-up, and
    # workers that decode to Parquet never encode.
    from pipeline.encoders.vectorized.encode_rows import encode_rows

    enc = encode_rows(table, target)
    refused = enc.refused_kinds(policy)
    failed = enc.errors.is_valid().to_numpy(zero_copy_only=False)
    keep = ~(failed | refused.is_valid().to_numpy(zero_copy_only=False))
    rejected: list[Rejected] = []
    rejected_formats: Counter[str] = Counter()
    bad = np.flatnonzero(~keep)
    if len(bad):
        formats = table.column("source_format").to_pylist()
        ids = table.column("conversation_id").to_pylist()
        errors = enc.errors.to_pylist()
        refused_list = refused.to_pylist()
        lost = enc.losses_of(bad)
        for r in bad.tolist():
            line = lines[r]
            text = raw[line].decode("utf-8", "replace") if raw is not None else ids[r]
            if errors[r] is not None:
                rejected.append(Rejected(line, text, f"encode: {errors[r]}", source_file))
            else:
                rej = Rejected(line, text, f"loss: {refused_list[r]} (--on-loss reject)", source_file)
                rej.losses = lost.get(r, [])
                rejected.append(rej)
            rejected_formats[formats[r]] += 1
    kinds, lossy = enc.kept_loss_counts(keep)
    return _Encoded(enc.jsonl(keep), rejected, rejected_formats, enc.loss_lines(keep, pa.array(lines)), kinds,
                    lossy)  # fmt: skip


def process_chunk(task: tuple[str, str, Any, LossPolicy]) -> ChunkResult:
    """Decode and/or encode one chunk (runs in a worker process)."""
    source, target, payload, policy = task
    if source not in FORMATS:
        return process_source_file(source, target, payload, policy)
    if source == PARQUET:
        source_file, first_row, table = payload
        table = cast_to_canonical(table)
        formats = Counter(table.column("source_format").to_pylist())
        kinds = Counter(table.column("record_kind").to_pylist())
        if target == PARQUET:
            return ChunkResult(table, None, [], table.num_rows, 0, formats, Counter(), kinds)
        # For Parquet input the "line" of a rejected row is its 1-based row number in the file.
        rows = list(range(first_row + 1, first_row + 1 + table.num_rows))
        enc = _encode_rows(table, target, rows, source_file, policy)
        return ChunkResult(
            None, enc.data, enc.rejected, table.num_rows, 0, formats, enc.rejected_formats, kinds,
            enc.losses, enc.loss_kinds, enc.lossy_records,
        )  # fmt: skip
    chunk: Chunk = payload
    chunk_lines = chunk.lines()
    res = decode_lines(chunk_lines, source, source_file=chunk.source_file, first_line=chunk.first_line)
    read = res.table.num_rows + len(res.rejected)
    formats = Counter({source: read})
    rejected_formats = Counter({source: len(res.rejected)})
    kinds = Counter(res.table.column("record_kind").to_pylist())
    if target == PARQUET:
        return ChunkResult(
            res.table, None, res.rejected, read, res.blank_lines, formats, rejected_formats, kinds
        )
    lines = res.table.column("source_line").to_pylist()
    raw = (
        dict(enumerate(chunk_lines, chunk.first_line))
        if target != source or policy.on_loss != "allow"
        else None
    )
    enc = _encode_rows(res.table, target, lines, chunk.source_file, policy, raw)
    rejected_formats.update(enc.rejected_formats)
    return ChunkResult(
        None, enc.data, res.rejected + enc.rejected, read, res.blank_lines, formats, rejected_formats, kinds,
        enc.losses, enc.loss_kinds, enc.lossy_records,
    )  # fmt: skip


def _tasks(cfg: ConvertConfig) -> Iterator[tuple[str, str, Any, LossPolicy]]:
    for path in cfg.inputs:
        if cfg.source not in FORMATS:
            yield (cfg.source, cfg.target, str(path), cfg.policy)
        elif cfg.source == PARQUET:
            row = 0
            pf = pq.ParquetFile(path)
            for batch in pf.iter_batches(batch_size=cfg.batch_rows):
                yield (cfg.source, cfg.target, (str(path), row, pa.Table.from_batches([batch])), cfg.policy)
                row += batch.num_rows
        else:
            for chunk in iter_chunks(path, cfg.chunk_bytes):
                yield (cfg.source, cfg.target, chunk, cfg.policy)


def _ordered(tasks: Iterator[tuple[str, str, Any, LossPolicy]], workers: int) -> Iterator[ChunkResult]:
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
    with (
        tempfile.TemporaryDirectory(prefix="chatlake-convert-", dir=handoff_dir()) as handoff,
        ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool,
    ):
        n = 0

        def submit(task: tuple[str, str, Any, LossPolicy]) -> Future[ChunkResult]:
            nonlocal n
            n += 1
            return pool.submit(_process_in_worker, task, os.path.join(handoff, f"{n}.arrow"))

        inflight: deque[Future[ChunkResult]] = deque([submit(first), submit(second)])
        for t in tasks:
            if len(inflight) >= 2 * workers:
                yield _received(inflight.popleft().result())
            inflight.append(submit(t))
        while inflight:
            yield _received(inflight.popleft().result())


def _process_in_worker(task: tuple[str, str, Any, LossPolicy], handoff_path: str) -> ChunkResult:
    """:func:`process_chunk` in a pool worker: a table result goes back as a file, not a pickle."""
    res = process_chunk(task)
    if res.table is not None:
        res.handed_off = hand_off(res.table, handoff_path)
        if res.handed_off is not None:
            res.table = None
    return res


def _received(res: ChunkResult) -> ChunkResult:
    """A worker's result with its handed-over table mapped back in (and its file removed)."""
    if res.handed_off is not None:
        res.table, res.handed_off = take(res.handed_off), None
    return res


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
    loss_kinds: Counter[str] = Counter()
    source_counts: Counter[str] = Counter()
    lossy = 0
    writer: pq.ParquetWriter | None = None
    with (
        open(rejected_path(cfg.output), "wb") as rej,
        open(cfg.output, "wb") as out,
        open(losses_path(cfg.output), "wb") as loss_file,
    ):
        if cfg.target == PARQUET:
            writer = parquet_writer(out)
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
                loss_file.write(res.losses)
                loss_kinds.update(res.loss_kinds)
                lossy += res.lossy_records
            for r in res.rejected:
                rej.write(orjson.dumps(r.to_json()) + b"\n")
                reasons[reason_of(r.error)] += 1
            n_rejected += len(res.rejected)
            record_kinds.update(res.record_kinds)
            source_counts.update(res.source_counts)
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
        "losses": {
            "file": str(losses_path(cfg.output)),
            "records_with_losses": lossy,
            "by_kind": dict(loss_kinds.most_common()),
        },
        "seconds": round(time.perf_counter() - started, 3),
    }
    if source_counts:
        report["source_counts"] = dict(sorted(source_counts.items()))
    if cfg.report is not None:
        cfg.report.parent.mkdir(parents=True, exist_ok=True)
        cfg.report.write_bytes(orjson.dumps(report, option=orjson.OPT_INDENT_2) + b"\n")
    return report
