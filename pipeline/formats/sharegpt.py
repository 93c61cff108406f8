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

from pipeline.formats._build import Item, ItemCols, TableBuilder, append_item, dumps
from pipeline.formats._common import ConversationView, RecordError, add_content, json_type, splice
from pipeline.formats._record import add_top_level
from pipeline.losses import pointer
from pipeline.schema import FORM_ABSENT, FORM_NULL, FORM_PARTS, FORM_STRING

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
        out.append((call["name"], args if type(args) is str or args is None else dumps(args).decode()))
    return out, is_list


def _add_calls(cols: ItemCols, it: Item, value: Any, has_content: bool) -> None:
    """Close a function_call turn: the first call's views on ``it``, one item per further call."""
    calls, is_list = parse_calls(value) if type(value) is str else ([], False)
    if calls:
        it.name, it.arguments = calls[0]
        if is_list:
            it.part = 0
    append_item(cols, it, has_content, False)
    for j, (name, args) in enumerate(calls[1:], 1):
        extra = Item(SECTION, it.group, j, "function_call")
        extra.native_type, extra.role, extra.name, extra.arguments = FUNCTION_TAG, it.role, name, args
        append_item(cols, extra, False, False)


def decode_turn(cols: ItemCols, turn: Any, group: int, path: str) -> None:
    """Append one turn (and, for parallel calls, one item per further call) to ``cols``."""
    if type(turn) is not dict:
        raise RecordError(path, f"expected object, got {json_type(turn)}")
    tag = turn.get("from")
    if type(tag) is not str:
        raise RecordError(path, "turn without a string 'from'")
    kind, role = KINDS.get(tag, ("message", tag))
    it = Item(SECTION, group, None, kind)
    it.native_type, it.role = tag, role
    value: Any = ...
    has_content = False
    for k, v in turn.items():
        if k == "from":
            continue
        if k == "value" and (type(v) is str or v is None):
            has_content = add_content(cols.content, it, v, f"{path}.value")
            value = v
        else:  # includes a value of another JSON type, kept verbatim
            it.keep(k, v)
    if it.content_form is None:
        it.content_form = FORM_ABSENT
    if kind == "function_call":
        _add_calls(cols, it, value, has_content)
    else:
        append_item(cols, it, has_content, False)


def _instructions(tb: TableBuilder, system: Any) -> bool:
    """Top-level ``system`` as instructions; False when absent (``...``) or not a string or null
    (then it stays in extra_json)."""
    if type(system) is str:
        tb.instr.add_text(system)
        tb.close_instructions(FORM_STRING)
        return True
    tb.close_instructions(FORM_NULL if system is None else FORM_ABSENT)
    return system is None


def _is_json_text(value: Any) -> bool:
    if type(value) is not str:
        return False
    try:
        orjson.loads(value)
    except orjson.JSONDecodeError:
        return False
    return True


def decode(
    tb: TableBuilder,
    rec: dict[str, Any],
    *,
    conversation_id: str,
    source_file: str | None = None,
    source_line: int | None = None,
) -> None:
    """Append one ShareGPT row to ``tb`` (raises :class:`RecordError`)."""
    handled = {"conversations"}
    if _instructions(tb, rec.get("system", ...)):
        handled.add("system")
    turns = rec.get("conversations", ...)
    if type(turns) is not list:
        got = "nothing" if turns is ... else json_type(turns)
        raise RecordError("$.conversations", f"expected array, got {got}")
    for i, turn in enumerate(turns):
        decode_turn(tb.items, turn, i, f"$.conversations[{i}]")
    tools = rec.get("tools", ...)
    top = rec
    if _is_json_text(tools):
        top = {**rec, "tools": orjson.Fragment(tools)}  # the column holds the string's text itself
    elif tools is not ... and tools is not None:
        handled.add("tools")
    add_top_level(
        tb,
        top,
        frozenset(handled),
        fmt=NAME,
        kind="request",
        items_form=FORM_PARTS,
        conversation_id=conversation_id,
        source_file=source_file,
        source_line=source_line,
    )
    if "tools" in handled:
        _keep_top_level(tb, "tools", tools)


def _keep_top_level(tb: TableBuilder, key: str, value: Any) -> None:
    """Put ``key`` in the row's extra_json (``add_top_level`` files every ``tools`` in its column,
    but a ShareGPT ``tools`` that is not JSON text has no place there). Rare: one parse."""
    extra = orjson.loads(tb.extra[-1]) if tb.extra[-1] is not None else {}
    extra[key] = value
    tb.extra[-1] = dumps(extra)


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
