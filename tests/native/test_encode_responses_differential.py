"""The compiled Chat / Anthropic -> Responses encoder (``pipeline._native.encode_responses``,
encode_responses.c, with anthropic_round_trip.c's report for Anthropic rows) against the per-record
encoder it must equal byte for byte (``to_responses.py``): same JSON text, errors, losses in order,
refusals under each loss policy (:func:`tests.native.encode_diff.compare_encode`), on every source of
Chat and Anthropic records.

Each test also bounds how many rows went to the per-record encoder, so a native encoder that quietly
handed everything back would fail here rather than pass by comparing Python with itself.
"""

from __future__ import annotations

from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline import codec, synth
from pipeline.formats import decode_lines, decode_records
from pipeline.schema import cast_to_canonical
from pipeline.transforms import apply_steps, make_step
from tests.cases import ANTHROPIC, CASES
from tests.corpus import corpus_available, corpus_records
from tests.native.encode_diff import compare_encode
from tests.strategies import draw_edits, wire_record

pytestmark = pytest.mark.skipif(
    codec.native_encoder("responses") is None,
    reason="pipeline._native is not built (no C compiler at install): "
    "run `python tests/native/build_native.py --out .` or `pip install -e .` to test it",
)

# The hand-written Chat cases the compiled encoder leaves to the per-record one, and why.
PER_RECORD_CASES = {
    "completion_object",  # response objects are response_objects.py's
}
# ... and the Anthropic ones
PER_RECORD_ANTHROPIC_CASES = {
    "message_object",  # response objects are response_objects.py's
    "refusal_empty_content",  # (a response object)
    "tool_use_without_ids",  # ids generated and paired by position (call_ids.py)
}


def _chat(records: list[dict[str, Any]]) -> pa.Table:
    return decode_records(records, "chat").table


def _share(table: pa.Table) -> float:
    flags = compare_encode(table, "responses").native.to_pylist()
    return sum(flags) / len(flags)


def test_hand_written_chat_cases() -> None:
    cases = CASES["chat"]
    flags = compare_encode(_chat([rec for _, rec in cases]), "responses").native.to_pylist()
    assert {name for (name, _), f in zip(cases, flags, strict=True) if not f} == PER_RECORD_CASES


def test_every_format_mixed_in_one_batch() -> None:
    """Dataset rows go to the per-record encoder; the Chat and Anthropic rows among them do not, nor
    the Responses rows (written back as they came, ``encode_same_responses``)."""
    tables = [decode_records([rec for _, rec in CASES[fmt]], fmt).table for fmt in sorted(CASES)]
    table = pa.concat_tables([cast_to_canonical(t) for t in tables])
    res = compare_encode(table, "responses")
    formats = table.column("source_format").to_pylist()
    flags = res.native.to_pylist()
    pairs = list(zip(flags, formats, strict=True))
    assert not any(f for f, fmt in pairs if fmt not in ("chat", "anthropic", "responses"))
    assert sum(f for f, fmt in pairs if fmt == "chat") == len(CASES["chat"]) - len(PER_RECORD_CASES)
    anthropic = len(ANTHROPIC) - len(PER_RECORD_ANTHROPIC_CASES)
    assert sum(f for f, fmt in pairs if fmt == "anthropic") == anthropic
    assert sum(f for f, fmt in pairs if fmt == "responses") == len(CASES["responses"])


@pytest.mark.parametrize("seed", [0, 1])
def test_synthetic_records(seed: int) -> None:
    table = _chat(list(synth.generate("chat", 600, seed=seed)))
    assert _share(table) >= MIN_SYNTH_SHARE


def _role_swap_turns(table: pa.Table) -> pa.Table:
    steps = [make_step("role_swap", on_unsupported="drop"), make_step("turns")]
    kept, _ = apply_steps(pl.from_arrow(table), steps)  # type: ignore[arg-type]
    return cast_to_canonical(kept.to_arrow())


def test_synthetic_records_after_role_swap() -> None:
    """Edited rows stay on the native path (Chat items hold no id or opaque state to drop, so no
    ``edited`` loss: the edit shows in the text only)."""
    source = _chat(list(synth.generate("chat", 300, seed=11)))
    table = _role_swap_turns(source)
    res = compare_encode(table, "responses")
    assert sum(res.native.to_pylist()) >= MIN_EDITED_SHARE * table.num_rows
    assert not pc.any(pc.equal(res.losses.column("kind"), "edited")).as_py()


def test_role_swap_of_the_cases() -> None:
    compare_encode(_role_swap_turns(_chat([rec for _, rec in CASES["chat"]])), "responses")


@pytest.mark.skipif(not corpus_available(), reason="../shared/corpus is not there")
def test_corpus_chat_records() -> None:
    table = _chat([c.record for c in corpus_records() if c.format == "chat"])
    res = compare_encode(table, "responses")
    requests = [k == "request" for k in table.column("record_kind").to_pylist()]
    assert sum(res.native.to_pylist()) >= MIN_CORPUS_SHARE * sum(requests)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(wire_record("chat", "request"), min_size=1, max_size=8))
def test_hypothesis_records(records: list[dict[str, Any]]) -> None:
    table = _chat(records)
    if table.num_rows:
        compare_encode(table, "responses")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(wire_record("chat", "request"), min_size=1, max_size=6), st.data())
def test_hypothesis_records_with_edits(records: list[dict[str, Any]], data: st.DataObject) -> None:
    table = _chat(records)
    if table.num_rows:
        compare_encode(draw_edits(table, data), "responses")


CALL = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
TRICKY: list[dict[str, Any]] = [
    # numbers orjson rewrites (handed back) and ones it keeps; both max-token keys
    {"messages": [{"role": "user", "content": "hi"}], "temperature": 1e-7, "seed": 18446744073709551615},
    {"messages": [{"role": "user", "content": "hi"}], "max_completion_tokens": 5, "max_tokens": 7},
    {
        "messages": [{"role": "user", "content": "hi"}],
        "max_tokens": 7,
        "top_p": 1.0,
        "user": "u\nx",
        "metadata": {"k": '\u2028\x00\x1f"\\/é😀'},
        "n": 2,
        "stream": None,
        "store": True,
    },
    # tools: every branch of to_responses._tools, tool_choice shapes
    {
        "messages": [{"role": "user", "content": "x"}],
        "tools": [
            {
                "type": "function",
                "function": {"name": "f", "strict": True, "parameters": {"b": 1}, "x/y~": 1},
            },
            {"type": "function", "function": {"name": "g", "description": "d"}, "extra": 1},
            {
                "type": "custom",
                "custom": {
                    "name": "c",
                    "format": {"type": "grammar", "grammar": {"syntax": "lark", "definition": "s"}},
                },
            },
            {
                "type": "custom",
                "custom": {
                    "name": "c2",
                    "format": {"type": "grammar", "x": 1, "grammar": {"type": "t", "definition": "s"}},
                },
            },
            {"type": "custom", "custom": {"name": "d", "format": {"type": "text"}, "more": None}},
            {"type": "custom", "custom": {"name": "e", "format": None}},
        ],
        "tool_choice": {"type": "function", "function": {"name": "f", "w": 1}, "weird": 1},
    },
    {"messages": [{"role": "user", "content": "x"}], "tools": [], "tool_choice": "required"},
    {
        "messages": [{"role": "user", "content": "x"}],
        "tool_choice": {"type": "custom", "custom": {"name": "c"}},
    },
    {"messages": [{"role": "user", "content": "x"}], "tool_choice": {"type": "allowed_tools", "x": {}}},
    {"messages": [{"role": "user", "content": "x"}], "tool_choice": "none"},
    # keys the choice's type does not carry: a flat name, another type's sub-object (issue 15)
    {
        "messages": [{"role": "user", "content": "x"}],
        "tool_choice": {"type": "function", "function": {"name": "f"}, "name": "x"},
    },
    {
        "messages": [{"role": "user", "content": "x"}],
        "tool_choice": {"type": "function", "function": {"name": "f"}, "custom": {"name": "g"}},
    },
    {
        "messages": [{"role": "user", "content": "x"}],
        "tool_choice": {"type": "auto", "name": "g", "function": {"name": "f"}},
    },
    # content parts: images and their details, refusals, unknown parts, stray block keys
    {
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "image_url", "image_url": {"url": "https://x/y.png", "detail": "low"}},
                    {"type": "image_url", "image_url": {"url": "https://x/y.png"}},
                    {"type": "image_url", "image_url": {"url": "https://x/y.png", "detail": None, "z": 1}},
                    {"type": "image_url", "image_url": {"url": "https://x/y.png", "detail": ""}},
                    {"type": "input_audio", "input_audio": {"data": "AA==", "format": "wav"}},
                    {"type": "file", "file": {"file_id": "f"}},
                    {"type": "text", "text": "t", "cache_control": {"type": "ephemeral"}},
                ],
            },
        ]
    },
    # turns: text after calls, absent / null / empty contents, names, roles, unknown keys
    {
        "messages": [
            {"role": "system", "content": "sys", "name": "n"},
            {"role": "developer", "content": "dev"},
            {"role": "assistant", "content": None, "tool_calls": [CALL], "x": 1},
            {"role": "tool", "tool_call_id": "c1", "content": "ok", "name": "f", "y": 2},
            {"role": "assistant", "content": "after"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{**CALL, "id": "c2", "extra": {"a": 1}, "function": {"name": None, "q": 1}}],
            },
            {"role": "tool", "tool_call_id": "c2", "content": None, "is_error": True},
            {
                "role": "assistant",
                "tool_calls": [{"id": "c3", "type": "custom", "custom": {"name": "k", "input": "i"}}],
            },
            {"role": "tool", "tool_call_id": "c3", "content": [{"type": "text", "text": "o"}]},
            {"role": "function", "name": "f", "content": "legacy", "tool_call_id": "c1"},
            {"role": "assistant", "content": "text then calls", "tool_calls": [{**CALL, "id": "c4"}]},
            {"role": "assistant", "content": "joins"},
            {"role": "user"},
            {"role": "user", "content": None},
            {"role": "assistant", "content": ""},
            {"role": "", "content": "empty role"},
            {"role": "user", "content": "", "tool_call_id": None},
        ],
    },
    {"messages": [{"role": "system", "content": ""}, {"role": "user", "content": "empty system stays"}]},
    {"messages": [{"role": "system", "content": [{"type": "text", "text": "parts stay"}]}]},
    {"messages": [{"role": "system", "content": "x", "extra": 1}], "instructions": "a Responses key"},
    {"messages": []},
]
# Every synthetic row and every corpus request body is native.
MIN_SYNTH_SHARE = 1.0
MIN_CORPUS_SHARE = 1.0
MIN_EDITED_SHARE = 1.0


def test_tricky_records() -> None:
    decoded = decode_records(TRICKY, "chat")
    res = compare_encode(decoded.table, "responses")
    lines = [r.line for r in decoded.rejected]
    kept = [k for k in range(len(TRICKY)) if k not in lines]
    handed_back = [kept[r] for r, f in enumerate(res.native.to_pylist()) if not f]
    assert handed_back == [0], (lines, handed_back)  # 1e-7 and a 20-digit integer


def test_sliced_table() -> None:
    """A table whose arrays start at an offset (a slice) reads the right rows."""
    compare_encode(_chat(list(synth.generate("chat", 50, seed=3))).slice(7, 30), "responses")


def test_rows_left_to_the_per_record_encoder() -> None:
    """Each documented per-record feature is handed back (and converted as the reference); the rows
    beside them stay native: numbers orjson would write differently from their stored text."""
    hi = b'{"messages":[{"role":"user","content":"hi"'
    lines = [
        hi + b'}],"temperature":18446744073709551615}',  # 20 digits
        hi + b',"x":5e-324}]}',  # a power of two (2**-1074): orjson_number.h does not guess
        hi + b'}],"tools":[{"type":"function","function":{"name":"f","parameters":{"n":%s}}}]}'
        % b"9.313225746154785e-10",
        hi + b"}]}",
    ]
    res = compare_encode(decode_lines(lines, "chat").table, "responses")
    assert res.native.to_pylist() == [False, False, False, True]


def test_calls_and_outputs_without_ids() -> None:
    """call_ids.py's scheme in C: id-less calls get generated ids, id-less outputs their call's (the
    oldest one no output answers by id), outputs with nothing to pair with are dropped; all stay native."""
    no_id = {k: v for k, v in CALL.items() if k != "id"}
    custom = {"type": "custom", "custom": {"name": "k", "input": "i"}}
    out = {"role": "tool", "content": "o"}
    records = [
        {"messages": [{"role": "assistant", "content": None, "tool_calls": [no_id, no_id]},
                      {"role": "tool", "content": "first"}, {"role": "tool", "content": "second"},
                      {"role": "tool", "content": "orphan"}]},
        {"messages": [{"role": "tool", "content": "orphan first"},
                      {"role": "assistant", "content": "x", "tool_calls": [CALL, no_id, custom]},
                      out, {"role": "tool", "tool_call_id": "c1", "content": "own"}, out, out]},
        {"messages": [{"role": "assistant", "content": None, "tool_calls": [CALL, CALL]},
                      {"role": "tool", "tool_call_id": "c1", "content": "a"}, out]},
        {"messages": [{"role": "assistant", "content": None, "function_call": {"name": "f"}},
                      {"role": "function", "name": "f", "content": "legacy"}]},
    ]  # fmt: skip
    res = compare_encode(_chat(records), "responses")
    assert all(res.native.to_pylist())
    kinds = res.losses.column("kind").to_pylist()
    # the second record: c1 is answered by its own id ("own"), so the id-less outputs take the
    # id-less call and the custom call, and the third is an orphan (issue 15's pairing rule)
    assert kinds.count("generated_id") == 9 and kinds.count("orphan_output") == 4
