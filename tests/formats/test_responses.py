"""Where Responses values land in the canonical table."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from pipeline.formats import decode_records
from tests.cases import RESPONSES


def _items(name: str) -> list[dict[str, Any]]:
    rec = dict(RESPONSES)[name]
    table = decode_records([rec], "responses").table
    return table.column("items").to_pylist()[0]


def test_phase_is_tri_state_and_queryable() -> None:
    items = _items("assistant_phase_absent_null_set")
    assert [i["phase"] for i in items] == ["commentary", None, "final_answer"]
    assert [("phase" in (i["null_fields"] or [])) for i in items] == [False, True, False]


def test_item_id_and_call_id_are_separate_columns() -> None:
    items = _items("reasoning_parallel_calls_and_outputs")
    calls = [i for i in items if i["type"] == "function_call"]
    assert [(c["id"], c["call_id"]) for c in calls] == [("fc_1", "call_a"), ("fc_2", "call_b")]
    assert calls[0]["arguments"] == '{"city": "Paris" }'  # exact string, spacing kept
    assert calls[1]["namespace"] == "tools"
    out = [i for i in items if i["type"] == "function_call_output"]
    assert out[0]["null_fields"] == ["status", "id"]
    assert out[1]["content_form"] == "parts"


def test_reasoning_keeps_summary_content_and_encrypted_content() -> None:
    items = _items("reasoning_parallel_calls_and_outputs")
    r1, r2 = (i for i in items if i["type"] == "reasoning")
    assert r1["summary"] == [] and r1["encrypted_content"] == "gAAAA==" and r1["content_form"] == "absent"
    assert r2["summary"][0]["text"] == "**Plan**\n\ncall twice"
    assert r2["encrypted_content"] is None and "encrypted_content" in r2["null_fields"]
    assert r2["content"][0]["type"] == "reasoning_text"


def test_easy_message_without_type_and_string_content() -> None:
    items = _items("easy_messages_without_type_and_inline_developer")
    assert [(i["type"], i["native_type"], i["role"], i["content_form"]) for i in items] == [
        ("message", None, "developer", "string"),
        ("message", None, "user", "parts"),
        ("message", None, "system", "string"),
        ("message", "message", "user", "string"),
    ]
    assert items[2]["content"] == [dict.fromkeys(items[2]["content"][0]) | {"text": "   "}]


def test_unknown_and_hosted_items_keep_their_payload_verbatim() -> None:
    items = _items("custom_tool_compaction_reference_hosted_unknown")
    kinds = [i["type"] for i in items]
    assert kinds == [
        "custom_tool_call",
        "custom_tool_call_output",
        "compaction",
        "compaction",
        "item_reference",
        "item_reference",
        "item_reference",
        "web_search_call",
        "local_shell_call",
        "brand_new_item",
        "function_call_output",
        "compaction_trigger",
    ]
    unknown = items[9]
    assert orjson.loads(unknown["extra_json"]) == {"payload": {"deep": [1, 1.0, True, None]}}
    assert items[4]["native_type"] is None and items[6]["null_fields"] == ["native_type"]
    assert orjson.loads(items[10]["extra_json"]) == {"output": {"stdout": "object output"}}


def test_string_input_is_one_user_message() -> None:
    table = decode_records([dict(RESPONSES)["input_string"]], "responses").table
    assert table.column("items_form").to_pylist() == ["string"]
    [item] = table.column("items").to_pylist()[0]
    assert (item["role"], item["content"][0]["text"]) == ("user", "  What is 2+2?\n")


def test_response_object_top_level_fields() -> None:
    table = decode_records([dict(RESPONSES)["response_object"]], "responses").table
    row = table.to_pylist()[0]
    assert row["record_kind"] == "response" and row["model"] == "gpt-5-mini"
    assert row["instructions"]["form"] == "null"
    assert orjson.loads(row["tools"])[0]["parameters"] is None
    extra = orjson.loads(row["extra_json"])
    assert extra["usage"]["total_tokens"] == 7 and extra["input_transformations"] is None


# Malformed records the Responses API does not accept: rejected at decode, the reason naming the
# field (found by the A -> B -> A fuzzer, tests/encoders/test_fuzz_round_trip.py).
INVALID = [
    ({"input": [{"role": "", "content": "x"}]}, "$.input[0].role: expected one of"),
    ({"input": [{"role": "tool", "content": "x"}]}, "$.input[0].role: expected one of"),
    ({"input": [{"type": "message", "role": "function", "content": []}]}, "$.input[0].role: expected one of"),
    ({"output": [{"type": "message", "role": "USER", "content": []}]}, "$.output[0].role: expected one of"),
    ({"input": [{"role": "user"}]}, "$.input[0].content: expected string or array, got nothing"),
    ({"input": [{"type": True, "role": "user", "content": "x"}]}, "$.input[0].type: expected string"),
    (
        {"input": [{"type": "function_call", "call_id": "c", "name": "f", "arguments": True}]},
        "$.input[0].arguments: expected string, got boolean",
    ),
    ({"input": [{"type": "function_call", "arguments": "{}"}]}, "$.input[0].name: expected string"),
    ({"input": [], "tools": [{"type": "function", "parameters": {}}]}, "$.tools[0].name: expected string"),
    ({"input": [], "tools": [{"name": "f"}]}, "$.tools[0].type: expected string, got nothing"),
    ({"input": None}, "$.input: expected string or array, got null"),
    ({"input": [{"role": "user", "content": [{"type": "text"}]}]}, "$.input[0].content[0].type: 'text'"),
    ({"input": [], "tools": [{"type": "custom", "name": "g", "format": None}]}, "$.tools[0].format:"),
    (
        {"input": [{"role": "user", "content": [{"type": "image_url", "image_url": "u"}]}]},
        "$.input[0].content[0].type: 'image_url' is not a Responses content type",
    ),
    (
        {"input": [{"type": "function_call_output", "call_id": "c", "output": [{"text": "x"}]}]},
        "$.input[0].output[0].type: expected string, got nothing",
    ),
    ({"input": [{"role": "user", "content": [{"text": "x"}]}]}, "$.input[0].content[0].type: expected"),
    (
        {"input": [{"role": "user", "content": [{"type": "output_text", "text": "x"}]}]},
        "$.input[0].content[0].type: a 'user' message does not take 'output_text' parts",
    ),
    (
        {"input": [{"role": "developer", "content": [{"type": "refusal", "refusal": "no"}]}]},
        "$.input[0].content[0].type: a 'developer' message does not take 'refusal' parts",
    ),
    (
        {"input": [{"role": "assistant", "content": [{"type": "refusal", "refusal": True}]}]},
        "$.input[0].content[0].refusal: expected string, got boolean",
    ),
    (
        {
            "input": [
                {
                    "type": "function_call_output",
                    "call_id": "c",
                    "output": [{"type": "output_text", "text": "x"}],
                }
            ]
        },
        "$.input[0].output[0].type: a tool output does not take 'output_text' parts",
    ),
    (
        {
            "input": [
                {"type": "function_call_output", "call_id": "c", "output": [{"type": "text", "text": "x"}]}
            ]
        },
        "$.input[0].output[0].type: a tool output does not take 'text' parts",
    ),
]


@pytest.mark.parametrize(("record", "error"), INVALID)
def test_records_the_responses_api_rejects_are_rejected_at_decode(record: dict, error: str) -> None:
    res = decode_records([record], "responses")
    assert [r.error[: len(error)] for r in res.rejected] == [error]


def test_a_response_object_keeps_its_null_output() -> None:
    """Only a request's input must be a string or a list."""
    assert decode_records([{"output": None}], "responses").rejected == []


def test_a_response_object_with_an_empty_input_is_a_response() -> None:
    """Recorded responses may carry ``input: []`` beside ``output``: ``"object": "response"`` says
    what it is, so it is not read as a request (whose Chat form would have no messages); the
    ``input`` key stays, unmodelled. The compiled decoder decides the same."""
    from pipeline.encoders import convert_table
    from pipeline.formats import decode_lines, encode_table

    call = {"type": "custom_tool_call", "id": "ctc_1", "call_id": "c1", "name": "f", "input": "x",
            "status": "completed"}  # fmt: skip
    record = {"id": "resp_1", "object": "response", "created_at": 1, "status": "completed", "model": "gpt-5",
              "input": [], "output": [call]}  # fmt: skip
    compiled = decode_lines([orjson.dumps(record)], "responses").table  # the compiled decoder when built
    for table in (decode_records([record], "responses").table, compiled):
        assert table.column("record_kind").to_pylist() == ["response"]
        assert encode_table(table, "responses") == [record]
        [chat] = convert_table(table, "chat")
        assert chat.error is None and chat.record["object"] == "chat.completion"
        assert chat.record["choices"][0]["message"]["tool_calls"][0]["id"] == "c1"
    # a request body that has an output key too stays a request (no object tag)
    request = {"input": [{"role": "user", "content": "hi"}], "output": []}
    assert decode_records([request], "responses").table.column("record_kind").to_pylist() == ["request"]
