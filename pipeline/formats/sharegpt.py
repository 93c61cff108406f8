"""ShareGPT rows as LLaMA-Factory reads them: ``{"conversations": [{"from", "value"}], "system"?,
"tools"?, ...other columns}``.

Each turn is one canonical item (its ``group`` is the turn index) whose ``native_type`` is the
``from`` tag exactly as written, so any tag survives, known or not. ``value`` is the item's content
(string form; an explicit null is the ``null`` form). The tag decides the canonical kind and role:

==================================  ==========================  =========
``from``                            item ``type``               ``role``
==================================  ==========================  =========
``human``, ``user``                 ``message``                 user
``gpt``, ``assistant``, ``chatgpt``,
``bing``, ``bard``                  ``message``                 assistant
``system``                          ``message``                 system
``function_call``                   ``function_call``           assistant
``observation``, ``tool``           ``function_call_output``    tool
anything else (``narrator``, ...)   ``message``                 the tag
==================================  ==========================  =========

A ``function_call`` value is JSON text ``{"name", "arguments": {...}}`` -- or a list of them for
parallel calls, as LLaMA-Factory's ``FunctionFormatter`` accepts. The exact value string stays in
the item's content, so the turn is written back byte for byte; ``name`` and ``arguments`` (compact
JSON text of the arguments object, or the string itself when a dataset stores a string) are
*parsed views* of it, so queries and cross-format encoders see the same columns as for every other
source. A list value gives one extra ``function_call`` item per further call (same ``group``,
``part`` = its index in the list; ``part`` 0 is the turn's own item). A value that does not parse
as calls keeps only the content. Writing back reads ``native_type``, content and ``extra_json``
only: edit the value, not the parsed views.

Top level: a string ``system`` is the conversation's instructions (string form). ``tools`` is a
JSON *string* in ShareGPT; when that string parses as JSON, the canonical ``tools`` column holds
that text itself (the tool list's JSON, as for every other format) and it is written back as the
same string. A ``tools`` that is not JSON text (LLaMA-Factory's default ``""``, a list) and a
non-string ``system`` stay verbatim in ``extra_json``. There are no call ids: outputs pair with
calls by position. ``record_kind`` is always ``request``.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

from pipeline.formats import _build as b
from pipeline.formats._build import I_ARGUMENTS, I_FORM, I_NAME, I_NATIVE, I_PART, I_ROLE, OPEN_TAIL
from pipeline.formats._common import (
    ConversationView,
    RecordError,
    add_content,
    add_instructions,
    list_at,
    not_object,
    splice,
)
from pipeline.formats._record import RowEnd, make_decode
from pipeline.losses import pointer
from pipeline.schema import FORM_ABSENT, FORM_PARTS

NAME = "sharegpt"
SECTION = "conversations"
FUNCTION_TAG = "function_call"
OBSERVATION_TAG = "observation"

# from tag -> (canonical item type, role)
KINDS: dict[str, tuple[str, str]] = {
    "human": ("message", "user"),
    "user": ("message", "user"),
    "gpt": ("message", "assistant"),
    "assistant": ("message", "assistant"),
    "chatgpt": ("message", "assistant"),
    "bing": ("message", "assistant"),
    "bard": ("message", "assistant"),
    "system": ("message", "system"),
    FUNCTION_TAG: ("function_call", "assistant"),
    OBSERVATION_TAG: ("function_call_output", "tool"),
    "tool": ("function_call_output", "tool"),
}
# role -> the tag LLaMA-Factory expects by default (what cross-format encoders write)
TAGS: dict[str, str] = {"user": "human", "assistant": "gpt", "system": "system"}


def tag_for(kind: str, role: str) -> str:
    """The ``from`` tag an encoder writes for a canonical kind and role (LLaMA-Factory's defaults;
    an unknown role is written as its own tag, as it was read)."""
    if kind == "function_call":
        return FUNCTION_TAG
    if kind == "function_call_output":
        return OBSERVATION_TAG
    return TAGS.get(role, role)


def llamafactory_problems(rec: dict[str, Any]) -> list[str]:
    """What LLaMA-Factory's ``SharegptDatasetConverter`` would not train on as written (empty: all).

    After an optional leading ``system`` turn (which then wins over the ``system`` column), turns
    must alternate ``human``/``observation`` and ``gpt``/``function_call``, in an even number, or
    the row is skipped. Exact codecs and encoders keep the source's turn order, so a conversation
    that does not alternate (two user messages in a row, a system message mid-way, text before a
    tool call, several outputs of parallel calls) is written as it is; this says so.
    """
    turns = rec.get("conversations")
    if not isinstance(turns, list):
        return ["no conversations list"]
    problems = []
    if turns and isinstance(turns[0], dict) and turns[0].get("from") == "system":
        turns = turns[1:]
        if rec.get("system"):
            problems.append("a first system turn replaces the system column, which is ignored")
    for n, turn in enumerate(turns):
        allowed = ("human", OBSERVATION_TAG) if n % 2 == 0 else ("gpt", FUNCTION_TAG)
        tag = turn.get("from") if isinstance(turn, dict) else None
        if tag not in allowed:
            return [*problems, f"turn {n}: {tag!r} where one of {allowed} is expected"]
    return [*problems, "an odd number of turns"] if len(turns) % 2 else problems


def item_pointer(group: int) -> str:
    """JSON pointer of a turn in its ShareGPT source row (cross-format loss reports use it)."""
    return pointer(SECTION, group)


def value_pointer(group: int) -> str:
    return pointer(SECTION, group, "value")


def dump_value(value: Any) -> str:
    """JSON text the way LLaMA-Factory writes it (``json.dumps(..., ensure_ascii=False)``).

    Every ``function_call`` value and ``tools`` string of the LLaMA-Factory glaive demo is exactly
    this serialisation of its parsed value, so encoders that write it reproduce such data.
    """
    return json.dumps(value, ensure_ascii=False)


def parse_calls(value: str) -> tuple[list[tuple[str, str | None]], bool]:
    """``(name, arguments text)`` of each call in a function_call value ([] when it is not calls),
    and whether the value was a list (parallel calls)."""
    try:
        parsed = orjson.loads(value)
    except orjson.JSONDecodeError:
        return [], False
    is_list = type(parsed) is list
    out: list[tuple[str, str | None]] = []
    for call in parsed if is_list else [parsed]:
        if type(call) is not dict or type(call.get("name")) is not str:
            return [], False
        args = call.get("arguments")
        out.append((call["name"], args if type(args) is str or args is None else b.dumps(args)))
    return out, is_list


def _add_calls(cols: b.ItemCols, row: list[Any], value: Any, has_content: bool) -> None:
    """Close a function_call turn: the first call's views on ``row``, one item per further call."""
    calls, is_list = parse_calls(value) if type(value) is str else ([], False)
    if calls:
        row[I_NAME], row[I_ARGUMENTS] = calls[0]
        if is_list:
            row[I_PART] = 0
    b.close_item(cols, row, has_content, False)
    for j, (name, args) in enumerate(calls[1:], 1):
        call = [SECTION, row[1], j, "function_call", *OPEN_TAIL]
        call[I_NATIVE], call[I_ROLE], call[I_NAME], call[I_ARGUMENTS] = FUNCTION_TAG, row[I_ROLE], name, args
        b.close_item(cols, call, False, False)


def decode_turn(cols: b.ItemCols, turn: Any, group: int, path: str) -> None:
    """Append one turn (and, for parallel calls, one item per further call) to ``cols``."""
    if type(turn) is not dict:
        raise not_object(path, turn)
    tag = turn.get("from")
    if type(tag) is not str:
        raise RecordError(path, "turn without a string 'from'")
    kind, role = KINDS.get(tag, ("message", tag))
    row = [SECTION, group, None, kind, *OPEN_TAIL]
    row[I_NATIVE], row[I_ROLE] = tag, role
    value: Any = ...
    has_content = False
    for k, v in turn.items():
        if k == "from":
            continue
        if k == "value" and (type(v) is str or v is None):
            has_content = add_content(cols.content, row, v, f"{path}.value")
            value = v
        else:  # includes a value of another JSON type, kept verbatim
            b.keep(row, k, v)
    if row[I_FORM] is None:
        row[I_FORM] = FORM_ABSENT
    if kind == "function_call":
        _add_calls(cols, row, value, has_content)
    else:
        b.close_item(cols, row, has_content, False)


def _is_json_text(value: Any) -> bool:
    if type(value) is not str:
        return False
    try:
        orjson.loads(value)
    except orjson.JSONDecodeError:
        return False
    return True


_HANDLED = frozenset(("conversations",))
_HANDLED_SYSTEM = frozenset(("conversations", "system"))


def _walk(tb: b.TableBuilder, rec: dict[str, Any]) -> RowEnd:
    """A ShareGPT row: a string (or null) ``system`` is its instructions; a ``tools`` that is not JSON
    text goes to the end of extra_json (the tools column holds JSON text only)."""
    system = rec.get("system", ...)
    if not add_instructions(tb, system):
        tb.close_instructions(FORM_ABSENT)  # not a string or null: stays verbatim in extra_json
    handled = _HANDLED_SYSTEM if system is None or type(system) is str else _HANDLED
    cols = tb.items
    for i, turn in enumerate(list_at(rec, "conversations")):
        decode_turn(cols, turn, i, f"$.conversations[{i}]")
    tools = rec.get("tools", ...)
    if _is_json_text(tools):
        return {**rec, "tools": orjson.Fragment(tools)}, handled, "request", FORM_PARTS, None
    if tools is not ... and tools is not None:
        return rec, handled | {"tools"}, "request", FORM_PARTS, {"tools": tools}
    return rec, handled, "request", FORM_PARTS, None


decode = make_decode(NAME, _walk)


def _top(view: ConversationView, r: int, d: dict[str, Any]) -> Any:
    """``view.top`` with ``tools`` written back as the string it was."""
    if view.model[r] is not None:
        d["model"] = view.model[r]
    if view.tools[r] is not None:
        d["tools"] = view.tools[r].decode()
    if view.tool_choice[r] is not None:
        d["tool_choice"] = orjson.Fragment(view.tool_choice[r])
    for name in view.nulls[r] or ():
        d[name] = None
    return splice(d, view.extra[r])


def encode(view: ConversationView, r: int) -> Any:
    """Rebuild conversation ``r`` as the exact ShareGPT row it was decoded from."""
    v = view.items
    d: dict[str, Any] = {}
    system = view.instructions_value(r)
    if system is not ...:
        d["system"] = system
    turns: list[Any] = []
    i, end = view.items_off[r], view.items_off[r + 1]
    while i < end:
        head = i
        i += 1
        while i < end and v.group[i] == v.group[head]:
            i += 1  # the further calls of a parallel function_call turn: views of its value
        turn: dict[str, Any] = {"from": v.native_type[head]}
        value = v.content_value(head)
        if value is not ...:
            turn["value"] = value
        turns.append(v.finish(turn, head))
    d["conversations"] = turns
    return _top(view, r, d)


__all__ = [
    "KINDS",
    "NAME",
    "TAGS",
    "decode",
    "dump_value",
    "encode",
    "llamafactory_problems",
    "parse_calls",
    "tag_for",
]
