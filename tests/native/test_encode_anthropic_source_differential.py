"""Anthropic request bodies through the compiled encoders of other targets: ``encode_responses``
(encode_responses.c) and ``encode_chat`` (encode.c), each with the compiled round-trip report
(anthropic_round_trip.c), against the per-record encoders they must equal byte for byte
(``to_responses.py`` / ``to_chat.py`` with ``anthropic_round_trip.py``): same JSON text, errors,
losses in order, refusals under each loss policy (:func:`tests.native.encode_diff.compare_encode`).

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
from tests.cases import ANTHROPIC, CASES
from tests.corpus import corpus_available, corpus_records
from tests.native.encode_diff import compare_encode
from tests.strategies import draw_edits, wire_record

TARGETS = ["responses", "chat"]

pytestmark = pytest.mark.skipif(
    not all(any("anthropic" in sources for _, sources in codec.native_encoder(t) or ()) for t in TARGETS),
    reason="pipeline._native is not built (no C compiler at install): "
    "run `python tests/native/build_native.py --out .` or `pip install -e .` to test it",
)

# The hand-written Anthropic cases the compiled encoders leave to the per-record ones, and why.
PER_RECORD_CASES = {
    "message_object",  # response objects are response_objects.py's
    "refusal_empty_content",  # (a response object)
    "tool_use_without_ids",  # ids generated and paired by position (call_ids.py)
}


def _anthropic(records: list[dict[str, Any]]) -> pa.Table:
    return decode_records(records, "anthropic").table


def _share(table: pa.Table, target: str) -> float:
    flags = compare_encode(table, target).native.to_pylist()
    return sum(flags) / len(flags)


def _role_swap_turns(table: pa.Table) -> pa.Table:
    steps = [make_step("role_swap", on_unsupported="drop"), make_step("turns")]
    kept, _ = apply_steps(pl.from_arrow(table), steps)  # type: ignore[arg-type]
    return cast_to_canonical(kept.to_arrow())


@pytest.mark.parametrize("target", TARGETS)
def test_hand_written_anthropic_cases(target: str) -> None:
    flags = compare_encode(_anthropic([rec for _, rec in ANTHROPIC]), target).native.to_pylist()
    assert {name for (name, _), f in zip(ANTHROPIC, flags, strict=True) if not f} == PER_RECORD_CASES


@pytest.mark.parametrize("target", TARGETS)
def test_every_format_mixed_in_one_batch(target: str) -> None:
    """The target's other compiled source and Anthropic rows stay native; the others do not."""
    tables = [decode_records([rec for _, rec in CASES[fmt]], fmt).table for fmt in sorted(CASES)]
    table = pa.concat_tables([cast_to_canonical(t) for t in tables])
    res = compare_encode(table, target)
    formats = table.column("source_format").to_pylist()
    flags = res.native.to_pylist()
    sources = {fmt for _, srcs in codec.native_encoder(target) or () for fmt in srcs}
    assert not any(f for f, fmt in zip(flags, formats, strict=True) if fmt not in sources)
    anthropic = sum(f for f, fmt in zip(flags, formats, strict=True) if fmt == "anthropic")
    assert anthropic == len(ANTHROPIC) - len(PER_RECORD_CASES)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_synthetic_records(target: str, seed: int) -> None:
    assert _share(_anthropic(list(synth.generate("anthropic", 600, seed=seed))), target) == 1.0


@pytest.mark.parametrize("target", TARGETS)
def test_synthetic_records_after_role_swap(target: str) -> None:
    """Rows with an edited item go per record (an Anthropic item has no pointer in encode_rows'
    edited-loss columns); the others stay native."""
    table = _role_swap_turns(_anthropic(list(synth.generate("anthropic", 300, seed=11))))
    res = compare_encode(table, target)
    assert sum(res.native.to_pylist()) > 0


@pytest.mark.parametrize("target", TARGETS)
def test_role_swap_of_the_cases(target: str) -> None:
    compare_encode(_role_swap_turns(_anthropic([rec for _, rec in ANTHROPIC])), target)


@pytest.mark.skipif(not corpus_available(), reason="../shared/corpus is not there")
@pytest.mark.parametrize("target", TARGETS)
def test_corpus_records(target: str) -> None:
    table = _anthropic([c.record for c in corpus_records() if c.format == "anthropic"])
    res = compare_encode(table, target)
    requests = [k == "request" for k in table.column("record_kind").to_pylist()]
    assert sum(requests) > 0
    # 20 of the 21 request bodies (the other has tool_use / tool_result blocks without ids)
    assert sum(res.native.to_pylist()) >= 0.9 * sum(requests)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(TARGETS), st.lists(wire_record("anthropic", "request"), min_size=1, max_size=8))
def test_hypothesis_records(target: str, records: list[dict[str, Any]]) -> None:
    table = _anthropic(records)
    if table.num_rows:
        compare_encode(table, target)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(TARGETS), st.lists(wire_record("anthropic", "request"), min_size=1, max_size=6), st.data()
)
def test_hypothesis_records_with_edits(
    target: str, records: list[dict[str, Any]], data: st.DataObject
) -> None:
    table = _anthropic(records)
    if table.num_rows:
        compare_encode(draw_edits(table, data), target)


A_TOOL = {"name": "f", "description": "d", "input_schema": {"type": "object"}}


@pytest.mark.parametrize("target", TARGETS)
def test_tricky_records(target: str) -> None:
    """The Anthropic branches one by one: system blocks, images of every source shape, tool
    references, thinking (redacted too), wrapper keys, tools and tool_choice shapes, metadata, nulls,
    empty and blank texts (the round-trip report)."""
    user = {"role": "user", "content": "hi"}
    use = {"type": "tool_use", "id": "t1", "name": "f", "input": {"a": 1}}
    result = {"type": "tool_result", "tool_use_id": "t1", "content": "r"}
    records = [
        {"system": [{"type": "text", "text": "a", "cache_control": {"type": "ephemeral"}},
                    {"type": "text", "text": "b", "citations": None, "x": 1}], "messages": [user]},
        {"system": [{"type": "text", "text": "only", "citations": []}], "messages": [user], "max_tokens": 0},
        {"system": "  ", "messages": [user], "max_tokens": 1.5},
        {"system": "", "messages": [user]},
        {"system": None, "messages": [user], "metadata": {"user_id": "u"}, "temperature": None},
        {"messages": [{"role": "user", "content": [
            {"type": "image", "source": {"type": "url", "url": "https://x/y.png"}},
            {"type": "image", "source": {"type": "url", "url": "data:image/png;base64,AA==", "z": 1}},
            {"type": "image", "source": {"type": "base64", "media_type": "image/bmp", "data": "AA=="}},
            {"type": "image", "source": {"type": "file", "file_id": "f"}},
            {"type": "image", "source": {"type": "url", "url": "https://x"}, "cache_control": {}},
            {"type": "image"},
            {"type": "document", "source": {"type": "text", "data": "d"}},
            {"type": "text", "text": " "}]}], "max_tokens": 5},
        {"messages": [user, {"role": "assistant", "content": [use]}, {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "is_error": True, "cache_control": {},
             "content": [{"type": "tool_reference", "tool_name": "g", "extra": 1},
                         {"type": "tool_reference"}, {"type": "text", "text": ""},
                         {"type": "image", "source": {"type": "url", "url": "https://x"}}]}]}]},
        {"messages": [user, {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "t", "signature": "s"},
            {"type": "redacted_thinking", "data": "d"}, {"type": "text", "text": "a  "}]}]},
        {"messages": [{"role": "user", "content": [result, {"type": "text", "text": "after"}]},
                      {"role": "assistant", "content": [use, {"type": "text", "text": "x"}]},
                      {"role": "assistant", "content": ""}, {"role": "system", "content": "s"}]},
        {"messages": [user,
                      {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": None}]},
                      {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1"}]}]},
        {"messages": [user], "tools": [A_TOOL, {**A_TOOL, "type": "custom", "cache_control": {}},
                                       {"input_schema": {}}, {"type": "web_search_20250305", "name": "w"}, 3],
         "tool_choice": {"type": "tool", "name": "f", "disable_parallel_tool_use": True}},
        {"messages": [user], "tools": [], "tool_choice": {"type": "any"}},
        {"messages": [user], "tools": [{"type": "bash_20250124", "name": "bash"}],
         "tool_choice": {"type": "none", "disable_parallel_tool_use": False}},
        {"messages": [user], "tool_choice": {"type": "auto", "x": 1}, "stop_sequences": ["a"], "top_k": 3},
        {"messages": [user], "tool_choice": "auto", "max_tokens": 9, "top_p": 0.5},
        {"messages": [{"role": "developer", "content": "d"}, {"role": "user", "content": []}]},
        {"messages": []},
    ]  # fmt: skip
    res = compare_encode(_anthropic(records), target)
    assert all(res.native.to_pylist())


@pytest.mark.parametrize("target", TARGETS)
def test_wrapper_keys(target: str) -> None:
    """A message opened from a recorded envelope (Claude Code's id, model, usage...): its keys."""
    line = (
        b'{"messages":[{"role":"user","content":"hi"},{"id":"msg_1","type":"message","role":"assistant",'
        b'"model":"m","content":[{"type":"text","text":"a"}],"usage":{"input_tokens":1}}],"max_tokens":3}'
    )
    res = compare_encode(decode_lines([line], "anthropic").table, target)
    assert all(res.native.to_pylist())


@pytest.mark.parametrize("target", TARGETS)
def test_rows_left_to_the_per_record_encoder(target: str) -> None:
    """Id-less tool_use / tool_result blocks (call_ids.py) and numbers outside the canonical subset
    are handed back; the rows beside them stay native."""
    hi = {"role": "user", "content": "hi"}
    records = [
        {"messages": [{"role": "assistant", "content": [{"type": "tool_use", "name": "f", "input": {}}]}]},
        {"messages": [hi], "temperature": 2**-30},  # a power of two: orjson_number.h does not guess
        {"messages": [hi]},
    ]
    res = compare_encode(_anthropic(records), target)
    assert res.native.to_pylist() == [False, False, True]


@pytest.mark.parametrize("target", TARGETS)
def test_same_tools_text_in_other_sources(target: str) -> None:
    """Rows of another source with the very same tools text (encode_chat reuses the previous row's
    tools when the text repeats) are encoded by their own source's rules."""
    # valid in every format; an Anthropic custom tool with input_schema, a Responses / Chat custom tool
    tool = {"type": "custom", "name": "f", "input_schema": {"type": "object"}, "custom": {"name": "f"}}
    other = "responses" if target == "chat" else "chat"
    key = "input" if other == "responses" else "messages"
    hi = [{"role": "user", "content": "hi"}]
    rows = [(other, {key: hi}), ("anthropic", {"messages": hi}), (other, {key: hi})]
    tables = [cast_to_canonical(decode_records([{**rec, "tools": [tool]}], fmt).table) for fmt, rec in rows]
    res = compare_encode(pa.concat_tables(tables), target)
    assert res.native.to_pylist() == [True, True, True]
