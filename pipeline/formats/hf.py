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

from pipeline.formats import _build as b
from pipeline.formats._build import I_ARGUMENTS, I_CALL_ID, I_NAME, I_NATIVE, I_ROLE, OPEN_TAIL
from pipeline.formats._common import (
    ConversationView,
    ItemView,
    RecordError,
    add_chat_message,
    json_type,
    list_at,
    not_object,
)
from pipeline.formats._record import RowEnd, make_decode
from pipeline.formats.chat import encode_head
from pipeline.losses import pointer
from pipeline.schema import FORM_ABSENT, FORM_PARTS

NAME = "hf"
SECTION = "messages"
_HANDLED = frozenset(("messages",))
# Assistant-message keys chat templates read as the turn's reasoning text: Qwen3, QwQ, DeepSeek-R1
# and GLM read ``reasoning_content`` (as do DeepSeek / vLLM Chat messages), gpt-oss ``thinking``.
REASONING_KEYS = ("reasoning_content", "thinking")


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


def _decode_function(row: list[Any], fn: dict[str, Any]) -> None:
    """``function.name`` / ``function.arguments``; every other key stays under ``function`` in extra."""
    rest: dict[str, Any] = {}
    for k, v in fn.items():
        if k == "name" and (type(v) is str or v is None):
            b.set_str(row, I_NAME, k, v)
        elif k == "arguments" and type(v) is dict:
            row[I_ARGUMENTS] = b.dumps(v)
        elif k == "arguments" and v is None:
            b.null(row, "arguments")
        else:
            rest[k] = v
    if rest:
        b.keep(row, "function", rest)


def _decode_tool_call(cols: b.ItemCols, tc: Any, role: str, group: int, j: int, path: str) -> None:
    if type(tc) is not dict:
        raise not_object(path, tc)
    fn = tc.get("function", ...)
    if type(fn) is not dict:
        raise RecordError(
            f"{path}.function", f"expected object, got {'nothing' if fn is ... else json_type(fn)}"
        )
    row = [SECTION, group, j, "function_call", *OPEN_TAIL]
    row[I_ROLE] = role
    for k, v in tc.items():
        if k == "id":
            b.set_str(row, I_CALL_ID, k, v)
        elif k == "type":
            b.set_str(row, I_NATIVE, k, v)
        elif k == "function":
            _decode_function(row, v)
        else:
            b.keep(row, k, v)
    b.close_item(cols, row, False, False)


def decode_message(cols: b.ItemCols, msg: Any, group: int, path: str) -> None:
    """Append one HF message (head item plus its tool calls) to ``cols``; content that is not a
    string, null or a list of objects stays verbatim in extra_json."""
    role, tool_calls = add_chat_message(cols, msg, SECTION, group, path, None, True)
    for j, tc in enumerate(tool_calls or ()):
        _decode_tool_call(cols, tc, role, group, j, f"{path}.tool_calls[{j}]")


def _walk(tb: b.TableBuilder, rec: dict[str, Any]) -> RowEnd:
    """A conversational row (``messages``); always a request."""
    tb.close_instructions(FORM_ABSENT)
    cols = tb.items
    for i, msg in enumerate(list_at(rec, "messages")):
        decode_message(cols, msg, i, f"$.messages[{i}]")
    return rec, _HANDLED, "request", FORM_PARTS, None


decode = make_decode(NAME, _walk)


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
