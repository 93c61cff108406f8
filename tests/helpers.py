"""One comparison helper and one round-trip helper for every test."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.encoders import Converted, convert_table
from pipeline.encoders.repairs import refusals, repair
from pipeline.formats import decode_records, encode_table
from pipeline.losses import Loss
from pipeline.schema import CONVERSATION_SCHEMA


def json_diff(a: Any, b: Any, path: str = "") -> str | None:
    """The first JSON-pointer path where ``a`` and ``b`` differ, with why; None when identical.

    Stricter than ``==``: a bool is not an int, 1.0 is not 1, absent is not null.
    """
    if type(a) is not type(b):
        return f"{path or '/'}: {type(a).__name__} {a!r:.60} != {type(b).__name__} {b!r:.60}"
    if isinstance(a, dict):
        if a.keys() != b.keys():
            return f"{path or '/'}: keys differ {sorted(a.keys() ^ b.keys())}"
        for k in a:
            d = json_diff(a[k], b[k], f"{path}/{k}")
            if d:
                return d
    elif isinstance(a, list):
        if len(a) != len(b):
            return f"{path or '/'}: length {len(a)} != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            d = json_diff(x, y, f"{path}/{i}")
            if d:
                return d
    elif a != b:
        return f"{path or '/'}: {a!r:.60} != {b!r:.60}"
    return None


def resolves(doc: Any, ptr: str) -> bool:
    """Does the RFC 6901 pointer ``ptr`` name something in ``doc``?"""
    if ptr in ("", "/"):
        return True
    for raw in ptr[1:].split("/"):
        key = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(doc, dict) and key in doc:
            doc = doc[key]
        elif isinstance(doc, list) and key.isdigit() and int(key) < len(doc):
            doc = doc[int(key)]
        else:
            return False
    return True


def assert_identical(a: Any, b: Any) -> None:
    d = json_diff(a, b)
    assert d is None, d


def roundtrip(records: list[dict[str, Any]], fmt: str, tmp_path: Path) -> list[dict[str, Any]]:
    """decode -> canonical -> Parquet on disk -> read back -> encode, asserting nothing is rejected."""
    res = decode_records(records, fmt)
    assert res.rejected == [], [r.error for r in res.rejected]
    path = tmp_path / f"{fmt}.parquet"
    pq.write_table(res.table, path, compression="zstd")
    table = pq.read_table(path)
    assert table.schema.equals(CONVERSATION_SCHEMA, check_metadata=False)
    return encode_table(table, fmt)


def repaired_convert_table(table: pa.Table, target: str) -> list[Converted]:
    """``convert_table`` on the table the target rules' repairs give (repairs.py), with their losses
    first and the suspect records that still break a rule refused: what ``encode_rows`` does
    around its encoders, row by row."""
    fixed = repair(table, target)
    out = convert_table(fixed.table, target, as_bytes=True)
    records = pa.array([c.record.decode() if c.error is None else None for c in out], pa.large_string())
    errors = pa.array([c.error for c in out], pa.string())
    why = refusals(records, errors, fixed.suspect, target).to_pylist()
    by_row: dict[int, list[Loss]] = {}
    for loss in fixed.losses.to_pylist():
        by_row.setdefault(loss["row"], []).append(Loss(loss["path"], loss["kind"], loss["detail"]))
    for r, c in enumerate(out):
        if why[r] is not None:
            out[r] = Converted(None, error=why[r])
        elif c.error is None:
            c.losses[:0] = by_row.get(r, [])
    return out
