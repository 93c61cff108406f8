"""The compiled Responses / Chat -> Anthropic encoder (``pipeline._native.encode_anthropic``) against
the per-record encoder it must equal byte for byte: same JSON text, errors, losses in order, refusals
under each loss policy (:func:`tests.native.encode_diff.compare_encode`), on every source of records.

Each test also bounds how many rows went to the per-record encoder, so a native encoder that
quietly handed everything back would fail here rather than pass by comparing Python with itself.
"""

from __future__ import annotations

from typing import Any

import polars as pl
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline import codec, synth
from pipeline.formats import decode_lines, decode_records
from pipeline.schema import cast_to_canonical
from pipeline.transforms import apply_steps, make_step
from tests.cases import CASES, RESPONSES
from tests.corpus import corpus_available, corpus_records
from tests.native.encode_diff import compare_encode
from tests.strategies import draw_edits, wire_record

pytestmark = pytest.mark.skipif(
    codec.native_encoder("anthropic") is None,
    reason="pipeline._native is not built (no C compiler at install): "
    "run `python tests/native/build_native.py --out .` or `pip install -e .` to test it",
)

# The hand-written Responses cases the compiled encoder leaves to the per-record one, and why.
PER_RECORD_CASES = {
    "instructions_as_items",  # instructions given as items: the per-record encoder's
    "response_object",  # response objects are response_objects.py's
    "calls_and_outputs_without_call_ids",  # ids generated and paired by position (call_ids.py)
    "custom_tool_compaction_reference_hosted_unknown",  # an unknown item type goes back whole
}


# The hand-written Chat cases left to the per-record encoder, and why.
PER_RECORD_CHAT_CASES = {
    "completion_object",  # response objects are response_objects.py's
    "tool_calls_and_tool_messages_without_ids",  # ids generated and paired by position (call_ids.py)
}


def _share(table: pa.Table) -> float:
    flags = compare_encode(table, "anthropic").native.to_pylist()
    return sum(flags) / len(flags)


def test_hand_written_responses_cases() -> None:
    table = decode_records([rec for _, rec in RESPONSES], "responses").table
    flags = compare_encode(table, "anthropic").native.to_pylist()
    assert {name for (name, _), f in zip(RESPONSES, flags, strict=True) if not f} == PER_RECORD_CASES


def test_hand_written_chat_cases() -> None:
    table = decode_records([rec for _, rec in CASES["chat"]], "chat").table
    flags = compare_encode(table, "anthropic").native.to_pylist()
    assert {name for (name, _), f in zip(CASES["chat"], flags, strict=True) if not f} == PER_RECORD_CHAT_CASES


def test_every_format_mixed_in_one_batch() -> None:
    """The Responses and Chat rows go to the compiled encoder, but for the cases listed above; so do
    the Anthropic rows (written back as they came, ``encode_same_anthropic``)."""
    tables = [decode_records([rec for _, rec in CASES[fmt]], fmt).table for fmt in sorted(CASES)]
    table = pa.concat_tables([cast_to_canonical(t) for t in tables])
    res = compare_encode(table, "anthropic")
    formats = table.column("source_format").to_pylist()
    flags = res.native.to_pylist()
    native = len(RESPONSES) - len(PER_RECORD_CASES) + len(CASES["chat"]) - len(PER_RECORD_CHAT_CASES)
    native += len(CASES["anthropic"])
    assert all(f for f, fmt in zip(flags, formats, strict=True) if fmt == "anthropic")
    assert sum(flags) == native


@pytest.mark.parametrize(("fmt", "seed"), [("responses", 0), ("responses", 1), ("chat", 0), ("chat", 1)])
def test_synthetic_records(fmt: str, seed: int) -> None:
    table = decode_records(list(synth.generate(fmt, 600, seed=seed)), fmt).table
    assert _share(table) == 1.0


def _role_swap_turns(table: pa.Table) -> pa.Table:
    steps = [make_step("role_swap", on_unsupported="drop"), make_step("turns")]
    kept, _ = apply_steps(pl.from_arrow(table), steps)  # type: ignore[arg-type]
    return cast_to_canonical(kept.to_arrow())


@pytest.mark.parametrize("fmt", ["responses", "chat"])
def test_synthetic_records_after_role_swap(fmt: str) -> None:
    """role_swap edits items: their state is dropped and reported (``edited``) on the native path too."""
    table = _role_swap_turns(decode_records(list(synth.generate(fmt, 300, seed=11)), fmt).table)
    res = compare_encode(table, "anthropic")
    # a swapped conversation that opens with an assistant turn is refused (anthropic.first_message_user)
    assert any(e.startswith("anthropic.first_message_user: ") for e in res.errors.to_pylist() if e)
    if fmt == "responses":  # Chat items carry no item ids or opaque state to drop
        assert res.losses.filter(pa.compute.equal(res.losses.column("kind"), "edited")).num_rows > 50
    assert sum(res.native.to_pylist()) > 0.9 * table.num_rows


@pytest.mark.parametrize("fmt", ["responses", "chat"])
def test_role_swap_of_the_cases(fmt: str) -> None:
    compare_encode(_role_swap_turns(decode_records([rec for _, rec in CASES[fmt]], fmt).table), "anthropic")


@pytest.mark.skipif(not corpus_available(), reason="../shared/corpus is not there")
@pytest.mark.parametrize("fmt", ["responses", "chat"])
def test_corpus_records(fmt: str) -> None:
    records = [c.record for c in corpus_records() if c.format == fmt]
    table = decode_records(records, fmt).table
    res = compare_encode(table, "anthropic")
    requests = [k == "request" for k in table.column("record_kind").to_pylist()]
    assert sum(requests) > 0
    assert sum(res.native.to_pylist()) >= 0.9 * sum(requests)


def _records(fmt: str, most: int) -> st.SearchStrategy[tuple[str, list[dict[str, Any]]]]:
    return st.tuples(st.just(fmt), st.lists(wire_record(fmt, "request"), min_size=1, max_size=most))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(_records("responses", 8), _records("chat", 8)))
def test_hypothesis_records(fmt_records: tuple[str, list[dict[str, Any]]]) -> None:
    fmt, records = fmt_records
    table = decode_records(records, fmt).table
    if table.num_rows:
        compare_encode(table, "anthropic")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(_records("responses", 6), _records("chat", 6)), st.data())
def test_hypothesis_records_with_edits(
    fmt_records: tuple[str, list[dict[str, Any]]], data: st.DataObject
) -> None:
    fmt, records = fmt_records
    res = decode_records(records, fmt)
    if not res.table.num_rows:
        return
    compare_encode(draw_edits(res.table, data), "anthropic")


def _call(cid: str, name: str | None = "f", args: str | None = "{}") -> dict[str, Any]:
    return {"type": "function_call", "call_id": cid, "name": name, "arguments": args}


def _out(cid: str, output: Any = "ok") -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": cid, "output": output}


TRICKY: list[dict[str, Any]] = [
    # the turn rules: pairing, moved outputs, unanswered calls, orphans, merges, the prefill trim
    {"input": [{"role": "user", "content": "q"}, _call("a"), {"role": "user", "content": "x"}, _out("a")]},
    {"input": [_call("a"), _call("b"), _out("b"), {"role": "user", "content": "then"}, _out("a")]},
    {"input": [_out("z"), {"role": "user", "content": "q"}, _call("a"), _call("a"), _out("a"), _out("a")]},
    {"input": [{"role": "user", "content": "q"}, _call("a"), {"role": "assistant", "content": "tail \n "}]},
    {
        "input": [
            {"role": "user", "content": "a"},
            {"role": "user", "content": "b"},
            {"role": "assistant", "content": [{"type": "output_text", "text": "c\u3000\u2028"}]},
        ]
    },
    {
        "input": [
            {"role": "user", "content": "q"},
            {"role": "system", "content": "mid"},
            _call("a"),
            _out("a"),
            {"role": "developer", "content": [{"type": "input_text", "text": " "}]},
        ]
    },
    # leading system and instructions: strings, parts, blanks, developers
    {
        "instructions": "be brief",
        "input": [{"role": "developer", "content": "d"}, {"role": "user", "content": "u"}],
    },
    {
        "instructions": " ",
        "input": [
            {"role": "system", "content": [{"type": "input_text", "text": "s"}]},
            {"type": "reasoning", "summary": []},
            {"role": "system", "content": ""},
            {"role": "user", "content": "u"},
        ],
    },
    {"instructions": None, "input": [{"role": "system", "content": "only"}]},
    # arguments: compact, re-serialised, not an object, invalid, missing; custom calls; JSON outputs
    {
        "input": [
            {"role": "user", "content": "q"},
            _call("a", args='{"x": 1}'),
            _call("b", args="[1]"),
            _call("c", args="{"),
            _call("d", name=None, args=None),
            {"type": "custom_tool_call", "call_id": "e", "name": "g", "input": "raw"},
            _out(
                "a",
                [
                    {"type": "input_text", "text": "t"},
                    {"type": "input_image", "image_url": "https://x/i.png"},
                ],
            ),
            _out("b", ""),
            _out("c", " "),
            _out("d", [{"type": "input_text", "text": " "}]),
            {"type": "custom_tool_call_output", "call_id": "e", "output": None},
        ]
    },
    # images: data URLs Anthropic takes and does not, details, stray keys
    {
        "input": [
            {
                "role": "user",
                "content": [
                    {"type": "input_image", "image_url": "data:image/png;base64,AAAA", "detail": "auto"},
                    {"type": "input_image", "image_url": "data:image/bmp;base64,AAAA", "detail": "low"},
                    {"type": "input_image", "image_url": "https://x/y.png", "detail": "high"},
                    {"type": "input_image", "image_url": "ftp://x/y.png"},
                    {"type": "input_image", "file_id": "f1", "detail": "auto"},
                    {"type": "input_text", "text": "look", "annotations": [], "logprobs": None},
                ],
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "refusal", "refusal": "no"},
                    {"type": "output_text", "text": "x", "annotations": []},
                    {"type": "input_image", "image_url": "https://x/y.png"},
                ],
            },
        ]
    },
    # tools and tool_choice: every branch of to_anthropic._tools / _tool_choice
    {
        "input": "hi",
        "max_output_tokens": 77,
        "temperature": 0.5,
        "user": None,
        "tools": [
            {"type": "function", "name": "f", "parameters": {"type": "object"}, "strict": True, "x/y": 1},
            {"type": "function", "name": "g", "description": 3, "strict": None},
            {"type": "custom", "name": "c", "description": "d", "format": {"type": "text"}},
            {"type": "web_search"},
            {"type": "function", "name": ""},
        ],
        "tool_choice": {"type": "function", "name": "f"},
    },
    {"input": "hi", "max_output_tokens": 0, "tools": [], "tool_choice": "required"},
    {
        "input": "hi",
        "max_output_tokens": 1.5,
        "tools": [{"type": "mcp"}],
        "tool_choice": {"type": "allowed_tools"},
    },
    {"input": "hi", "tools": {"not": "a list"}, "tool_choice": {"type": "function", "name": "f", "x": 1}},
    # items Anthropic drops, item keys, roles
    {
        "input": [
            {
                "type": "message",
                "role": "user",
                "content": "typed",
                "id": "m1",
                "status": "s",
                "phase": "p",
                "weird": {"a": 1},
                "reasoning_content": "r",
            },
            {"type": "reasoning", "summary": [], "encrypted_content": "e"},
            {"type": "compaction", "encrypted_content": "z"},
            {"type": "item_reference", "id": "x"},
            {"type": "web_search_call", "id": "ws"},
            {"type": "something_new", "k": 1},
            {"role": "assistant"},
            {"role": "assistant", "content": []},
        ]
    },
]


def test_tricky_records() -> None:
    decoded = decode_records(TRICKY, "responses")
    assert not decoded.rejected
    res = compare_encode(decoded.table, "anthropic")
    # handed back: the record with an item type outside the ones encode_anthropic.c knows
    assert [r for r, f in enumerate(res.native.to_pylist()) if not f] == [len(TRICKY) - 1]


def test_unknown_item_types_go_back_whole() -> None:
    """to_anthropic is gaining rules for some Responses item types (additional_tools): the compiled
    encoder mirrors none of them, it hands any row with an item type it does not know back."""
    items: list[dict[str, Any]] = [
        {"type": "additional_tools", "role": "developer", "tools": [{"type": "function", "name": "f"}]},
        {"type": "configuration_update", "x": 1},
        {"type": "web_search_call", "id": "ws"},  # hosted: reported as to_anthropic does, natively
    ]
    records = [{"input": [{"role": "user", "content": "q"}, item]} for item in items]
    decoded = decode_records(records, "responses")
    assert not decoded.rejected
    res = compare_encode(decoded.table, "anthropic")
    assert res.native.to_pylist()[-1]
    assert not any(res.native.to_pylist()[:-1])


def test_empty_and_all_per_record_batches() -> None:
    empty = decode_records([], "responses").table
    assert compare_encode(empty, "anthropic").records.to_pylist() == []
    no_items = decode_records([{"input": []}, {"input": [], "model": "m"}], "responses").table
    assert all(compare_encode(no_items, "anthropic").native.to_pylist())
    same = decode_records([rec for _, rec in CASES["anthropic"]], "anthropic").table  # encode_same.c
    assert all(compare_encode(same, "anthropic").native.to_pylist())
    objects = decode_records([rec for name, rec in RESPONSES if name == "response_object"], "responses").table
    assert objects.num_rows and not any(compare_encode(objects, "anthropic").native.to_pylist())


def test_sliced_table() -> None:
    """A table whose arrays start at an offset (a slice) reads the right rows."""
    table = decode_records(list(synth.generate("responses", 50, seed=3)), "responses").table
    compare_encode(table.slice(7, 30), "anthropic")


def _tc(cid: str, name: str = "f", args: str = "{}", **extra: Any) -> dict[str, Any]:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": args}, **extra}


def _tool(cid: str, content: Any = "ok") -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": cid, "content": content}


CHAT_TRICKY: list[dict[str, Any]] = [
    # calls nested in messages: text + calls, call-only messages, calls joining, unanswered calls
    {"messages": [{"role": "user", "content": "q"},
                  {"role": "assistant", "content": "let me", "tool_calls": [_tc("a"), _tc("b")]},
                  _tool("a"), {"role": "assistant", "content": None, "tool_calls": [_tc("c")]}, _tool("c"),
                  {"role": "assistant", "content": [], "tool_calls": [_tc("d")]},
                  {"role": "assistant", "tool_calls": [_tc("e", args='{"x":1}')]},
                  {"role": "assistant", "content": "after "}]},
    {"messages": [{"role": "system", "content": "s1"}, {"role": "developer", "content": [{"type": "text",
                   "text": "s2"}]}, {"role": "user", "content": "q", "name": "alice"},
                  {"role": "assistant", "tool_calls": [_tc("a")]}, {"role": "user", "content": "interrupt"},
                  _tool("a", [{"type": "text", "text": "r"}]),
                  {"role": "function", "name": "f", "content": "x"},
                  _tool("zz"), {"role": "assistant", "content": "done", "refusal": None}]},
    # refusal fields, refusal parts, images, media in the wrong place, part types
    {"messages": [{"role": "user", "content": [{"type": "text", "text": "look"},
                  {"type": "image_url", "image_url": {"url": "https://x/y.png", "detail": "high"}},
                  {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,AA"}},
                  {"type": "image_url", "image_url": {"url": "nope"}},
                  {"type": "input_audio", "input_audio": {"data": "AA", "format": "wav"}}]},
                  {"role": "assistant", "content": None, "refusal": "I can't"},
                  {"role": "user", "content": "again"},
                  {"role": "assistant", "content": [{"type": "refusal", "refusal": "no"},
                                                    {"type": "text", "text": "but"}], "refusal": " "}]},
    # request fields: both token keys, stop forms, tools and tool_choice (Chat nesting)
    {"messages": [{"role": "user", "content": "q"}], "max_tokens": 9, "max_completion_tokens": 0,
     "stop": "END", "temperature": 0.2, "user": None,
     "tools": [{"type": "function", "x": 1,
                "function": {"name": "f", "parameters": {"type": "object"}, "strict": None}},
               {"type": "function", "function": {"name": "g", "description": 3, "strict": True, "k/~": 1}},
               {"type": "custom", "custom": {"name": "c", "description": "d", "format": {"type": "text"}}},
               {"type": "function", "function": {"name": "h"}}],
     "tool_choice": {"type": "function", "function": {"name": "f"}}},
    {"messages": [{"role": "user", "content": "q"}], "max_completion_tokens": 5, "max_tokens": 7,
     "stop": ["a", "b"], "tool_choice": {"type": "function", "function": {"name": "f", "x": 1}}, "tools": []},
    {"messages": [{"role": "user", "content": "q"}], "max_tokens": 7, "stop": [], "tool_choice": "auto"},
    {"messages": [{"role": "user", "content": "q"}], "stop": [1], "tool_choice": "none",
     "tools": [{"type": "web_search"}]},
    # custom calls, a call without type, unknown call keys
    {"messages": [{"role": "user", "content": "q"},
                  {"role": "assistant", "tool_calls": [
                      {"id": "a", "type": "custom", "custom": {"name": "c", "input": "raw"}},
                      {"id": "b", "type": "function", "function": {"name": "f", "arguments": "{} "}},
                      _tc("c", extra_content={"k": 1})]},
                  _tool("a"), _tool("b", ""), _tool("c", " ")]},
]  # fmt: skip


def test_chat_tricky_records() -> None:
    decoded = decode_records(CHAT_TRICKY, "chat")
    assert not decoded.rejected
    res = compare_encode(decoded.table, "anthropic")
    assert all(res.native.to_pylist())


def test_id_less_tool_messages() -> None:
    """A tool message without tool_call_id stays native when no call waits for an answer (it pairs
    with nothing and keeps no id); when one waits, call_ids.py pairs them by position and reports a
    generated id: that row goes per record."""
    call = {"role": "assistant", "tool_calls": [_tc("a")]}
    no_id = {"role": "tool", "content": "r"}
    legacy = {"role": "function", "name": "f", "content": "x"}  # a legacy result pairs the same way
    records = [
        {"messages": [{"role": "user", "content": "q"}, no_id]},
        {"messages": [{"role": "user", "content": "q"}, call, no_id]},
        {"messages": [{"role": "user", "content": "q"}, call, _tool("a"), no_id]},
        {"messages": [{"role": "user", "content": "q"}, call, legacy]},
    ]
    decoded = decode_records(records, "chat")
    assert not decoded.rejected
    res = compare_encode(decoded.table, "anthropic")
    assert res.native.to_pylist() == [True, False, True, False]


@pytest.mark.parametrize("limit", ["1e-7", "1e+16", "5.0", "7"])
@pytest.mark.parametrize("key", ["max_tokens", "max_completion_tokens"])
def test_token_limit_must_be_an_int(key: str, limit: str) -> None:
    """A float limit (``1e-7``: no "." or "-" in its text) is not used for Anthropic max_tokens."""
    line = b'{"messages":[{"role":"user","content":"q"}],"%s":%s}' % (key.encode(), limit.encode())
    res = compare_encode(decode_lines([line], "chat").table, "anthropic")
    assert all(res.native.to_pylist())
