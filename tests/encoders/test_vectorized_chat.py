"""The vectorized Responses -> Chat converter equals the per-record reference (``to_chat``), row by row:
the same Chat record (as canonical rows and as JSON), the same losses, the same refusals, through
``encode_rows`` (the vectorized rows and the per-record fallback, as the engine runs them).

Sources: every Responses case of ``tests/cases.py``, hypothesis records (``wire_record``), synthetic
records (``pipeline.synth``) and the corpus' Responses records.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import orjson
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline import synth
from pipeline.encoders import convert_table
from pipeline.encoders.vectorized import encode_rows, responses_to_chat
from pipeline.formats import decode_records, encode_jsonl
from tests.cases import CASES, RESPONSES
from tests.corpus import corpus_available, corpus_records
from tests.helpers import json_diff
from tests.strategies import wire_record

# Columns the Chat record determines (identity and provenance are carried from the source row).
_RECORD_COLUMNS = ("source_format", "record_kind", "model", "instructions", "items_form", "items", "tools",
                   "tool_choice", "extra_json", "null_fields", "n_items")  # fmt: skip


def _loss_key(loss: dict[str, Any]) -> tuple[str, str, str]:
    return loss["path"], loss["kind"], loss["detail"]


def check_equal(table: pa.Table) -> Counter[str]:
    """Assert vectorized == per-record on every row of ``table``; return what was checked.

    Every row through :func:`encode_rows` (what the engine and ``chatlake convert`` call: the
    vectorized rows and the per-record fallback): the same JSON text, losses and refusals as
    ``convert_table``; and the rows ``responses_to_chat`` converts itself, as canonical Chat rows: what
    the Chat decoder builds from the reference record.
    """
    ref = convert_table(table, "chat")
    enc = encode_rows(table, "chat")
    res = responses_to_chat(table)
    out_rows = res.rows.to_pylist()
    assert out_rows == sorted(out_rows)
    where = {r: j for j, r in enumerate(out_rows)}
    assert enc.vectorized.to_pylist() == [i in where for i in range(table.num_rows)]
    records, errors, res_errors = enc.records.to_pylist(), enc.errors.to_pylist(), res.errors.to_pylist()
    losses_by_row: dict[int, list[dict[str, Any]]] = {}
    for loss in enc.losses.to_pylist():
        losses_by_row.setdefault(loss["row"], []).append(loss)
    res_losses: dict[int, list[dict[str, Any]]] = {}
    for loss in res.losses.to_pylist():
        res_losses.setdefault(loss["row"], []).append(loss)
    assert res.table.schema.equals(table.schema, check_metadata=False)
    lines = encode_jsonl(res.table, "chat")
    stats = Counter(rows=table.num_rows)
    for i, c in enumerate(ref):
        if c.error is not None:
            assert errors[i] == c.error, i
            assert records[i] is None and i not in where
            assert res_errors[i] in (None, c.error), i  # None: left to the per-record encoder
            stats["refused"] += 1
            continue
        assert errors[i] is None and res_errors[i] is None, (i, errors[i], res_errors[i])
        # the Chat record, as JSON text: byte for byte the per-record encoder's
        diff = json_diff(orjson.loads(records[i]), c.record)
        assert diff is None, (i, diff)
        assert records[i].encode() == orjson.dumps(c.record), i
        # losses: the same multiset, and the same order apart from keys dropped from one part, which
        # the reference reports in set order
        got_losses = losses_by_row.pop(i, [])
        want_losses = [loss.to_json() for loss in c.losses]
        assert sorted(map(_loss_key, got_losses)) == sorted(map(_loss_key, want_losses)), i
        ordered = [_loss_key(x) for x in got_losses if not x["detail"].endswith("is not carried")]
        assert ordered == [_loss_key(x) for x in want_losses if not x["detail"].endswith("is not carried")], i
        stats["converted"] += 1
        stats["losses"] += len(want_losses)
        if i not in where:
            continue
        # ... and the vectorized row as canonical rows: what the Chat decoder builds from the reference
        j = where[i]
        expected = decode_records([c.record], "chat").table
        assert lines[j] == encode_jsonl(expected, "chat")[0]
        for name in _RECORD_COLUMNS:
            got, want = res.table.column(name)[j], expected.column(name)[0]
            assert got.equals(want), (i, name, got, want)
        assert res.table.column("conversation_id")[j].as_py() == table.column("conversation_id")[i].as_py()
        cid = table.column("conversation_id")[i].as_py()
        mine = res_losses.pop(i, [])
        assert all(loss["conversation_id"] == cid for loss in mine)
        assert [_loss_key(x) for x in mine] == [_loss_key(x) for x in got_losses], i
    assert not losses_by_row and not res_losses
    stats["fallback"] = sum(res.fallback.to_pylist())
    return stats


def test_every_responses_case() -> None:
    table = decode_records([rec for _, rec in RESPONSES], "responses").table
    stats = check_equal(table)
    print("cases:", stats)
    assert stats["converted"] > 0


def test_rows_of_other_formats_take_the_per_record_path() -> None:
    records = [rec for _, rec in CASES["chat"]]
    table = decode_records(records, "chat").table
    stats = check_equal(table)
    assert stats["fallback"] == table.num_rows


def test_synthetic_records() -> None:
    table = decode_records(list(synth.generate("responses", 400, seed=11)), "responses").table
    stats = check_equal(table)
    print("synthetic:", stats)
    assert stats["converted"] + stats["refused"] == 400
    assert stats["fallback"] < 40  # the fast path covers what synthetic logs hold


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(wire_record("responses", "request"), min_size=1, max_size=6))
def test_hypothesis_records(records: list[dict[str, Any]]) -> None:
    res = decode_records(records, "responses")
    if res.table.num_rows:
        check_equal(res.table)


def test_fallback_rows_match_the_reference() -> None:
    """Each documented fallback feature: chosen by the predicate, converted (or refused) as the reference."""
    call = {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"}
    records = [
        # an assistant message with absent content after calls: stays a message of its own
        {"input": [call, {"type": "message", "role": "assistant"}]},
        # an Anthropic-style image part in a user message
        {"input": [{"role": "user", "content": [{"type": "image", "source": {"type": "url", "url": "u"}}]}]},
        # an input_image whose detail is neither a string nor null
        {"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "u", "detail": 3}]}]},
        # the fast path next to them
        {
            "input": [
                {"role": "user", "content": [{"type": "input_image", "image_url": 'u\n"', "detail": None}]}
            ]
        },
    ]
    table = decode_records(records, "responses").table
    stats = check_equal(table)
    assert responses_to_chat(table).fallback.to_pylist() == [True, True, True, False]
    assert stats["refused"] == 0 and stats["converted"] == 4
    [first] = convert_table(table.slice(0, 1), "chat")
    assert first.record["messages"][-1] == {"role": "assistant"}


def test_id_less_calls_and_outputs_take_the_fallback() -> None:
    """A call or output without call_id (missing or null) gets call_ids.py's generated / paired id on
    the per-record path; rows whose calls and outputs all have ids stay on the fast path."""
    call = {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"}
    out = {"type": "function_call_output", "call_id": "c", "output": "ok"}
    no_id = {k: v for k, v in call.items() if k != "call_id"}
    records = [
        {"input": [no_id, {k: v for k, v in out.items() if k != "call_id"}]},  # both id-less
        {"input": [call, {"type": "function_call_output", "output": "ok"}]},  # the output only
        {"input": [{**call, "call_id": None}, out]},  # an explicit null call id
        # an id-less output with no call to answer (dropped as an orphan)
        {"input": [{"role": "user", "content": "hi"}, {"type": "function_call_output", "output": "x"}]},
        {"input": [call, out]},  # the fast path next to them
    ]
    table = decode_records(records, "responses").table
    stats = check_equal(table)
    assert responses_to_chat(table).fallback.to_pylist() == [True, True, True, True, False]
    assert stats["converted"] == 5
    chat = encode_rows(table.slice(0, 1), "chat").records[0].as_py()
    assert '"tool_call_id":"call_' in chat and '"id":"call_' in chat


def test_empty_table() -> None:
    table = decode_records([], "responses").table
    res = responses_to_chat(table)
    assert res.table.num_rows == 0 and res.losses.num_rows == 0 and len(res.errors) == 0


@pytest.mark.skipif(not corpus_available(), reason="../shared/corpus is absent (CI has it)")
def test_corpus_responses_records() -> None:
    records = [c.record for c in corpus_records() if c.format == "responses"]
    res = decode_records(records, "responses")
    stats = check_equal(res.table)
    print(f"corpus: {len(records)} responses records, {len(res.rejected)} not decodable; {stats}")
    assert stats["converted"] > 0
