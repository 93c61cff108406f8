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

from pipeline.errors import a_or_an
from pipeline.formats import _build as b
from pipeline.formats._build import (
    I_ARGUMENTS,
    I_CALL_ID,
    I_FORM,
    I_NAME,
    I_NATIVE,
    I_ROLE,
    I_WRAPPER,
    OPEN_TAIL,
)
from pipeline.formats._common import (
    ConversationView,
    ItemView,
    RecordError,
    add_blocks,
    add_content,
    add_instructions,
    block_row,
    check_tools,
    json_type,
    list_at,
    not_object,
    require,
    splice,
)
from pipeline.formats._record import RowEnd, make_decode
from pipeline.schema import FORM_ABSENT, FORM_NULL, FORM_PARTS

NAME = "anthropic"

_CALLS = {"tool_use": "function_call", "server_tool_use": "server_tool_use", "mcp_tool_use": "mcp_tool_use"}
# Block types that become an item of their own (besides every "*_tool_result").
_ITEM_BLOCKS = frozenset((*_CALLS, "tool_result", "thinking", "redacted_thinking", "compaction"))
# MessageParam's roles, and "system": agent logs record a leading system message, which the way
# back folds into the top-level system (reported as system_position).
ROLES = ("user", "assistant", "system")
_ROLES_TEXT = ", ".join(repr(r) for r in ROLES)
# OpenAI text part types: the way back from Chat / Responses writes them as "text" blocks (a
# refusal as text too), so an Anthropic record holding one could not come back as it was.
_FOREIGN_TEXT = frozenset(("input_text", "output_text", "refusal"))
_REQUEST_KEYS = frozenset(("messages", "system"))
_RESPONSE_KEYS = frozenset(("content",))


def is_response(rec: dict[str, Any]) -> bool:
    return "messages" not in rec and "content" in rec


def _is_result(btype: str) -> bool:
    """``tool_result`` and the server results (``web_search_tool_result``, ``mcp_tool_result``, ...)."""
    return btype == "tool_result" or btype.endswith("_tool_result")


def _decode_item_block(cols: b.ItemCols, block: dict[str, Any], row: list[Any], path: str) -> None:
    btype = block["type"]
    row[I_NATIVE] = btype
    has_content = False
    if btype in _CALLS:
        # name and input are required by the API; there is no value to write back for them
        require(block, "name", path)
        require(block, "input", path, dict)
        row[b.I_TYPE] = _CALLS[btype]
        for k, v in block.items():
            if k == "id":
                b.set_str(row, I_CALL_ID, k, v)
            elif k == "name":
                b.set_str(row, I_NAME, k, v)
            elif k == "input":
                if v is None:
                    b.null(row, "arguments")
                else:
                    row[I_ARGUMENTS] = b.dumps(v)
            elif k != "type":
                b.keep(row, k, v)
    elif _is_result(btype):
        row[b.I_TYPE] = "function_call_output" if btype == "tool_result" else btype
        for k, v in block.items():
            if k == "tool_use_id":
                b.set_str(row, I_CALL_ID, k, v)
            elif k == "content" and btype == "tool_result" and (type(v) in (str, list) or v is None):
                has_content = add_content(cols.content, row, v, f"{path}.content")
            elif k != "type":
                b.keep(row, k, v)
        if row[I_FORM] is None:
            row[I_FORM] = FORM_ABSENT
    elif btype == "thinking":
        row[b.I_TYPE] = "reasoning"
        row[I_FORM] = FORM_ABSENT
        for k, v in block.items():
            if k == "thinking" and type(v) is str:
                cols.content.add_text(v, "thinking")
                row[I_FORM] = FORM_PARTS
                has_content = True
            elif k == "thinking" and v is None:
                row[I_FORM] = FORM_NULL
            elif k == "signature":
                b.set_str(row, b.I_SIGNATURE, k, v)
            elif k != "type":
                b.keep(row, k, v)
    elif btype == "redacted_thinking":
        row[b.I_TYPE] = "reasoning"
        for k, v in block.items():
            if k == "data":
                b.set_str(row, b.I_ENCRYPTED, k, v)
            elif k != "type":
                b.keep(row, k, v)
    else:  # compaction (beta): content is the summary string, null when compaction failed
        row[b.I_TYPE] = "compaction"
        for k, v in block.items():
            if k == "content" and (type(v) is str or v is None):
                has_content = add_content(cols.content, row, v, f"{path}.content")
            elif k == "encrypted_content":
                b.set_str(row, b.I_ENCRYPTED, k, v)
            elif k == "signature":
                b.set_str(row, b.I_SIGNATURE, k, v)
            elif k != "type":
                b.keep(row, k, v)
        if row[I_FORM] is None:
            row[I_FORM] = FORM_ABSENT
    b.close_item(cols, row, has_content, False)


def _check_block(block: dict[str, Any], btype: str, path: str) -> None:
    """Reject a block field the API requires as a string when it is another value, where the
    other formats have no slot to carry it back: a ``tool_result``'s ``tool_use_id`` (absent or
    null is kept: logs hold id-less results), and an image ``source``'s ``data`` / ``media_type``
    (base64) or ``url`` (url), which become one URL elsewhere. A ``tool_result``'s content blocks
    may not be OpenAI text parts (as a message's may not), and a ``type`` they give is a string."""
    if btype == "tool_result" and block.get("tool_use_id") is not None:
        require(block, "tool_use_id", path)
    inner = block.get("content") if btype == "tool_result" else None
    if type(inner) is list:  # its blocks, like a message's, are Anthropic blocks
        for j, part in enumerate(inner):
            if type(part) is not dict or "type" not in part:  # kept as they are, reported on conversion
                continue
            # a type that is no string names no block (an object or list one cannot even be looked up)
            require(part, "type", f"{path}.content[{j}]")
            if part["type"] in _FOREIGN_TEXT:
                raise RecordError(
                    f"{path}.content[{j}].type", f"{part['type']!r} is not an Anthropic block type"
                )
    source = block.get("source")
    if btype == "image" and type(source) is dict:
        if source.get("type") == "base64":
            require(source, "media_type", f"{path}.source")
            require(source, "data", f"{path}.source")
        elif source.get("type") == "url":
            require(source, "url", f"{path}.source")


def decode_message(
    cols: b.ItemCols, msg: Any, section: str, group: int, path: str, role: Any = None, content: Any = ...
) -> None:
    """Append one Anthropic message (its blocks as canonical items) to ``cols``."""
    wrapper = None
    if content is ...:  # a message of ``messages``; a response passes role and content itself
        if type(msg) is not dict:
            raise not_object(path, msg)
        role = msg.get("role")
        if type(role) is not str:
            raise RecordError(path, "message without role")
        if role not in ROLES:
            raise RecordError(f"{path}.role", f"expected one of {_ROLES_TEXT}, got {role!r}")
        content = msg.get("content", ...)
        if content is ...:  # required; no target could write back its absence
            raise RecordError(f"{path}.content", "expected string or array, got nothing")
        rest = {k: v for k, v in msg.items() if k != "role" and k != "content"}
        wrapper = b.dumps(rest) if rest else None
    if type(content) is not list:
        row = [section, group, None, "message", *OPEN_TAIL]
        row[I_ROLE] = role
        row[I_WRAPPER] = wrapper
        if content is ...:
            row[I_FORM] = FORM_ABSENT
            b.close_item(cols, row, False, False)
        else:
            b.close_item(cols, row, add_content(cols.content, row, content, f"{path}.content"), False)
        return
    pending: list[Any] | None = None
    first = True
    append_block = cols.content.rows.append
    for j, block in enumerate(content):
        if type(block) is not dict:
            raise not_object(f"{path}.content[{j}]", block)
        btype = block.get("type", ...)
        if type(btype) is not str:  # every block param requires it; no format could write it back
            got = "nothing" if btype is ... else json_type(btype)
            raise RecordError(f"{path}.content[{j}].type", f"expected string, got {got}")
        if (btype == "tool_result" and role not in ("user", None)) or (btype in _CALLS and role == "system"):
            # the way back puts them where they belong (a user / an assistant message): no loss
            # kind says so, and the API rejects them anyway
            raise RecordError(
                f"{path}.content[{j}].type", f"{a_or_an(repr(role))} message does not take {btype!r}"
            )
        if btype in _FOREIGN_TEXT:
            raise RecordError(f"{path}.content[{j}].type", f"{btype!r} is not an Anthropic block type")
        _check_block(block, btype, f"{path}.content[{j}]")
        if btype in _ITEM_BLOCKS or btype.endswith("_tool_result"):
            if pending is not None:
                b.close_item(cols, pending, True, False)
                pending = None
            row = [section, group, j, "", *OPEN_TAIL]
            row[I_ROLE] = role
            if first:
                row[I_WRAPPER], first = wrapper, False
            _decode_item_block(cols, block, row, f"{path}.content[{j}]")
            continue
        if pending is None:
            pending = [section, group, j, "message", *OPEN_TAIL]
            pending[I_ROLE] = role
            pending[I_FORM] = FORM_PARTS
            if first:
                pending[I_WRAPPER], first = wrapper, False
        append_block(block_row(block))
    if pending is not None:
        b.close_item(cols, pending, True, False)
    elif first:  # empty content list: keep the message
        row = [section, group, None, "message", *OPEN_TAIL]
        row[I_ROLE] = role
        row[I_WRAPPER] = wrapper
        row[I_FORM] = FORM_PARTS
        b.close_item(cols, row, True, False)


# Hosted toolsets the Messages API declares without a name (the SDK types none).
NAMELESS_TOOLS = frozenset(("browser_toolset_20260801", "computer_toolset_20260801"))


def _tool_name(tool: dict[str, Any], path: str, choice: bool = False) -> Any:
    """Every tool but a nameless hosted toolset has a string name; a custom tool (no type, or
    "custom") an object input_schema and, if any, a string description. A tool_choice of type
    "tool" names its tool."""
    if choice:
        return (tool, path) if tool["type"] == "tool" else None
    if tool.get("type", "custom") == "custom":
        require(tool, "input_schema", path, dict)
        if "description" in tool:
            require(tool, "description", path)
    elif tool.get("type") in NAMELESS_TOOLS and "name" not in tool:
        return None
    return tool, path


def _walk(tb: b.TableBuilder, rec: dict[str, Any]) -> RowEnd:
    """A request body (``system`` + ``messages``) or a message object (``content``)."""
    response = "messages" not in rec and "content" in rec
    check_tools(rec, _tool_name)
    system = rec.get("system", ...)
    if not add_instructions(tb, system):
        if type(system) is not list:
            raise RecordError("$.system", f"expected string or array, got {json_type(system)}")
        add_blocks(tb.instr, system, "$.system")
        tb.close_instructions(FORM_PARTS)
    cols = tb.items
    if response:
        content = rec["content"]
        if type(content) is not list:
            raise RecordError("$.content", f"expected array, got {json_type(content)}")
        # a role that is not a string stays verbatim in extra_json (it is a top-level key here)
        role = rec.get("role")
        role = role if type(role) is str else None
        decode_message(cols, None, "output", 0, "$", role=role, content=content)
        return rec, _RESPONSE_KEYS, "response", FORM_PARTS, None
    for i, msg in enumerate(list_at(rec, "messages")):
        decode_message(cols, msg, "messages", i, f"$.messages[{i}]")
    return rec, _REQUEST_KEYS, "request", FORM_PARTS, None


decode = make_decode(NAME, _walk)


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
