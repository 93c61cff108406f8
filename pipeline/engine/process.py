"""One shard, start to finish: read batches, run the steps, encode, write, count.

This is the only function the engines run remotely (:func:`run_shard`, in a spawned process or a
Ray task), so the local and Ray engines share every step of the work and give the same bytes.
Every record read ends in exactly one place: ``conversations/`` (written) or ``rejected/`` with
its stage and reason; the counts are checked per shard.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from pipeline import codec, fingerprint
from pipeline.encoders.encode_rows import encode_rows
from pipeline.errors import reason_of
from pipeline.formats import encode_jsonl
from pipeline.io.run_tables import LOSSES_SCHEMA, loss_refused, rejected_row
from pipeline.jobs.files import SKIPPED
from pipeline.jobs.resolve import CANONICAL, PARQUET, build_steps
from pipeline.losses import ADDITIONS, LossPolicy
from pipeline.schema import CONVERSATION_SCHEMA, cast_to_canonical
from pipeline.sources.detect import WIRE
from pipeline.transforms import GROUPING_STEPS, apply_steps

from .dropped import dropped_reasons, dropped_rows, split_dropped
from .heap import keep_heap
from .read import Batch, Where, merge, read_shard
from .shards import Shard
from .writers import SINGLE_FILE, MemoryShardWriter, ShardWriter


@dataclass(frozen=True)
class Work:
    """What a worker needs to run any shard of a job (plain values: it crosses process boundaries)."""

    run_dir: str
    target: str
    step_specs: tuple[Any, ...]
    on_loss: str
    allowed: tuple[str, ...]
    chunk_bytes: int
    batch_rows: int
    layout: str = "run"  # writers.RUN (every table and audit fact) or writers.SINGLE_FILE
    sets: tuple[tuple[str, Any], ...] = ()  # the job's checked [set] / --set values, in order
    losses_format: str = "jsonl"  # the single-file layout's losses: staged as JSONL or as Arrow

    @classmethod
    def of(cls, job: Any) -> Work:
        return cls(
            str(job.run_dir),
            job.target,
            tuple(job.step_specs),
            job.policy.on_loss,
            tuple(sorted(job.policy.allowed)),
            job.chunk_bytes,
            job.batch_rows,
            job.layout,
            tuple(job.sets.items()),
            job.losses_format,
        )


_STEPS: dict[str, list[Any]] = {}


def _steps(work: Work) -> list[Any]:
    """Steps are rebuilt once per worker process from their specs (specs pickle; closures may not)."""
    key = repr(work.step_specs)
    if key not in _STEPS:
        _STEPS[key] = build_steps(list(work.step_specs))
    return _STEPS[key]


def _plain(t: pa.DataType) -> pa.DataType:
    """Polars' large/view types -> the plain ones every chatlake file uses on disk."""
    if pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return pa.string()
    if pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return pa.binary()
    if pa.types.is_large_list(t) or pa.types.is_list_view(t) or pa.types.is_large_list_view(t):
        return pa.list_(pa.field(t.value_field.name, _plain(t.value_type)))
    if pa.types.is_list(t):
        return pa.list_(pa.field(t.value_field.name, _plain(t.value_type)))
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, _plain(f.type), f.nullable) for f in t])
    if pa.types.is_dictionary(t):
        return _plain(t.value_type)
    return t


def to_disk(table: pa.Table) -> pa.Table:
    """The canonical columns first, cast to the schema, then any columns the steps added (plain types)."""
    canonical = cast_to_canonical(table)
    extra = [n for n in table.column_names if n not in CONVERSATION_SCHEMA.names]
    for name in extra:
        col = table.column(name)
        canonical = canonical.append_column(pa.field(name, _plain(col.type)), col.cast(_plain(col.type)))
    return canonical


def to_disk_dropped(tables: list[pa.Table]) -> pa.Table:
    """``dropped/`` rows as written: :func:`to_disk`'s columns, then ``leaf_id`` and ``reason``."""
    t = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
    return to_disk(t)


def frame_to_disk(df: pl.DataFrame) -> pa.Table:
    """Rows out of the transform steps (Polars) as :func:`to_disk` writes them."""
    # string views out of Polars without a copy, then one cast to plain strings (the default export
    # copies to large strings first, and the cast copies again)
    return to_disk(df.to_arrow(compat_level=pl.CompatLevel.newest()))


class _Originals:
    """The original input of a batch's records, for the rejected rows (docs/run-layout.md).

    JSONL lines (and dataset rows) are kept verbatim by the reader (``raw``, by line); a record
    read from canonical Parquet or through a source adapter is encoded back in its
    ``source_format`` from the batch as read, before any step changed it.
    """

    def __init__(self, source: pa.Table, raw: Mapping[Where, bytes], raw_format: str | None) -> None:
        self.source, self.raw, self.raw_format = source, raw, raw_format

    def of(self, conversation_id: str | None, source_file: str | None, line: int | None) -> dict[str, Any]:
        """``raw`` and ``input_format`` arguments of :func:`rejected_row` for one rejected record."""
        if self.raw_format is not None:
            original = self.raw.get((source_file, line)) if line is not None else None
            return {"raw": original, "input_format": self.raw_format}
        # Rejections are few: one vector comparison per rejected record finds it in the batch.
        cols = self.source.select(["conversation_id", "source_file", "source_line"])
        mask = None
        for col, value in zip(cols.columns, (conversation_id, source_file, line), strict=True):
            eq = pc.is_null(col) if value is None else pc.fill_null(pc.equal(col, value), False)
            mask = eq if mask is None else pc.and_(mask, eq)
        idx = pc.index(mask, True).as_py() if mask is not None else -1
        if idx < 0:
            return {}
        row = self.source.slice(idx, 1)
        fmt = row.column("source_format")[0].as_py()
        try:
            return {"raw": encode_jsonl(row, fmt)[0], "input_format": fmt}
        except Exception:  # a record its own codec cannot write back: keep the rejection, without input
            return {}

    def many(self, keys: pl.DataFrame) -> list[dict[str, Any]]:
        """:meth:`of` for every row of ``keys`` (``conversation_id, source_file, source_line``).

        A step may drop most of a batch (``threads:keep=leaves``): one join finds them all in the
        batch and each format encodes its rows in one call, instead of one scan per record.
        """
        names = ["conversation_id", "source_file", "source_line"]
        rows = keys.select(names).rows()
        if self.raw_format is not None:
            return [self.of(*row) for row in rows]
        src = pl.from_arrow(self.source.select(names))
        assert isinstance(src, pl.DataFrame)
        first = src.with_row_index("__src").group_by(names, maintain_order=True).agg(pl.col("__src").first())
        at = (
            keys.select(names)
            .cast(dict(src.schema))  # type: ignore[arg-type]
            .join(first, on=names, how="left", nulls_equal=True, maintain_order="left")
            .get_column("__src")
        )
        out: list[dict[str, Any]] = [{} for _ in rows]
        found = at.is_not_null().arg_true().to_list()
        idx = at.drop_nulls().to_list()
        fmts = pc.take(self.source.column("source_format"), pa.array(idx, pa.int64())).to_pylist()
        for fmt in set(fmts):
            mine = [k for k, f in enumerate(fmts) if f == fmt]
            try:
                lines = encode_jsonl(self.source.take(pa.array([idx[k] for k in mine], pa.int64())), fmt)
            except Exception:  # some row cannot be written back: each one on its own, as of() does
                for k in mine:
                    out[found[k]] = self.of(*rows[found[k]])
                continue
            for k, line in zip(mine, lines, strict=True):
                out[found[k]] = {"raw": line, "input_format": fmt}
        return out


def _apply_steps(
    table: pa.Table, steps: list[Any], originals: _Originals, dropped: list[pa.Table] | None = None
) -> tuple[pa.Table, list[dict]]:
    """Run the steps; returns the kept rows and the rejected rows. With ``dropped`` (a job with a
    grouping step), the records the step dropped (``threads:keep=leaves``) are appended to it as
    ``dropped/`` rows (engine/dropped.py) instead of being rejected."""
    kept, rej = apply_steps(pl.from_arrow(table), steps)
    if dropped is not None and rej.height:
        keys, rej = split_dropped(rej)
        if keys.height:
            dropped.append(dropped_rows(originals.source, kept, keys))
    rows = []
    if rej.height:
        # The kept rows never go through Python; the rejected ones are built here, their inputs
        # looked up all at once.
        inputs = originals.many(rej)
        for d, original in zip(
            rej.select("conversation_id", "source_file", "source_line", "step", "reason").to_dicts(),
            inputs,
            strict=True,
        ):
            cid, file, line = d["conversation_id"], d["source_file"], d["source_line"]
            rows.append(
                rejected_row(
                    file, line, "transform", d["reason"], conversation_id=cid, step=d["step"], **original,
                )
            )  # fmt: skip
    return frame_to_disk(kept), rows


@dataclass
class _Counts:
    read: int = 0
    written: int = 0
    blank: int = 0
    lossy: int = 0
    dropped: int = 0  # records a grouping step dropped (dropped/, engine/dropped.py)

    def __post_init__(self) -> None:
        self.by_stage: Counter[str] = Counter()
        self.by_reason: Counter[str] = Counter()
        self.loss_kinds: Counter[str] = Counter()
        self.source_counts: Counter[str] = Counter()
        self.detected: Counter[str] = Counter()  # format auto: records read as each wire format
        self.fallback: Counter[str] = Counter()
        self.additions: Counter[str] = Counter()  # records per addition kind
        self.dropped_reasons: Counter[str] = Counter()

    def add_losses(self, losses: pa.Table) -> None:
        """Count a batch's loss rows: losses by kind and lossy records, additions apart (records
        per kind): an addition is not a loss (pipeline.losses.ADDITIONS)."""
        added = pc.is_in(losses.column("kind"), value_set=pa.array(sorted(ADDITIONS), pa.string()))
        # only the two columns counted, and no filter when nothing is an addition (the usual batch):
        # filtering the whole loss table copied ~16 rows of 8 columns per record
        losses = losses.select(["kind", "conversation_id"])
        any_added = pc.any(added).as_py()
        lost = losses.filter(pc.invert(added)) if any_added else losses
        if lost.num_rows:
            kinds = pc.value_counts(lost.column("kind"))
            names, n = kinds.field("values").to_pylist(), kinds.field("counts").to_pylist()
            self.loss_kinds.update(dict(zip(names, n, strict=True)))
            self.lossy += pc.count_distinct(lost.column("conversation_id"), mode="all").as_py()
        extra = losses.filter(added) if any_added else None
        if extra is not None and extra.num_rows:
            per_kind = extra.group_by("kind").aggregate([("conversation_id", "count_distinct")])
            self.additions.update(
                dict(zip(per_kind.column("kind").to_pylist(),
                         per_kind.column("conversation_id_count_distinct").to_pylist(), strict=True))
            )  # fmt: skip


def _encode(
    table: pa.Table,
    target: str,
    policy: LossPolicy,
    originals: _Originals,
    sets: dict[str, Any] | None = None,
    as_decoded: bool = False,
) -> tuple[pa.Table, bytes, pa.Table, list[dict[str, Any]]]:
    """Encode every row to ``target``; keep the ones that encode and pass the loss policy.

    Returns the kept rows, their JSON Lines, their losses (a ``LOSSES_SCHEMA`` table, in record
    order) and the rejected rows.

    :func:`encode_rows` converts column at a time where it can (Responses -> Chat), with the same
    bytes and losses as the per-record encoders; only rejected rows are visited one by one here.
    Each record's losses are written sorted by (path, kind, detail): see the comment at the sort.
    ``as_decoded``: the rows are as this process decoded them (see :func:`encode_rows`).
    """
    canonical = cast_to_canonical(table)
    # the losses are sorted below by (row, path, kind, detail): encode_rows need not order them by row
    enc = encode_rows(canonical, target, sets, as_decoded=as_decoded, ordered_losses=False)
    refused = enc.refused_kinds(policy)
    failed = enc.errors.is_valid().to_numpy(zero_copy_only=False)
    keep = ~(failed | refused.is_valid().to_numpy(zero_copy_only=False))
    rejected: list[dict[str, Any]] = []
    bad = np.flatnonzero(~keep)
    if len(bad):
        picked = canonical.select(["conversation_id", "source_file", "source_line"]).take(pa.array(bad))
        errors = enc.errors.take(pa.array(bad)).to_pylist()
        kinds = refused.take(pa.array(bad)).to_pylist()
        for row, error, kind in zip(picked.to_pylist(), errors, kinds, strict=True):
            cid, file, line = row["conversation_id"], row["source_file"], row["source_line"]
            stage, reason = (
                ("convert", f"encode: {error}") if error is not None else ("loss_policy", loss_refused(kind))
            )
            rejected.append(
                rejected_row(file, line, stage, reason, conversation_id=cid, **originals.of(cid, file, line))
            )
    found = enc.losses
    if not keep.all():
        found = found.filter(pa.array(keep[found.column("row").to_numpy()]))
    # Not for reproducibility any more: the encoders report losses in source order, the same in
    # every process (tests/encoders/test_loss_order.py), and the compiled encoder in the same order.
    # Kept because it is the on-disk order of losses/ (and of loss_counts/, counted in the order
    # kinds first appear): without it both files' bytes change for every run with losses.
    # Arrow's sort in place of a round trip through Polars (~0.04 CPU s per 20,000 records less);
    # nulls first, as Polars sorted them. Rows equal in all four keys are equal in every column
    # written, so the order of ties does not show.
    keys = [(name, "ascending", "at_start") for name in ("row", "path", "kind", "detail")]
    found = found.take(pc.sort_indices(found, keys))
    at = found.column("row")
    ident = {name: _taken(canonical.column(name), at)
             for name in ("conversation_id", "source_file", "source_line", "source_format")}  # fmt: skip
    # Columns stay in Arrow (a batch has ~10 losses per record: Python lists of them cost ~3 % of a job).
    losses = pa.table(
        {**ident,
         "target_format": pa.repeat(pa.scalar(target, pa.string()), found.num_rows),
         **{name: found.column(name) for name in ("kind", "path", "detail")}}
    ).cast(LOSSES_SCHEMA)  # fmt: skip
    kept = table if keep.all() else table.filter(pa.array(keep, pa.bool_()))
    return kept, enc.jsonl(keep), losses, rejected


def _taken(col: pa.ChunkedArray, at: pa.ChunkedArray | pa.Array) -> pa.ChunkedArray | pa.Array:
    """``col.take(at)``; a column of one value throughout the batch (a shard's ``source_file`` and
    ``source_format``) is repeated instead: taking a path for each of ~16 losses per record copied
    it string by string (~0.1 CPU s per 200,000 records)."""
    if len(col) and col.null_count == 0 and pc.count_distinct(col).as_py() == 1:
        return pa.repeat(col[0], len(at))
    return col.take(at)


def _wire_lines(shard: Shard) -> bool:
    """Whether the shard's records are wire-format JSON lines (JSONL, or a dataset's rows)."""
    return shard.container == "jsonl" or (
        shard.container not in ("source", SKIPPED) and shard.format != CANONICAL
    )


def shard_codec(shard: Shard) -> str:
    """Which codec decodes this shard's records in this process: ``native`` or ``python``.

    Wire-format lines (JSONL, or a dataset's rows) of a format the compiled decoder handles go to it
    when it is active here (``CHATLAKE_NATIVE``, read now: a worker reports what it ran, not what
    the parent expected); canonical Parquet and source adapters never decode JSON lines with it.
    """
    # format auto: the formats are known per batch; the compiled decoder takes all wire formats or none
    fmt = "responses" if shard.format == WIRE else shard.format
    return "native" if _wire_lines(shard) and codec.native_module(fmt) is not None else "python"


def whole_shard(batches: Iterable[Batch]) -> Iterator[Batch]:
    """The shard's batches as one: a grouping step (threads) relates records to each other, so it
    runs on every record of the shard at once (memory: the shard's canonical rows)."""
    parts = list(batches)
    if not parts:
        return
    tables = [to_disk(b.table) for b in parts]
    merged = merge(parts, pa.concat_tables(tables) if len(tables) > 1 else tables[0])
    parts.clear()
    yield merged


def run_shard(
    shard_json: dict[str, Any], work: Work, progress: Callable[[int, int], None] | None = None
) -> dict[str, Any]:
    """Run one shard and return its manifest entry (counts, files with sizes and hashes, seconds).

    ``progress(records, bytes)`` is called after each batch.
    """
    keep_heap()  # once per process: batches reuse the heap instead of faulting in fresh pages
    shard = Shard.from_json(shard_json)
    steps = _steps(work)
    policy = LossPolicy(work.on_loss, frozenset(work.allowed))
    encoded = work.target != PARQUET
    # JSONL lines and dataset rows are kept verbatim for the rejected file; other inputs are encoded back
    raw_format = shard.format if _wire_lines(shard) else None
    # Rows decoded here from wire lines and not changed by a step cannot hold an edited item (their
    # fingerprints were just computed from this content): the encoder skips the edit check. Canonical
    # Parquet and source adapters' rows keep it.
    as_decoded = raw_format is not None and not steps
    grouping = any(step.name in GROUPING_STEPS for step in steps)
    writer: ShardWriter | MemoryShardWriter
    if work.layout == SINGLE_FILE and not grouping:  # appended by the parent (engine/single_file.py)
        writer = MemoryShardWriter(encoded, work.losses_format)
    else:
        writer = ShardWriter(
            Path(work.run_dir), shard.id, encoded, target=work.target, layout=work.layout, dropped=grouping,
            losses_format=work.losses_format,
        )
    counts = _Counts()
    started = time.perf_counter()
    # A step-less convert to a wire target in the single-file layout writes no canonical rows, and
    # its rows skip the edit check (as_decoded): their items' fingerprints would be computed for nothing.
    unneeded = as_decoded and encoded and isinstance(writer, MemoryShardWriter)
    with fingerprint.unneeded() if unneeded else nullcontext():
        try:
            batch: Batch
            batches: Iterable[Batch] = read_shard(shard, work.chunk_bytes, work.batch_rows)
            if grouping:
                batches = whole_shard(batches)
            for batch in batches:
                rejected = batch.rejected
                table = to_disk(batch.table)
                originals = _Originals(table, batch.raw, batch.format or raw_format)
                dropped: list[pa.Table] | None = [] if grouping else None
                if steps:
                    table, step_rejected = _apply_steps(table, steps, originals, dropped)
                    rejected = rejected + step_rejected
                if dropped:
                    out = to_disk_dropped(dropped)
                    writer.dropped(out)
                    counts.dropped += out.num_rows
                    counts.dropped_reasons.update(dropped_reasons(out))
                if encoded:
                    sets = dict(work.sets)
                    table, data, losses, enc_rejected = _encode(
                        table, work.target, policy, originals, sets, as_decoded
                    )
                    writer.output(data, table.num_rows)
                    writer.losses(losses)
                    rejected = rejected + enc_rejected
                    if losses.num_rows:
                        counts.add_losses(losses)
                writer.conversations(table)
                writer.rejected(rejected)
                counts.read += batch.read
                counts.blank += batch.blank
                counts.source_counts.update(batch.source_counts)
                counts.detected.update(batch.detected)
                counts.fallback.update(batch.native_fallback)
                counts.written += table.num_rows
                counts.by_stage.update(r["stage"] for r in rejected)
                counts.by_reason.update(reason_of(r["reason"]) for r in rejected)
                if progress is not None:
                    progress(batch.read, batch.nbytes)
            rejected_total = sum(counts.by_stage.values())
            if counts.read != counts.written + rejected_total + counts.dropped:
                raise RuntimeError(
                    f"{shard.id}: read {counts.read} != written {counts.written}"
                    f" + rejected {rejected_total} + dropped {counts.dropped}"
                )
            files = writer.commit()
        except BaseException:
            writer.abort()
            raise
    skipped, auto = shard.container == SKIPPED, shard.format == WIRE
    return {
        "id": shard.id,
        "input": {k: v for k, v in shard.to_json().items() if k not in ("id", "weight")},
        "read": counts.read,
        "written": counts.written,
        "rejected": rejected_total,
        **({"dropped": counts.dropped} if grouping else {}),
        **({"dropped_by_reason": dict(sorted(counts.dropped_reasons.items()))} if grouping else {}),
        "blank_lines": counts.blank,
        "rejected_by_stage": dict(sorted(counts.by_stage.items())),
        "rejected_by_reason": dict(sorted(counts.by_reason.items())),
        "losses_by_kind": dict(sorted(counts.loss_kinds.items())),
        "records_with_losses": counts.lossy,
        "additions_by_kind": dict(sorted(counts.additions.items())),
        **({"source_counts": dict(sorted(counts.source_counts.items()))} if counts.source_counts else {}),
        **({"detected": dict(sorted(counts.detected.items()))} if auto and not skipped else {}),
        **({"codec": shard_codec(shard)} if not skipped else {}),  # a skipped file decodes nothing
        "native_fallback": dict(sorted(counts.fallback.items())),
        "files": files,
        "weight": shard.weight,
        "seconds": round(time.perf_counter() - started, 3),
        # the shard's bytes, for the parent to append (never written to the manifest)
        **({"parts": writer.parts} if isinstance(writer, MemoryShardWriter) else {}),
    }
