"""LLaMA-Factory dataset files (JSON list or JSON Lines), in the three layouts its loaders read.

* ``conversations`` rows (ShareGPT: ``from``/``value`` with ``function_call``/``observation`` turns,
  ``tools`` as a JSON string) -> the sharegpt codec, exactly as :mod:`pipeline.sources.sharegpt`.
* ``messages`` rows of ``{role, content}`` (OpenAI style; ``images``/``videos`` path lists beside
  them) -> the hf codec as they are; extra columns such as ``images`` stay in the conversation's
  ``extra_json``.
* ``messages`` rows whose content is typed parts ``[{type, value}]`` (``text``, ``reasoning``,
  ``tool_call``) -> rewritten as an HF row, then the hf codec:

  =================================  ===========================================================
  typed parts                        HF message
  =================================  ===========================================================
  one ``text`` part / several        ``content`` string / list of ``{"type": "text", "text"}``
  ``reasoning`` part (assistant)     ``reasoning_content`` (the key HF chat templates read)
  ``tool_call`` part                 ``tool_calls[j] = {"type": "function", "function":
                                     {"name", "arguments"}}`` from the JSON value
  ``tool`` message whose value is a  one ``tool`` message per entry (``tool_call_id``, ``name``,
  JSON list of ``{tool_call_id,      ``content``), and those ids go onto the calls they answer, by
  name, content}``, one per call     position
  any other ``tool`` value           one ``tool`` message with the value as content
  =================================  ===========================================================

  A message whose parts do not fit (unknown part types, several reasoning parts, parts out of the
  reasoning -> text -> tool_call order, a value that is not a call) keeps its parts verbatim
  (``typed_parts_kept_verbatim``). ``meta_json.typed_parts`` says the row was rewritten and lists
  the split tool messages.

A ``tools`` JSON string becomes the tool list itself (``meta_json.tools_was_string``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pipeline.sources._base import SourceBuilder, SourceResult, check_options, parse_jsonish
from pipeline.sources.sharegpt import add_sharegpt, read_rows

NAME = "llamafactory"
OPTIONS: dict[str, type] = {}
_ORDER = {"reasoning": 0, "text": 1, "tool_call": 2}


# Columns LLaMA-Factory's multimodal loaders read beside ``messages`` (lists of paths).
_MEDIA = ("images", "videos", "audios")


def sniff(obj: Any) -> bool:
    """A ``messages`` row with a sign only LLaMA-Factory's layouts have: typed ``{type, value}``
    parts, ``tools`` as a JSON string, or a media path list. A plain ``messages`` row is an HF
    dataset row (``datasets.Dataset.to_json`` writes the absent ones as null: not a sign)."""
    if type(obj) is not dict or type(obj.get("messages")) is not list or "model" in obj:
        return False
    return (
        type(obj.get("tools")) is str
        or any(type(obj.get(k)) is list for k in _MEDIA)
        or _is_typed(obj["messages"])
    )


def _is_typed(messages: list[Any]) -> bool:
    for m in messages:
        c = m.get("content") if type(m) is dict else None
        if type(c) is list and c and all(type(p) is dict and "value" in p and "type" in p for p in c):
            return True
    return False


def _call(value: Any) -> dict[str, Any] | None:
    parsed = parse_jsonish(value) if type(value) is str else ...
    if type(parsed) is not dict or type(parsed.get("name")) is not str or set(parsed) - {"name", "arguments"}:
        return None
    fn: dict[str, Any] = {"name": parsed["name"]}
    if "arguments" in parsed:
        fn["arguments"] = parsed["arguments"]
    return {"type": "function", "function": fn}


def _assistant(parts: list[dict[str, Any]]) -> dict[str, Any] | None:
    kinds = [p["type"] for p in parts]
    # a "type" of any JSON type can arrive here: a list or object is not a part type (and would
    # be unhashable as a key of _ORDER)
    if any(type(k) is not str or k not in _ORDER for k in kinds):
        return None
    if kinds != sorted(kinds, key=_ORDER.__getitem__):
        return None
    if kinds.count("reasoning") > 1 or any(type(p["value"]) is not str for p in parts):
        return None
    msg: dict[str, Any] = {"role": "assistant"}
    texts = [p["value"] for p in parts if p["type"] == "text"]
    calls = [_call(p["value"]) for p in parts if p["type"] == "tool_call"]
    if any(c is None for c in calls):
        return None
    for p in parts:
        if p["type"] == "reasoning":
            msg["reasoning_content"] = p["value"]
    if len(texts) == 1:
        msg["content"] = texts[0]
    elif texts:
        msg["content"] = [{"type": "text", "text": t} for t in texts]
    if calls:
        msg["tool_calls"] = calls
    return msg


def _results(value: Any, pending: int) -> list[dict[str, Any]] | None:
    parsed = parse_jsonish(value) if type(value) is str else ...
    if type(parsed) is not list or len(parsed) != pending or not parsed:
        return None
    out = []
    for r in parsed:
        if (
            type(r) is not dict
            or set(r) != {"tool_call_id", "name", "content"}
            or type(r["tool_call_id"]) is not str
        ):
            return None
        content = r["content"] if type(r["content"]) is str else json.dumps(r["content"], ensure_ascii=False)
        out.append({"role": "tool", "tool_call_id": r["tool_call_id"], "name": r["name"], "content": content})
    return out


def typed_to_hf(messages: list[Any], b: SourceBuilder) -> tuple[list[Any], list[int]]:
    """Typed-parts messages -> HF messages, and the source indexes of split tool messages."""
    out: list[Any] = []
    split: list[int] = []
    last_calls: list[dict[str, Any]] = []
    for i, m in enumerate(messages):
        parts = m.get("content") if type(m) is dict else None
        if type(parts) is not list or not all(
            type(p) is dict and "type" in p and "value" in p for p in parts
        ):
            out.append(m)
            continue
        role = m.get("role")
        rest = {k: v for k, v in m.items() if k not in ("role", "content")}
        msg: dict[str, Any] | None = None
        if role == "assistant":
            msg = _assistant(parts)
            last_calls = msg.get("tool_calls", []) if msg is not None else []
        elif len(parts) >= 1 and all(p["type"] == "text" and type(p["value"]) is str for p in parts):
            if role == "tool" and len(parts) == 1:
                results = _results(parts[0]["value"], len(last_calls))
                if results is not None and not rest:
                    for call, r in zip(last_calls, results, strict=True):
                        call["id"] = r["tool_call_id"]
                    out.extend(results)
                    split.append(i)
                    last_calls = []
                    continue
            texts = [p["value"] for p in parts]
            msg = {
                "role": role,
                "content": texts[0] if len(texts) == 1 else [{"type": "text", "text": t} for t in texts],
            }
        if msg is None:
            b.counts["typed_parts_kept_verbatim"] += 1
            out.append(m)
            continue
        out.append({**msg, **rest})
    return out, split


def add_row(b: SourceBuilder, number: int, row: Any) -> None:
    if type(row) is dict and "conversations" in row:
        add_sharegpt(b, number, row)
        return
    if type(row) is not dict or type(row.get("messages")) is not list:
        b.reject(number, row, "broken envelope: a LLaMA-Factory row has 'conversations' or a 'messages' list")
        return
    meta: dict[str, Any] = {"record": number}
    record = dict(row)
    if _is_typed(row["messages"]):
        record["messages"], split = typed_to_hf(row["messages"], b)
        meta["typed_parts"] = {"split_tool_messages": split}
    tools = row.get("tools")
    if type(tools) is str:
        parsed = parse_jsonish(tools)
        if type(parsed) is list:
            record["tools"] = parsed
            meta["tools_was_string"] = True
    b.add("hf", record, line=number, anchor=b"row", meta=meta, reject_value=row)


def read(path: Path, **options: Any) -> Iterator[SourceResult]:
    """Read one LLaMA-Factory dataset file: one conversation per row."""
    check_options(NAME, options, OPTIONS)
    return read_rows(NAME, path, add_row)
