"""Response objects across formats: a Responses ``Response``, a Chat ``ChatCompletion`` and an
Anthropic ``Message``, each to the other two, with every loss reported at the source's paths.

The model's output (the items) goes through the target's request encoder, so it is converted,
and its losses reported, exactly as in a request; this module writes the envelope around it:

==================  ==============================  ==============================  =======================
                    Responses ``Response``          Chat ``ChatCompletion``          Anthropic ``Message``
==================  ==============================  ==============================  =======================
identity            ``id``                          ``id``                          ``id``
creation time       ``created_at``                  ``created``                     (none: ``response_field``)
why it stopped      ``status`` +                    ``choices[0].finish_reason``    ``stop_reason``
                    ``incomplete_details.reason``
output              ``output`` items                ``choices[0].message``          ``content`` blocks
token usage         ``usage.input_tokens`` (incl.   ``usage.prompt_tokens`` ...     ``usage.input_tokens``
                    cached), ``output_tokens`` ...                                  (excl. cache reads) ...
==================  ==============================  ==============================  =======================

* **id**: carried verbatim (it names the response whatever the format); a source without one gets a
  generated id (``generated_id``).
* **stop reason**: read as one of ``stop``, ``length``, ``tool_calls``, ``content_filter``,
  ``stop_sequence``, ``pause`` and written as the target's nearest value; when the way back would
  not give the source's value (``stop_sequence`` -> Chat ``stop`` -> ``end_turn``), it is a
  ``status`` loss. Responses ``failed`` / ``in_progress`` / ``cancelled`` / ``queued`` have no
  equivalent: written as finished, reported (``status``).
* **usage**: input, output, total, cached input and reasoning tokens map between the three
  (Anthropic counts cache reads and writes apart from ``input_tokens``; OpenAI includes them).
  Counts the target has no slot for (reasoning tokens in Anthropic, cache writes, audio and
  prediction tokens, server tool use) are ``usage`` losses; required counts the source did not
  have are filled with 0 (``filled_default``).
* **Chat specifics**: one ``choices[0].message`` holds the whole output: its text parts are joined
  into the one content string the response type has (``block_boundary``), a refusal part becomes
  ``refusal``; further choices (``n`` > 1) have no slot (``response_field``).
* everything else at the top level (``system_fingerprint``, ``service_tier``, the request echo of a
  ``Response``: ``instructions``, ``temperature``, ``tools`` ...) is a ``response_field`` (``tools``
  for tools and tool_choice) loss; the target's own required fields are filled with documented
  defaults (``filled_default``).

>>> from pipeline.formats import decode_records
>>> t = decode_records([{"id": "msg_1", "type": "message", "role": "assistant", "model": "m",
...     "content": [{"type": "text", "text": "hi"}], "stop_reason": "end_turn", "stop_sequence": None,
...     "usage": {"input_tokens": 3, "output_tokens": 1}}], "anthropic").table
>>> from pipeline.encoders import convert_table
>>> [c] = convert_table(t, "chat")
>>> c.record["choices"], c.record["usage"]
([{'index': 0, 'finish_reason': 'stop', 'message': {'role': 'assistant', 'content': 'hi'}, \
'logprobs': None}], {'prompt_tokens': 3, 'completion_tokens': 1, 'total_tokens': 4})
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pipeline.encoders import to_anthropic, to_chat, to_responses
from pipeline.encoders._context import CALLS, PART_LOSS_KINDS, Ctx
from pipeline.errors import a_or_an, quoted
from pipeline.losses import pointer
from pipeline.schema import FORM_NULL

FORMATS = frozenset(("responses", "chat", "anthropic"))

# Source top-level keys this module reads (every other key is a response_field loss).
ENVELOPE_KEYS = {
    "responses": ("id", "object", "created_at", "status", "incomplete_details", "usage"),
    "chat": ("id", "object", "created", "usage"),
    "anthropic": ("id", "type", "role", "stop_reason", "stop_sequence", "usage"),
}
# The tag each format's response object carries, and its value.
TAGS = {
    "responses": ("object", "response"),
    "chat": ("object", "chat.completion"),
    "anthropic": ("type", "message"),
}


# The content blocks an Anthropic response Message holds (of those the request encoder writes).
MESSAGE_BLOCKS = frozenset(("text", "thinking", "redacted_thinking", "tool_use"))


def supported(source: str, target: str) -> bool:
    """Can a response object of ``source`` be converted to ``target``?"""
    return source in FORMATS and target in FORMATS


# -- reading the source envelope ----------------------------------------------------------------


def _first_choice_end(ctx: Ctx) -> int:
    """End of the items of ``choices[0]`` (a Chat completion's alternatives have no slot)."""
    v = ctx.v
    i = ctx.start
    while i < ctx.end and v.group[i] == v.group[ctx.start]:
        i += 1
    return i


def _has_calls(ctx: Ctx) -> bool:
    return any(ctx.v.type[i] in CALLS for i in range(ctx.start, ctx.end))


def _stop_write(fmt: str, neutral: str, calls: bool) -> Any:
    """How ``fmt`` writes a neutral stop reason (Responses: ``(status, incomplete reason)``)."""
    if fmt == "chat":
        return neutral if neutral in ("length", "content_filter") else "tool_calls" if calls else "stop"
    if fmt == "anthropic":
        return {
            "length": "max_tokens",
            "content_filter": "refusal",
            "stop_sequence": "stop_sequence",
            "pause": "pause_turn",
        }.get(neutral, "tool_use" if calls else "end_turn")
    if neutral == "length":
        return ("incomplete", "max_output_tokens")
    return ("incomplete", "content_filter") if neutral == "content_filter" else ("completed", None)


def _stop_read(fmt: str, value: Any, calls: bool) -> str:
    """The neutral stop reason of a value ``fmt`` wrote (see :func:`_stop_write`)."""
    if fmt != "responses" and not isinstance(value, str):  # null, or a value no API writes
        return "stop"
    if fmt == "chat":
        return {
            "length": "length",
            "content_filter": "content_filter",
            "tool_calls": "tool_calls",
            "function_call": "tool_calls",
        }.get(value, "stop")
    if fmt == "anthropic":
        return {
            "tool_use": "tool_calls",
            "max_tokens": "length",
            "refusal": "content_filter",
            "stop_sequence": "stop_sequence",
            "pause_turn": "pause",
            "model_context_window_exceeded": "length",
        }.get(value, "stop")
    status, reason = value
    if status == "incomplete":
        return "content_filter" if reason == "content_filter" else "length"
    return "tool_calls" if calls else "stop"


def _stop(ctx: Ctx, extra: dict[str, Any], choice: dict[str, Any], target: str) -> str:
    """The neutral stop reason of the source; a ``status`` loss when source -> target -> source
    would not give the source's value back."""
    calls = _has_calls(ctx)
    if ctx.source == "responses":
        details = extra.get("incomplete_details")
        reason = details.get("reason") if isinstance(details, dict) else None
        value: Any = (extra.get("status"), reason)
    elif ctx.source == "chat":
        value = choice.get("finish_reason")
    else:
        value = extra.get("stop_reason")
    neutral = _stop_read(ctx.source, value, calls)
    back = _stop_write(ctx.source, _stop_read(target, _stop_write(target, neutral, calls), calls), calls)
    detail = f"{value!r} has no exact equivalent; comes back as {back!r}"
    if ctx.source != "responses":
        if back != value:
            ctx.lose({"chat": "/choices/0/finish_reason"}.get(ctx.source, "/stop_reason"), "status", detail)
        return neutral
    if back[0] != value[0]:
        ctx.lose("/status", "status", detail)
    # the way back writes {"reason": ...} or null: anything else in incomplete_details changes
    if "incomplete_details" in extra and extra["incomplete_details"] != (
        {"reason": back[1]} if back[1] else None
    ):
        ctx.lose("/incomplete_details", "status", detail)
    return neutral


# neutral name -> key path in each format's usage. "input" counts every input token (OpenAI's
# meaning: Anthropic's input_tokens exclude cache reads and writes, added back when read).
USAGE_KEYS = {
    "responses": {
        "input": ("input_tokens",),
        "cached": ("input_tokens_details", "cached_tokens"),
        "written": ("input_tokens_details", "cache_write_tokens"),
        "output": ("output_tokens",),
        "reasoning": ("output_tokens_details", "reasoning_tokens"),
        "total": ("total_tokens",),
    },
    "chat": {
        "input": ("prompt_tokens",),
        "output": ("completion_tokens",),
        "total": ("total_tokens",),
        "cached": ("prompt_tokens_details", "cached_tokens"),
        "written": ("prompt_tokens_details", "cache_write_tokens"),
        "reasoning": ("completion_tokens_details", "reasoning_tokens"),
    },
    "anthropic": {
        "input": ("input_tokens",),
        "written": ("cache_creation_input_tokens",),
        "cached": ("cache_read_input_tokens",),
        "output": ("output_tokens",),
    },
}
USAGE_REQUIRED = {
    "responses": frozenset(USAGE_KEYS["responses"]),
    "chat": frozenset(("input", "output", "total")),
    "anthropic": frozenset(("input", "output")),
}
Usage = dict[str, int | None]


def _get(d: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(d, dict) or key not in d:
            return None
        d = d[key]
    return d


def _read_usage(fmt: str, usage: dict[str, Any]) -> Usage:
    """Neutral counts from a usage object of ``fmt`` (None: not there, or not an integer)."""
    u: Usage = {}
    for name, path in USAGE_KEYS[fmt].items():
        value = _get(usage, path)
        u[name] = value if type(value) is int else None
    if fmt == "anthropic":
        if u["input"] is not None:
            u["input"] += (u["cached"] or 0) + (u["written"] or 0)
        if u["input"] is not None and u["output"] is not None:
            u["total"] = u["input"] + u["output"]
    return u


def _write_usage(fmt: str, u: Usage, fill: Any = None) -> dict[str, Any]:
    """A usage object of ``fmt`` from neutral counts; a required count that is missing is 0, and
    ``fill(name)`` is told so."""
    out: dict[str, Any] = {}
    for name, path in USAGE_KEYS[fmt].items():
        value = u.get(name)
        if name == "total" and value is None and u.get("input") is not None and u.get("output") is not None:
            value = u["input"] + u["output"]  # type: ignore[operator]
        if fmt == "anthropic" and name == "input" and value is not None:
            value -= (u.get("cached") or 0) + (u.get("written") or 0)
        if value is None:
            if name not in USAGE_REQUIRED[fmt]:
                continue
            value = 0
            if fill is not None:
                fill(name)
        d = out
        for key in path[:-1]:
            d = d.setdefault(key, {})
        d[path[-1]] = value
    return out


def _usage_diff(a: Any, b: Any, path: str) -> list[str]:
    """Pointers (into ``a``) where two usage objects differ."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for key in a:
            out += _usage_diff(a[key], b[key], path + pointer(key)) if key in b else [path + pointer(key)]
        return out + [path + pointer(key) for key in b if key not in a]
    return [] if type(a) is type(b) and a == b else [path]


def _usage(ctx: Ctx, usage: Any, target: str) -> dict[str, Any] | None:
    """The target's usage object, with a ``usage`` loss wherever source -> target -> source would
    not give the source's counts back (no slot in the target, counted differently, unknown keys)."""
    if usage is None or not isinstance(usage, dict):
        if usage is not None:
            ctx.lose("/usage", "usage", "usage is not an object")
        if target == "anthropic":  # required there
            ctx.lose("/usage", "filled_default", "no usage: written as 0 input and 0 output tokens")
            return {"input_tokens": 0, "output_tokens": 0}
        if ctx.source == "anthropic" and usage is None:
            ctx.lose("/usage", "filled_default", "no usage: the way back writes 0 input and 0 output tokens")
        return None
    keys = USAGE_KEYS[ctx.source]
    known = {p[: n + 1] for p in keys.values() for n in range(len(p))}
    projected: dict[str, Any] = {}  # the source's usage without the keys it has no neutral name for
    for key, value in usage.items():  # source order: the report does not depend on hashing
        if (key,) not in known:
            ctx.lose(pointer("usage", key), "usage", f"'{key}' has no slot in the {target} usage")
        elif isinstance(value, dict) and any(len(p) > 1 and p[0] == key for p in known):
            projected[key] = {}
            for k2, v2 in value.items():
                if (key, k2) in known:
                    projected[key][k2] = v2
                else:
                    ctx.lose(pointer("usage", key, k2), "usage", f"'{k2}' has no slot in the {target} usage")
        else:
            projected[key] = value

    def fill(name: str) -> None:
        where = keys.get(name, ())
        path, d = "/usage", usage
        for key in where:  # down to the first key the source does not have
            path += pointer(key)
            if not isinstance(d, dict) or key not in d:
                break
            d = d[key]
        ctx.lose(path, "filled_default", f"no {name} token count: written as 0")

    neutral = _read_usage(ctx.source, usage)
    out = _write_usage(target, neutral, fill)
    back = _write_usage(ctx.source, _read_usage(target, out))
    for path in _usage_diff(projected, back, "/usage"):
        ctx.lose(path, "usage", f"comes back from {target} as another count (or not at all)")
    return out


# -- the envelope -------------------------------------------------------------------------------


def _choice(ctx: Ctx) -> dict[str, Any]:
    """A Chat completion's first choice (its keys other than the message), reporting what has no
    slot: further choices, and the choice's logprobs and unknown keys."""
    if ctx.source != "chat":
        return {}
    if ctx.start == ctx.end:
        ctx.lose("/choices", "response_field", "no choice: written as one empty assistant message")
        return {}
    v = ctx.v
    first_end = _first_choice_end(ctx)
    seen = -1
    for i in range(first_end, ctx.end):
        if v.group[i] != seen:
            seen = v.group[i]
            ctx.lose(
                pointer("choices", seen), "response_field", "the target holds one choice; this one is dropped"
            )
    ctx.end = first_end  # the items converted below are the first choice's
    choice = ctx.wrapper(ctx.start)
    if choice.get("index", ...) != 0:
        ctx.lose("/choices/0/index", "response_field", "the one choice comes back as index 0")
    if "logprobs" not in choice:
        ctx.lose("/choices/0/logprobs", "response_field", "comes back as null")
    for key, value in choice.items():
        if key == "logprobs" and value is not None:
            ctx.lose("/choices/0/logprobs", "logprobs", "the target response has no logprobs here")
        elif key not in ("index", "finish_reason", "logprobs"):
            ctx.lose(pointer("choices", 0, key), "response_field", f"'{key}' has no slot in the target")
    return choice


def _envelope_losses(ctx: Ctx, extra: dict[str, Any], target: str) -> None:
    """Top-level keys of the source response that the target does not carry."""
    for key in extra:  # source order
        if key not in ENVELOPE_KEYS[ctx.source]:
            ctx.lose(pointer(key), "response_field", f"'{key}' has no slot in {a_or_an(target)} response")
    tag, value = TAGS[ctx.source]
    if extra.get(tag, ...) != value:
        ctx.lose(pointer(tag), "response_field", f"comes back as {tag} {value!r}")
    if ctx.source == "anthropic" and extra.get("role", ...) != "assistant":
        ctx.lose("/role", "response_field", "comes back as role 'assistant'")
    if ctx.source == "anthropic" and extra.get("stop_sequence", ...) is not None and target != "anthropic":
        ctx.lose("/stop_sequence", "response_field", "the matched stop sequence has no slot")
    if ctx.source == "responses" and "incomplete_details" not in extra:
        ctx.lose("/incomplete_details", "response_field", "comes back as null")
    if ctx.source == "responses" and ctx.view.instr_form[ctx.r] != "absent":
        ctx.lose("/instructions", "response_field", "the echoed instructions have no slot")
    if ctx.source == "responses":
        for key in ("tools", "tool_choice"):
            if getattr(ctx.view, key)[ctx.r] is not None:
                ctx.lose(pointer(key), "tools", "the echoed request tools have no slot")
            else:  # required in a Response: the way back writes the default
                ctx.lose(pointer(key), "tools", "absent: comes back as the default")
        if "parallel_tool_calls" not in extra:
            ctx.lose("/parallel_tool_calls", "response_field", "absent: comes back as the default")
    if "usage" in extra and extra["usage"] is None and target != "anthropic":
        ctx.lose("/usage", "response_field", "an explicit null usage does not come back")
    ctx.lose_nulls("response_field")


def _id(ctx: Ctx, extra: dict[str, Any]) -> str:
    rid = extra.get("id")
    if isinstance(rid, str):
        return rid
    ctx.lose("/id", "generated_id", "a response without id got one")
    return ctx.generated_id({"chat": "chatcmpl", "anthropic": "msg"}.get(ctx.source, "resp"), -1)


def _created(ctx: Ctx, extra: dict[str, Any], target: str) -> int | float | None:
    """The creation time (seconds) for the target; None for Anthropic, which has none."""
    key = {"responses": "created_at", "chat": "created"}.get(ctx.source)
    value = extra.get(key) if key else None
    if target == "anthropic":
        if key in extra:
            ctx.lose(pointer(key), "response_field", "an Anthropic message has no creation time")
        elif key is not None:  # the way back fills one
            ctx.lose(pointer(key), "filled_default", "no creation time: the way back writes 0")
        return None
    if type(value) not in (int, float):
        ctx.lose(pointer(key or "created"), "filled_default", "no creation time: written as 0")
        return 0
    if (target == "chat" or ctx.source == "chat") and type(value) is float:  # 1.0 is not 1
        ctx.lose(pointer(key), "response_field", "Chat's created is whole seconds (an integer)")
        return int(value) if target == "chat" else value
    return value


def _model(ctx: Ctx) -> str:
    model = ctx.view.model[ctx.r]
    if model is None:
        ctx.lose("/model", "filled_default", "no model: written as ''")
        return ""
    return model


@dataclass(frozen=True)
class Envelope:
    """What every target's response object carries from the source envelope, read once.

    ====================  ==========================================================
    field                 value
    ====================  ==========================================================
    stop                  the neutral stop reason (``stop``, ``length``, ...)
    usage                 the target's usage object (None: the target leaves it out)
    id                    the source's id, or a generated one
    created               creation time in seconds (None: an Anthropic target)
    model                 the source's model, or ``''``
    ====================  ==========================================================
    """

    stop: str
    usage: dict[str, Any] | None
    id: str
    created: int | float | None
    model: str


def _envelope(ctx: Ctx, extra: dict[str, Any], choice: dict[str, Any], target: str) -> Envelope:
    """Read the source envelope for ``target``, reporting its losses in this order whatever the
    target: stop reason, usage, id, creation time, model."""
    if ctx.source == "responses" and ctx.view.items_form[ctx.r] == FORM_NULL:  # kept by the decoder
        ctx.lose("/output", "content_form", "a null output: the way back writes a list")
    stop = _stop(ctx, extra, choice, target)
    usage = _usage(ctx, extra.get("usage"), target)
    rid = _id(ctx, extra)
    created = _created(ctx, extra, target)
    return Envelope(stop, usage, rid, created, _model(ctx))


# -- the targets ---------------------------------------------------------------------------------


def _output_ptr(ctx: Ctx) -> str:
    return {"responses": "/output", "chat": "/choices/0/message/content", "anthropic": "/content"}[ctx.source]


def _assistant(ctx: Ctx, message: dict[str, Any]) -> None:
    """The whole output is the assistant's: a message the request encoder gave another role (an
    output message without one reads as a user message) is reported and written as assistant."""
    if message.get("role") != "assistant":
        ctx.lose(
            _output_ptr(ctx), "role", f"an output message read as '{message.get('role')}' is the assistant's"
        )


def _chat_message(ctx: Ctx, messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The Chat output as the one assistant message a completion's choice has (string content)."""
    texts: list[str] = []
    refusals: list[str] = []
    calls: list[dict[str, Any]] = []
    for m in messages:
        content = m.get("content")
        if m.get("role") == "tool":  # a tool output in a response's output: no slot in a completion
            ctx.lose(_output_ptr(ctx), "unknown_item", "a tool output has no slot in a completion")
            continue
        _assistant(ctx, m)
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            if not any(part.get("type") in ("text", "refusal") for part in content):
                # a message with no text adds nothing to the one content string: gone on the way back
                ctx.lose(_output_ptr(ctx), "content_form", "an output message with no text is not kept")
            for part in content:
                if part.get("type") == "refusal":
                    refusals.append(part.get("refusal") or "")
                elif part.get("type") == "text":
                    texts.append(part.get("text") or "")
        calls.extend(m.get("tool_calls") or [])
    if len(texts) > 1 or len(refusals) > 1:
        ctx.lose(_output_ptr(ctx), "block_boundary", "the output's texts are joined into one content string")
    if ctx.source != "chat" and texts:
        ctx.lose(_output_ptr(ctx), "content_form", "text parts become the completion's content string")
    msg: dict[str, Any] = {"role": "assistant", "content": "".join(texts) if texts else None}
    if refusals:
        msg["refusal"] = "".join(refusals)
        ctx.lose(_output_ptr(ctx), "refusal", "a refusal part became the message's refusal")
    if calls:
        msg["tool_calls"] = calls
    return msg


def _to_chat(ctx: Ctx, env: Envelope) -> dict[str, Any]:
    message = _chat_message(ctx, to_chat.encode(ctx)["messages"])
    finish = _stop_write("chat", env.stop, "tool_calls" in message)
    out: dict[str, Any] = {
        "id": env.id,
        "object": "chat.completion",
        "created": env.created,
        "model": env.model,
        "choices": [{"index": 0, "finish_reason": finish, "message": message, "logprobs": None}],
    }
    if env.usage is not None:
        out["usage"] = env.usage
    return out


def _to_anthropic(ctx: Ctx, env: Envelope) -> dict[str, Any]:
    blocks: list[dict[str, Any]] = []
    for m in to_anthropic.encode(ctx)["messages"]:
        _assistant(ctx, m)
        content = m["content"]
        for block in [{"type": "text", "text": content}] if isinstance(content, str) else content:
            if block.get("type") in MESSAGE_BLOCKS:
                blocks.append(block)
            else:  # a tool result or media in a response's output: a Message cannot hold it
                ctx.lose(
                    _output_ptr(ctx),
                    "unknown_item",
                    f"{a_or_an(quoted(block.get('type')))} block has no slot in a Message",
                )
    if not blocks:  # read back as one message with no content
        ctx.lose(
            _output_ptr(ctx), "content_form", "nothing Anthropic can hold: comes back as an empty message"
        )
    calls = any(b.get("type") == "tool_use" for b in blocks)
    return {
        "id": env.id,
        "type": "message",
        "role": "assistant",
        "model": env.model,
        "content": blocks,
        "stop_reason": _stop_write("anthropic", env.stop, calls),
        "stop_sequence": None,
        "usage": env.usage,
    }


def _output_items(ctx: Ctx, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Request input items as Response output items: a message without a type tag (string content,
    or a role the request encoder read as another) becomes an output message, its id generated and
    its texts ``output_text`` parts; parts an output message cannot hold are dropped."""
    out = []
    for n, item in enumerate(items):
        if "type" in item:
            out.append(item)
            continue
        _assistant(ctx, item)
        path = "/choices/0/message" if ctx.source == "chat" else _output_ptr(ctx)
        ctx.lose(path, "generated_id", "an output message needs an id; generated")
        content = item.get("content")
        parts = [{"type": "input_text", "text": content}] if isinstance(content, str) else content or []
        texts = []
        for part in parts:
            if part.get("type") in ("input_text", "output_text"):
                texts.append({"type": "output_text", "text": part.get("text", ""), "annotations": []})
            else:
                ctx.lose(path, PART_LOSS_KINDS.get(part.get("type"), "unknown_field"),
                         f"{a_or_an(quoted(part.get('type')))} part has no slot in an output "
                         "message")  # fmt: skip
        if isinstance(content, str):
            ctx.lose(path + ("/content" if ctx.source == "chat" else ""), "content_form",
                     "the content string becomes an output_text part")  # fmt: skip
        out.append({"type": "message", "id": ctx.generated_id("msg", ctx.start + n), "role": "assistant",
                    "status": "completed", "content": texts})  # fmt: skip
    return out


def _to_responses(ctx: Ctx, env: Envelope) -> dict[str, Any]:
    output = _output_items(ctx, to_responses.encode(ctx)["input"])
    status, reason = _stop_write("responses", env.stop, any(i.get("type") == "function_call" for i in output))
    for key in ("tools", "tool_choice", "parallel_tool_calls"):
        ctx.lose(pointer(key), "filled_default", f"a Response requires {key}: written as the default")
    out: dict[str, Any] = {
        "id": env.id,
        "object": "response",
        "created_at": env.created,
        "status": status,
        "incomplete_details": {"reason": reason} if reason else None,
        "model": env.model,
        "output": output,
        "tools": [],
        "tool_choice": "auto",
        "parallel_tool_calls": True,
    }
    if env.usage is not None:
        out["usage"] = env.usage
    return out


def _blank_texts(ctx: Ctx) -> None:
    """Blank text blocks of an Anthropic Message: kept in the target, but the way back never
    writes an empty text block (the API rejects them)."""
    v = ctx.v
    for i in range(ctx.start, ctx.end):
        if v.type[i] == "message":
            for k, j in enumerate(ctx.blocks(i)):
                if v.content.type[j] == "text" and not (v.content.text[j] or "").strip():
                    ctx.lose(ctx.content_ptr(i, k), "empty_text", "a blank text block does not come back")


def encode(ctx: Ctx, target: str) -> dict[str, Any]:
    """Convert one canonical response row to ``target``'s response object (see the module docstring)."""
    if not supported(ctx.source, target):
        raise ValueError(f"converting {a_or_an(ctx.source)} response object to {target} is not supported yet")
    extra = ctx.top_extra()
    while ctx.start < ctx.end and ctx.source == "responses" and ctx.v.section[ctx.start] != "output":
        ctx.start += 1  # instructions echoed as items come first; reported with /instructions
    choice = _choice(ctx)
    if ctx.source == "anthropic":
        _blank_texts(ctx)
    _envelope_losses(ctx, extra, target)
    build = {"chat": _to_chat, "anthropic": _to_anthropic, "responses": _to_responses}[target]
    return build(ctx, _envelope(ctx, extra, choice, target))
