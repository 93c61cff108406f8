"""Canonical rows of any source -> OpenAI Responses request bodies, with every loss reported.

* Chat/Anthropic text keeps its form: a string stays a string (EasyInputMessage), a list of text
  parts becomes ``input_text`` parts (user/system) or an output message with ``output_text`` parts
  (assistant), whose required ``id`` is generated from the record (``generated_id``).
* Tool calls become ``function_call`` / ``custom_tool_call`` items with ``call_id`` = the source
  call id (no item ``id`` is invented: it is optional on input items); outputs become
  ``function_call_output`` / ``custom_tool_call_output`` paired by ``call_id``. A call without id
  gets the id :mod:`pipeline.encoders.call_ids` generates for it, an output without one the id of
  the oldest unanswered call before it (both ``generated_id``: the same ids in every target).
* Anthropic ``system`` becomes ``instructions``; a thinking block becomes a ``reasoning`` item whose
  text is a ``reasoning_text`` part (its signature has no slot: ``thinking_signature``).
"""

from __future__ import annotations

from typing import Any

import orjson

from pipeline.encoders import anthropic_round_trip, from_dataset, to_hf
from pipeline.encoders._context import (
    CALLS,
    CHAT_NESTED_KEYS,
    OPENAI_SHARED_KEYS,
    OUTPUTS,
    Ctx,
    anthropic_image_url,
    anthropic_tool_flags,
    cache_breakpoint,
    format_to_responses,
    keys_except,
    openai_file,
    openai_top_extra,
)
from pipeline.encoders.call_ids import CallIds
from pipeline.losses import pointer
from pipeline.schema import FORM_NULL, FORM_PARTS, FORM_STRING

TEXT_TYPES = frozenset(("input_text", "output_text", "text", None))
# Top-level keys both OpenAI request types type alike (the SDK-slot test finds any new one)
SAME_KEYS = frozenset(
    ("temperature", "top_p", "parallel_tool_calls", "metadata", "store", "user", *OPENAI_SHARED_KEYS)
)
RENAMED_KEYS = {"max_completion_tokens": "max_output_tokens", "max_tokens": "max_output_tokens"}


def generated_id(ctx: Ctx, prefix: str, i: int) -> str:
    """A deterministic id for item ``i``: the same record always gets the same ids."""
    return ctx.generated_id(prefix, i)


def _part(ctx: Ctx, i: int, j: int, k: int, assistant: bool) -> dict[str, Any] | None:
    c = ctx.v.content
    t = c.type[j]
    path = ctx.content_ptr(i, k)
    extra = ctx.block_extra(j)
    # input_text and input_image parts have its slot (an assistant's output_text has none)
    cache = cache_breakpoint(ctx, extra)
    if t in TEXT_TYPES:
        cache = {} if assistant else cache
        ctx.lose_block_keys(j, path, {"type", "text", *cache})
        if t is None and ctx.v.content_form[i] == FORM_PARTS:
            ctx.lose(path + "/type", "content_form", "a part without a type gets one")
        text = c.text[j] if c.text[j] is not None else ""
        if c.text[j] is None:
            ctx.lose(path + "/text", "content_form", "a part without text gets ''")
        if assistant:
            return {"type": "output_text", "text": text, "annotations": []}
        return {"type": "input_text", "text": text, **cache}
    if t == "refusal":
        ctx.lose_block_keys(j, path, {"type", "refusal"})
        return {"type": "refusal", "refusal": c.text[j] or ""}
    if t == "image_url" and isinstance(extra.get("image_url"), dict):
        img = extra["image_url"]
        ctx.lose_block_keys(j, path, {"type", "image_url", *cache})
        for key in keys_except(img, {"url", "detail"}):
            ctx.lose(path + "/image_url" + pointer(key), "image", f"'{key}' is not carried")
        part: dict[str, Any] = {"type": "input_image", "detail": img.get("detail") or "auto"}
        if "detail" not in img:
            ctx.lose(path + "/image_url", "image", "Responses requires detail; filled 'auto'")
        elif img["detail"] is None:  # the decoder keeps a null detail; Responses takes none
            ctx.lose(
                path + "/image_url/detail", "image", "a null detail: Responses requires one; filled 'auto'"
            )
        part["image_url"] = img.get("url")
        return {**part, **cache}
    if t == "image" and isinstance(extra.get("source"), dict):
        url = anthropic_image_url(ctx, extra["source"], path)
        if url is not None:
            ctx.lose(path, "image", "Responses images have a required detail; filled 'auto'")
            return {"type": "input_image", "detail": "auto", "image_url": url}
    if not assistant and t in ("file", "document") and (file := openai_file(ctx, j, path, "responses")):
        return {"type": "input_file", **file[0], **file[1]}
    if t == "tool_reference" and (placeholder := ctx.tool_reference_text(j, path)) is not None:
        return {"type": "input_text", "text": placeholder}
    ctx.lose_part(path, t, "Responses here")
    return None


def _content(ctx: Ctx, i: int, assistant: bool) -> Any:
    """Item ``i``'s content as a Responses content value; ``...`` when absent."""
    return ctx.content_value(i, lambda j, k: _part(ctx, i, j, k, assistant))


def _message(ctx: Ctx, i: int) -> dict[str, Any] | None:
    v = ctx.v
    base = ctx.item_ptr(i)
    role = v.role[i] or "user"
    assistant = role == "assistant"
    content = _content(ctx, i, assistant)
    ctx.lose_fields(i, base, ("name", "id", "status", "phase", "call_id", "namespace", "encrypted_content",
                              "signature", "arguments", "input"))  # fmt: skip
    extra = ctx.extra(i)
    refusal = extra.pop("refusal", None) if ctx.source == "chat" else None
    if ctx.source == "chat" and refusal is None and "refusal" in (ctx.extra(i) or {}):
        ctx.lose(base + "/refusal", "refusal", "an explicit null refusal has no slot")
    for key in extra:
        ctx.lose(base + pointer(key), "unknown_field", f"'{key}' has no slot in Responses")
    if content is ... or content is None or (content == "" and assistant):
        if refusal is None:
            followed_by_calls = i + 1 < ctx.end and v.group[i + 1] == v.group[i] and v.type[i + 1] in CALLS
            if v.content_form[i] == FORM_NULL and followed_by_calls:
                return None  # {"content": null, "tool_calls": [...]} is what comes back
            if followed_by_calls:
                ctx.lose(ctx.content_ptr(i), "content_form", "absent or empty content comes back as null")
            else:
                ctx.lose(base, "content_form", "a message with no content has no item in Responses")
            return None
        content = []
    if assistant and (isinstance(content, list) or refusal is not None):
        parts = (
            content
            if isinstance(content, list)
            else [{"type": "output_text", "text": content, "annotations": []}]
        )
        if refusal is not None:
            parts.append({"type": "refusal", "refusal": refusal})
            ctx.lose(base + "/refusal", "refusal", "the refusal field became a refusal part")
        ctx.lose(base, "generated_id", "an output message needs an id; generated")
        return {"type": "message", "id": generated_id(ctx, "msg", i), "role": "assistant",
                "status": "completed", "content": parts}  # fmt: skip
    return {"role": role, "content": content}


def _call(ctx: Ctx, i: int, calls: from_dataset.DatasetCalls | None, ids: CallIds) -> dict[str, Any]:
    v = ctx.v
    base = ctx.item_ptr(i)
    call_id = ids.call_id(i)  # never None for a call: CallIds generates (and reports) the missing ones
    if v.type[i] == "custom_tool_call":
        item = {"type": "custom_tool_call", "call_id": call_id, "name": v.name[i] or "",
                "input": v.input[i] or ""}  # fmt: skip
    else:
        arguments = v.arguments[i] if calls is None else from_dataset.arguments(ctx, i)
        item = {"type": "function_call", "call_id": call_id, "name": v.name[i] or "",
                "arguments": arguments or ""}  # fmt: skip
        if calls is not None and arguments is None:
            ctx.lose(to_hf.field_ptr(ctx, i, "arguments"), "content_form", "missing arguments became ''")
    if calls is not None:
        to_hf.call_type_kept(ctx, i)
        to_hf.sharegpt_value_kept(ctx, i)
        from_dataset.call_extra_keys(ctx, i)
        if v.name[i] is None:
            ctx.lose(to_hf.field_ptr(ctx, i, "name"), "content_form", "a missing or null name became ''")
    elif ctx.source == "chat":
        ctx.lose_chat_call_keys(i, base, "Responses")
    else:
        ctx.lose_extra(i, base)
    return item


def _output(
    ctx: Ctx, i: int, custom_calls: set[str | None], calls: from_dataset.DatasetCalls | None, ids: CallIds
) -> dict[str, Any]:
    v = ctx.v
    base = ctx.item_ptr(i)
    call_id = ids.call_id(i)  # its own, or (no id) the oldest unanswered call's before it
    kind = "custom_tool_call_output" if call_id in custom_calls else "function_call_output"
    item: dict[str, Any] = {"type": kind, "call_id": call_id}  # (id-less orphans are dropped by encode)
    content = _content(ctx, i, False)
    if content is ... or content is None:
        ctx.lose(ctx.content_ptr(i), "content_form", "a tool output needs output; wrote ''")
        content = ""
    item["output"] = content
    if ctx.source == "chat" and v.role[i] == "function":  # Responses has one kind of tool output
        ctx.lose(base, "role", "a legacy 'function' message comes back as a 'tool' message")
    if calls is not None:  # the way back names the output after its call
        calls.output_name(i)
        to_hf.output_kind(ctx, i)
        to_hf.sharegpt_tag_kept(ctx, i, "tool")
    elif v.name[i] is not None:
        item["name"] = v.name[i]
        if ctx.source == "chat":
            ctx.lose(base + "/name", "name", "kept in Responses, but Chat tool messages have no name slot")
    elif "name" in (v.nulls[i] or ()):
        ctx.lose(base + "/name", "name", "an explicit null name")
    ctx.lose_fields(i, base, ("id", "status", "phase", "namespace", "encrypted_content", "signature"))
    extra = ctx.extra(i)
    if "is_error" in extra:
        ctx.lose(base + "/is_error", "tool_error", "Responses tool outputs have no error flag")
        extra.pop("is_error")
    for key in extra:
        ctx.lose(base + pointer(key), "unknown_field", f"'{key}' has no slot in Responses")
    return item


def _reasoning(ctx: Ctx, i: int) -> dict[str, Any] | None:
    v = ctx.v
    base = ctx.item_ptr(i)
    if v.native_type[i] == "redacted_thinking":
        ctx.lose(base, "reasoning", "redacted thinking has no equivalent in Responses")
        return None
    texts = [v.content.text[j] or "" for j in ctx.blocks(i)]
    if v.signature[i] is not None:
        ctx.lose(base + "/signature", "thinking_signature", "a thinking signature has no slot")
    ctx.lose(base, "generated_id", "a reasoning item needs an id; generated")
    ctx.lose_extra(i, base)
    return {"type": "reasoning", "id": generated_id(ctx, "rs", i), "summary": [],
            "content": [{"type": "reasoning_text", "text": t} for t in texts]}  # fmt: skip


def _instructions(ctx: Ctx, body: dict[str, Any]) -> None:
    view, r = ctx.view, ctx.r
    form = view.instr_form[r]
    if form == FORM_STRING:
        body["instructions"] = view.instr.text[view.instr_off[r]]
    elif form == FORM_NULL:
        body["instructions"] = None
    elif form == FORM_PARTS:
        c = view.instr
        idx = list(range(view.instr_off[r], view.instr_off[r + 1]))
        for k, j in enumerate(idx):
            if c.cache_control[j] is not None:
                ctx.lose(f"/system/{k}/cache_control", "cache_control", "instructions have no cache_control")
            if c.citations[j] is not None or c.extra[j] is not None:
                ctx.lose(f"/system/{k}", "unknown_field", "system block keys have no slot")
        ctx.lose("/system", "block_boundary" if len(idx) > 1 else "content_form", "system blocks joined")
        body["instructions"] = "".join(c.text[j] or "" for j in idx)


def _leading_system(ctx: Ctx, body: dict[str, Any]) -> int:
    """A Chat / HF row's leading plain system message as ``body``'s instructions; the first item
    :func:`encode` writes as an item (the one after it, or the row's first)."""
    v = ctx.v
    first = ctx.start
    if (
        ctx.source in ("chat", "hf")
        and first < ctx.end
        and v.type[first] == "message"
        and v.role[first] == "system"
        and v.content_form[first] == FORM_STRING
        and v.content.text[v.content_off[first]]  # empty instructions are dropped on the way back
        and v.name[first] is None
        and v.extra[first] is None
    ):
        # A leading system prompt is what instructions are for; the message position is the loss.
        body["instructions"] = v.content.text[v.content_off[first]]
        ctx.lose(
            ctx.item_ptr(first), "instruction_position", "the leading system message became instructions"
        )
        first += 1
    return first


def encode(ctx: Ctx) -> dict[str, Any]:
    """Convert one canonical row to a Responses request body."""
    v = ctx.v
    body: dict[str, Any] = {}
    request = ctx.kind == "request"  # a response object's envelope is response_objects.py's
    if request:
        _instructions(ctx, body)
    items: list[dict[str, Any]] = []
    first = _leading_system(ctx, body)
    emitted: set[int] = set()  # the items that have an item in the output
    calls = from_dataset.DatasetCalls(ctx) if ctx.source in from_dataset.DATASETS else None
    # Responses requires call_id on calls and outputs: an id-less call (any source) gets the id every
    # target generates for it, an id-less output its call's, paired by position (call_ids.py).
    ids = calls if calls is not None else CallIds(ctx)
    custom_calls = {ids.call_id(i) for i in range(ctx.start, ctx.end) if v.type[i] == "custom_tool_call"}
    if ctx.source == "sharegpt":
        to_hf.leading_system_note(ctx, ctx.view.instr_form[ctx.r] == FORM_STRING, "Responses")
    bare_calls = False  # do the last items form calls with no text before them (a null-content message)?
    attaches = False  # would Chat attach a following call to the previous assistant message?
    attach_target = ""  # ... and which source message is that
    for i in range(first, ctx.end):
        t = v.type[i]
        item: dict[str, Any] | None
        if ctx.source == "anthropic":
            ctx.lose_wrapper(i)
        if t == "message":
            item = _message(ctx, i)
            followed_by_calls = i + 1 < ctx.end and v.group[i + 1] == v.group[i] and v.type[i + 1] in CALLS
            if item is None and followed_by_calls and attaches and ctx.source == "chat":
                detail = "its calls join the previous assistant message"
                ctx.lose(ctx.message_ptr(i), "message_merge", detail)
                ctx.lose(attach_target + "/tool_calls", "message_merge", detail)
            if item is not None and item.get("role") == "assistant" and item.get("content") and bare_calls:
                # The way back puts text that follows calls into the calls' message (Chat cannot
                # order text after calls), so this message and its calls join that one.
                detail = "its text joins the previous message's calls on the way back"
                ctx.lose(ctx.message_ptr(i), "message_merge", detail)
                ctx.lose(attach_target, "message_merge", detail)
        elif t in CALLS:
            item = _call(ctx, i, calls, ids)
        elif t in OUTPUTS and ids.call_id(i) is None:
            # no id and no call before it to pair with: the API rejects an output without call_id
            ctx.lose(ctx.item_ptr(i), "orphan_output", "a tool output with no call to pair with is dropped")
            item = None
        elif t in OUTPUTS:
            item = _output(ctx, i, custom_calls, calls, ids)
        elif t == "reasoning":
            item = _reasoning(ctx, i)
        else:
            if t == "compaction":  # Anthropic's beta compaction is a provider-side state blob
                ctx.lose(ctx.item_ptr(i), "hosted_tool", "'compaction' is not carried")
            else:
                ctx.lose_item(ctx.item_ptr(i), t, "Responses")
            item = None
        if item is not None:
            items.append(item)
            emitted.add(i)
            is_call = item.get("type") in CALLS
            bare_calls = ctx.source == "chat" and is_call and (bare_calls or not attaches)
            attaches = item.get("role") == "assistant" or is_call
            if attaches:
                attach_target = ctx.message_ptr(i)
    body["input"] = items
    body = _top(ctx, body) if request else body
    anthropic_round_trip.report(ctx, ids, media_in_results=True, emitted=emitted)
    return body


def _dataset_tools(ctx: Ctx) -> list[dict[str, Any]]:
    """An HF / ShareGPT row's function schemas as Responses function tools (``parameters`` and
    ``strict`` are required there, nullable: a missing one is set to null)."""
    out = []
    for k, tool in enumerate(from_dataset.function_tools(ctx) or []):
        fn = tool["function"]
        path = pointer("tools", k, "function") if ctx.source == "hf" else "/tools"
        new = {"type": "function", **{key: fn[key] for key in ("name", "description", "parameters", "strict")
                                      if key in fn}}  # fmt: skip
        for key in ("parameters", "strict"):  # extra keys were reported by function_tools
            if key not in fn:
                new[key] = None
                ctx.lose(path + (pointer(key) if ctx.source == "hf" else ""), "filled_default",
                         f"'{key}' set to null")  # fmt: skip
        out.append(new)
    return out


def _tools(ctx: Ctx, raw: Any) -> list[dict[str, Any]]:
    out = []
    for k, tool in enumerate(raw if isinstance(raw, list) else []):
        path = pointer("tools", k)
        if not isinstance(tool, dict):
            ctx.lose(path, "tools", "not a tool object")
            continue
        if ctx.source == "chat":
            # a function tool is built from its "function" object, a custom one from "custom": the
            # other type's object is a key like any other (a tool of another type is lost whole)
            t = tool.get("type")
            carried = {"type", t} if t in ("function", "custom") else {"type", "function", "custom"}
            for extra in keys_except(tool, carried):
                ctx.lose(path + pointer(extra), "tools", f"tool '{extra}' has no slot in Responses")
        if ctx.source == "chat" and tool.get("type") == "function" and isinstance(tool.get("function"), dict):
            fn = tool["function"]
            new = {
                "type": "function",
                **{k2: fn[k2] for k2 in ("name", "description", "parameters", "strict") if k2 in fn},
            }
            for extra in keys_except(fn, {"name", "description", "parameters", "strict"}):
                ctx.lose(
                    path + "/function" + pointer(extra), "tools", f"tool '{extra}' has no slot in Responses"
                )
            for required in ("parameters", "strict"):  # required (nullable) on Responses function tools
                if required not in fn:
                    new[required] = None
                    ctx.lose(path + "/function/" + required, "filled_default", f"'{required}' set to null")
            out.append(new)
        elif ctx.source == "chat" and tool.get("type") == "custom" and isinstance(tool.get("custom"), dict):
            custom = tool["custom"]
            new = {"type": "custom", **{k2: custom[k2] for k2 in ("name", "description") if k2 in custom}}
            for extra in keys_except(custom, {"name", "description", "format"}):
                ctx.lose(
                    path + "/custom" + pointer(extra), "tools", f"tool '{extra}' has no slot in Responses"
                )
            fmt = custom.get("format")
            if (
                isinstance(fmt, dict)
                and fmt.get("type") == "grammar"
                and isinstance(fmt.get("grammar"), dict)
            ):
                new["format"] = {"type": "grammar", **fmt["grammar"]}  # Responses keeps the grammar flat
                for extra in keys_except(fmt, {"type", "grammar"}):
                    ctx.lose(
                        path + "/custom/format" + pointer(extra), "tools", f"format '{extra}' has no slot"
                    )
            elif fmt is not None:
                new["format"] = fmt
            out.append(new)
        elif ctx.source == "anthropic" and "input_schema" in tool and tool.get("type") in (None, "custom"):
            # a boolean strict and defer_loading: Responses' function tool has both
            carried = anthropic_tool_flags(tool, ("strict", "defer_loading"))
            new = {
                "type": "function",
                "name": tool.get("name"),
                "parameters": tool["input_schema"],
                "strict": carried.get("strict"),
            }
            if "description" in tool:
                new["description"] = tool["description"]
            if "defer_loading" in carried:
                new["defer_loading"] = carried["defer_loading"]
            for extra in keys_except(tool, {"name", "description", "input_schema", "type", *carried}):
                ctx.lose(path + pointer(extra), "tools", f"tool '{extra}' has no slot in Responses")
            if "type" in tool:  # the tag is what the tool is: it comes back without one
                ctx.lose(path, "tools", "the tool's 'type' tag is not kept")
            out.append(new)
        else:
            ctx.lose(path, "tools", "this tool has no equivalent in Responses here")
    return out


def _top(ctx: Ctx, body: dict[str, Any]) -> dict[str, Any]:
    view, r = ctx.view, ctx.r
    if view.model[r] is not None:
        body["model"] = view.model[r]
    if view.tools[r] is not None and ctx.source in from_dataset.DATASETS:
        body["tools"] = _dataset_tools(ctx)
    elif view.tools[r] is not None:
        raw_tools = orjson.loads(view.tools[r])
        tools = _tools(ctx, raw_tools)
        if tools or raw_tools == []:
            body["tools"] = tools
        else:
            ctx.lose("/tools", "tools", "no tool survives the conversion")
    if view.tool_choice[r] is not None:
        raw = orjson.loads(view.tool_choice[r])
        if isinstance(raw, dict):
            t = raw.get("type")
            inner = raw.get(t) if isinstance(raw.get(t), dict) else {}
            # what the choice's type carries: Anthropic's tool choice names its tool flat, Chat's
            # function / custom choice in its sub-object; any other key is reported on its own
            if ctx.source == "anthropic":
                known = {"type", "name"} if t == "tool" else {"type"}
            else:
                known = {"type", t} if t in ("function", "custom") else {"type"}
            for key in keys_except(raw, known):
                ctx.lose("/tool_choice" + pointer(key), "tools", f"tool_choice '{key}' has no slot")
            for key in keys_except(inner, {"name"}):
                ctx.lose(
                    f"/tool_choice/{raw['type']}" + pointer(key), "tools", f"tool_choice '{key}' has no slot"
                )
        if raw in ("none", "auto", "required"):
            body["tool_choice"] = raw
            if ctx.source == "anthropic":  # Anthropic's choice is an object: the way back writes one
                detail = f"a tool_choice string comes back from Responses as an object, not {raw!r}"
                ctx.lose("/tool_choice", "tools", detail)
        elif isinstance(raw, dict) and raw.get("type") in ("auto", "any", "none"):
            body["tool_choice"] = {"auto": "auto", "any": "required", "none": "none"}[raw["type"]]
            if (
                ctx.source != "anthropic"
            ):  # Anthropic's own shape comes back; an OpenAI source gets the string
                ctx.lose(
                    "/tool_choice", "tools", f"a tool_choice object comes back as {body['tool_choice']!r}"
                )
        elif (
            isinstance(raw, dict) and raw.get("type") == "function" and isinstance(raw.get("function"), dict)
        ):
            body["tool_choice"] = {"type": "function", "name": raw["function"].get("name")}
        elif isinstance(raw, dict) and raw.get("type") == "custom" and isinstance(raw.get("custom"), dict):
            body["tool_choice"] = {"type": "custom", "name": raw["custom"].get("name")}
        elif isinstance(raw, dict) and raw.get("type") == "tool":
            body["tool_choice"] = {"type": "function", "name": raw.get("name")}
        else:
            ctx.lose("/tool_choice", "tools", "tool_choice has no equivalent in Responses")
    for key, value in openai_top_extra(ctx):
        if ctx.kind == "request" and key in SAME_KEYS:
            body[key] = value
        elif ctx.kind == "request" and ctx.source == "chat" and key == "response_format":
            if (fmt := format_to_responses(ctx, value)) is not None:
                body.setdefault("text", {})["format"] = fmt
        elif ctx.kind == "request" and ctx.source == "chat" and key in CHAT_NESTED_KEYS:
            outer, inner = CHAT_NESTED_KEYS[key]
            body.setdefault(outer, {})[inner] = value
        elif ctx.kind == "request" and key == "service_tier" and ctx.source == "chat":
            body[key] = value  # Responses takes every Chat tier (_context.CHAT_SERVICE_TIERS)
        elif ctx.kind == "request" and key in RENAMED_KEYS and RENAMED_KEYS[key] not in body:
            body[RENAMED_KEYS[key]] = value
            if key == "max_tokens" and ctx.source == "chat":
                detail = "the deprecated max_tokens comes back as max_completion_tokens"
                ctx.lose(pointer(key), "request_field", detail)
                ctx.lose("/max_completion_tokens", "request_field", detail)
        else:
            ctx.lose(pointer(key), "request_field", f"'{key}' is not carried to Responses")
    return body
