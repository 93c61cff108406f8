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

from pipeline.errors import a_or_an
from pipeline.formats import _build as b
from pipeline.formats._build import I_ARGUMENTS, I_CALL_ID, I_INPUT, I_NAME, I_NATIVE, I_ROLE, OPEN_TAIL
from pipeline.formats._common import (
    ConversationView,
    ItemView,
    RecordError,
    add_chat_message,
    check_tools,
    got,
    list_at,
    not_object,
    require,
    splice,
)
from pipeline.formats._record import RowEnd, make_decode
from pipeline.schema import FORM_ABSENT, FORM_PARTS

NAME = "chat"
_REQUEST_KEYS = frozenset(("messages",))
_RESPONSE_KEYS = frozenset(("choices",))
_CALL_KINDS = frozenset(("function_call", "custom_tool_call"))
# The roles of ChatCompletionMessageParam (the SDK's request message union); a completion's message
# is an assistant message of the same shape.
ROLES = ("system", "developer", "user", "assistant", "tool", "function")
_ROLES_TEXT = ", ".join(repr(r) for r in ROLES)


# The image ``detail`` values Chat accepts (openai ChatCompletionContentPartImageParam.ImageURL).
IMAGE_DETAILS = ("auto", "low", "high", "original")


def is_response(rec: dict[str, Any]) -> bool:
    return "choices" in rec and "messages" not in rec


def _decode_tool_call(
    cols: b.ItemCols, tc: Any, role: str, section: str, group: int, j: int, path: str
) -> None:
    if type(tc) is not dict:
        raise not_object(path, tc)
    native = tc.get("type")
    if native not in ("function", "custom"):  # required: the way back would write one
        what = repr(native) if type(native) is str else got(tc, "type")
        raise RecordError(f"{path}.type", f"expected 'function' or 'custom', got {what}")
    custom = native == "custom"
    if custom:
        sub_key, value_key, value_slot = "custom", "input", I_INPUT
        row = [section, group, j, "custom_tool_call", *OPEN_TAIL]
    else:
        sub_key, value_key, value_slot = "function", "arguments", I_ARGUMENTS
        row = [section, group, j, "function_call", *OPEN_TAIL]
    row[I_ROLE] = role  # the role of the message it came from, as for Anthropic blocks
    for k, v in tc.items():
        if k == "id":
            b.set_str(row, I_CALL_ID, k, v)
        elif k == "type":
            b.set_str(row, I_NATIVE, k, v)
        elif k == sub_key:
            if type(v) is not dict:
                raise not_object(f"{path}.{k}", v)
            sub_extra: dict[str, Any] = {}
            for sk, sv in v.items():
                if sk == "name" and (type(sv) is str or sv is None):
                    b.set_str(row, I_NAME, sk, sv)
                elif sk == value_key and (type(sv) is str or sv is None):
                    b.set_str(row, value_slot, sk, sv)
                else:
                    sub_extra[sk] = sv
            if sub_extra:
                b.keep(row, sub_key, sub_extra)
        else:
            b.keep(row, k, v)
    if sub_key not in tc:
        raise RecordError(path, f"tool call without '{sub_key}'")
    for key in ("name", value_key):  # both required by the API; a missing one has no value to write back
        require(tc[sub_key], key, f"{path}.{sub_key}")
    b.close_item(cols, row, False, False)


# A Chat content part's type -> the key it requires (and that key's JSON type).
_PARTS: dict[str, tuple[str, type]] = {
    # not "text": logs in the wild hold {"type": "text", "value": ...} (reported on conversion)
    "refusal": ("refusal", str),
    "image_url": ("image_url", dict),
    "input_audio": ("input_audio", dict),
    "file": ("file", dict),
}


# The known part types each role's message takes (ChatCompletion*MessageParam content parts).
_ROLE_PARTS = {
    "user": frozenset(("text", "image_url", "input_audio", "file")),
    "assistant": frozenset(("text", "refusal")),
}
_KNOWN_PARTS = frozenset(("text", *_PARTS))
_PARTS_TEXT = ", ".join(repr(t) for t in ("text", *_PARTS))
# Responses' part types: the way back from Responses / Anthropic writes them as Chat "text" /
# "image_url" parts. Other unknown types (logs hold "reasoning" parts) stay, conversions report them.
FOREIGN_TEXT = frozenset(("input_text", "output_text", "input_image"))


def _check_part(part: Any, role: str, path: str) -> None:
    """Reject a content part the API rejects that another format would rewrite: no string type, a
    known type the role's message does not take (an image in a system message: the way back drops
    it), another format's text part (input_text), or a known type without its payload (an image
    without its URL). Other unknown types are reported on conversion."""
    if type(part) is not dict:
        raise not_object(path, part)
    require(part, "type", path)
    ptype = part["type"]
    if ptype in FOREIGN_TEXT:
        raise RecordError(f"{path}.type", f"{ptype!r} is not a Chat part type (expected {_PARTS_TEXT})")
    if ptype in _KNOWN_PARTS and ptype not in _ROLE_PARTS.get(role, ("text",)):
        raise RecordError(f"{path}.type", f"{a_or_an(repr(role))} message does not take {ptype!r} parts")
    need = _PARTS.get(ptype)
    if need is not None:
        require(part, need[0], path, need[1])
        if part["type"] == "image_url":
            require(part["image_url"], "url", f"{path}.image_url")
            if "detail" in part["image_url"]:  # null is kept (logs hold it); Responses gets 'auto'
                require(part["image_url"], "detail", f"{path}.image_url", nullable=True)
                detail = part["image_url"]["detail"]
                if detail is not None and detail not in IMAGE_DETAILS:  # the API takes only these
                    raise RecordError(
                        f"{path}.image_url.detail", f"expected one of {IMAGE_DETAILS}, got {detail!r}"
                    )


def _check_tools(rec: dict[str, Any]) -> None:
    """A function or custom tool (and a tool_choice naming one) needs its ``function`` /
    ``custom`` object and a string name."""

    def name_of(tool: dict[str, Any], path: str, choice: bool = False) -> Any:
        kind = tool.get("type")
        if kind in ("function", "custom"):
            require(tool, kind, path, dict)
            spec = tool[kind]
            if kind == "custom" and not choice and "format" in spec:  # the way back rebuilds it
                require(spec, "format", f"{path}.custom", dict)
                if spec["format"].get("type") == "grammar":
                    require(spec["format"], "grammar", f"{path}.custom.format", dict)
            return spec, f"{path}.{kind}"
        return None

    check_tools(rec, name_of)


def decode_message(
    cols: b.ItemCols, msg: Any, section: str, group: int, path: str, wrapper: str | None
) -> None:
    """Append one Chat message (head item plus its tool calls) to ``cols``.

    A role the API does not have, and tool calls on a message that is not the assistant's, reject
    the record: no other format could carry them back unchanged."""
    role, tool_calls = add_chat_message(cols, msg, section, group, path, wrapper, False)
    if role not in ROLES:
        raise RecordError(f"{path}.role", f"expected one of {_ROLES_TEXT}, got {role!r}")
    if "content" not in msg and role != "assistant":  # only the assistant's content is optional
        raise RecordError(f"{path}.content", "expected string or array, got nothing")
    if role == "function":
        require(msg, "name", path)
    if "refusal" in msg:  # only ChatCompletionAssistantMessageParam has it: a string or null
        if role != "assistant":
            raise RecordError(f"{path}.refusal", f"only an assistant message has a refusal, not {role!r}")
        require(msg, "refusal", path, nullable=True)
    content = msg.get("content")
    if type(content) is list:
        for j, part in enumerate(content):
            _check_part(part, role, f"{path}.content[{j}]")
    if tool_calls is not None:
        if role != "assistant":
            raise RecordError(f"{path}.tool_calls", f"only an assistant message has tool calls, not {role!r}")
        for j, tc in enumerate(tool_calls):
            _decode_tool_call(cols, tc, role, section, group, j, f"{path}.tool_calls[{j}]")


def _walk(tb: b.TableBuilder, rec: dict[str, Any]) -> RowEnd:
    """A request body (``messages``) or a completion object (``choices``, each choice's other keys
    on its message's wrapper_json)."""
    response = "choices" in rec and "messages" not in rec
    key = "choices" if response else "messages"
    _check_tools(rec)
    tb.close_instructions(FORM_ABSENT)
    value = list_at(rec, key)
    cols = tb.items
    if response:
        for i, entry in enumerate(value):
            if type(entry) is not dict:
                raise not_object(f"$.choices[{i}]", entry)
            rest = {k: v for k, v in entry.items() if k != "message"}
            decode_message(cols, entry.get("message"), key, i, f"$.choices[{i}].message", b.dumps(rest))
        return rec, _RESPONSE_KEYS, "response", FORM_PARTS, None
    for i, entry in enumerate(value):
        decode_message(cols, entry, key, i, f"$.messages[{i}]", None)
    return rec, _REQUEST_KEYS, "request", FORM_PARTS, None


decode = make_decode(NAME, _walk)


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
