"""The per-record rule of --from auto (pipeline/sources/wire_kind.py, docs/sources.md#auto)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from pipeline.sources.wire_kind import NO_FORMAT, classify
from tests.cases import CASES

# Records of tests/cases.py that the rule gives another format, on purpose (the docs' table):
# a bare ``{"messages": [...]}`` with no request key is valid Chat, Anthropic and HF; rule 8: hf.
AMBIGUOUS = {("chat", "minimal"): "hf"}


def _kinds(records: list[Any]) -> list[str | None]:
    return classify([orjson.dumps(r) for r in records])


@pytest.mark.parametrize("fmt", sorted(CASES))
def test_every_case_is_its_format(fmt: str) -> None:
    names = [name for name, _ in CASES[fmt]]
    kinds = _kinds([r for _, r in CASES[fmt]])
    assert kinds == [AMBIGUOUS.get((fmt, n), fmt) for n in names]


RESPONSE_OBJECTS = [
    ({"id": "resp_1", "object": "response", "output": [{"type": "message", "role": "assistant",
      "content": [{"type": "output_text", "text": "hi"}]}]}, "responses"),
    ({"object": "response.compaction", "output": []}, "responses"),
    ({"id": "c", "object": "chat.completion",
      "choices": [{"message": {"role": "assistant", "content": "x"}}]}, "chat"),
    ({"id": "msg_1", "type": "message", "role": "assistant", "content": [{"type": "text", "text": "x"}],
      "stop_reason": "end_turn"}, "anthropic"),
    ({"id": "msg_2", "type": "message", "role": "assistant", "content": []}, "anthropic"),
]  # fmt: skip


@pytest.mark.parametrize(("record", "fmt"), RESPONSE_OBJECTS)
def test_response_objects(record: dict[str, Any], fmt: str) -> None:
    assert _kinds([record]) == [fmt]


USER = {"role": "user", "content": "hi"}
MESSAGES_RULES = [
    # rule 6: an Anthropic sign
    ({"messages": [USER], "system": "be brief"}, "anthropic"),
    ({"messages": [{"role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": "t", "content": "r"}]}]}, "anthropic"),
    ({"model": "claude-x", "max_tokens": 5, "messages": [USER]}, "anthropic"),
    # max_tokens with a Chat sign stays Chat
    ({"model": "gpt-4o", "max_tokens": 5, "messages": [{"role": "system", "content": "s"}, USER]}, "chat"),
    ({"max_tokens": 5, "messages": [USER, {"role": "tool", "tool_call_id": "c", "content": "r"}]}, "chat"),
    # rule 7: a request key or a Chat-only sign
    ({"model": "gpt-4o", "messages": [USER]}, "chat"),
    ({"messages": [USER], "temperature": 0}, "chat"),
    ({"messages": [{"role": "assistant", "tool_calls": [{"id": "c", "type": "function",
      "function": {"name": "f", "arguments": "{}"}}]}]}, "chat"),
    # rule 8: a dataset row (tool call arguments as objects, system and tool roles are fine)
    ({"messages": [{"role": "system", "content": "s"}, USER]}, "hf"),
    ({"messages": [{"role": "assistant", "tool_calls": [{"type": "function",
      "function": {"name": "f", "arguments": {"a": 1}}}]}, {"role": "tool", "content": "r"}],
      "tools": []}, "hf"),
    ({"messages": [USER], "images": ["a.png"]}, "hf"),
    # rules 1-4
    ({"input": "hi", "model": "gpt-5"}, "responses"),
    ({"input": [], "messages": []}, "responses"),
    ({"conversations": [{"from": "human", "value": "x"}]}, "sharegpt"),
]  # fmt: skip


@pytest.mark.parametrize(("record", "fmt"), MESSAGES_RULES)
def test_the_documented_rules(record: dict[str, Any], fmt: str) -> None:
    assert _kinds([record]) == [fmt]


def test_what_fits_nothing() -> None:
    lines = [b"not json", b"[1, 2]", b"\xff\xfe{}", b"", b"{}", b'{"messages": "x"}', b'{"content": []}']
    lines.append(b"7")
    assert classify(lines) == [None, None, None, None, NO_FORMAT, NO_FORMAT, NO_FORMAT, None]


def test_order_is_kept_over_a_large_batch() -> None:
    formats = sorted(CASES)
    records = [CASES[formats[i % 3]][0][1] for i in range(20_000)]
    first = {f: AMBIGUOUS.get((f, CASES[f][0][0]), f) for f in formats}
    want = [first[formats[i % 3]] for i in range(20_000)]
    assert _kinds(records) == want


def test_records_follow_the_file_when_they_fit_its_format() -> None:
    """A record that fits several formats takes the one most of its file's records have; one that
    fits only its own keeps it (a truly mixed file)."""
    from pipeline.sources.wire_kind import classify_fits, follow_the_file

    chat = {"model": "gpt-4o", "messages": [{"role": "user", "content": "q"}]}
    bare = {"messages": [{"role": "user", "content": "q"}]}  # HF by the rule, Chat too
    capped = {"messages": [{"role": "user", "content": "q"}], "max_tokens": 5}  # Anthropic, Chat too
    anthropic = {"system": "s", "messages": [{"role": "user", "content": "q"}], "max_tokens": 5}
    hf_call = {"messages": [{"role": "assistant", "tool_calls": [
        {"type": "function", "function": {"name": "f", "arguments": {"a": 1}}}]}]}  # fmt: skip
    lines = [orjson.dumps(r) for r in [chat, chat, chat, bare, capped, anthropic, hf_call]]
    kinds, also = classify_fits(lines)
    assert kinds == ["chat", "chat", "chat", "hf", "anthropic", "anthropic", "hf"]
    assert follow_the_file(kinds, also) == ["chat", "chat", "chat", "chat", "chat", "anthropic", "hf"]
    # a dataset file with a few rows that carry a request key: all HF
    lines = [orjson.dumps(r) for r in [bare, bare, bare, chat]]
    assert follow_the_file(*classify_fits(lines)) == ["hf"] * 4
