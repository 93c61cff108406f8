"""Every field of every request element the installed SDKs type, with a sample element setting it.

An *element* is one entry of a request body's list of messages, input items, tools or system
blocks (the arms of the body TypedDict's ``messages`` / ``input`` / ``tools`` / ``system`` union,
read from the installed ``openai`` and ``anthropic`` packages). A *field* is one leaf under an
element: a key path through the element's nested TypedDicts, choosing one arm of every union on
the way (a Chat user message's ``content`` as a string and as a list holding a text part are two
fields; so are the text part's ``text`` and its ``prompt_cache_breakpoint.mode``). Nothing is
listed by hand: a field a future SDK adds is enumerated here the day the SDK is installed.

:func:`fields` yields one :class:`SdkField` per leaf, with an element that sets it (and the
element's required keys, each with a sample value of its type): what
``tests/encoders/test_sdk_slots.py`` converts to see whether the field is carried or reported.
"""

from __future__ import annotations

import collections.abc as cabc
import types
import typing
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

from anthropic.types.message_create_params import MessageCreateParamsNonStreaming
from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming
from openai.types.responses.response_create_params import ResponseCreateParamsNonStreaming
from pydantic import BaseModel
from typing_extensions import is_typeddict

# The request body type of each format and its keys whose list entries are elements.
BODIES: dict[str, tuple[Any, tuple[str, ...]]] = {
    "chat": (CompletionCreateParamsNonStreaming, ("messages", "tools")),
    "responses": (ResponseCreateParamsNonStreaming, ("input", "tools")),
    "anthropic": (MessageCreateParamsNonStreaming, ("messages", "tools", "system")),
}
# Keys that say what an element is rather than hold a value of it: the type map decides them.
STRUCTURAL = frozenset(("type", "role"))

_LISTS = (list, cabc.Iterable, cabc.Sequence, typing.Iterable, typing.Sequence, typing.List)  # noqa: UP006
_MISSING = object()


def _unwrap(tp: Any) -> Any:
    """``tp`` without ``Annotated`` / ``Required`` / ``NotRequired`` around it."""
    while get_origin(tp) in (typing.Annotated, typing.Required, typing.NotRequired):
        tp = get_args(tp)[0]
    return tp


def arms(tp: Any) -> list[Any]:
    """The arms of a (nested) union, ``None`` left out; a plain type is its own one arm."""
    tp = _unwrap(tp)
    if get_origin(tp) in (Union, types.UnionType):
        return [a for arg in get_args(tp) for a in arms(arg)]
    return [] if tp is type(None) else [tp]


def is_list(tp: Any) -> bool:
    """A list-like annotation (``list``, ``Iterable``, ``Sequence``) with one item type."""
    return get_origin(tp) in _LISTS and len(get_args(tp)) == 1


@cache
def hints(td: Any) -> dict[str, Any]:
    """A TypedDict's keys and their annotations (with ``Required`` kept)."""
    return get_type_hints(td, include_extras=True)


def required(td: Any) -> list[str]:
    """The keys a TypedDict requires (the SDKs mark them ``Required[...]`` in total=False types)."""
    return [k for k, v in hints(td).items() if get_origin(v) is typing.Required]


def tag(td: Any, key: str) -> tuple[str, ...]:
    """The literal values a TypedDict's ``key`` may take (``type``/``role`` tags); () if not a literal."""
    if key not in hints(td):
        return ()
    values = [v for a in arms(hints(td)[key]) if get_origin(a) is Literal for v in get_args(a)]
    return tuple(values)


@dataclass(frozen=True)
class Step:
    """One key on a field's path: ``arm`` is the TypedDict chosen for its value (None: a leaf),
    ``many`` whether the value is a list of it; ``role`` fixes a multi-role element's role."""

    key: str
    arm: Any = None
    many: bool = False


@dataclass(frozen=True)
class SdkField:
    """One leaf field of one element type, reached by ``steps`` from the element (type ``root``)."""

    fmt: str
    list_key: str  # the body key whose list holds the element (messages, input, tools, system), or "body"
    root: Any  # the element's TypedDict
    role: str | None  # the role of an element typed with several
    steps: tuple[Step, ...]

    @property
    def name(self) -> str:
        """``messages[ChatCompletionUserMessageParam].content[ChatCompletionContentPartTextParam].text``."""
        role = f"({self.role})" if self.role else ""
        out = "body" if self.list_key == "body" else f"{self.list_key}[{self.root.__name__}{role}]"
        for s in self.steps:
            out += f".{s.key}" + (f"[{s.arm.__name__}]" if s.arm is not None and s.many else "")
            out += f"<{s.arm.__name__}>" if s.arm is not None and not s.many else ""
        return out

    def owners(self) -> list[tuple[Any, tuple[str, ...]]]:
        """Each TypedDict on the path (the element first) with the keys from it to the leaf."""
        out = [(self.root, tuple(s.key for s in self.steps))]
        for i, s in enumerate(self.steps):
            if s.arm is not None:
                out.append((s.arm, tuple(t.key for t in self.steps[i + 1 :])))
        return out


def _leaves(td: Any, seen: tuple[Any, ...]) -> Iterator[tuple[Step, ...]]:
    """Every leaf path under TypedDict ``td`` (a TypedDict already on the path is not entered
    again: the SDKs' recursive filters and nested results would never end)."""
    for key, annotation in hints(td).items():
        scalar = False
        for arm in arms(annotation):
            many = is_list(arm)
            inner = arms(get_args(arm)[0]) if many else [arm]
            for item in inner:
                if is_typeddict(item):
                    if item in seen:
                        continue
                    sub = list(_leaves(item, (*seen, item)))
                    for path in sub or [()]:
                        yield (Step(key, item, many), *path)
                elif not (isinstance(item, type) and issubclass(item, BaseModel)):
                    scalar = True  # response models in a request union are not request fields
        if scalar:
            yield (Step(key),)


def elements(fmt: str) -> Iterator[tuple[str, Any, str | None]]:
    """``(list_key, element TypedDict, role)`` for every element type of ``fmt``'s request body;
    an element typed with several roles (Responses' EasyInputMessageParam) once per role."""
    body, keys = BODIES[fmt]
    for list_key in keys:
        annotation = hints(body)[list_key]
        for arm in arms(annotation):
            if not is_list(arm):
                continue
            for element in arms(get_args(arm)[0]):
                if not is_typeddict(element):
                    continue
                roles = tag(element, "role")
                for role in roles if len(roles) > 1 else [None]:
                    yield list_key, element, role


# Top-level keys that are not request fields of their own: the model (another provider's name is
# the model_provider check's), the element lists (their elements are enumerated above).
NOT_BODY_FIELDS = frozenset(("model", "messages", "input", "tools", "system"))


@cache
def fields(fmt: str) -> tuple[SdkField, ...]:
    """Every leaf field of every element type of ``fmt``, and of its request body's top-level keys
    (``list_key`` "body"; ``type``/``role`` tags left out; Responses instructions as a string only:
    as items they are input items)."""
    out = []
    body = BODIES[fmt][0]
    for steps in _leaves(body, (body,)):
        key = steps[0].key
        if key in NOT_BODY_FIELDS or (key == "instructions" and len(steps) > 1):
            continue
        if steps[-1].arm is None and steps[-1].key in STRUCTURAL and len(steps) > 1:
            owner = steps[-2].arm
            if set(hints(owner)) - STRUCTURAL:
                continue
        out.append(SdkField(fmt, "body", body, None, steps))
    for list_key, element, role in elements(fmt):
        for steps in _leaves(element, (element,)):
            owner = steps[-2].arm if len(steps) > 1 else element
            # a tag is a field only of a nested variant that has nothing else (a screenshot action)
            if steps[-1].arm is None and steps[-1].key in STRUCTURAL and set(hints(owner)) - STRUCTURAL:
                continue
            out.append(SdkField(fmt, list_key, element, role, steps))
    return tuple(out)


# ---------------------------------------------------------------------------
# Sample values
# ---------------------------------------------------------------------------

# Values a key must have to mean something (an id that pairs a call with its result, a URL, JSON
# arguments, base64 data): keyed by "TypedDictName.key", then by key. Anything else gets a
# sample of its annotated type.
SAMPLES: dict[str, Any] = {
    "call_id": "call_1",
    "tool_call_id": "call_1",
    "tool_use_id": "toolu_1",
    "ToolUseBlockParam.id": "toolu_1",
    "ServerToolUseBlockParam.id": "srvtoolu_1",
    "ChatCompletionMessageFunctionToolCallParam.id": "call_1",
    "ChatCompletionMessageCustomToolCallParam.id": "call_1",
    "LocalShellCall.id": "lsh_1",
    "LocalShellCallOutput.id": "call_1",  # the call_id of the call it answers
    "arguments": '{"q": "weather"}',
    "FunctionCall.arguments": '{"q": "weather"}',
    "Function.arguments": '{"q": "weather"}',
    "input": {"q": "weather"},
    "Custom.input": "free-form input",
    "ResponseCustomToolCallParam.input": "free-form input",
    "url": "https://example.com/a.png",
    "ImageURL.url": "https://example.com/a.png",
    "ResponseInputImageParam.image_url": "https://example.com/a.png",
    "ResponseInputImageContentParam.image_url": "https://example.com/a.png",
    "file_data": "data:application/pdf;base64,JVBERg==",
    "file_url": "https://example.com/a.pdf",
    "filename": "a.pdf",
    "data": "JVBERg==",
    "Base64ImageSourceParam.data": "iVBORw0KGgo=",
    "InputAudio.data": "UklGRg==",
    "media_type": "image/png",
    "Base64PDFSourceParam.media_type": "application/pdf",
    "PlainTextSourceParam.media_type": "text/plain",
    "name": "get_weather",
    "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
    "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}},
    "text": "some text",
    "thinking": "some thinking",
    "signature": "sig_1",
}


def _scalar(owner: Any, key: str, annotation: Any) -> Any:
    """A sample value of a leaf: from :data:`SAMPLES`, else of its annotated type."""
    exact = f"{getattr(owner, '__name__', '')}.{key}"
    if exact in SAMPLES:
        return SAMPLES[exact]
    choices = arms(annotation)
    for a in choices:  # a literal's value is the one it may have (a hosted tool's fixed name)
        a = _unwrap(a)
        if get_origin(a) is Literal:
            values = [v for v in get_args(a) if v not in ("auto", "none")] or list(get_args(a))
            return values[0]
    if key in SAMPLES:
        return SAMPLES[key]
    for a in choices:
        if a is str:
            return f"{key}_value"
        if a is bool:
            return True
        if a is int:
            return 7
        if a is float:
            return 0.25
    for a in choices:
        if is_list(a):
            return [_sample_of(get_args(a)[0], key)]
        if a is dict or get_origin(a) in (dict, cabc.Mapping, typing.Dict):  # noqa: UP006
            args = get_args(a)
            return {
                f"{key}_key": _sample_of(args[1], key) if len(args) == 2 and args[1] is not object else "v"
            }
        if a is object or a is Any:
            return {f"{key}_key": "v"}
    raise TypeError(f"no sample for {getattr(owner, '__name__', owner)}.{key}: {annotation}")


def _sample_of(tp: Any, key: str) -> Any:
    """A sample value of an annotation (a TypedDict: its required keys)."""
    for a in arms(tp):
        if is_typeddict(a):
            return build(a, ())
    return _scalar(None, key, tp)


def _required_value(td: Any, key: str) -> Any:
    annotation = hints(td)[key]
    choices = arms(annotation)
    if key in STRUCTURAL or any(get_origin(_unwrap(a)) is Literal for a in choices):
        return _scalar(td, key, annotation)
    # a string arm first: the plainest value of a content union
    if str in choices:
        return _scalar(td, key, annotation)
    return _sample_of(annotation, key)


# Optional keys an element needs to mean anything (a file part with no file in it is dropped
# whatever else it carries), by TypedDict name: set in every sample of the type.
COMPANIONS: dict[str, dict[str, Any]] = {
    "FileFile": {"file_data": "data:application/pdf;base64,JVBERg==", "filename": "a.pdf"},
    "ResponseInputFileParam": {"file_data": "data:application/pdf;base64,JVBERg==", "filename": "a.pdf"},
    "ResponseInputFileContentParam": {
        "file_data": "data:application/pdf;base64,JVBERg==",
        "filename": "a.pdf",
    },
    "ResponseInputImageParam": {"image_url": "https://example.com/a.png"},
    "ResponseInputImageContentParam": {"image_url": "https://example.com/a.png"},
    "ChatCompletionAssistantMessageParam": {"content": "done"},
    "FunctionCallOutput": {"call_id": "call_1"},
}


# A part's source keys: one of them is what the part holds, so a field among them is set alone.
SOURCES = frozenset(("file_data", "file_url", "file_id", "image_url"))


def build(td: Any, steps: tuple[Step, ...], role: str | None = None) -> dict[str, Any]:
    """An instance of ``td`` with its required keys, its companions and the field ``steps`` leads to."""
    out: dict[str, Any] = {k: _required_value(td, k) for k in required(td)}
    companions = COMPANIONS.get(td.__name__, {})
    if steps and steps[0].key in SOURCES:
        companions = {k: v for k, v in companions.items() if k not in SOURCES}
    out.update(companions)
    if role is not None:
        out["role"] = role
    if steps:
        first, rest = steps[0], steps[1:]
        if first.arm is not None:
            value: Any = build(first.arm, rest)
            out[first.key] = [value] if first.many else value
        else:
            out[first.key] = _scalar(td, first.key, hints(td)[first.key])
    return out


def element_of(f: SdkField) -> dict[str, Any]:
    """The sample element of a field: its required keys and the field set."""
    return build(f.root, f.steps, f.role)


def value_at(obj: Any, keys: tuple[str, ...]) -> Any:
    """The value under a key path (through the first entry of each list); a sentinel if absent."""
    for k in keys:
        if isinstance(obj, list):
            obj = obj[0] if obj else _MISSING
        if not isinstance(obj, dict) or k not in obj:
            return _MISSING
        obj = obj[k]
    return obj


def has_path(td: Any, keys: tuple[str, ...]) -> bool:
    """Whether TypedDict ``td`` types the key path (through nested TypedDicts and lists of them)."""
    if not keys:
        return True
    if keys[0] not in hints(td):
        return False
    if len(keys) == 1:
        return True
    for a in arms(hints(td)[keys[0]]):
        inner = arms(get_args(a)[0]) if is_list(a) else [a]
        if any(is_typeddict(i) and has_path(i, keys[1:]) for i in inner):
            return True
        if any(i is dict or get_origin(i) in (dict, cabc.Mapping) for i in inner):
            return True  # a free-form object (a JSON schema) holds any key
    return False


MISSING = _MISSING
