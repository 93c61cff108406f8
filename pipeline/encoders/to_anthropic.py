"""Canonical rows of Responses, Chat, HF or ShareGPT -> Anthropic Messages request bodies, with every
loss reported.

Semantics (sections 3 and 4.1 of the wire-format reference):

* **system**: Responses ``instructions`` and the system/developer messages that open the
  conversation become the top-level ``system``: a string when it comes from one string, else a
  list of ``text`` blocks (one per source text, so no separator is invented). Later system/developer
  messages stay in place as ``role: "system"`` messages. developer -> system is ``developer_role``;
  a Responses message turned into top-level text is ``instruction_position``.
* **turns**: adjacent same-role messages become one message (the server merges them anyway); when
  the merge erases a boundary the Anthropic -> source leg cannot restore, it is ``message_merge``.
  Calls become ``tool_use`` blocks of the assistant turn; outputs become ``tool_result`` blocks
  leading the *next* user message (moved there if needed: ``tool_output_order``), and user text
  that follows the outputs joins that message. A call nobody answers is dropped
  (``unanswered_call``: the API rejects it), as is an output with no call (``orphan_output``).
  A call without id gets the id every encoder generates for it (:mod:`pipeline.encoders.call_ids`,
  ``generated_id``), and an output without one the id of the oldest unanswered call before it.
* **arguments** become ``input`` objects: parsed with orjson; not an object -> ``{"_raw": text}``;
  any case where compact orjson text would not give back the exact string is ``argument_string``.
  Custom (free-form) calls are wrapped as ``{"input": text}`` (``custom_tool``).
* **text**: empty and whitespace-only text is never emitted (``empty_text``); the final assistant
  message (a prefill) loses trailing whitespace (``whitespace``).
* **refusals** are kept as plain text blocks, so the assistant turn still says what the model
  said, and reported as ``refusal`` (the refusal marker is what is lost).
* **reasoning** is dropped (``reasoning``; ``encrypted_reasoning`` when it had opaque state):
  ``thinking`` needs an Anthropic signature, which an OpenAI source never has.
* **media**: data-URL images (jpeg/png/gif/webp) -> base64 sources, http(s) -> url sources; file
  ids and other media types are ``image``. PDF data/URLs become ``document`` blocks, still reported
  as ``file`` (filename and part shape are lost); other files are dropped (``file``).
* **request**: ``model`` is carried verbatim (never invented: a body without one must get it from
  the caller); ``max_tokens`` comes from ``max_output_tokens`` / ``max_completion_tokens`` /
  ``max_tokens`` (an HF/ShareGPT row's top-level one, reported: the way back drops it) or is the
  documented :data:`DEFAULT_MAX_TOKENS` (``filled_default``, since the source had no limit); Chat
  ``stop`` becomes ``stop_sequences``; everything else is ``request_field`` (the pinned SDK's
  request type has no ``temperature`` or ``top_p``).

* **dataset rows** (HF, ShareGPT) are read as :mod:`pipeline.encoders.from_dataset` reads them for
  Chat: id-less calls get generated ids and their outputs the same (``generated_id``), HF object
  arguments and ShareGPT ``function_call`` values become ``input``, the ShareGPT ``system`` column
  and an HF leading system message become ``system``, the function schemas become tools; what the
  way back to the dataset format drops (``model``, ``tool_choice``, ``max_tokens``, content lists)
  is reported. HF rows nest calls in their assistant message, like Chat (:data:`NESTED`).
* **response objects** (``record_kind`` response) use only the item rules: no system prompt, no
  call/result pairing, no prefill trimming; :mod:`pipeline.encoders.response_objects` writes the
  ``Message`` around the blocks.

The loss report promises that A -> Anthropic -> A differs nowhere else, so it also names:

* values this body keeps but the existing Anthropic -> source encoders do not restore (a tool's
  ``strict``, ``stop_sequences``, string content that shares a turn with other blocks);
* boundaries made ambiguous: Anthropic messages, blocks and calls carry no ids, so when an element
  is dropped or changes kind, a neighbour of the same kind that also changed can no longer be told
  apart from it; that neighbour is reported whole (``message_merge``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from pipeline.encoders import from_dataset, to_hf
from pipeline.encoders._context import (
    CALLS,
    DEFAULT_FILENAME,
    OUTPUTS,
    PDF_DATA_URL,
    Ctx,
    instruction_items,
    keys_except,
    stop_fits,
)
from pipeline.encoders.call_ids import CallIds
from pipeline.errors import a_or_an, quoted
from pipeline.losses import pointer
from pipeline.schema import FORM_ABSENT, FORM_NULL, FORM_PARTS, FORM_STRING

DEFAULT_MAX_TOKENS = 4096
"""``max_tokens`` for a source without a token limit (Anthropic requires one)."""

TEXT_TYPES = frozenset(("input_text", "output_text", "text", None))
IMAGE_MEDIA = frozenset(("image/jpeg", "image/png", "image/gif", "image/webp"))
# A custom tool's free-form input wrapped as an object, and the schema declaring that wrapper.
CUSTOM_SCHEMA = {"type": "object", "properties": {"input": {"type": "string"}}, "required": ["input"]}
# Source keys for the output token limit, in order of preference. Dataset rows (HF, ShareGPT) have
# no field of their own: a top-level max_tokens (what --set writes there) is used, else the default.
TOKEN_KEYS = {
    "responses": ("max_output_tokens",),
    "chat": ("max_completion_tokens", "max_tokens"),
    "hf": ("max_tokens",),
    "sharegpt": ("max_tokens",),
}
# Sources whose calls sit in their assistant message's ``tool_calls`` (and come back there).
NESTED = frozenset(("chat", "hf"))


@dataclass(eq=False)
class Seg:
    """One source element's share of an Anthropic message: a message's blocks, a call or an output."""

    kind: str  # "text" | "call" | "result"
    role: str  # the Anthropic role: user | assistant | system
    i: int  # canonical item index, for source pointers
    blocks: list[dict[str, Any]] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)  # source pointer of each block's text
    string: bool = False  # the source content was a plain string (it may stay one)
    call_id: str | None = None
    placed: bool = False  # a result already put right after its call


@dataclass(eq=False)
class Turn:
    """One Anthropic message being assembled from segments."""

    role: str
    segs: list[Seg]

    def blocks(self) -> list[dict[str, Any]]:
        return [b for s in self.segs for b in s.blocks]


# ---------------------------------------------------------------------------------------------
# Content blocks


def _text_type_back(ctx: Ctx, where: str) -> str:
    """The part type a text block comes back as from Anthropic (what the source must have had)."""
    if ctx.source in NESTED:
        return "text"
    return "output_text" if where == "assistant" else "input_text"


def _text_block(ctx: Ctx, i: int, j: int, path: str, where: str) -> dict[str, Any] | None:
    """A text (or refusal) part as a ``text`` block; part details Anthropic has no slot for are lost."""
    c = ctx.v.content
    t = c.type[j]
    if t == "refusal":
        ctx.lose(path, "refusal", "a refusal became plain text (Anthropic has no refusal part)")
    elif t != _text_type_back(ctx, where):
        ctx.lose(
            path + "/type",
            "content_form",
            f"{a_or_an(quoted(t))} part comes back as '{_text_type_back(ctx, where)}'",
        )
    ann = c.annotations[j]
    if ctx.source == "responses" and where == "assistant" and t != "refusal":
        if ann != b"[]":
            ctx.lose(path + "/annotations", "annotations", "Anthropic text blocks have no annotations")
    elif ann is not None or "annotations" in (c.nulls[j] or ()):
        ctx.lose(path + "/annotations", "annotations", "Anthropic text blocks have no annotations")
    if c.logprobs[j] is not None or "logprobs" in (c.nulls[j] or ()):
        ctx.lose(path + "/logprobs", "logprobs", "Anthropic requests have no logprobs")
    for name in c.nulls[j] or ():
        if name not in ("annotations", "logprobs"):
            ctx.lose(path + pointer("refusal" if name == "text" and t == "refusal" else name),
                     "unknown_field", f"explicit null '{name}' dropped")  # fmt: skip
    for key in ctx.block_extra(j):
        kind = "cache_control" if key == "prompt_cache_breakpoint" else "unknown_field"
        ctx.lose(path + pointer(key), kind, f"'{key}' has no slot in an Anthropic text block")
    text = c.text[j] or ""
    if not text.strip():
        ctx.lose(path, "empty_text", "Anthropic rejects empty or whitespace-only text blocks")
        return None
    return {"type": "text", "text": text}


def image_source(url: Any) -> dict[str, Any] | None:
    """An Anthropic image source for a data URL or http(s) URL; None when there is none.

    A base64 source comes back as ``data:<media_type>;base64,<data>``, so only URLs of exactly that
    shape (and a media type Anthropic takes) are converted.
    """
    if not isinstance(url, str):
        return None
    if url.startswith("data:"):
        head, sep, data = url.partition(",")
        media, _, enc = head[5:].partition(";")
        if sep and enc == "base64" and media in IMAGE_MEDIA:
            return {"type": "base64", "media_type": media, "data": data}
        return None
    if url.startswith(("https://", "http://")):
        return {"type": "url", "url": url}
    return None


def _image_block(ctx: Ctx, extra: dict[str, Any], path: str) -> dict[str, Any] | None:
    """Responses ``input_image`` / Chat ``image_url`` as an ``image`` block (``detail`` is lost)."""
    if ctx.source in NESTED:
        inner = extra.get("image_url")
        inner = inner if isinstance(inner, dict) else {}
        url = inner.get("url")
        lost = [("image_url/" + k, v) for k, v in inner.items() if k != "url"]
        lost += [(k, v) for k, v in extra.items() if k != "image_url"]
    else:
        url = extra.get("image_url")
        lost = [(k, v) for k, v in extra.items() if k != "image_url" and not (k == "detail" and v == "auto")]
        if "detail" not in extra:
            lost.append(("detail", None))  # comes back as detail 'auto'
    source = image_source(url)
    if source is None:
        ctx.lose(path, "image", "no data URL (jpeg/png/gif/webp) or http(s) URL Anthropic can take")
        return None
    for key, _ in lost:
        kind = "cache_control" if key == "prompt_cache_breakpoint" else "image"
        ctx.lose(path + "/" + "/".join(pointer(p)[1:] for p in key.split("/")), kind,
                 f"image '{key}' has no slot in Anthropic")  # fmt: skip
    return {"type": "image", "source": source}


def _document_block(ctx: Ctx, j: int, extra: dict[str, Any], path: str) -> dict[str, Any] | None:
    """A PDF file part as a ``document`` block (its filename the title); anything else is dropped
    (``file``). The way back (:func:`pipeline.encoders._context.openai_file`) gives the same part
    from the block, so only what the block has no slot for is reported: other keys, and a missing
    filename (the way back fills one)."""
    f = extra.get("file") if ctx.source in NESTED else extra
    f = f if isinstance(f, dict) else {}
    data, url = f.get("file_data"), f.get("file_url")
    source: dict[str, Any] | None = None
    if isinstance(data, str) and data.startswith(PDF_DATA_URL):
        used = "file_data"
        source = {"type": "base64", "media_type": "application/pdf", "data": data[len(PDF_DATA_URL) :]}
    elif isinstance(url, str) and url.startswith(("https://", "http://")):
        source, used = {"type": "url", "url": url}, "file_url"
    if source is None:
        ctx.lose(path, "file", "a file part with no PDF data or URL has no equivalent in Anthropic")
        return None
    block: dict[str, Any] = {"type": "document", "source": source}
    inner = path + "/file" if ctx.source in NESTED else path
    if isinstance(f.get("filename"), str):
        block["title"] = f["filename"]
    elif used == "file_data":
        ctx.lose(inner + "/filename", "file", f"no filename: the way back writes '{DEFAULT_FILENAME}'")
    carried = {used, "filename"} if "title" in block else {used}
    if ctx.source in NESTED:
        for key in keys_except(f, carried):
            ctx.lose(inner + pointer(key), "file", f"file '{key}' has no slot in a document block")
        carried = {"file"}
    for key in keys_except(ctx.source_block(j), {"type", *carried}):
        ctx.lose(path + pointer(key), "file", f"'{key}' has no slot in a document block")
    return block


# A text part's keys with a column of their own in a content block (cache_control last: with a value
# it is reported for every part type).
_TEXT_PART_KEYS = ("text", "annotations", "logprobs", "citations", "cache_control")


def _text_keys_on_image(ctx: Ctx, j: int, path: str) -> None:
    """Report a text part's keys on image part ``j``: decode keeps them in the block's own columns
    (text, annotations, logprobs, citations; nulls by name), not in its extra keys, and an image
    block has no slot for them (a document block reports its whole source part itself). A
    cache_control with a value is reported by the caller; a null one is reported here."""
    c = ctx.v.content
    nulls = c.nulls[j] or ()
    values = (c.text[j], c.annotations[j], c.logprobs[j], c.citations[j], None)
    for key, value in zip(_TEXT_PART_KEYS, values, strict=True):
        if value is not None or key in nulls:
            ctx.lose(path + pointer(key), "unknown_field", f"'{key}' has no slot in an Anthropic image block")


def _part(ctx: Ctx, i: int, j: int, k: int, where: str) -> dict[str, Any] | None:
    """Content part ``k`` (block ``j``) of item ``i`` as an Anthropic block, or None (with a loss)."""
    c = ctx.v.content
    t = c.type[j]
    path = ctx.content_ptr(i, k)
    media_ok = where in ("user", "tool")
    text = t in TEXT_TYPES or (t == "refusal" and where == "assistant")
    if not (text or (media_ok and t in ("input_image", "image_url", "input_file", "file"))):
        ctx.lose_part(path, t, f"an Anthropic {where} message")
        return None
    # an OpenAI part's cache_control (OpenRouter, LiteLLM) is not sent (a document block reports
    # every key it does not carry itself)
    if c.cache_control[j] is not None and t not in ("input_file", "file"):
        ctx.lose(path + "/cache_control", "cache_control", "'cache_control' is not carried to Anthropic")
    if text:
        return _text_block(ctx, i, j, path, where)
    extra = ctx.block_extra(j)
    if t in ("input_image", "image_url"):
        _text_keys_on_image(ctx, j, path)
        return _image_block(ctx, extra, path)
    return _document_block(ctx, j, extra, path)


def _content_blocks(ctx: Ctx, i: int, where: str, seg: Seg) -> None:
    """Fill ``seg`` with item ``i``'s content (a message's text, or a tool output's content)."""
    v = ctx.v
    form = v.content_form[i]
    if form == FORM_STRING:
        text = v.content.text[v.content_off[i]]
        path = ctx.content_ptr(i)
        if text.strip():
            seg.blocks.append({"type": "text", "text": text})
            seg.paths.append(path)
            seg.string = True
        else:
            ctx.lose(path, "empty_text", "Anthropic rejects empty or whitespace-only text")
        return
    if form != FORM_PARTS:
        return
    for k, j in enumerate(ctx.blocks(i)):
        block = _part(ctx, i, j, k, where)
        if block is not None:
            seg.blocks.append(block)
            seg.paths.append(ctx.content_ptr(i, k) + ("/text" if block["type"] == "text" else ""))


# ---------------------------------------------------------------------------------------------
# Items -> segments


def _item_keys_lost(ctx: Ctx, i: int, skip: tuple[str, ...] = ()) -> None:
    """Item id, status, phase, namespace, name and unknown keys: Anthropic has no slot for them.

    A message's id is its identity: without it the message comes back as another item (and a
    Responses output message with a generated id), so that loss covers the whole message. Calls
    and outputs keep their identity in ``call_id``.
    """
    v = ctx.v
    base = ctx.item_ptr(i)
    nulls = v.nulls[i] or ()
    for fld, kind in (("id", "item_id"), ("status", "status"), ("phase", "phase"),
                      ("namespace", "namespace"), ("name", "name")):  # fmt: skip
        if fld not in skip and (getattr(v, fld)[i] is not None or fld in nulls):
            whole = fld == "id" and v.type[i] == "message"
            ctx.lose(base if whole else base + "/" + fld, kind, f"Anthropic has no {fld} here")
    if "native_type" in nulls:
        ctx.lose(base, "content_form", "an explicit null type tag is not kept")
    for key in ctx.extra(i):
        if key in skip:
            continue
        kind = "reasoning" if key in ("reasoning_content", "reasoning") else "unknown_field"
        ctx.lose(base + pointer(key), kind, f"'{key}' has no slot in Anthropic")


def _message_seg(ctx: Ctx, i: int) -> Seg | None:
    """A message item as a text segment (None when it has nothing Anthropic can hold)."""
    v = ctx.v
    role = v.role[i] or "user"
    base = ctx.item_ptr(i)
    if role == "developer":
        ctx.lose(base, "developer_role", "Anthropic has no developer role; it became system")
        role = "system"
    elif role not in ("user", "assistant", "system"):
        key = "/from" if ctx.source == "sharegpt" else "/role"
        ctx.lose(base + key, "unknown_field", f"role '{role}' has no equivalent; sent as user")
        role = "user"
    else:
        to_hf.sharegpt_tag_kept(ctx, i, role)
    seg = Seg("text", role, i)
    _content_blocks(ctx, i, role, seg)
    _item_keys_lost(ctx, i, ("refusal",) if ctx.source == "chat" else ())
    refusal = ctx.extra(i).get("refusal", ...) if ctx.source == "chat" else ...
    if refusal is not ...:
        ctx.lose(base + "/refusal", "refusal", "the refusal field became plain text (or was empty)")
        if isinstance(refusal, str) and refusal.strip():  # a refusal message becomes a text message
            ctx.lose(base, "refusal", "the refusal text was added to the message content")
            seg.blocks.append({"type": "text", "text": refusal})
            seg.paths.append(base + "/refusal")
            seg.string = False
    if seg.blocks:
        return seg
    has_calls = i + 1 < ctx.end and ctx.v.group[i + 1] == v.group[i] and v.type[i + 1] in CALLS
    if ctx.source in NESTED and has_calls:
        # a call-only message comes back with null content (Chat) or none (HF)
        back = FORM_NULL if ctx.source == "chat" else FORM_ABSENT
        if v.content_form[i] not in (back, FORM_STRING):  # a blank string is reported as empty_text
            ctx.lose(ctx.content_ptr(i), "content_form", "content without text comes back as null")
        return None
    ctx.lose(base, "content_form", "a message with no text Anthropic can hold is dropped")
    return None


def _arguments_path(ctx: Ctx, i: int, key: str) -> str:
    sub = "custom" if ctx.v.type[i] == "custom_tool_call" else "function"
    return ctx.item_ptr(i) + (f"/{sub}/{key}" if ctx.source == "chat" else f"/{key}")


def tool_input(ctx: Ctx, raw: str | None, path: str) -> dict[str, Any]:
    """Parsed ``arguments`` as the object ``tool_use.input`` needs.

    Anthropic stores an object, which comes back as compact orjson text: anything else (invalid
    JSON, a non-object, other formatting, duplicate keys) is an ``argument_string`` loss.
    """
    if raw is None:
        ctx.lose(path, "argument_string", "missing arguments sent as {}")
        return {}
    try:
        parsed = orjson.loads(raw)
    except orjson.JSONDecodeError:
        parsed = ...
    if not isinstance(parsed, dict):
        ctx.lose(path, "argument_string", "arguments are not a JSON object; wrapped as {'_raw': text}")
        return {"_raw": raw}
    if orjson.dumps(parsed) != raw.encode():
        ctx.lose(path, "argument_string", "arguments re-serialised: formatting is not kept")
    return parsed


def _call_seg(ctx: Ctx, i: int, calls: from_dataset.DatasetCalls | None, ids: CallIds) -> Seg:
    """A function or custom call as a ``tool_use`` block (custom input wrapped as an object).

    ``ids`` gives an id-less call its generated id (:mod:`pipeline.encoders.call_ids`, reported
    there); ``calls`` (dataset rows only) reads the arguments where HF / ShareGPT keep them
    (:mod:`pipeline.encoders.from_dataset`).
    """
    v = ctx.v
    base = ctx.item_ptr(i)
    call_id = ids.call_id(i)  # never None for a call: CallIds generates the missing ones
    if v.type[i] == "custom_tool_call":
        # In Chat the call changes kind inside tool_calls, where calls have no key to align on.
        where = ctx.message_ptr(i) + "/tool_calls" if ctx.source == "chat" else base
        ctx.lose(where, "custom_tool", "a free-form call was wrapped as tool_use input {'input': text}")
        tool_in: dict[str, Any] = {"input": v.input[i] or ""}
    elif calls is not None:
        tool_in = tool_input(ctx, from_dataset.arguments(ctx, i), to_hf.field_ptr(ctx, i, "arguments"))
    else:
        tool_in = tool_input(ctx, v.arguments[i], _arguments_path(ctx, i, "arguments"))
    if v.name[i] is None:
        ctx.lose(base, "name", "a call without a tool name was sent with name ''")
    block = {"type": "tool_use", "id": call_id, "name": v.name[i] or "", "input": tool_in}
    if calls is not None:  # what the way back to HF / ShareGPT writes differently
        to_hf.call_type_kept(ctx, i)
        to_hf.sharegpt_value_kept(ctx, i)
        from_dataset.call_extra_keys(ctx, i)
    else:
        _call_keys_lost(ctx, i)
    return Seg("call", "assistant", i, [block], [base], call_id=call_id)


def _list_back_as_string(ctx: Ctx, i: int) -> None:
    """HF content lists come back from Anthropic as one string (the HF encoder flattens them)."""
    if ctx.source == "hf" and ctx.v.content_form[i] == FORM_PARTS:
        ctx.lose(ctx.content_ptr(i), "content_form", "a content list comes back to HF as one string")


def _call_keys_lost(ctx: Ctx, i: int) -> None:
    v = ctx.v
    base = ctx.item_ptr(i)
    if ctx.source == "chat":
        ctx.lose_chat_call_keys(i, base, "tool_use")
        if v.native_type[i] is None:
            ctx.lose(base + "/type", "content_form", "a tool call without type comes back with one")
        return
    _item_keys_lost(ctx, i, ("name",))


def _result_seg(ctx: Ctx, i: int, calls: from_dataset.DatasetCalls | None, ids: CallIds) -> Seg:
    """A tool output as a ``tool_result`` block; an empty string output is sent without content.

    An output without a call id gets the id of the call it answers (``ids``: the oldest unanswered
    call before it); one with no such call keeps none and is dropped as an orphan (:func:`_pair`).
    """
    v = ctx.v
    base = ctx.item_ptr(i)
    call_id = ids.call_id(i)
    seg = Seg("result", "user", i, call_id=call_id)
    if v.type[i] == "custom_tool_call_output":
        ctx.lose(base, "custom_tool", "a custom tool output comes back as a function output")
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call_id or ""}
    form = v.content_form[i]
    extra = ctx.extra(i)
    if form == FORM_STRING:
        text = v.content.text[v.content_off[i]]
        if text.strip():
            block["content"] = text
        elif text:  # "" is simply left out (and comes back as ""); whitespace is rejected as text
            ctx.lose(ctx.content_ptr(i), "empty_text", "a whitespace-only output was sent without content")
    elif form == FORM_PARTS:
        parts = Seg("text", "user", i)
        _content_blocks(ctx, i, "tool", parts)
        if parts.blocks:
            block["content"] = parts.blocks
            _list_back_as_string(ctx, i)
        else:
            ctx.lose(ctx.content_ptr(i), "content_form", "an output with no content Anthropic can hold")
    elif ctx.source == "responses" and "output" in extra:
        block["content"] = orjson.dumps(extra["output"]).decode()
        ctx.lose(ctx.content_ptr(i), "content_form", "a JSON value output was sent as its JSON text")
    else:
        ctx.lose(ctx.content_ptr(i), "content_form", "a null or absent output was sent without content")
    if calls is not None:  # a tool message name is the call's on the way back
        calls.output_name(i)
        to_hf.output_kind(ctx, i)
        to_hf.sharegpt_tag_kept(ctx, i, "tool")
        _item_keys_lost(ctx, i, ("output", "name"))
    else:  # a Responses output kept verbatim was sent above; on a Chat tool message it is a stray key
        _item_keys_lost(ctx, i, ("output",) if ctx.source == "responses" else ())
    ctx.lose_fields(i, base, ("arguments", "input", "encrypted_content"))  # a call's keys on an output
    seg.blocks.append(block)
    seg.paths.append(base)
    return seg


def _dropped(ctx: Ctx, i: int) -> None:
    """Items Anthropic cannot hold: reasoning, compaction, references, hosted and unknown items."""
    v = ctx.v
    t = v.type[i]
    base = ctx.item_ptr(i)
    if t == "reasoning":
        ctx.lose(base, "reasoning", "OpenAI reasoning has no valid Anthropic thinking signature")
        if v.encrypted_content[i] is not None:
            ctx.lose(base + "/encrypted_content", "encrypted_reasoning", "opaque reasoning state dropped")
    elif t in ("compaction", "compaction_trigger"):
        ctx.lose(base, "compaction", "Anthropic has no equivalent of an OpenAI compaction item")
    elif t == "item_reference":
        ctx.lose(base, "unknown_item", "an item reference cannot be resolved here")
    elif t == "additional_tools" and ctx.kind == "request" and ctx.source == "responses":
        # its tools are declared in the request's tools (_additional_tools): the calls that use
        # them later in the history call a declared tool
        ctx.lose(base, "tools", "its tools are declared in the request's tools, from the start")
    else:
        ctx.lose_item(base, t, "Anthropic")


def _segments(ctx: Ctx, skip: set[int]) -> list[Seg]:
    """Every item not in ``skip`` (the leading system messages) as segments, in source order."""
    v = ctx.v
    calls = from_dataset.DatasetCalls(ctx) if ctx.source in from_dataset.DATASETS else None
    # Anthropic requires tool_use ids: an id-less call gets the id call_ids.py generates for it,
    # the one the other encoders give it where they generate ids (Anthropic sources, dataset rows).
    ids = calls if calls is not None else CallIds(ctx)
    segs: list[Seg] = []
    for i in range(ctx.start, ctx.end):
        t = v.type[i]
        if i in skip:
            continue
        if t == "message":
            seg = _message_seg(ctx, i)
            if seg is not None:
                segs.append(seg)
        elif t in CALLS:
            segs.append(_call_seg(ctx, i, calls, ids))
        elif t in OUTPUTS and v.role[i] != "function":
            segs.append(_result_seg(ctx, i, calls, ids))
        elif t in OUTPUTS:
            ctx.lose(ctx.item_ptr(i), "orphan_output", "a legacy function result has no call id to pair")
        else:
            _dropped(ctx, i)
    return segs


# ---------------------------------------------------------------------------------------------
# System


def _leading_system(ctx: Ctx) -> list[int]:
    """System/developer messages before the first item Anthropic would show (they go to ``system``)."""
    v = ctx.v
    out = []
    for i in range(ctx.start, ctx.end):
        t = v.type[i]
        if t == "message" and v.role[i] in ("system", "developer"):
            out.append(i)
        elif t in ("message", *CALLS, *OUTPUTS):
            break
    return out


def _instruction_pieces(ctx: Ctx) -> list[tuple[str, bool]]:
    """Responses ``instructions`` (ShareGPT ``system``) as (text, from a string) pieces for ``system``."""
    view, r = ctx.view, ctx.r
    form = view.instr_form[r]
    key = to_hf.instructions_key(ctx)
    if form == FORM_NULL:
        ctx.lose(key, "content_form", "explicit null instructions dropped")
    if form != FORM_STRING:
        return []
    text = view.instr.text[view.instr_off[r]]
    if not text.strip():
        ctx.lose(key, "empty_text", "empty instructions produce no system prompt")
        return []
    return [(text, True)]


def _system(ctx: Ctx, leading: list[int]) -> Any:
    """The top-level ``system`` value (``...`` when there is none)."""
    pieces = _instruction_pieces(ctx)
    for i in leading:
        seg = Seg("text", "system", i)
        if ctx.v.role[i] == "developer":
            ctx.lose(ctx.item_ptr(i), "developer_role", "developer became the system prompt")
        _content_blocks(ctx, i, "system", seg)
        _list_back_as_string(ctx, i)
        _item_keys_lost(ctx, i)
        if ctx.source in ("responses", "sharegpt"):  # the way back makes it the instructions / system
            ctx.lose(ctx.item_ptr(i), "instruction_position", "a leading message became top-level system")
        elif len(leading) > 1:
            ctx.lose(ctx.item_ptr(i), "message_merge", "leading system messages became one system prompt")
        if not seg.blocks:
            ctx.lose(ctx.item_ptr(i), "empty_text", "a system message with no text is dropped")
        pieces += [(b["text"], seg.string) for b in seg.blocks]
    if leading and ctx.source in ("responses", "sharegpt"):
        detail = "leading messages joined the instructions"
        ctx.lose(to_hf.instructions_key(ctx), "instruction_position", detail)
    if not pieces:
        return ...
    if len(pieces) == 1 and pieces[0][1]:
        return pieces[0][0]
    return [{"type": "text", "text": text} for text, _ in pieces]


# ---------------------------------------------------------------------------------------------
# Turns: grouping, tool pairing, merging


def _group(segs: list[Seg]) -> list[Turn]:
    turns: list[Turn] = []
    for seg in segs:
        if turns and turns[-1].role == seg.role:
            turns[-1].segs.append(seg)
        else:
            turns.append(Turn(seg.role, [seg]))
    return turns


def _answer(ctx: Ctx, turns: list[Turn], k: int) -> None:
    """Move the outputs of turn ``k``'s calls to the front of the next user message; drop calls
    nobody answers (the API rejects a ``tool_use`` without a ``tool_result`` right after it)."""
    turn = turns[k]
    found: list[Seg] = []
    for call in [s for s in turn.segs if s.kind == "call"]:
        hit = next(
            (s for t in turns[k + 1 :] for s in t.segs
             if s.kind == "result" and not s.placed and s.call_id == call.call_id
             and not any(s is f for f in found)),
            None,
        )  # fmt: skip
        if hit is None:
            turn.segs.remove(call)
            ctx.lose(ctx.item_ptr(call.i), "unanswered_call", "a call without output is dropped")
        else:
            found.append(hit)
    if not found:
        return
    if k + 1 == len(turns) or turns[k + 1].role != "user":
        turns.insert(k + 1, Turn("user", []))
    head = turns[k + 1].segs
    in_place = _leading_results(head)
    for seg in found:
        if not any(seg is s for s in in_place):
            ctx.lose(ctx.item_ptr(seg.i), "tool_output_order", "moved right after the message with its call")
            for other in _jumped(turns[k + 1 :], seg, found):
                ctx.lose(
                    ctx.message_ptr(other.i), "tool_output_order", "a later tool output moved before this"
                )
        for t in turns[k + 1 :]:
            if any(seg is s for s in t.segs):
                t.segs.remove(seg)
                break
        seg.placed = True
    head[:0] = sorted(found, key=lambda s: s.i)


def _jumped(turns: list[Turn], seg: Seg, moving: list[Seg]) -> list[Seg]:
    """The segments a moved output now precedes although it came after them."""
    out = []
    for s in (s for t in turns for s in t.segs):
        if s is seg:
            return out
        if not any(s is m for m in moving):
            out.append(s)
    return out


def _leading_results(segs: list[Seg]) -> list[Seg]:
    """The tool results a user message starts with (already where Anthropic wants them)."""
    out = []
    for s in segs:
        if s.kind != "result":
            break
        out.append(s)
    return out


def _merge_adjacent(turns: list[Turn]) -> list[Turn]:
    """Drop empty turns and join neighbours of the same role."""
    out: list[Turn] = []
    for t in turns:
        if not t.segs:
            continue
        if out and out[-1].role == t.role:
            out[-1].segs.extend(t.segs)
        else:
            out.append(t)
    return out


def _pair(ctx: Ctx, turns: list[Turn]) -> list[Turn]:
    """Give every call its output in the next user message; drop orphans of either kind."""
    k = 0
    while k < len(turns):
        turn = turns[k]
        if turn.role == "assistant":
            _answer(ctx, turns, k)
        for seg in [s for s in turn.segs if s.kind == "result" and not s.placed]:
            turn.segs.remove(seg)
            ctx.lose(ctx.item_ptr(seg.i), "orphan_output", "an output with no call right before it")
        k += 1
    return _merge_adjacent(turns)


def _strip_final(ctx: Ctx, turns: list[Turn]) -> list[Turn]:
    """A final assistant message is a prefill: Anthropic rejects trailing whitespace there."""
    while turns and turns[-1].role == "assistant":
        turn = turns[-1]
        seg = turn.segs[-1]
        block = seg.blocks[-1] if seg.blocks else None
        if block is None or block["type"] != "text":
            return turns
        text = block["text"].rstrip()
        if text == block["text"]:
            return turns
        if text:
            block["text"] = text
            ctx.lose(seg.paths[-1], "whitespace", "trailing whitespace of the final assistant text removed")
            return turns
        ctx.lose(seg.paths[-1], "empty_text", "whitespace-only final assistant text dropped")
        seg.blocks.pop()
        seg.paths.pop()
        seg.string = False
        if not seg.blocks:
            turn.segs.pop()
            if seg.kind == "text":
                ctx.lose(ctx.item_ptr(seg.i), "content_form", "the message had only whitespace")
        if not turn.segs:
            turns.pop()
    return turns


# ---------------------------------------------------------------------------------------------
# Rendering and the losses that depend on the final shape


def _vanished(ctx: Ctx, segs: list[Seg], turns: list[Turn]) -> None:
    """A Chat message whose every part was dropped is gone as a whole, and one whose every call was
    dropped has lost its ``tool_calls`` key: say so at those paths."""
    kept = {ctx.message_ptr(s.i) for t in turns for s in t.segs}
    with_calls = {ctx.message_ptr(s.i) for t in turns for s in t.segs if s.kind == "call"}
    # dict.fromkeys, not a set: the losses come out in source order whatever PYTHONHASHSEED is
    for ptr in dict.fromkeys(ctx.message_ptr(s.i) for s in segs if s.kind == "call"):
        if ptr not in with_calls and ctx.source in NESTED and ptr in kept:
            ctx.lose(ptr + "/tool_calls", "unanswered_call", "none of its calls is left")
    reported = {loss.path for loss in ctx.losses}
    kinds = {"call": "unanswered_call", "result": "orphan_output", "text": "content_form"}
    for seg in segs:
        ptr = ctx.message_ptr(seg.i)
        if ptr not in kept and ptr not in reported:
            ctx.lose(ptr, kinds[seg.kind], "nothing of this message is left")
            reported.add(ptr)


def _source_lists(ctx: Ctx) -> list[list[tuple[str, tuple[Any, ...]]]]:
    """The source's lists as (pointer, shape) pairs: the items/messages, each content list and each
    Chat ``tool_calls`` list. The shape is what tells elements apart without ids (kind, role, call),
    taken as it comes back (developer as system, a refusal part as text, any call as a call)."""
    v = ctx.v
    top: list[tuple[str, tuple[Any, ...]]] = []
    calls: dict[str, list[tuple[str, tuple[Any, ...]]]] = {}
    lists = [top]
    for i in range(ctx.start, ctx.end):
        ptr = ctx.message_ptr(i)
        if ctx.source in NESTED and v.type[i] in CALLS:
            calls.setdefault(ptr, []).append((ctx.item_ptr(i), ("call",)))
        elif not top or top[-1][0] != ptr:
            kind = "message" if v.type[i] == "message" else v.native_type[i]
            role = "system" if v.role[i] == "developer" else v.role[i]
            top.append((ptr, (kind, role, v.call_id[i])))
        if v.content_form[i] == FORM_PARTS and v.type[i] != "reasoning":
            c = v.content
            lists.append([(ctx.content_ptr(i, k), ("text" if c.type[j] in TEXT_TYPES or c.type[j] == "refusal"
                          else c.type[j],)) for k, j in enumerate(ctx.blocks(i))])  # fmt: skip
    return lists + list(calls.values())


def _ambiguous_neighbours(ctx: Ctx) -> None:
    """Elements Anthropic drops or reshapes leave their same-shape neighbours indistinguishable.

    Messages, parts and calls have no ids once converted, so when an element goes away (or comes
    back as something else), a neighbour of the same role/type that also changed cannot be told
    apart from it: that neighbour's boundary is lost too, and is reported as a whole. The search
    stops at elements with no loss at all, which come back unchanged and so anchor the order.
    """
    whole = {loss.path for loss in ctx.losses}
    above = {q[:n] for q in whole for n in range(len(q)) if q[n] == "/"}  # proper prefixes

    def touched(p: str) -> bool:
        """A loss at, under or above ``p``: the element does not come back unchanged."""
        return p in whole or p in above or any(p[:n] in whole for n in range(1, len(p)) if p[n] == "/")

    for elems in _source_lists(ctx):
        todo = [n for n, (ptr, _) in enumerate(elems) if ptr in whole]
        while todo:
            n = todo.pop()
            for step in (-1, 1):
                m = n + step
                while 0 <= m < len(elems) and touched(elems[m][0]):
                    ptr, shape = elems[m]
                    if shape == elems[n][1] and ptr not in whole:
                        ctx.lose(ptr, "message_merge", "a dropped or reshaped neighbour of the same kind "
                                 "makes this element's boundary ambiguous")  # fmt: skip
                        whole.add(ptr)
                        todo.append(m)
                    m += step


def _merge_losses(ctx: Ctx, turn: Turn) -> None:
    """Boundaries the way back cannot restore: adjacent texts of two source messages become one
    message; in Chat, calls after another message's text attach to that message."""
    for a, b in zip(turn.segs, turn.segs[1:], strict=False):
        if ctx.message_ptr(a.i) == ctx.message_ptr(b.i):
            continue
        if a.kind == "text" and b.kind == "text":
            ctx.lose(ctx.message_ptr(b.i), "message_merge", "joined the previous message of the same role")
            ctx.lose(ctx.message_ptr(a.i), "message_merge", "the next message's text joined this one")
        elif ctx.source in NESTED and b.kind == "call" and a.kind in ("text", "call"):
            ctx.lose(ctx.message_ptr(b.i), "message_merge", "its calls joined the previous assistant message")
            ctx.lose(ctx.message_ptr(a.i), "message_merge", "the next message's calls joined this one")
        elif ctx.source in NESTED and a.kind == "call" and b.kind == "text":  # one message: text + calls
            ctx.lose(ctx.message_ptr(b.i), "message_merge", "its text joined the previous message's calls")
            ctx.lose(ctx.message_ptr(a.i), "message_merge", "the next message's text joined this one")


def _shape_losses(ctx: Ctx, seg: Seg, as_string: bool) -> None:
    """What a text segment's message looks like on the way back, versus the source."""
    v = ctx.v
    i = seg.i
    if ctx.source in from_dataset.DATASETS:  # the way back flattens content to one string anyway
        _list_back_as_string(ctx, i)
        return
    if seg.string and not as_string:
        ctx.lose(ctx.content_ptr(i), "content_form", "string content became a block in a list")
    if ctx.source != "responses":
        return
    base = ctx.item_ptr(i)
    if seg.role == "assistant" and not as_string:
        # comes back as an output message: type 'message', a generated id, status 'completed'
        if v.native_type[i] != "message":  # a changed type tag changes what the item is: whole item
            ctx.lose(base, "content_form", "comes back as an output message (type 'message')")
        if v.id[i] is None and "id" not in (v.nulls[i] or ()):
            ctx.lose(base, "item_id", "Anthropic has no message id; it comes back with a generated one")
        if v.status[i] is None and "status" not in (v.nulls[i] or ()):
            ctx.lose(base + "/status", "status", "Anthropic has no status; it comes back 'completed'")
    elif v.native_type[i] is not None and ctx.view.items_form[ctx.r] != FORM_STRING:
        ctx.lose(base, "content_form", "the message type tag is not kept (it comes back without one)")


def _render(ctx: Ctx, turn: Turn) -> dict[str, Any]:
    _merge_losses(ctx, turn)
    segs = turn.segs
    as_string = len(segs) == 1 and segs[0].kind == "text" and segs[0].string and len(segs[0].blocks) == 1
    for seg in segs:
        if seg.kind == "text":
            _shape_losses(ctx, seg, as_string)
    if as_string:
        return {"role": turn.role, "content": segs[0].blocks[0]["text"]}
    return {"role": turn.role, "content": turn.blocks()}


def encode(ctx: Ctx) -> dict[str, Any]:
    """Convert one canonical row (a Responses or Chat request, an HF or ShareGPT row) to an
    Anthropic Messages request body."""
    if ctx.source == "responses" and ctx.view.items_form[ctx.r] == FORM_STRING:
        ctx.lose("/input", "content_form", "the string input shorthand becomes a user message")
    request = ctx.kind == "request"
    if request and ctx.view.instr_form[ctx.r] == "items":
        instruction_items(ctx, "the system prompt or the first messages")
    # A response object's output has no system prompt, and its calls are answered later: the
    # request rules (leading system, call/result pairing, prefill whitespace) do not apply.
    leading = _leading_system(ctx) if request else []
    system = _system(ctx, leading) if request else ...
    skip = set(leading)
    segs = _segments(ctx, skip)
    turns = _strip_final(ctx, _pair(ctx, _group(segs))) if request else _group(segs)
    if ctx.source == "sharegpt" and turns and turns[0].role == "system":
        # a first system message comes back to ShareGPT as the system column (to_sharegpt)
        detail = "a first system message and the system prompt look the same on the way back"
        for seg in turns[0].segs:
            ctx.lose(ctx.item_ptr(seg.i), "instruction_position", detail)
        ctx.lose("/system", "instruction_position", detail)
    _vanished(ctx, segs, turns)
    body: dict[str, Any] = {}
    if system is not ...:
        body["system"] = system
    body["messages"] = [_render(ctx, t) for t in turns]
    _ambiguous_neighbours(ctx)
    return _top(ctx, body) if request else body


# ---------------------------------------------------------------------------------------------
# Request fields


def _function_tool(ctx: Ctx, tool: dict[str, Any], path: str) -> dict[str, Any]:
    """A function tool as ``{name, description, input_schema, strict}``."""
    fn = tool.get("function") if ctx.source == "chat" else tool
    fn = fn if isinstance(fn, dict) else {}
    fpath = path + "/function" if ctx.source == "chat" else path
    out: dict[str, Any] = {"name": fn.get("name") or ""}
    if isinstance(fn.get("description"), str):
        out["description"] = fn["description"]
    elif "description" in fn:
        ctx.lose(fpath + "/description", "tools", "a non-string description has no slot in Anthropic")
    params = fn.get("parameters")
    if isinstance(params, dict):
        out["input_schema"] = params
    else:
        out["input_schema"] = {"type": "object"}
        ctx.lose(fpath + "/parameters", "tools", "missing parameters became an empty object schema")
    strict = fn.get("strict")
    if isinstance(strict, bool):  # carried both ways
        out["strict"] = strict
    # anything else comes back as a Responses tool's null, a Chat tool's absent strict
    elif strict is not None or ("strict" in fn) == (ctx.source == "chat"):
        ctx.lose(fpath + "/strict", "tools", "strict is not restored from Anthropic tools")
    known = {"name", "description", "parameters", "strict", "type"}
    if ctx.source == "responses" and isinstance(fn.get("defer_loading"), bool):  # both tools have it
        out["defer_loading"] = fn["defer_loading"]
        known.add("defer_loading")
    for key in keys_except(fn, known):
        ctx.lose(fpath + pointer(key), "tools", f"tool '{key}' has no slot in Anthropic")
    if ctx.source == "chat":
        for key in keys_except(tool, {"type", "function"}):
            ctx.lose(path + pointer(key), "tools", f"tool '{key}' has no slot in Anthropic")
    return out


def _tools(
    ctx: Ctx, raw: Any, base: str = "/tools", declared: set[str] | None = None
) -> list[dict[str, Any]]:
    """A source tool list (the request's, or an ``additional_tools`` item's at ``base``) as Anthropic
    tools; with ``declared`` (names already declared, updated), a Responses tool of a declared name is
    left out (the API refuses duplicate names)."""
    out = []
    for k, tool in enumerate(raw if isinstance(raw, list) else []):
        path = base + pointer(k)
        t = tool.get("type") if isinstance(tool, dict) else None
        if declared is not None and t in ("function", "custom"):
            if tool.get("name") in declared:
                ctx.lose(path, "tools", f"tool {tool.get('name')!r} is already declared")
                continue
            declared.add(tool.get("name") or "")
        if t == "function":
            out.append(_function_tool(ctx, tool, path))
        elif t == "custom":
            spec = tool.get("custom") if ctx.source == "chat" else tool
            spec = spec if isinstance(spec, dict) else {}
            new = {"name": spec.get("name") or "", "input_schema": CUSTOM_SCHEMA}
            if isinstance(spec.get("description"), str):
                new["description"] = spec["description"]
            if ctx.source == "responses" and isinstance(spec.get("defer_loading"), bool):
                new["defer_loading"] = spec["defer_loading"]
            # reported on the list: the tool changes kind, and tools have no key to align on
            ctx.lose(base, "tools", f"custom tool {k} became a tool taking {{'input': text}}; format lost")
            out.append(new)
        else:
            ctx.lose(path, "tools", f"{a_or_an(quoted(t))} tool has no equivalent in Anthropic")
    if not isinstance(raw, list) or (raw and not out):  # an empty list stays one
        ctx.lose(base, "tools", "no tool Anthropic can declare")
    return out


def _additional_tools(ctx: Ctx, declared: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tools of a Responses request's ``additional_tools`` items (tool search results that
    declare tools partway through), converted like the request's own, for its ``tools``: Anthropic
    declares every tool up front. A name already declared is not declared twice (the API refuses
    duplicate names)."""
    if ctx.source != "responses":
        return []
    v = ctx.v
    names = {t["name"] for t in declared}
    out: list[dict[str, Any]] = []
    for i in range(ctx.start, ctx.end):
        if v.type[i] == "additional_tools":
            out += _tools(ctx, ctx.extra(i).get("tools"), ctx.item_ptr(i) + "/tools", names)
    if out:  # the way back lists them in the request's tools too
        ctx.lose("/tools", "tools", "the tools of additional_tools items are declared here as well")
    return out


def _dataset_tools(ctx: Ctx) -> list[dict[str, Any]]:
    """An HF / ShareGPT row's function schemas as Anthropic tools (``{name, description?,
    input_schema}``); what the way back would not rebuild as it was is a ``tools`` loss."""
    schemas = to_hf.function_schemas(ctx) or []
    out = []
    for k, fn in enumerate(schemas):
        path = pointer("tools", k, "function") if ctx.source == "hf" else "/tools"
        tool: dict[str, Any] = {"name": fn.get("name") if isinstance(fn.get("name"), str) else ""}
        if isinstance(fn.get("description"), str):
            tool["description"] = fn["description"]
        params = fn.get("parameters")
        tool["input_schema"] = params if isinstance(params, dict) else {"type": "object"}
        for key in fn:  # source key order, so the report does not depend on set iteration
            if key not in ("name", "description", "parameters") or fn[key] is not tool.get(
                "input_schema" if key == "parameters" else key
            ):
                ctx.lose(path + (pointer(key) if ctx.source == "hf" else ""), "tools",
                         f"tool '{key}' is not kept as it was")  # fmt: skip
        if "parameters" not in fn:
            ctx.lose(path + ("/parameters" if ctx.source == "hf" else ""), "tools",
                     "missing parameters became an empty object schema")  # fmt: skip
        out.append(tool)
    # The way back writes {name, description?, parameters} schemas: say so if that is not the source.
    back = [{"name": t["name"], **({"description": t["description"]} if "description" in t else {}),
             "parameters": t["input_schema"]} for t in out]  # fmt: skip
    to_hf.tools_kept(ctx, back)
    return out


def _tool_choice(ctx: Ctx, raw: Any) -> dict[str, Any] | None:
    simple = {"auto": "auto", "required": "any", "none": "none"}
    if isinstance(raw, str) and raw in simple:
        return {"type": simple[raw]}
    if isinstance(raw, dict) and raw.get("type") == "function":
        inner = raw.get("function") if ctx.source in NESTED else raw
        if isinstance(inner, dict) and isinstance(inner.get("name"), str):
            if ctx.source in NESTED:
                extra = keys_except(raw, {"type", "function"}) + keys_except(inner, {"type", "name"})
            else:  # Responses keeps the name flat on the choice itself
                extra = keys_except(raw, {"type", "name"})
            if not extra:
                return {"type": "tool", "name": inner["name"]}
    ctx.lose("/tool_choice", "tools", "tool_choice has no equivalent in Anthropic")
    return None


def _max_tokens(ctx: Ctx, extra: dict[str, Any]) -> int:
    """Anthropic requires ``max_tokens``: the source's limit, or :data:`DEFAULT_MAX_TOKENS`."""
    keys = TOKEN_KEYS[ctx.source]
    value: int | None = None
    for key in keys:
        if key not in extra:
            continue
        x = extra.pop(key)
        if value is None and type(x) is int and x >= 1:
            value = x
            if ctx.source in from_dataset.DATASETS:
                detail = "kept, but HF/ShareGPT rows written from Anthropic have none"
                ctx.lose(pointer(key), "request_field", detail)
            if key != keys[0]:
                ctx.lose(pointer(key), "request_field", f"'{key}' comes back as '{keys[0]}'")
                ctx.lose(pointer(keys[0]), "request_field", f"'{keys[0]}' comes back instead of '{key}'")
        else:
            ctx.lose(pointer(key), "request_field", f"'{key}' not used for Anthropic max_tokens")
    if value is None:
        ctx.lose(
            pointer(keys[0]), "filled_default", f"no token limit; max_tokens {DEFAULT_MAX_TOKENS} was set"
        )
        return DEFAULT_MAX_TOKENS
    return value


def _top(ctx: Ctx, body: dict[str, Any]) -> dict[str, Any]:
    """Model, max_tokens, tools and the top-level keys Anthropic shares; the rest is lost."""
    view, r = ctx.view, ctx.r
    out: dict[str, Any] = {}
    dataset = ctx.source in from_dataset.DATASETS
    if view.model[r] is not None:
        out["model"] = view.model[r]
        if dataset:
            ctx.lose("/model", "request_field", "kept, but HF/ShareGPT rows written from Anthropic have none")
    extra = ctx.top_extra()
    out["max_tokens"] = _max_tokens(ctx, extra)
    out.update(body)
    if view.tools[r] is not None and dataset:
        out["tools"] = _dataset_tools(ctx)
    elif view.tools[r] is not None:
        raw_tools = orjson.loads(view.tools[r])
        tools = _tools(ctx, raw_tools)
        if tools or raw_tools == []:
            out["tools"] = tools
    added = _additional_tools(ctx, out.get("tools", []))
    if added:
        out["tools"] = [*out.get("tools", []), *added]
    if view.tool_choice[r] is not None:
        choice = _tool_choice(ctx, orjson.loads(view.tool_choice[r]))
        if choice is not None:
            out["tool_choice"] = choice
            if dataset:
                ctx.lose("/tool_choice", "tools", "kept, but HF rows written from Anthropic have none")
    ctx.lose_nulls()
    for key, value in extra.items():
        if key == "stop" and ctx.source == "chat" and _stop_sequences(value) is not None:
            out["stop_sequences"] = _stop_sequences(value)
            if not stop_fits(value):  # a list of 1 to 4 strings comes back as it is; a string as a list
                ctx.lose("/stop", "request_field", "kept as stop_sequences, which does not map back to Chat")
        else:
            ctx.lose(pointer(key), "request_field", f"'{key}' is not carried to Anthropic")
    return out


def _stop_sequences(value: Any) -> list[str] | None:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and value and all(isinstance(s, str) for s in value):
        return value
    return None
