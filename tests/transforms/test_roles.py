"""Kiln's role_swap and synthetic-user driver scenarios, written out (implemented from the issue's
list: Kiln's own test file was not available to read)."""

from __future__ import annotations

import polars as pl
import pytest

from pipeline.engine.process import frame_to_disk as to_arrow
from pipeline.formats import decode_records, encode_table
from pipeline.transforms import apply_steps, make_step


def run(messages: list[dict], step: str = "role_swap", **params: object) -> tuple[list | None, str | None]:
    """(re-encoded Chat messages, None) or (None, reason)."""
    table = decode_records([{"messages": messages}], "chat").table
    kept, rejected = apply_steps(pl.from_arrow(table), [make_step(step, **params)])
    if len(rejected):
        return None, rejected["reason"][0]
    return encode_table(to_arrow(kept), "chat")[0]["messages"], None


def test_empty_list() -> None:
    assert run([]) == ([], None)


def test_single_user() -> None:
    assert run([{"role": "user", "content": "hi"}]) == ([{"role": "assistant", "content": "hi"}], None)


def test_alternating() -> None:
    msgs = [{"role": r, "content": str(i)} for i, r in enumerate(["user", "assistant"] * 3)]
    out, _ = run(msgs)
    assert [m["role"] for m in out] == ["assistant", "user"] * 3
    assert [m["content"] for m in out] == [str(i) for i in range(6)]


def test_five_consecutive_users_kept_apart() -> None:
    out, _ = run([{"role": "user", "content": f"u{i}"} for i in range(5)])
    assert out == [{"role": "assistant", "content": f"u{i}"} for i in range(5)]


def test_system_raises() -> None:
    assert run([{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]) == (
        None,
        "role_swap: unsupported role 'system' at item 0",
    )


def test_tool_raises() -> None:
    msgs = [
        {"role": "user", "content": "u"},
        {"role": "assistant", "content": "a"},
        {"role": "user", "content": "u"},
        {"role": "assistant", "content": "a"},
        {"role": "tool", "tool_call_id": "c", "content": "r"},
    ]
    assert run(msgs) == (None, "role_swap: unsupported role 'tool' at item 4")


def test_non_string_content_raises() -> None:
    msgs = [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "https://i"}}]}]
    assert run(msgs) == (None, "role_swap: non-text content 'image_url' at item 0")
    assert run([{"role": "assistant", "content": None}]) == (
        None,
        "role_swap: non-text content (null) at item 0",
    )


def test_text_parts_are_swapped_with_their_kind() -> None:
    table = decode_records(
        [{"input": [{"role": "user", "content": [{"type": "input_text", "text": "q"}]}]}], "responses"
    ).table
    kept, _ = apply_steps(pl.from_arrow(table), [make_step("role_swap")])
    [rec] = encode_table(to_arrow(kept), "responses")
    assert rec == {"input": [{"role": "assistant", "content": [{"type": "output_text", "text": "q"}]}]}


def test_string_input_shorthand_becomes_a_list() -> None:
    table = decode_records([{"input": "hi"}], "responses").table
    kept, _ = apply_steps(pl.from_arrow(table), [make_step("role_swap")])
    assert encode_table(to_arrow(kept), "responses") == [{"input": [{"role": "assistant", "content": "hi"}]}]


def test_drop_mode_reports_what_it_dropped() -> None:
    table = decode_records(
        [{"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]}], "chat"
    ).table
    kept, rejected = apply_steps(pl.from_arrow(table), [make_step("role_swap", on_unsupported="drop")])
    assert len(rejected) == 0
    assert kept["role_swap_dropped"].to_list() == [["role_swap: unsupported role 'system' at item 0"]]
    assert encode_table(to_arrow(kept), "chat")[0]["messages"] == [{"role": "assistant", "content": "u"}]


DISPATCH = {
    "role": "assistant",
    "content": None,
    "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
}


def test_driver_drops_tool_dispatch_only_turn() -> None:
    msgs = [
        {"role": "system", "content": "policy"},
        {"role": "user", "content": "weather?"},
        DISPATCH,
        {"role": "tool", "tool_call_id": "c1", "content": "18C"},
        {"role": "assistant", "content": "18C"},
    ]
    out, err = run(msgs, "synthetic_user_view", persona="You are a busy traveller.")
    assert err is None
    assert out == [
        {"role": "system", "content": "You are a busy traveller."},
        {"role": "assistant", "content": "weather?"},
        {"role": "user", "content": "18C"},
    ]


@pytest.mark.parametrize(
    ("messages", "reason"),
    [
        ([], "synthetic_user_view: conversation must end on an assistant turn (nothing visible)"),
        (
            [
                {"role": "user", "content": "a"},
                {"role": "assistant", "content": "b"},
                {"role": "user", "content": "c"},
            ],
            "synthetic_user_view: conversation must end on an assistant turn (ends on 'user')",
        ),
        (
            [{"role": "user", "content": "a"}, DISPATCH],
            "synthetic_user_view: conversation must end on an assistant turn (ends on 'user')",
        ),
    ],
)
def test_driver_must_end_on_assistant(messages: list[dict], reason: str) -> None:
    assert run(messages, "synthetic_user_view") == (None, reason)


def test_driver_non_text_content_names_the_original_item() -> None:
    msgs = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "u"}}]},
        {"role": "assistant", "content": "b"},
    ]
    assert run(msgs, "synthetic_user_view") == (
        None,
        "synthetic_user_view: non-text content 'image_url' at item 1",
    )
