"""Responses / Chat -> Anthropic: nothing is lost silently, and every body is a valid request.

The acceptance check is the one in ``test_no_silent_loss.py``: A -> Anthropic -> A (the way back
uses the existing Anthropic -> A encoders) may differ from A only where the A -> Anthropic leg
reported a loss, on the hand-written cases, 500 synthetic records, the shared corpus and
hypothesis records. Each produced body is also validated against the pinned ``anthropic`` SDK
request type and the documented server rules (:mod:`tests.sdk_validate`), with two documented
exceptions:

* **model**: the encoder carries ``model`` verbatim and never invents one, so for a source without
  a model the check adds a placeholder (``MessageCreateParams`` requires the key; which model to
  call is the caller's choice, unlike ``max_tokens``, which has a documented default).
* **"messages must start with a user turn"**: when the source conversation itself opens with an
  assistant turn (or has nothing Anthropic can hold), the encoder does not invent a user message.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from pipeline.encoders import convert_table, to_anthropic
from pipeline.formats import decode_records
from pipeline.losses import LOSS_KINDS
from tests.cases import CASES
from tests.encoders.coverage import diff_paths, uncovered
from tests.sdk_validate import SdkValidationError, check_api_rules, validate_request

SOURCES = ("responses", "chat")
REFUSED = {"instructions_as_items", "response_object", "completion_object"}  # "not supported yet"
START_RULE = "messages must start with a user turn"


def _valid(body: dict[str, Any]) -> str | None:
    """Validate one body; returns the tolerated rule failure (see the module docstring) or None."""
    validate_request("anthropic", {"model": "placeholder-model", **body})
    try:
        check_api_rules("anthropic", body)
    except SdkValidationError as e:
        assert str(e) == START_RULE, str(e)
        msgs = body["messages"]
        assert not msgs or msgs[0]["role"] != "user"
        return str(e)
    return None


def _round_trip(records: list[dict[str, Any]], a: str, label: str) -> tuple[int, int]:
    """A -> Anthropic -> A on ``records``: every differing path covered, every body valid."""
    there = convert_table(decode_records(records, a).table, "anthropic")
    errors = Counter(c.error for c in there if c.error is not None)
    assert all("not supported yet" in e for e in errors), errors
    kept = [(rec, c) for rec, c in zip(records, there, strict=True) if c.error is None]
    res = decode_records([c.record for _, c in kept], "anthropic")
    assert res.rejected == [], res.rejected[0].error
    back = convert_table(res.table, a)
    assert [c.error for c in back] == [None] * len(kept)
    problems, paths, tolerated = [], 0, Counter()
    for (rec, t), k in zip(kept, back, strict=True):
        paths += len(diff_paths(rec, k.record))
        if bad := uncovered(rec, k.record, t.losses):
            problems.append(bad)
        if rule := _valid(t.record):
            tolerated[rule] += 1
    kinds = Counter(loss.kind for _, t in kept for loss in t.losses)
    print(
        f"\n{label} {a} -> anthropic -> {a}: {len(kept)} records, {paths} differing paths covered, "
        f"{sum(errors.values())} refused; rule exceptions {dict(tolerated)}; losses {dict(kinds)}"
    )
    assert problems[:3] == []
    return len(kept), paths


@pytest.mark.parametrize("a", SOURCES)
def test_cases_round_trip(a: str) -> None:
    names = [name for name, _ in CASES[a]]
    there = convert_table(decode_records([rec for _, rec in CASES[a]], a).table, "anthropic")
    assert {n for n, c in zip(names, there, strict=True) if c.error} == REFUSED & set(names)
    _round_trip([rec for _, rec in CASES[a]], a, "cases")


@pytest.mark.parametrize("a", SOURCES)
def test_synthetic_round_trip(a: str) -> None:
    from pipeline import synth

    _round_trip(list(synth.generate(a, 500, seed=5)), a, "synthetic")


@pytest.mark.parametrize("a", SOURCES)
def test_corpus_round_trip(a: str) -> None:
    from tests.corpus import corpus_available, corpus_records

    if not corpus_available():
        pytest.skip("../shared/corpus not found: corpus conversion tests need it (CI has it)")
    _round_trip([r.record for r in corpus_records() if r.format == a and r.kind == "request"], a, "corpus")


@pytest.mark.parametrize("a", SOURCES)
def test_property_round_trip(a: str) -> None:
    from hypothesis import HealthCheck, given, settings

    from tests.strategies import wire_record

    @settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(record=wire_record(a, "request"))
    def check(record: dict) -> None:
        there = convert_table(decode_records([record], a).table, "anthropic")
        if there[0].error is not None:
            assert "not supported yet" in there[0].error
            return
        _valid(there[0].record)
        res = decode_records([there[0].record], "anthropic")
        assert res.rejected == [], res.rejected[0].error
        [back] = convert_table(res.table, a)
        assert back.error is None
        assert uncovered(record, back.record, there[0].losses) == []

    check()


# ---------------------------------------------------------------------------------------------
# The semantics, one small record each


def _to_anthropic(
    rec: dict[str, Any], fmt: str = "responses"
) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    [out] = convert_table(decode_records([rec], fmt).table, "anthropic")
    assert out.error is None, out.error
    assert all(loss.kind in LOSS_KINDS for loss in out.losses)
    return out.record, [(loss.path, loss.kind) for loss in out.losses]


def test_instructions_become_system_exactly() -> None:
    body, losses = _to_anthropic(
        {"model": "m", "instructions": "Be terse.", "input": "hi", "max_output_tokens": 9}
    )
    assert body == {
        "model": "m",
        "max_tokens": 9,
        "system": "Be terse.",
        "messages": [{"role": "user", "content": "hi"}],
    }
    assert losses == [("/input", "content_form")]  # the string shorthand comes back as a list


def test_leading_developer_goes_to_system_later_ones_stay_in_place() -> None:
    body, losses = _to_anthropic(
        {
            "input": [
                {"role": "developer", "content": "rules"},
                {"role": "user", "content": "q"},
                {"role": "developer", "content": [{"type": "input_text", "text": "mid"}]},
                {"role": "user", "content": "q2"},
            ]
        }
    )
    assert body["system"] == "rules"
    assert body["messages"] == [
        {"role": "user", "content": "q"},
        {"role": "system", "content": [{"type": "text", "text": "mid"}]},
        {"role": "user", "content": "q2"},
    ]
    assert {
        ("/input/0", "developer_role"),
        ("/input/0", "instruction_position"),
        ("/instructions", "instruction_position"),
        ("/input/2", "developer_role"),
    } <= set(losses)


def test_chat_leading_system_round_trips_without_loss() -> None:
    body, losses = _to_anthropic(
        {
            "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}],
            "max_completion_tokens": 5,
        },
        "chat",
    )
    assert body == {"max_tokens": 5, "system": "s", "messages": [{"role": "user", "content": "u"}]}
    assert losses == []


@pytest.mark.parametrize(
    ("arguments", "tool_input", "lost"),
    [
        ('{"a":1}', {"a": 1}, False),
        ('{"a": 1}', {"a": 1}, True),  # formatting is not kept
        ('{"a":1,"a":2}', {"a": 2}, True),  # duplicate keys
        ("not json", {"_raw": "not json"}, True),
        ("[1]", {"_raw": "[1]"}, True),  # JSON, but not an object
    ],
)
def test_arguments_become_an_object(arguments: str, tool_input: dict[str, Any], lost: bool) -> None:
    body, losses = _to_anthropic(
        {
            "input": [
                {"role": "user", "content": "go"},
                {"type": "function_call", "call_id": "c1", "name": "f", "arguments": arguments},
                {"type": "function_call_output", "call_id": "c1", "output": "ok"},
            ]
        }
    )
    assert body["messages"][1]["content"] == [
        {"type": "tool_use", "id": "c1", "name": "f", "input": tool_input}
    ]
    assert (("/input/1/arguments", "argument_string") in losses) is lost


def test_tool_results_lead_the_next_user_message_and_text_joins_it() -> None:
    body, losses = _to_anthropic(
        {
            "input": [
                {"role": "user", "content": "go"},
                {"type": "function_call", "call_id": "a", "name": "f", "arguments": "{}"},
                {"role": "user", "content": "meanwhile"},
                {"type": "function_call_output", "call_id": "a", "output": ""},
            ]
        }
    )
    assert body["messages"][2] == {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "a"}, {"type": "text", "text": "meanwhile"}],
    }
    assert ("/input/3", "tool_output_order") in losses


def test_adjacent_same_role_messages_merge() -> None:
    body, losses = _to_anthropic(
        {
            "messages": [
                {"role": "user", "content": "a"},
                {"role": "user", "content": [{"type": "text", "text": "b"}]},
            ]
        },
        "chat",
    )
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}
    ]
    assert ("/messages/1", "message_merge") in losses
    assert ("/messages/0/content", "content_form") in losses  # "a" became a block


def test_empty_text_and_final_whitespace() -> None:
    body, losses = _to_anthropic(
        {
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": " "}, {"type": "text", "text": "q"}]},
                {"role": "assistant", "content": "prefill \n"},
            ]
        },
        "chat",
    )
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "q"}]},
        {"role": "assistant", "content": "prefill"},
    ]
    assert ("/messages/0/content/0", "empty_text") in losses
    assert ("/messages/1/content", "whitespace") in losses


def test_reasoning_refusal_and_unanswered_calls() -> None:
    body, losses = _to_anthropic(
        {
            "input": [
                {"role": "user", "content": "q"},
                {"type": "reasoning", "id": "rs", "summary": [], "encrypted_content": "gAAA"},
                {
                    "type": "message",
                    "id": "m",
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "refusal", "refusal": "no"}],
                },
                {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"},
            ]
        }
    )
    assert body["messages"] == [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": [{"type": "text", "text": "no"}]},
    ]
    for expected in [
        ("/input/1", "reasoning"),
        ("/input/1/encrypted_content", "encrypted_reasoning"),
        ("/input/2/content/0", "refusal"),
        ("/input/3", "unanswered_call"),
    ]:
        assert expected in losses


def test_images() -> None:
    body, losses = _to_anthropic(
        {
            "input": [
                {
                    "role": "user",
                    "content": [
                        {"type": "input_image", "detail": "auto", "image_url": "data:image/png;base64,AAAA"},
                        {"type": "input_image", "detail": "high", "image_url": "https://x/y.jpg"},
                        {"type": "input_image", "detail": "auto", "file_id": "file-1"},
                    ],
                }
            ]
        }
    )
    assert body["messages"][0]["content"] == [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}},
        {"type": "image", "source": {"type": "url", "url": "https://x/y.jpg"}},
    ]
    assert ("/input/0/content/1/detail", "image") in losses
    assert ("/input/0/content/2", "image") in losses
    assert not any(p.startswith("/input/0/content/0") for p, _ in losses)


def test_request_fields() -> None:
    body, losses = _to_anthropic(
        {
            "model": "gpt-4o",
            "messages": [{"role": "user", "content": "q"}],
            "tools": [
                {
                    "type": "function",
                    "function": {"name": "f", "description": "d", "parameters": {"type": "object"}},
                }
            ],
            "tool_choice": "required",
            "stop": "END",
            "temperature": 0.2,
        },
        "chat",
    )
    assert body["max_tokens"] == to_anthropic.DEFAULT_MAX_TOKENS
    assert body["tools"] == [{"name": "f", "description": "d", "input_schema": {"type": "object"}}]
    assert body["tool_choice"] == {"type": "any"}
    assert body["stop_sequences"] == ["END"]
    assert "temperature" not in body  # not in the pinned SDK's MessageCreateParams
    assert {("/max_completion_tokens", "filled_default"), ("/temperature", "request_field")} <= set(losses)
