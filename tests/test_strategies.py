"""Checks for the wire-body strategies in ``tests/strategies.py``.

Coverage is checked find-style: for each *target* (a record strategy, or one of the component
strategies records are assembled from) one derandomized ``hypothesis.find`` pass generates values
until every case listed for that target has occurred, then stops.  Every generated value must be a
JSON-exact ``dict`` (``orjson`` round trip keeping int/float, the sign of zero and key order), and
every generated record must have the expected top-level shape.

Record targets carry the cases that need a whole record (top-level keys, positions, call/output
pairing, odd values anywhere).  Per-key cases (absent / null / value of a tri-state key, content
shapes) are checked on the component strategies, which is much cheaper than waiting for a rare item
to show up inside a record; union targets check that every component actually reaches the records.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import math
import random
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, Phase, find, settings
from hypothesis.errors import NoSuchExample
from hypothesis.strategies import SearchStrategy

from tests.strategies import (
    ANTHROPIC_BLOCKS,
    ANTHROPIC_MESSAGE,
    ANTHROPIC_REQUEST_BLOCK_WEIGHTS,
    ANTHROPIC_RESPONSE_BLOCK_WEIGHTS,
    CHAT_MESSAGE_WEIGHTS,
    CHAT_MESSAGES,
    CHAT_PARTS,
    FORMATS,
    KINDS,
    RESPONSES_INPUT_WEIGHTS,
    RESPONSES_ITEMS,
    RESPONSES_OUTPUT_WEIGHTS,
    RESPONSES_PARTS,
    anthropic_request,
    anthropic_response,
    chat_request,
    chat_response,
    responses_request,
    responses_response,
    wire_record,
)

JsonDict = dict[str, Any]
Pred = Callable[[JsonDict], bool]

MIN_RECORDS = 40  # each record strategy is checked on at least this many records
RUN_EXAMPLES = 20  # values per hypothesis.find run (see ``search``)
MAX_RUNS = 100  # give up looking for missing cases after this many runs

# Short runs restarted with fresh seeds explore far better than one long run: Hypothesis spends the
# first tenth of a run on deliberately small inputs and mutates each new input several times.
RUN_SETTINGS = settings(
    max_examples=RUN_EXAMPLES,
    database=None,
    deadline=None,
    phases=(Phase.generate,),
    suppress_health_check=list(HealthCheck),
)

ALL_PAIRS = [(fmt, kind) for fmt in FORMATS for kind in KINDS]

# --------------------------------------------------------------------------------------------------
# JSON exactness and top-level shapes
# --------------------------------------------------------------------------------------------------


def strict_equal(a: Any, b: Any) -> bool:
    """Equality that also distinguishes 1 / 1.0 / True, the sign of zero and dict key order."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(strict_equal(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(strict_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float):
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    return bool(a == b)


def walk(value: Any) -> Iterator[Any]:
    """Every value nested in *value* (dict keys included), depth first."""
    yield value
    if isinstance(value, dict):
        for key, child in value.items():
            yield key
            yield from walk(child)
    elif isinstance(value, list):
        for child in value:
            yield from walk(child)


def _bad_json_value(v: Any) -> bool:
    if isinstance(v, float):
        return not math.isfinite(v)
    if isinstance(v, str):
        return "\x00" in v
    return not (v is None or isinstance(v, int | list | dict))


def check_json(value: Any) -> None:
    """*value* is a dict of plain JSON values that survives an orjson round trip exactly."""
    assert isinstance(value, dict)
    back = orjson.loads(orjson.dumps(value))
    assert back == value
    assert strict_equal(back, value)
    bad = [v for v in walk(value) if _bad_json_value(v)]
    assert not bad, bad


def _check_responses_request(r: JsonDict) -> None:
    assert isinstance(r["input"], str | list)
    if isinstance(r["input"], list):
        assert all(isinstance(item, dict) for item in r["input"])
    if "instructions" in r:
        assert r["instructions"] is None or isinstance(r["instructions"], str | list)


def _check_responses_response(r: JsonDict) -> None:
    assert r["object"] == "response"
    assert isinstance(r["id"], str) and isinstance(r["model"], str)
    assert isinstance(r["created_at"], int | float) and not isinstance(r["created_at"], bool)
    assert isinstance(r["output"], list)
    assert all(isinstance(item, dict) and "type" in item for item in r["output"])


def _check_chat_request(r: JsonDict) -> None:
    assert isinstance(r["messages"], list)
    for m in r["messages"]:
        assert m["role"] in {"system", "developer", "user", "assistant", "tool", "function"}
        if m["role"] != "assistant":
            assert "content" in m


def _check_chat_response(r: JsonDict) -> None:
    assert r["object"] == "chat.completion"
    assert isinstance(r["created"], int) and isinstance(r["id"], str) and isinstance(r["model"], str)
    for choice in r["choices"]:
        assert {"index", "finish_reason", "message"} <= set(choice)
        assert choice["message"]["role"] == "assistant"


def _check_anthropic_request(r: JsonDict) -> None:
    assert isinstance(r["messages"], list)
    for m in r["messages"]:
        assert m["role"] in {"user", "assistant", "system"}
        assert isinstance(m["content"], str | list)
    if "system" in r:
        assert isinstance(r["system"], str | list)


def _check_anthropic_response(r: JsonDict) -> None:
    assert (r["type"], r["role"]) == ("message", "assistant")
    assert {"id", "model", "content", "stop_reason", "stop_sequence", "usage"} <= set(r)
    assert all(isinstance(block, dict) and "type" in block for block in r["content"])


SHAPE_CHECKS: dict[tuple[str, str], Callable[[JsonDict], None]] = {
    ("responses", "request"): _check_responses_request,
    ("responses", "response"): _check_responses_response,
    ("chat", "request"): _check_chat_request,
    ("chat", "response"): _check_chat_response,
    ("anthropic", "request"): _check_anthropic_request,
    ("anthropic", "response"): _check_anthropic_response,
}


def test_wire_record_dispatch() -> None:
    factories: dict[tuple[str, str], Callable[[], SearchStrategy[JsonDict]]] = {
        ("responses", "request"): responses_request,
        ("responses", "response"): responses_response,
        ("chat", "request"): chat_request,
        ("chat", "response"): chat_response,
        ("anthropic", "request"): anthropic_request,
        ("anthropic", "response"): anthropic_response,
    }
    assert set(factories) == set(ALL_PAIRS)
    for (fmt, kind), factory in factories.items():
        assert wire_record(fmt, kind) is factory()
    with pytest.raises(ValueError):
        wire_record("gemini", "request")
    with pytest.raises(ValueError):
        wire_record("chat", "stream")


# --------------------------------------------------------------------------------------------------
# Accessors and case helpers
# --------------------------------------------------------------------------------------------------

ABSENT, NULL, VALUE = "absent", "null", "value"


def state(d: JsonDict, key: str) -> str:
    if key not in d:
        return ABSENT
    return NULL if d[key] is None else VALUE


def dicts(values: Any) -> list[JsonDict]:
    return [v for v in values if isinstance(v, dict)] if isinstance(values, list) else []


def is_unknown_type(d: JsonDict) -> bool:
    return str(d.get("type", "")).startswith("x")


EXTRA_MARKERS = frozenset(
    {"reasoning_content", "thought", "agent", "x_vendor", "provider_specific_fields", "x_float", "x_list"}
    | {"x_big", "x_text", "nested", "annotations_v2"}
)


def has_extra(d: JsonDict) -> bool:
    return any(k in EXTRA_MARKERS for k in d)


def is_invalid_json(text: str) -> bool:
    try:
        orjson.loads(text)
    except orjson.JSONDecodeError:
        return True
    return False


Case = tuple[str, Pred]


def tri(key: str, getter: Callable[[JsonDict], list[JsonDict]] | None = None, label: str = "") -> list[Case]:
    """Cases for the absent / null / value states of *key* (on the value itself or on *getter*'s dicts)."""

    def pred_for(s: str) -> Pred:
        if getter is None:
            return lambda d: state(d, key) == s
        return lambda d: any(state(x, key) == s for x in getter(d))

    return [(f"{label}{key}={s}", pred_for(s)) for s in (ABSENT, NULL, VALUE)]


def key_eq(key: str, value: Any) -> Pred:
    return lambda d: d.get(key) == value


def sub_eq(key: str, sub: str, value: Any) -> Pred:
    return lambda d: d[key].get(sub) == value


def has_key(key: str) -> Pred:
    return lambda d: key in d


def has_part(tag: str) -> Pred:
    return lambda d: any(p.get("type") == tag for p in parts(d))


def r_items(r: JsonDict) -> list[JsonDict]:
    """Responses items: list ``input``, ``output`` and list ``instructions``."""
    return [item for key in ("input", "output", "instructions") for item in dicts(r.get(key))]


def r_messages(r: JsonDict) -> list[JsonDict]:
    return [i for i in r_items(r) if i.get("type") == "message" or ("type" not in i and "role" in i)]


def r_typed(r: JsonDict, tag: str) -> list[JsonDict]:
    return [item for item in r_items(r) if item.get("type") == tag]


def r_kind(item: JsonDict) -> str:
    """The RESPONSES_ITEMS key of an item."""
    tag = item.get("type", None)
    if tag == "message" or (tag is None and "role" in item):
        if "id" in item and item["role"] == "assistant":
            return "message:output"
        return "message:input" if "status" in item or "id" in item else "message:easy"
    if tag is None:
        return "item_reference"
    return "unknown" if is_unknown_type(item) else str(tag)


def c_messages(r: JsonDict) -> list[JsonDict]:
    return dicts(r["messages"]) if "messages" in r else [c["message"] for c in r["choices"]]


def c_by_role(r: JsonDict, role: str) -> list[JsonDict]:
    return [m for m in c_messages(r) if m.get("role") == role]


def a_blocks(r: JsonDict) -> list[JsonDict]:
    """Anthropic blocks: message content, response content, system list, nested tool_result content."""
    blocks = dicts(r.get("system")) + (dicts(r["content"]) if r.get("type") == "message" else [])
    for m in dicts(r.get("messages")):
        blocks.extend(dicts(m.get("content")))
    return blocks + [p for b in blocks if b.get("type") == "tool_result" for p in dicts(b.get("content"))]


def a_typed(r: JsonDict, tag: str) -> list[JsonDict]:
    return [b for b in a_blocks(r) if b.get("type") == tag]


def parts(item: JsonDict) -> list[JsonDict]:
    return dicts(item.get("content"))


# --------------------------------------------------------------------------------------------------
# Record cases (need a whole record)
# --------------------------------------------------------------------------------------------------


def _responses_pair(r: JsonDict) -> bool:
    return any(
        a.get("type") in {"function_call", "custom_tool_call"}
        and b.get("type") == a["type"] + "_output"
        and a["call_id"] == b.get("call_id")
        for a, b in itertools.pairwise(r_items(r))
    )


def _chat_tool_answered(r: JsonDict) -> bool:
    call_ids = {c.get("id") for m in c_by_role(r, "assistant") for c in dicts(m.get("tool_calls"))}
    return any(m["tool_call_id"] in call_ids for m in c_by_role(r, "tool"))


def _anthropic_tool_answered(r: JsonDict) -> bool:
    msgs = dicts(r["messages"])
    return any(
        b.get("tool_use_id") in {u.get("id") for u in parts(prev) if u.get("type") == "tool_use"}
        for prev, cur in itertools.pairwise(msgs)
        for b in parts(cur)
    )


def _after_first(messages: Any, roles: set[str]) -> bool:
    return any(m.get("role") in roles for m in dicts(messages)[1:])


RESPONSES_REQUEST_CASES: list[Case] = [
    ("input=str", lambda r: isinstance(r["input"], str)),
    ("input=[]", lambda r: r["input"] == []),
    ("input has >=3 items", lambda r: len(dicts(r["input"])) >= 3),
    *tri("instructions"),
    ("instructions=str", lambda r: isinstance(r.get("instructions"), str)),
    ("instructions=list", lambda r: isinstance(r.get("instructions"), list)),
    (
        "system/developer message after position 0",
        lambda r: _after_first(r["input"], {"system", "developer"}),
    ),
    ("message without type", lambda r: any("type" not in m for m in r_messages(r))),
    ("explicit-null phase", lambda r: any(state(m, "phase") == NULL for m in r_messages(r))),
    ("function_call", lambda r: bool(r_typed(r, "function_call"))),
    ("function_call_output", lambda r: bool(r_typed(r, "function_call_output"))),
    ("reasoning", lambda r: bool(r_typed(r, "reasoning"))),
    ("call followed by its output", _responses_pair),
    ("3+ item kinds in one record", lambda r: len({r_kind(i) for i in r_items(r)}) >= 3),
    ("unknown top-level keys", has_extra),
]
RESPONSES_RESPONSE_CASES: list[Case] = [
    ("output=[]", lambda r: r["output"] == []),
    ("output message", lambda r: bool(r_messages(r))),
    ("3+ item kinds in one record", lambda r: len({r_kind(i) for i in r["output"]}) >= 3),
    *tri("status"),
    *tri("usage"),
    *tri("instructions"),
    ("instructions=list", lambda r: isinstance(r.get("instructions"), list)),
    ("created_at int", lambda r: type(r["created_at"]) is int),
    ("created_at float", lambda r: type(r["created_at"]) is float),
]
CHAT_REQUEST_CASES: list[Case] = [
    ("messages=[]", lambda r: r["messages"] == []),
    ("system message after position 0", lambda r: _after_first(r["messages"], {"system"})),
    ("developer message after position 0", lambda r: _after_first(r["messages"], {"developer"})),
    ('assistant content ""', lambda r: any(m.get("content") == "" for m in c_by_role(r, "assistant"))),
    ("tool message answers a tool call", _chat_tool_answered),
    ("function role message", lambda r: bool(c_by_role(r, "function"))),
    ("unknown keys on a message", lambda r: any(has_extra(m) for m in c_messages(r))),
    ("unknown top-level keys", has_extra),
]
CHAT_RESPONSE_CASES: list[Case] = [
    ("choices=[]", lambda r: r["choices"] == []),
    ("several choices", lambda r: len(r["choices"]) >= 2),
    ("non-positional choice index", lambda r: any(c["index"] != i for i, c in enumerate(r["choices"]))),
    *tri("content", c_messages, "message."),
    ('message content ""', lambda r: any(m.get("content") == "" for m in c_messages(r))),
    *tri("refusal", c_messages, "message."),
    *tri("tool_calls", c_messages, "message."),
    ("message annotations", lambda r: any(dicts(m.get("annotations")) for m in c_messages(r))),
    ("unknown keys on message (e.g. reasoning_content)", lambda r: any(has_extra(m) for m in c_messages(r))),
    *tri("logprobs", lambda r: r["choices"], "choice."),
    ("finish_reason null", lambda r: any(c["finish_reason"] is None for c in r["choices"])),
    *tri("usage"),
]
ANTHROPIC_REQUEST_CASES: list[Case] = [
    ("messages=[]", lambda r: r["messages"] == []),
    ("system absent", lambda r: "system" not in r),
    ("system str", lambda r: isinstance(r.get("system"), str)),
    ("system blocks", lambda r: isinstance(r.get("system"), list)),
    (
        "system block with cache_control",
        lambda r: any(b.get("cache_control") for b in dicts(r.get("system"))),
    ),
    ("top-level cache_control null", lambda r: state(r, "cache_control") == NULL),
    ('role "system" message after position 0', lambda r: _after_first(r["messages"], {"system"})),
    ("string content", lambda r: any(isinstance(m["content"], str) for m in dicts(r["messages"]))),
    ("empty block list", lambda r: any(m["content"] == [] for m in dicts(r["messages"]))),
    ("tool_result without content", lambda r: any("content" not in b for b in a_typed(r, "tool_result"))),
    ("tool_result answers the previous tool_use", _anthropic_tool_answered),
    ("unknown block", lambda r: any(is_unknown_type(b) for b in a_blocks(r))),
    ("unknown keys on a block", lambda r: any(has_extra(b) for b in a_blocks(r))),
]
ANTHROPIC_RESPONSE_CASES: list[Case] = [
    ("content=[]", lambda r: r["content"] == []),
    ("stop_reason null", lambda r: r["stop_reason"] is None),
    ("stop_reason value", lambda r: r["stop_reason"] is not None),
    ("stop_sequence str", lambda r: isinstance(r["stop_sequence"], str)),
    ("text block", lambda r: bool(a_typed(r, "text"))),
    ("thinking block", lambda r: bool(a_typed(r, "thinking"))),
    ("tool_use block", lambda r: bool(a_typed(r, "tool_use"))),
    *tri("citations", lambda r: a_typed(r, "text"), "text."),
]

RECORD_CASES: dict[tuple[str, str], list[Case]] = {
    ("responses", "request"): RESPONSES_REQUEST_CASES,
    ("responses", "response"): RESPONSES_RESPONSE_CASES,
    ("chat", "request"): CHAT_REQUEST_CASES,
    ("chat", "response"): CHAT_RESPONSE_CASES,
    ("anthropic", "request"): ANTHROPIC_REQUEST_CASES,
    ("anthropic", "response"): ANTHROPIC_RESPONSE_CASES,
}

# Values anywhere in a record; checked separately for each format and kind.


def _str_pred(pred: Callable[[str], bool]) -> Callable[[Any], bool]:
    return lambda v: isinstance(v, str) and pred(v)


def _extra_value(pred: Callable[[Any], bool]) -> Callable[[Any], bool]:
    """An object carrying one of the known unknown keys whose value satisfies *pred*."""
    return lambda v: isinstance(v, dict) and any(pred(v[k]) for k in EXTRA_MARKERS & v.keys())


def _is_control(c: str) -> bool:
    return unicodedata.category(c) == "Cc" and c not in "\t\r\n"


VALUE_CASES: list[tuple[str, Callable[[Any], bool]]] = [
    ("empty string", _str_pred(lambda s: s == "")),
    ("whitespace-only string", _str_pred(lambda s: s != "" and s.isspace())),
    ("leading space", _str_pred(lambda s: s.startswith(" ") and s.strip() != "")),
    ("trailing space", _str_pred(lambda s: s.endswith(" ") and s.strip() != "")),
    ("leading and trailing newline", _str_pred(lambda s: s[:1] == s[-1:] == "\n" and s.strip() != "")),
    ("astral plane", _str_pred(lambda s: any(ord(c) > 0xFFFF for c in s))),
    ("combining mark", _str_pred(lambda s: any(unicodedata.category(c) == "Mn" for c in s))),
    ("tab", _str_pred(lambda s: "\t" in s)),
    ("carriage return", _str_pred(lambda s: "\r" in s)),
    ("other control char", _str_pred(lambda s: any(_is_control(c) for c in s))),
    ("integral float", lambda v: type(v) is float and v.is_integer()),
    ("fractional float", lambda v: type(v) is float and not v.is_integer()),
    ("int", lambda v: type(v) is int),
    ("bool", lambda v: type(v) is bool),
    ("null", lambda v: v is None),
    ("unknown key holding a nested object", _extra_value(lambda x: isinstance(x, dict) and bool(x))),
    ("unknown key holding null", _extra_value(lambda x: x is None)),
]


def _value_case(name: str, pred: Callable[[Any], bool]) -> Case:
    return (f"value: {name}", lambda r: any(pred(v) for v in walk(r)))


# --------------------------------------------------------------------------------------------------
# Component cases (per-key states on the strategies records are assembled from)
# --------------------------------------------------------------------------------------------------


def _annotations(m: JsonDict) -> list[JsonDict]:
    return [a for p in parts(m) for a in dicts(p.get("annotations"))]


def _output_parts(item: JsonDict) -> list[JsonDict]:
    return dicts(item["output"])


def _tool_calls(m: JsonDict) -> list[JsonDict]:
    return dicts(m.get("tool_calls"))


def _input_values(b: JsonDict) -> list[Any]:
    return list(walk(b["input"]))


ROLES = ("user", "assistant", "system", "developer")

COMPONENT_CASES: dict[str, tuple[SearchStrategy[JsonDict], list[Case]]] = {
    "responses message:easy": (
        RESPONSES_ITEMS["message:easy"],
        [
            *tri("phase"),
            ("type absent", lambda m: "type" not in m),
            ("type present", lambda m: m.get("type") == "message"),
            ("string content", lambda m: isinstance(m["content"], str)),
            ("list content", lambda m: isinstance(m["content"], list)),
            *[(f"role {role}", key_eq("role", role)) for role in ROLES],
            ("assistant with output_text parts", lambda m: any(p["type"] == "output_text" for p in parts(m))),
            ("unknown part", lambda m: any(is_unknown_type(p) for p in parts(m))),
        ],
    ),
    "responses message:input": (
        RESPONSES_ITEMS["message:input"],
        [
            ("status", lambda m: "status" in m),
            ("stored id", lambda m: "id" in m),
            ("type absent", lambda m: "type" not in m),
            ("input_image part", lambda m: any(p["type"] == "input_image" for p in parts(m))),
            ("input_file part", lambda m: any(p["type"] == "input_file" for p in parts(m))),
        ],
    ),
    "responses message:output": (
        RESPONSES_ITEMS["message:output"],
        [
            *tri("phase"),
            (
                "url_citation with int indices",
                lambda m: any(a["type"] == "url_citation" for a in _annotations(m)),
            ),
            ("file_citation", lambda m: any(a["type"] == "file_citation" for a in _annotations(m))),
            ("logprobs list", lambda m: any(dicts(p.get("logprobs")) for p in parts(m))),
            ("logprobs null", lambda m: any(state(p, "logprobs") == NULL for p in parts(m))),
            ("refusal part", lambda m: any(p["type"] == "refusal" for p in parts(m))),
            ("unknown keys on a part", lambda m: any(has_extra(p) for p in parts(m))),
        ],
    ),
    "responses function_call": (
        RESPONSES_ITEMS["function_call"],
        [
            *tri("id"),
            *tri("status"),
            *tri("caller"),
            ("program caller", lambda i: (i.get("caller") or {}).get("type") == "program"),
            ("async", lambda i: "async" in i),
            ("namespace", lambda i: "namespace" in i),
            ("arguments invalid JSON", lambda i: is_invalid_json(i["arguments"])),
            ("arguments empty", lambda i: i["arguments"] == ""),
            (
                "arguments pretty-printed",
                lambda i: "\n" in i["arguments"] and not is_invalid_json(i["arguments"]),
            ),
            (
                "arguments odd spacing",
                lambda i: " :" in i["arguments"] and not is_invalid_json(i["arguments"]),
            ),
            ("unknown keys", has_extra),
        ],
    ),
    "responses function_call_output": (
        RESPONSES_ITEMS["function_call_output"],
        [
            *tri("call_id"),
            *tri("id"),
            *tri("status"),
            *tri("caller"),
            ("output str", lambda i: isinstance(i["output"], str)),
            ("output parts", lambda i: bool(_output_parts(i))),
            ("output image part", lambda i: any(p["type"] == "input_image" for p in _output_parts(i))),
        ],
    ),
    "responses custom_tool_call": (RESPONSES_ITEMS["custom_tool_call"], [*tri("caller"), *tri("id")[::2]]),
    "responses custom_tool_call_output": (
        RESPONSES_ITEMS["custom_tool_call_output"],
        [
            ("output str", lambda i: isinstance(i["output"], str)),
            ("output parts", lambda i: bool(_output_parts(i))),
        ],
    ),
    "responses reasoning": (
        RESPONSES_ITEMS["reasoning"],
        [
            ("summary=[]", lambda i: i["summary"] == []),
            ("summary parts", lambda i: bool(i["summary"])),
            ("content", lambda i: bool(i.get("content"))),
            *tri("encrypted_content"),
        ],
    ),
    "responses compaction": (RESPONSES_ITEMS["compaction"], tri("id")),
    "responses compaction_trigger": (RESPONSES_ITEMS["compaction_trigger"], tri("id")),
    "responses item_reference": (RESPONSES_ITEMS["item_reference"], tri("type")),
    "responses web_search_call": (
        RESPONSES_ITEMS["web_search_call"],
        [(f"action {a}", sub_eq("action", "type", a)) for a in ("search", "open_page", "find_in_page")],
    ),
    "responses local_shell_call": (
        RESPONSES_ITEMS["local_shell_call"],
        [("env", lambda i: bool(i["action"]["env"])), *tri("timeout_ms", lambda i: [i["action"]], "action.")],
    ),
    "responses mcp_call": (
        RESPONSES_ITEMS["mcp_call"],
        [*tri("error"), *tri("output"), *tri("approval_request_id")],
    ),
    "responses unknown item": (
        RESPONSES_ITEMS["unknown"],
        [
            ("unknown type", is_unknown_type),
            ("nested object value", lambda i: any(isinstance(v, dict) and v for v in i.values())),
        ],
    ),
    "responses input_image (tool-output variant)": (
        RESPONSES_PARTS["input_image:content"],
        [*tri("detail"), *tri("image_url")],
    ),
    "chat assistant": (
        CHAT_MESSAGES["assistant"],
        [
            *tri("content"),
            ('content ""', lambda m: m.get("content") == ""),
            ("content text", lambda m: isinstance(m.get("content"), str) and m["content"].strip() != ""),
            ("content parts", lambda m: isinstance(m.get("content"), list)),
            ("refusal part", lambda m: any(p["type"] == "refusal" for p in parts(m))),
            *tri("refusal"),
            *tri("name"),
            *tri("tool_calls"),
            ("tool_calls=[]", lambda m: m.get("tool_calls") == []),
            (
                "text + several tool_calls",
                lambda m: (
                    isinstance(m.get("content"), str) and m["content"] != "" and len(_tool_calls(m)) >= 2
                ),
            ),
            (
                "function and custom tool_calls",
                lambda m: {c["type"] for c in _tool_calls(m)} == {"function", "custom"},
            ),
            (
                "invalid JSON arguments",
                lambda m: any(
                    is_invalid_json(c["function"]["arguments"])
                    for c in _tool_calls(m)
                    if c["type"] == "function"
                ),
            ),
            *tri("function_call"),
            *[(f"extra key {k}", has_key(k)) for k in ("reasoning_content", "thought", "agent")],
        ],
    ),
    "chat user": (
        CHAT_MESSAGES["user"],
        [
            ("string content", lambda m: isinstance(m["content"], str)),
            *[(f"{tag} part", has_part(tag)) for tag in ("text", "image_url", "input_audio", "file")],
            ("unknown part", lambda m: any(is_unknown_type(p) for p in parts(m))),
            ("name", lambda m: "name" in m),
        ],
    ),
    "chat system": (
        CHAT_MESSAGES["system"],
        [
            ("role system", lambda m: m["role"] == "system"),
            ("role developer", lambda m: m["role"] == "developer"),
            ("string content", lambda m: isinstance(m["content"], str)),
            ("text parts", lambda m: isinstance(m["content"], list)),
        ],
    ),
    "chat tool": (CHAT_MESSAGES["tool"], [("string content", lambda m: isinstance(m["content"], str))]),
    "chat function": (CHAT_MESSAGES["function"], tri("content")[1:]),
    "chat image part": (
        CHAT_PARTS["image_url"],
        tri("detail", lambda p: [p["image_url"]], "image_url.")[::2],
    ),
    "anthropic text": (
        ANTHROPIC_BLOCKS["text"],
        [*tri("citations"), *tri("cache_control"), ("citations=[]", lambda b: b.get("citations") == [])],
    ),
    "anthropic tool_result": (
        ANTHROPIC_BLOCKS["tool_result"],
        [
            ("content absent", lambda b: "content" not in b),
            ("content str", lambda b: isinstance(b.get("content"), str)),
            ("content blocks", lambda b: bool(dicts(b.get("content")))),
            ("image in content", lambda b: any(p["type"] == "image" for p in dicts(b.get("content")))),
            ("is_error", lambda b: "is_error" in b),
            *tri("cache_control"),
        ],
    ),
    "anthropic tool_use": (
        ANTHROPIC_BLOCKS["tool_use"],
        [
            ("input empty object", lambda b: b["input"] == {}),
            ("input nested object", lambda b: any(isinstance(v, dict) for v in b["input"].values())),
            (
                "input integral float",
                lambda b: any(type(v) is float and v.is_integer() for v in _input_values(b)),
            ),
            ("input int", lambda b: any(type(v) is int for v in _input_values(b))),
            ("input bool", lambda b: any(type(v) is bool for v in _input_values(b))),
            ("input null", lambda b: any(v is None for v in _input_values(b))),
            ("input non-ASCII key", lambda b: any(not k.isascii() for k in b["input"])),
            ("caller", lambda b: "caller" in b),
        ],
    ),
    "anthropic web_search_tool_result": (
        ANTHROPIC_BLOCKS["web_search_tool_result"],
        [
            ("result list", lambda b: isinstance(b["content"], list)),
            ("error object", lambda b: isinstance(b["content"], dict)),
        ],
    ),
    "anthropic document": (
        ANTHROPIC_BLOCKS["document"],
        [(f"source {t}", sub_eq("source", "type", t)) for t in ("base64", "text", "content", "url", "file")],
    ),
    "anthropic messages (union)": (
        ANTHROPIC_MESSAGE,
        [
            *[(f"role {role}", key_eq("role", role)) for role in ("user", "assistant", "system")],
            ("system with text blocks", lambda m: m["role"] == "system" and isinstance(m["content"], list)),
        ],
    ),
}

# --------------------------------------------------------------------------------------------------
# Find-style coverage runner
# --------------------------------------------------------------------------------------------------


@dataclass
class Coverage:
    checked: int = 0
    hits: set[str] = field(default_factory=set)


def search(
    strategy: SearchStrategy[JsonDict],
    cases: list[Case],
    check: Callable[[JsonDict], None],
    min_examples: int = 0,
) -> Coverage:
    """Generate values until every case has occurred (and at least *min_examples* were checked).

    Find-style and deterministic: successive ``hypothesis.find`` runs with seeds 0, 1, 2, ... whose
    condition records the cases and holds once all of them have been seen.
    """
    cov = Coverage()

    def done() -> bool:
        return len(cov.hits) == len(cases) and cov.checked >= min_examples

    def observe(value: JsonDict) -> bool:
        check(value)
        cov.checked += 1
        for name, pred in cases:
            if name not in cov.hits and pred(value):
                cov.hits.add(name)
        return done()

    for seed in range(MAX_RUNS):
        if done():
            break
        with contextlib.suppress(NoSuchExample):
            find(strategy, observe, settings=RUN_SETTINGS, random=random.Random(seed))
    return cov


def find_example(strategy: SearchStrategy[JsonDict], condition: Pred) -> JsonDict:
    """``hypothesis.find`` with the same seeded short runs as ``search``."""
    for seed in range(MAX_RUNS):
        with contextlib.suppress(NoSuchExample):
            return find(strategy, condition, settings=RUN_SETTINGS, random=random.Random(seed))
    raise AssertionError(f"no example found in {MAX_RUNS} runs")


@functools.cache
def record_coverage(fmt: str, kind: str) -> Coverage:
    check_shape = SHAPE_CHECKS[(fmt, kind)]

    def check(record: JsonDict) -> None:
        check_json(record)
        check_shape(record)

    cases = RECORD_CASES[(fmt, kind)] + [_value_case(name, pred) for name, pred in VALUE_CASES]
    return search(wire_record(fmt, kind), cases, check, MIN_RECORDS)


@functools.cache
def component_coverage(target: str) -> Coverage:
    strategy, cases = COMPONENT_CASES[target]
    return search(strategy, cases, check_json)


@pytest.mark.parametrize(("fmt", "kind"), ALL_PAIRS)
def test_records_are_json_exact_and_well_shaped(fmt: str, kind: str) -> None:
    assert record_coverage(fmt, kind).checked >= MIN_RECORDS


@pytest.mark.parametrize(
    ("fmt", "kind", "name"),
    [
        pytest.param(fmt, kind, name, id=f"{fmt} {kind}: {name}")
        for (fmt, kind), cases in RECORD_CASES.items()
        for name, _ in [*cases, *((f"value: {n}", p) for n, p in VALUE_CASES)]
    ],
)
def test_record_case_is_generated(fmt: str, kind: str, name: str) -> None:
    cov = record_coverage(fmt, kind)
    assert name in cov.hits, f"not generated in {cov.checked} records"


@pytest.mark.parametrize(
    ("target", "name"),
    [
        pytest.param(target, name, id=f"{target}: {name}")
        for target, (_, cases) in COMPONENT_CASES.items()
        for name, _ in cases
    ],
)
def test_component_case_is_generated(target: str, name: str) -> None:
    cov = component_coverage(target)
    assert name in cov.hits, f"not generated in {cov.checked} values"


INPUT_ONLY_ITEMS = {
    "message:easy",
    "message:input",
    "compaction_trigger",
    "item_reference",
    "configuration_update",
}
RESPONSE_BLOCKS = {
    "text",
    "thinking",
    "redacted_thinking",
    "tool_use",
    "server_tool_use",
    "web_search_tool_result",
    "container_upload",
    "unknown",
}


@pytest.mark.parametrize(
    ("weights", "registry", "expected"),
    [
        pytest.param(RESPONSES_INPUT_WEIGHTS, RESPONSES_ITEMS, set(RESPONSES_ITEMS), id="responses input"),
        pytest.param(
            RESPONSES_OUTPUT_WEIGHTS,
            RESPONSES_ITEMS,
            set(RESPONSES_ITEMS) - INPUT_ONLY_ITEMS,
            id="responses output",
        ),
        pytest.param(CHAT_MESSAGE_WEIGHTS, CHAT_MESSAGES, set(CHAT_MESSAGES), id="chat messages"),
        pytest.param(
            ANTHROPIC_REQUEST_BLOCK_WEIGHTS, ANTHROPIC_BLOCKS, set(ANTHROPIC_BLOCKS), id="anthropic request"
        ),
        pytest.param(
            ANTHROPIC_RESPONSE_BLOCK_WEIGHTS, ANTHROPIC_BLOCKS, RESPONSE_BLOCKS, id="anthropic response"
        ),
    ],
)
def test_every_component_reaches_the_records(
    weights: dict[str, int], registry: dict[str, SearchStrategy[JsonDict]], expected: set[str]
) -> None:
    """The record unions are built from these weight tables, so every listed component can occur."""
    assert set(weights) == expected
    assert set(weights) <= set(registry)
    assert all(w >= 1 for w in weights.values())


def test_case_names_are_unique() -> None:
    for cases in [*RECORD_CASES.values(), *(c for _, c in COMPONENT_CASES.values())]:
        names = [name for name, _ in cases]
        assert len(names) == len(set(names))


# --------------------------------------------------------------------------------------------------
# Headline cases, each located in whole records with a plain hypothesis.find
# --------------------------------------------------------------------------------------------------


def test_find_explicit_null_phase() -> None:
    found = find_example(responses_request(), lambda r: any(state(m, "phase") == NULL for m in r_messages(r)))
    assert any(m.get("phase", "") is None for m in r_messages(found))


def test_find_message_without_type() -> None:
    found = find_example(
        responses_request(), lambda r: any("type" not in m and "role" in m for m in r_items(r))
    )
    assert any("type" not in m for m in r_messages(found))


def test_find_chat_assistant_empty_string_content() -> None:
    found = find_example(
        chat_request(), lambda r: any(m.get("content") == "" for m in c_by_role(r, "assistant"))
    )
    assert any(m.get("content") == "" for m in c_by_role(found, "assistant"))


def test_find_anthropic_tool_result_without_content() -> None:
    found = find_example(
        anthropic_request(), lambda r: any("content" not in b for b in a_typed(r, "tool_result"))
    )
    assert any("content" not in b for b in a_typed(found, "tool_result"))
