"""Canonical rows of any source -> Hugging Face / TRL conversational rows, with every loss reported.

What comes out is what ``tokenizer.apply_chat_template(messages, tools=tools)`` and TRL's SFT
trainer take:

* ``messages``: ``{"role", "content": str}``. A content list is flattened into one string: its text
  parts concatenated with no separator (the text stays byte-exact; Anthropic splits sentences into
  blocks at citations, so a separator would be wrong there), reported as ``block_boundary`` (more
  than one part) or ``content_form``; image/file/other parts are dropped (``image``, ``file``, ...).
  An assistant message keeps a null or absent content (tool-call-only turns); any other role gets
  ``""`` (``content_form``). ``developer`` becomes ``system`` (``developer_role``).
* tool calls: ``{"id"?, "type": "function", "function": {"name", "arguments": <object>}}`` on the
  assistant message they follow. Arguments are parsed; text that is not a JSON object is wrapped as
  ``{"_raw_arguments": text}`` and anything not written back byte for byte is ``argument_string``.
  A custom (free-form) call becomes ``{"input": text}`` (``custom_tool``).
* tool outputs: ``{"role": "tool", "tool_call_id"?, "name": <the matching call's name>, "content"}``.
* instructions / ``system``: a leading ``system`` message (``instruction_position``, except from
  ShareGPT, whose top-level ``system`` is exactly that).
* ``tools``: ``[{"type": "function", "function": {name, description, parameters, ...}}]``;
  ``tool_choice`` and non-function tools are ``tools`` losses.
* reasoning, compaction, hosted tool items: dropped and reported, as for Chat. A Chat source's
  assistant message keeps its string ``reasoning_content`` / ``thinking`` (what chat templates
  read; HF -> Chat writes it back); any other value, or on another role, is reported.
* Request parameters (``model``, ``temperature``, ...) are dropped (``request_field``). Between the
  two dataset formats (HF and ShareGPT) every other column and message key is carried verbatim.

The helpers that :mod:`pipeline.encoders.to_sharegpt` shares (source pointers for HF/ShareGPT rows,
flattening, argument objects, tool schemas, output pairing) live here.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import orjson

from pipeline.encoders._context import CALLS, OUTPUTS, Ctx, instruction_items, item_ptr, keys_except
from pipeline.encoders.call_ids import pair_outputs, report_way_back
from pipeline.errors import a_or_an, quoted
from pipeline.formats import hf, sharegpt
from pipeline.formats._common import BlockView
from pipeline.losses import pointer
from pipeline.schema import FORM_NULL, FORM_PARTS, FORM_STRING

TARGET = "HF"
TEXT_TYPES = frozenset(("input_text", "output_text", "text", "refusal", None))
DATASET_SOURCES = frozenset(("hf", "sharegpt"))
RAW_ARGUMENTS = "_raw_arguments"  # the key wrapping arguments that are not a JSON object
# Unmodelled keys whose loss has its own kind.
KEY_KINDS = {
    "refusal": "refusal",
    "audio": "audio",
    "cache_control": "cache_control",
    "prompt_cache_breakpoint": "cache_control",  # OpenAI's cache hint
    "citations": "citations",
    "is_error": "tool_error",
}
# Keys modelled by either dataset format: an unmodelled key of one is carried to the other only if
# it is none of these (it would collide there, or be dropped on the way back).
MESSAGE_KEYS = frozenset(("role", "content", "name", "tool_calls", "tool_call_id", "from", "value"))
TOP_KEYS = frozenset(("messages", "tools", "conversations", "system", "model"))


# -- where things sat in the source ------------------------------------------------------------
# Ctx knows Responses/Chat/Anthropic rows; the dataset formats' rows are handled here.


def message_ptr(ctx: Ctx, i: int) -> str:
    """Pointer to the source message (ShareGPT turn) item ``i`` came from."""
    if ctx.source == "hf":
        return hf.item_pointer(ctx.v.group[i], None)
    if ctx.source == "sharegpt":
        return sharegpt.item_pointer(ctx.v.group[i])
    return ctx.message_ptr(i)


def content_ptr(ctx: Ctx, i: int, k: int | None = None) -> str:
    """Pointer to item ``i``'s content (its part ``k`` when given); a ShareGPT turn's ``value``."""
    v = ctx.v
    if ctx.source == "sharegpt":
        return sharegpt.value_pointer(v.group[i])
    if ctx.source == "hf":
        base = hf.item_pointer(v.group[i], None) + "/content"
        return base if k is None or v.content_form[i] != FORM_PARTS else base + pointer(k)
    return ctx.content_ptr(i, k)


def field_ptr(ctx: Ctx, i: int, field: str) -> str:
    """Pointer to a canonical field of item ``i`` under the source's own key."""
    v = ctx.v
    if ctx.source == "sharegpt":
        return sharegpt.value_pointer(v.group[i]) if field in ("name", "arguments") else item_ptr(ctx, i)
    call = v.type[i] in CALLS
    if ctx.source in ("hf", "chat") and call and field in ("name", "arguments", "input"):
        return item_ptr(ctx, i) + ("/custom/" if v.type[i] == "custom_tool_call" else "/function/") + field
    if ctx.source == "hf" and field == "call_id":
        return item_ptr(ctx, i) + ("/id" if call else "/tool_call_id")
    return item_ptr(ctx, i) + "/" + ctx.wire_key(i, field)


# -- losses every item can have -----------------------------------------------------------------


def call_id_ptr(ctx: Ctx, i: int) -> str:
    """Where a dropped call id is reported: the output (or Responses call) itself, whose link to
    its partner the id *is*; the id key of a call nested in a message (Chat, HF, Anthropic)."""
    v = ctx.v
    if v.type[i] in OUTPUTS or ctx.source == "responses":
        return item_ptr(ctx, i)
    return field_ptr(ctx, i, "call_id")


def lose_keys(ctx: Ctx, base: str, keys: Any, target: str) -> None:
    """One loss per unmodelled key under ``base``, of the key's own kind where it has one."""
    for key in keys:
        ctx.lose(base + pointer(key), KEY_KINDS.get(key, "unknown_field"), f"'{key}' has no slot in {target}")


def reasoning_keys(ctx: Ctx, i: int, role: str) -> dict[str, str]:
    """The reasoning text an assistant message carries under a key chat templates read
    (``hf.REASONING_KEYS``: DeepSeek / vLLM Chat messages and HF rows put it there), which Chat and
    HF both keep on the message; ``{}`` for any other role. A value that is not a string is not
    returned: it stays an unmodelled key, reported by whoever drops it."""
    if role != "assistant" or ctx.v.extra[i] is None:
        return {}
    extra = ctx.extra(i)
    return {k: extra[k] for k in hf.REASONING_KEYS if isinstance(extra.get(k), str)}


def item_fields(
    ctx: Ctx, i: int, target: str, carry: frozenset[str] | None = None, kept: Collection[str] = ()
) -> dict[str, Any]:
    """Report the item-level fields the target has no slot for (Responses id/status/phase, the
    typed-message tag, namespace, Anthropic message keys, unmodelled keys).

    Between dataset formats the unmodelled keys are returned to be carried, except those named in
    ``carry`` (the target's own keys, which they would collide with); otherwise all are losses but
    those in ``kept`` (written by the caller).
    """
    v = ctx.v
    base = item_ptr(ctx, i)
    nulls = v.nulls[i] or ()
    for field, kind in (
        ("id", "item_id"),
        ("status", "status"),
        ("phase", "phase"),
        ("namespace", "namespace"),
    ):
        if getattr(v, field)[i] is not None or field in nulls:
            ctx.lose(base + "/" + field, kind, f"{target} has no {field}")
    if ctx.source == "responses" and v.native_type[i] is not None and v.type[i] == "message":
        ctx.lose(base + "/type", "content_form", f"{target} messages have no type tag")
    if v.wrapper[i] is not None:
        lose_keys(ctx, message_ptr(ctx, i), ctx.wrapper(i), target)
    extra = ctx.extra(i)
    if carry is None or ctx.source not in DATASET_SOURCES:
        lose_keys(ctx, base, [k for k in extra if k not in kept], target)
        return {}
    lose_keys(ctx, base, [k for k in extra if k in carry], target)
    return {k: val for k, val in extra.items() if k not in carry}


def output_kind(ctx: Ctx, i: int) -> None:
    """The output of a custom call comes back as a function call output (the targets have one kind)."""
    if ctx.v.type[i] == "custom_tool_call_output":
        ctx.lose(item_ptr(ctx, i), "custom_tool", "a custom tool output became a function call output")


def lose_item(ctx: Ctx, i: int, target: str) -> None:
    """An item kind no chat-template format can hold (reasoning, compaction, hosted tools, ...)."""
    v = ctx.v
    t = v.type[i]
    base = item_ptr(ctx, i)
    if t == "reasoning":
        ctx.lose(base, "reasoning", f"{target} has no reasoning")
        if v.encrypted_content[i] is not None:
            ctx.lose(base + "/" + ctx.wire_key(i, "encrypted_content"), "encrypted_reasoning", "dropped")
        if v.signature[i] is not None:
            ctx.lose(base + "/signature", "thinking_signature", "dropped")
    elif t == "compaction":
        ctx.lose(base, "compaction", f"{target} has no compaction items")
    elif t == "item_reference":
        ctx.lose(base, "unknown_item", "an item reference cannot be resolved here")
    else:
        ctx.lose_item(base, t, target)


# -- text ---------------------------------------------------------------------------------------


def _block_text(ctx: Ctx, c: BlockView, j: int, path: str, target: str) -> str | None:
    """Block ``j`` as text, or None (reported) when it is not text."""
    t = c.type[j]
    if t not in TEXT_TYPES:
        kind = "image" if t in ("input_image", "image", "image_url") else "file" if t in (
            "input_file", "document", "file") else "unknown_field"  # fmt: skip
        ctx.lose(path, kind, f"{a_or_an(quoted(t))} part has no place in {target} text")
        return None
    if t == "refusal":
        ctx.lose(path, "refusal", "a refusal became plain text")
    if c.annotations[j] not in (None, b"[]"):
        ctx.lose(path + "/annotations", "annotations", f"{target} text has no annotations")
    for key, col in (
        ("logprobs", c.logprobs),
        ("cache_control", c.cache_control),
        ("citations", c.citations),
    ):
        if col[j] is not None:
            ctx.lose(path + "/" + key, key, f"{target} text has no {key}")
    if c.extra[j] is not None:
        lose_keys(ctx, path, orjson.loads(c.extra[j]), f"{target} text")
    return c.text[j] or ""


def _join(ctx: Ctx, path: str, texts: list[str], target: str) -> str:
    kind = "block_boundary" if len(texts) > 1 else "content_form"
    ctx.lose(path, kind, f"a content list became one {target} string (parts joined with no separator)")
    return "".join(texts)


def flatten(ctx: Ctx, i: int, target: str) -> Any:
    """Item ``i``'s content as one string; None when null, ``...`` when absent."""
    v = ctx.v
    form = v.content_form[i]
    if form == FORM_STRING:
        return v.content.text[v.content_off[i]]
    if form == FORM_NULL:
        return None
    if form != FORM_PARTS:
        return ...
    c = v.content
    texts = [
        text
        for k, j in enumerate(ctx.blocks(i))
        if (text := _block_text(ctx, c, j, content_ptr(ctx, i, k), target)) is not None
    ]
    return _join(ctx, content_ptr(ctx, i), texts, target)


def instructions_key(ctx: Ctx) -> str:
    """The source's top-level key for instructions (Responses ``instructions``, else ``system``)."""
    return "/instructions" if ctx.source == "responses" else "/system"


def instructions_text(ctx: Ctx, target: str) -> Any:
    """Top-level instructions / system as one string; None when null, ``...`` when absent."""
    view, r = ctx.view, ctx.r
    form = view.instr_form[r]
    if form == "items":  # the items are messages of the conversation, in place
        instruction_items(ctx, "the first messages")
        return ...
    if form == FORM_STRING:
        return view.instr.text[view.instr_off[r]]
    if form == FORM_NULL:
        return None
    if form != FORM_PARTS:
        return ...
    key = instructions_key(ctx)
    texts = [
        text
        for k, j in enumerate(range(view.instr_off[r], view.instr_off[r + 1]))
        if (text := _block_text(ctx, view.instr, j, f"{key}/{k}", target)) is not None
    ]
    return _join(ctx, key, texts, target)


def role_of(ctx: Ctx, i: int) -> str:
    """The item's role in a system/user/assistant vocabulary (``developer`` is reported)."""
    role = ctx.v.role[i]
    if role is None:
        return "user"
    if role == "developer":
        # on the message itself: its role is what it *is* (and what aligns it with its way back)
        ctx.lose(item_ptr(ctx, i), "developer_role", "the developer message became a system message")
        return "system"
    return role


def sharegpt_tag_kept(ctx: Ctx, i: int, role: str) -> None:
    """From ShareGPT: report a ``from`` tag that comes back under its default name (an alias)."""
    v = ctx.v
    if ctx.source == "sharegpt" and sharegpt.tag_for(v.type[i], role) != v.native_type[i]:
        ctx.lose(item_ptr(ctx, i) + "/from", "role", f"'{v.native_type[i]}' comes back as the default tag")


def leading_system_note(ctx: Ctx, has_instructions: bool, target: str) -> None:
    """A first system message and the top-level system prompt look the same in the target, so the
    way back turns one into the other: Responses/Anthropic prompts, ShareGPT first system turns."""
    v = ctx.v
    i = ctx.start
    while i < ctx.end and v.type[i] not in ("message", *CALLS, *OUTPUTS):
        i += 1  # items the target drops (reasoning, references, hosted tools) leave no message
    if has_instructions or i == ctx.end or ctx.source in ("chat", "hf"):
        return
    if (
        v.type[i] == "message"
        and v.role[i] in ("system", "developer")
        and v.content_form[i]
        in (
            FORM_STRING,
            FORM_PARTS,
        )
    ):
        detail = f"a leading system message and the top-level system prompt look the same in {target}"
        ctx.lose(item_ptr(ctx, i), "instruction_position", detail)
        ctx.lose(instructions_key(ctx), "instruction_position", detail)


# -- tool calls ---------------------------------------------------------------------------------


def parse_arguments(raw: str | None) -> tuple[dict[str, Any], bool]:
    """The arguments object and whether writing it as compact JSON gives ``raw`` back exactly."""
    if raw is None:
        return {}, False
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return {RAW_ARGUMENTS: raw}, False
    if type(obj) is not dict:
        return {RAW_ARGUMENTS: raw}, False
    return obj, orjson.dumps(obj) == raw.encode()


def arguments_object(ctx: Ctx, i: int) -> dict[str, Any]:
    """Item ``i``'s arguments as a JSON object, reporting what is not written back byte for byte."""
    v = ctx.v
    if v.type[i] == "custom_tool_call":
        # in a Chat tool_calls list the call changes kind, and calls have no key to align on: the
        # whole list is what changes
        where = message_ptr(ctx, i) + "/tool_calls" if ctx.source in ("chat", "hf") else item_ptr(ctx, i)
        ctx.lose(where, "custom_tool", "a custom tool call became a function call {'input': ...}")
        return {"input": v.input[i] or ""}
    if ctx.source == "sharegpt" and v.name[i] is None:
        raw = flatten(ctx, i, TARGET)  # a function_call value that is not {name, arguments} JSON
        return {RAW_ARGUMENTS: raw if isinstance(raw, str) else ""}
    raw = v.arguments[i]
    if raw is None and ctx.source == "hf" and (raw := hf.string_arguments(ctx.extra(i))) is not None:
        ctx.lose(field_ptr(ctx, i, "arguments"), "argument_string", "a string of arguments became an object")
    obj, exact = parse_arguments(raw)
    if not exact and ctx.source != "sharegpt":  # ShareGPT values are checked whole (sharegpt_value_kept)
        detail = "no arguments; wrote {}" if raw is None else (
            f"not a JSON object; wrapped as {{'{RAW_ARGUMENTS}': ...}}" if RAW_ARGUMENTS in obj
            else "re-serialised as compact JSON")  # fmt: skip
        ctx.lose(field_ptr(ctx, i, "arguments"), "argument_string", detail)
    return obj


def call_group_end(ctx: Ctx, i: int) -> int:
    """End of the run of items sharing item ``i``'s group (a ShareGPT parallel function_call turn)."""
    v = ctx.v
    j = i + 1
    while j < ctx.end and v.group[j] == v.group[i] and v.type[j] in CALLS:
        j += 1
    return j


def sharegpt_value_kept(ctx: Ctx, i: int) -> None:
    """From ShareGPT: report a function_call value that would not be written back byte for byte
    (it is rebuilt as ``dump_value({"name", "arguments"})``, or a list of them)."""
    v = ctx.v
    if ctx.source != "sharegpt" or v.part[i] not in (None, 0):
        return
    value = v.content.text[v.content_off[i]] if v.content_form[i] == FORM_STRING else None
    objs = [
        {"name": v.name[j], "arguments": parse_arguments(v.arguments[j])[0]}
        for j in range(i, call_group_end(ctx, i))
    ]
    rebuilt = objs if v.part[i] == 0 else objs[0]
    if value is None or v.name[i] is None or sharegpt.dump_value(rebuilt) != value:
        ctx.lose(content_ptr(ctx, i), "argument_string", "the function_call value is re-serialised")


# -- tools --------------------------------------------------------------------------------------


def _loads_tools(ctx: Ctx) -> Any:
    """The source's tool list (``...`` when absent); a JSON string of tools (HF rows kept in Arrow)
    is parsed and reported, since it comes back as a list."""
    raw_bytes = ctx.view.tools[ctx.r]
    if raw_bytes is None:
        return ...
    raw = orjson.loads(raw_bytes)
    if isinstance(raw, str):
        ctx.lose("/tools", "tools", "a JSON string of tools became a list")
        try:
            raw = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return []
    return raw


def _schema(ctx: Ctx, tool: Any, path: str) -> dict[str, Any] | None:
    """One tool as a bare function schema ``{name, description?, parameters?, ...}``, or None."""
    if not isinstance(tool, dict):
        ctx.lose(path, "tools", "not a tool object")
        return None
    t = tool.get("type")
    if t == "function" and isinstance(tool.get("function"), dict):  # Chat / HF / OpenAI-style
        for key in keys_except(tool, {"type", "function"}):
            ctx.lose(path + pointer(key), "tools", f"tool '{key}' has no slot")
        return dict(tool["function"])
    if ctx.source == "responses" and t == "function":
        for key in keys_except(tool, {"type", "name", "description", "parameters", "strict"}):
            ctx.lose(path + pointer(key), "tools", f"tool '{key}' has no slot")
        return {k: tool[k] for k in ("name", "description", "parameters", "strict") if k in tool}
    if ctx.source == "anthropic" and t in (None, "custom") and "input_schema" in tool:
        for key in keys_except(tool, {"type", "name", "description", "input_schema"}):
            ctx.lose(path + pointer(key), "tools", f"tool '{key}' has no slot")
        fn = {k: tool[k] for k in ("name", "description") if k in tool}
        fn["parameters"] = tool["input_schema"]
        return fn
    if t is None and isinstance(tool.get("name"), str):  # a bare schema (ShareGPT, some HF rows)
        return dict(tool)
    ctx.lose(path, "tools", f"{a_or_an(quoted(t))} tool has no equivalent here")
    return None


def function_schemas(ctx: Ctx) -> list[dict[str, Any]] | None:
    """The source's tools as bare function schemas; None when it had no ``tools``."""
    raw = _loads_tools(ctx)
    if raw is ...:
        return None
    if not isinstance(raw, list):
        ctx.lose("/tools", "tools", "tools is not a list")
        return []
    string = ctx.source == "sharegpt"  # the tools of a ShareGPT row sit inside one string
    out = []
    for k, tool in enumerate(raw):
        schema = _schema(ctx, tool, "/tools" if string else pointer("tools", k))
        if schema is not None:
            out.append(schema)
    return out


def top_level(ctx: Ctx, body: dict[str, Any], reserved: frozenset[str], target: str) -> dict[str, Any]:
    """Report (or, between dataset formats, carry) ``model``, ``tool_choice``, explicit nulls and
    every other top-level key; ``reserved`` are the keys either dataset format models."""
    view, r = ctx.view, ctx.r
    carry = ctx.source in DATASET_SOURCES
    if view.model[r] is not None:
        if carry:
            body["model"] = view.model[r]
        else:
            ctx.lose("/model", "request_field", f"{target} rows have no model")
    if view.tool_choice[r] is not None:
        ctx.lose("/tool_choice", "tools", f"{target} has no tool_choice")
    for name in view.nulls[r] or ():
        if carry and name not in body:
            body[name] = None
        else:
            ctx.lose("/" + name, "request_field", f"explicit null '{name}' dropped")
    extra = orjson.loads(view.extra[r]) if view.extra[r] is not None else {}
    for key, value in extra.items():
        if carry and key not in reserved and key not in body:
            body[key] = value
        else:
            ctx.lose(pointer(key), "request_field", f"'{key}' is not carried to {target}")
    return body


# -- HF messages --------------------------------------------------------------------------------


def _message(ctx: Ctx, i: int) -> dict[str, Any]:
    v = ctx.v
    role = role_of(ctx, i)
    sharegpt_tag_kept(ctx, i, role)
    msg: dict[str, Any] = {"role": role}
    content = flatten(ctx, i, TARGET)
    if isinstance(content, str) or (role == "assistant" and content is None):
        msg["content"] = content
    elif role != "assistant":
        ctx.lose(content_ptr(ctx, i), "content_form", "null or absent content written as ''")
        msg["content"] = ""
    if v.name[i] is not None:
        msg["name"] = v.name[i]
    # A Chat source's reasoning keys are the HF message's own (to_chat writes them back); between
    # the dataset formats item_fields carries them with every other key.
    reasoning = reasoning_keys(ctx, i, role) if ctx.source == "chat" else {}
    msg.update(reasoning)
    msg.update(item_fields(ctx, i, TARGET, MESSAGE_KEYS, kept=reasoning))
    return msg


def call_type_kept(ctx: Ctx, i: int) -> None:
    """A Chat/HF call without the ``"function"`` type tag is written with it. Calls have no key to
    align on, so a call that changes shape is reported on its list."""
    v = ctx.v
    if ctx.source in ("chat", "hf") and v.type[i] == "function_call" and v.native_type[i] != "function":
        ctx.lose(
            message_ptr(ctx, i) + "/tool_calls", "content_form", "a call without type 'function' gets it"
        )


def _call(ctx: Ctx, i: int) -> dict[str, Any]:
    v = ctx.v
    sharegpt_value_kept(ctx, i)
    call_type_kept(ctx, i)
    call: dict[str, Any] = {}
    if v.call_id[i] is not None:
        call["id"] = v.call_id[i]
    call["type"] = "function"
    call["function"] = {"name": v.name[i] or "", "arguments": arguments_object(ctx, i)}
    item_fields(ctx, i, TARGET)
    return call


def _tool_message(ctx: Ctx, i: int, pairs: dict[int, int]) -> dict[str, Any]:
    v = ctx.v
    sharegpt_tag_kept(ctx, i, "tool")
    output_kind(ctx, i)
    msg: dict[str, Any] = {"role": "tool"}
    if v.call_id[i] is not None:
        msg["tool_call_id"] = v.call_id[i]
    name = v.name[i] if v.name[i] is not None else v.name[pairs[i]] if i in pairs else None
    if name is not None:
        msg["name"] = name
    if i not in pairs:
        ctx.lose(item_ptr(ctx, i), "orphan_output", "no matching call: the tool message has no name")
    if v.name[i] is not None and ctx.source not in DATASET_SOURCES:
        # kept here, but an API-format output has no name of its own: the way back drops it
        ctx.lose(item_ptr(ctx, i) + "/name", "name", "a tool output's own name does not come back")
    content = flatten(ctx, i, TARGET)
    if not isinstance(content, str):
        ctx.lose(content_ptr(ctx, i), "content_form", "null or absent tool output written as ''")
        content = ""
    msg["content"] = content
    msg.update(item_fields(ctx, i, TARGET, MESSAGE_KEYS))
    return msg


def _instructions(ctx: Ctx) -> list[dict[str, Any]]:
    system = instructions_text(ctx, TARGET)
    key = instructions_key(ctx)
    if system is ...:
        return []
    if system is None:
        ctx.lose(key, "instruction_position", "explicit null instructions dropped")
        return []
    if system == "" and ctx.source != "sharegpt":  # ShareGPT's system column *is* HF's system message
        ctx.lose(key, "empty_text", "empty instructions produce no system message")
        return []
    if ctx.source != "sharegpt":
        ctx.lose(key, "instruction_position", "instructions became a leading system message")
    return [{"role": "system", "content": system}]


def encode(ctx: Ctx) -> dict[str, Any]:
    """Convert one canonical row to an HF conversational row."""
    v = ctx.v
    if ctx.source == "responses" and ctx.view.items_form[ctx.r] == FORM_STRING:
        ctx.lose("/input", "content_form", "the string input shorthand becomes a user message")
    messages = _instructions(ctx)
    leading_system_note(ctx, bool(messages), TARGET)
    pairs = pair_outputs(ctx)
    report_way_back(ctx)  # id-less calls come back with ids
    current: dict[str, Any] | None = None  # the assistant message tool calls attach to
    call_group = -1  # the source group of the calls in ``current``
    for i in range(ctx.start, ctx.end):
        t = v.type[i]
        if t == "message":
            msg = _message(ctx, i)
            messages.append(msg)
            current = msg if msg["role"] == "assistant" else None
        elif t in CALLS:
            if current is None or (
                ctx.source == "sharegpt" and "tool_calls" in current and v.group[i] != call_group
            ):
                current = {"role": "assistant"}  # a ShareGPT function_call turn of its own stays apart
                messages.append(current)
            elif "tool_calls" not in current and current.get("content") == "" and ctx.source == "sharegpt":
                ctx.lose(item_ptr(ctx, i - 1), "content_form", "an empty text turn before a call is not kept")
            current.setdefault("tool_calls", []).append(_call(ctx, i))
            call_group = v.group[i]
        elif t in OUTPUTS:
            messages.append(_tool_message(ctx, i, pairs))
            current = None
        else:
            lose_item(ctx, i, TARGET)
            if t not in ("reasoning", "item_reference"):
                current = None
    body: dict[str, Any] = {"messages": messages}
    schemas = function_schemas(ctx)
    if schemas is not None:
        body["tools"] = [{"type": "function", "function": s} for s in schemas]
        tools_kept(ctx, schemas)
    return top_level(ctx, body, TOP_KEYS, TARGET)


def _canon(value: Any) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def tools_kept(ctx: Ctx, schemas: list[dict[str, Any]]) -> None:
    """Report tools that the way back would not rebuild as they were: a ShareGPT tools string not
    in ``dump_value`` form, Chat/HF tools that were not all ``{"type": "function", "function"}``."""
    raw = ctx.view.tools[ctx.r]
    if raw is None:
        return
    if ctx.source == "sharegpt":
        same = sharegpt.dump_value(schemas) == raw.decode()
    elif ctx.source in ("chat", "hf"):
        same = _canon([{"type": "function", "function": s} for s in schemas]) == _canon(orjson.loads(raw))
    else:
        return
    if not same:
        ctx.lose("/tools", "tools", "the tools come back in another shape")
