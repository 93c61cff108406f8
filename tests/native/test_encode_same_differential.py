"""The compiled same-format encoders (``pipeline._native.encode_same_responses`` / ``_chat`` /
``_anthropic``, ``encode_same.c``) against the exact codecs they must equal byte for byte
(``pipeline.formats.<fmt>.encode`` + ``orjson.dumps``, through ``convert_table``): same JSON text,
errors, losses in order (the ``edited`` ones of rows changed by steps, the ``set`` additions), refusals
under each loss policy (:func:`tests.native.encode_diff.compare_encode`), on every source of records.

Each test also bounds how many rows went to the per-record path, so an encoder that quietly handed
everything back would fail here rather than pass by comparing Python with itself.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline import codec, synth
from pipeline.encoders.encode_rows import encode_rows
from pipeline.encoders.request_fields import TOKEN_LIMIT
from pipeline.formats import decode_records
from pipeline.schema import CONVERSATION_SCHEMA, cast_to_canonical
from pipeline.transforms import apply_steps, make_step
from tests.cases import CASES
from tests.corpus import corpus_available, corpus_records
from tests.native.differential import python_codec
from tests.native.encode_diff import POLICIES, compare_encode
from tests.strategies import draw_edits, wire_record

FORMATS = ("responses", "chat", "anthropic")

pytestmark = pytest.mark.skipif(
    any(
        codec.native_encoder(fmt) is None
        or not any(fmt in sources and len(sources) == 1 for _, sources in codec.native_encoder(fmt) or ())
        for fmt in FORMATS
    ),
    reason="pipeline._native is not built (no C compiler at install): "
    "run `python tests/native/build_native.py --out .` or `pip install -e .` to test it",
)


def _flags(table: pa.Table, fmt: str) -> list[bool]:
    return compare_encode(table, fmt).native.to_pylist()


@pytest.mark.parametrize("fmt", FORMATS)
def test_hand_written_cases(fmt: str) -> None:
    """Every hand-written case, request bodies and response objects, goes through the compiled writer."""
    table = decode_records([rec for _, rec in CASES[fmt]], fmt).table
    flags = _flags(table, fmt)
    assert [name for (name, _), f in zip(CASES[fmt], flags, strict=True) if not f] == []


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_mixed_in_one_batch(fmt: str) -> None:
    """The target's own rows are written back natively wherever they sit in a mixed batch."""
    tables = [decode_records([rec for _, rec in CASES[f]], f).table for f in sorted(CASES)]
    table = pa.concat_tables([cast_to_canonical(t) for t in tables])
    flags = _flags(table, fmt)
    formats = table.column("source_format").to_pylist()
    assert all(f for f, src in zip(flags, formats, strict=True) if src == fmt)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("seed", [0, 1])
def test_synthetic_records(fmt: str, seed: int) -> None:
    """``chatlake synth --format FMT`` records: every row native."""
    table = decode_records(list(synth.generate(fmt, 500, seed=seed)), fmt).table
    assert all(_flags(table, fmt))


def _role_swap_turns(table: pa.Table) -> pa.Table:
    steps = [make_step("role_swap", on_unsupported="drop"), make_step("turns")]
    kept, _ = apply_steps(pl.from_arrow(table), steps)  # type: ignore[arg-type]
    return cast_to_canonical(kept.to_arrow())


@pytest.mark.parametrize("fmt", FORMATS)
def test_synthetic_records_after_role_swap(fmt: str) -> None:
    """Edited items lose their state (and report ``edited``) on the compiled path as on the codec's."""
    table = _role_swap_turns(decode_records(list(synth.generate(fmt, 300, seed=11)), fmt).table)
    res = compare_encode(table, fmt)
    if fmt == "responses":  # the synthetic Chat and Anthropic items carry no item ids or opaque state
        assert res.losses.filter(pa.compute.equal(res.losses.column("kind"), "edited")).num_rows > 50
    assert sum(res.native.to_pylist()) >= 0.95 * table.num_rows


@pytest.mark.parametrize("fmt", FORMATS)
def test_role_swap_of_the_cases(fmt: str) -> None:
    table = _role_swap_turns(decode_records([rec for _, rec in CASES[fmt]], fmt).table)
    if table.num_rows:
        compare_encode(table, fmt)


@pytest.mark.skipif(not corpus_available(), reason="../shared/corpus is not there")
@pytest.mark.parametrize("fmt", FORMATS)
def test_corpus_records(fmt: str) -> None:
    records = [c.record for c in corpus_records() if c.format == fmt]
    table = decode_records(records, fmt).table
    assert table.num_rows > 0
    assert all(_flags(table, fmt))


@pytest.mark.skipif(not corpus_available(), reason="../shared/corpus is not there")
@pytest.mark.parametrize("fmt", FORMATS)
def test_corpus_records_after_role_swap(fmt: str) -> None:
    records = [c.record for c in corpus_records() if c.format == fmt]
    table = _role_swap_turns(decode_records(records, fmt).table)
    if table.num_rows:
        assert sum(_flags(table, fmt)) >= 0.9 * table.num_rows


@pytest.mark.parametrize("fmt", FORMATS)
def test_sets(fmt: str) -> None:
    """``--set`` additions: written into the rows first, reported as ``set``, on both paths alike."""
    table = decode_records(list(synth.generate(fmt, 60, seed=5)), fmt).table
    sets = {"model": "claude-x" if fmt == "anthropic" else "gpt-x", TOKEN_LIMIT[fmt]: 99}
    native = encode_rows(table, fmt, sets)
    with python_codec():
        python = encode_rows(table, fmt, sets)
    assert all(native.native.to_pylist())
    assert native.records.to_pylist() == python.records.to_pylist()
    assert native.losses.to_pylist() == python.losses.to_pylist()
    assert python.losses.filter(pa.compute.equal(python.losses.column("kind"), "set")).num_rows == 120
    for policy in POLICIES:
        assert native.refused_kinds(policy).to_pylist() == python.refused_kinds(policy).to_pylist()
    keep = np.ones(table.num_rows, bool)
    assert native.jsonl(keep) == python.jsonl(keep)


def _records(fmt: str, kind: str, most: int) -> st.SearchStrategy[tuple[str, list[dict[str, Any]]]]:
    return st.tuples(st.just(fmt), st.lists(wire_record(fmt, kind), min_size=1, max_size=most))


_ANY = st.one_of(*(_records(fmt, kind, 8) for fmt in FORMATS for kind in ("request", "response")))


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_ANY)
def test_hypothesis_records(fmt_records: tuple[str, list[dict[str, Any]]]) -> None:
    fmt, records = fmt_records
    table = decode_records(records, fmt).table
    if table.num_rows:  # a Chat call's extra may hold a number it hands back (a 19-digit integer)
        compare_encode(table, fmt)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_ANY, st.data())
def test_hypothesis_records_with_edits(
    fmt_records: tuple[str, list[dict[str, Any]]], data: st.DataObject
) -> None:
    fmt, records = fmt_records
    res = decode_records(records, fmt)
    if res.table.num_rows:
        compare_encode(draw_edits(res.table, data), fmt)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(FORMATS).flatmap(lambda fmt: _records(fmt, "request", 6)))
def test_hypothesis_records_after_role_swap(fmt_records: tuple[str, list[dict[str, Any]]]) -> None:
    fmt, records = fmt_records
    table = decode_records(records, fmt).table
    if table.num_rows:
        table = _role_swap_turns(table)
        if table.num_rows:
            compare_encode(table, fmt)


# Records with every shape the writers branch on: forms (string / parts / null / absent), explicit
# nulls, extra keys at every level (numbers the compiled writers copy as text: 1e-7, 1.0, big ints),
# block JSON fields, wrappers, response objects.
TRICKY: dict[str, list[dict[str, Any]]] = {
    "responses": [
        {"input": "hi", "instructions": None, "model": None, "tools": None, "tool_choice": None, "x": 1e-7},
        {"input": [],
         "instructions": [{"role": "system", "content": "s"}, {"type": "reasoning", "summary": []}]},
        {
            "instructions": "be brief",
            "input": [
                {"role": "user", "content": [{"type": "input_text", "text": "a\u2028\"\\\n\x01", "k": 1.0}]},
                {"type": "reasoning", "id": "rs", "summary": None, "encrypted_content": "e", "content": None},
                {"type": "reasoning", "summary": [{"type": "summary_text", "text": "s", "x": [1e300]}],
                 "content": [{"type": "reasoning_text", "text": "t"}]},
                {"type": "message", "role": "assistant", "status": None, "phase": "final", "id": "m",
                 "content": [{"type": "output_text", "text": "o", "annotations": [], "logprobs": [{"a": 1}]},
                             {"type": "refusal", "refusal": "no"}]},
                {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{\"x\": 1}", "id": None},
                {"type": "function_call_output", "call_id": "c", "output": {"an": "object"}},
                {"type": "function_call_output", "call_id": "c",
                 "output": [{"type": "input_text", "text": "t"}]},
                {"type": "custom_tool_call_output", "call_id": "d"},
                {"type": "web_search_call", "id": "ws", "action": {"q": 12345678901234567890}},
                {"id": "ref"},
                {"type": None, "id": "ref2"},
                {"role": "assistant"},
            ],
            "tools": [{"type": "function", "name": "f", "parameters": {"n": 0.1e-9}}],
            "tool_choice": "auto",
            "metadata": {"k": "v"},
            "temperature": 1.0,
        },
        {"output": None, "id": "resp", "usage": {"input_tokens": 3}},
        {"output": [{"type": "message", "role": "assistant", "content": "hi"}], "instructions": "i"},
        {"output": [], "id": "resp", "status": "failed"},
    ],
    "chat": [
        {"messages": [{"role": "user", "content": "q", "name": "n"},
                      {"role": "assistant", "content": None, "refusal": "r", "audio": {"id": "a"},
                       "tool_calls": [
                           {"id": "a", "type": "function",
                            "function": {"name": "f", "arguments": "{}", "k": [1]}, "index": 0},
                           {"id": None, "type": "custom", "custom": {"name": "g", "input": "raw"}}]},
                      {"role": "tool", "tool_call_id": "a", "content": [{"type": "text", "text": "r"}]},
                      {"role": "tool", "tool_call_id": None, "content": ""},
                      {"role": "function", "name": "f", "content": "x"},
                      {"role": "assistant", "tool_calls": []},
                      {"role": "assistant", "tool_calls": None, "content": []},
                      {"role": "assistant"}],
         "model": "gpt", "tools": [{"type": "function", "function": {"name": "f"}}], "tool_choice": "none",
         "n": 1, "stop": None, "seed": 12345678901234567890, "top_p": 1e-7},
        {"choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                      "message": {"role": "assistant", "content": "a", "refusal": None}},
                     {"message": {"role": "assistant", "content": None,
                                  "tool_calls": [{"id": "t", "type": "function",
                                                  "function": {"name": "f", "arguments": "{}"}}]}}],
         "id": "chatcmpl", "usage": {"total_tokens": 3}, "model": "m"},
    ],
    "anthropic": [
        {"system": [{"type": "text", "text": "s", "cache_control": {"type": "ephemeral"}, "citations": None}],
         "messages": [
             {"role": "user", "content": [{"type": "text", "text": "q"},
                                          {"type": "image", "source": {"type": "url", "url": "https://x"}}]},
             {"role": "assistant", "id": "msg", "content": [
                 {"type": "thinking", "thinking": "t", "signature": "sig"},
                 {"type": "thinking", "thinking": None},
                 {"type": "redacted_thinking", "data": "d"},
                 {"type": "text", "text": "a", "citations": [{"n": 1.0}]},
                 {"type": "tool_use", "id": "tu", "name": "f", "input": {"a": [1.5, None, 1e-7]}},
                 {"type": "server_tool_use", "id": "st", "name": "web_search", "input": {}},
                 {"type": "web_search_tool_result", "tool_use_id": "st", "content": {"k": 1}},
                 {"type": "compaction", "content": None, "encrypted_content": "e"}]},
             {"role": "user", "content": [
                 {"type": "tool_result", "tool_use_id": "tu", "content": [{"type": "text", "text": "r"}],
                  "is_error": False},
                 {"type": "tool_result", "tool_use_id": "tu"},
                 {"type": "tool_result", "tool_use_id": None, "content": "s"}]},
             {"role": "assistant", "content": []},
             {"role": "user", "content": ""}],
         "model": "claude", "max_tokens": 10, "tools": [{"name": "f", "input_schema": {}}], "metadata": {}},
        {"system": "s", "messages": [{"role": "user", "content": "q"}], "tool_choice": None},
        {"content": [{"type": "text", "text": "a"},
                     {"type": "tool_use", "id": "t", "name": "f", "input": {}}],
         "role": "assistant", "id": "msg", "stop_reason": "tool_use", "usage": {"input_tokens": 1}},
        {"content": [], "role": 3},
    ],
}  # fmt: skip


@pytest.mark.parametrize("fmt", FORMATS)
def test_tricky_records(fmt: str) -> None:
    decoded = decode_records(TRICKY[fmt], fmt)
    assert not decoded.rejected, decoded.rejected
    assert all(_flags(decoded.table, fmt))


def test_sliced_table() -> None:
    """A table whose arrays start at an offset (a slice) reads the right rows."""
    for fmt in FORMATS:
        table = decode_records(list(synth.generate(fmt, 50, seed=3)), fmt).table
        assert all(_flags(table.slice(7, 30), fmt))


def _with(table: pa.Table, change: Any) -> pa.Table:
    """``table`` with ``change(rows)`` applied to its rows as Python dicts (odd canonical tables that
    no decoder writes, as a Parquet file from elsewhere could hold)."""
    rows = table.to_pylist()
    change(rows)
    return pa.Table.from_pylist(rows, schema=CONVERSATION_SCHEMA)


def test_what_goes_back_whole() -> None:
    """The rows the compiled writers hand back (docs/internals/native-codec.md), each beside a row
    they take."""
    chat = decode_records(
        [
            {"messages": [{"role": "assistant", "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"},
                 "x": 2**-30}]}]},
            {"messages": [{"role": "assistant", "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}, "x": 0.5}]}]},
        ],
        "chat",
    ).table  # fmt: skip
    # a call's extra keys are parsed and written again: 2**-30 (9.313225746154785e-10) is a power of
    # two, whose shortest text orjson_number.h does not prove
    assert _flags(chat, "chat") == [False, True]

    responses = decode_records([{"input": [{"role": "user", "content": "q", "id": "m"}], "model": "m"}] * 4,
                               "responses").table  # fmt: skip

    def odd(rows: list[dict[str, Any]]) -> None:
        rows[0]["items"][0]["null_fields"] = ["id"]  # id is set: the dict would replace it in place
        rows[1]["null_fields"] = ["model"]  # likewise at the top level
        rows[2]["items"][0]["null_fields"] = [None]  # a key orjson refuses: an error row in Python

    flags = _flags(_with(responses, odd), "responses")
    assert flags == [False, False, False, True]
    with python_codec():
        errors = encode_rows(_with(responses, odd), "responses").errors.to_pylist()
    assert errors[2] is not None and errors[3] is None
