"""Where Chat Completions values land in the canonical table."""

from __future__ import annotations

import orjson
import pytest

from pipeline.formats import decode_records
from tests.cases import CHAT


def test_assistant_with_tool_calls_is_one_group_of_items() -> None:
    table = decode_records([dict(CHAT)["assistant_content_four_states"]], "chat").table
    items = table.column("items").to_pylist()[0]
    view = [
        (i["group"], i["part"], i["type"], i["native_type"], i["call_id"], i["content_form"]) for i in items
    ]
    assert view[2:8] == [
        (2, None, "message", None, None, "absent"),
        (2, 0, "function_call", "function", "call_1", None),
        (3, None, "function_call_output", None, "call_1", "string"),
        (4, None, "message", None, None, "null"),
        (4, 0, "function_call", "function", "call_2", None),
        (4, 1, "custom_tool_call", "custom", "call_3", None),
    ]
    assert items[7]["input"] == "raw"
    empty = items[10]
    assert empty["content_form"] == "string" and empty["content"][0]["text"] == ""
    # Chat-only keys stay verbatim, explicit null and empty list included.
    assert orjson.loads(empty["extra_json"]) == {"refusal": None, "tool_calls": []}


def test_completion_choice_keys_ride_on_the_head_item() -> None:
    table = decode_records([dict(CHAT)["completion_object"]], "chat").table
    items = table.column("items").to_pylist()[0]
    heads = [i for i in items if i["type"] == "message"]
    assert [orjson.loads(h["wrapper_json"]) for h in heads] == [
        {"index": 0, "finish_reason": "tool_calls", "logprobs": None},
        {"index": 1, "finish_reason": "stop"},
    ]
    assert table.column("record_kind").to_pylist() == ["response"]


def test_tool_message_without_id_and_provider_extras_are_kept() -> None:
    table = decode_records([dict(CHAT)["provider_extras_and_legacy_function"]], "chat").table
    items = table.column("items").to_pylist()[0]
    assert orjson.loads(items[1]["extra_json"])["reasoning_content"] == "r"
    tool = items[3]
    assert tool["call_id"] is None and orjson.loads(tool["extra_json"]) == {"tool_call_ids": ["a", "b"]}
    call = items[5]
    assert call["call_id"] == "" and orjson.loads(call["extra_json"]) == {
        "function": {"thought_signature": "sig"},
        "extra_content": {"google": {}},
    }


# Malformed records the Chat API does not accept: rejected at decode, the reason naming the field
# (found by the A -> B -> A fuzzer, tests/encoders/test_fuzz_round_trip.py; issue 15 item 4).
_CALL = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
INVALID = [
    ({"messages": [{"role": "", "content": "x"}]}, "$.messages[0].role: expected one of"),
    ({"messages": [{"role": "Human", "content": "x"}]}, "$.messages[0].role: expected one of"),
    (
        {"choices": [{"index": 0, "message": {"role": "", "content": "x"}}]},
        "$.choices[0].message.role: expected one of",
    ),
    (
        {"messages": [{"role": "user", "content": "x", "tool_calls": [_CALL]}]},
        "$.messages[0].tool_calls: only an assistant message has tool calls, not 'user'",
    ),
    (
        {"messages": [{"role": "assistant", "tool_calls": [{**_CALL, "type": "integer"}]}]},
        "$.messages[0].tool_calls[0].type: expected 'function' or 'custom', got 'integer'",
    ),
    (
        {"messages": [{"role": "assistant", "tool_calls": [{**_CALL, "type": None}]}]},
        "$.messages[0].tool_calls[0].type: expected 'function' or 'custom', got null",
    ),
    (
        {"messages": [{"role": "assistant", "tool_calls": [{"id": "c", "function": _CALL["function"]}]}]},
        "$.messages[0].tool_calls[0].type: expected 'function' or 'custom', got nothing",
    ),
    ({"messages": [{"role": "user"}]}, "$.messages[0].content: expected string or array, got nothing"),
    ({"messages": [{"role": "tool", "tool_call_id": "c"}]}, "$.messages[0].content: expected string or"),
    ({"messages": [{"role": "function", "content": "x"}]}, "$.messages[0].name: expected string"),
    ({"messages": [{"role": "user", "content": [{"text": "x"}]}]}, "$.messages[0].content[0].type: expected"),
    ({"messages": [{"role": "user", "content": [{}]}]}, "$.messages[0].content[0].type: expected string"),
    (
        {"messages": [{"role": "assistant", "content": [{"type": "refusal", "text": "x"}]}]},
        "$.messages[0].content[0].refusal: expected string, got nothing",
    ),
    (
        {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": 2.5}}]}]},
        "$.messages[0].content[0].image_url.url: expected string, got number",
    ),
    (
        {"messages": [], "tools": [{"type": "function", "function": {"parameters": {}}}]},
        "$.tools[0].function.name: expected string, got nothing",
    ),
    ({"messages": [], "tools": [{"type": "function"}]}, "$.tools[0].function: expected object, got nothing"),
    (
        {"messages": [], "tools": [{"type": "custom", "custom": {"format": {"type": "grammar"}}}]},
        "$.tools[0].custom.format.grammar: expected object",
    ),
    (
        {"messages": [{"role": "user", "content": "x", "refusal": "no"}]},
        "$.messages[0].refusal: only an assistant message has a refusal, not 'user'",
    ),
    ({"messages": [{"role": "assistant", "refusal": {}}]}, "$.messages[0].refusal: expected string"),
    (
        {"messages": [{"role": "developer", "content": [{"type": "image_url", "image_url": {"url": "u"}}]}]},
        "$.messages[0].content[0].type: a 'developer' message does not take 'image_url' parts",
    ),
    (
        {"messages": [{"role": "user", "content": [{"type": "input_text", "text": "x"}]}]},
        "$.messages[0].content[0].type: 'input_text' is not a Chat part type",
    ),
    (
        {"messages": [{"role": "user", "content": [{"type": "refusal", "refusal": "no"}]}]},
        "$.messages[0].content[0].type: a 'user' message does not take 'refusal' parts",
    ),
    (
        {"messages": [{"role": "assistant", "tool_calls": [{**_CALL, "function": {"arguments": "{}"}}]}]},
        "$.messages[0].tool_calls[0].function.name: expected string, got nothing",
    ),
    (
        {"messages": [{"role": "assistant", "tool_calls": [{**_CALL, "function": {"name": "f"}}]}]},
        "$.messages[0].tool_calls[0].function.arguments: expected string, got nothing",
    ),
    (
        {"messages": [{"role": "assistant", "tool_calls": [{**_CALL, "function": {"name": None}}]}]},
        "$.messages[0].tool_calls[0].function.name: expected string, got null",
    ),
    (
        {"messages": [{"role": "assistant", "tool_calls": [{"type": "custom", "custom": {"name": "g"}}]}]},
        "$.messages[0].tool_calls[0].custom.input: expected string, got nothing",
    ),
    (
        {
            "messages": [
                {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "u", "detail": "x"}}]}
            ]
        },
        "$.messages[0].content[0].image_url.detail: expected one of ('auto', 'low', 'high', 'original'), "
        "got 'x'",
    ),
    (
        {
            "messages": [
                {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "u", "detail": ""}}]}
            ]
        },
        "$.messages[0].content[0].image_url.detail: expected one of",
    ),
    ({"messages": [], "tool_choice": {"type": [1]}}, "$.tool_choice.type: expected string, got array"),
]


@pytest.mark.parametrize(("record", "error"), INVALID)
def test_records_the_chat_api_rejects_are_rejected_at_decode(record: dict, error: str) -> None:
    res = decode_records([record], "chat")
    assert [r.error[: len(error)] for r in res.rejected] == [error]
    assert res.table.num_rows == 0


def test_a_null_image_detail_is_kept() -> None:
    """Logs hold ``detail: null``; the conversion to Responses reports the 'auto' it fills."""
    part = {"type": "image_url", "image_url": {"url": "u", "detail": None}}
    assert decode_records([{"messages": [{"role": "user", "content": [part]}]}], "chat").rejected == []


def test_tool_call_id_pairs_only_on_a_tool_message() -> None:
    """On another message it is an unknown key: kept verbatim, so conversions report it."""
    rec = {"messages": [{"role": "user", "content": "x", "tool_call_id": "c1"}]}
    [item] = decode_records([rec], "chat").table.column("items").to_pylist()[0]
    assert item["call_id"] is None
    assert orjson.loads(item["extra_json"]) == {"tool_call_id": "c1"}
