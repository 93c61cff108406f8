"""The ``chatlake transform`` job: canonical Parquet (or wire JSONL) in, steps, canonical Parquet out.

Reads each input in batches, runs :func:`pipeline.transforms.apply_steps` on every batch, writes the
kept rows to ``OUTPUT`` (canonical columns, then the columns the steps add) and one row per rejected
record to ``OUTPUT.rejected.parquet`` (the run-layout ``rejected`` table, ``stage='transform'``, or
``'decode'`` for JSONL lines that did not decode). ``read == written + rejected`` always holds.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.errors import ConfigError
from pipeline.formats import WIRE_FORMATS, decode_lines
from pipeline.io.parquet import writer
from pipeline.io.run_tables import REJECTED_SCHEMA
from pipeline.schema import CONVERSATION_SCHEMA, cast_to_canonical
from pipeline.transforms import Step, apply_steps

BATCH_ROWS = 32_768


class StrictFailure(RuntimeError):
    """``--strict`` and a record was rejected; the message names it."""


def validate(inputs: Sequence[Path], output: Path, source: str) -> None:
    if source != "parquet" and source not in WIRE_FORMATS:
        raise ConfigError(
            f"--from {source!r} is not a format; use parquet or one of {', '.join(WIRE_FORMATS)}"
        )
    if not inputs:
        raise ConfigError("no input files given")
    for p in inputs:
        if not p.is_file():
            raise ConfigError(f"input {str(p)!r} does not exist or is not a file")
        if p.resolve() == output.resolve():
            raise ConfigError(f"output {str(output)!r} would overwrite an input; choose another --output")


def _plain(t: pa.DataType) -> pa.DataType:
    """Polars' large / view types as the plain types every chatlake file uses."""
    if pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return pa.string()
    if pa.types.is_large_list(t) or pa.types.is_list_view(t) or pa.types.is_list(t):
        return pa.list_(pa.field("item", _plain(t.value_type)))
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, _plain(f.type)) for f in t])
    return t


def to_arrow(df: pl.DataFrame) -> pa.Table:
    """Kept rows as Arrow: canonical columns cast to the schema, added columns with plain types."""
    # string views out of Polars without a copy, then one cast to plain strings (the default export
    # copies to large strings first, and the cast copies again)
    table = df.to_arrow(compat_level=pl.CompatLevel.newest())
    canon = cast_to_canonical(table)
    extra = [n for n in table.column_names if n not in CONVERSATION_SCHEMA.names]
    for name in extra:
        col = table.column(name)
        canon = canon.append_column(pa.field(name, _plain(col.type)), col.cast(_plain(col.type)))
    return canon


def _batches(path: Path, source: str, rejected: list[dict[str, Any]]) -> Iterator[pl.DataFrame]:
    if source == "parquet":
        pf = pq.ParquetFile(path)
        for batch in pf.iter_batches(batch_size=BATCH_ROWS):
            yield pl.from_arrow(pa.Table.from_batches([batch]))  # type: ignore[misc]
        return
    with open(path, "rb") as fh:
        first = 1
        while True:
            lines = [line for _, line in zip(range(BATCH_ROWS), fh, strict=False)]
            if not lines:
                return
            res = decode_lines(lines, source, source_file=str(path), first_line=first)
            first += len(lines)
            for r in res.rejected:
                rejected.append(
                    {
                        "source_file": str(path),
                        "source_line": r.line,
                        "conversation_id": None,
                        "stage": "decode",
                        "step": None,
                        "reason": r.error,
                        "input": r.input,
                    }
                )
            yield pl.from_arrow(res.table)  # type: ignore[misc]


def run_transform(
    inputs: Sequence[Path],
    steps: Sequence[Step],
    output: Path,
    *,
    source: str = "parquet",
    strict: bool = False,
) -> dict[str, Any]:
    """Run the job; returns the summary (``read``, ``written``, ``rejected``, ...)."""
    start = time.perf_counter()
    output.parent.mkdir(parents=True, exist_ok=True)
    rejected_path = output.with_name(output.name.removesuffix(".parquet") + ".rejected.parquet")
    tmp = output.with_name(output.name + ".tmp")
    read = written = 0
    rejected: list[dict[str, Any]] = []
    by_reason: dict[str, int] = {}
    out_writer = None
    try:
        for path in inputs:
            for df in _batches(path, source, rejected):
                read += len(df)
                kept, bad = apply_steps(df, steps)
                if strict and (len(bad) or rejected):
                    first = bad.row(0, named=True) if len(bad) else rejected[0]
                    raise StrictFailure(
                        f"record {first['conversation_id']} ({first['source_file']}:{first['source_line']}) "
                        f"rejected: {first['reason']}"
                    )
                for r in bad.to_dicts():  # the rejected rows only (few), for the report file
                    rejected.append({**r, "stage": "transform", "input": None})
                table = to_arrow(kept)
                if out_writer is None:
                    out_writer = writer(str(tmp), table.schema)
                out_writer.write_table(table)
                written += table.num_rows
        if out_writer is None:  # no rows at all: still write a canonical file
            out_writer = writer(str(tmp))
        out_writer.close()
        out_writer = None
        tmp.replace(output)
    finally:
        if out_writer is not None:
            out_writer.close()
        tmp.unlink(missing_ok=True)
    read += sum(1 for r in rejected if r["stage"] == "decode")
    for r in rejected:
        by_reason[r["reason"]] = by_reason.get(r["reason"], 0) + 1
    pq.write_table(pa.Table.from_pylist(rejected, REJECTED_SCHEMA), rejected_path, compression="zstd")
    return {
        "read": read,
        "written": written,
        "rejected": len(rejected),
        "steps": [s.name for s in steps],
        "output": str(output),
        "rejected_file": str(rejected_path),
        "rejected_reasons": dict(sorted(by_reason.items(), key=lambda kv: -kv[1])),
        "seconds": round(time.perf_counter() - start, 3),
    }
