"""What an Anthropic record loses when it comes back from Chat or Responses, named at its own paths.

The guarantee is A -> B -> A equals A wherever A -> B reported no loss. For an Anthropic source the
way back is :mod:`pipeline.encoders.to_anthropic`, which reshapes what the Messages API would reject
or merge: it joins adjacent same-role messages, pairs every ``tool_use`` with a ``tool_result`` at
the front of the next user message (dropping unanswered calls and orphan results), drops empty or
whitespace-only text, trims the final assistant text, and turns leading system-role messages into
the top-level ``system``. An Anthropic record need not be in that normal form (recorded histories
have adjacent user messages, inline system messages, a trailing ``tool_use``...), so the forward
encoders (``to_chat``, ``to_responses``) call :func:`report` to name, in the *source*, what that
normal form will change.

It runs the Anthropic encoder's own turn rules (grouping, pairing, trimming) on segments built from
the source record, so the report is what the way back does by construction, not a second guess:

============================================  =========================  ==========================
source shape                                   loss                        path
============================================  =========================  ==========================
``user`` then ``user``                         ``message_merge``           both messages
a ``tool_use`` nobody answers                  ``unanswered_call``         the block
a ``tool_result`` with no call before it       ``orphan_output``           the block
a ``tool_result`` after text                   ``tool_output_order``       the block
``{"type": "text", "text": " "}``              ``empty_text``              the block
a ``tool_use`` inside a user message           ``message_split``           the message (alone too)
first message ``role: "system"``               ``system_position``         the message, ``/system``
no ``max_tokens``                              ``filled_default``          ``/max_tokens``
============================================  =========================  ==========================
"""

from __future__ import annotations

import orjson

from pipeline.encoders import to_anthropic as ta
from pipeline.encoders._context import Ctx, stop_fits
from pipeline.encoders.call_ids import CallIds
from pipeline.losses import pointer
from pipeline.schema import FORM_NULL, FORM_PARTS, FORM_STRING

ROLES = frozenset(("user", "assistant", "system"))


def _image_survives(ctx: Ctx, j: int) -> bool:
    """An Anthropic image block converts to a URL part and back only from a URL or a base64 source
    of a media type Anthropic takes (others come back as nothing)."""
    source = ctx.source_block(j).get("source")
    if not isinstance(source, dict):
        return False
    if source.get("type") == "url":
        return ta.image_source(source.get("url")) is not None
    return source.get("type") == "base64" and source.get("media_type") in ta.IMAGE_MEDIA


def _message_seg(ctx: Ctx, i: int, role: str) -> ta.Seg:
    """The blocks of message item ``i`` that come back (text with a non-blank text, user images)."""
    v = ctx.v
    seg = ta.Seg("text", role, i)
    if v.content_form[i] == FORM_STRING:
        text = v.content.text[v.content_off[i]]
        if text.strip():
            seg.blocks.append({"type": "text", "text": text})
            seg.paths.append(ctx.content_ptr(i))
            seg.string = True
        else:
            ctx.lose(ctx.content_ptr(i), "empty_text", "empty or blank text is not sent back to Anthropic")
        return seg
    if v.content_form[i] != FORM_PARTS:
        return seg
    c = v.content
    for k, j in enumerate(ctx.blocks(i)):
        t = c.type[j]
        path = ctx.content_ptr(i, k)
        if t == "text":
            if (c.text[j] or "").strip():
                seg.blocks.append({"type": "text", "text": c.text[j]})
                seg.paths.append(path + "/text")
            else:
                ctx.lose(path, "empty_text", "an empty or blank text block is not sent back to Anthropic")
        elif t == "image" and role == "user":
            if _image_survives(ctx, j):
                seg.blocks.append({"type": "image"})
                seg.paths.append(path)
            else:
                ctx.lose(path, "image", "this image source does not convert back to an Anthropic image")
        # every other block was reported by the forward encoder, which dropped it
    return seg


def _segments(ctx: Ctx, media_in_results: bool, ids: CallIds) -> list[ta.Seg]:
    """The source's items as the way back will see them: text runs, calls and results, with the
    call ids the target got (``ids``: an id-less call's generated id, an id-less result its call's),
    so the way back pairs them here as it will there."""
    v = ctx.v
    segs = []
    for i in range(ctx.start, ctx.end):
        t = v.type[i]
        if t == "message":
            role = v.role[i] if v.role[i] in ROLES else "user"
            segs.append(_message_seg(ctx, i, role))
        elif t == "function_call":
            segs.append(ta.Seg("call", "assistant", i, call_id=ids.call_id(i)))
        elif t == "function_call_output":
            _result_content(ctx, i, media_in_results)
            segs.append(ta.Seg("result", "user", i, call_id=ids.call_id(i)))
    return segs


def _result_content(ctx: Ctx, i: int, media: bool) -> None:
    """A ``tool_result``'s content comes back only where it has a non-blank text (or, when the
    target kept them, an image): an empty or blank string, or a list of nothing else, comes back
    as a result without content."""
    v = ctx.v
    form = v.content_form[i]
    if form == FORM_STRING:
        text = v.content.text[v.content_off[i]]
        if not text:
            ctx.lose(ctx.content_ptr(i), "content_form", "an empty output comes back without content")
        elif not text.strip():
            ctx.lose(ctx.content_ptr(i), "empty_text", "a blank output comes back without content")
        return
    if form != FORM_PARTS:
        return
    c = v.content
    kept = 0
    for k, j in enumerate(ctx.blocks(i)):
        if c.type[j] == "text":
            if (c.text[j] or "").strip():
                kept += 1
            else:
                ctx.lose(ctx.content_ptr(i, k), "empty_text", "an empty or blank text block is not sent back")
        elif c.type[j] == "image" and media and _image_survives(ctx, j):
            kept += 1
        elif c.type[j] == "tool_reference" and isinstance(ctx.block_extra(j).get("tool_name"), str):
            kept += 1  # its text placeholder comes back (Ctx.tool_reference_text)
    if not kept:
        ctx.lose(ctx.content_ptr(i), "content_form", "no block of this output comes back: no content")


def _leading_system(ctx: Ctx, segs: list[ta.Seg], emitted: set[int] | None) -> list[ta.Seg]:
    """System-role messages before anything else the target holds come back as (part of) the
    top-level system; ``emitted`` are the items the target holds (None: all of them)."""
    out = []
    for seg in segs:
        if emitted is not None and seg.i not in emitted:
            continue
        if seg.role != "system":
            break
        out.append(seg)
        ctx.lose(ctx.message_ptr(seg.i), "system_position", "a leading system message comes back as /system")
    if out:
        ctx.lose("/system", "system_position", "leading system messages join the top-level system")
    return out


def _request_fields(ctx: Ctx) -> None:
    """The way back takes ``max_tokens`` (a positive integer, else the default) and no other
    top-level field; those the forward encoder carried (``temperature``...) do not come back."""
    extra = orjson.loads(ctx.view.extra[ctx.r]) if ctx.view.extra[ctx.r] is not None else {}
    limit = extra.pop("max_tokens", None)
    if type(limit) is not int or limit < 1:
        ctx.lose(
            "/max_tokens",
            "filled_default",
            f"no usable max_tokens: the way back sets {ta.DEFAULT_MAX_TOKENS}",
        )
    reported = {loss.path for loss in ctx.losses}
    for key, value in extra.items():
        if key == "stop_sequences" and stop_fits(value):
            continue  # Chat's stop, which comes back as the same list
        if pointer(key) not in reported:
            ctx.lose(
                pointer(key), "request_field", f"'{key}' is carried, but does not come back to Anthropic"
            )


def _system(ctx: Ctx) -> None:
    """A blank or null ``system`` does not come back (the way back never sends an empty prompt)."""
    view, r = ctx.view, ctx.r
    if view.instr_form[r] == FORM_STRING and not view.instr.text[view.instr_off[r]].strip():
        ctx.lose("/system", "empty_text", "a blank system prompt does not come back")
    elif view.instr_form[r] == FORM_NULL:
        ctx.lose("/system", "content_form", "an explicit null system does not come back")


def report(ctx: Ctx, ids: CallIds, *, media_in_results: bool, emitted: set[int] | None = None) -> None:
    """Report, at the Anthropic source's paths, what the way back from Chat/Responses changes.

    ``ids``: the call ids the forward encoder wrote (generated for id-less calls, paired by position
    for id-less results: the way back pairs by them); ``media_in_results``: the target kept the
    images of tool results (Responses does, Chat not); ``emitted``: the items that have an element
    in the target (None: every message, call, output).
    """
    if ctx.source != "anthropic" or ctx.kind != "request":
        return
    _request_fields(ctx)
    _system(ctx)
    segs = _segments(ctx, media_in_results, ids)
    leading = _leading_system(ctx, segs, emitted)
    rest = [s for s in segs if (s.blocks or s.kind != "text") and not any(s is x for x in leading)]
    turns = ta._strip_final(ctx, ta._pair(ctx, ta._group(rest)))
    where: dict[str, set[int]] = {}  # source message -> the turns its blocks come back in
    for n, turn in enumerate(turns):
        for a, b in zip(turn.segs, turn.segs[1:], strict=False):
            pa, pb = ctx.message_ptr(a.i), ctx.message_ptr(b.i)
            if pa != pb:
                ctx.lose(pb, "message_merge", "comes back joined to the previous message of the same role")
                ctx.lose(pa, "message_merge", "the next message of the same role comes back joined to it")
        for s in turn.segs:
            where.setdefault(ctx.message_ptr(s.i), set()).add(n)
    roles = {ctx.message_ptr(s.i): ctx.v.role[s.i] for turn in turns for s in turn.segs}
    for ptr, ns in where.items():
        if len(ns) > 1:
            ctx.lose(ptr, "message_split", "its blocks come back as separate messages (by role)")
        elif roles[ptr] in ("user", "assistant") and turns[next(iter(ns))].role != roles[ptr]:
            # only its tool_use comes back (its other blocks were dropped): in an assistant message
            ctx.lose(ptr, "message_split", "it comes back as a message of the other role")
    kept = set(where) | {ctx.message_ptr(s.i) for s in leading}
    reported = {loss.path for loss in ctx.losses}
    for i in range(ctx.start, ctx.end):
        ptr = ctx.message_ptr(i)
        if ptr not in kept and ptr not in reported:
            ctx.lose(ptr, "content_form", "nothing of this message comes back to Anthropic")
            reported.add(ptr)
