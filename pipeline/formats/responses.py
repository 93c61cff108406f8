"""OpenAI Responses: request bodies (``input``, ``instructions``) and Response objects (``output``).

Every item maps to one canonical item. Modelled string keys go to their columns; ``content`` (or
``output`` of tool outputs) and a reasoning ``summary`` become block lists; everything else -- hosted
tool payloads, ``caller``, ``created_by``, unknown item types and keys -- stays verbatim in
``extra_json``. The item's ``type`` key is kept as ``native_type`` so an EasyInputMessage without
``type`` comes back without it.
"""

from __future__ import annotations

from typing import Any

from pipeline.errors import a_or_an
from pipeline.formats import _build as b
from pipeline.formats._build import I_FORM, I_NATIVE, I_ROLE, ITEM_ROW, OPEN_TAIL
from pipeline.formats._common import (
    ConversationView,
    RecordError,
    add_blocks,
    add_content,
    add_instructions,
    check_tools,
    got,
    json_type,
    not_object,
    require,
)
from pipeline.formats._record import RowEnd, make_decode
from pipeline.schema import FORM_ABSENT, FORM_NULL, FORM_PARTS, FORM_STRING

NAME = "responses"

# Item keys with string values that have their own column (of the same name).
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
# Item key -> its slot in an item row; the item's own "type" is kept as native_type.
_SLOTS = {"type": I_NATIVE, **{k: ITEM_ROW.index(k) for k in STRING_FIELDS}}
# The string keys of STRING_FIELDS each modelled item type does not have (the SDK's item types):
# such a key belongs to another item type, and it is kept in extra_json like any unknown key, so
# a target that cannot carry it reports it. In its column an encoder would read it as the item's
# own (a call's "input" as a custom call's, a message's "call_id" as a pairing) or skip it unsaid.
FOREIGN_KEYS = {
    "message": frozenset(("call_id", "name", "namespace", "arguments", "input", "encrypted_content")),
    "function_call": frozenset(("role", "input", "phase", "encrypted_content")),
    "function_call_output": frozenset(("role", "arguments", "input", "phase", "encrypted_content")),
    "custom_tool_call": frozenset(("role", "arguments", "phase", "encrypted_content")),
    "custom_tool_call_output": frozenset(("role", "arguments", "input", "phase", "encrypted_content")),
    "reasoning": frozenset(("call_id", "role", "name", "namespace", "arguments", "input", "phase")),
}
# Per item type, the keys that go to a column (other item types: every STRING_FIELDS key).
_KIND_SLOTS = {
    kind: {k: v for k, v in _SLOTS.items() if k not in foreign} for kind, foreign in FOREIGN_KEYS.items()
}
# Where an item kind keeps its string-or-parts payload.
PAYLOAD_KEY = {
    "message": "content",
    "reasoning": "content",
    "function_call_output": "output",
    "custom_tool_call_output": "output",
}
# Tool outputs in the wild hold objects too (Codex); keep them verbatim rather than reject.
_LENIENT_PAYLOAD = frozenset(("function_call_output", "custom_tool_call_output"))
# Content only a model writes (in an assistant message).
_OUTPUT_PARTS = frozenset(("output_text", "refusal"))

# The roles of a message item (EasyInputMessage, input Message, ResponseOutputMessage).
ROLES = ("user", "assistant", "system", "developer")
_ROLES_TEXT = ", ".join(repr(r) for r in ROLES)

# String keys the API requires on the items every target models (call_id: a missing one is
# generated and reported, see docs/conversion.md#calls-without-ids).
_REQUIRED = {
    "function_call": ("name", "arguments"),
    "custom_tool_call": ("name", "input"),
}

_REQUEST_KEYS = frozenset(("input", "instructions"))
_RESPONSE_KEYS = frozenset(("output", "instructions"))


def is_response(rec: dict[str, Any]) -> bool:
    """A Response object (``output``) rather than a request body (``input``): one that says so
    (``"object": "response"``) is one whatever else it holds (recorded responses may carry
    ``input: []``, which stays as an unmodelled key)."""
    return "output" in rec and ("input" not in rec or rec.get("object") == "response")


def decode_item(cols: b.ItemCols, item: Any, section: str, index: int, path: str) -> None:
    """Append one Responses item to ``cols``; ``path`` locates it for errors."""
    if type(item) is not dict:
        raise not_object(path, item)
    native = item.get("type")
    if type(native) is str:
        kind = native
    elif "role" in item:
        kind = "message"
    elif native is None and "id" in item:
        kind = "item_reference"
    else:
        raise RecordError(path, "item has neither 'type' nor 'role'")
    if kind == "message":
        role = item.get("role")
        if type(role) is not str:
            raise RecordError(path, "message without role")
        if role not in ROLES:
            raise RecordError(f"{path}.role", f"expected one of {_ROLES_TEXT}, got {role!r}")
        content = item.get("content")
        # required; a user / system / developer message without it could not come back as it was
        # (logs hold assistant messages without content: they come back as they were)
        if type(content) not in (str, list) and not (role == "assistant" and "content" not in item):
            raise RecordError(f"{path}.content", f"expected string or array, got {got(item, 'content')}")
        if type(content) is list:
            for j, part in enumerate(content):
                _check_part(part, role, f"{path}.content[{j}]")
    elif kind in _REQUIRED:
        for key in _REQUIRED[kind]:
            require(item, key, path, nullable=True)
    if "type" in item and type(native) is not str and native is not None:
        raise RecordError(f"{path}.type", f"expected string, got {json_type(native)}")
    row = [section, index, None, kind, *OPEN_TAIL]
    payload_key = PAYLOAD_KEY.get(kind)
    has_content = has_summary = False
    slots = _KIND_SLOTS.get(kind, _SLOTS)
    for k, v in item.items():
        slot = slots.get(k)
        if slot is not None:
            if type(v) is str:
                row[slot] = v
            elif v is None:
                b.null(row, ITEM_ROW[slot])
            else:
                b.keep(row, k, v)
        elif k == payload_key:
            if type(v) is str:  # the common case, without a call
                row[I_FORM] = FORM_STRING
                cols.content.rows.append((None, v, None, None, None, None, None, None))
                has_content = True
            elif kind in _LENIENT_PAYLOAD and type(v) is list and not all(_typed(p) for p in v):
                j = next(j for j, p in enumerate(v) if not _typed(p))
                if type(v[j]) is not dict:
                    raise not_object(f"{path}.{k}[{j}]", v[j])
                raise RecordError(f"{path}.{k}[{j}].type", f"expected string, got {got(v[j], 'type')}")
            elif (
                kind in _LENIENT_PAYLOAD and type(v) is list and any(p["type"] in _NOT_TOOL_PARTS for p in v)
            ):
                # a tool output's content is input content (the SDK's ...OutputContentList): the way
                # back writes an output_text / refusal part (or Chat's text / image_url) as input_*
                j = next(j for j, p in enumerate(v) if p["type"] in _NOT_TOOL_PARTS)
                raise RecordError(
                    f"{path}.{k}[{j}].type", f"a tool output does not take {v[j]['type']!r} parts"
                )
            elif kind in _LENIENT_PAYLOAD and type(v) is not list and v is not None:
                b.keep(row, k, v)
                row[I_FORM] = FORM_ABSENT
            else:
                has_content = add_content(cols.content, row, v, f"{path}.{k}")
        elif k == "summary" and kind == "reasoning" and (type(v) is list or v is None):
            if v is None:
                b.null(row, "summary")
            else:
                has_summary = True
                add_blocks(cols.summary, v, f"{path}.summary")
        else:
            b.keep(row, k, v)
    if payload_key is not None and row[I_FORM] is None:
        row[I_FORM] = FORM_ABSENT
    b.close_item(cols, row, has_content, has_summary)


_FOREIGN_PARTS = frozenset(("text", "image_url"))
_NOT_TOOL_PARTS = _OUTPUT_PARTS | _FOREIGN_PARTS


def _typed(part: Any) -> bool:
    """A content part with a string type (a tool output's parts need one, as message parts do)."""
    return type(part) is dict and type(part.get("type")) is str


def _check_part(part: Any, role: str, path: str) -> None:
    """A string type; output content (output_text, refusal) only in an assistant message: the
    other roles' input content has no such part, and a target would write it back as input text.
    A refusal needs its string."""
    if type(part) is not dict:
        raise not_object(path, part)
    require(part, "type", path)  # every content part has one; the way back would write another
    ptype = part["type"]
    if ptype in _FOREIGN_PARTS:  # Chat's parts: the way back writes input_text / input_image
        raise RecordError(f"{path}.type", f"{ptype!r} is not a Responses content type")
    if ptype in ("output_text", "refusal"):
        if role != "assistant":
            raise RecordError(f"{path}.type", f"{a_or_an(repr(role))} message does not take {ptype!r} parts")
        if ptype == "refusal":
            require(part, "refusal", path)


def _tool_name(tool: dict[str, Any], path: str, choice: bool = False) -> Any:
    """Function and custom tools (and a tool_choice naming one) hold their name; hosted tools
    (web_search, ...) have none."""
    require(tool, "type", path)
    if tool["type"] == "custom" and not choice and "format" in tool:  # the way back rebuilds it
        require(tool, "format", path, dict)
    return (tool, path) if tool["type"] in ("function", "custom") else None


def _walk(tb: b.TableBuilder, rec: dict[str, Any]) -> RowEnd:
    """A request body (``input``) or a Response object (``output``); ``instructions`` as a string,
    or as items that go to the items column (form ``items``)."""
    response = is_response(rec)
    key = "output" if response else "input"
    cols = tb.items
    check_tools(rec, _tool_name)
    instr = rec.get("instructions", ...)
    if not add_instructions(tb, instr):
        if type(instr) is not list:
            raise RecordError("$.instructions", f"expected string, array or null, got {json_type(instr)}")
        tb.close_instructions("items")  # the items themselves go to the items column
        for i, item in enumerate(instr):
            decode_item(cols, item, "instructions", i, f"$.instructions[{i}]")

    value = rec.get(key, ...)
    if value is ...:
        if not response:
            raise RecordError("$", "request body without 'input'")
        items_form = FORM_ABSENT
    elif type(value) is str:
        # String input is shorthand for one user message; remember the shorthand.
        items_form = FORM_STRING
        row = [key, 0, None, "message", *OPEN_TAIL]
        row[I_ROLE] = "user"
        row[I_FORM] = FORM_STRING
        cols.content.add_text(value)
        b.close_item(cols, row, True, False)
    elif type(value) is list:
        items_form = FORM_PARTS
        for i, item in enumerate(value):
            decode_item(cols, item, key, i, f"$.{key}[{i}]")
    elif value is None and response:
        items_form = FORM_NULL
    elif value is None:  # a request's input is a string or a list; no target could write null back
        raise RecordError(f"$.{key}", "expected string or array, got null")
    else:
        raise RecordError(f"$.{key}", f"expected string or array, got {json_type(value)}")
    if response:
        return rec, _RESPONSE_KEYS, "response", items_form, None
    return rec, _REQUEST_KEYS, "request", items_form, None


decode = make_decode(NAME, _walk)


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
