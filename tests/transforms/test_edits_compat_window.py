"""Hand-checked cases for edits, compatibility modes and windows (re-encoded to the wire format)."""

from __future__ import annotations

import polars as pl

from pipeline.engine.process import frame_to_disk as to_arrow
from pipeline.formats import decode_records, encode_table
from pipeline.transforms import apply_steps, make_step
from tests.sdk_validate import validate_request


def run(rec: dict, fmt: str, name: str, **params: object) -> dict | str:
    table = decode_records([rec], fmt).table
    kept, rejected = apply_steps(pl.from_arrow(table), [make_step(name, **params)])
    return rejected["reason"][0] if len(rejected) else encode_table(to_arrow(kept), fmt)[0]


TOOL_TURN = {
    "messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]},
    ]
}


def test_note_goes_after_anthropic_tool_results_in_the_same_message() -> None:
    out = run(TOOL_TURN, "anthropic", "append_note", text="NOTE")
    assert out["messages"][2]["content"] == [
        {"type": "tool_result", "tool_use_id": "t1", "content": "ok"},
        {"type": "text", "text": "NOTE"},
    ]


def test_note_as_a_block_or_a_new_message() -> None:
    rec = {"input": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]}
    assert run(rec, "responses", "append_note", text="N")["input"][0]["content"] == [
        {"type": "input_text", "text": "q"},
        {"type": "input_text", "text": "N"},
    ]
    assert run(rec, "responses", "append_note", text="N", mode="message")["input"][1] == {
        "role": "user",
        "content": "N",
    }
    assert run({"input": []}, "responses", "append_note", text="N") == (
        "append_note: no user message or tool output to append to"
    )


def test_prepend_system() -> None:
    out = run(
        {"messages": [{"role": "user", "content": "q"}]}, "chat", "prepend_system", text="P", role="developer"
    )
    assert out["messages"] == [{"role": "developer", "content": "P"}, {"role": "user", "content": "q"}]


CALLS = {
    "input": [
        {"role": "user", "content": "go"},
        {"type": "function_call", "call_id": "a", "name": "f", "namespace": "ns", "arguments": "{}"},
        {"type": "function_call", "call_id": "b", "name": "g", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "b", "output": "rb"},
        {"type": "function_call_output", "call_id": "a", "output": "ra"},
        {"type": "function_call_output", "call_id": "zz", "output": "orphan"},
        {"role": "assistant", "content": "done"},
        {"type": "function_call_output", "call_id": "a", "output": "after a message"},
    ]
}


def test_kimi_pairs_outputs_with_calls_inside_a_stretch() -> None:
    out = run(CALLS, "responses", "compat", mode="kimi")["input"]
    assert [(i.get("type"), i.get("call_id"), i.get("name")) for i in out] == [
        (None, None, None),
        ("function_call", "a", "f"),
        ("function_call_output", "a", "f"),
        ("function_call", "b", "g"),
        ("function_call_output", "b", "g"),
        ("function_call_output", "zz", None),
        (None, None, None),
        ("function_call_output", "a", None),
    ]


def test_flat_tools_and_other_formats() -> None:
    out = run(CALLS, "responses", "compat", mode="flat_tools")["input"]
    assert out[1]["name"] == "ns__f" and "namespace" not in out[1]
    assert run({"messages": []}, "chat", "compat", mode="kimi") == (
        "compat: mode 'kimi' applies to responses records, got 'chat'"
    )


def test_flat_tools_flattens_namespace_tool_definitions_into_a_valid_request() -> None:
    fn = {"type": "function", "name": "read", "description": "d", "parameters": {"type": "object"}}
    rec = {
        "model": "gpt-5",
        "input": [
            {"role": "user", "content": "go"},
            {"type": "function_call", "call_id": "c1", "namespace": "fs", "name": "read", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "ok"},
        ],
        "tools": [
            {
                "type": "namespace",
                "name": "fs",
                "description": "files",
                "tools": [fn, {"type": "function", "name": "ls"}],
            },
            {"type": "function", "name": "top", "parameters": None, "strict": None},
        ],
        "tool_choice": "auto",
    }
    out = run(rec, "responses", "compat", mode="flat_tools")
    assert out["input"][1]["name"] == "fs__read" and "namespace" not in out["input"][1]
    assert out["tools"] == [
        {**fn, "name": "fs__read", "strict": None},
        {"type": "function", "name": "fs__ls", "parameters": None, "strict": None},
        {"type": "function", "name": "top", "parameters": None, "strict": None},
    ]
    validate_request("responses", out)
    # a tools list without namespace tools keeps its exact text
    plain = {
        "model": "gpt-5",
        "input": [],
        "tools": [{"type": "function", "name": "top", "parameters": None, "strict": None}],
    }
    assert run(plain, "responses", "compat", mode="flat_tools") == plain


def test_window_keeps_system_first_task_and_never_orphans_an_output() -> None:
    rec = {
        "messages": [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": "task"},
            {"role": "assistant", "content": "a1"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "r"},
            {"role": "assistant", "content": "done"},
        ]
    }
    roles = [m["role"] for m in run(rec, "chat", "window", last_turns=2)["messages"]]
    assert roles == ["system", "user", "assistant"]  # the tool output lost its call, so it went too
    roles = [m["role"] for m in run(rec, "chat", "window", last_turns=3, keep_first_task=False)["messages"]]
    assert roles == ["system", "assistant", "assistant", "tool", "assistant"]  # a1 + the call: one turn
    assert [m["content"] for m in run(rec, "chat", "window", max_chars=4)["messages"]] == [
        "sys",
        "task",
        "done",
    ]


def test_slice_turns_python_semantics() -> None:
    rec = {"messages": [{"role": r, "content": str(i)} for i, r in enumerate(["user", "assistant"] * 3)]}
    assert [m["content"] for m in run(rec, "chat", "slice_turns", start=-2)["messages"]] == ["4", "5"]
    assert [m["content"] for m in run(rec, "chat", "slice_turns", start=1, stop=3)["messages"]] == ["1", "2"]
    assert run(rec, "chat", "slice_turns", start=4, stop=1)["messages"] == []


def test_kimi_fills_an_output_name_and_keeps_the_order_of_its_null_fields() -> None:
    """Found by hypothesis: removing 'name' from null_fields must not reorder the others."""
    rec = {
        "input": [
            {"type": "function_call", "call_id": "c", "name": "get_weather", "arguments": " "},
            {
                "type": "function_call_output",
                "output": "",
                "name": None,
                "id": None,
                "status": None,
                "call_id": "c",
            },
        ]
    }
    table = decode_records([rec], "responses").table
    assert table.column("items")[0].as_py()[1]["null_fields"] == ["name", "id", "status"]
    kept, rejected = apply_steps(pl.from_arrow(table), [make_step("compat", mode="kimi")])
    assert rejected.height == 0
    output = kept["items"][0][1]
    assert output["name"] == "get_weather"
    assert list(output["null_fields"]) == ["id", "status"]
