"""OpenAI Responses: request bodies (``input``, ``instructions``) and Response objects (``output``).

Every item maps to one canonical item. Modelled string keys go to their columns; ``content`` (or
``output`` of tool outputs) and a reasoning ``summary`` become block lists; everything else -- hosted
tool payloads, ``caller``, ``created_by``, unknown item types and keys -- stays verbatim in
``extra_json``. The item's ``type`` key is kept as ``native_type`` so an EasyInputMessage without
``type`` comes back without it.
"""

from __future__ import annotations

from typing import Any

from pipeline.formats._build import Item, ItemCols, TableBuilder, append_item
from pipeline.formats._common import ConversationView, RecordError, add_block, add_content, json_type
from pipeline.formats._record import add_top_level
from pipeline.schema import FORM_ABSENT, FORM_NULL, FORM_PARTS, FORM_STRING

NAME = "responses"

# Item keys with string values that have their own column.
STRING_FIELDS = (
    "id",
    "call_id",
    "role",
    "name",
    "namespace",
    "arguments",
    "input",
    "status",
    "phase",
    "encrypted_content",
)
_STRING_FIELDS = frozenset(STRING_FIELDS)
# Where an item kind keeps its string-or-parts payload.
PAYLOAD_KEY = {
    "message": "content",
    "reasoning": "content",
    "function_call_output": "output",
    "custom_tool_call_output": "output",
}
# Tool outputs in the wild hold objects too (Codex); keep them verbatim rather than reject.
_LENIENT_PAYLOAD = frozenset(("function_call_output", "custom_tool_call_output"))

_REQUEST_KEYS = frozenset(("input", "instructions"))
_RESPONSE_KEYS = frozenset(("output", "instructions"))


def is_response(rec: dict[str, Any]) -> bool:
    """A Response object (``output``) rather than a request body (``input``)."""
    return "output" in rec and "input" not in rec


def decode_item(cols: ItemCols, item: Any, section: str, index: int, path: str) -> None:
    """Append one Responses item to ``cols``."""
    if type(item) is not dict:
        raise RecordError(path, f"expected object, got {json_type(item)}")
    native = item.get("type")
    if type(native) is str:
        kind = native
    elif "role" in item:
        kind = "message"
    elif native is None and "id" in item:
        kind = "item_reference"
    else:
        raise RecordError(path, "item has neither 'type' nor 'role'")
    if kind == "message" and type(item.get("role")) is not str:
        raise RecordError(path, "message without role")
    it = Item(section, index, None, kind)
    payload_key = PAYLOAD_KEY.get(kind)
    has_content = has_summary = False
    for k, v in item.items():
        if k == "type":
            if type(v) is str:
                it.native_type = v
            elif v is None:
                it.null("native_type")
            else:
                it.keep(k, v)
        elif k in _STRING_FIELDS:
            if type(v) is str:
                setattr(it, k, v)
            elif v is None:
                it.null(k)
            else:
                it.keep(k, v)
        elif k == payload_key:
            lenient = kind in _LENIENT_PAYLOAD
            if lenient and type(v) not in (str, list) and v is not None:
                it.keep(k, v)
                it.content_form = FORM_ABSENT
            else:
                has_content = add_content(cols.content, it, v, f"{path}.{k}")
        elif k == "summary" and kind == "reasoning" and (type(v) is list or v is None):
            if v is None:
                it.null("summary")
            else:
                has_summary = True
                for j, part in enumerate(v):
                    add_block(cols.summary, part, f"{path}.summary[{j}]")
        else:
            it.keep(k, v)
    if payload_key is not None and it.content_form is None:
        it.content_form = FORM_ABSENT
    append_item(cols, it, has_content, has_summary)


def decode(
    tb: TableBuilder,
    rec: dict[str, Any],
    *,
    conversation_id: str,
    source_file: str | None = None,
    source_line: int | None = None,
) -> None:
    """Append one Responses request body or Response object to ``tb`` (raises :class:`RecordError`)."""
    response = is_response(rec)
    key = "output" if response else "input"
    section = key
    cols = tb.items
    instr = rec.get("instructions", ...)
    if instr is ...:
        tb.close_instructions(FORM_ABSENT)
    elif instr is None:
        tb.close_instructions(FORM_NULL)
    elif type(instr) is str:
        tb.instr.add_text(instr)
        tb.close_instructions(FORM_STRING)
    elif type(instr) is list:
        tb.close_instructions("items")  # the items themselves go to the items column
        for i, item in enumerate(instr):
            decode_item(cols, item, "instructions", i, f"$.instructions[{i}]")
    else:
        raise RecordError("$.instructions", f"expected string, array or null, got {json_type(instr)}")

    value = rec.get(key, ...)
    if value is ...:
        if not response:
            raise RecordError("$", "request body without 'input'")
        items_form = FORM_ABSENT
    elif type(value) is str:
        # String input is shorthand for one user message; remember the shorthand.
        items_form = FORM_STRING
        it = Item(section, 0, None, "message")
        it.role = "user"
        it.content_form = FORM_STRING
        cols.content.add_text(value)
        append_item(cols, it, True, False)
    elif type(value) is list:
        items_form = FORM_PARTS
        for i, item in enumerate(value):
            decode_item(cols, item, section, i, f"$.{key}[{i}]")
    elif value is None:
        items_form = FORM_NULL
    else:
        raise RecordError(f"$.{key}", f"expected string or array, got {json_type(value)}")
    add_top_level(
        tb,
        rec,
        _RESPONSE_KEYS if response else _REQUEST_KEYS,
        fmt=NAME,
        kind="response" if response else "request",
        items_form=items_form,
        conversation_id=conversation_id,
        source_file=source_file,
        source_line=source_line,
    )


def encode_item(v: Any, i: int) -> Any:
    """Rebuild item ``i`` of an :class:`~pipeline.formats._common.ItemView` as a Responses item."""
    d: dict[str, Any] = {}
    native = v.native_type[i]
    if native is not None:
        d["type"] = native
    for key, col in v.responses_columns:
        x = col[i]
        if x is not None:
            d[key] = x
    nulls = v.nulls[i]
    if nulls:
        for name in nulls:
            d["type" if name == "native_type" else name] = None
    payload_key = PAYLOAD_KEY.get(v.type[i])
    if payload_key is not None:
        value = v.content_value(i)
        if value is not ...:
            d[payload_key] = value
    if v.type[i] == "reasoning":
        summary = v.summary_value(i)
        if summary is not ... and summary is not None:
            d["summary"] = summary
    return v.finish(d, i)


def encode(view: ConversationView, r: int) -> dict[str, Any]:
    """Rebuild conversation ``r`` as a Responses request body or Response object."""
    v = view.items
    if not hasattr(v, "responses_columns"):
        v.responses_columns = [(f, getattr(v, f)) for f in STRING_FIELDS]
    start, end = view.items_off[r], view.items_off[r + 1]
    response = view.record_kind[r] == "response"
    key = "output" if response else "input"
    d: dict[str, Any] = {}
    instr = view.instructions_value(r)
    if view.instr_form[r] == "items":
        d["instructions"] = [encode_item(v, i) for i in range(start, end) if v.section[i] == "instructions"]
    elif instr is not ...:
        d["instructions"] = instr
    form = view.items_form[r]
    if form == FORM_STRING:
        i = next(i for i in range(start, end) if v.section[i] == key)
        d[key] = v.content.text[v.content_off[i]]
    elif form == FORM_PARTS:
        d[key] = [encode_item(v, i) for i in range(start, end) if v.section[i] == key]
    elif form == FORM_NULL:
        d[key] = None
    return view.top(r, d)
