"""An Anthropic source reports, at its own paths, what the way back from Chat/Responses reshapes."""

from __future__ import annotations

import pytest

from pipeline.encoders import convert_table
from pipeline.formats import decode_records
from tests.cases import CASES


def _losses(name: str, target: str) -> set[tuple[str, str]]:
    [c] = convert_table(decode_records([dict(CASES["anthropic"])[name]], "anthropic").table, target)
    assert c.error is None, c.error
    return {(loss.path, loss.kind) for loss in c.losses}


@pytest.mark.parametrize("target", ["chat", "responses"])
def test_inline_system_and_adjacent_same_role(target: str) -> None:
    got = _losses("inline_system_messages_and_adjacent_same_role", target)
    assert {
        ("/messages/0", "system_position"),  # first message role system -> top-level system
        ("/system", "system_position"),
        ("/messages/3", "message_merge"),  # user, user
        ("/messages/4", "message_merge"),
        ("/messages/5", "message_merge"),  # system, system (inline)
        ("/messages/6", "message_merge"),
        ("/temperature", "request_field"),  # carried to OpenAI, not taken back by Anthropic
    } <= got
    # the messages in between come back as they were (Responses generates the assistant message id)
    assert {(p, k) for p, k in got if p.startswith(("/messages/1", "/messages/2"))} <= {
        ("/messages/2/content/0", "generated_id")
    }


@pytest.mark.parametrize("target", ["chat", "responses"])
def test_claude_code_message_keys_thinking_and_trailing_call(target: str) -> None:
    got = _losses("claude_code_split_messages_and_trailing_tool_use", target)
    assert {
        ("/messages/1/id", "item_id"),  # message keys, although the message starts with thinking
        ("/messages/1/usage", "unknown_field"),
        ("/messages/2/id", "item_id"),  # ... or with a tool_use
        ("/messages/1/content/0/signature", "thinking_signature"),
        ("/messages/3/content/0/is_error", "tool_error"),
        ("/messages/5/content/0", "unanswered_call"),
        ("/messages/5", "content_form"),
        ("/max_tokens", "filled_default"),
    } <= got


def test_tool_results_out_of_place() -> None:
    got = _losses("tool_results_out_of_place", "chat")
    assert {
        ("/messages/0/content/0", "orphan_output"),
        ("/messages/1/content/0", "empty_text"),
        ("/messages/3/content/1", "tool_output_order"),
        ("/messages/3/content/1/content", "empty_text"),
        ("/messages/5/content/0/content", "content_form"),
        ("/messages/5/content/1", "image"),  # a bmp data URL does not convert back
        ("/messages/5/content/2/source/x_vendor", "image"),
        ("/messages/6", "message_split"),  # user text + tool_use
        ("/messages/8/content", "whitespace"),
        ("/tools/0", "tools"),
        ("/max_tokens", "filled_default"),  # 0 is not a usable limit
    } <= got


def test_blank_system_and_empty_tools() -> None:
    assert _losses("blank_system_and_empty_tools", "responses") == {("/system", "empty_text")}
    [c] = convert_table(
        decode_records([dict(CASES["anthropic"])["blank_system_and_empty_tools"]], "anthropic").table, "chat"
    )
    [back] = convert_table(decode_records([c.record], "chat").table, "anthropic")
    assert back.record["tools"] == []  # an empty tool list stays one
