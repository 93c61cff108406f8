"""Response objects across formats (pipeline/encoders/response_objects.py).

* every response object of the cases and the shared corpus converts to the other two formats, and
  the result validates against the SDK's response *model* (``openai.types.responses.Response``,
  ``openai.types.chat.ChatCompletion``, ``anthropic.types.Message``) with no key the model lacks;
* every loss names a place in the source record, with a kind from the vocabulary;
* A -> B -> A differs from A only where A -> B reported a loss (as for requests);
* the stop reason and token usage map as documented, one small record each.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from pydantic import BaseModel

from pipeline.encoders import convert_table
from pipeline.formats import decode_records
from pipeline.losses import LOSS_KINDS
from tests.cases import CASES
from tests.encoders.coverage import diff_paths, uncovered
from tests.helpers import resolves

FORMATS = ("responses", "chat", "anthropic")
DIRECTIONS = [(a, b) for a in FORMATS for b in FORMATS if a != b]
CASE_NAMES = {"responses": "response_object", "chat": "completion_object", "anthropic": "message_object"}


def _model(fmt: str) -> type[BaseModel]:
    if fmt == "responses":
        from openai.types.responses import Response

        return Response
    if fmt == "chat":
        from openai.types.chat import ChatCompletion

        return ChatCompletion
    from anthropic.types import Message

    return Message


def _extras(m: Any, path: str = "") -> list[str]:
    """Keys the SDK models kept as extras (a key the type does not declare), anywhere inside."""
    out: list[str] = []
    if isinstance(m, BaseModel):
        out += [f"{path}/{k}" for k in (m.model_extra or {})]
        for name in type(m).model_fields:
            out += _extras(getattr(m, name), f"{path}/{name}")
    elif isinstance(m, list):
        for n, x in enumerate(m):
            out += _extras(x, f"{path}/{n}")
    return out


def validate_response(fmt: str, obj: dict[str, Any]) -> None:
    """The SDK response model accepts ``obj`` and declares every key in it."""
    model = _model(fmt).model_validate(obj)
    assert _extras(model) == [], _extras(model)


def _records(fmt: str) -> list[dict[str, Any]]:
    from tests.corpus import corpus_available, corpus_records

    records = [dict(CASES[fmt])[CASE_NAMES[fmt]]]
    if corpus_available():
        records += [r.record for r in corpus_records() if r.format == fmt and r.kind == "response"]
    # A Response that echoes an ``input`` key reads as a request body (one corpus fixture does).
    kinds = decode_records(records, fmt).table.column("record_kind").to_pylist()
    return [rec for rec, kind in zip(records, kinds, strict=True) if kind == "response"]


@pytest.mark.parametrize(("a", "b"), DIRECTIONS)
def test_response_objects_convert_and_validate(a: str, b: str) -> None:
    records = _records(a)
    out = convert_table(decode_records(records, a).table, b)
    assert [c.error for c in out] == [None] * len(records)
    bad_paths = []
    for rec, c in zip(records, out, strict=True):
        validate_response(b, c.record)
        assert all(loss.kind in LOSS_KINDS for loss in c.losses)
        bad_paths += [loss.path for loss in c.losses if not resolves(rec, loss.path.rsplit("/", 1)[0])]
    assert bad_paths[:5] == []
    kinds = Counter(loss.kind for c in out for loss in c.losses)
    print(f"\n{a} -> {b}: {len(records)} response objects; losses {dict(kinds)}")


@pytest.mark.parametrize(("a", "b"), DIRECTIONS)
def test_response_objects_no_silent_loss(a: str, b: str) -> None:
    records = _records(a)
    there = convert_table(decode_records(records, a).table, b)
    res = decode_records([c.record for c in there], b)
    assert res.rejected == [], res.rejected[0].error
    assert set(res.table.column("record_kind").to_pylist()) == {"response"}
    back = convert_table(res.table, a)
    assert [c.error for c in back] == [None] * len(records)
    problems, paths = [], 0
    for rec, t, k in zip(records, there, back, strict=True):
        paths += len(diff_paths(rec, k.record))
        if bad := uncovered(rec, k.record, t.losses):
            problems.append(bad)
    print(f"\n{a} -> {b} -> {a}: {len(records)} response objects, {paths} differing paths covered")
    assert problems[:3] == []


@pytest.mark.parametrize(("a", "b"), DIRECTIONS)
def test_property_response_objects(a: str, b: str) -> None:
    from hypothesis import HealthCheck, given, settings

    from tests.strategies import wire_record

    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(record=wire_record(a, "response"))
    def check(record: dict) -> None:
        table = decode_records([record], a).table
        if table.column("record_kind")[0].as_py() != "response":
            return  # the strategy can draw shapes that read as a request body
        [there] = convert_table(table, b)
        assert there.error is None, there.error
        validate_response(b, there.record)
        [back] = convert_table(decode_records([there.record], b).table, a)
        assert back.error is None, back.error
        assert uncovered(record, back.record, there.losses) == []

    check()


# -- the mapping, one small record each ----------------------------------------------------------


def _one(record: dict[str, Any], a: str, b: str) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    [c] = convert_table(decode_records([record], a).table, b)
    assert c.error is None, c.error
    validate_response(b, c.record)
    return c.record, [(loss.path, loss.kind) for loss in c.losses]


MESSAGE = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x",
           "content": [{"type": "text", "text": "Hel"}, {"type": "text", "text": "lo"}],
           "stop_reason": "end_turn", "stop_sequence": None,
           "usage": {"input_tokens": 10, "cache_read_input_tokens": 90, "output_tokens": 5}}  # fmt: skip


def test_anthropic_message_to_chat_completion() -> None:
    out, losses = _one(MESSAGE, "anthropic", "chat")
    assert out == {
        "id": "msg_1",
        "object": "chat.completion",
        "created": 0,
        "model": "claude-x",
        "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                     "message": {"role": "assistant", "content": "Hello"}}],
        # OpenAI counts cache reads as input: 10 + 90
        "usage": {"prompt_tokens": 100, "completion_tokens": 5, "total_tokens": 105,
                  "prompt_tokens_details": {"cached_tokens": 90}},
    }  # fmt: skip
    assert losses == [
        ("/created", "filled_default"),
        ("/content", "block_boundary"),
        ("/content", "content_form"),
    ]


def test_anthropic_message_to_response_and_back_counts_cache_reads_once() -> None:
    out, losses = _one(MESSAGE, "anthropic", "responses")
    assert out["usage"] == {
        "input_tokens": 100,
        "input_tokens_details": {"cached_tokens": 90, "cache_write_tokens": 0},
        "output_tokens": 5,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 105,
    }
    assert (out["status"], out["incomplete_details"]) == ("completed", None)
    assert [i["type"] for i in out["output"]] == ["message"]
    assert ("/usage/cache_creation_input_tokens", "filled_default") in losses
    [back] = convert_table(decode_records([out], "responses").table, "anthropic")
    assert back.record["usage"] == MESSAGE["usage"] | {"cache_creation_input_tokens": 0}


@pytest.mark.parametrize(
    ("stop_reason", "chat", "status", "lost"),
    [
        ("end_turn", "stop", ("completed", None), False),
        ("max_tokens", "length", ("incomplete", {"reason": "max_output_tokens"}), False),
        ("refusal", "content_filter", ("incomplete", {"reason": "content_filter"}), False),
        ("stop_sequence", "stop", ("completed", None), True),  # Chat and Responses cannot say which
        ("pause_turn", "stop", ("completed", None), True),
    ],
)
def test_stop_reasons(stop_reason: str, chat: str, status: tuple[str, Any], lost: bool) -> None:
    record = MESSAGE | {"stop_reason": stop_reason}
    out, losses = _one(record, "anthropic", "chat")
    assert out["choices"][0]["finish_reason"] == chat
    assert (("/stop_reason", "status") in losses) is lost
    out, losses = _one(record, "anthropic", "responses")
    assert (out["status"], out["incomplete_details"]) == status
    assert (("/stop_reason", "status") in losses) is lost


def test_response_to_message_reports_what_anthropic_cannot_hold() -> None:
    response = dict(CASES["responses"])["response_object"] | {
        "status": "incomplete",
        "incomplete_details": {"reason": "max_output_tokens"},
        "usage": {"input_tokens": 5, "input_tokens_details": {"cached_tokens": 2},
                  "output_tokens": 9, "output_tokens_details": {"reasoning_tokens": 7}, "total_tokens": 14},
    }  # fmt: skip
    out, losses = _one(response, "responses", "anthropic")
    assert out["stop_reason"] == "max_tokens"
    assert out["content"] == [{"type": "text", "text": "hi"}]
    assert out["usage"] == {"input_tokens": 3, "cache_read_input_tokens": 2, "output_tokens": 9}
    assert {
        ("/output/0", "reasoning"),
        ("/usage/output_tokens_details/reasoning_tokens", "usage"),
        ("/created_at", "response_field"),
        ("/tools", "tools"),
    } <= set(losses)
    assert not any(p == "/status" for p, _ in losses)


def test_chat_completion_keeps_the_first_choice() -> None:
    completion = dict(CASES["chat"])["completion_object"]
    out, losses = _one(completion, "chat", "responses")
    assert out["output"] == [{"type": "function_call", "call_id": "call_9", "name": "f", "arguments": "{}"}]
    assert (out["id"], out["created_at"], out["status"]) == ("chatcmpl-1", 1, "completed")
    assert ("/choices/1", "response_field") in losses


def test_envelope_losses_come_in_one_order_whatever_the_target() -> None:
    """The envelope (stop reason, usage, id, creation time, model) is read by one helper, so its
    losses are reported in that order for every target (Anthropic once reported model first)."""
    response = dict(CASES["responses"])["response_object"] | {"created_at": 1.5, "usage": "n/a"}
    response = {k: v for k, v in response.items() if k not in ("id", "model")}
    envelope = ("/usage", "/id", "/created_at", "/model")
    for target in ("chat", "anthropic"):
        _, losses = _one(response, "responses", target)
        first = dict.fromkeys(p for p, _ in losses if p in envelope)  # first report of each place
        assert list(first) == list(envelope), (target, losses)
