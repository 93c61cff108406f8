"""The compiled Responses / Chat -> Hugging Face encoder (``pipeline._native.encode_hf``,
encode_hf.c) against the per-record encoder it must equal byte for byte (``to_hf.py``): same JSON
text, errors, losses in order, refusals under each loss policy
(:func:`tests.native.encode_diff.compare_encode`), on every source of Responses and Chat records.

Each test also bounds how many rows went to the per-record encoder, so a native encoder that quietly
handed everything back would fail here rather than pass by comparing Python with itself.
"""

from __future__ import annotations

from typing import Any

import orjson
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline import codec, synth
from pipeline.formats import decode_records
from pipeline.schema import cast_to_canonical
from pipeline.transforms import apply_steps, make_step
from tests.cases import CASES
from tests.corpus import corpus_available, corpus_records
from tests.native.encode_diff import compare_encode
from tests.strategies import ARGUMENTS, draw_edits, wire_record

pytestmark = pytest.mark.skipif(
    codec.native_encoder("hf") is None,
    reason="pipeline._native is not built (no C compiler at install): "
    "run `python tests/native/build_native.py --out .` or `pip install -e .` to test it",
)

# The hand-written cases the compiled encoder leaves to the per-record one, and why.
PER_RECORD_CASES = {
    "responses": {
        "instructions_as_items",  # instructions given as items: the per-record encoder's
        "reasoning_parallel_calls_and_outputs",  # arguments "not json": yyjson's error is not orjson's
        "response_object",  # response objects are response_objects.py's
    },
    "chat": {
        "completion_object",  # a response object
    },
}


def _table(records: list[dict[str, Any]], fmt: str) -> pa.Table:
    return decode_records(records, fmt).table


def _share(table: pa.Table) -> float:
    flags = compare_encode(table, "hf").native.to_pylist()
    return sum(flags) / len(flags)


@pytest.mark.parametrize("fmt", ["responses", "chat"])
def test_hand_written_cases(fmt: str) -> None:
    cases = CASES[fmt]
    flags = compare_encode(_table([rec for _, rec in cases], fmt), "hf").native.to_pylist()
    assert {name for (name, _), f in zip(cases, flags, strict=True) if not f} == PER_RECORD_CASES[fmt]


def test_every_format_mixed_in_one_batch() -> None:
    """Dataset and Anthropic rows go to the per-record encoder; the Responses and Chat rows among
    them do not."""
    tables = [_table([rec for _, rec in CASES[fmt]], fmt) for fmt in sorted(CASES)]
    table = pa.concat_tables([cast_to_canonical(t) for t in tables])
    res = compare_encode(table, "hf")
    pairs = list(zip(res.native.to_pylist(), table.column("source_format").to_pylist(), strict=True))
    assert not any(f for f, fmt in pairs if fmt not in ("responses", "chat"))
    for fmt in ("responses", "chat"):
        assert sum(f for f, x in pairs if x == fmt) == len(CASES[fmt]) - len(PER_RECORD_CASES[fmt])


@pytest.mark.parametrize("fmt", ["responses", "chat"])
@pytest.mark.parametrize("seed", [0, 1])
def test_synthetic_records(fmt: str, seed: int) -> None:
    assert _share(_table(list(synth.generate(fmt, 400, seed=seed)), fmt)) == 1.0


def _role_swap_turns(table: pa.Table) -> pa.Table:
    steps = [make_step("role_swap", on_unsupported="drop"), make_step("turns")]
    kept, _ = apply_steps(pl.from_arrow(table), steps)  # type: ignore[arg-type]
    return cast_to_canonical(kept.to_arrow())


def test_synthetic_records_after_role_swap() -> None:
    """The export benchmark's rows (a job's role_swap + turns over Responses records): edited items'
    state is dropped and reported (``edited``) on the native path too, and it takes them all."""
    table = _role_swap_turns(_table(list(synth.generate("responses", 300, seed=11)), "responses"))
    res = compare_encode(table, "hf")
    assert pc.sum(pc.equal(res.losses.column("kind"), "edited")).as_py() > 100
    assert all(res.native.to_pylist())


@pytest.mark.parametrize("fmt", ["responses", "chat"])
def test_role_swap_of_the_cases(fmt: str) -> None:
    compare_encode(_role_swap_turns(_table([rec for _, rec in CASES[fmt]], fmt)), "hf")


@pytest.mark.skipif(not corpus_available(), reason="../shared/corpus is not there")
@pytest.mark.parametrize("fmt", ["responses", "chat"])
def test_corpus_records(fmt: str) -> None:
    table = _table([c.record for c in corpus_records() if c.format == fmt], fmt)
    if not table.num_rows:
        pytest.skip(f"the corpus holds no {fmt} records")
    res = compare_encode(table, "hf")
    requests = sum(k == "request" for k in table.column("record_kind").to_pylist())
    # measured: 35 of 36 Responses requests (one holds instructions as items), 236 of 236 Chat
    assert sum(res.native.to_pylist()) >= 0.95 * requests


@pytest.mark.parametrize("fmt", ["responses", "chat"])
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_hypothesis_records(fmt: str, data: st.DataObject) -> None:
    records = data.draw(st.lists(wire_record(fmt, "request"), min_size=1, max_size=8))
    table = _table(records, fmt)
    if table.num_rows:
        compare_encode(table, "hf")


@pytest.mark.parametrize("fmt", ["responses", "chat"])
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_hypothesis_records_with_edits(fmt: str, data: st.DataObject) -> None:
    records = data.draw(st.lists(wire_record(fmt, "request"), min_size=1, max_size=6))
    table = _table(records, fmt)
    if table.num_rows:
        compare_encode(draw_edits(table, data), "hf")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(ARGUMENTS, min_size=1, max_size=6))
def test_hypothesis_arguments(texts: list[str]) -> None:
    """Every shape of arguments text (exact, respaced, non-object, empty, invalid): written as the
    Python writes them, or the row handed back; an exact object stays on the native path."""
    records = [
        {"input": [{"type": "function_call", "call_id": f"c{k}", "name": "f", "arguments": t},
                   {"type": "function_call_output", "call_id": f"c{k}", "output": "ok"}]}
        for k, t in enumerate(texts)
    ]  # fmt: skip
    res = compare_encode(_table(records, "responses"), "hf")
    for t, native in zip(texts, res.native.to_pylist(), strict=True):
        if t in ("{}", '{"a":1}'):
            assert native


ARGS = [
    "{}",
    '{"a":1}',
    '{"b": [1, 2.5]}',
    "",
    "  ",
    "null",
    "[1]",
    '"s"',
    "{bad",
    '{"x":1e400}',
    '{"a":1,"a":2}',
]
TRICKY: list[tuple[str, dict[str, Any]]] = [
    (
        "arguments",
        {
            "input": [
                {"type": "function_call", "call_id": f"c{k}", "name": "f", "arguments": a}
                for k, a in enumerate(ARGS)
            ]
        },
    ),
    (
        "responses_tools",
        {
            "input": "hi",
            "tool_choice": "auto",
            "tools": [
                {
                    "type": "function",
                    "name": "f",
                    "parameters": {"b": 1},
                    "strict": True,
                    "x/y~": 1,
                    "description": "d",
                },
                {"type": "web_search"},
                {"type": "custom", "name": "c"},
            ],
        },
    ),
    ("responses_tools_not_a_list", {"input": "hi", "tools": {"a": 1}}),
    (
        "messages",
        {
            "instructions": "",
            "input": [
                {"role": "developer", "content": [{"type": "input_text", "text": "d"}]},
                {
                    "role": "assistant",
                    "content": [
                        {
                            "type": "output_text",
                            "text": "a",
                            "annotations": [{"type": "url"}],
                            "logprobs": [],
                        },
                        {"type": "refusal", "refusal": "no"},
                        {"type": "input_image", "image_url": "u"},
                        {
                            "type": "output_text",
                            "text": '\n"b\\',
                            "annotations": [],
                            "cache_control": {},
                            "x": 1,
                            "refusal": 2,
                        },
                    ],
                    "phase": "commentary",
                    "id": "m",
                    "status": None,
                },
                {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}", "namespace": "ns"},
                {"type": "reasoning", "summary": [], "encrypted_content": "e"},
                {"type": "function_call", "call_id": "c2", "name": "f", "arguments": "{}"},
                {"type": "custom_tool_call", "call_id": "c3", "name": "g", "input": "raw"},
                {
                    "type": "custom_tool_call_output",
                    "call_id": "c3",
                    "output": [{"type": "input_text", "text": "o"}],
                },
                {"type": "function_call_output", "call_id": "zz", "output": "orphan", "name": "own"},
                {"type": "function_call_output", "call_id": "c1", "output": None},
                {"type": "item_reference", "id": "r"},
                {"type": "web_search_call", "id": "w"},
                {"type": "compaction", "encrypted_content": "z"},
                {"type": "something_new"},
                {"type": "message", "role": "user", "content": "typed", "weird": {"a": 1}},
            ],
        },
    ),
    (
        "null_instructions_and_leading_system",
        {
            "instructions": None,
            "input": [{"type": "reasoning", "summary": []}, {"role": "system", "content": "s"}],
            "stream": None,
            "a/b": 1,
        },
    ),
    (
        "leading_system_after_instructions",
        {"instructions": "i", "input": [{"role": "system", "content": "s"}]},
    ),
    ("string_input", {"input": "hi", "model": "gpt-4o", "temperature": 0.5, "metadata": {"k": "v"}}),
]
CHAT_TRICKY: list[tuple[str, dict[str, Any]]] = [
    (
        "chat_tools",
        {
            "messages": [{"role": "user", "content": "x"}],
            "tool_choice": "auto",
            "tools": [
                {"type": "function", "function": {"name": "f", "parameters": {}}},
                {"type": "function", "function": {"name": "g"}, "extra": 1},
            ],
        },
    ),
    (
        "chat_tools_kept",
        {
            "messages": [{"role": "user", "content": "x"}],
            "tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}],
        },
    ),
    ("chat_tools_empty", {"messages": [{"role": "user", "content": "x"}], "tools": []}),
    (
        "chat_turns",
        {
            "messages": [
                {"role": "system", "content": "s"},
                {"role": "developer", "content": "d", "name": "dev"},
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "a"},
                        {"type": "image_url", "image_url": {"url": "u"}},
                        {"type": "text", "text": "b"},
                    ],
                },
                {
                    "role": "assistant",
                    "content": None,
                    "reasoning_content": "r",
                    "thinking": 3,
                    "refusal": None,
                    "tool_calls": [
                        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}},
                        {
                            "id": "c2",
                            "type": "function",
                            "function": {"name": "g", "arguments": "{}", "x": 1},
                            "y": 2,
                        },
                        {"id": "c3", "type": "custom", "custom": {"name": "h", "input": "i"}},
                    ],
                },
                {"role": "tool", "tool_call_id": "c1", "content": "r1"},
                {"role": "tool", "tool_call_id": "c3", "content": [{"type": "text", "text": "r3"}]},
                {"role": "tool", "tool_call_id": "c9", "content": "orphan"},
                {"role": "assistant", "content": "done", "thinking": "t", "audio": {"id": "a"}},
            ],
            "model": "gpt-4o",
            "n": 2,
            "stream": None,
        },
    ),
]


def test_tricky_records() -> None:
    """Every branch of to_hf for a Responses and a Chat source, written byte-identically; the rows
    the C hands back are the ones it must (an arguments text it does not parse as orjson does)."""
    responses = _table([rec for _, rec in TRICKY], "responses")
    assert responses.num_rows == len(TRICKY)
    flags = compare_encode(responses, "hf").native.to_pylist()
    assert [name for (name, _), f in zip(TRICKY, flags, strict=True) if not f] == ["arguments"]
    chat = _table([rec for _, rec in CHAT_TRICKY], "chat")
    assert chat.num_rows == len(CHAT_TRICKY)
    assert all(compare_encode(chat, "hf").native.to_pylist())


def test_arguments_each_alone() -> None:
    """One row per arguments text: all but the ones yyjson cannot read as orjson would ("{bad": a
    parse error; 1e400 and a repeated key: not provably orjson's text) stay native."""
    records = [
        {"input": [{"type": "function_call", "call_id": "c", "name": "f", "arguments": a}]} for a in ARGS
    ]
    flags = compare_encode(_table(records, "responses"), "hf").native.to_pylist()
    assert [a for a, f in zip(ARGS, flags, strict=True) if not f] == ["{bad", '{"x":1e400}', '{"a":1,"a":2}']


def test_strings_escaped_at_every_offset() -> None:
    """Message text, joined parts, call arguments and names with an escaped character at every
    offset of the 8-byte words the JSON string writer tests at once."""
    specials = ['"', "\\", "\n", "\x00", "\x1f", "\x7f", "\u2028", "é", "😀"]
    texts = ["p" * at + ch + "q" * tail for ch in specials for at in range(17) for tail in (0, 1, 9)]

    def record(t: str) -> dict[str, Any]:
        part = {"type": "input_text", "text": t}
        call = {
            "type": "function_call",
            "call_id": "c" + t,
            "name": "f" + t,
            "arguments": orjson.dumps({"k": t}).decode(),
        }
        output = {"type": "function_call_output", "call_id": "c" + t, "output": t}
        return {"input": [{"role": "user", "content": [part, part]}, call, output]}

    records = [record(t) for t in texts]
    assert all(compare_encode(_table(records, "responses"), "hf").native.to_pylist())
