"""One shard, start to finish: read batches, run the steps, encode, write, count.

This is the only function the engines run remotely (:func:`run_shard`, in a spawned process or a
Ray task), so the local and Ray engines share every step of the work and give the same bytes.
Every record read ends in exactly one place: ``conversations/`` (written) or ``rejected/`` with
its stage and reason; the counts are checked per shard.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from pipeline import codec
from pipeline.encoders.encode_rows import encode_rows
from pipeline.errors import reason_of
from pipeline.formats import encode_jsonl
from pipeline.io.run_tables import LOSSES_SCHEMA, loss_refused, rejected_row
from pipeline.jobs.resolve import CANONICAL, PARQUET, build_steps
from pipeline.losses import LossPolicy
from pipeline.schema import CONVERSATION_SCHEMA, cast_to_canonical
from pipeline.sources.detect import WIRE
from pipeline.transforms import apply_steps

from .read import Batch, read_shard
from .shards import Shard
from .writers import ShardWriter


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

    def __init__(self, source: pa.Table, raw: dict[int, bytes], raw_format: str | None) -> None:
        self.source, self.raw, self.raw_format = source, raw, raw_format

    def of(self, conversation_id: str | None, source_file: str | None, line: int | None) -> dict[str, Any]:
        """``raw`` and ``input_format`` arguments of :func:`rejected_row` for one rejected record."""
        if self.raw_format is not None:
            return {"raw": self.raw.get(line) if line is not None else None, "input_format": self.raw_format}
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


def _apply_steps(table: pa.Table, steps: list[Any], originals: _Originals) -> tuple[pa.Table, list[dict]]:
    kept, rej = apply_steps(pl.from_arrow(table), steps)
    rows = []
    if rej.height:
        # Rejections are few: build their rows in Python (the kept rows never are).
        for d in rej.select("conversation_id", "source_file", "source_line", "step", "reason").to_dicts():
            cid, file, line = d["conversation_id"], d["source_file"], d["source_line"]
            rows.append(
                rejected_row(
                    file, line, "transform", d["reason"], conversation_id=cid, step=d["step"],
                    **originals.of(cid, file, line),
                )
            )  # fmt: skip
    return frame_to_disk(kept), rows


@dataclass
class _Counts:
    read: int = 0
    written: int = 0
    blank: int = 0
    lossy: int = 0

    def __post_init__(self) -> None:
        self.by_stage: Counter[str] = Counter()
        self.by_reason: Counter[str] = Counter()
        self.loss_kinds: Counter[str] = Counter()
        self.source_counts: Counter[str] = Counter()
        self.detected: Counter[str] = Counter()  # format auto: records read as each wire format
        self.fallback: Counter[str] = Counter()


def _encode(
    table: pa.Table, target: str, policy: LossPolicy, originals: _Originals
) -> tuple[pa.Table, bytes, pa.Table, list[dict[str, Any]]]:
    """Encode every row to ``target``; keep the ones that encode and pass the loss policy.

    Returns the kept rows, their JSON Lines, their losses (a ``LOSSES_SCHEMA`` table, in record
    order) and the rejected rows.

    :func:`encode_rows` converts column at a time where it can (Responses -> Chat), with the same
    bytes and losses as the per-record encoders; only rejected rows are visited one by one here.
    Each record's losses are written sorted by (path, kind, detail): see the comment at the sort.
    """
    canonical = cast_to_canonical(table)
    enc = encode_rows(canonical, target)
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
    lf = pl.from_arrow(enc.losses)
    assert isinstance(lf, pl.DataFrame)
    lf = lf.filter(pl.Series(keep).gather(lf["row"]))
    # Not for reproducibility any more: the encoders report losses in source order, the same in
    # every process (tests/encoders/test_loss_order.py), and the compiled encoder in the same order.
    # Kept because it is the on-disk order of losses/ (and of loss_counts/, counted in the order
    # kinds first appear): without it both files' bytes change for every run with losses.
    lf = lf.sort(["row", "path", "kind", "detail"], maintain_order=True)
    ident = canonical.select(["conversation_id", "source_file", "source_line", "source_format"]).take(
        lf["row"].to_arrow())  # fmt: skip
    # Columns stay in Arrow (a batch has ~10 losses per record: Python lists of them cost ~3 % of a job).
    losses = pa.table(
        {**{name: ident.column(name) for name in ident.column_names},
         "target_format": pa.repeat(pa.scalar(target, pa.string()), lf.height),
         **{name: lf[name].to_arrow() for name in ("kind", "path", "detail")}}
    ).cast(LOSSES_SCHEMA)  # fmt: skip
    kept = table if keep.all() else table.filter(pa.array(keep, pa.bool_()))
    return kept, enc.jsonl(keep), losses, rejected


def _wire_lines(shard: Shard) -> bool:
    """Whether the shard's records are wire-format JSON lines (JSONL, or a dataset's rows)."""
    return shard.container == "jsonl" or (shard.container != "source" and shard.format != CANONICAL)


def shard_codec(shard: Shard) -> str:
    """Which codec decodes this shard's records in this process: ``native`` or ``python``.

    Wire-format lines (JSONL, or a dataset's rows) of a format the compiled decoder handles go to it
    when it is active here (``CHATLAKE_NATIVE``, read now: a worker reports what it ran, not what
    the parent expected); canonical Parquet and source adapters never decode JSON lines with it.
    """
    # format auto: the formats are known per batch; the compiled decoder takes all wire formats or none
    fmt = "responses" if shard.format == WIRE else shard.format
    return "native" if _wire_lines(shard) and codec.native_module(fmt) is not None else "python"


def run_shard(
    shard_json: dict[str, Any], work: Work, progress: Callable[[int, int], None] | None = None
) -> dict[str, Any]:
    """Run one shard and return its manifest entry (counts, files with sizes and hashes, seconds).

    ``progress(records, bytes)`` is called after each batch.
    """
    shard = Shard.from_json(shard_json)
    steps = _steps(work)
    policy = LossPolicy(work.on_loss, frozenset(work.allowed))
    encoded = work.target != PARQUET
    # JSONL lines and dataset rows are kept verbatim for the rejected file; other inputs are encoded back
    raw_format = shard.format if _wire_lines(shard) else None
    writer = ShardWriter(Path(work.run_dir), shard.id, encoded, target=work.target, layout=work.layout)
    counts = _Counts()
    started = time.perf_counter()
    try:
        batch: Batch
        for batch in read_shard(shard, work.chunk_bytes, work.batch_rows):
            rejected = batch.rejected
            table = to_disk(batch.table)
            originals = _Originals(table, batch.raw, batch.format or raw_format)
            if steps:
                table, step_rejected = _apply_steps(table, steps, originals)
                rejected = rejected + step_rejected
            if encoded:
                table, data, losses, enc_rejected = _encode(table, work.target, policy, originals)
                writer.output(data, table.num_rows)
                writer.losses(losses)
                rejected = rejected + enc_rejected
                if losses.num_rows:
                    kinds = pc.value_counts(losses.column("kind"))
                    names, n = kinds.field("values").to_pylist(), kinds.field("counts").to_pylist()
                    counts.loss_kinds.update(dict(zip(names, n, strict=True)))
                    counts.lossy += pc.count_distinct(losses.column("conversation_id"), mode="all").as_py()
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
        if counts.read != counts.written + rejected_total:
            raise RuntimeError(
                f"{shard.id}: read {counts.read} != written {counts.written} + rejected {rejected_total}"
            )
        files = writer.commit()
    except BaseException:
        writer.abort()
        raise
    return {
        "id": shard.id,
        "input": {k: v for k, v in shard.to_json().items() if k not in ("id", "weight")},
        "read": counts.read,
        "written": counts.written,
        "rejected": rejected_total,
        "blank_lines": counts.blank,
        "rejected_by_stage": dict(sorted(counts.by_stage.items())),
        "rejected_by_reason": dict(sorted(counts.by_reason.items())),
        "losses_by_kind": dict(sorted(counts.loss_kinds.items())),
        "records_with_losses": counts.lossy,
        **({"source_counts": dict(sorted(counts.source_counts.items()))} if counts.source_counts else {}),
        **({"detected": dict(sorted(counts.detected.items()))} if shard.format == WIRE else {}),
        "codec": shard_codec(shard),
        "native_fallback": dict(sorted(counts.fallback.items())),
        "files": files,
        "weight": shard.weight,
        "seconds": round(time.perf_counter() - started, 3),
    }
