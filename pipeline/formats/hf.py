"""Hugging Face / TRL conversational rows: ``{"messages": [...], "tools"?: [...], ...other columns}``.

The layout is Chat's (``pipeline/formats/chat.py``) with one difference that matters: a tool
call's ``function.arguments`` is a JSON *object* (what ``tokenizer.apply_chat_template`` and TRL
expect), not a string. Like Anthropic's ``tool_use.input``, the object is stored as its compact JSON
text in the canonical ``arguments`` column, so every source format has argument *text* there, and
it is written back as that same JSON (orjson keeps key order, ``1`` vs ``1.0`` and exact strings).

A message becomes a *head* item (``message``, or ``function_call_output`` for the ``tool`` role)
followed by one ``function_call`` item per ``tool_calls`` entry, all sharing the message's
``group`` (``part`` = index in ``tool_calls``). HF rows are dataset rows, never API responses:
``record_kind`` is always ``request``.

=================================  ===========================================================
HF                                 canonical item
=================================  ===========================================================
``role`` / ``content`` / ``name``  ``role``, ``content`` (string, parts or null), ``name``
``tool_call_id`` (some datasets)   ``call_id``
``tool_calls[j].id`` / ``.type``   ``call_id`` / ``native_type``
``tool_calls[j].function.name``    ``name``
``tool_calls[j].function.          ``arguments`` = compact JSON text of the object; an explicit
arguments`` (object)               null is in ``null_fields``; any other JSON type (a Chat-style
                                   string, a list) stays verbatim in ``extra_json``
``images``, ``reasoning``, ...     ``extra_json`` (verbatim, message or top level)
=================================  ===========================================================

Content that is not a string, null or a list of objects is kept verbatim in ``extra_json`` rather
than rejected: training datasets carry odd shapes, and exactness matters more than tidiness.
"""

from __future__ import annotations

from typing import Any

import orjson

from pipeline.formats._build import Item, ItemCols, TableBuilder, append_item, dumps
from pipeline.formats._common import ConversationView, ItemView, RecordError, add_content, json_type
from pipeline.formats._record import add_top_level
from pipeline.formats.chat import encode_head
from pipeline.losses import pointer
from pipeline.schema import FORM_ABSENT, FORM_PARTS

NAME = "hf"
SECTION = "messages"
OUTPUT_ROLES = frozenset(("tool", "function"))
_HANDLED = frozenset(("messages",))


def item_pointer(group: int, part: int | None) -> str:
    """JSON pointer of a canonical item in its HF source row (cross-format loss reports use it)."""
    base = pointer(SECTION, group)
    return base if part is None else base + pointer("tool_calls", part)


def string_arguments(extra: dict[str, Any]) -> str | None:
    """A tool call's ``function.arguments`` stored as a Chat-style string, from its extra_json.

    The format (and TRL) wants an object, but Arrow-backed datasets often hold a string because
    their argument objects differ row to row; the string stays verbatim in extra_json, and
    cross-format encoders read it from here.
    """
    fn = extra.get("function")
    args = fn.get("arguments") if isinstance(fn, dict) else None
    return args if isinstance(args, str) else None



def _decode_function(it: Item, fn: dict[str, Any]) -> None:
    """``function.name`` / ``function.arguments``; every other key stays under ``function`` in extra."""
    rest: dict[str, Any] = {}
    for k, v in fn.items():
        if k == "name" and (type(v) is str or v is None):
            it.set_str("name", k, v)
        elif k == "arguments" and type(v) is dict:
            it.arguments = dumps(v).decode()
        elif k == "arguments" and v is None:
            it.null("arguments")
        else:
            rest[k] = v
    if rest:
        it.keep("function", rest)


def _decode_tool_call(cols: ItemCols, tc: Any, role: str, group: int, j: int, path: str) -> None:
    if type(tc) is not dict:
        raise RecordError(path, f"expected object, got {json_type(tc)}")
    fn = tc.get("function", ...)
    if type(fn) is not dict:
        raise RecordError(
            f"{path}.function", f"expected object, got {'nothing' if fn is ... else json_type(fn)}"
        )
    it = Item(SECTION, group, j, "function_call")
    it.role = role
    for k, v in tc.items():
        if k == "id":
            it.set_str("call_id", k, v)
        elif k == "type":
            it.set_str("native_type", k, v)
        elif k == "function":
            _decode_function(it, v)
        else:
            it.keep(k, v)
    append_item(cols, it, False, False)


def _is_content(value: Any) -> bool:
    """What ``add_content`` can hold exactly: a string, null, or a list of objects."""
    return (
        type(value) is str or value is None or (type(value) is list and all(type(p) is dict for p in value))
    )


def decode_message(cols: ItemCols, msg: Any, group: int, path: str) -> None:
    """Append one HF message (head item plus its tool calls) to ``cols``."""
    if type(msg) is not dict:
        raise RecordError(path, f"expected object, got {json_type(msg)}")
    role = msg.get("role")
    if type(role) is not str:
        raise RecordError(path, "message without role")
    it = Item(SECTION, group, None, "function_call_output" if role in OUTPUT_ROLES else "message")
    it.role = role
    tool_calls = None
    has_content = False
    for k, v in msg.items():
        if k == "role":
            continue
        if k == "content" and _is_content(v):
            has_content = add_content(cols.content, it, v, f"{path}.content")
        elif k == "name":
            it.set_str("name", k, v)
        elif k == "tool_call_id":
            it.set_str("call_id", k, v)
        elif k == "tool_calls" and type(v) is list and v:
            tool_calls = v
        else:  # includes odd content, and tool_calls that are null or [] (nothing to split)
            it.keep(k, v)
    if it.content_form is None:
        it.content_form = FORM_ABSENT
    append_item(cols, it, has_content, False)
    for j, tc in enumerate(tool_calls or ()):
        _decode_tool_call(cols, tc, role, group, j, f"{path}.tool_calls[{j}]")


def decode(
    tb: TableBuilder,
    rec: dict[str, Any],
    *,
    conversation_id: str,
    source_file: str | None = None,
    source_line: int | None = None,
) -> None:
    """Append one HF conversational row to ``tb`` (raises :class:`RecordError`)."""
    tb.close_instructions(FORM_ABSENT)
    messages = rec.get("messages", ...)
    if type(messages) is not list:
        got = "nothing" if messages is ... else json_type(messages)
        raise RecordError("$.messages", f"expected array, got {got}")
    for i, msg in enumerate(messages):
        decode_message(tb.items, msg, i, f"$.messages[{i}]")
    add_top_level(
        tb,
        rec,
        _HANDLED,
        fmt=NAME,
        kind="request",
        items_form=FORM_PARTS,
        conversation_id=conversation_id,
        source_file=source_file,
        source_line=source_line,
    )


def _encode_tool_call(v: ItemView, i: int) -> Any:
    d: dict[str, Any] = {}
    v.put(d, "id", "call_id", i)
    v.put(d, "type", "native_type", i)
    fn: dict[str, Any] = {}
    v.put(fn, "name", "name", i)
    if v.arguments[i] is not None:
        fn["arguments"] = orjson.Fragment(v.arguments[i])  # our own compact JSON text
    elif "arguments" in (v.nulls[i] or ()):
        fn["arguments"] = None
    extra = orjson.loads(v.extra[i]) if v.extra[i] is not None else {}
    fn.update(extra.pop("function", {}))
    d["function"] = fn
    d.update(extra)
    return d


def encode(view: ConversationView, r: int) -> Any:
    """Rebuild conversation ``r`` as the exact HF row it was decoded from."""
    v = view.items
    messages: list[Any] = []
    i, end = view.items_off[r], view.items_off[r + 1]
    while i < end:
        head = i
        i += 1
        calls = []
        while i < end and v.group[i] == v.group[head] and v.part[i] is not None:
            calls.append(_encode_tool_call(v, i))
            i += 1
        messages.append(encode_head(v, head, calls))
    return view.top(r, {"messages": messages})
