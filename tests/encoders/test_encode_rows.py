"""The job engine (behind ``run``, ``convert`` and ``transform``) encodes through :func:`encode_rows`
(the compiled encoder for Responses -> Chat): its output bytes, loss records and rejections equal the
per-record loop over ``convert_table`` it replaced, kept here as the reference.

Sources: every case of ``tests/cases.py`` (all formats mixed in one batch, so the router splits it),
synthetic Responses records, hypothesis records, the corpus' Responses records and edited tables;
under the loss policies allow, reject and reject-except-some-kinds.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline import synth
from pipeline.encoders.encode_rows import encode_rows
from pipeline.engine.process import _encode, _Originals
from pipeline.formats import decode_records
from pipeline.io.run_tables import rejected_row
from pipeline.losses import LossPolicy
from pipeline.schema import CONVERSATION_SCHEMA
from tests.cases import CASES, RESPONSES
from tests.corpus import corpus_available, corpus_records
from tests.helpers import repaired_convert_table
from tests.strategies import wire_record

POLICIES = [
    LossPolicy(),
    LossPolicy("reject"),
    LossPolicy("reject", frozenset({"reasoning", "item_id", "instruction_position", "content_form"})),
]


# ---- the reference: the per-record loops these functions used to be ----------------------------


def reference_engine(table: pa.Table, target: str, policy: LossPolicy) -> tuple[Any, ...]:
    ids = table.column("conversation_id").to_pylist()
    files = table.column("source_file").to_pylist()
    lines = table.column("source_line").to_pylist()
    formats = table.column("source_format").to_pylist()
    keep, out, rejected = [], [], []
    losses: dict[str, list[Any]] = {k: [] for k in (
        "conversation_id", "source_file", "source_line", "source_format", "target_format", "kind", "path",
        "detail")}  # fmt: skip
    for r, c in enumerate(repaired_convert_table(table, target)):
        stage = reason = None
        if c.error is not None:
            stage, reason = "convert", f"encode: {c.error}"
        elif refused := policy.refused(c.losses):
            stage = "loss_policy"
            reason = f"loss: {', '.join(sorted({x.kind for x in refused}))} (on_loss = reject)"
        if stage is not None:
            rejected.append(rejected_row(files[r], lines[r], stage, str(reason), conversation_id=ids[r]))
            keep.append(False)
            continue
        keep.append(True)
        out.append(c.record)
        for x in sorted(c.losses, key=lambda x: (x.path, x.kind, x.detail)):
            for name, value in zip(losses, (ids[r], files[r], lines[r], formats[r], target, x.kind, x.path,
                                            x.detail), strict=True):  # fmt: skip
                losses[name].append(value)
    data = (b"\n".join(out) + b"\n") if out else b""
    return keep, data, losses, rejected


# ---- the check -----------------------------------------------------------------------------------


def check_same(table: pa.Table, target: str = "chat") -> Counter[str]:
    """Assert the engine's encoding equals the reference on ``table``, under every policy."""
    lines = list(range(1, table.num_rows + 1))
    table = table.set_column(
        table.schema.get_field_index("source_line"), "source_line", pa.array(lines, pa.int64())
    )
    stats: Counter[str] = Counter(rows=table.num_rows)
    enc = encode_rows(table, target)
    stats["native"] = sum(enc.native.to_pylist())
    # the engine's call: the same loss rows, only the rows' interleaving may differ
    loose = encode_rows(table, target, ordered_losses=False).losses
    assert loose.take(np.argsort(loose.column("row").to_numpy(), kind="stable")).equals(enc.losses)
    originals = _Originals(table, {}, None)
    by_line = dict(zip(lines, table.column("source_format").to_pylist(), strict=True))
    for policy in POLICIES:
        keep, data, losses, rejected = reference_engine(table, target, policy)
        kept, got_data, got_losses, got_rejected = _encode(table, target, policy, originals)
        assert got_data == data
        assert got_losses.to_pydict() == losses
        original = ("input", "input_format", "input_encoding")
        assert [{k: v for k, v in r.items() if k not in original} for r in got_rejected] == [
            {k: v for k, v in r.items() if k not in original} for r in rejected
        ]
        for r in got_rejected:  # the record as read, encoded back in its own format
            assert r["input_format"] == by_line[r["source_line"]] and r["input_encoding"] == "utf-8"
            assert isinstance(orjson.loads(r["input"]), dict)
        assert kept.column("conversation_id").to_pylist() == [
            c for c, k in zip(table.column("conversation_id").to_pylist(), keep, strict=True) if k
        ]
        stats[f"written[{policy.on_loss}{'-some' if policy.allowed else ''}]"] = sum(keep)
    return stats


def test_every_case_of_every_format_in_one_batch() -> None:
    records = [(fmt, rec) for fmt, cases in CASES.items() for _, rec in cases]
    tables = [decode_records([rec], fmt).table for fmt, rec in records]
    table = pa.concat_tables([t for t in tables if t.num_rows])
    for target in ("chat", "responses", "anthropic"):
        stats = check_same(table, target)
        print(target, stats)
    assert stats["rows"] > 0


def test_responses_cases() -> None:
    stats = check_same(decode_records([rec for _, rec in RESPONSES], "responses").table)
    print("cases:", stats)
    assert stats["native"] > 0


def test_synthetic_records() -> None:
    table = decode_records(list(synth.generate("responses", 300, seed=5)), "responses").table
    stats = check_same(table)
    print("synthetic:", stats)
    assert stats["native"] > 270  # the fast path really ran


def test_rows_with_edited_items() -> None:
    """Edited rows stay on the native path (their edited losses written as columns);
    tests/encoders/test_encode_rows_edited.py checks them case by case."""
    records = [rec for _, rec in RESPONSES]
    table = decode_records(records, "responses").table
    rows = table.to_pylist()
    edited = 0
    for row in rows:  # edit every message text the way a user would (fingerprints untouched)
        for item in row["items"] or []:
            if item["type"] == "message" and item["content"] and item["fingerprint"] is not None:
                item["content"][0]["text"] = (item["content"][0]["text"] or "") + " (edited)"
                edited += 1
    table = pa.Table.from_pylist(rows, schema=CONVERSATION_SCHEMA)
    check_same(table)
    enc = encode_rows(table, "chat")
    lost = enc.losses.filter(pa.compute.equal(enc.losses.column("kind"), "edited"))
    assert edited and lost.num_rows
    # (some of these rows fall back for other reasons: the other file says which must vectorize)
    assert any(enc.native.to_pylist()[r] for r in lost.column("row").to_pylist())


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(wire_record("responses", "request"), min_size=1, max_size=6))
def test_hypothesis_records(records: list[dict[str, Any]]) -> None:
    res = decode_records(records, "responses")
    if res.table.num_rows:
        check_same(res.table)


@pytest.mark.skipif(not corpus_available(), reason="../shared/corpus is absent (CI has it)")
def test_corpus_responses_records() -> None:
    records = [c.record for c in corpus_records() if c.format == "responses"]
    table = decode_records(records, "responses").table
    stats = check_same(table)
    print(f"corpus: {len(records)} responses records; {stats}")
    assert stats["native"] > 0


def test_empty_batch() -> None:
    table = decode_records([], "responses").table
    enc = encode_rows(table, "chat")
    assert len(enc.records) == len(enc.errors) == enc.losses.num_rows == 0
    kept, data, losses, rejected = _encode(table, "chat", LossPolicy("reject"), _Originals(table, {}, None))
    assert (kept.num_rows, data, losses.num_rows, rejected) == (0, b"", 0, [])
