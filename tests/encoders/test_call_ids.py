"""One call-id rule for id-less calls and outputs in every encoder (pipeline/encoders/call_ids.py).

A Responses or Chat record whose calls and tool outputs have no call id, converted to chat, responses
and anthropic: each call gets the id generated from the record (the same id in every target), each
output the id of the oldest unanswered call before it, both reported as ``generated_id`` at the
item's source pointer; the bodies validate against the SDK request types and the API's pairing rules,
and A -> B -> A differs only where A -> B reported a loss. Records whose calls have ids keep them
untouched and report no new loss.
"""

from __future__ import annotations

import hashlib
from typing import Any

import pyarrow as pa
import pytest

from pipeline import synth
from pipeline.encoders import convert_table
from pipeline.formats import decode_records
from tests.cases import CASES
from tests.encoders.coverage import uncovered
from tests.sdk_validate import check_api_rules, validate_request

API = ("responses", "chat", "anthropic")
CALLS = ("function_call", "custom_tool_call")
OUTPUTS = ("function_call_output", "custom_tool_call_output")

# The appended cases of tests/cases.py: one call and its output, then two parallel calls and their
# two outputs; per source, the pointers of the calls and of the outputs, in source order.
SOURCES = {
    "responses": (
        "calls_and_outputs_without_call_ids",
        ["/input/1", "/input/3", "/input/4"],
        ["/input/2", "/input/5", "/input/6"],
    ),
    "chat": (
        "tool_calls_and_tool_messages_without_ids",
        ["/messages/1/tool_calls/0", "/messages/3/tool_calls/0", "/messages/3/tool_calls/1"],
        ["/messages/2", "/messages/4", "/messages/5"],
    ),
}
DIRECTIONS = [(a, b) for a in SOURCES for b in API if b != a]


def _expected_ids(table: pa.Table) -> list[str]:
    """The ids of the record's calls, computed here as Ctx.generated_id documents them (a hash of the
    conversation id and the call's index among the record's items), not by the code under test."""
    [conv] = table.to_pylist()
    return [
        "call_" + hashlib.blake2b(f"{conv['conversation_id']}/{k}".encode(), digest_size=12).hexdigest()
        for k, item in enumerate(conv["items"])
        if item["type"] in CALLS
    ]


def _ids(fmt: str, body: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(call ids in order, output ids in order) of a wire body; a missing key reads as None."""
    if fmt == "responses":
        items = body["input"]
        return (
            [i.get("call_id") for i in items if i.get("type") in CALLS],
            [i.get("call_id") for i in items if i.get("type") in OUTPUTS],
        )
    if fmt == "chat":
        msgs = body["messages"]
        return (
            [c.get("id") for m in msgs for c in m.get("tool_calls") or []],
            [m.get("tool_call_id") for m in msgs if m["role"] == "tool"],
        )
    blocks = [b for m in body["messages"] if isinstance(m["content"], list) for b in m["content"]]
    return (
        [b.get("id") for b in blocks if b["type"] == "tool_use"],
        [b.get("tool_use_id") for b in blocks if b["type"] == "tool_result"],
    )


def _convert(records: list[dict[str, Any]], a: str, b: str) -> list[Any]:
    converted = convert_table(decode_records(records, a).table, b)
    assert [c.error for c in converted] == [None] * len(records)
    return converted


@pytest.mark.parametrize(("a", "b"), DIRECTIONS)
def test_id_less_calls_get_one_id_in_every_target(a: str, b: str) -> None:
    name, call_paths, output_paths = SOURCES[a]
    record = dict(CASES[a])[name]
    want = _expected_ids(decode_records([record], a).table)
    assert len(set(want)) == 3
    [out] = _convert([record], a, b)
    calls, outputs = _ids(b, out.record)
    assert calls == want
    assert outputs == want  # output k answers call k: the single call, then the two parallel ones
    generated = [loss.path for loss in out.losses if loss.kind == "generated_id"]
    assert generated == call_paths + output_paths  # calls first (CallIds walks them), then outputs
    kinds = {loss.kind for loss in out.losses}
    assert not kinds & {"orphan_output", "unanswered_call", "content_form"}
    # the only others: Anthropic requires max_tokens, which these sources do not have, and their
    # model, where they have one, is an OpenAI model (the Anthropic API refuses it: model_provider)
    openai_model = str(record.get("model", "")).startswith("gpt-")
    expected = {"filled_default", *(["model_provider"] if openai_model else [])}
    expected = expected if b == "anthropic" else set()
    assert kinds - {"generated_id"} == expected
    validate_request(b, out.record)
    check_api_rules(b, out.record)


@pytest.mark.parametrize(("a", "b"), DIRECTIONS)
def test_round_trip_loses_nothing_unreported_and_keeps_the_ids(a: str, b: str) -> None:
    record = dict(CASES[a])[SOURCES[a][0]]
    want = _expected_ids(decode_records([record], a).table)
    [there] = _convert([record], a, b)
    [back] = _convert([there.record], b, a)
    assert _ids(a, back.record) == (want, want)  # the generated ids come back as the record's own
    assert uncovered(record, back.record, there.losses) == []


def test_the_same_record_gets_the_same_ids_in_any_batch() -> None:
    # A shard or chunk boundary moves a record within its batch (its conversation_id stays): its
    # generated ids must not move.
    record = dict(CASES["responses"])[SOURCES["responses"][0]]
    other = {"input": [{"type": "function_call", "name": "f", "arguments": "{}"}]}
    batch = decode_records([other, record], "responses").table
    for b in ("chat", "anthropic"):
        [in_batch] = convert_table(batch, b)[1:]
        [by_itself] = convert_table(batch.take([1]), b)
        assert _ids(b, in_batch.record) == _ids(b, by_itself.record) == (_expected_ids(batch.take([1])),) * 2
        assert in_batch.record == by_itself.record


@pytest.mark.parametrize("b", ["chat", "anthropic"])
def test_explicit_null_ids_are_generated_too(b: str) -> None:
    record = {
        "input": [
            {"role": "user", "content": "ls"},
            {"type": "function_call", "call_id": None, "name": "sh", "arguments": "{}"},
            {"type": "function_call_output", "call_id": None, "output": "a.txt"},
        ]
    }
    [out] = _convert([record], "responses", b)
    want = _expected_ids(decode_records([record], "responses").table)
    assert _ids(b, out.record) == (want, want)
    assert [(x.path, x.kind) for x in out.losses if x.kind != "filled_default"] == [
        ("/input/1", "generated_id"),
        ("/input/2", "generated_id"),
    ]
    [back] = _convert([out.record], b, "responses")
    assert uncovered(record, back.record, out.losses) == []


def test_an_id_less_output_answers_the_oldest_unanswered_call() -> None:
    """An id-less output pairs with the oldest call not yet answered, whether that call has an id of
    its own (kept as it is) or got a generated one."""
    record = {
        "input": [
            {"type": "function_call", "call_id": "own", "name": "a", "arguments": "{}"},
            {"type": "function_call", "name": "b", "arguments": "{}"},
            {"type": "function_call_output", "output": "for a"},
            {"type": "function_call_output", "output": "for b"},
        ]
    }
    [generated] = _expected_ids(decode_records([record], "responses").table)[1:]
    for b in ("chat", "anthropic"):
        [out] = _convert([record], "responses", b)
        assert _ids(b, out.record) == (["own", generated], ["own", generated])
        assert [x.path for x in out.losses if x.kind == "generated_id"] == [
            "/input/1",
            "/input/2",
            "/input/3",
        ]


@pytest.mark.parametrize("b", ["chat", "anthropic"])
def test_an_id_less_output_does_not_take_a_call_whose_own_output_follows(b: str) -> None:
    """Calls ``a`` and ``b`` both have their own output by id: an id-less output between them has no
    call left to answer (it once took ``a``, whose own output the way back then dropped) and is the
    orphan; after ``a``'s output, an id-less one answers ``b`` when ``b`` has none of its own."""
    calls = [{"type": "function_call", "call_id": c, "name": "f", "arguments": "{}"} for c in ("a", "b")]

    def out(cid: str | None, text: str) -> dict[str, Any]:
        return {"type": "function_call_output", **({"call_id": cid} if cid else {}), "output": text}

    record = {"input": [*calls, out("b", "rb"), out(None, "rn"), out("a", "ra")]}
    [res] = _convert([record], "responses", b)
    assert _ids(b, res.record) == (["a", "b"], ["b", "a"])  # each call keeps its own output
    assert [(x.path, x.kind) for x in res.losses if x.kind in ("orphan_output", "generated_id")] == [
        ("/input/3", "orphan_output")
    ]
    [back] = _convert([res.record], b, "responses")
    assert uncovered(record, back.record, res.losses) == []

    record = {"input": [*calls, out("a", "ra"), out(None, "rb")]}
    [res] = _convert([record], "responses", b)
    assert _ids(b, res.record) == (["a", "b"], ["a", "b"])
    assert [(x.path, x.kind) for x in res.losses if x.kind in ("orphan_output", "generated_id")] == [
        ("/input/3", "generated_id")
    ]


def test_an_id_less_output_with_no_call_to_answer_is_dropped_for_chat() -> None:
    record = {"input": [{"role": "user", "content": "hi"}, {"type": "function_call_output", "output": "x"}]}
    [out] = _convert([record], "responses", "chat")
    assert out.record["messages"] == [{"role": "user", "content": "hi"}]
    assert [(x.path, x.kind) for x in out.losses] == [("/input/1", "orphan_output")]
    validate_request("chat", {"model": "m", **out.record})


@pytest.mark.parametrize("a", ["responses", "chat"])
def test_calls_with_ids_keep_them_and_report_no_generated_id(a: str) -> None:
    """Every request case of the source whose calls and outputs all have ids: the target's ids are
    the source's, and nothing reports an id generated or paired for a call or output."""
    records, source_ids = [], []
    for rec in [rec for _, rec in CASES[a]] + list(synth.generate(a, 100, seed=7)):
        [conv] = decode_records([rec], a).table.to_pylist()
        ids = [it["call_id"] for it in conv["items"] if it["type"] in CALLS + OUTPUTS]
        if (
            conv["record_kind"] == "request"
            and conv["instructions"]["form"] != "items"
            and ids
            and None not in ids
        ):
            records.append(rec)
            source_ids.append(ids)
    assert len(records) >= 30
    call_id_details = {
        "a call without id got one",
        "an output without a call id got its call's id (paired by position)",
    }
    for b in API:
        if b == a:
            continue
        for ids, out in zip(source_ids, _convert(records, a, b), strict=True):
            calls, outputs = _ids(b, out.record)
            assert calls and set(calls) | set(outputs) <= set(ids)  # (Anthropic drops unanswered calls)
            assert not {loss.detail for loss in out.losses} & call_id_details


@pytest.mark.parametrize("a", list(SOURCES))
@pytest.mark.parametrize("b", ["hf", "sharegpt"])
def test_dataset_targets_report_the_ids_the_way_back_generates(a: str, b: str) -> None:
    """HF / ShareGPT rows hold no id for an id-less call, but the way back from them generates one
    (and pairs the outputs): reported on the way there, at the same pointers as a direct conversion."""
    name, call_paths, output_paths = SOURCES[a]
    record = dict(CASES[a])[name]
    [there] = _convert([record], a, b)
    calls, outputs = _ids("chat", there.record) if b == "hf" else ([], [])
    assert calls == outputs == ([None] * 3 if b == "hf" else [])  # no id is written to the row
    generated = [x for x in there.losses if x.kind == "generated_id"]
    assert [x.path for x in generated] == call_paths + output_paths
    assert all(x.detail.startswith("the way back from this target gives") for x in generated)
    [back] = _convert([there.record], b, a)
    assert uncovered(record, back.record, there.losses) == []
