"""Canonical rows of any source -> OpenAI Chat Completions, with every loss reported.

Semantics (fixing the peers' known faults):

* reasoning and consecutive (parallel) calls form one assistant message whose ``tool_calls`` are
  in call order; an assistant message followed by its calls stays one message;
* tool outputs stay in source order, each a ``tool`` message paired by ``tool_call_id``; a call
  without id gets the id :mod:`pipeline.encoders.call_ids` generates for it, an output without one
  the id of the oldest unanswered call before it (both ``generated_id``, the same ids as every
  other target), and an id-less output with no call to answer is dropped (``orphan_output``);
* inline system/developer messages stay in place with their role; top-level instructions become
  a leading ``system`` message (``instruction_position``), and empty instructions none;
* text parts keep their block boundaries (content stays a list when it was one).
"""

from __future__ import annotations

from typing import Any

import orjson

from pipeline.encoders import anthropic_round_trip, from_dataset, to_hf
from pipeline.encoders._context import (
    CACHE_NO_WAY_BACK,
    CALLS,
    CHAT_SERVICE_TIERS,
    OPENAI_SHARED_KEYS,
    OUTPUTS,
    RESPONSES_NESTED_KEYS,
    Ctx,
    anthropic_image_url,
    anthropic_tool_flags,
    cache_breakpoint,
    format_to_chat,
    instruction_items,
    keys_except,
    openai_file,
    openai_top_extra,
    stop_fits,
)
from pipeline.encoders.call_ids import CallIds
from pipeline.errors import a_or_an, quoted
from pipeline.formats.chat import IMAGE_DETAILS
from pipeline.losses import pointer
from pipeline.schema import FORM_ABSENT, FORM_NULL, FORM_PARTS, FORM_STRING

TEXT_TYPES = frozenset(("input_text", "output_text", "text", None))
# The part types Chat can hold, by where they go: a user message takes media, an assistant, system
# or developer message and a tool message do not. Any other part is dropped (``_text_part`` starts
# with this test), so the target rules' repairs (repairs.py) know, ahead of the encoders, a message
# that would be left with no part at all.
_KEPT_ANYWHERE = (*TEXT_TYPES, "refusal", "tool_reference")
KEPT_PARTS = {
    "user": frozenset((*_KEPT_ANYWHERE, "input_image", "image", "input_file", "document", "input_audio")),
    "other": frozenset(_KEPT_ANYWHERE),
}
# Responses top-level request keys that mean the same in Chat.
SAME_KEYS = frozenset(
    ("temperature", "top_p", "parallel_tool_calls", "metadata", "store", "user", "n", "seed",
     *OPENAI_SHARED_KEYS)
)  # fmt: skip
RENAMED_KEYS = {"max_output_tokens": "max_completion_tokens", "max_tokens": "max_completion_tokens"}


def _text_part(ctx: Ctx, i: int, j: int, k: int, allow_media: bool) -> dict[str, Any] | None:
    """One content block as a Chat part, or None (with a loss) when Chat cannot hold it."""
    c = ctx.v.content
    t = c.type[j]
    path = ctx.content_ptr(i, k)
    if t not in KEPT_PARTS["user" if allow_media else "other"]:
        ctx.lose_part(path, t, "Chat here")
        return None
    extra = ctx.block_extra(j)
    cache = cache_breakpoint(ctx, extra)  # Chat's text, image_url and input_audio parts have its slot
    if t in TEXT_TYPES:
        expected = (
            "output_text" if ctx.v.role[i] == "assistant" and ctx.v.type[i] == "message" else "input_text"
        )
        if ctx.source == "responses" and t != expected:
            ctx.lose(path, "content_form", f"{a_or_an(quoted(t))} part comes back as '{expected}'")
        # output_text comes back with "annotations": [], so an empty list is not a loss
        empty_annotations = expected == "output_text" and c.annotations[j] == b"[]"
        ctx.lose_block_keys(
            j, path, {"type", "text", *cache} | ({"annotations"} if empty_annotations else set())
        )
        if cache and expected == "output_text":  # carried: Chat's assistant text part has the slot
            ctx.lose(path + "/prompt_cache_breakpoint", "cache_control", CACHE_NO_WAY_BACK)
        if expected == "output_text" and c.annotations[j] is None and t == "output_text":
            ctx.lose(path + "/annotations", "annotations", "no annotations: [] comes back")
        if c.text[j] is None:
            ctx.lose(path + "/text", "content_form", "a part without text gets ''")
        return {"type": "text", "text": c.text[j] if c.text[j] is not None else "", **cache}
    if t == "refusal":
        ctx.lose_block_keys(j, path, {"type", "refusal"})
        return {"type": "refusal", "refusal": c.text[j] or ""}
    if allow_media and t == "input_image" and isinstance(extra.get("image_url"), str):
        part: dict[str, Any] = {"url": extra["image_url"]}
        detail = extra.get("detail", ...)
        if detail in IMAGE_DETAILS:
            part["detail"] = detail
        elif detail is ...:
            ctx.lose(path + "/detail", "image", "no detail: Responses requires one, 'auto' comes back")
        else:  # Chat rejects any other value (a placeholder, null): the part goes without one
            ctx.lose(path + "/detail", "image", f"detail {detail!r} is not one of Chat's {IMAGE_DETAILS}")
        ctx.lose_block_keys(j, path, {"type", "image_url", "detail", *cache})
        return {"type": "image_url", "image_url": part, **cache}
    if allow_media and t == "image" and isinstance(extra.get("source"), dict):
        url = anthropic_image_url(ctx, extra["source"], path)
        if url is not None:
            ctx.lose_block_keys(j, path, {"type", "source"})
            return {"type": "image_url", "image_url": {"url": url}}
    if allow_media and t in ("input_file", "document") and (file := openai_file(ctx, j, path, "chat")):
        return {"type": "file", "file": file[0], **file[1]}
    if allow_media and t == "input_audio" and isinstance(extra.get("input_audio"), dict):
        ctx.lose_block_keys(j, path, {"type", "input_audio", *cache})  # the same part in both formats
        # carried, but a Responses message has no audio part (the SDK's message content union): the
        # way back drops it
        ctx.lose(path, "audio", "carried as Chat's input_audio part; it has no slot back in Responses")
        return {"type": "input_audio", "input_audio": extra["input_audio"], **cache}
    if t == "tool_reference" and (placeholder := ctx.tool_reference_text(j, path)) is not None:
        return {"type": "text", "text": placeholder}
    ctx.lose_part(path, t, "Chat here")
    return None


def _content(ctx: Ctx, i: int, role: str) -> Any:
    """Item ``i``'s content as a Chat content value; ``...`` when absent."""
    return ctx.content_value(i, lambda j, k: _text_part(ctx, i, j, k, allow_media=role == "user"))


def _message_losses(ctx: Ctx, i: int, kept: tuple[str, ...] = ()) -> None:
    """Report what Chat has no slot for on message ``i``; ``kept``: extra keys the caller writes."""
    v = ctx.v
    base = ctx.item_ptr(i)
    nulls = v.nulls[i] or ()
    if ctx.source == "responses":
        unused = ("id", "status", "phase", "call_id", "name", "namespace", "arguments", "input")
        ctx.lose_fields(i, base, (*unused, "encrypted_content"))
        if (v.native_type[i] is not None or "native_type" in nulls) and (
            v.role[i] != "assistant" or v.content_form[i] != FORM_PARTS
        ):
            ctx.lose(base + "/type", "content_form", "Chat messages have no type tag")
        if (
            v.role[i] == "assistant"
            and v.content_form[i] == FORM_STRING
            and not v.content.text[v.content_off[i]]
        ):
            ctx.lose(base, "content_form", "an empty assistant text has no item on the way back")
        if v.role[i] == "assistant" and v.content_form[i] == FORM_ABSENT:
            ctx.lose(base, "content_form", "an assistant message without content has no item on the way back")
        if v.role[i] == "assistant" and v.content_form[i] == FORM_PARTS:
            # an assistant part list comes back as an output message, whose id and status are required
            if v.id[i] is None and "id" not in nulls:
                ctx.lose(base + "/id", "generated_id", "no id: one is generated on the way back")
            if v.status[i] is None and "status" not in nulls:
                ctx.lose(base + "/status", "status", "no status: 'completed' comes back")
            if v.native_type[i] is None:
                ctx.lose(base + "/type", "content_form", "comes back as a typed output message")
    else:
        ctx.lose_fields(i, base, ("id", "status", "phase", "call_id", "namespace", "encrypted_content",
                                  "signature"))  # fmt: skip
    ctx.lose_extra(i, base, kept)


def _tool_call(ctx: Ctx, i: int, calls: from_dataset.DatasetCalls | None, ids: CallIds) -> dict[str, Any]:
    v = ctx.v
    base = ctx.item_ptr(i)
    call_id = ids.call_id(i)  # never None for a call: CallIds generates (and reports) the missing ones
    ctx.lose_fields(i, base, ("id", "status", "namespace", "phase", "encrypted_content"))
    value = "input" if v.type[i] == "custom_tool_call" else "arguments"
    arguments = v.arguments[i]
    if calls is not None:  # a dataset row: ids are generated, arguments may be a string or a value
        arguments = from_dataset.arguments(ctx, i)
        to_hf.call_type_kept(ctx, i)
        to_hf.sharegpt_value_kept(ctx, i)
        from_dataset.call_extra_keys(ctx, i)
    for field in ("name", value):
        if (arguments if field == "arguments" else getattr(v, field)[i]) is None:
            ctx.lose(
                base + "/" + ctx.wire_key(i, field), "content_form", f"a missing or null '{field}' becomes ''"
            )
    if calls is None:
        ctx.lose_extra(i, base)
    if v.type[i] == "custom_tool_call":
        return {
            "id": call_id,
            "type": "custom",
            "custom": {"name": v.name[i] or "", "input": v.input[i] or ""},
        }
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": v.name[i] or "", "arguments": arguments or ""},
    }


# An output item's modelled keys a tool message has no slot for (a call's keys on an output too).
_OUTPUT_LOST = ("name", "id", "status", "namespace", "phase", "arguments", "input", "encrypted_content")


def _tool_message(ctx: Ctx, i: int, call_id: str, calls: from_dataset.DatasetCalls | None) -> dict[str, Any]:
    """Output ``i`` as a ``tool`` message answering ``call_id`` (its own, or its call's: CallIds)."""
    base = ctx.item_ptr(i)
    msg: dict[str, Any] = {"role": "tool", "tool_call_id": call_id}
    content = _content(ctx, i, "tool")
    if content is ... or content is None:
        ctx.lose(ctx.content_ptr(i), "content_form", "Chat tool messages need content; wrote ''")
        content = ""
    msg["content"] = content
    if calls is not None:
        calls.output_name(i)
        to_hf.output_kind(ctx, i)
        to_hf.sharegpt_tag_kept(ctx, i, "tool")
    ctx.lose_fields(
        i,
        base,
        ("id", "status", "namespace", "phase") if calls else _OUTPUT_LOST,
    )
    ctx.lose_extra(i, base)
    return msg


def _instructions(ctx: Ctx) -> list[dict[str, Any]]:
    view, r = ctx.view, ctx.r
    form = view.instr_form[r]
    key = "instructions" if ctx.source == "responses" else "system"
    if form in (FORM_ABSENT, "items"):
        return []
    if form == FORM_NULL:
        ctx.lose("/" + key, "instruction_position", "explicit null instructions dropped")
        return []
    if form == FORM_STRING:
        text = view.instr.text[view.instr_off[r]]
        if not text:
            ctx.lose("/" + key, "empty_text", "empty instructions produce no system message")
            return []
        ctx.lose("/" + key, "instruction_position", "instructions became a leading system message")
        return [{"role": "system", "content": text}]
    parts = []
    c = view.instr
    for k, j in enumerate(range(view.instr_off[r], view.instr_off[r + 1])):
        if c.cache_control[j] is not None:
            ctx.lose(f"/{key}/{k}/cache_control", "cache_control", "Chat has no cache_control")
        if c.citations[j] is not None:
            ctx.lose(f"/{key}/{k}/citations", "citations", "Chat has no citations")
        if c.extra[j] is not None:
            ctx.lose(f"/{key}/{k}", "unknown_field", "system block keys have no slot in Chat")
        parts.append({"type": "text", "text": c.text[j] or ""})
    ctx.lose("/" + key, "instruction_position", "system blocks became a leading system message")
    return [{"role": "system", "content": parts}] if parts else []


def _leading_system_will_become_instructions(
    ctx: Ctx, messages: list[dict[str, Any]], origin: list[int]
) -> None:
    """A string system message first in the Chat output reads as instructions once back in Responses."""
    if ctx.source != "responses" or not messages or origin[0] < 0:
        return
    first = messages[0]
    if first["role"] == "system" and isinstance(first.get("content"), str) and first["content"]:
        detail = "a leading system message and top-level instructions look the same in Chat"
        ctx.lose(ctx.item_ptr(origin[0]), "instruction_position", detail)
        ctx.lose("/instructions", "instruction_position", detail)


def encode(ctx: Ctx) -> dict[str, Any]:
    """Convert one canonical row to a Chat request body."""
    v = ctx.v
    if ctx.source == "responses" and ctx.view.items_form[ctx.r] == FORM_STRING:
        ctx.lose("/input", "content_form", "the string input shorthand becomes a user message")
    request = ctx.kind == "request"  # a response object's envelope is response_objects.py's
    messages = _instructions(ctx) if request else []
    if request and ctx.view.instr_form[ctx.r] == "items":
        instruction_items(ctx, "the first messages")
    calls = from_dataset.DatasetCalls(ctx) if ctx.source in from_dataset.DATASETS else None
    # Chat pairs a tool message with its call by id and the API requires both ids: an id-less call
    # (any source: Claude Code blocks, Responses/Chat logs, dataset rows) gets the id every target
    # generates for it, an id-less output its call's, paired by position (call_ids.py).
    ids = calls if calls is not None else CallIds(ctx)
    if ctx.source == "sharegpt":
        to_hf.leading_system_note(ctx, bool(messages), "Chat")
    call_group = -1  # the source turn of the calls in ``current`` (ShareGPT: one turn, one message)
    origin = [-1] * len(messages)  # the item each message came from (-1: the instructions)
    current: dict[str, Any] | None = None  # the assistant message tool calls attach to
    current_first = -1  # the item that opened it
    custom_ids = {ids.call_id(i) for i in range(ctx.start, ctx.end) if v.type[i] == "custom_tool_call"}
    for i in range(ctx.start, ctx.end):
        t = v.type[i]
        base = ctx.item_ptr(i)
        if ctx.source == "anthropic":
            ctx.lose_wrapper(i)
        if t == "message":
            role = v.role[i] or "user"
            content = _content(ctx, i, role)
            # An HF assistant message's reasoning text goes back where a Chat message carries it
            # (to_hf writes a Chat source's there); Chat and Responses sources keep today's rule.
            reasoning = to_hf.reasoning_keys(ctx, i, role) if ctx.source == "hf" else {}
            _message_losses(ctx, i, tuple(reasoning))
            if (
                role == "assistant"
                and current is not None
                and current.get("content") is None
                # Absent content has nothing to join: the message stays a message of its own.
                and content is not ...
                and content
            ):
                # Text after this turn's calls: an assistant message with tool_calls must be followed
                # by tool messages, so the text joins the calls' message (before them, as Chat reads).
                current["content"] = content
                for key in reasoning:  # the calls' message has its own (or none): this one has no place
                    ctx.lose(base + pointer(key), "reasoning", "joined the calls' message without it")
                ctx.lose(base, "text_order", "the text is placed before the tool calls it followed")
                ctx.lose(ctx.item_ptr(current_first), "text_order", "the calls now come after the text")
                continue
            msg: dict[str, Any] = {"role": role}
            if content is not ...:
                msg["content"] = content
            elif role != "assistant":
                msg["content"] = ""
                ctx.lose(ctx.content_ptr(i), "content_form", "absent content written as ''")
            if ctx.source == "hf" and v.name[i] is not None:  # Chat messages have a name too
                msg["name"] = v.name[i]
            msg.update(reasoning)
            if ctx.source == "sharegpt":
                to_hf.sharegpt_tag_kept(ctx, i, role)
            messages.append(msg)
            origin.append(i)
            current, current_first = (msg, i) if role == "assistant" else (None, -1)
        elif t in CALLS:
            if current is None or (
                ctx.source == "sharegpt" and "tool_calls" in current and v.group[i] != call_group
            ):
                current = {"role": "assistant", "content": None}
                current_first = i
                messages.append(current)
                origin.append(i)
            current.setdefault("tool_calls", []).append(_tool_call(ctx, i, calls, ids))
            call_group = v.group[i]
        elif t in OUTPUTS and (call_id := ids.call_id(i)) is None:
            # no id and no call before it to pair with: Chat rejects a tool message without one
            ctx.lose(base, "orphan_output", "a tool output with no call to pair with is dropped")
            current = None
        elif t in OUTPUTS:
            messages.append(_tool_message(ctx, i, call_id, calls))
            origin.append(i)
            current = None
            inferred = "custom_tool_call_output" if call_id in custom_ids else "function_call_output"
            if ctx.source == "responses" and inferred != t:
                ctx.lose(
                    base, "content_form", "Chat tool messages have no kind; it is inferred from the call"
                )
        elif t == "reasoning":
            ctx.lose(base, "reasoning", "Chat has no reasoning")
            if v.encrypted_content[i] is not None:
                ctx.lose(base + "/" + ctx.wire_key(i, "encrypted_content"), "encrypted_reasoning", "dropped")
            if v.signature[i] is not None:
                ctx.lose(base + "/signature", "thinking_signature", "dropped")
        elif t == "compaction":
            ctx.lose(base, "compaction", "Chat has no compaction items")
            current = None
        elif t == "item_reference":
            ctx.lose(base, "unknown_item", "an item reference cannot be resolved here")
        else:
            ctx.lose_item(base, t, "Chat")
            current = None
    _leading_system_will_become_instructions(ctx, messages, origin)
    body = _top(ctx, {"messages": messages}) if request else {"messages": messages}
    anthropic_round_trip.report(ctx, ids, media_in_results=False)
    return body


def _tools(ctx: Ctx, raw: Any) -> list[dict[str, Any]]:
    out = []
    key = "tools"
    for k, tool in enumerate(raw if isinstance(raw, list) else []):
        path = pointer(key, k)
        if not isinstance(tool, dict):
            ctx.lose(path, "tools", "not a tool object")
            continue
        t = tool.get("type")
        if ctx.source == "anthropic" and t in (None, "custom") and "input_schema" in tool:
            fn = {"name": tool.get("name", "")}
            if "description" in tool:
                fn["description"] = tool["description"]
            fn["parameters"] = tool["input_schema"]
            carried = anthropic_tool_flags(tool, ("strict",))  # Chat's function has strict
            fn.update(carried)
            for extra in keys_except(tool, {"name", "description", "input_schema", "type", *carried}):
                ctx.lose(path + pointer(extra), "tools", f"tool '{extra}' has no slot in Chat")
            if "type" in tool:  # the tag is what the tool is: it comes back without one
                ctx.lose(path, "tools", "the tool's 'type' tag is not kept")
            out.append({"type": "function", "function": fn})
        elif ctx.source == "responses" and t == "function":
            fn = {k2: tool[k2] for k2 in ("name", "description", "parameters", "strict") if k2 in tool}
            for extra in keys_except(tool, {"name", "description", "parameters", "strict", "type"}):
                ctx.lose(path + pointer(extra), "tools", f"tool '{extra}' has no slot in Chat")
            for required in ("parameters", "strict"):  # the way back sets them (required on Responses)
                if required not in tool:
                    ctx.lose(path + "/" + required, "filled_default", f"absent '{required}' comes back null")
            out.append({"type": "function", "function": fn})
        elif ctx.source == "responses" and t == "custom":
            custom = {k2: tool[k2] for k2 in ("name", "description") if k2 in tool}
            for extra in keys_except(tool, {"name", "description", "format", "type"}):
                ctx.lose(path + pointer(extra), "tools", f"tool '{extra}' has no slot in Chat")
            fmt = tool.get("format")
            if isinstance(fmt, dict) and fmt.get("type") == "grammar":
                custom["format"] = {
                    "type": "grammar",
                    "grammar": {k2: v for k2, v in fmt.items() if k2 != "type"},
                }
            elif fmt is not None:
                custom["format"] = fmt
            out.append({"type": "custom", "custom": custom})
        else:
            ctx.lose(path, "tools", f"{a_or_an(quoted(t))} tool has no equivalent in Chat")
    return out


def _tool_choice(ctx: Ctx, raw: Any) -> Any:
    if isinstance(raw, dict):
        for key in keys_except(raw, _choice_keys(ctx, raw)):
            ctx.lose("/tool_choice" + pointer(key), "tools", f"tool_choice '{key}' has no slot in Chat")
    if ctx.source == "responses":
        if raw in ("none", "auto", "required"):
            return raw
        if isinstance(raw, dict) and raw.get("type") == "function":
            return {"type": "function", "function": {"name": raw.get("name")}}
        if isinstance(raw, dict) and raw.get("type") == "custom":
            return {"type": "custom", "custom": {"name": raw.get("name")}}
    elif isinstance(raw, dict):
        t = raw.get("type")
        mapped = {"auto": "auto", "any": "required", "none": "none"}.get(t)
        if keys_except(raw, {"type", "name"}):
            ctx.lose("/tool_choice", "tools", "disable_parallel_tool_use has no slot in Chat tool_choice")
        if mapped is not None:
            return mapped
        if t == "tool":
            return {"type": "function", "function": {"name": raw.get("name")}}
    ctx.lose("/tool_choice", "tools", "tool_choice has no equivalent in Chat")
    return ...


def _choice_keys(ctx: Ctx, raw: dict[str, Any]) -> set[str]:
    """The keys of a Responses / Anthropic ``tool_choice`` object Chat's choice carries (or, for
    Anthropic's ``disable_parallel_tool_use``, reports as a whole); any other is reported on its own.
    A Responses choice's ``name`` is its tool's (a choice of another type is lost whole); an
    Anthropic one names a tool only in a choice of type ``tool``."""
    if ctx.source == "anthropic":
        return {"type", "disable_parallel_tool_use"} | ({"name"} if raw.get("type") == "tool" else set())
    return {"type", "name"}


def _nested(ctx: Ctx, body: dict[str, Any], key: str, value: Any) -> None:
    """A Responses request's ``reasoning`` / ``text`` object (a non-empty one; any other value is
    reported whole): each key Chat types at its top level goes there (``effort`` as
    ``reasoning_effort``, ``verbosity``, ``format`` as ``response_format``), in the object's
    order; any other key (``summary``, ...) has no Chat slot and is reported. When none of its keys
    reaches Chat the object itself is reported too: the way back has nothing to rebuild it from."""
    if not isinstance(value, dict):
        ctx.lose(pointer(key), "request_field", f"'{key}' is not carried to Chat")
        return
    carried = False
    for sub, v in value.items():
        name = RESPONSES_NESTED_KEYS.get((key, sub))
        if (key, sub) == ("text", "format"):
            if (fmt := format_to_chat(ctx, v)) is not None:
                body["response_format"] = fmt
                carried = True
        elif name is not None:
            body[name] = v
            carried = True
        else:
            ctx.lose(pointer(key, sub), "request_field", f"{key} '{sub}' has no slot in Chat")
    if not carried:
        ctx.lose(pointer(key), "request_field", f"'{key}' has nothing Chat can hold")


def _top(ctx: Ctx, body: dict[str, Any]) -> dict[str, Any]:
    view, r = ctx.view, ctx.r
    if view.model[r] is not None:
        body["model"] = view.model[r]
    if view.tools[r] is not None and ctx.source in from_dataset.DATASETS:
        body["tools"] = from_dataset.function_tools(ctx)
    elif view.tools[r] is not None:
        raw_tools = orjson.loads(view.tools[r])
        tools = _tools(ctx, raw_tools)
        if tools or raw_tools == []:
            body["tools"] = tools
        else:
            ctx.lose("/tools", "tools", "no tool survives the conversion")
    if view.tool_choice[r] is not None and ctx.source == "hf":  # HF rows take Chat's tool_choice
        body["tool_choice"] = orjson.loads(view.tool_choice[r])
    elif view.tool_choice[r] is not None:
        choice = _tool_choice(ctx, orjson.loads(view.tool_choice[r]))
        if choice is not ...:
            body["tool_choice"] = choice
    for key, value in openai_top_extra(ctx):
        if ctx.kind == "request" and key in SAME_KEYS:
            body[key] = value
        elif ctx.kind == "request" and key in RENAMED_KEYS:
            body[RENAMED_KEYS[key]] = value
        elif ctx.kind == "request" and ctx.source == "anthropic" and key == "stop_sequences" and (
            stop_fits(value)
        ):
            body["stop"] = value
        elif ctx.kind == "request" and ctx.source == "responses" and key in ("reasoning", "text") and value:
            _nested(ctx, body, key, value)
        elif ctx.kind == "request" and key == "service_tier" and ctx.source == "responses":
            if value in CHAT_SERVICE_TIERS:
                body[key] = value
            else:
                ctx.lose(pointer(key), "request_field", "'service_tier' is not one Chat takes")
        else:
            ctx.lose(pointer(key), "request_field", f"'{key}' is not carried to Chat")
    return body
