"""Canonical rows of any source -> ShareGPT rows as LLaMA-Factory reads them, every loss reported.

* turns: ``user`` -> ``human``, ``assistant`` -> ``gpt``, ``system`` -> ``system``
  (``developer`` too, reported as ``developer_role``); any other role is written as its own tag.
  Content is flattened to one string exactly as for HF (:func:`pipeline.encoders.to_hf.flatten`).
* top-level ``system``: the instructions; with none, a leading system message (LLaMA-Factory reads
  a first ``system`` turn and the ``system`` column the same way).
* tool calls: a run of consecutive calls (of one message) becomes one ``function_call`` turn whose
  value is ``dump_value({"name", "arguments": <object>})``, or a list of them for parallel calls,
  as LLaMA-Factory's own converter writes them. Assistant text before the calls stays its own
  ``gpt`` turn; an assistant message with no text is only its ``function_call`` turn.
* tool outputs: one ``observation`` turn each, in the order of their calls (ShareGPT pairs by
  position; a moved output is ``tool_output_order``). Call ids have no slot (``item_id``); nor has
  an output name that differs from its call's (``name``).
* ``tools``: ``dump_value`` of the bare function schemas (the glaive demo's form); ``tool_choice``
  and non-function tools are ``tools`` losses.
* reasoning, compaction, hosted tools, request parameters: as for HF.

Turn order is kept even when LLaMA-Factory's alternation rule is broken (two user messages in a
row, text before a call, several outputs for parallel calls); :func:`pipeline.formats.sharegpt.
llamafactory_problems` tells which rows LLaMA-Factory would skip.
"""

from __future__ import annotations

from typing import Any

from pipeline.encoders._context import CALLS, OUTPUTS, Ctx, item_ptr
from pipeline.encoders.call_ids import pair_outputs, report_way_back
from pipeline.encoders.to_hf import (
    MESSAGE_KEYS,
    TOP_KEYS,
    arguments_object,
    call_id_ptr,
    call_type_kept,
    content_ptr,
    flatten,
    function_schemas,
    instructions_key,
    instructions_text,
    item_fields,
    lose_item,
    message_ptr,
    output_kind,
    role_of,
    tools_kept,
    top_level,
)
from pipeline.formats.sharegpt import FUNCTION_TAG, OBSERVATION_TAG, dump_value, tag_for
from pipeline.schema import FORM_ABSENT, FORM_NULL, FORM_PARTS, FORM_STRING

TARGET = "ShareGPT"
_NO_IDS = "ShareGPT has no call ids; outputs pair with calls by position"
# The content form of a tool-call-only assistant message that the way back rebuilds by itself.
_CALL_ONLY_FORM = {"chat": FORM_NULL, "hf": FORM_ABSENT}


def _lose_name(ctx: Ctx, i: int) -> None:
    if ctx.v.name[i] is not None:
        ctx.lose(item_ptr(ctx, i) + "/name", "name", "ShareGPT turns have no name")


def _leading_system(ctx: Ctx) -> bool:
    """Whether the first item is a system message with text (the system prompt, in ShareGPT)."""
    v, i = ctx.v, ctx.start
    return (
        i < ctx.end
        and v.type[i] == "message"
        and v.role[i] == "system"
        and v.content_form[i] in (FORM_STRING, FORM_PARTS)
    )


def _system(ctx: Ctx, body: dict[str, Any]) -> int:
    """Set the top-level ``system``; returns the first item still to convert."""
    system = instructions_text(ctx, TARGET)
    first = ctx.start
    if system is ... and _leading_system(ctx):
        system = flatten(ctx, first, TARGET)
        _lose_name(ctx, first)
        item_fields(ctx, first, TARGET)
        if ctx.source not in ("chat", "hf"):
            detail = "a leading system message became the top-level system prompt"
            ctx.lose(item_ptr(ctx, first), "instruction_position", detail)
            ctx.lose(instructions_key(ctx), "instruction_position", detail)
        first += 1
    if system is None:
        ctx.lose(instructions_key(ctx), "instruction_position", "explicit null instructions dropped")
    elif system is not ...:
        body["system"] = system
    return first


def _message(ctx: Ctx, i: int) -> dict[str, Any] | None:
    """A message turn; None for an assistant message whose function_call turn is all of it."""
    v = ctx.v
    role = role_of(ctx, i)
    _lose_name(ctx, i)
    content = flatten(ctx, i, TARGET)
    calls_follow = i + 1 < ctx.end and v.type[i + 1] in CALLS
    if role == "assistant" and calls_follow and content in (None, ..., ""):
        if v.content_form[i] != _CALL_ONLY_FORM.get(ctx.source):
            ctx.lose(content_ptr(ctx, i), "content_form", "a tool-call-only message keeps no text turn")
        item_fields(ctx, i, TARGET)
        return None
    if not isinstance(content, str):
        ctx.lose(content_ptr(ctx, i), "content_form", "null or absent content written as ''")
        content = ""
    turn: dict[str, Any] = {"from": tag_for("message", role), "value": content}
    turn.update(item_fields(ctx, i, TARGET, MESSAGE_KEYS))
    return turn


def _call_run_end(ctx: Ctx, i: int) -> int:
    """End of the run of calls starting at ``i``: consecutive, and of one message where the source
    has messages (Responses items have no message to keep apart)."""
    v = ctx.v
    j = i + 1
    while j < ctx.end and v.type[j] in CALLS and (ctx.source == "responses" or v.group[j] == v.group[i]):
        j += 1
    return j


def _calls(ctx: Ctx, start: int, end: int) -> dict[str, Any]:
    v = ctx.v
    objs = []
    for i in range(start, end):
        call_type_kept(ctx, i)
        objs.append({"name": v.name[i] or "", "arguments": arguments_object(ctx, i)})
        if v.call_id[i] is not None:
            ctx.lose(call_id_ptr(ctx, i), "item_id", _NO_IDS)
        item_fields(ctx, i, TARGET)
    return {"from": FUNCTION_TAG, "value": dump_value(objs if len(objs) > 1 else objs[0])}


def _output_run_end(ctx: Ctx, i: int) -> int:
    j = i + 1
    while j < ctx.end and ctx.v.type[j] in OUTPUTS:
        j += 1
    return j


def _observation(ctx: Ctx, i: int, pairs: dict[int, int]) -> dict[str, Any]:
    v = ctx.v
    output_kind(ctx, i)
    content = flatten(ctx, i, TARGET)
    if not isinstance(content, str):
        ctx.lose(content_ptr(ctx, i), "content_form", "null or absent tool output written as ''")
        content = ""
    if v.call_id[i] is not None:
        ctx.lose(call_id_ptr(ctx, i), "item_id", f"'{ctx.wire_key(i, 'call_id')}' dropped: {_NO_IDS}")
    if i not in pairs:
        ctx.lose(
            item_ptr(ctx, i), "orphan_output", "no matching call; ShareGPT pairs it with a call by position"
        )
    if v.name[i] is not None and (i not in pairs or v.name[pairs[i]] != v.name[i]):
        ctx.lose(
            item_ptr(ctx, i) + "/name", "name", "an observation has no name (the call's name is implied)"
        )
    turn: dict[str, Any] = {"from": OBSERVATION_TAG, "value": content}
    turn.update(item_fields(ctx, i, TARGET, MESSAGE_KEYS))
    return turn


def _output_order(ctx: Ctx, start: int, end: int, pairs: dict[int, int]) -> list[int]:
    """A run of outputs in the order of their calls (ShareGPT pairs them by position)."""
    order = sorted(range(start, end), key=lambda i: pairs.get(i, i))
    for pos, i in enumerate(order, start):
        if pos != i:
            ctx.lose(item_ptr(ctx, i), "tool_output_order", "moved to follow the order of its call")
    return order


def _before_calls(ctx: Ctx, i: int, turns: list[dict[str, Any]], origin: list[int]) -> None:
    """The way back puts calls into the assistant message whose text turn precedes them: an empty
    text turn there is dropped (it would vanish into that message), and text of another message
    is a merge."""
    v = ctx.v
    while turns and turns[-1] == {"from": "gpt", "value": ""}:
        turns.pop()
        ctx.lose(item_ptr(ctx, origin.pop()), "empty_text", "an empty assistant turn right before calls")
    if (
        turns
        and turns[-1]["from"] == "gpt"
        and ctx.source != "responses"
        and v.group[origin[-1]] != v.group[i]
    ):
        detail = "calls right after assistant text come back in that text's message"
        ctx.lose(message_ptr(ctx, origin[-1]), "message_merge", detail)
        ctx.lose(message_ptr(ctx, i), "message_merge", detail)


def encode(ctx: Ctx) -> dict[str, Any]:
    """Convert one canonical row to a ShareGPT row."""
    v = ctx.v
    if ctx.source == "responses" and ctx.view.items_form[ctx.r] == FORM_STRING:
        ctx.lose("/input", "content_form", "the string input shorthand becomes a human turn")
    body: dict[str, Any] = {}
    i = _system(ctx, body)
    pairs = pair_outputs(ctx)
    report_way_back(ctx)  # id-less calls come back with ids
    turns: list[dict[str, Any]] = []
    origin: list[int] = []  # the item each turn came from
    while i < ctx.end:
        t = v.type[i]
        if t == "message":
            turn = _message(ctx, i)
            if turn is not None:
                turns.append(turn)
                origin.append(i)
            i += 1
        elif t in CALLS:
            _before_calls(ctx, i, turns, origin)
            j = _call_run_end(ctx, i)
            turns.append(_calls(ctx, i, j))
            origin.append(i)
            i = j
        elif t in OUTPUTS:
            j = _output_run_end(ctx, i)
            order = _output_order(ctx, i, j, pairs)
            turns.extend(_observation(ctx, k, pairs) for k in order)
            origin.extend(order)
            i = j
        else:
            lose_item(ctx, i, TARGET)
            i += 1
    body["conversations"] = turns
    schemas = function_schemas(ctx)
    if schemas is not None:
        body["tools"] = dump_value(schemas)
        tools_kept(ctx, schemas)
    return top_level(ctx, body, TOP_KEYS, TARGET)
