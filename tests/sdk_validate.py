"""Strict validation of request bodies against the official SDK request types.

The SDK request types are ``TypedDict(total=False)`` classes meant for static typing;
validated naively with ``pydantic.TypeAdapter`` they accept almost anything:

* **Unknown keys are silently dropped** (pydantic's TypedDict default is
  ``extra="ignore"``), so a misspelled or invented key validates.  ``TypeAdapter(...,
  config=...)`` is refused for TypedDicts, but a config on an enclosing ``BaseModel``
  propagates into every nested TypedDict that has no config of its own.  We therefore
  wrap the body in a model with ``extra="forbid", strict=True``.
* **``Iterable[...]`` fields are validated lazily**: pydantic returns a
  ``ValidatorIterator`` and checks the items only when it is consumed.  Most list
  fields in both SDKs are ``Iterable`` (``summary``, ``content``, ``annotations``,
  ``tools``, Anthropic ``messages`` ...), so bad items pass unnoticed, and unions go
  wrong: in ``Union[Iterable[X], SomeTypedDict]`` a dict is an iterable of its keys,
  so the Iterable arm wins.  Our wrapper models are built with ``Iterable[X]``
  validated eagerly as ``list[X]`` (see :func:`_eager_iterables`), and building them
  fails loudly if any lazy ``generator`` schema is left.
* A few TypedDicts carry their own pydantic config and so escape ``extra="forbid"``
  (Anthropic ``Base64ImageSourceParam`` has ``arbitrary_types_allowed`` and ignores
  extras; ``InputSchemaTyped`` allows extras on purpose).  The validated result is
  therefore compared with the input: any key dropped or value coerced fails.
* Anthropic's message content union also contains the *response* ``ContentBlock``
  models (pydantic models with ``extra="allow"``), so any dict with a known ``type``
  tag and arbitrary extra keys would pass through them.  We validate Anthropic bodies
  a second time against a mirror of ``MessageCreateParamsNonStreaming`` whose
  ``messages`` use only the request-param block types, and reject any pydantic model
  instance in the validated result.

``strict=True`` additionally rejects lax coercions (``"1"`` for an int, ``1`` for a
bool); an int is still accepted where a float is expected, as in JSON.

On top of the type check, :func:`check_api_rules` enforces a few documented
server-side rules that the types cannot express (call/output pairing, Anthropic role
alternation, non-empty text blocks, ...).
"""

from __future__ import annotations

import json
from collections.abc import Generator
from contextlib import contextmanager
from functools import cache
from typing import Any, Literal, Required

from anthropic.types import (
    BashCodeExecutionToolResultBlockParam,
    CodeExecutionToolResultBlockParam,
    ContainerUploadBlockParam,
    DocumentBlockParam,
    ImageBlockParam,
    RedactedThinkingBlockParam,
    SearchResultBlockParam,
    ServerToolUseBlockParam,
    SystemMessageParam,
    TextBlockParam,
    TextEditorCodeExecutionToolResultBlockParam,
    ThinkingBlockParam,
    ToolResultBlockParam,
    ToolSearchToolResultBlockParam,
    ToolUseBlockParam,
    WebFetchToolResultBlockParam,
    WebSearchToolResultBlockParam,
)
from anthropic.types.message_create_params import MessageCreateParamsNonStreaming
from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming
from openai.types.responses.response_create_params import ResponseCreateParamsNonStreaming
from pydantic import BaseModel, ConfigDict, create_model
from pydantic_core import core_schema
from typing_extensions import TypedDict  # pydantic needs typing_extensions.TypedDict on 3.11

__all__ = ["ANTHROPIC_PARAM_BLOCKS", "SdkValidationError", "check_api_rules", "validate_request"]


class SdkValidationError(ValueError):
    """The body validated only loosely (dropped keys, coerced values, response models)."""


# The request-param arms of anthropic.types.MessageContentParam (the SDK union also
# lists the response ContentBlock models; tests check this mirror against the SDK).
ANTHROPIC_PARAM_BLOCKS = (
    TextBlockParam,
    ImageBlockParam,
    DocumentBlockParam,
    SearchResultBlockParam,
    ThinkingBlockParam,
    RedactedThinkingBlockParam,
    ToolUseBlockParam,
    ToolResultBlockParam,
    ServerToolUseBlockParam,
    WebSearchToolResultBlockParam,
    WebFetchToolResultBlockParam,
    CodeExecutionToolResultBlockParam,
    BashCodeExecutionToolResultBlockParam,
    TextEditorCodeExecutionToolResultBlockParam,
    ToolSearchToolResultBlockParam,
    ContainerUploadBlockParam,
)
_AnthropicBlock = (
    TextBlockParam
    | ImageBlockParam
    | DocumentBlockParam
    | SearchResultBlockParam
    | ThinkingBlockParam
    | RedactedThinkingBlockParam
    | ToolUseBlockParam
    | ToolResultBlockParam
    | ServerToolUseBlockParam
    | WebSearchToolResultBlockParam
    | WebFetchToolResultBlockParam
    | CodeExecutionToolResultBlockParam
    | BashCodeExecutionToolResultBlockParam
    | TextEditorCodeExecutionToolResultBlockParam
    | ToolSearchToolResultBlockParam
    | ContainerUploadBlockParam
)


class _ParamUserMessage(TypedDict, total=False):
    content: Required[str | list[_AnthropicBlock]]
    role: Required[Literal["user"]]


class _ParamAssistantMessage(TypedDict, total=False):
    content: Required[str | list[_AnthropicBlock]]
    role: Required[Literal["assistant"]]


class _ParamOnlyMessageCreate(MessageCreateParamsNonStreaming, total=False):
    messages: Required[list[_ParamUserMessage | _ParamAssistantMessage | SystemMessageParam]]  # type: ignore[misc]


_STRICT = ConfigDict(extra="forbid", strict=True)


@contextmanager
def _eager_iterables() -> Generator[None]:
    """Build schemas that validate ``Iterable[X]`` eagerly as ``list[X]``.

    pydantic validates ``Iterable`` lazily (a ``ValidatorIterator``), which hides bad
    items and breaks unions: in ``Union[Iterable[X], SomeTypedDict]`` a dict is an
    iterable of its keys, so the Iterable arm wins.  This swaps pydantic's (private)
    ``GenerateSchema._iterable_schema`` while our wrapper models are built; the tests
    check that the swap took effect.
    """
    from pydantic._internal import _generate_schema as gs

    original = gs.GenerateSchema._iterable_schema

    def eager(self: Any, type_: Any) -> Any:
        return core_schema.list_schema(self.generate_schema(self._get_first_arg_or_any(type_)))

    gs.GenerateSchema._iterable_schema = eager  # type: ignore[method-assign]
    try:
        yield
    finally:
        gs.GenerateSchema._iterable_schema = original  # type: ignore[method-assign]


_BODY_TYPES: dict[str, tuple[Any, ...]] = {
    "responses": (ResponseCreateParamsNonStreaming,),
    "chat": (CompletionCreateParamsNonStreaming,),
    # the official type first, then the request-param-only mirror
    "anthropic": (MessageCreateParamsNonStreaming, _ParamOnlyMessageCreate),
}


def _has_lazy_iterable(schema: Any) -> bool:
    if isinstance(schema, dict):
        return schema.get("type") == "generator" or any(_has_lazy_iterable(v) for v in schema.values())
    if isinstance(schema, list):
        return any(_has_lazy_iterable(v) for v in schema)
    return False


@cache
def _models(fmt: str) -> tuple[type[BaseModel], ...]:
    with _eager_iterables():
        models = tuple(
            create_model(f"_{fmt}_{i}", __config__=_STRICT, body=(tp, ...))
            for i, tp in enumerate(_BODY_TYPES[fmt])
        )
    for m in models:
        if _has_lazy_iterable(m.__pydantic_core_schema__):
            raise RuntimeError("pydantic internals changed: Iterable fields would be validated lazily")
    return models


def _difference(given: Any, validated: Any, path: str = "body") -> str | None:
    """First place where validation changed the body; None if it round-tripped exactly.

    Type-strict (a bool is not an int, absent is not null); the only change allowed is
    a JSON integer validated into a float field (``temperature: 1`` -> ``1.0``).
    """
    if isinstance(validated, BaseModel):
        return f"{path}: matched only the response model {type(validated).__name__}, not a request param type"
    if type(given) is not type(validated):
        if type(given) is int and type(validated) is float and given == validated:
            return None
        return f"{path}: {type(given).__name__} {given!r:.60} became {type(validated).__name__}"
    if isinstance(given, dict):
        if given.keys() != validated.keys():
            return f"{path}: keys {sorted(given.keys() ^ validated.keys())} dropped or added"
        for k in given:
            d = _difference(given[k], validated[k], f"{path}.{k}")
            if d:
                return d
    elif isinstance(given, list):
        if len(given) != len(validated):
            return f"{path}: length {len(given)} != {len(validated)}"
        for i, (x, y) in enumerate(zip(given, validated, strict=True)):
            d = _difference(x, y, f"{path}[{i}]")
            if d:
                return d
    elif given != validated:
        return f"{path}: {given!r:.60} != {validated!r:.60}"
    return None


def validate_request(fmt: str, body: dict[str, Any]) -> None:
    """Validate a request body against the official SDK request type of ``fmt``.

    ``fmt`` is ``"responses"`` (``ResponseCreateParamsNonStreaming``), ``"chat"``
    (``CompletionCreateParamsNonStreaming``) or ``"anthropic"``
    (``MessageCreateParamsNonStreaming``).  Raises ``pydantic.ValidationError`` for
    type errors, unknown keys and missing required keys, and
    :class:`SdkValidationError` when the body passes only loosely.
    """
    if fmt not in _BODY_TYPES:
        raise ValueError(f"unknown format {fmt!r}")
    if not isinstance(body, dict):
        raise SdkValidationError(f"body must be a dict, got {type(body).__name__}")
    for i, model in enumerate(_models(fmt)):
        validated = model.model_validate({"body": body}).body  # type: ignore[attr-defined]
        if fmt == "anthropic" and i == 0:
            # the official union may pick a response ContentBlock model (extra="allow")
            # for a block; the param-only pass below decides about those blocks
            continue
        diff = _difference(body, validated)
        if diff:
            raise SdkValidationError("validation changed the body: " + diff)


# ---------------------------------------------------------------------------
# Server-side rules the types cannot express
# ---------------------------------------------------------------------------


def _check_json_args(args: str, where: str) -> None:
    try:
        parsed = json.loads(args)
    except ValueError as e:
        raise SdkValidationError(f"{where}: arguments are not JSON: {e}") from None
    if not isinstance(parsed, dict):
        raise SdkValidationError(f"{where}: arguments must encode a JSON object")


def _responses_rules(body: dict[str, Any]) -> None:
    items = body.get("input")
    if not isinstance(items, list):
        return
    calls: dict[str, str] = {}
    outputs: dict[str, str] = {}
    out_types = {
        "function_call_output": "function_call",
        "custom_tool_call_output": "custom_tool_call",
    }
    for i, it in enumerate(items):
        t = it.get("type")
        where = f"input[{i}]"
        if t in ("function_call", "custom_tool_call", "local_shell_call"):
            if it["call_id"] in calls:
                raise SdkValidationError(f"{where}: duplicate call_id {it['call_id']}")
            calls[it["call_id"]] = t
            if t == "function_call":
                _check_json_args(it["arguments"], where)
        elif t in out_types:
            cid = it.get("call_id")
            if cid not in calls:
                raise SdkValidationError(f"{where}: output for unknown or later call_id {cid}")
            if calls[cid] != out_types[t]:
                raise SdkValidationError(f"{where}: {t} answers a {calls[cid]}")
            outputs[cid] = t
        elif t == "local_shell_call_output":
            if calls.get(it["id"]) != "local_shell_call":
                raise SdkValidationError(f"{where}: local_shell_call_output for unknown call {it['id']}")
            outputs[it["id"]] = t
    if items and items[-1].get("type") == "reasoning":
        raise SdkValidationError("a reasoning item must be followed by the item it belongs to")
    missing = set(calls) - set(outputs)
    if missing:
        raise SdkValidationError(f"calls without output: {sorted(missing)}")
    tools = body.get("tools") or []
    names = {t.get("name") for t in tools}
    ns_names = {(t["name"], f["name"]) for t in tools if t.get("type") == "namespace" for f in t["tools"]}
    for i, it in enumerate(items):
        if it.get("type") in ("function_call", "custom_tool_call") and tools:
            ns = it.get("namespace")
            ok = (ns, it["name"]) in ns_names if ns else it["name"] in names
            if not ok:
                raise SdkValidationError(f"input[{i}]: call to undeclared tool {ns}/{it['name']}")
    if "tool_choice" in body and not tools:
        raise SdkValidationError("tool_choice without tools")


def _chat_rules(body: dict[str, Any]) -> None:
    msgs = body["messages"]
    i = 0
    while i < len(msgs):
        m = msgs[i]
        if m["role"] == "assistant":
            if "tool_calls" not in m and m.get("content") is None and m.get("refusal") is None:
                raise SdkValidationError(
                    f"messages[{i}]: assistant message without content, tool_calls or refusal"
                )
            ids = [tc["id"] for tc in m.get("tool_calls", [])]
            for tc in m.get("tool_calls", []):
                if tc["type"] == "function":
                    _check_json_args(tc["function"]["arguments"], f"messages[{i}]")
            answered = []
            j = i + 1
            while j < len(msgs) and msgs[j]["role"] == "tool":
                answered.append(msgs[j]["tool_call_id"])
                j += 1
            if sorted(answered) != sorted(ids):
                raise SdkValidationError(f"messages[{i}]: tool_calls {ids} answered by {answered}")
            i = j
            continue
        if m["role"] == "tool":
            raise SdkValidationError(f"messages[{i}]: tool message without a preceding tool call")
        i += 1
    if "tool_choice" in body and not body.get("tools"):
        raise SdkValidationError("tool_choice without tools")
    if (
        body.get("response_format", {}).get("type") == "json_object"
        and "json" not in json.dumps(msgs).lower()
    ):
        raise SdkValidationError("response_format json_object needs the word JSON in the messages")


def _anthropic_rules(body: dict[str, Any]) -> None:
    msgs = body["messages"]
    if not msgs or msgs[0]["role"] != "user":
        raise SdkValidationError("messages must start with a user turn")
    blocks_with_cache = 0

    def text_ok(text: str, where: str) -> None:
        if not text.strip():
            raise SdkValidationError(f"{where}: empty or whitespace-only text")

    system = body.get("system")
    if isinstance(system, list):
        for k, b in enumerate(system):
            text_ok(b["text"], f"system[{k}]")
            blocks_with_cache += "cache_control" in b
    for t in body.get("tools", []):
        blocks_with_cache += "cache_control" in t
    for i, m in enumerate(msgs):
        if i and m["role"] == msgs[i - 1]["role"]:
            raise SdkValidationError(f"messages[{i}]: roles must alternate")
        content = m["content"]
        if isinstance(content, str):
            text_ok(content, f"messages[{i}]")
            continue
        if not content:
            raise SdkValidationError(f"messages[{i}]: empty content list")
        tool_uses = [b["id"] for b in content if b["type"] == "tool_use"]
        for k, b in enumerate(content):
            blocks_with_cache += "cache_control" in b
            if b["type"] == "text":
                text_ok(b["text"], f"messages[{i}].content[{k}]")
            if b["type"] == "tool_result" and m["role"] != "user":
                raise SdkValidationError(f"messages[{i}]: tool_result outside a user turn")
            if (
                b["type"] in ("thinking", "redacted_thinking", "tool_use", "server_tool_use")
                and m["role"] != "assistant"
            ):
                raise SdkValidationError(f"messages[{i}]: {b['type']} outside an assistant turn")
        if tool_uses:
            nxt = msgs[i + 1]["content"] if i + 1 < len(msgs) else []
            results = (
                [b["tool_use_id"] for b in nxt if isinstance(b, dict) and b["type"] == "tool_result"]
                if isinstance(nxt, list)
                else []
            )
            if sorted(results) != sorted(tool_uses):
                raise SdkValidationError(
                    f"messages[{i}]: tool_use {tool_uses} not answered in the next message ({results})"
                )
            lead = [b["type"] for b in nxt[: len(results)]]
            if any(t != "tool_result" for t in lead):
                raise SdkValidationError(f"messages[{i + 1}]: tool_result blocks must come first")
    last = msgs[-1]
    if last["role"] == "assistant":
        c = last["content"]
        tail = c if isinstance(c, str) else (c[-1].get("text", "x") if c else "")
        if tail != tail.rstrip():
            raise SdkValidationError("final assistant content ends with whitespace")
    if blocks_with_cache > 4:
        raise SdkValidationError(f"{blocks_with_cache} cache_control breakpoints (max 4)")
    thinking = body.get("thinking", {})
    if thinking.get("type") == "enabled":
        if thinking["budget_tokens"] < 1024 or thinking["budget_tokens"] >= body["max_tokens"]:
            raise SdkValidationError("thinking.budget_tokens must be >= 1024 and < max_tokens")
        if body.get("tool_choice", {}).get("type") in ("any", "tool"):
            raise SdkValidationError("forced tool_choice is incompatible with extended thinking")
        if "temperature" in body and body["temperature"] != 1:
            raise SdkValidationError("temperature must be 1 (or unset) with extended thinking")


def check_api_rules(fmt: str, body: dict[str, Any]) -> None:
    """Check documented server-side rules that the SDK types do not express.

    Responses: every call has exactly one later output of the matching kind and
    function ``arguments`` parse as a JSON object, calls name declared tools, no
    trailing reasoning item.
    Chat: each ``tool_calls`` list is answered by the following ``tool`` messages;
    ``json_object`` output needs "JSON" in the messages.
    Anthropic: user-first alternation, no empty/whitespace-only text, every
    ``tool_use`` answered first thing in the next user turn, <= 4 cache breakpoints,
    no trailing whitespace on a final assistant prefill, thinking constraints.
    """
    if fmt == "responses":
        _responses_rules(body)
    elif fmt == "chat":
        _chat_rules(body)
    elif fmt == "anthropic":
        _anthropic_rules(body)
    else:
        raise ValueError(f"unknown format {fmt!r}")
