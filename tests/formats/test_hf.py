"""Hugging Face / TRL conversational rows: exact round trips and where values land.

The codec is registered here by the fixture, so these tests run whether or not ``"hf"`` is in
``pipeline.formats.CODECS`` yet.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest

from pipeline.formats import CODECS, decode_lines, decode_records, hf
from tests.helpers import assert_identical, json_diff, roundtrip

HF_CASES: list[tuple[str, dict[str, Any]]] = [
    (
        "trl_plain",
        {
            "messages": [
                {"role": "system", "content": "You are helpful."},
                {"role": "user", "content": "  What is 2+2?\n"},
                {"role": "assistant", "content": "4"},
            ]
        },
    ),
    (
        "trl_tool_calling",
        {
            "messages": [
                {"role": "user", "content": "Weather in Paris and Rome?"},
                {
                    "role": "assistant",
                    "tool_calls": [
                        {"type": "function", "function": {"name": "weather", "arguments": {"city": "Paris"}}},
                        {"type": "function", "function": {"name": "weather", "arguments": {"city": "Rome"}}},
                    ],
                },
                {"role": "tool", "name": "weather", "content": "18C"},
                {"role": "tool", "name": "weather", "content": "21C"},
                {"role": "assistant", "content": "Paris 18C, Rome 21C."},
            ],
            "tools": [
                {
                    "type": "function",
                    "function": {
                        "name": "weather",
                        "description": "Current weather",
                        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
                    },
                }
            ],
        },
    ),
    (
        "argument_values_exact",
        {
            "messages": [
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {
                                "name": "f",
                                "arguments": {"a": 1, "b": 1.0, "c": [True, None, -0.5e-3], "é": {}, "z": ""},
                            },
                        },
                        {"id": "call_2", "type": "function", "function": {"name": "g", "arguments": {}}},
                        {"id": "call_3", "type": "function", "function": {"name": "h", "arguments": None}},
                        {
                            "id": "call_4",
                            "type": "function",
                            "function": {"name": "i", "arguments": '{"x": 1}'},
                        },
                        {"id": "call_5", "type": "function", "function": {"name": "j", "arguments": [1, 2]}},
                        {"id": None, "function": {"name": "k"}, "index": 0},
                        {"type": "function", "function": {"name": None, "arguments": {}, "strict": True}},
                    ],
                },
                {"role": "tool", "tool_call_id": "call_1", "name": "f", "content": "ok"},
            ]
        },
    ),
    (
        "content_forms",
        {
            "messages": [
                {"role": "user"},
                {"role": "user", "content": None},
                {"role": "user", "content": ""},
                {
                    "role": "user",
                    "content": [{"type": "image"}, {"type": "text", "text": "What is in this image?"}],
                },
                {"role": "assistant", "content": {"odd": "object"}},
                {"role": "assistant", "content": ["not", "parts"]},
                {"role": "assistant", "content": 7},
                {"role": "assistant", "content": [], "tool_calls": []},
                {"role": "assistant", "content": "x", "tool_calls": None, "reasoning_content": "think"},
            ]
        },
    ),
    (
        "roles_and_names",
        {
            "messages": [
                {"role": "developer", "content": "d"},
                {"role": "user", "name": "alice", "content": "hi"},
                {"role": "ipython", "content": "out"},
                {"role": "function", "name": "legacy", "content": "r"},
                {"role": "tool", "tool_call_id": None, "name": None, "content": "x"},
            ]
        },
    ),
    (
        "extra_columns",
        {
            "messages": [
                {"role": "user", "content": "<image>Describe"},
                {"role": "assistant", "content": "A cat"},
            ],
            "images": ["imgs/1.jpg"],
            "id": 17,
            "source": None,
            "model": "gpt-4o",
            "tools": None,
            "meta": {"split": "train", "score": 0.5},
        },
    ),
    ("tools_as_json_string", {"messages": [], "tools": '[{"type": "function", "function": {"name": "f"}}]'}),
    ("prompt_completion_columns_kept", {"messages": [], "prompt": [{"role": "user", "content": "hi"}]}),
]

REJECTED = [
    ({"prompt": "no messages"}, "$.messages: expected array, got nothing"),
    ({"messages": {"role": "user"}}, "$.messages: expected array, got object"),
    ({"messages": ["hi"]}, "$.messages[0]: expected object, got string"),
    ({"messages": [{"content": "hi"}]}, "$.messages[0]: message without role"),
    (
        {"messages": [{"role": "assistant", "tool_calls": ["x"]}]},
        "$.messages[0].tool_calls[0]: expected object",
    ),
    (
        {"messages": [{"role": "assistant", "tool_calls": [{"id": "c"}]}]},
        "tool_calls[0].function: expected object",
    ),
]


@pytest.fixture(autouse=True)
def _registered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(CODECS, "hf", hf)


@pytest.mark.parametrize("record", [rec for _, rec in HF_CASES], ids=[name for name, _ in HF_CASES])
def test_case_roundtrips_exactly(record: dict[str, Any], tmp_path: Path) -> None:
    [back] = roundtrip([record], "hf", tmp_path)
    assert_identical(record, back)


def test_all_cases_in_one_table(tmp_path: Path) -> None:
    records = [rec for _, rec in HF_CASES]
    back = roundtrip(records, "hf", tmp_path)
    assert [json_diff(a, b) for a, b in zip(records, back, strict=True)] == [None] * len(records)


@pytest.mark.parametrize(("record", "error"), REJECTED)
def test_format_violations_are_rejected_with_a_path(record: dict[str, Any], error: str) -> None:
    res = decode_lines([json.dumps(record).encode()], "hf")
    assert res.table.num_rows == 0
    assert error in res.rejected[0].error


def _items(name: str) -> list[dict[str, Any]]:
    table = decode_records([dict(HF_CASES)[name]], "hf").table
    return table.column("items").to_pylist()[0]


def test_argument_objects_are_compact_json_text_in_the_arguments_column() -> None:
    items = _items("argument_values_exact")
    calls = [i for i in items if i["type"] == "function_call"]
    assert [c["arguments"] for c in calls[:3]] == [
        '{"a":1,"b":1.0,"c":[true,null,-0.0005],"é":{},"z":""}',
        "{}",
        None,
    ]
    assert calls[2]["null_fields"] == ["arguments"]
    # a Chat-style string and a list are not objects: kept verbatim, the column stays empty
    assert calls[3]["arguments"] is None
    assert orjson.loads(calls[3]["extra_json"]) == {"function": {"arguments": '{"x": 1}'}}
    assert hf.string_arguments(orjson.loads(calls[3]["extra_json"])) == '{"x": 1}'
    assert orjson.loads(calls[4]["extra_json"]) == {"function": {"arguments": [1, 2]}}
    assert [(c["group"], c["part"], c["call_id"], c["native_type"]) for c in calls[:2]] == [
        (0, 0, "call_1", "function"),
        (0, 1, "call_2", "function"),
    ]


def test_tool_messages_and_odd_content() -> None:
    items = _items("trl_tool_calling")
    tool = items[4]
    assert (tool["type"], tool["role"], tool["name"], tool["call_id"]) == (
        "function_call_output",
        "tool",
        "weather",
        None,
    )
    odd = _items("content_forms")
    assert [i["content_form"] for i in odd] == ["absent", "null", "string", "parts"] + ["absent"] * 3 + [
        "parts",
        "string",
    ]
    assert orjson.loads(odd[4]["extra_json"]) == {"content": {"odd": "object"}}
    assert orjson.loads(odd[8]["extra_json"]) == {"tool_calls": None, "reasoning_content": "think"}


def test_row_level_fields() -> None:
    table = decode_records([dict(HF_CASES)["extra_columns"]], "hf").table
    row = table.to_pylist()[0]
    assert (row["source_format"], row["record_kind"], row["model"], row["null_fields"]) == (
        "hf",
        "request",
        "gpt-4o",
        ["tools"],
    )
    assert orjson.loads(row["extra_json"]) == {
        "images": ["imgs/1.jpg"],
        "id": 17,
        "source": None,
        "meta": {"split": "train", "score": 0.5},
    }
