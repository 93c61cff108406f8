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

import orjson
import pytest

from pipeline.encoders import convert_table, to_anthropic
from pipeline.formats import decode_records
from pipeline.losses import LOSS_KINDS
from tests.cases import CASES
from tests.encoders.coverage import diff_paths, uncovered
from tests.encoders.test_response_objects import validate_response
from tests.sdk_validate import SdkValidationError, check_api_rules, validate_request

SOURCES = ("responses", "chat")
REFUSED: set[str] = set()  # "not supported yet"
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
        if bad := uncovered(rec, k.record, t.losses, dataset=a in DATASETS):
            problems.append(bad)
        if "messages" not in t.record:  # a response object: the SDK response model, not a request
            validate_response("anthropic", t.record)
        elif rule := _valid(t.record):
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
    assert ("/stop", "request_field") in losses  # a string comes back from Anthropic as a list


@pytest.mark.parametrize("native", ["1", "0"])
def test_a_chat_stop_list_goes_to_anthropic_and_back_unreported(
    native: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Chat's ``stop`` as a list of 1 to 4 strings is Anthropic's ``stop_sequences`` and comes back
    as the same list (Anthropic -> Chat carries it), so it is not reported; both codecs."""
    from pipeline.encoders.encode_rows import encode_rows

    monkeypatch.setenv("CHATLAKE_NATIVE", native)
    record = {"model": "m", "messages": [{"role": "user", "content": "q"}], "stop": ["END", "STOP"]}
    there = encode_rows(decode_records([record], "chat").table, "anthropic")
    body = orjson.loads(there.records[0].as_py())
    assert body["stop_sequences"] == ["END", "STOP"]
    assert [x for x in there.losses.to_pylist() if x["path"] == "/stop"] == []
    back = encode_rows(decode_records([body], "anthropic").table, "chat")
    assert orjson.loads(back.records[0].as_py())["stop"] == ["END", "STOP"]


# ---------------------------------------------------------------------------------------------
# HF / ShareGPT rows -> Anthropic -> back: dataset rows have no call ids (ids are generated from
# the record) and HF arguments are objects; the round trip is checked like the API formats'.

DATASETS = ("hf", "sharegpt")


def _dataset_rows(fmt: str) -> list[dict[str, Any]]:
    """Hand-written rows of the format, plus rows converted from every API format's cases and
    synthetic records (their shapes vary most)."""
    from pipeline import synth
    from tests.formats.test_hf import HF_CASES
    from tests.formats.test_sharegpt import SHAREGPT_CASES

    rows = [rec for _, rec in (HF_CASES if fmt == "hf" else SHAREGPT_CASES)]
    for a in (*SOURCES, "anthropic"):
        records = [rec for _, rec in CASES[a]] + list(synth.generate(a, 150, seed=11))
        there = convert_table(decode_records(records, a).table, fmt)
        rows.extend(c.record for c in there if c.error is None)
    return rows


@pytest.mark.parametrize("a", DATASETS)
def test_dataset_rows_round_trip(a: str) -> None:
    n, _ = _round_trip(_dataset_rows(a), a, "hand + converted")
    assert n > 400


LLAMA_FACTORY = {
    "hf": ("llama-factory/mllm_demo.json", "llama-factory/reason_tool_use_demo_50.jsonl"),
    "sharegpt": ("llama-factory/glaive_toolcall_en_demo.json",),
}


@pytest.mark.parametrize("a", DATASETS)
def test_llama_factory_corpus_round_trip(a: str) -> None:
    from pipeline.formats import encode_table
    from pipeline.sources import detect_source, read_source
    from tests.corpus import CORPUS_DIR, corpus_available

    if not corpus_available():
        pytest.skip("../shared/corpus not found: corpus conversion tests need it (CI has it)")
    rows = []
    for rel in LLAMA_FACTORY[a]:
        for res in read_source(CORPUS_DIR / rel, detect_source(CORPUS_DIR / rel)):
            assert set(res.table.column("source_format").to_pylist()) == {a}
            rows.extend(encode_table(res.table, a))  # the rows exactly as the adapter reads them
    n, _ = _round_trip(rows, a, "llama-factory corpus")
    assert n == {"hf": 56, "sharegpt": 300}[a]


@pytest.mark.parametrize("a", DATASETS)
def test_dataset_property_round_trip(a: str) -> None:
    """Hypothesis Chat records, written as dataset rows first (there is no dataset-row strategy)."""
    from hypothesis import HealthCheck, given, settings

    from tests.strategies import wire_record

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(record=wire_record("chat", "request"))
    def check(record: dict) -> None:
        [row] = convert_table(decode_records([record], "chat").table, a)
        assert row.error is None, row.error
        [there] = convert_table(decode_records([row.record], a).table, "anthropic")
        assert there.error is None, there.error
        _valid(there.record)
        res = decode_records([there.record], "anthropic")
        assert res.rejected == [], res.rejected[0].error
        [back] = convert_table(res.table, a)
        assert back.error is None
        assert uncovered(row.record, back.record, there.losses, dataset=True) == []

    check()


def test_sharegpt_calls_get_generated_ids_and_results_pair_by_position() -> None:
    row = {
        "system": "S",
        "conversations": [
            {"from": "human", "value": "two cities"},
            {"from": "function_call", "value": '[{"name": "w", "arguments": {"city": "Paris"}}, '
                                               '{"name": "w", "arguments": {"city": "Rome"}}]'},
            {"from": "observation", "value": "18C"},
            {"from": "observation", "value": "21C"},
            {"from": "gpt", "value": "Both mild."},
        ],
        "tools": '[{"name": "w", "description": "weather", "parameters": {"type": "object"}}]',
    }  # fmt: skip
    body, losses = _to_anthropic(row, "sharegpt")
    calls = body["messages"][1]["content"]
    results = body["messages"][2]["content"]
    assert [c["input"] for c in calls] == [{"city": "Paris"}, {"city": "Rome"}]
    assert all(c["id"].startswith("call_") for c in calls)
    assert [r["tool_use_id"] for r in results] == [c["id"] for c in calls]
    assert [r["content"] for r in results] == ["18C", "21C"]
    assert body["system"] == "S"
    assert body["tools"] == [{"name": "w", "description": "weather", "input_schema": {"type": "object"}}]
    assert losses == [
        ("/conversations/1", "generated_id"),
        ("/conversations/1", "generated_id"),
        ("/max_tokens", "filled_default"),
    ]
    assert _to_anthropic(row, "sharegpt")[0] == body  # generated ids are deterministic
    assert _valid(body) is None


def test_hf_object_arguments_and_tool_names() -> None:
    row = {
        "messages": [
            {"role": "system", "content": "S"},
            {"role": "user", "content": "hi", "name": "ann"},
            {"role": "assistant", "tool_calls": [
                {"type": "function", "function": {"name": "f", "arguments": {"a": 1, "b": [1.0]}}}]},
            {"role": "tool", "name": "f", "content": "ok"},
        ],
        "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
    }  # fmt: skip
    body, losses = _to_anthropic(row, "hf")
    call = body["messages"][1]["content"][0]
    assert call["input"] == {"a": 1, "b": [1.0]} and call["name"] == "f"
    result = {"type": "tool_result", "tool_use_id": call["id"], "content": "ok"}
    assert body["messages"][2]["content"] == [result]
    assert body["system"] == "S"
    assert losses == [
        ("/messages/2/tool_calls/0", "generated_id"),
        ("/messages/3", "generated_id"),
        ("/messages/1/name", "name"),
        ("/max_tokens", "filled_default"),
    ]
    assert _valid(body) is None


# ---------------------------------------------------------------------------------------------
# Anthropic sources without call ids, and image details Chat rejects (the former KNOWN_GAPS)


def test_anthropic_calls_without_ids_get_generated_ids_in_chat_and_responses() -> None:
    from tests.sdk_validate import validate_request

    record = dict(CASES["anthropic"])["tool_use_without_ids"]
    [chat] = convert_table(decode_records([record], "anthropic").table, "chat")
    msgs = chat.record["messages"]
    call_id = msgs[1]["tool_calls"][0]["id"]
    assert call_id.startswith("call_") and msgs[2] == {
        "role": "tool",
        "tool_call_id": call_id,
        "content": "a.txt",
    }
    assert [m["role"] for m in msgs] == ["user", "assistant", "tool", "assistant"]  # the orphan is dropped
    losses = [(loss.path, loss.kind) for loss in chat.losses]
    assert losses[:2] == [
        ("/messages/1/content/1", "generated_id"),
        ("/messages/2/content/0", "generated_id"),
    ]
    assert ("/messages/3/content/0", "orphan_output") in losses
    validate_request("chat", {"model": "m", **chat.record})
    [resp] = convert_table(decode_records([record], "anthropic").table, "responses")
    items = resp.record["input"]
    assert [i.get("call_id") for i in items if i.get("type", "").startswith("function_call")][:2] == [
        call_id
    ] * 2
    validate_request("responses", {"model": "m", **resp.record})


@pytest.mark.parametrize(
    ("detail", "kept"), [("high", True), ("original", True), ("[trimmed]", False), (None, False)]
)
def test_chat_drops_an_image_detail_it_does_not_accept(detail: Any, kept: bool) -> None:
    from tests.sdk_validate import validate_request

    part = {"type": "input_image", "image_url": "https://x/y.png", "detail": detail}
    record = {"input": [{"role": "user", "content": [part]}]}
    [c] = convert_table(decode_records([record], "responses").table, "chat")
    image = c.record["messages"][0]["content"][0]["image_url"]
    assert image == ({"url": "https://x/y.png", "detail": detail} if kept else {"url": "https://x/y.png"})
    assert (("/input/0/content/0/detail", "image") in [(x.path, x.kind) for x in c.losses]) is not kept
    validate_request("chat", {"model": "m", **c.record})


# ---------------------------------------------------------------------------------------------
# Id-less calls of any source: the one id scheme of pipeline/encoders/call_ids.py


def _call_id(table: Any) -> str:
    """The id call_ids.py generates for the first call of a one-record table (as Ctx.generated_id:
    a hash of the conversation id and the call's index among the record's items)."""
    import hashlib

    [conv] = table.to_pylist()
    item = [it["type"] for it in conv["items"]].index("function_call")
    return "call_" + hashlib.blake2b(f"{conv['conversation_id']}/{item}".encode(), digest_size=12).hexdigest()


@pytest.mark.parametrize(
    ("fmt", "record", "call_path", "output_path"),
    [
        ("responses", {"model": "m", "input": [
            {"role": "user", "content": "ls"},
            {"type": "function_call", "name": "sh", "arguments": "{}"},
            {"type": "function_call_output", "output": "a.txt"},
        ]}, "/input/1", "/input/2"),
        ("chat", {"model": "m", "messages": [
            {"role": "user", "content": "ls"},
            {"role": "assistant", "content": None,
             "tool_calls": [{"type": "function", "function": {"name": "sh", "arguments": "{}"}}]},
            {"role": "tool", "content": "a.txt"},
        ]}, "/messages/1/tool_calls/0", "/messages/2"),
    ],
)  # fmt: skip
def test_id_less_calls_get_the_call_ids_scheme(
    fmt: str, record: dict[str, Any], call_path: str, output_path: str
) -> None:
    """A call without id gets call_ids.py's id (not a scheme of its own), and the output after it,
    without id too, is paired with it by position: both kept, both reported."""
    table = decode_records([record], fmt).table
    [out] = convert_table(table, "anthropic")
    assert out.error is None
    want = _call_id(table)
    call = {"type": "tool_use", "id": want, "name": "sh", "input": {}}
    result = {"type": "tool_result", "tool_use_id": want, "content": "a.txt"}
    assert (out.record["messages"][1]["content"], out.record["messages"][2]["content"]) == ([call], [result])
    losses = [(loss.path, loss.kind) for loss in out.losses]
    assert losses[:2] == [(call_path, "generated_id"), (output_path, "generated_id")]
    assert not {"unanswered_call", "orphan_output"} & {kind for _, kind in losses}
    assert _valid(out.record) is None


@pytest.mark.parametrize("fmt", ["hf", "sharegpt"])
def test_id_less_dataset_calls_get_the_same_ids_in_every_target(fmt: str) -> None:
    row = {
        "hf": {"messages": [
            {"role": "user", "content": "ls"},
            {"role": "assistant",
             "tool_calls": [{"type": "function", "function": {"name": "sh", "arguments": {}}}]},
            {"role": "tool", "name": "sh", "content": "a.txt"},
        ]},
        "sharegpt": {"conversations": [
            {"from": "human", "value": "ls"},
            {"from": "function_call", "value": '{"name": "sh", "arguments": {}}'},
            {"from": "observation", "value": "a.txt"},
        ]},
    }[fmt]  # fmt: skip
    table = decode_records([row], fmt).table
    want = _call_id(table)
    [anthropic] = convert_table(table, "anthropic")
    [chat] = convert_table(table, "chat")
    [responses] = convert_table(table, "responses")
    assert [b["id"] for b in anthropic.record["messages"][1]["content"]] == [want]
    assert [c["id"] for c in chat.record["messages"][1]["tool_calls"]] == [want]
    assert [i["call_id"] for i in responses.record["input"] if "call_id" in i] == [want, want]


def test_a_call_key_on_a_responses_output_is_reported() -> None:
    """A function_call_output carrying a call's key: a tool_result has no slot for it (found by
    tests/encoders/test_fuzz_round_trip.py as an unreported change). The key belongs to another
    item type, so it is kept like any unknown key (docs/decoding.md) and reported as one."""
    call = {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"}
    out = {"type": "function_call_output", "call_id": "c", "output": "x", "arguments": "{}"}
    [there] = convert_table(decode_records([{"input": [call, out]}], "responses").table, "anthropic")
    assert ("/input/1/arguments", "unknown_field") in [(x.path, x.kind) for x in there.losses]


def _tool(name: str) -> dict[str, Any]:
    return {"type": "function", "name": name, "description": f"{name} tool",
            "parameters": {"type": "object", "properties": {}}, "strict": False}  # fmt: skip


@pytest.mark.parametrize("own_tools", [None, [], [_tool("lookup")]])
def test_additional_tools_are_declared_in_the_request_tools(own_tools: list[dict[str, Any]] | None) -> None:
    """A tool search result (a Responses ``additional_tools`` item) declares tools partway through;
    Anthropic declares every tool up front, so they join the request's ``tools`` (the history's
    later call to one must call a declared tool), and the move is reported."""
    found = {"type": "additional_tools", "role": "developer",
             "tools": [_tool("get_weather"), {"type": "web_search"}, _tool("lookup")]}  # fmt: skip
    record: dict[str, Any] = {
        "model": "claude-sonnet-4-5",
        "max_output_tokens": 100,
        "input": [
            {"role": "user", "content": "weather?"},
            found,
            {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "sunny"},
        ],
    }
    if own_tools is not None:
        record["tools"] = own_tools
    [out] = convert_table(decode_records([record], "responses").table, "anthropic")
    assert out.error is None
    names = [t["name"] for t in out.record["tools"]]
    assert names == (["lookup", "get_weather"] if own_tools else ["get_weather", "lookup"])
    assert out.record["tools"][names.index("get_weather")] == {
        "name": "get_weather", "description": "get_weather tool",
        "input_schema": {"type": "object", "properties": {}}, "strict": False,
    }  # fmt: skip
    losses = {(x.path, x.kind, x.detail) for x in out.losses}
    assert ("/input/1", "tools", "its tools are declared in the request's tools, from the start") in losses
    assert ("/input/1/tools/1", "tools", "a 'web_search' tool has no equivalent in Anthropic") in losses
    assert ("/tools", "tools", "the tools of additional_tools items are declared here as well") in losses
    assert ("/input/1/tools/2", "tools", "tool 'lookup' is already declared") in losses or not own_tools
    assert all(x.kind != "unknown_item" for x in out.losses)
    validate_request("anthropic", out.record)
    check_api_rules("anthropic", out.record)
    [back] = convert_table(decode_records([out.record], "anthropic").table, "responses")
    assert uncovered(record, back.record, out.losses) == []


def test_pdf_file_parts_become_documents_that_come_back_whole() -> None:
    """A PDF file part (inline data or a URL) is a document whose title is the filename; the way back
    gives the same part, so only what the block has no slot for is reported: a missing filename
    (the way back fills one), a detail, a file the block cannot name (an OpenAI file id)."""
    pdf = "data:application/pdf;base64,JVBERi0="
    records = {
        "chat": {"model": "gpt-5", "messages": [{"role": "user", "content": [
            {"type": "file", "file": {"file_data": pdf, "filename": "a.pdf"}},
            {"type": "text", "text": "and"},
            {"type": "file", "file": {"file_data": pdf}},
            {"type": "text", "text": "and"},
            {"type": "file", "file": {"file_id": "file-1"}}]}]},
        "responses": {"model": "gpt-5", "input": [{"role": "user", "content": [
            {"type": "input_file", "file_data": pdf, "filename": "a.pdf", "detail": "low"},
            {"type": "input_file", "file_url": "https://x/b.pdf"}]}]},
    }  # fmt: skip
    expected = {
        "chat": [("/messages/0/content/2/file/filename", "file"), ("/messages/0/content/4", "file")],
        "responses": [("/input/0/content/0/detail", "file")],
    }
    for source, record in records.items():
        [there] = convert_table(decode_records([record], source).table, "anthropic")
        validate_request("anthropic", there.record)
        assert there.record["messages"][0]["content"][0] == {
            "type": "document",
            "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0="},
            "title": "a.pdf",
        }
        assert [(x.path, x.kind) for x in there.losses if x.kind == "file"] == expected[source]
        [back] = convert_table(decode_records([there.record], "anthropic").table, source)
        assert uncovered(record, back.record, there.losses) == []


def test_a_responses_tools_strict_and_defer_loading_are_carried() -> None:
    """A Responses function or custom tool's boolean ``defer_loading`` is Anthropic's (both
    codecs); a boolean ``strict`` comes back, so it is not reported; ``allowed_callers`` (another
    set of callers) is."""
    from pipeline import codec
    from tests.native.encode_diff import compare_encode

    tools = [
        {"type": "function", "name": "f", "parameters": {"type": "object"}, "strict": True,
         "defer_loading": False, "allowed_callers": ["direct"]},
        {"type": "custom", "name": "g", "defer_loading": True},
    ]  # fmt: skip
    rec = {"model": "m", "input": "hi", "max_output_tokens": 9, "tools": tools}
    body, losses = _to_anthropic(rec)
    assert body["tools"][0] == {"name": "f", "input_schema": {"type": "object"}, "strict": True,
                                "defer_loading": False}  # fmt: skip
    assert body["tools"][1]["defer_loading"] is True
    assert [x for x in losses if x[0].startswith("/tools")] == [
        ("/tools/0/allowed_callers", "tools"),
        ("/tools", "tools"),  # the custom tool changes kind
    ]
    if codec.native_encoder("anthropic") is not None:
        compare_encode(decode_records([rec], "responses").table, "anthropic")
