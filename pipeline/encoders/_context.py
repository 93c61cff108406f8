"""What every cross-format encoder needs for one record: source pointers and the loss log.

Each canonical item knows where it sat in its source (``section``/``group``/``part``), so a loss can
name the exact JSON pointer in the *source* record (``/input/3/phase``,
``/messages/2/content/1/cache_control``) whatever the target is.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Collection, Iterator
from typing import Any, ClassVar

import orjson

from pipeline.errors import a_or_an, quoted
from pipeline.formats import hf, sharegpt
from pipeline.formats._common import ConversationView
from pipeline.losses import Loss, pointer
from pipeline.schema import FORM_NULL, FORM_PARTS, FORM_STRING

# The loss kind of a content part the target cannot hold, by part type.
PART_LOSS_KINDS = {
    "input_image": "image", "image": "image", "image_url": "image",
    "input_file": "file", "document": "file", "file": "file",
    "input_audio": "audio", "refusal": "refusal",
}  # fmt: skip
# Canonical item types of function / custom tool calls and their outputs (the ones call ids pair).
CALLS = frozenset(("function_call", "custom_tool_call"))
OUTPUTS = frozenset(("function_call_output", "custom_tool_call_output"))


def keys_except(d: dict[str, Any], keep: Collection[str]) -> list[str]:
    """``d``'s keys that are not in ``keep``, in ``d``'s own order.

    A set difference (``d.keys() - keep``) iterates in string-hash order, which changes with
    ``PYTHONHASHSEED``; losses are reported in source order, so runs agree exactly.

    >>> keys_except({"b": 1, "type": 2, "a": 3}, {"type"})
    ['b', 'a']
    """
    return [k for k in d if k not in keep]


def is_hosted(kind: str) -> bool:
    """A provider-run tool item (web search, code execution, MCP, shells, server tool blocks)."""
    return kind.endswith(("_call", "_call_output", "_tool_result", "_tool_use")) or kind.startswith("mcp_")


def anthropic_image_url(ctx: Ctx, source: dict[str, Any], path: str) -> str | None:
    """An Anthropic image ``source`` as one URL (a data URL for base64), or None when it has none.

    Keys of the source a URL has no room for are reported at ``path``/source/KEY. A base64 source
    ``{"type": "base64", "media_type": "image/png", "data": "AA=="}`` gives
    ``data:image/png;base64,AA==``.
    """
    t = source.get("type")
    if t == "url" and isinstance(source.get("url"), str):
        keep, url = {"type", "url"}, source["url"]
    elif t == "base64" and isinstance(source.get("media_type"), str) and isinstance(source.get("data"), str):
        keep, url = {"type", "media_type", "data"}, f"data:{source['media_type']};base64,{source['data']}"
    else:
        return None
    for key in keys_except(source, keep):
        ctx.lose(path + "/source" + pointer(key), "image", f"image source '{key}' has no slot in a URL")
    if t == "url" and url.startswith("data:"):
        # the way back reads a data URL as what it is: a base64 source (or no image, when Anthropic
        # does not take its media type), not a url source
        ctx.lose(path + "/source", "image", "a 'url' source holding a data: URL comes back as base64")
    return url


def cache_breakpoint(ctx: Ctx, extra: dict[str, Any]) -> dict[str, Any]:
    """A content block's OpenAI ``prompt_cache_breakpoint`` (from its unmodelled keys, ``extra``) as
    the part keys that carry it: ``{"prompt_cache_breakpoint": {...}}``, or ``{}``.

    Chat's text, image_url, input_audio and file parts and Responses' input_text, input_image and
    input_file parts have the slot (the installed SDK's types), so a conversion between the two
    keeps it, the same value; the caller asks only for a target part with the slot. Only an object
    from a Chat or Responses record is carried: ``null`` or another value is not one the SDK types
    take, and another source's way back has no slot for it (both reported, ``cache_control``).
    """
    value = extra.get("prompt_cache_breakpoint")
    carried = isinstance(value, dict) and ctx.source in ("chat", "responses")
    return {"prompt_cache_breakpoint": value} if carried else {}


# Top-level request keys Chat and Responses both type, with the same values, beyond the sampling
# ones each encoder lists: carried between the two as they are.
OPENAI_SHARED_KEYS = (
    "prompt_cache_key",
    "prompt_cache_retention",
    "safety_identifier",
    "top_logprobs",
    "moderation",
)

# Chat top-level request keys Responses nests in its ``reasoning`` / ``text`` objects, by Chat name:
# carried to the nested slot (the keys of one object in source order, the object where the first
# of them was) and back (a nested key Chat has no slot for is reported).
CHAT_NESTED_KEYS = {"reasoning_effort": ("reasoning", "effort"), "verbosity": ("text", "verbosity")}
RESPONSES_NESTED_KEYS = {nested: chat for chat, nested in CHAT_NESTED_KEYS.items()}

# Chat's response_format / Responses' text.format: the types both take, and the keys of a json_schema
# format (nested in Chat's "json_schema" object, flat beside "type" in Responses), in source order.
FORMAT_TYPES = ("text", "json_object", "json_schema")
JSON_SCHEMA_KEYS = frozenset(("name", "description", "schema", "strict"))


def format_to_responses(ctx: Ctx, value: Any) -> dict[str, Any] | None:
    """A Chat ``response_format`` as Responses' ``text.format`` (a json_schema one flattened), or
    None when it is not one both take (reported whole); a key neither slot holds is reported."""
    t = value.get("type") if isinstance(value, dict) else None
    schema = value.get("json_schema") if t == "json_schema" else {}
    if not isinstance(t, str) or t not in FORMAT_TYPES or not isinstance(schema, dict):
        ctx.lose("/response_format", "request_field", "'response_format' is not carried to Responses")
        return None
    out: dict[str, Any] = {"type": t}
    for k in keys_except(value, {"type", "json_schema"} if t == "json_schema" else {"type"}):
        detail = f"response_format '{k}' has no slot in Responses"
        ctx.lose(pointer("response_format", k), "request_field", detail)
    for k, v in schema.items():
        if k in JSON_SCHEMA_KEYS:
            out[k] = v
        else:
            detail = f"json_schema '{k}' has no slot in Responses"
            ctx.lose(pointer("response_format", "json_schema", k), "request_field", detail)
    return out


def format_to_chat(ctx: Ctx, value: Any) -> dict[str, Any] | None:
    """A Responses ``text.format`` as Chat's ``response_format`` (a json_schema one's keys nested in
    its ``json_schema``), or None when it is not one both take (reported whole); a key neither slot
    holds is reported."""
    t = value.get("type") if isinstance(value, dict) else None
    if not isinstance(t, str) or t not in FORMAT_TYPES:
        ctx.lose("/text/format", "request_field", "this text format has no Chat response_format")
        return None
    schema: dict[str, Any] = {}
    for k, v in value.items():
        if k == "type":
            continue
        if t == "json_schema" and k in JSON_SCHEMA_KEYS:
            schema[k] = v
        else:
            ctx.lose(pointer("text", "format", k), "request_field", f"format '{k}' has no slot in Chat")
    return {"type": t, "json_schema": schema} if t == "json_schema" else {"type": t}


# The most stop sequences a Chat request takes (its API refuses more).
CHAT_MAX_STOP = 4


def stop_fits(value: Any) -> bool:
    """Whether an Anthropic ``stop_sequences`` is a value Chat's ``stop`` takes as it is (and gives
    back as it was): a list of 1 to 4 strings (more, or another value, is reported)."""
    return (
        isinstance(value, list)
        and 1 <= len(value) <= CHAT_MAX_STOP
        and all(isinstance(x, str) for x in value)
    )


# The service tiers a Chat request takes (the installed SDK's literal): a Chat tier is carried to
# Responses, which takes them all, and a Responses tier to Chat when it is one of these.
CHAT_SERVICE_TIERS = ("auto", "default", "flex", "scale", "priority", "fast")

# The loss of a cache hint carried to a Chat assistant text part: the way back has no slot for it.
CACHE_NO_WAY_BACK = "carried to Chat's text part; the Responses output_text it comes back as has no slot"


def anthropic_tool_flags(tool: dict[str, Any], keys: tuple[str, ...]) -> dict[str, bool]:
    """The boolean ``keys`` of an Anthropic tool an OpenAI function tool has the same slot for
    (``strict``: Chat and Responses; ``defer_loading``: Responses), to carry as they are; any other
    value is not one the target types take (reported with the tool's other keys)."""
    return {k: tool[k] for k in keys if isinstance(tool.get(k), bool)}


PDF_DATA_URL = "data:application/pdf;base64,"
# OpenAI requires a filename with inline file data; a document without a title gets this one.
DEFAULT_FILENAME = "document.pdf"
# The keys of an OpenAI file part's file, by target (Chat nests them under "file"; Responses'
# input_file has them flat, and a file_url Chat has no slot for).
FILE_SLOTS = {"chat": ("file_data", "file_id", "filename"),
              "responses": ("file_data", "file_id", "file_url", "filename")}  # fmt: skip


def openai_file(ctx: Ctx, j: int, path: str, target: str) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """Content block ``j`` (a Responses ``input_file``, a Chat ``file`` or an Anthropic ``document``)
    as an OpenAI file part for ``target`` (``chat`` or ``responses``): ``(file fields, part-level
    keys)``, every source key with no slot reported at ``path``; None (nothing reported) when the
    target cannot identify the file: no file id, no PDF data (Chat takes only
    ``data:application/pdf;base64,``), no URL (Responses only).

    Anthropic's base64 PDF ``source`` becomes a data URL and its ``title`` the ``filename`` (one is
    filled when there is none: OpenAI requires it with inline data); a URL source, Responses'
    ``file_url``. Anthropic file ids name Anthropic's files, which OpenAI cannot read: not carried.
    """
    t = ctx.v.content.type[j]
    extra = ctx.block_extra(j)
    slots = FILE_SLOTS[target]
    if t == "document":
        src = extra.get("source")
        src = src if isinstance(src, dict) else {}
        fields: dict[str, Any] = {}
        if src.get("type") == "base64" and src.get("media_type") == "application/pdf" and isinstance(
            src.get("data"), str
        ):
            fields["file_data"], used = PDF_DATA_URL + src["data"], {"type", "media_type", "data"}
        elif "file_url" in slots and src.get("type") == "url" and isinstance(src.get("url"), str):
            fields["file_url"], used = src["url"], {"type", "url"}
            if not src["url"].startswith(("https://", "http://")):
                # carried, but the way back (to_anthropic._document_block) takes only http(s) URLs
                ctx.lose(path, "file", "a document URL that is not http(s) does not come back to Anthropic")
        else:
            return None
        for key in keys_except(src, used):
            ctx.lose(path + "/source" + pointer(key), "file", f"document source '{key}' has no slot")
        carried = {"type", "source"}
        if isinstance(extra.get("title"), str):
            fields["filename"] = extra["title"]
            carried.add("title")
        elif "file_data" in fields:
            fields["filename"] = DEFAULT_FILENAME
            why = f"no title: OpenAI requires a filename with file data; wrote '{DEFAULT_FILENAME}'"
            ctx.lose(path + "/title", "filled_default", why)
        for key in keys_except(ctx.source_block(j), carried):
            kind = Ctx.BLOCK_KEY_KINDS.get(key, "file") if key != "source" else "file"
            ctx.lose(path + pointer(key), kind, f"document '{key}' has no slot in an OpenAI file part")
        return fields, {}
    nested = t == "file"
    inner = extra.get("file") if nested else extra
    if not isinstance(inner, dict):
        return None

    def fits(key: str, value: Any) -> bool:
        if key not in slots or not isinstance(value, str):
            return False
        return target != "chat" or key != "file_data" or value.startswith(PDF_DATA_URL)

    fields = {k: v for k, v in inner.items() if fits(k, v)}
    if not any(k in fields for k in ("file_data", "file_id", "file_url")):
        return None
    part_keys = cache_breakpoint(ctx, extra)  # both OpenAI file parts have the slot
    why = {"file_data": "Chat takes only base64 PDF data", "file_url": "Chat has no file_url"}
    why = why if target == "chat" else {}
    data = fields.get("file_data")
    if target == "responses" and nested and data is not None and not data.startswith(PDF_DATA_URL):
        # carried, but Chat takes only PDF data: the way back drops it (the whole part without an id)
        where = path + "/file/file_data" if "file_id" in fields else path
        ctx.lose(where, "file", "file data that is not a base64 PDF does not come back to Chat")
    if nested:
        for key in keys_except(inner, fields):
            detail = f"file '{key}' is not carried ({why.get(key, 'no slot')})"
            ctx.lose(path + "/file" + pointer(key), "file", detail)
    for key in keys_except(ctx.source_block(j), {"type", *part_keys, *(("file",) if nested else fields)}):
        file_key = key in FILE_SLOTS["responses"] or key == "detail"
        kind = "file" if file_key else Ctx.BLOCK_KEY_KINDS.get(key, "unknown_field")
        ctx.lose(path + pointer(key), kind, f"'{key}' is not carried ({why.get(key, 'no slot')})")
    return fields, part_keys


def instruction_items(ctx: Ctx, became: str) -> None:
    """Responses ``instructions`` given as items are converted in place, as the conversation's first
    messages (a target may move leading system/developer ones to its system prompt): the way back
    reads them as input, so the instructions and the input's start are reported."""
    v = ctx.v
    first = next((i for i in range(ctx.start, ctx.end) if v.section[i] != "instructions"), None)
    detail = f"instruction items became {became}: they come back as input"
    ctx.lose("/instructions", "instruction_position", detail)
    ctx.lose(ctx.item_ptr(first) if first is not None else "/input", "instruction_position", detail)


def openai_top_extra(ctx: Ctx) -> Iterator[tuple[str, Any]]:
    """The top-level keys an OpenAI request body (Chat or Responses) may carry, in source order.

    What neither can carry is reported here (explicit nulls; Anthropic ``metadata``, which is
    ``{user_id}`` where OpenAI's metadata is a free map); the caller carries or reports the rest.
    """
    ctx.lose_nulls()
    for key, value in ctx.top_extra().items():
        if key == "metadata" and ctx.source == "anthropic":
            ctx.lose(pointer(key), "request_field", "Anthropic metadata is not OpenAI metadata")
        else:
            yield key, value


def item_ptr(ctx: Ctx, i: int) -> str:
    """Pointer to item ``i`` in its source record (a Chat/HF tool call: its tool_calls entry)."""
    v = ctx.v
    if ctx.source == "hf":
        return hf.item_pointer(v.group[i], v.part[i])
    if ctx.source == "sharegpt":
        return sharegpt.item_pointer(v.group[i])
    return ctx.item_ptr(i)


class Ctx:
    """One record being converted: the view, its row, its item range and its losses."""

    def __init__(self, view: ConversationView, r: int) -> None:
        self.view = view
        self.v = view.items
        self.r = r
        self.start = view.items_off[r]
        self.end = view.items_off[r + 1]
        self.source = view.source_format[r]
        self.kind = view.record_kind[r]
        self.losses: list[Loss] = []
        self._ptr: dict[int, str] = {}

    def generated_id(self, prefix: str, i: int) -> str:
        """A deterministic id for item ``i`` (its index in the batch; ``-1``: the record itself).

        The hash takes the item's index *in the record*, so the same record gets the same ids
        whichever batch or shard it was read in.
        """
        cid = self.view.conversation_id[self.r]
        local = i - self.start if i >= 0 else i
        return f"{prefix}_{hashlib.blake2b(f'{cid}/{local}'.encode(), digest_size=12).hexdigest()}"

    # -- losses ---------------------------------------------------------------------------------
    def lose(self, path: str, kind: str, detail: str) -> None:
        self.losses.append(Loss(path, kind, detail))

    # -- source pointers ------------------------------------------------------------------------
    def item_ptr(self, i: int) -> str:
        """Pointer to item ``i`` in the source record (its first block for a run of blocks)."""
        ptr = self._ptr.get(i)
        if ptr is None:
            ptr = self._ptr[i] = self._item_ptr(i)
        return ptr

    def _item_ptr(self, i: int) -> str:
        v = self.v
        section, group, part = v.section[i], v.group[i], v.part[i]
        if self.source == "responses":
            if self.view.items_form[self.r] == FORM_STRING and section == "input":
                return "/input"
            return pointer(section, group)
        if self.source in ("chat", "hf"):
            base = pointer("choices", group, "message") if section == "choices" else pointer(section, group)
            return base + (pointer("tool_calls", part) if part is not None else "")
        if self.source == "sharegpt":  # a turn (its further parallel calls live in its value)
            return pointer(section, group)
        # anthropic
        base = "" if section == "output" else pointer("messages", group)
        if part is None:
            return base or "/"
        return base + pointer("content", part)

    def message_ptr(self, i: int) -> str:
        """Pointer to the native message item ``i`` came from (Chat/Anthropic); the item itself otherwise."""
        v = self.v
        if self.source == "responses":
            return self.item_ptr(i)
        if self.source in ("chat", "hf", "sharegpt"):
            return (
                pointer("choices", v.group[i], "message")
                if v.section[i] == "choices"
                else pointer(v.section[i], v.group[i])
            )
        return "" if v.section[i] == "output" else pointer("messages", v.group[i])

    def content_ptr(self, i: int, j: int | None = None) -> str:
        """Pointer to item ``i``'s content (block ``j`` of it when given)."""
        v = self.v
        if self.source == "anthropic":
            t = v.type[i]
            if t == "message":
                if v.content_form[i] != FORM_PARTS or v.part[i] is None:
                    return self.message_ptr(i) + "/content"
                return self.message_ptr(i) + pointer("content", v.part[i] + (j or 0))
            # a tool_result's own content list
            base = self.item_ptr(i) + "/content"
            return base if j is None else base + pointer(j)
        if self.source == "sharegpt":  # a turn's value is one string
            return self.message_ptr(i) + "/value"
        key = "output" if self.source == "responses" and v.type[i].endswith("_output") else "content"
        base = (self.message_ptr(i) if self.source == "hf" else self.item_ptr(i)) + "/" + key
        return base if j is None or v.content_form[i] != FORM_PARTS else base + pointer(j)

    def wire_key(self, i: int, field: str) -> str:
        """The source's key for a canonical field of item ``i`` (``call_id`` is ``tool_call_id`` in Chat)."""
        t = self.v.type[i]
        if self.source in ("chat", "hf"):
            if field == "call_id":
                return "id" if t in ("function_call", "custom_tool_call") else "tool_call_id"
            if field == "native_type":
                return "type"
        elif self.source == "anthropic":
            if field == "call_id":
                return "id" if t in ("function_call", "server_tool_use", "mcp_tool_use") else "tool_use_id"
            if field == "encrypted_content" and self.v.native_type[i] == "redacted_thinking":
                return "data"
            if field == "arguments":
                return "input"
        elif field == "native_type":
            return "type"
        return field

    # -- reading --------------------------------------------------------------------------------
    def extra(self, i: int) -> dict[str, Any]:
        x = self.v.extra[i]
        return orjson.loads(x) if x is not None else {}

    def block_extra(self, j: int) -> dict[str, Any]:
        """The unmodelled keys of content block ``j`` (its ``extra_json``), in source order."""
        x = self.v.content.extra[j]
        return orjson.loads(x) if x is not None else {}

    def wrapper(self, i: int) -> dict[str, Any]:
        x = self.v.wrapper[i]
        return orjson.loads(x) if x is not None else {}

    def content_value(self, i: int, part: Callable[[int, int], Any]) -> Any:
        """Item ``i``'s content in its source form: the string, None (null), ``...`` (absent), or
        ``[part(j, k) for the k-th block j]`` without the parts ``part`` drops (returns None for)."""
        v = self.v
        form = v.content_form[i]
        if form == FORM_STRING:
            return v.content.text[v.content_off[i]]
        if form == FORM_PARTS:
            return [p for k, j in enumerate(self.blocks(i)) if (p := part(j, k)) is not None]
        return None if form == FORM_NULL else ...

    def blocks(self, i: int) -> list[int]:
        """Indices into ``v.content`` of item ``i``'s content blocks (empty unless form is parts)."""
        if self.v.content_form[i] != FORM_PARTS:
            return []
        return list(range(self.v.content_off[i], self.v.content_off[i + 1]))

    FIELD_KINDS: ClassVar[dict[str, str]] = {
        "id": "item_id", "status": "status", "phase": "phase", "namespace": "namespace", "name": "name",
        "encrypted_content": "encrypted_reasoning", "signature": "thinking_signature",
        "call_id": "unknown_field", "arguments": "argument_string", "input": "custom_tool",
        "role": "unknown_field",
    }  # fmt: skip

    def lose_fields(self, i: int, base: str, fields: tuple[str, ...]) -> None:
        """Report each of ``fields`` that item ``i`` had (a value or an explicit null): the target
        has no slot for it in this position."""
        v = self.v
        nulls = v.nulls[i] or ()
        for field in fields:
            if getattr(v, field)[i] is not None or field in nulls:
                key = self.wire_key(i, field)
                self.lose(
                    base + pointer(key), self.FIELD_KINDS.get(field, "unknown_field"), f"'{key}' has no slot"
                )

    BLOCK_KEY_KINDS: ClassVar[dict[str, str]] = {
        "annotations": "annotations", "logprobs": "logprobs", "cache_control": "cache_control",
        "citations": "citations", "image_url": "image", "detail": "image", "file_id": "file",
        "source": "image", "prompt_cache_breakpoint": "cache_control",  # OpenAI's cache hint
    }  # fmt: skip

    def source_block(self, j: int) -> dict[str, Any]:
        """Content block ``j`` exactly as it was in the source."""
        return orjson.loads(orjson.dumps(self.v.content.block(j)))

    def lose_block_keys(self, j: int, path: str, carried: frozenset[str] | set[str]) -> None:
        """Report every key of source block ``j`` that the target part does not carry."""
        for key in keys_except(self.source_block(j), carried):
            self.lose(
                path + pointer(key), self.BLOCK_KEY_KINDS.get(key, "unknown_field"), f"'{key}' is not carried"
            )

    def tool_reference_text(self, j: int, path: str) -> str | None:
        """An Anthropic ``tool_reference`` block ``j`` (a tool search result naming a tool) as the text
        placeholder ``[tool_reference: NAME]`` an OpenAI tool output can hold, reported as
        ``tool_reference``; None when it names no tool (then it is dropped like any other part)."""
        name = self.block_extra(j).get("tool_name")
        if not isinstance(name, str):
            return None
        self.lose(path, "tool_reference", f"written as the text '[tool_reference: {name}]'")
        self.lose_block_keys(j, path, {"type", "tool_name"})
        return f"[tool_reference: {name}]"

    def lose_part(self, path: str, part_type: str | None, target: str) -> None:
        """A content part ``target`` cannot hold is dropped."""
        kind = PART_LOSS_KINDS.get(part_type or "", "unknown_field")
        self.lose(path, kind, f"{a_or_an(quoted(part_type))} part has no equivalent in {target}")

    def lose_item(self, base: str, kind: str, target: str) -> None:
        """An item kind ``target`` cannot express is dropped."""
        loss = "hosted_tool" if is_hosted(kind) else "unknown_item"
        self.lose(base, loss, f"'{kind}' has no equivalent in {target}")

    def lose_wrapper(self, i: int) -> None:
        """Keys of the native message item ``i`` opened (Anthropic ``id``, ``model``, ``usage``... as
        Claude Code records them) that the target has no slot for."""
        if self.v.wrapper[i] is None:
            return
        base = self.message_ptr(i)
        for key in self.wrapper(i):
            kind = "item_id" if key == "id" else "unknown_field"
            self.lose(base + pointer(key), kind, f"message key '{key}' has no slot")

    # Anthropic block keys kept in an item's extra_json that have a loss kind of their own.
    ANTHROPIC_KEY_KINDS: ClassVar[dict[str, str]] = {
        "is_error": "tool_error",
        "cache_control": "cache_control",
    }

    def lose_nulls(self, kind: str = "request_field") -> None:
        """The record's explicit null top-level fields: dropped, since the target writes no key it
        has no value for."""
        for name in self.view.nulls[self.r] or ():
            self.lose(pointer(name), kind, f"explicit null '{name}' dropped")

    def top_extra(self) -> dict[str, Any]:
        """The record's unmodelled top-level keys (``extra_json``), in source order."""
        raw = self.view.extra[self.r]
        return orjson.loads(raw) if raw is not None else {}

    def lose_chat_call_keys(self, i: int, base: str, target: str) -> None:
        """The unmodelled keys of Chat tool call ``i``: inside its ``function`` / ``custom`` object,
        then beside it (``target`` names where they have no slot, e.g. ``tool_use``)."""
        extra = self.extra(i)
        sub_key = "custom" if self.v.type[i] == "custom_tool_call" else "function"
        for key in extra.pop(sub_key, {}):
            self.lose(base + pointer(sub_key, key), "unknown_field", f"'{key}' has no slot in {target}")
        for key in extra:
            self.lose(base + pointer(key), "unknown_field", f"'{key}' has no slot in {target}")

    def lose_extra(self, i: int, base: str, keep: tuple[str, ...] = ()) -> None:
        """Every unmodelled key of item ``i`` is a loss unless the target keeps it."""
        for key in self.extra(i):
            if key not in keep:
                kind = (
                    self.ANTHROPIC_KEY_KINDS.get(key, "unknown_field") if self.source == "anthropic" else None
                )
                self.lose(base + pointer(key), kind or "unknown_field", f"'{key}' has no slot in the target")
