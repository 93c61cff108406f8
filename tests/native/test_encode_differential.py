"""The compiled Responses -> Chat encoder (``pipeline._native.encode_chat``) against the per-record
encoder it must equal byte for byte: same JSON text, errors, losses in order, refusals under each
loss policy (:func:`tests.native.encode_diff.compare_encode`), on every source of records.

Each test also bounds how many rows went to the per-record encoder, so a native encoder that
quietly handed everything back would fail here rather than pass by comparing Python with itself.
"""

from __future__ import annotations

from typing import Any

import orjson
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline import codec, synth
from pipeline.formats import decode_records
from pipeline.schema import cast_to_canonical
from pipeline.transforms import apply_steps, make_step
from tests.cases import CASES, RESPONSES
from tests.corpus import corpus_available, corpus_records
from tests.native.encode_diff import compare_encode
from tests.strategies import draw_edits, wire_record

pytestmark = pytest.mark.skipif(
    codec.native_encoder("chat") is None,
    reason="pipeline._native is not built (no C compiler at install): "
    "run `python tests/native/build_native.py --out .` or `pip install -e .` to test it",
)

# The hand-written Responses cases the compiled encoder leaves to the per-record one, and why.
PER_RECORD_CASES = {
    "instructions_as_items",  # instructions given as items: the per-record encoder's
    "response_object",  # response objects are response_objects.py's
    "calls_and_outputs_without_call_ids",  # ids generated and paired by position (call_ids.py)
}


def _native_share(table: pa.Table) -> float:
    res = compare_encode(table)
    flags = res.native.to_pylist()
    return sum(flags) / len(flags)


def test_hand_written_responses_cases() -> None:
    table = decode_records([rec for _, rec in RESPONSES], "responses").table
    flags = compare_encode(table).native.to_pylist()
    assert {name for (name, _), f in zip(RESPONSES, flags, strict=True) if not f} == PER_RECORD_CASES


def test_every_format_mixed_in_one_batch() -> None:
    """Dataset rows go to the per-record encoder; the Responses rows among them do not, nor the Chat
    rows (written back as they came, ``encode_same_chat``) nor the Anthropic ones
    (test_encode_anthropic_source_differential.py)."""
    tables = [decode_records([rec for _, rec in CASES[fmt]], fmt).table for fmt in sorted(CASES)]
    table = pa.concat_tables([cast_to_canonical(t) for t in tables])
    res = compare_encode(table)
    formats = table.column("source_format").to_pylist()
    flags = res.native.to_pylist()
    pairs = list(zip(flags, formats, strict=True))
    assert not any(f for f, fmt in pairs if fmt not in ("responses", "anthropic", "chat"))
    assert sum(f for f, fmt in pairs if fmt == "responses") == len(RESPONSES) - len(PER_RECORD_CASES)
    assert sum(f for f, fmt in pairs if fmt == "chat") == len(CASES["chat"])


@pytest.mark.parametrize("seed", [0, 1])
def test_synthetic_records(seed: int) -> None:
    table = decode_records(list(synth.generate("responses", 600, seed=seed)), "responses").table
    assert _native_share(table) == 1.0


def _role_swap_turns(table: pa.Table) -> pa.Table:
    steps = [make_step("role_swap", on_unsupported="drop"), make_step("turns")]
    kept, _ = apply_steps(pl.from_arrow(table), steps)  # type: ignore[arg-type]
    return cast_to_canonical(kept.to_arrow())


def test_synthetic_records_after_role_swap() -> None:
    """role_swap edits items: their state is dropped and reported (``edited``) on the native path too."""
    table = _role_swap_turns(
        decode_records(list(synth.generate("responses", 300, seed=11)), "responses").table
    )
    res = compare_encode(table)
    assert res.losses.filter(pa.compute.equal(res.losses.column("kind"), "edited")).num_rows > 100
    assert sum(res.native.to_pylist()) > 0.9 * table.num_rows


def test_role_swap_of_the_cases() -> None:
    compare_encode(_role_swap_turns(decode_records([rec for _, rec in RESPONSES], "responses").table))


@pytest.mark.skipif(not corpus_available(), reason="../shared/corpus is not there")
def test_corpus_responses_records() -> None:
    records = [c.record for c in corpus_records() if c.format == "responses"]
    table = decode_records(records, "responses").table
    res = compare_encode(table)
    requests = [k == "request" for k in table.column("record_kind").to_pylist()]
    assert sum(res.native.to_pylist()) >= 0.9 * sum(requests)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(wire_record("responses", "request"), min_size=1, max_size=8))
def test_hypothesis_records(records: list[dict[str, Any]]) -> None:
    table = decode_records(records, "responses").table
    if table.num_rows:
        compare_encode(table)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(wire_record("responses", "request"), min_size=1, max_size=6), st.data())
def test_hypothesis_records_with_edits(records: list[dict[str, Any]], data: st.DataObject) -> None:
    res = decode_records(records, "responses")
    if not res.table.num_rows:
        return
    compare_encode(draw_edits(res.table, data))


TRICKY: list[dict[str, Any]] = [
    # numbers orjson rewrites (exponents, trailing zeros, big integers) and ones it keeps
    {"input": "hi", "temperature": 1e-7, "top_p": 0.00012, "seed": 18446744073709551615},
    {"input": "hi", "temperature": 0.7, "top_p": 1.0, "seed": 12345, "metadata": {"a": [1.5, -0.0, 1e300]}},
    {"input": "hi", "max_output_tokens": 5, "max_tokens": 7},
    {"input": "hi", "metadata": {"k": '\u2028\x00\x1f"\\/é😀'}, "user": "u\nx"},
    # tools: every branch of to_chat._tools, tool_choice shapes
    {
        "input": [{"role": "user", "content": "x"}],
        "tools": [
            {"type": "function", "name": "f", "strict": True, "parameters": {"b": 1, "a": 2}, "x/y~": 1},
            {
                "type": "custom",
                "name": "c",
                "format": {"type": "grammar", "syntax": "lark", "definition": "s"},
            },
            {"type": "custom", "name": "d", "format": {"type": "text"}, "extra": None},
            {"type": "custom", "name": "e", "format": None},
            {"type": "web_search"},
            {"name": "untyped"},
            3,
        ],
        "tool_choice": {"type": "function", "name": "f", "weird": 1},
    },
    {"input": "hi", "tools": [{"type": 5}]},
    {"input": "hi", "tools": [], "tool_choice": {"type": "custom"}},
    {"input": "hi", "tools": [{"type": "mcp"}], "tool_choice": {"type": "allowed_tools"}},
    {"input": "hi", "tools": {"not": "a list"}, "tool_choice": "required"},
    # content parts: images and their details, refusals, unknown parts, stray block keys
    {
        "input": [
            {
                "role": "user",
                "content": [
                    {"type": "input_image", "image_url": "https://x/y.png", "detail": "low"},
                    {"type": "input_image", "image_url": "https://x/y.png"},
                    {"type": "input_image", "image_url": "https://x/y.png", "detail": None},
                    {"type": "input_image", "image_url": "https://x/y.png", "detail": "hi'gh"},
                    {"type": "input_image", "image_url": "https://x/y.png", "detail": 3},
                    {"type": "input_image", "file_id": "f"},
                    {"type": "input_file", "file_id": "f"},
                    {"type": "refusal", "refusal": "no", "x": 1},
                    {"type": "input_text", "text": "t", "cache_control": {"type": "ephemeral"}},
                    {"text": "untyped"},
                ],
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "output_text", "text": "a"},
                    {"type": "output_text", "text": "b", "annotations": [], "logprobs": []},
                    {"type": "input_text", "text": "c", "annotations": [{"type": "url"}]},
                    {"type": "input_image", "image_url": "https://x/y.png"},
                ],
            },
        ]
    },
    # turns: text after calls, absent / null / empty contents, roles, unknown and hosted items
    {
        "instructions": "",
        "input": [
            {"role": "system", "content": "sys"},
            {
                "type": "function_call",
                "call_id": "a",
                "name": "f",
                "arguments": "{}",
                "id": "fc_1",
                "status": "done",
            },
            {"type": "reasoning", "summary": [], "encrypted_content": "e"},
            {"role": "assistant", "content": "after"},
            {
                "type": "custom_tool_call_output",
                "call_id": "a",
                "output": [{"type": "input_text", "text": "o"}],
            },
            {"type": "custom_tool_call", "call_id": "b", "input": None},
            {"type": "function_call_output", "call_id": "b", "output": None, "name": "n"},
            {"role": "assistant"},
            {"type": "function_call", "call_id": "c", "name": None, "arguments": "{}"},
            {"role": "assistant", "content": [{"type": "output_text", "text": "late"}]},
            {"role": "assistant", "content": None},
            {"role": "assistant", "content": "joins the null one"},
            {"role": "assistant", "content": ""},
            {"role": "", "content": "empty role"},
            {"role": "developer"},
            {"type": "item_reference", "id": "x"},
            {"type": "web_search_call", "id": "ws"},
            {"type": "compaction", "encrypted_content": "z"},
            {"type": "something_new", "k": 1},
            {"type": "message", "role": "user", "content": "typed", "phase": "p", "weird": {"a": 1}},
        ],
    },
    {"instructions": None, "input": [{"role": "system", "content": "first"}], "stream": None, "n": 2},
    {"instructions": "x", "input": [{"role": "system", "content": "not first"}]},
    # Anthropic's disable_parallel_tool_use is no key of a Responses choice: reported on its own
    {"input": "hi", "tool_choice": {"type": "function", "name": "f", "disable_parallel_tool_use": True}},
]


def test_tricky_records() -> None:
    decoded = decode_records(TRICKY, "responses")
    # five of them are now rejected at decode as the API would reject them (issue 15: a tool tag
    # that is not a string, a refusal part in a user message, ...): they never reach an encoder
    assert [r.line for r in decoded.rejected] == [5, 6, 7, 10, 11]
    res = compare_encode(decoded.table)
    # handed back: a 20-digit integer, two keys onto max_completion_tokens (1e-7 and 1e300 are
    # texts orjson writes back as they are: they stay native)
    assert [r for r, f in enumerate(res.native.to_pylist()) if not f] == [0, 2]


def test_strings_escaped_at_every_offset() -> None:
    """Message text, call arguments and names with an escaped character (quote, backslash, C0
    control) at every offset of the 8-byte words the JSON string writer tests at once."""
    specials = ['"', "\\", "\n", "\x00", "\x1f", "\x7f", "\u2028", "é", "😀"]
    texts = ["p" * at + ch + "q" * tail for ch in specials for at in range(17) for tail in (0, 1, 8, 9)]
    records = [
        {"input": [{"role": "user", "content": t},
                   {"type": "function_call", "call_id": "c" + t, "name": "f" + t, "arguments": t},
                   {"type": "function_call_output", "call_id": "c" + t, "output": t}]}
        for t in texts
    ]  # fmt: skip
    table = decode_records(records, "responses").table
    assert all(compare_encode(table).native.to_pylist())


def test_empty_and_all_per_record_batches() -> None:
    empty = decode_records([], "responses").table
    assert compare_encode(empty).records.to_pylist() == []
    no_items = decode_records([{"input": []}, {"input": [], "model": "m"}], "responses").table
    assert all(compare_encode(no_items).native.to_pylist())  # no item in the whole batch
    objects = decode_records([rec for name, rec in RESPONSES if name == "response_object"], "responses").table
    assert objects.num_rows and not any(compare_encode(objects).native.to_pylist())  # response_objects.py's


def test_sliced_table() -> None:
    """A table whose arrays start at an offset (a slice) reads the right rows."""
    table = decode_records(list(synth.generate("responses", 50, seed=3)), "responses").table
    compare_encode(table.slice(7, 30))


def test_json_text_is_the_orjson_text() -> None:
    table = decode_records(TRICKY[:4], "responses").table
    res = compare_encode(table)
    for text in res.records.to_pylist():
        if text is not None:
            assert orjson.dumps(orjson.loads(text)).decode() == text


def test_rows_left_to_the_per_record_encoder() -> None:
    """Each documented per-record feature is handed back (and converted as the reference); the
    rows beside them, and an assistant message with absent content after calls, stay native."""
    call = {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"}
    out = {"type": "function_call_output", "call_id": "c", "output": "ok"}
    no_id = {k: v for k, v in call.items() if k != "call_id"}
    image = {"type": "image", "source": {"type": "url", "url": "u"}}
    records = [
        {"input": [call, {"type": "message", "role": "assistant"}]},  # stays a message of its own
        {"input": [{"role": "user", "content": [image]}]},  # an Anthropic-style image part
        {"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "u", "detail": 3}]}]},
        {
            "input": [
                {"role": "user", "content": [{"type": "input_image", "image_url": 'u\n"', "detail": None}]}
            ]
        },
        {"input": [no_id, {k: v for k, v in out.items() if k != "call_id"}]},  # both id-less
        {"input": [call, {"type": "function_call_output", "output": "ok"}]},  # the output only
        {"input": [{**call, "call_id": None}, out]},  # an explicit null call id
        {"input": [{"role": "user", "content": "hi"}, {"type": "function_call_output", "output": "x"}]},
        {"input": [call, out]},
        {"instructions": [{"role": "developer", "content": "items"}], "input": "hi"},  # items: to_chat's
    ]
    table = decode_records(records, "responses").table
    res = compare_encode(table)
    assert res.native.to_pylist() == [True, False, False, True, False, False, False, False, True, False]
    assert res.errors.to_pylist()[-1] is None  # converted: the developer message comes first
    assert res.records.to_pylist()[-1].startswith('{"messages":[{"role":"developer","content":"items"}')
    # the first row's call has no result: encoded natively, then refused by Chat's rule
    assert res.errors.to_pylist()[0].startswith("chat.tool_calls_answered: ")
    assert b'"tool_call_id":"call_' in res.records.to_pylist()[4].encode()


def test_repeated_tool_sets() -> None:
    """Rows that repeat the previous row's tools reuse its conversion (encode.c caches it): the same
    losses for each row, and a cached set does not leak into the next different one."""
    lossy = [{"type": "function", "name": "f", "x": 1}, {"type": "web_search"}]
    other = [{"type": "mcp"}]
    sets = [lossy, lossy, lossy, other, other, lossy, [], [], None, lossy]
    records = [{"input": f"q{k}", **({"tools": t} if t is not None else {})} for k, t in enumerate(sets)]
    res = compare_encode(decode_records(records, "responses").table)
    assert all(res.native.to_pylist())
    per_row = [sum(1 for r in res.losses.column("row").to_pylist() if r == k) for k in range(len(sets))]
    assert per_row[0] == per_row[1] == per_row[2] == per_row[5] == per_row[9] == 5  # + filled_default x2


ARTICLE_WORDS = ["input_image", "text", "output_text", "user", "unsupported", "hf", "Hf-x", "hf1", "url",
                 "audio", "", "u", "un", "unit", "ut", "utility", "us", "Emb", "x"]  # fmt: skip


def test_the_article_before_a_type_is_the_per_record_one() -> None:
    """The compiled encoder writes "an 'input_image'" / "a 'text'" as pipeline.errors.a_or_an does."""
    records = [
        {"input": [{"role": "user", "content": [{"type": "text" if w == "" else "input_text", "text": "x"}]}],
         "tools": [{"type": w or None, "name": "t"}]}
        for w in ARTICLE_WORDS
    ]  # fmt: skip
    res = compare_encode(decode_records(records, "responses").table)
    assert all(res.native.to_pylist())
    details = [d for d in res.losses.column("detail").to_pylist() if "tool has no equivalent" in d]
    assert any(d.startswith("an 'unsupported'") for d in details), details


def test_a_responses_settings_object_with_nothing_chat_holds_is_reported_whole() -> None:
    """A ``reasoning`` / ``text`` object none of whose keys reaches Chat is reported at the object
    itself (the way back cannot rebuild it), in the compiled encoder as in the Python one; one
    with a carried key is not."""
    records = [
        {"input": "hi", "reasoning": {"summary": None}},
        {"input": "hi", "text": {"format": {"type": "bogus"}}},
        {"input": "hi", "reasoning": {"summary": "auto", "effort": "low"}, "text": {"verbosity": "low"}},
    ]
    res = compare_encode(decode_records(records, "responses").table, "chat")
    assert all(res.native.to_pylist())
    losses = res.losses.to_pylist()
    whole = {(x["row"], x["path"]) for x in losses if x["detail"].endswith("has nothing Chat can hold")}
    assert whole == {(0, "/reasoning"), (1, "/text")}
