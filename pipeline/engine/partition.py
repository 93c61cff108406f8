"""The two-stage job of a grouping step (``threads``): partition the records, then thread each part.

The records of one thread may sit in any shard of any input file, and the step relates each record
to every other record of its prefix tree. A job with a grouping step therefore runs in two stages
(docs/transforms.md, "Threads at scale"; the files: docs/run-layout.md):

1. **Partition** (:func:`partition_shard`): every input shard, cut as usual (``shard_records``),
   is read in bounded batches; the steps before the grouping step run on each batch; each record
   goes to one of ``P`` partition files by its thread root key
   (:func:`pipeline.transforms.threads.root_keys`: its first item's content hash) modulo ``P``.
   Every record of one prefix tree shares that key, so a tree lies in one partition. Records the
   reader or an earlier step rejected go to the shard's stage-1 rejected file. A stage-1 shard is
   listed under ``partitions`` in ``manifest.json`` (files with sha256, as any shard's).
2. **Thread** (:func:`thread_partition`): partition ``p`` (its files from every stage-1 shard, in
   shard order) is one shard of the ordinary engine, read whole (one partition in memory per
   worker), with the grouping step and the steps after it; it writes the usual run outputs
   (``part-0000p`` files). Stage-1 rejections are routed to partition ``k mod P`` (``k``: the
   stage-1 shard's number), so every record read is counted in exactly one stage-2 shard and
   ``read == written + rejected`` holds per shard and for the job.

``P`` is chosen from the input size (:func:`partition_count`) so a partition fits a worker's memory.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections import Counter
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.errors import reason_of
from pipeline.io.parquet import table_writer
from pipeline.io.parquet import writer as canonical_writer
from pipeline.io.run_tables import REJECTED_SCHEMA
from pipeline.jobs.model import STAGE1_SPREAD
from pipeline.jobs.resolve import CANONICAL, Job, build_steps
from pipeline.schema import CONVERSATION_SCHEMA
from pipeline.sources.detect import WIRE
from pipeline.transforms import GROUPING_STEPS
from pipeline.transforms._flat import split
from pipeline.transforms.compaction import compaction_flags
from pipeline.transforms.threads import compaction_sides, item_hashes, links, root_keys

from .atomic import NewFile
from .dropped import DROPPED
from .manifest import Manifest
from .process import Work, _apply_steps, _Originals, _steps, _wire_lines, run_shard, shard_codec, to_disk
from .read import PARTITION, read_shard, read_table
from .shards import Shard, shard_id
from .writers import TMP_SUFFIX, ArrowTable, sha256_file

PARTITIONS = "partitions"  # the folder of the stage-1 files in the run directory
# Input bytes (as JSON) per partition. A partition's step holds its canonical rows, the flat
# items and the step's columns: measured on the synthetic Responses log (2,000 threads, 39,093
# requests: 640 MB of JSONL, 70 MB of canonical Parquet), the step alone peaks at ~5.6x the JSONL,
# so 64 MB keeps a worker near 400 MB and two workers well under 2 GB.
PARTITION_BYTES = 64 << 20
# what a byte of each container holds as JSON: Parquet / Arrow and compressed streams are packed
# (the log above: 9x for zstd Parquet)
_EXPANSION = {"parquet": 9, "arrow": 2}
_COMPRESSED = (".gz", ".zst", ".zstd", ".bz2", ".xz")
REJECTED = "rejected"
# Stage 1 writes a file per (stage-1 shard, partition). With the job's shards (a fixed record
# count) both S and P grow with the input, so the files grow as its square, each with a fixed cost
# (~3 ms to write, ~7 ms to read: 1,636 files and ~12 CPU s at 193,636 requests, ~42,000 at 1M).


def partition_count(job: Job) -> int:
    """``P`` for a job: enough partitions that each holds about :data:`PARTITION_BYTES` of input."""
    total = sum(f.size * _expansion(f.container, f.url) for f in job.files)
    return max(1, -(-total // PARTITION_BYTES))


def stage1_records(job: Job) -> int:
    """Records per stage-1 shard (:data:`STAGE1_SPREAD`): the job's ``shard_records`` times
    ``ceil(P / STAGE1_SPREAD)``, so the stage-1 files do not grow as the square of the input."""
    return job.shard_records * -(-partition_count(job) // STAGE1_SPREAD)


def _expansion(container: str, url: str) -> int:
    """About how many bytes of JSON a byte of this input holds (for sizing partitions)."""
    if container in _EXPANSION:
        return _EXPANSION[container]
    return 6 if url.lower().endswith(_COMPRESSED) else 1


def grouping_at(step_names: list[str]) -> int:
    """The index of the first grouping step (stage 1 runs the steps before it, stage 2 the rest)."""
    return next(i for i, name in enumerate(step_names) if name in GROUPING_STEPS)


@dataclass(frozen=True)
class PartitionWork(Work):
    """What a stage-1 worker needs: the job's work (``step_specs``: the steps before the grouping
    step), the number of partitions and the grouping step's spec (its compaction markers)."""

    partitions: int = 1
    grouping: Any = "threads"


def grouping_step(spec: Any) -> Any:
    """The grouping step of a spec (its params: ``markers``, ``item_types``)."""
    return build_steps([spec])[0]


def stages(job: Job, work: Work) -> tuple[PartitionWork, Work, int]:
    """Stage 1's work, stage 2's work (the grouping step and the steps after it), and ``P``."""
    g = grouping_at(job.step_names)
    p = partition_count(job)
    base = {f.name: getattr(work, f.name) for f in fields(work)}
    stage1 = PartitionWork(
        **{**base, "step_specs": tuple(work.step_specs[:g])}, partitions=p, grouping=work.step_specs[g]
    )
    stage2 = Work(**{**base, "step_specs": tuple(work.step_specs[g:])})
    return stage1, stage2, p


def partition_name(p: int) -> str:
    return f"p{p:04d}"


def _path(run_dir: Path, shard: str, part: str) -> Path:
    """A stage-1 file: Arrow IPC for a partition's rows (:class:`_Files`), Parquet for the rejected."""
    return run_dir / PARTITIONS / f"{shard}.{part}.{'parquet' if part == REJECTED else 'arrow'}"


class _Files:
    """A stage-1 shard's files, written to temp files and renamed into place together (as
    :class:`~pipeline.engine.writers.ShardWriter` does for a shard).

    A partition's rows go to a zstd Arrow IPC file, not Parquet: a worker holds all ``P`` files of
    its shard open and writes a piece to each per batch, and an open ParquetWriter keeps every
    row group's metadata in memory until it closes (~60 KB a row group of the canonical schema).
    With ``S`` (rows per stage-1 shard) and ``P`` both growing with the input, that metadata grew
    as its square: ~14,000 row groups, ~0.85 GB per worker at 960,731 requests. An IPC file keeps
    24 bytes per batch. Stage 2 reads the rows back unchanged (same schema, same order).
    """

    def __init__(self, run_dir: Path, shard: str) -> None:
        self.run_dir, self.shard = run_dir, shard
        self.writers: dict[str, pq.ParquetWriter | ArrowTable] = {}
        self.rows: Counter[str] = Counter()
        self.tmp: dict[str, NewFile] = {}

    def write(self, part: str, table: pa.Table, schema: pa.Schema) -> None:
        if part not in self.writers:
            final = _path(self.run_dir, self.shard, part)
            # the pid keeps a stray worker of a killed run from writing into this run's temp files
            self.tmp[part] = NewFile(final.with_name(f".{final.name}.{os.getpid()}{TMP_SUFFIX}"))
            self.writers[part] = (
                table_writer(self.tmp[part].where, REJECTED_SCHEMA)
                if part == REJECTED
                else ArrowTable(self.tmp[part], schema)
            )
        self.writers[part].write_table(table.cast(self.writers[part].schema))
        self.rows[part] += table.num_rows

    def commit(self) -> dict[str, dict[str, Any]]:
        for w in self.writers.values():
            w.close()
        files = {}
        for part in sorted(self.tmp):
            tmp = self.tmp[part].path
            files[part] = {
                "path": f"{PARTITIONS}/{_path(self.run_dir, self.shard, part).name}",
                "rows": self.rows[part],
                "bytes": tmp.stat().st_size,
                "sha256": sha256_file(tmp),
            }
        for part, tmp in self.tmp.items():
            tmp.commit(_path(self.run_dir, self.shard, part))
        return files

    def abort(self) -> None:
        for w in self.writers.values():
            # closing a half-written file after an error: the original error is what matters
            with contextlib.suppress(Exception):
                w.close()
        for tmp in self.tmp.values():
            tmp.discard()


def _compacted(items: pa.ChunkedArray, params: Any) -> int:
    """How many records hold a compaction item: their thread's continues_thread link may cross
    partitions (link_threads runs only when some record has one). A function of its own so the
    flat items and flags (about as large as the batch's items) are freed before the batch's take."""
    flat = split(items)
    flags = compaction_flags(flat.values, params.markers, params.item_types).to_numpy()
    return len(np.unique(flat.parent().to_numpy()[flags]))


def _grouped(table: pa.Table, partitions: int) -> tuple[pa.Table, np.ndarray]:
    """The batch's rows in partition order, and where each partition's rows start (``bounds[p]``
    to ``bounds[p + 1]``). One take of the batch, then a slice per partition: a take per partition
    costs a pass over the whole batch each (P passes per batch)."""
    part = (root_keys(table.column("items")) % np.uint64(partitions)).astype(np.int64)
    order = np.argsort(part, kind="stable")
    bounds = np.searchsorted(part[order], np.arange(partitions + 1))
    return table.take(pa.array(order, pa.int64())), bounds


def partition_shard(shard_json: dict[str, Any], work: PartitionWork, progress: Any = None) -> dict[str, Any]:
    """Stage 1 for one input shard: read it batch by batch, run the steps before the grouping step,
    write each record to its partition file; returns its manifest entry (``partitions``)."""
    shard = Shard.from_json(shard_json)
    steps = _steps(work)
    raw_format = shard.format if _wire_lines(shard) else None
    files = _Files(Path(work.run_dir), shard.id)
    read = blank = partitioned = 0
    by_stage: Counter[str] = Counter()
    by_reason: Counter[str] = Counter()
    source_counts: Counter[str] = Counter()
    detected: Counter[str] = Counter()
    fallback: Counter[str] = Counter()
    compacted = 0
    params = grouping_step(work.grouping).params
    started = time.perf_counter()
    try:
        for batch in read_shard(shard, work.chunk_bytes, work.batch_rows):
            rejected = batch.rejected
            table = to_disk(batch.table)
            if steps:
                table, step_rejected = _apply_steps(
                    table, steps, _Originals(table, batch.raw, batch.format or raw_format)
                )
                rejected = rejected + step_rejected
            if table.num_rows:
                compacted += _compacted(table.column("items"), params)
                grouped, bounds = _grouped(table, work.partitions)
                schema = table.schema.with_metadata(CONVERSATION_SCHEMA.metadata)
                for p in np.flatnonzero(np.diff(bounds)):
                    rows = grouped.slice(bounds[p], bounds[p + 1] - bounds[p])
                    files.write(partition_name(int(p)), rows, schema)
                del grouped, rows  # before the next batch is read
            if rejected:
                files.write(REJECTED, pa.Table.from_pylist(rejected, schema=REJECTED_SCHEMA), REJECTED_SCHEMA)
            read += batch.read
            blank += batch.blank
            partitioned += table.num_rows
            by_stage.update(r["stage"] for r in rejected)
            by_reason.update(reason_of(r["reason"]) for r in rejected)
            source_counts.update(batch.source_counts)
            detected.update(batch.detected)
            fallback.update(batch.native_fallback)
            if progress is not None:
                progress(batch.read, batch.nbytes)
        rejected_total = sum(by_stage.values())
        if read != partitioned + rejected_total:
            raise RuntimeError(
                f"{shard.id}: read {read} != partitioned {partitioned} + rejected {rejected_total}"
            )
        written = files.commit()
    except BaseException:
        files.abort()
        raise
    return {
        "id": shard.id,
        "input": {k: v for k, v in shard.to_json().items() if k not in ("id", "weight")},
        "read": read,
        "partitioned": partitioned,
        "compacted": compacted,
        "rejected": rejected_total,
        "blank_lines": blank,
        "rejected_by_stage": dict(sorted(by_stage.items())),
        "rejected_by_reason": dict(sorted(by_reason.items())),
        **({"source_counts": dict(sorted(source_counts.items()))} if source_counts else {}),
        **({"detected": dict(sorted(detected.items()))} if shard.format == WIRE else {}),
        "codec": shard_codec(shard),
        "native_fallback": dict(sorted(fallback.items())),
        "files": written,
        "weight": shard.weight,
        "seconds": round(time.perf_counter() - started, 3),
    }


def partition_shards(entries: dict[str, dict[str, Any]], partitions: int) -> list[Shard]:
    """Stage 2's shards from the finished stage-1 entries: partition ``p`` is shard ``part-0000p``,
    one for every partition, even an empty one (shard ids have no gaps: ``transform -o FILE``
    joins ``part-00000``, ``part-00001``, ... in turn). Paths are relative to the run
    directory (:func:`thread_partition` resolves them), so the manifest does not name the run's place."""
    order = sorted(entries)
    out = []
    for p in range(partitions):
        name = partition_name(p)
        mine = [entries[i]["files"][name] for i in order if name in entries[i]["files"]]
        routed = [
            entries[i]["files"][REJECTED]
            for k, i in enumerate(order)
            if k % partitions == p and REJECTED in entries[i]["files"]
        ]
        options = {"files": [f["path"] for f in mine], "rejected": [f["path"] for f in routed]}
        weight = sum(f["bytes"] for f in mine + routed)
        out.append(
            Shard(shard_id(p), f"{PARTITIONS}/{name}", PARTITION, CANONICAL, options, 0, -1, 1, weight)
        )
    return out


def thread_partition(shard_json: dict[str, Any], work: Work, progress: Any = None) -> dict[str, Any]:
    """Stage 2 for one partition: :func:`~pipeline.engine.process.run_shard` on its files (read
    whole: the grouping step sees every record of the partition); the entry keeps relative paths."""
    run_dir = Path(work.run_dir)
    opts = shard_json["options"]
    absolute = {k: [str(run_dir / p) for p in opts[k]] for k in ("files", "rejected")}
    entry = run_shard({**shard_json, "options": absolute}, work, progress)
    entry["input"] = {k: v for k, v in shard_json.items() if k not in ("id", "weight")}
    return entry


def _read(path: Path, columns: list[str] | None = None) -> pa.Table:
    """A conversations file of the run (Parquet, or Arrow in the single-file layout)."""
    return read_table(path, columns)


def _write(path: Path, table: pa.Table) -> dict[str, Any]:
    """Replace a conversations file (temp file, then rename); its new ``rows, bytes, sha256``."""
    tmp = NewFile(path.with_name(f".{path.name}.{os.getpid()}{TMP_SUFFIX}"))
    try:
        arrow = path.suffix == ".arrow"
        w = ArrowTable(tmp, table.schema) if arrow else canonical_writer(tmp.where, table.schema)
        w.write_table(table)
        w.close()
        out = {"rows": table.num_rows, "bytes": tmp.path.stat().st_size, "sha256": sha256_file(tmp.path)}
    except BaseException:
        tmp.discard()
        raise
    tmp.commit(path)
    return out


def _thread_keys(k: int, thread_id: pa.ChunkedArray) -> tuple[np.ndarray, pl.Series]:
    """A job-wide key per row for its thread (partition ``k``, its thread_id's rank in the
    partition: thread_ids of different partitions are different threads), and the thread_ids."""
    tid = pl.Series("thread_id", thread_id)
    local = tid.rank("dense").fill_null(0).cast(pl.Int64).to_numpy()
    return (np.int64(k) << np.int64(32)) + local, tid


def link_threads(run_dir: Path, manifest: Manifest, spec: Any) -> int:
    """The third pass: ``continues_thread`` across partitions; returns the files it rewrote.

    Stage 2 links a compacted thread to the thread it continues within its partition; that
    thread may sit in another one (its first item differs). This pass reads each partition's
    written records (their items and thread_id: every item of a thread is in its written
    records, even with ``keep=leaves``, as a dropped record is a prefix of a kept leaf), builds
    the compacted threads' sides and every thread's item hashes, solves the links for the whole
    job at once (:func:`pipeline.transforms.threads.links`, the step's own rule) and rewrites the
    conversations file of a partition whose links change (its manifest entry with it). It runs
    only when stage 1 saw a record with a compaction item.
    """
    if not any(e.get("compacted") for e in manifest.partitions.values()):
        return 0
    params = grouping_step(spec).params
    entries = [manifest.shards[k] for k in sorted(manifest.shards)]
    kept, marks, every, names, compacted = [], [], [], [], []
    for k, e in enumerate(entries):
        if "conversations" not in e["files"]:
            return 0  # no conversations are written (single file of a wire target): nothing to link
        t = _read(run_dir / e["files"]["conversations"]["path"], ["thread_id", "items"])
        if t.num_rows == 0:
            continue
        key, tid = _thread_keys(k, t.column("thread_id"))
        flat = split(t.column("items"))
        offsets, parent = flat.offsets.to_numpy(), flat.parent().to_numpy()
        idx = np.arange(len(parent), dtype=np.int64) - offsets[parent]
        flag = compaction_flags(flat.values, params.markers, params.item_types).to_numpy()
        cut = np.full(t.num_rows, -1, np.int64)
        at = np.flatnonzero(flag)
        cut[parent[at]] = idx[at]  # ascending: the last write per record is its last compaction
        h1, h2 = item_hashes(flat.values)
        on = cut >= 0
        sides = compaction_sides(key, flat.values, parent, idx, h1, h2, cut, flag, on)
        kept.append(sides[0])
        marks.append(sides[1])
        every.append(pl.DataFrame({"other": key[parent], "h1": h1, "h2": h2}).unique())
        names.append(pl.DataFrame({"thread": key, "thread_id": tid}).unique("thread"))
        compacted.append(pl.Series("thread", key[on]).unique())
    if not kept or not sum(x.height for x in kept):
        return 0
    best = links(pl.concat(kept), pl.concat(marks), pl.concat(every), pl.concat(compacted), pl.concat(names))
    rewritten = 0
    for k, e in enumerate(entries):
        path = run_dir / e["files"]["conversations"]["path"]
        t = _read(path)
        if t.num_rows == 0:
            continue
        key, _ = _thread_keys(k, t.column("thread_id"))
        new = (
            pl.DataFrame({"thread": key})
            .join(best, on="thread", how="left", maintain_order="left")
            .get_column("continues_thread")
        )
        old = pl.Series(t.column("continues_thread"))
        if new.eq_missing(old).all():
            continue
        at = t.schema.get_field_index("continues_thread")
        t = t.set_column(at, t.schema.field(at), new.to_arrow().cast(t.schema.field(at).type))
        e["files"]["conversations"].update(_write(path, t))
        manifest.add(e)
        rewritten += 1
    return rewritten


def thread_figures(run_dir: Path, manifest: Manifest) -> list[dict[str, Any]]:
    """The threads section of ``summary.json``: per dataset (input file) the figures of
    ``sql/threads_by_dataset.sql`` (the audit query; tests check that both agree): threads,
    requests (written and dropped), requests_per_thread, items, items_kept (of the kept leaves),
    items_saved_by_dedupe and redundancy_ratio (items / items_kept)."""
    entries = [manifest.shards[k] for k in sorted(manifest.shards)]
    cols = ["source_file", "conversation_id", "thread_id", "n_items", "is_leaf", "duplicate_of"]
    written = [
        pl.from_arrow(_read(run_dir / e["files"]["conversations"]["path"], cols))
        for e in entries
        if "conversations" in e["files"]
    ]
    if not written:
        return []
    conv = pl.concat(written)  # type: ignore[arg-type]
    assert isinstance(conv, pl.DataFrame)
    rows = [
        conv.select(
            pl.col("source_file").alias("dataset"),
            "thread_id",
            "n_items",
            (pl.col("is_leaf") & pl.col("duplicate_of").is_null()).alias("kept_leaf"),
        )
    ]
    dropped = [run_dir / e["files"][DROPPED]["path"] for e in entries if DROPPED in e["files"]]
    if dropped:
        d = pl.from_arrow(pq.read_table(dropped, columns=["source_file", "n_items", "leaf_id"]))
        assert isinstance(d, pl.DataFrame)
        leaf = (
            conv.group_by("conversation_id")
            .agg(pl.col("thread_id").first())
            .rename({"conversation_id": "leaf_id"})
        )
        rows.append(
            d.join(leaf, on="leaf_id", how="left").select(
                pl.col("source_file").alias("dataset"),
                "thread_id",
                "n_items",
                pl.lit(False).alias("kept_leaf"),
            )
        )
    kept = pl.col("n_items").filter(pl.col("kept_leaf")).sum()
    out = (
        pl.concat(rows)
        .group_by("dataset")
        .agg(
            pl.col("thread_id").n_unique().alias("threads"),
            pl.len().alias("requests"),
            pl.col("n_items").sum().cast(pl.Int64).alias("items"),
            kept.cast(pl.Int64).alias("items_kept"),
        )
        .with_columns(
            (pl.col("requests") / pl.col("threads")).alias("requests_per_thread"),
            (pl.col("items") - pl.col("items_kept")).alias("items_saved_by_dedupe"),
            (pl.col("items") / pl.col("items_kept")).alias("redundancy_ratio"),
        )
        .sort("dataset")
        .select(
            "dataset",
            "threads",
            "requests",
            "requests_per_thread",
            "items",
            "items_kept",
            "items_saved_by_dedupe",
            "redundancy_ratio",
        )
    )
    return out.to_dicts()
