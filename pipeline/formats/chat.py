"""OpenAI Chat Completions: request bodies (``messages``) and completion objects (``choices``).

A message becomes a *head* item -- ``message``, or ``function_call_output`` for the ``tool`` and
legacy ``function`` roles -- followed by one ``function_call`` / ``custom_tool_call`` item per entry
of ``tool_calls``, all sharing the message's ``group``. A completion's choice keys (``index``,
``finish_reason``, ``logprobs``) ride on the head item's ``wrapper_json``.

=============================  =============================================
Chat                           canonical item
=============================  =============================================
``tool_calls[j].id``           ``call_id`` (``part`` = j)
``tool_calls[j].function``     ``name``, ``arguments`` (exact string)
``tool_calls[j].custom``       ``name``, ``input``
``tool`` ``tool_call_id``      ``call_id``
``refusal``, ``audio``, ...    ``extra_json`` (verbatim)
=============================  =============================================
"""

from __future__ import annotations

from typing import Any

import orjson

from pipeline.formats._build import Item, ItemCols, TableBuilder, append_item, dumps
from pipeline.formats._common import ConversationView, ItemView, RecordError, add_content, json_type, splice
from pipeline.formats._record import add_top_level
from pipeline.schema import FORM_ABSENT, FORM_PARTS

NAME = "chat"
_OUTPUT_ROLES = frozenset(("tool", "function"))
_REQUEST_KEYS = frozenset(("messages",))
_RESPONSE_KEYS = frozenset(("choices",))
_CALL_KINDS = frozenset(("function_call", "custom_tool_call"))


def is_response(rec: dict[str, Any]) -> bool:
    return "choices" in rec and "messages" not in rec



def _decode_tool_call(
    cols: ItemCols, tc: Any, role: str, section: str, group: int, j: int, path: str
) -> None:
    if type(tc) is not dict:
        raise RecordError(path, f"expected object, got {json_type(tc)}")
    native = tc.get("type")
    custom = native == "custom" or (native is None and "custom" in tc and "function" not in tc)
    sub_key, value_key = ("custom", "input") if custom else ("function", "arguments")
    it = Item(section, group, j, "custom_tool_call" if custom else "function_call")
    it.role = role  # the role of the message it came from, as for Anthropic blocks
    for k, v in tc.items():
        if k == "id":
            it.set_str("call_id", k, v)
        elif k == "type":
            it.set_str("native_type", k, v)
        elif k == sub_key:
            if type(v) is not dict:
                raise RecordError(f"{path}.{k}", f"expected object, got {json_type(v)}")
            sub_extra: dict[str, Any] = {}
            for sk, sv in v.items():
                if sk == "name" and (type(sv) is str or sv is None):
                    it.set_str("name", sk, sv)
                elif sk == value_key and (type(sv) is str or sv is None):
                    it.set_str(value_key, sk, sv)
                else:
                    sub_extra[sk] = sv
            if sub_extra:
                it.keep(sub_key, sub_extra)
        else:
            it.keep(k, v)
    if sub_key not in tc:
        raise RecordError(path, f"tool call without '{sub_key}'")
    append_item(cols, it, False, False)


def decode_message(
    cols: ItemCols, msg: Any, section: str, group: int, path: str, wrapper: bytes | None
) -> None:
    """Append one Chat message (head item plus its tool calls) to ``cols``."""
    if type(msg) is not dict:
        raise RecordError(path, f"expected object, got {json_type(msg)}")
    role = msg.get("role")
    if type(role) is not str:
        raise RecordError(path, "message without role")
    it = Item(section, group, None, "function_call_output" if role in _OUTPUT_ROLES else "message")
    it.wrapper = wrapper
    it.role = role
    tool_calls = None
    has_content = False
    for k, v in msg.items():
        if k == "role":
            continue
        if k == "content":
            has_content = add_content(cols.content, it, v, f"{path}.content")
        elif k == "name":
            it.set_str("name", k, v)
        elif k == "tool_call_id":
            it.set_str("call_id", k, v)
        elif k == "tool_calls" and type(v) is list and v:
            tool_calls = v
        else:  # includes tool_calls that are null or [] (nothing to split into items)
            it.keep(k, v)
    if it.content_form is None:
        it.content_form = "absent"
    append_item(cols, it, has_content, False)
    if tool_calls is not None:
        for j, tc in enumerate(tool_calls):
            _decode_tool_call(cols, tc, role, section, group, j, f"{path}.tool_calls[{j}]")


def decode(
    tb: TableBuilder,
    rec: dict[str, Any],
    *,
    conversation_id: str,
    source_file: str | None = None,
    source_line: int | None = None,
) -> None:
    """Append one Chat request body or completion object to ``tb`` (raises :class:`RecordError`)."""
    response = is_response(rec)
    key = "choices" if response else "messages"
    tb.close_instructions(FORM_ABSENT)
    value = rec.get(key, ...)
    if type(value) is not list:
        got = "nothing" if value is ... else json_type(value)
        raise RecordError(f"$.{key}", f"expected array, got {got}")
    cols = tb.items
    for i, entry in enumerate(value):
        if response:
            if type(entry) is not dict:
                raise RecordError(f"$.choices[{i}]", f"expected object, got {json_type(entry)}")
            rest = {k: v for k, v in entry.items() if k != "message"}
            decode_message(cols, entry.get("message"), key, i, f"$.choices[{i}].message", dumps(rest))
        else:
            decode_message(cols, entry, key, i, f"$.messages[{i}]", None)
    add_top_level(
        tb,
        rec,
        _RESPONSE_KEYS if response else _REQUEST_KEYS,
        fmt=NAME,
        kind="response" if response else "request",
        items_form=FORM_PARTS,
        conversation_id=conversation_id,
        source_file=source_file,
        source_line=source_line,
    )


def _encode_tool_call(v: ItemView, i: int) -> Any:
    custom = v.type[i] == "custom_tool_call"
    sub_key, value_key = ("custom", "input") if custom else ("function", "arguments")
    d: dict[str, Any] = {}
    v.put(d, "id", "call_id", i)
    v.put(d, "type", "native_type", i)
    sub: dict[str, Any] = {}
    v.put(sub, "name", "name", i)
    v.put(sub, value_key, value_key, i)
    extra = orjson.loads(v.extra[i]) if v.extra[i] is not None else {}
    sub.update(extra.pop(sub_key, {}))
    d[sub_key] = sub
    d.update(extra)
    return d


def encode_head(v: ItemView, i: int, calls: list[Any]) -> Any:
    """Rebuild a head item as its Chat-shaped message (HF rows share the shape)."""
    d: dict[str, Any] = {"role": v.role[i]}
    content = v.content_value(i)
    if content is not ...:
        d["content"] = content
    v.put(d, "name", "name", i)
    v.put(d, "tool_call_id", "call_id", i)
    if calls:
        d["tool_calls"] = calls
    return v.finish(d, i)


def encode(view: ConversationView, r: int) -> Any:
    """Rebuild conversation ``r`` as a Chat request body or completion object."""
    v = view.items
    messages: list[Any] = []
    wrappers: list[bytes | None] = []
    i, end = view.items_off[r], view.items_off[r + 1]
    while i < end:
        head_index = i
        wrappers.append(v.wrapper[i])
        group = v.group[i]
        i += 1
        calls = []
        while i < end and v.group[i] == group and v.type[i] in _CALL_KINDS:
            calls.append(_encode_tool_call(v, i))
            i += 1
        messages.append(encode_head(v, head_index, calls))
    d: dict[str, Any]
    if view.record_kind[r] == "response":
        choices = []
        for msg, wrapper in zip(messages, wrappers, strict=True):
            choices.append(splice({"message": msg}, wrapper))
        d = {"choices": choices}
    else:
        d = {"messages": messages}
    return view.top(r, d)
