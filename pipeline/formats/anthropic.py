"""Anthropic Messages: request bodies (``system`` + ``messages``) and message objects (``content``).

A message is split into canonical items in block order: each run of content blocks (text, image,
document, search_result, unknown types) becomes one ``message`` item holding those blocks, and
each tool or thinking block becomes its own item. All items of a message share its ``group``;
``part`` is the index of the item's first block; the message's other keys ride on the first item's
``wrapper_json``.

=========================  ==========================  ======================================
Anthropic block            canonical item ``type``      fields
=========================  ==========================  ======================================
text / image / document    ``message``                  blocks in ``content``
``tool_use``               ``function_call``            ``id``->``call_id``, ``input``->``arguments``
                                                        (its JSON text)
``tool_result``            ``function_call_output``     ``tool_use_id``->``call_id``, ``content``
``thinking``               ``reasoning``                text in ``content[0]``, ``signature``
``redacted_thinking``      ``reasoning``                ``data``->``encrypted_content``
``compaction`` (beta)      ``compaction``               ``content``, ``encrypted_content``
server tool blocks         the block type               ``id`` / ``tool_use_id``->``call_id``,
                                                        payload verbatim in ``extra_json``
=========================  ==========================  ======================================
"""

from __future__ import annotations

from typing import Any

import orjson

from pipeline.formats._build import Item, ItemCols, TableBuilder, append_item, dumps
from pipeline.formats._common import (
    ConversationView,
    ItemView,
    RecordError,
    add_block,
    add_content,
    json_type,
    splice,
)
from pipeline.formats._record import add_top_level
from pipeline.schema import FORM_ABSENT, FORM_NULL, FORM_PARTS, FORM_STRING

NAME = "anthropic"

_CALLS = {"tool_use": "function_call", "server_tool_use": "server_tool_use", "mcp_tool_use": "mcp_tool_use"}
_REQUEST_KEYS = frozenset(("messages", "system"))
_RESPONSE_KEYS = frozenset(("content",))


def is_response(rec: dict[str, Any]) -> bool:
    return "messages" not in rec and "content" in rec


def _is_result(btype: str) -> bool:
    """``tool_result`` and the server results (``web_search_tool_result``, ``mcp_tool_result``, ...)."""
    return btype == "tool_result" or btype.endswith("_tool_result")


def _is_item_block(btype: Any) -> bool:
    return type(btype) is str and (
        btype in _CALLS or _is_result(btype) or btype in ("thinking", "redacted_thinking", "compaction")
    )



def _decode_item_block(cols: ItemCols, block: dict[str, Any], it: Item, path: str) -> None:
    btype = block["type"]
    it.native_type = btype
    has_content = False
    if btype in _CALLS:
        it.type = _CALLS[btype]
        for k, v in block.items():
            if k == "id":
                it.set_str("call_id", k, v)
            elif k == "name":
                it.set_str("name", k, v)
            elif k == "input":
                if v is None:
                    it.null("arguments")
                else:
                    it.arguments = dumps(v).decode()
            elif k != "type":
                it.keep(k, v)
    elif _is_result(btype):
        it.type = "function_call_output" if btype == "tool_result" else btype
        for k, v in block.items():
            if k == "tool_use_id":
                it.set_str("call_id", k, v)
            elif k == "content" and btype == "tool_result" and (type(v) in (str, list) or v is None):
                has_content = add_content(cols.content, it, v, f"{path}.content")
            elif k != "type":
                it.keep(k, v)
        if it.content_form is None:
            it.content_form = FORM_ABSENT
    elif btype == "thinking":
        it.type = "reasoning"
        it.content_form = FORM_ABSENT
        for k, v in block.items():
            if k == "thinking" and type(v) is str:
                cols.content.add_text(v, "thinking")
                it.content_form = FORM_PARTS
                has_content = True
            elif k == "thinking" and v is None:
                it.content_form = FORM_NULL
            elif k == "signature":
                it.set_str("signature", k, v)
            elif k != "type":
                it.keep(k, v)
    elif btype == "redacted_thinking":
        it.type = "reasoning"
        for k, v in block.items():
            if k == "data":
                it.set_str("encrypted_content", k, v)
            elif k != "type":
                it.keep(k, v)
    else:  # compaction (beta): content is the summary string, null when compaction failed
        it.type = "compaction"
        for k, v in block.items():
            if k == "content" and (type(v) is str or v is None):
                has_content = add_content(cols.content, it, v, f"{path}.content")
            elif k in ("encrypted_content", "signature"):
                it.set_str(k, k, v)
            elif k != "type":
                it.keep(k, v)
        if it.content_form is None:
            it.content_form = FORM_ABSENT
    append_item(cols, it, has_content, False)


def decode_message(
    cols: ItemCols, msg: Any, section: str, group: int, path: str, role: Any = None, content: Any = ...
) -> None:
    """Append one Anthropic message (its blocks as canonical items) to ``cols``."""
    wrapper = None
    if content is ...:  # a message of ``messages``; a response passes role and content itself
        if type(msg) is not dict:
            raise RecordError(path, f"expected object, got {json_type(msg)}")
        role = msg.get("role")
        if type(role) is not str:
            raise RecordError(path, "message without role")
        content = msg.get("content", ...)
        rest = {k: v for k, v in msg.items() if k != "role" and k != "content"}
        wrapper = dumps(rest) if rest else None
    cpath = f"{path}.content"
    if type(content) is not list:
        it = Item(section, group, None, "message")
        it.role = role
        it.wrapper = wrapper
        if content is ...:
            it.content_form = FORM_ABSENT
            append_item(cols, it, False, False)
        else:
            append_item(cols, it, add_content(cols.content, it, content, cpath), False)
        return
    pending: Item | None = None
    first = True
    for j, block in enumerate(content):
        bpath = f"{cpath}[{j}]"
        if type(block) is not dict:
            raise RecordError(bpath, f"expected object, got {json_type(block)}")
        btype = block.get("type")
        if _is_item_block(btype):
            if pending is not None:
                append_item(cols, pending, True, False)
                pending = None
            it = Item(section, group, j, "")
            it.role = role
            if first:
                it.wrapper, first = wrapper, False
            _decode_item_block(cols, block, it, bpath)
            continue
        if pending is None:
            pending = Item(section, group, j, "message")
            pending.role = role
            pending.content_form = FORM_PARTS
            if first:
                pending.wrapper, first = wrapper, False
        add_block(cols.content, block, bpath)
    if pending is not None:
        append_item(cols, pending, True, False)
    elif first:  # empty content list: keep the message
        it = Item(section, group, None, "message")
        it.role = role
        it.wrapper = wrapper
        it.content_form = FORM_PARTS
        append_item(cols, it, True, False)


def decode(
    tb: TableBuilder,
    rec: dict[str, Any],
    *,
    conversation_id: str,
    source_file: str | None = None,
    source_line: int | None = None,
) -> None:
    """Append one Anthropic request body or message object to ``tb`` (raises :class:`RecordError`)."""
    response = is_response(rec)
    system = rec.get("system", ...)
    if system is ...:
        tb.close_instructions(FORM_ABSENT)
    elif system is None:
        tb.close_instructions(FORM_NULL)
    elif type(system) is str:
        tb.instr.add_text(system)
        tb.close_instructions(FORM_STRING)
    elif type(system) is list:
        for j, block in enumerate(system):
            add_block(tb.instr, block, f"$.system[{j}]")
        tb.close_instructions(FORM_PARTS)
    else:
        raise RecordError("$.system", f"expected string or array, got {json_type(system)}")
    cols = tb.items
    if response:
        content = rec["content"]
        if type(content) is not list:
            raise RecordError("$.content", f"expected array, got {json_type(content)}")
        decode_message(cols, None, "output", 0, "$", role=rec.get("role"), content=content)
    else:
        messages = rec.get("messages", ...)
        if type(messages) is not list:
            got = "nothing" if messages is ... else json_type(messages)
            raise RecordError("$.messages", f"expected array, got {got}")
        for i, msg in enumerate(messages):
            decode_message(cols, msg, "messages", i, f"$.messages[{i}]")
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


def _encode_item_block(v: ItemView, i: int) -> Any:
    btype = v.native_type[i]
    d: dict[str, Any] = {"type": btype}
    if btype in _CALLS:
        v.put(d, "id", "call_id", i)
        v.put(d, "name", "name", i)
        if v.arguments[i] is not None:
            d["input"] = orjson.Fragment(v.arguments[i])  # our own compact JSON text
        elif "arguments" in (v.nulls[i] or ()):
            d["input"] = None
    elif _is_result(btype):
        v.put(d, "tool_use_id", "call_id", i)
        content = v.content_value(i)
        if content is not ...:
            d["content"] = content
    elif btype == "thinking":
        if v.content_form[i] == FORM_PARTS:
            d["thinking"] = v.content.text[v.content_off[i]]
        elif v.content_form[i] == FORM_NULL:
            d["thinking"] = None
        v.put(d, "signature", "signature", i)
    elif btype == "redacted_thinking":
        v.put(d, "data", "encrypted_content", i)
    else:
        content = v.content_value(i)
        if content is not ...:
            d["content"] = content
        v.put(d, "encrypted_content", "encrypted_content", i)
        v.put(d, "signature", "signature", i)
    return v.finish(d, i)


def _encode_content(v: ItemView, start: int, end: int) -> Any:
    """The ``content`` of one message from its items ``start:end`` (``...`` when absent)."""
    if end - start == 1 and v.type[start] == "message" and v.content_form[start] != FORM_PARTS:
        return v.content_value(start)
    blocks: list[dict[str, Any]] = []
    for i in range(start, end):
        if v.type[i] == "message" and v.native_type[i] is None:
            blocks.extend(v.content.blocks(v.content_off[i], v.content_off[i + 1]))
        else:
            blocks.append(_encode_item_block(v, i))
    return blocks


def encode(view: ConversationView, r: int) -> Any:
    """Rebuild conversation ``r`` as an Anthropic request body or message object."""
    v = view.items
    start, end = view.items_off[r], view.items_off[r + 1]
    d: dict[str, Any] = {}
    if view.record_kind[r] == "response":
        d["content"] = _encode_content(v, start, end)
    else:
        system = view.instructions_value(r)
        if system is not ...:
            d["system"] = system
        messages = []
        i = start
        while i < end:
            j = i + 1
            while j < end and v.group[j] == v.group[i]:
                j += 1
            msg: dict[str, Any] = {"role": v.role[i]}
            content = _encode_content(v, i, j)
            if content is not ...:
                msg["content"] = content
            messages.append(splice(msg, v.wrapper[i]))
            i = j
        d["messages"] = messages
    return view.top(r, d)
