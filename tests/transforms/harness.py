"""Run a step both ways -- vectorized through apply_steps, per record through the reference -- and
return the first difference."""

from __future__ import annotations

from typing import Any

import polars as pl
import pyarrow as pa

from pipeline.engine.process import frame_to_disk as to_arrow
from pipeline.transforms import apply_steps, make_step
from tests.helpers import json_diff
from tests.transforms.reference import run_reference


def compare(table: pa.Table, name: str, **params: Any) -> str | None:
    """None when the vectorized step equals the reference on every row of ``table``."""
    step = make_step(name, **params)
    kept, rejected = apply_steps(pl.from_arrow(table), [step])  # type: ignore[arg-type]
    if len(kept) + len(rejected) != table.num_rows:
        return f"{len(kept)} kept + {len(rejected)} rejected != {table.num_rows} read"
    got = {r["conversation_id"]: r for r in to_arrow(kept).to_pylist()}
    reasons = dict(zip(rejected["conversation_id"].to_list(), rejected["reason"].to_list(), strict=True))
    ref_params = dict(step.params)
    for n, row in enumerate(table.to_pylist()):
        cid = row["conversation_id"]
        want, err = run_reference(name, row, ref_params)
        if err is not None:
            if reasons.get(cid) != err:
                got = reasons.get(cid) or "a kept row"
                return f"row {n}: reference rejects with {err!r}, vectorized gave {got!r}"
            continue
        if cid not in got:
            return f"row {n}: reference keeps it, vectorized rejected it: {reasons.get(cid)!r}"
        d = json_diff(want, got[cid])
        if d is not None:
            return f"row {n}: {d}"
    return None
