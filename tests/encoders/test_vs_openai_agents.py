"""Differential test: our Responses -> Chat output equals openai-agents' Converter.items_to_messages,
except for the deliberate differences documented in docs/conversion.md (each normalised below).
"""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest

from pipeline import synth
from pipeline.encoders import convert_table
from pipeline.formats import decode_records
from tests.helpers import json_diff

agents = pytest.importorskip(
    "agents.models.chatcmpl_converter", reason="openai-agents is a test-only extra: pip install -e '.[test]'"
)


def _records(n: int) -> list[dict[str, Any]]:
    """Synthetic histories as plain item lists (the converter takes items, not instructions/tools)."""
    out = []
    for rec in synth.generate("responses", n, seed=9):
        if isinstance(rec["input"], list):
            out.append({"input": rec["input"]})
    return out


def _as_theirs(messages: list[dict[str, Any]], source: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Undo our deliberate differences so the rest must match openai-agents exactly."""
    # our text-bearing assistant messages come one per source assistant message item, in order
    kinds = iter([i.get("type") == "message" and "id" in i for i in source if i.get("role") == "assistant"])
    out: list[dict[str, Any]] = []
    for msg in copy.deepcopy(messages):
        content = msg.get("content")
        carries_text = msg["role"] == "assistant" and content is not None and content != []
        from_output_message = next(kinds) if carries_text else False
        if msg["role"] == "assistant" and isinstance(content, list) and from_output_message:
            # D2: we keep a refusal as a part in place; they move it to the refusal field
            refusals = [p["refusal"] for p in content if p.get("type") == "refusal"]
            content = [p for p in content if p.get("type") != "refusal"]
            if refusals:
                msg["refusal"] = "".join(refusals)
            # D1: we keep an output message's text parts; they join them with "\n" (adding text)
            if content:
                msg["content"] = "\n".join(p["text"] for p in content)
            else:
                del msg["content"]  # a refusal-only message has no content for them
        if isinstance(msg.get("content"), list):
            for part in msg["content"]:
                # D3: we keep detail "original"; they rewrite it to "high"
                if part.get("type") == "image_url" and part["image_url"].get("detail") == "original":
                    part["image_url"]["detail"] = "high"
        calls = msg.get("tool_calls")
        if carries_text and calls and not from_output_message:
            # D4: an id-less assistant message followed by its calls stays one message for us;
            # they start a second assistant message for the calls
            del msg["tool_calls"]
            out.append(msg)
            out.append({"role": "assistant", "content": None, "tool_calls": calls})
            continue
        out.append(msg)
    return out


def test_chat_output_matches_openai_agents_except_documented_differences() -> None:
    converter = agents.Converter
    records = _records(400)
    compared, refused = [], 0
    for rec in records:
        try:
            theirs = converter.items_to_messages(copy.deepcopy(rec["input"]))
        except Exception:  # items it rejects (custom tools, compaction, hosted, file ids): not compared
            refused += 1
            continue
        compared.append((rec, orjson.loads(orjson.dumps(theirs))))
    ours = convert_table(decode_records([r for r, _ in compared], "responses").table, "chat")
    diffs = [
        d
        for (rec, theirs), mine in zip(compared, ours, strict=True)
        if (d := json_diff(theirs, _as_theirs(mine.record["messages"], rec["input"])))
    ]
    print(f"\ncompared {len(compared)} histories with openai-agents ({refused} it rejects were skipped)")
    assert len(compared) > 200
    assert diffs == []
