"""Where Anthropic Messages values land in the canonical table."""

from __future__ import annotations

import orjson
import pytest

from pipeline.formats import decode_records
from tests.cases import ANTHROPIC


def _table(name: str):
    return decode_records([dict(ANTHROPIC)[name]], "anthropic").table


def test_blocks_split_into_items_that_remember_their_message() -> None:
    items = _table("system_blocks_and_thinking_tools").column("items").to_pylist()[0]
    assistant = [(i["group"], i["part"], i["type"], i["native_type"]) for i in items if i["group"] == 1]
    assert assistant == [
        (1, 0, "reasoning", "thinking"),
        (1, 1, "reasoning", "redacted_thinking"),
        (1, 2, "message", None),
        (1, 4, "function_call", "tool_use"),
        (1, 5, "function_call", "tool_use"),
    ]
    text_item = items[3]
    assert [b["text"] for b in text_item["content"]] == ["calling", "two"]  # block boundary kept
    thinking, redacted = items[1], items[2]
    assert thinking["signature"] == "sig==" and thinking["content"][0]["text"] == "plan"
    assert redacted["encrypted_content"] == "opaque"
    call = items[4]
    assert call["call_id"] == "toolu_1" and orjson.loads(call["arguments"]) == {
        "a": 1,
        "b": 1.0,
        "c": [True, None],
        "é": {},
    }


def test_system_blocks_keep_cache_control() -> None:
    row = _table("system_blocks_and_thinking_tools").to_pylist()[0]
    assert row["instructions"]["form"] == "parts"
    assert [b["text"] for b in row["instructions"]["content"]] == ["Policy A", " B "]
    assert orjson.loads(row["instructions"]["content"][0]["cache_control"]) == {"type": "ephemeral"}


def test_tool_results_content_absent_string_parts() -> None:
    items = _table("system_blocks_and_thinking_tools").column("items").to_pylist()[0]
    results = [i for i in items if i["type"] == "function_call_output"]
    assert [(r["call_id"], r["content_form"]) for r in results] == [
        ("toolu_1", "string"),
        ("toolu_2", "absent"),
        ("toolu_3", "parts"),
    ]
    assert orjson.loads(results[2]["extra_json"]) == {"is_error": True}


def test_message_keys_beyond_role_and_content_ride_on_the_first_item() -> None:
    items = _table("claude_code_extra_message_keys").column("items").to_pylist()[0]
    assert orjson.loads(items[0]["wrapper_json"]) == {
        "id": "msg_x",
        "type": "message",
        "model": "claude",
        "usage": {"output_tokens": 1},
    }


# Malformed records the Messages API does not accept: rejected at decode, the reason naming the
# field (found by the A -> B -> A fuzzer, tests/encoders/test_fuzz_round_trip.py). A "system"
# message is kept: it joins the top-level system on the way back (system_position).
INVALID = [
    ({"messages": [{"role": "", "content": "x"}]}, "$.messages[0].role: expected one of"),
    ({"messages": [{"role": "developer", "content": "x"}]}, "$.messages[0].role: expected one of"),
    ({"messages": [{"role": "tool", "content": "x"}]}, "$.messages[0].role: expected one of"),
    (
        {"messages": [{"role": "user", "content": [{"text": "x"}]}]},
        "$.messages[0].content[0].type: expected string, got nothing",
    ),
    (
        {"messages": [{"role": "user", "content": [{"type": None, "text": "x"}]}]},
        "$.messages[0].content[0].type: expected string, got null",
    ),
    (
        {"messages": [{"role": "assistant", "content": [{"type": "tool_use", "id": "t", "input": {}}]}]},
        "$.messages[0].content[0].name: expected string, got nothing",
    ),
    (
        {"messages": [{"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f"}]}]},
        "$.messages[0].content[0].input: expected object, got nothing",
    ),
    (
        {"messages": [{"role": "assistant", "content": [{"type": "tool_use", "name": "f", "input": "x"}]}]},
        "$.messages[0].content[0].input: expected object, got string",
    ),
    (
        {"messages": [{"role": "assistant", "content": [{"type": "tool_use", "name": "f", "input": None}]}]},
        "$.messages[0].content[0].input: expected object, got null",
    ),
    (
        {"messages": [{"role": "user", "content": [{"type": "output_text", "text": "x"}]}]},
        "$.messages[0].content[0].type: 'output_text' is not an Anthropic block type",
    ),
    ({"content": [{"text": "x"}], "role": "assistant"}, "$.content[0].type: expected string, got nothing"),
    ({"messages": [{"role": "user"}]}, "$.messages[0].content: expected string or array, got nothing"),
    ({"messages": [], "tools": [{"input_schema": {}}]}, "$.tools[0].name: expected string, got nothing"),
    ({"messages": [], "tools": [{"name": "f"}]}, "$.tools[0].input_schema: expected object, got nothing"),
    (
        {"messages": [], "tools": [{"name": "f", "input_schema": {}, "description": -1}]},
        "$.tools[0].description: expected string, got number",
    ),
    ({"messages": [], "tools": [{"type": "web_search_20250305"}]}, "$.tools[0].name: expected string"),
    (
        {"messages": [{"role": "assistant", "content": [{"type": "tool_result", "tool_use_id": "t"}]}]},
        "$.messages[0].content[0].type: an 'assistant' message does not take 'tool_result'",
    ),
    (
        {"messages": [{"role": "system", "content": [{"type": "tool_use", "name": "f", "input": {}}]}]},
        "$.messages[0].content[0].type: a 'system' message does not take 'tool_use'",
    ),
    (
        {
            "messages": [
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": 2.5, "content": "r"}]}
            ]
        },
        "$.messages[0].content[0].tool_use_id: expected string, got number",
    ),
    (
        {
            "messages": [
                {"role": "user", "content": [{"type": "image", "source": {"type": "base64", "data": 0}}]}
            ]
        },
        "$.messages[0].content[0].source.media_type: expected string, got nothing",
    ),
    (
        {
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": 0}}
                    ],
                }
            ]
        },
        "$.messages[0].content[0].source.data: expected string, got number",
    ),
    (
        {
            "messages": [
                {"role": "user", "content": [{"type": "image", "source": {"type": "url", "url": None}}]}
            ]
        },
        "$.messages[0].content[0].source.url: expected string, got null",
    ),
    (
        {
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": "t", "content": [{"type": "refusal"}]}
                    ],
                }
            ]
        },
        "$.messages[0].content[0].content[0].type: 'refusal' is not an Anthropic block type",
    ),
    ({"messages": [], "tool_choice": {"type": [1]}}, "$.tool_choice.type: expected string, got array"),
]
# A tool_result content block whose type is not a string (an object or list one once raised
# TypeError in the decoder: "value cannot be stored: unhashable type" instead of the field).
INVALID += [
    (
        {"messages": [{"role": "user", "content": [{"type": "tool_result", "content": [{"type": t}]}]}]},
        f"$.messages[0].content[0].content[0].type: expected string, got {got}",
    )
    for t, got in (({"text": 1}, "object"), (["text"], "array"), (1, "number"), (None, "null"))
]


@pytest.mark.parametrize(("record", "error"), INVALID)
def test_records_the_messages_api_rejects_are_rejected_at_decode(record: dict, error: str) -> None:
    res = decode_records([record], "anthropic")
    assert [r.error[: len(error)] for r in res.rejected] == [error]


def test_a_nameless_hosted_toolset_is_read_and_kept_exactly() -> None:
    """The browser and computer toolsets are declared without a name (the SDK types none): read,
    and written back exactly; another hosted tool still needs its name (above)."""
    from pipeline.formats import encode_table
    from tests.helpers import json_diff

    tools = [{"type": "browser_toolset_20260801"}, {"type": "computer_toolset_20260801", "x": 1}]
    record = {"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}], "tools": tools}
    res = decode_records([record], "anthropic")
    assert res.rejected == []
    [back] = encode_table(res.table, "anthropic")
    assert json_diff(back, record) is None
