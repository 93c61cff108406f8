"""Tests for pipeline.synth: determinism, SDK validity, API rules and feature coverage."""

from __future__ import annotations

import copy
import json
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, get_args

import orjson
import pytest
from anthropic.types import AssistantMessageParam, ContentBlock, UserMessageParam
from anthropic.types.message_content_param import MessageContentParam
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from pipeline import synth
from pipeline.synth import FORMATS, generate, write_jsonl
from tests.sdk_validate import ANTHROPIC_PARAM_BLOCKS, SdkValidationError, check_api_rules, validate_request

N_COVERAGE = 1000
MIN_COUNT = 10  # every feature must appear in at least this many of the 1000 records

Json = dict[str, Any]


@pytest.fixture(scope="module")
def records() -> dict[str, list[Json]]:
    return {fmt: list(generate(fmt, N_COVERAGE, seed=0)) for fmt in FORMATS}


# ---------------------------------------------------------------------------
# Determinism
# ---------------------------------------------------------------------------


def _dumps(records: Iterator[Json] | list[Json]) -> list[bytes]:
    """Byte-exact form for comparisons (``==`` on dicts would equate 1, 1.0 and True)."""
    return [orjson.dumps(r) for r in records]


@pytest.mark.parametrize("fmt", FORMATS)
def test_same_seed_same_records(fmt: str) -> None:
    a = _dumps(generate(fmt, 50, seed=7))
    assert a == _dumps(generate(fmt, 50, seed=7))
    c = _dumps(generate(fmt, 50, seed=8))
    assert sum(x == y for x, y in zip(a, c, strict=True)) == 0
    assert len(set(a)) == 50


@pytest.mark.parametrize("fmt", FORMATS)
def test_shards_agree_with_serial(fmt: str) -> None:
    serial = _dumps(generate(fmt, 60, seed=3))
    shards = (
        _dumps(generate(fmt, 25, seed=3))
        + _dumps(generate(fmt, 20, seed=3, start=25))
        + _dumps(generate(fmt, 15, seed=3, start=45))
    )
    assert shards == serial


@settings(max_examples=25, deadline=None)
@given(
    fmt=st.sampled_from(FORMATS),
    seed=st.integers(-(2**63), 2**64 - 1),
    start=st.integers(0, 40),
    n=st.integers(0, 5),
)
def test_record_is_function_of_seed_and_index(fmt: str, seed: int, start: int, n: int) -> None:
    serial = _dumps(generate(fmt, start + n, seed=seed))
    assert _dumps(generate(fmt, n, seed=seed, start=start)) == serial[start:]


@pytest.mark.parametrize("fmt", FORMATS)
def test_records_are_not_shared(fmt: str) -> None:
    """No dict or list is shared within or between records, so a consumer may mutate
    (e.g. pop keys while converting) without affecting later records."""
    records = list(generate(fmt, 200, seed=1))
    containers = [id(d) for r in records for d in _walk_containers(r)]
    assert len(containers) == len(set(containers))
    first = _dumps(generate(fmt, 20, seed=1))
    for r in generate(fmt, 20, seed=1):
        for t in r.get("tools", []):
            t.clear()
        r.clear()
    assert _dumps(generate(fmt, 20, seed=1)) == first


def _walk_containers(v: Any) -> Iterator[Any]:
    if isinstance(v, dict | list):
        yield v
        for x in v.values() if isinstance(v, dict) else v:
            yield from _walk_containers(x)


def test_bad_arguments() -> None:
    with pytest.raises(ValueError):
        generate("bogus", 1)
    with pytest.raises(ValueError):
        generate("chat", -1)
    with pytest.raises(ValueError):
        write_jsonl("/nonexistent/never-written.jsonl", "bogus", 1)


@pytest.mark.parametrize("fmt", FORMATS)
def test_write_jsonl_workers_identical(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str) -> None:
    monkeypatch.setattr(synth, "_CHUNK", 150)  # several chunks per worker, out-of-order completion
    n = 1000
    p1, p2 = tmp_path / "w1.jsonl", tmp_path / "w2.jsonl"
    b1 = write_jsonl(p1, fmt, n, seed=5)
    b2 = write_jsonl(str(p2), fmt, n, seed=5, workers=2)
    data = p1.read_bytes()
    assert b1 == b2 == len(data)
    assert data == p2.read_bytes()
    assert data.endswith(b"\n")
    lines = data.split(b"\n")[:-1]
    assert lines == _dumps(generate(fmt, n, seed=5))


def test_write_jsonl_empty(tmp_path: Path) -> None:
    assert write_jsonl(tmp_path / "e.jsonl", "chat", 0, workers=2) == 0
    assert (tmp_path / "e.jsonl").read_bytes() == b""


# ---------------------------------------------------------------------------
# SDK validation of every record
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_record_validates(records: dict[str, list[Json]], fmt: str) -> None:
    for i, body in enumerate(records[fmt]):
        assert orjson.loads(orjson.dumps(body)) == body
        try:
            validate_request(fmt, body)
            check_api_rules(fmt, body)
        except (ValidationError, SdkValidationError) as e:  # pragma: no cover - diagnostic
            pytest.fail(f"{fmt} record {i} invalid: {str(e)[:2000]}")


def test_anthropic_mirror_matches_sdk() -> None:
    arms = get_args(get_args(get_args(MessageContentParam)[1])[0])
    assert tuple(a for a in arms if a is not ContentBlock) == ANTHROPIC_PARAM_BLOCKS
    assert ContentBlock in arms
    for tp in (UserMessageParam, AssistantMessageParam):
        assert set(tp.__annotations__) == {"content", "role"}


def test_iterables_are_validated_eagerly() -> None:
    """A bad item deep inside an ``Iterable[...]`` field fails in validation itself, and
    the pydantic patch used for it is undone afterwards."""
    from pydantic._internal._generate_schema import GenerateSchema

    body = _r({"type": "reasoning", "id": "r", "summary": [{"type": "summary_text", "text": 1}]})
    with pytest.raises(ValidationError):
        validate_request("responses", body)
    assert GenerateSchema._iterable_schema.__name__ == "_iterable_schema"


_R_BASE: Json = {"model": "gpt-5", "input": [{"role": "user", "content": "hi"}]}
_C_BASE: Json = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}
_A_BASE: Json = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 1024,
    "messages": [{"role": "user", "content": "hi"}],
}
_OUT_MSG: Json = {
    "id": "msg_1",
    "type": "message",
    "status": "completed",
    "role": "assistant",
    "content": [{"type": "output_text", "text": "x", "annotations": []}],
}


def _r(*items: Json, **top: Any) -> Json:
    return {**_R_BASE, "input": [*_R_BASE["input"], *items], **top}


def _c(*msgs: Json, **top: Any) -> Json:
    return {**_C_BASE, "messages": [*_C_BASE["messages"], *msgs], **top}


def _a(*blocks: Json, role: str = "user", **top: Any) -> Json:
    return {**_A_BASE, "messages": [{"role": role, "content": list(blocks)}], **top}


VALID_EDGE_CASES: list[tuple[str, Json]] = [
    ("responses", _r()),
    ("responses", {**_R_BASE, "input": "plain string"}),
    ("responses", _r(instructions="", temperature=1, store=False, metadata={"k": "v"})),
    ("responses", _r(instructions=None)),
    (
        "responses",
        _r({"id": "msg_abc"}, {"type": "item_reference", "id": "msg_def"}, {"type": None, "id": "x"}),
    ),
    (
        "responses",
        _r({"type": "function_call_output", "call_id": "c", "output": "x", "status": None, "id": None}),
    ),
    (
        "responses",
        _r(
            {
                "type": "function_call_output",
                "call_id": "c",
                "output": [{"type": "input_image", "image_url": "https://x"}],
            }
        ),
    ),
    (
        "responses",
        _r(
            {
                "type": "function_call",
                "call_id": "c",
                "name": "f",
                "arguments": "{}",
                "namespace": "crm",
                "async": True,
            }
        ),
    ),
    ("responses", _r({"type": "reasoning", "id": "rs_1", "summary": []})),
    ("responses", _r({**_OUT_MSG, "phase": None})),
    ("responses", _r({"type": "compaction", "encrypted_content": "gAAA", "id": None})),
    ("responses", _r(tools=[{"type": "function", "name": "f", "parameters": None, "strict": None}])),
    (
        "chat",
        _c(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "c", "type": "custom", "custom": {"name": "n", "input": "x"}}],
            },
            {"role": "tool", "tool_call_id": "c", "content": [{"type": "text", "text": "ok"}]},
        ),
    ),
    ("chat", _c({"role": "assistant", "content": None, "refusal": "no"})),
    (
        "anthropic",
        _a(
            {
                "type": "text",
                "text": "x",
                "citations": None,
                "cache_control": {"type": "ephemeral", "ttl": "1h"},
            }
        ),
    ),
    ("anthropic", _a({"type": "tool_result", "tool_use_id": "toolu_1"})),
    (
        "anthropic",
        _a(
            {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "q"}},
            {
                "type": "web_search_tool_result",
                "tool_use_id": "srvtoolu_1",
                "content": {"type": "web_search_tool_result_error", "error_code": "max_uses_exceeded"},
            },
            role="assistant",
        ),
    ),
    (
        "anthropic",
        {
            **_A_BASE,
            "system": [{"type": "text", "text": "s", "cache_control": {"type": "ephemeral"}}],
            "metadata": {"user_id": None},
        },
    ),
]


@pytest.mark.parametrize(("fmt", "body"), VALID_EDGE_CASES)
def test_valid_edge_cases(fmt: str, body: Json) -> None:
    validate_request(fmt, body)


INVALID_CASES: list[tuple[str, str, Json]] = [
    # unknown keys, at every depth (pydantic drops them by default)
    ("top-level extra key", "responses", {**_R_BASE, "bogus": 1}),
    ("item extra key", "responses", _r({"role": "user", "content": "hi", "bogus": 1})),
    (
        "extra key inside an Iterable",
        "responses",
        _r({"type": "reasoning", "id": "r", "summary": [{"type": "summary_text", "text": "x", "b": 1}]}),
    ),
    (
        "extra key on a part",
        "responses",
        _r({"role": "user", "content": [{"type": "input_text", "text": "x", "b": 1}]}),
    ),
    # required keys and types
    (
        "output_text without annotations",
        "responses",
        _r({**_OUT_MSG, "content": [{"type": "output_text", "text": "x"}]}),
    ),
    ("output message without status", "responses", _r({k: v for k, v in _OUT_MSG.items() if k != "status"})),
    (
        "arguments as object",
        "responses",
        _r({"type": "function_call", "call_id": "c", "name": "f", "arguments": {"a": 1}}),
    ),
    (
        "function_call status null",
        "responses",
        _r({"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}", "status": None}),
    ),
    (
        "input_image without detail",
        "responses",
        _r({"role": "user", "content": [{"type": "input_image", "image_url": "https://x"}]}),
    ),
    (
        "id-less assistant with output_text",
        "responses",
        _r({"role": "assistant", "content": [{"type": "output_text", "text": "x", "annotations": []}]}),
    ),
    ("bad role", "responses", _r({"role": "tool", "content": "x"})),
    (
        "misspelled type tag",
        "responses",
        _r({"type": "function_cal", "call_id": "c", "name": "f", "arguments": "{}"}),
    ),
    (
        "function tool without strict",
        "responses",
        _r(tools=[{"type": "function", "name": "f", "parameters": {}}]),
    ),
    ("metadata value not str", "responses", _r(metadata={"k": 1})),
    ("lax bool", "responses", _r(store=1)),
    (
        "summary not a list",
        "responses",
        _r({"type": "reasoning", "id": "r", "summary": {"type": "summary_text", "text": "x"}}),
    ),
    ("phase on wrong value", "responses", _r({**_OUT_MSG, "phase": "final"})),
    (
        "tool message with name",
        "chat",
        _c({"role": "tool", "tool_call_id": "c", "content": "x", "name": "f"}),
    ),
    (
        "tool call without arguments",
        "chat",
        _c({"role": "assistant", "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f"}}]}),
    ),
    (
        "image_url as string",
        "chat",
        _c({"role": "user", "content": [{"type": "image_url", "image_url": "https://x"}]}),
    ),
    ("unknown role", "chat", _c({"role": "function_result", "content": "x"})),
    ("chat extra key", "chat", _c(reasoning_content="x")),
    (
        "text block extra key (passes the SDK union via ContentBlock)",
        "anthropic",
        _a({"type": "text", "text": "x", "bogus": 1}),
    ),
    (
        "base64 source extra key (own pydantic config)",
        "anthropic",
        _a(
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AA==", "x": 1}}
        ),
    ),
    (
        "tool_use input as string",
        "anthropic",
        _a({"type": "tool_use", "id": "t", "name": "f", "input": "{}"}, role="assistant"),
    ),
    ("thinking without signature", "anthropic", _a({"type": "thinking", "thinking": "x"}, role="assistant")),
    ("unknown block type", "anthropic", _a({"type": "txt", "text": "x"})),
    ("temperature (not in anthropic 2.14 params)", "anthropic", {**_A_BASE, "temperature": 0.5}),
    ("max_tokens missing", "anthropic", {k: v for k, v in _A_BASE.items() if k != "max_tokens"}),
    (
        "web search result list item extra key",
        "anthropic",
        _a(
            {
                "type": "web_search_tool_result",
                "tool_use_id": "s",
                "content": [
                    {"type": "web_search_result", "url": "u", "title": "t", "encrypted_content": "e", "x": 1}
                ],
            },
            role="assistant",
        ),
    ),
]


@pytest.mark.parametrize(("why", "fmt", "body"), INVALID_CASES, ids=[c[0] for c in INVALID_CASES])
def test_broken_bodies_fail(why: str, fmt: str, body: Json) -> None:
    with pytest.raises((ValidationError, SdkValidationError)):
        validate_request(fmt, body)


@pytest.mark.parametrize("fmt", FORMATS)
def test_mutated_generated_records_fail(records: dict[str, list[Json]], fmt: str) -> None:
    """Adding a stray key anywhere deep inside a real record must be caught."""
    body = copy.deepcopy(max(records[fmt][:50], key=lambda r: len(orjson.dumps(r))))
    dicts = list(_walk_dicts(body))
    caught = 0
    for d in dicts[1 :: max(1, len(dicts) // 25)]:
        if _is_free_form(d, body):
            continue
        d["zz_not_a_field"] = 1
        try:
            validate_request(fmt, body)
        except (ValidationError, SdkValidationError):
            caught += 1
        else:  # pragma: no cover - diagnostic
            pytest.fail(f"stray key accepted in {d}")
        finally:
            del d["zz_not_a_field"]
    assert caught >= 5


def _walk_dicts(v: Any) -> Iterator[Json]:
    if isinstance(v, dict):
        yield v
        for x in v.values():
            yield from _walk_dicts(x)
    elif isinstance(v, list):
        for x in v:
            yield from _walk_dicts(x)


def _is_free_form(d: Json, body: Json) -> bool:
    """Dicts whose keys are user data (JSON schemas, tool inputs, metadata, env)."""
    free: list[Any] = [body.get("metadata")]
    for t in body.get("tools", []):
        free += [t.get("parameters"), t.get("input_schema"), t.get("function", {}).get("parameters")]
        free += [x.get("parameters") for x in t.get("tools", [])]
    tc = body.get("tool_choice")
    if isinstance(tc, dict) and tc["type"] == "allowed_tools":  # tools: Iterable[Dict[str, object]]
        free.append(tc.get("tools") or tc["allowed_tools"]["tools"])
    rf = body.get("response_format", {})
    free.append(rf.get("json_schema", {}).get("schema"))
    for m in body.get("messages", []) + (body["input"] if isinstance(body.get("input"), list) else []):
        if isinstance(m.get("content"), list):
            free += [b.get("input") for b in m["content"] if isinstance(b, dict)]
        free.append(m.get("action", {}).get("env") if isinstance(m.get("action"), dict) else None)
    return any(_contains(f, d) for f in free if isinstance(f, dict | list))


def _contains(container: Any, target: Json) -> bool:
    return any(x is target for x in _walk_dicts(container))


# ---------------------------------------------------------------------------
# Feature coverage
# ---------------------------------------------------------------------------


def _texts(v: Any) -> Iterator[str]:
    if isinstance(v, dict):
        for k, x in v.items():
            if k in (
                "text",
                "content",
                "instructions",
                "input",
                "refusal",
                "thinking",
                "system",
            ) and isinstance(x, str):
                yield x
            else:
                yield from _texts(x)
    elif isinstance(v, list):
        for x in v:
            yield from _texts(x)


_RTL = range(0x0590, 0x0900)
_IRREGULAR = re.compile(r",  | ,| : |:  |\{ ")
_TIGHT_KV = re.compile(r'":[^ \n]')


def _text_features(body: Json) -> set[str]:
    f: set[str] = set()
    for t in _texts(body):
        if t and not t.strip():
            f.add("text:whitespace_only")
        elif t:
            if t[0].isspace():
                f.add("text:leading_ws")
            if t[-1].isspace():
                f.add("text:trailing_ws")
        if "\n" in t.strip():
            f.add("text:multiline")
        if len(t) >= 400:
            f.add("text:long")
        if not t.isascii():
            for ch in t:
                o = ord(ch)
                if 0x4E00 <= o <= 0x9FFF or 0x3040 <= o <= 0x30FF or 0xAC00 <= o <= 0xD7AF:
                    f.add("text:cjk")
                elif o in _RTL:
                    f.add("text:rtl")
                elif o >= 0x1F300:
                    f.add("text:emoji")
                elif unicodedata.combining(ch):
                    f.add("text:combining")
    return f


def _responses_features(body: Json) -> set[str]:
    f = _text_features(body)
    if "instructions" not in body:
        f.add("instructions:absent")
    else:
        ins = body["instructions"]
        f.add(
            "instructions:null"
            if ins is None
            else ("instructions:empty" if ins == "" else "instructions:str")
        )
    for k in ("tools", "tool_choice", "metadata", "store"):
        if k in body:
            f.add(k)
    if "temperature" in body:
        f.add(f"temperature:{type(body['temperature']).__name__}")
    for t in body.get("tools", []):
        f.add(f"tool:{t['type']}")
    if "tool_choice" in body:
        tc = body["tool_choice"]
        f.add(f"tool_choice:{tc if isinstance(tc, str) else tc['type']}")
    items = body["input"]
    if isinstance(items, str):
        f.add("input:string")
        return f
    f.add("input:list")
    seen_non_system = False
    prev = None
    for it in items:
        t = it.get("type")
        role = it.get("role")
        if role is not None:
            if "id" in it:
                f.add("msg:assistant_output")
                f.add("phase:" + ("absent" if "phase" not in it else str(it["phase"])))
                for p in it["content"]:
                    f.add(f"part:{p['type']}")
                    if p.get("annotations"):
                        f.add("annotation:url_citation")
                    if "logprobs" in p:
                        f.add("part:logprobs")
            elif role == "assistant":
                f.add("msg:assistant_easy")
                f.add("phase:" + ("absent" if "phase" not in it else str(it["phase"])))
            else:
                f.add(
                    f"msg:{role}:"
                    + ("no_type" if t is None else "typed")
                    + (":status" if "status" in it else "")
                )
                if role in ("system", "developer") and seen_non_system:
                    f.add(f"msg:{role}:mid")
                c = it["content"]
                f.add(f"content:{'str' if isinstance(c, str) else 'list'}")
                if isinstance(c, list):
                    for p in c:
                        f.add(f"part:{p['type']}")
                        if p["type"] == "input_image":
                            src = p.get("image_url") or ""
                            f.add(
                                "image:"
                                + (
                                    "file_id"
                                    if "file_id" in p
                                    else "data_url"
                                    if src.startswith("data:")
                                    else "url"
                                )
                            )
            if role not in ("system", "developer"):
                seen_non_system = True
            prev = t or "message"
            continue
        seen_non_system = True
        if t is None or t == "item_reference":
            f.add("item_reference:" + ("untyped" if "type" not in it else "typed" if t else "null_type"))
            continue
        f.add(f"item:{t}")
        if t == "reasoning":
            f.add("reasoning:summary_empty" if not it["summary"] else "reasoning:summary")
            f.add(
                "reasoning:enc_"
                + (
                    "absent"
                    if "encrypted_content" not in it
                    else "null"
                    if it["encrypted_content"] is None
                    else "str"
                )
            )
            if "content" in it:
                f.add("reasoning:content")
            if "status" in it:
                f.add("reasoning:status")
        elif t == "function_call":
            f.add("fc:id" if "id" in it else "fc:no_id")
            if "id" in it:
                assert it["id"].startswith("fc_") and it["call_id"].startswith("call_")
            if "status" in it:
                f.add("fc:status")
            if "namespace" in it:
                f.add("fc:namespace")
            args = it["arguments"]
            if args != json.dumps(json.loads(args), separators=(",", ":"), ensure_ascii=False):
                f.add("fc:args_non_compact")
            if _IRREGULAR.search(args) or (": " in args and _TIGHT_KV.search(args)):
                f.add("fc:args_irregular_spacing")
            if prev == "function_call":
                f.add("fc:parallel")
        elif t == "function_call_output":
            f.add("fco:output_" + ("str" if isinstance(it["output"], str) else "list"))
            if "status" in it and it["status"] is None:
                f.add("fco:status_null")
            if "id" in it and it["id"] is None:
                f.add("fco:id_null")
        elif t == "compaction":
            f.add("compaction:id_" + ("absent" if "id" not in it else "null" if it["id"] is None else "set"))
        prev = t
    calls = [it["call_id"] for it in items if it.get("type") == "function_call"]
    outs = [it["call_id"] for it in items if it.get("type") == "function_call_output"]
    if calls != outs:
        f.add("fc:outputs_reordered")
    return f


def _chat_features(body: Json) -> set[str]:
    f = _text_features(body)
    for k in ("tools", "tool_choice", "temperature", "n", "response_format"):
        if k in body:
            f.add(k)
    for t in body.get("tools", []):
        f.add(f"tool:{t['type']}")
    for i, m in enumerate(body["messages"]):
        role = m["role"]
        if "name" in m:
            f.add("name")
        if role in ("system", "developer"):
            f.add(f"msg:{role}:" + ("first" if i == 0 else "mid"))
        elif role == "user":
            c = m["content"]
            f.add("user:" + ("str" if isinstance(c, str) else "parts"))
            if isinstance(c, list) and any(p["type"] == "image_url" for p in c):
                f.add("user:image_url")
        elif role == "assistant":
            c = m.get("content", "ABSENT")
            kind = (
                "absent"
                if c == "ABSENT"
                else "null"
                if c is None
                else "empty"
                if c == ""
                else "str"
                if isinstance(c, str)
                else "parts"
            )
            f.add(f"assistant:content_{kind}")
            if "refusal" in m:
                f.add("assistant:refusal_" + ("null" if m["refusal"] is None else "str"))
            tcs = m.get("tool_calls", [])
            for tc in tcs:
                f.add(f"tool_call:{tc['type']}")
            if len(tcs) > 1:
                f.add("tool_call:parallel")
        elif role == "tool":
            f.add("tool_msg:" + ("str" if isinstance(m["content"], str) else "parts"))
    return f


def _anthropic_features(body: Json) -> set[str]:
    f = _text_features(body)
    for k in ("tools", "tool_choice", "metadata"):
        if k in body:
            f.add(k)
    if "thinking" in body:
        f.add(f"thinking_cfg:{body['thinking']['type']}")
    s = body.get("system")
    f.add("system:" + ("absent" if s is None else "str" if isinstance(s, str) else "blocks"))
    if isinstance(s, list) and any("cache_control" in b for b in s):
        f.add("system:cache_control")
    for t in body.get("tools", []):
        f.add("tool:" + t.get("type", "custom"))
    for m in body["messages"]:
        c = m["content"]
        if isinstance(c, str):
            f.add(f"{m['role']}:str")
            continue
        if sum(b["type"] == "tool_use" for b in c) > 1:
            f.add("tool_use:parallel")
        for b in c:
            f.add(f"block:{b['type']}")
            if "cache_control" in b:
                f.add("block:cache_control")
            if b["type"] == "text" and "citations" in b:
                f.add("text:citations_null")
            if b["type"] == "image":
                f.add(f"image:{b['source']['type']}")
            if b["type"] == "tool_result":
                rc = b.get("content")
                f.add(
                    "tool_result:" + ("absent" if rc is None else "str" if isinstance(rc, str) else "blocks")
                )
                if "is_error" in b:
                    f.add("tool_result:is_error")
            if b["type"] == "web_search_tool_result":
                f.add("web_search_tool_result:" + ("list" if isinstance(b["content"], list) else "error"))
    if body["messages"][-1]["role"] == "assistant":
        f.add("prefill")
    return f


FEATURES: dict[str, tuple[Callable[[Json], set[str]], list[str]]] = {
    "responses": (
        _responses_features,
        [
            "input:string",
            "instructions:absent",
            "instructions:null",
            "instructions:empty",
            "instructions:str",
            "tools",
            "tool:function",
            "tool:namespace",
            "tool:custom",
            "tool:web_search",
            "tool:local_shell",
            "tool_choice:auto",
            "tool_choice:required",
            "tool_choice:none",
            "tool_choice:function",
            "tool_choice:custom",
            "tool_choice:allowed_tools",
            "temperature:float",
            "temperature:int",
            "metadata",
            "store",
            "msg:user:no_type",
            "msg:user:typed",
            "msg:user:typed:status",
            "msg:developer:mid",
            "msg:system:mid",
            "content:str",
            "content:list",
            "part:input_text",
            "part:input_image",
            "image:url",
            "image:data_url",
            "image:file_id",
            "msg:assistant_output",
            "msg:assistant_easy",
            "part:output_text",
            "part:refusal",
            "part:logprobs",
            "annotation:url_citation",
            "phase:absent",
            "phase:None",
            "phase:commentary",
            "phase:final_answer",
            "item:reasoning",
            "reasoning:summary",
            "reasoning:summary_empty",
            "reasoning:content",
            "reasoning:status",
            "reasoning:enc_absent",
            "reasoning:enc_null",
            "reasoning:enc_str",
            "item:function_call",
            "fc:id",
            "fc:no_id",
            "fc:status",
            "fc:namespace",
            "fc:args_non_compact",
            "fc:args_irregular_spacing",
            "fc:parallel",
            "fc:outputs_reordered",
            "item:function_call_output",
            "fco:output_str",
            "fco:output_list",
            "fco:status_null",
            "fco:id_null",
            "item:custom_tool_call",
            "item:custom_tool_call_output",
            "item:compaction",
            "compaction:id_absent",
            "compaction:id_null",
            "compaction:id_set",
            "item_reference:typed",
            "item_reference:untyped",
            "item_reference:null_type",
            "item:web_search_call",
            "item:local_shell_call",
            "item:local_shell_call_output",
            "text:whitespace_only",
            "text:leading_ws",
            "text:trailing_ws",
            "text:multiline",
            "text:long",
            "text:cjk",
            "text:rtl",
            "text:emoji",
            "text:combining",
        ],
    ),
    "chat": (
        _chat_features,
        [
            "msg:system:first",
            "msg:developer:first",
            "msg:system:mid",
            "msg:developer:mid",
            "user:str",
            "user:parts",
            "user:image_url",
            "assistant:content_str",
            "assistant:content_null",
            "assistant:content_absent",
            "assistant:content_empty",
            "assistant:content_parts",
            "assistant:refusal_null",
            "assistant:refusal_str",
            "tool_call:function",
            "tool_call:custom",
            "tool_call:parallel",
            "name",
            "tool_msg:str",
            "tool_msg:parts",
            "tools",
            "tool:function",
            "tool:custom",
            "tool_choice",
            "temperature",
            "n",
            "response_format",
            "text:whitespace_only",
            "text:leading_ws",
            "text:trailing_ws",
            "text:multiline",
            "text:long",
            "text:cjk",
            "text:rtl",
            "text:emoji",
            "text:combining",
        ],
    ),
    "anthropic": (
        _anthropic_features,
        [
            "system:absent",
            "system:str",
            "system:blocks",
            "system:cache_control",
            "user:str",
            "assistant:str",
            "block:text",
            "block:cache_control",
            "text:citations_null",
            "block:image",
            "image:base64",
            "image:url",
            "block:thinking",
            "block:redacted_thinking",
            "block:tool_use",
            "tool_use:parallel",
            "block:tool_result",
            "tool_result:str",
            "tool_result:blocks",
            "tool_result:absent",
            "tool_result:is_error",
            "block:server_tool_use",
            "block:web_search_tool_result",
            "web_search_tool_result:list",
            "web_search_tool_result:error",
            "tools",
            "tool:custom",
            "tool:web_search_20250305",
            "tool_choice",
            "thinking_cfg:enabled",
            "thinking_cfg:adaptive",
            "thinking_cfg:disabled",
            "metadata",
            "prefill",
            "text:leading_ws",
            "text:trailing_ws",
            "text:multiline",
            "text:long",
            "text:cjk",
            "text:rtl",
            "text:emoji",
            "text:combining",
        ],
    ),
}


def feature_counts(fmt: str, bodies: list[Json]) -> Counter[str]:
    fn = FEATURES[fmt][0]
    c: Counter[str] = Counter()
    for b in bodies:
        c.update(fn(b))
    return c


@pytest.mark.parametrize("fmt", FORMATS)
def test_feature_coverage(records: dict[str, list[Json]], fmt: str) -> None:
    counts = feature_counts(fmt, records[fmt])
    rare = {k: counts[k] for k in FEATURES[fmt][1] if counts[k] < MIN_COUNT}
    assert not rare, f"{fmt}: features below {MIN_COUNT}/{N_COVERAGE}: {rare}"


def test_anthropic_never_has_empty_text(records: dict[str, list[Json]]) -> None:
    counts = feature_counts("anthropic", records["anthropic"])
    assert counts["text:whitespace_only"] == 0


def test_responses_conversation_size(records: dict[str, list[Json]]) -> None:
    sizes = [len(r["input"]) for r in records["responses"] if isinstance(r["input"], list)]
    assert 10 <= sum(sizes) / len(sizes) <= 15
    texts = [t for r in records["responses"] for t in _texts(r) if t.strip()]
    assert max(len(t) for t in texts) <= 610  # 600 + whitespace decoration


# ---------------------------------------------------------------------------
# Request logs (--request-log)
# ---------------------------------------------------------------------------


def test_request_log_is_deterministic_whatever_the_workers(tmp_path: Path) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    n = synth.write_request_log(a, "chat", 70, seed=3, mean_requests=5)
    assert synth.write_request_log(b, "chat", 70, seed=3, mean_requests=5, workers=2) == n
    serial = b"".join(synth.request_log("chat", 70, seed=3, mean_requests=5))
    assert a.read_bytes() == b.read_bytes() == serial
    assert n > 70


@pytest.mark.parametrize("fmt", FORMATS)
def test_request_log_threads_back_into_its_conversations(tmp_path: Path, fmt: str) -> None:
    import polars as pl

    from pipeline.formats import decode_lines
    from pipeline.transforms import apply_steps, parse_step

    path = tmp_path / "log.jsonl"
    synth.write_request_log(path, fmt, 40, seed=1, mean_requests=8)
    lines = path.read_bytes().splitlines()
    res = decode_lines(lines, fmt)
    assert res.rejected == []
    kept, rejected = apply_steps(pl.from_arrow(res.table), [parse_step("threads")])  # type: ignore[arg-type]
    assert rejected.height == 0
    # one thread per conversation, plus one per compaction the log made (linked to its conversation)
    recs = [orjson.loads(line) for line in lines]
    key = "input" if fmt == "responses" else "messages"
    # the log's compactions (the base conversations' own sit at index 0 and keep nothing)
    compactions = {
        it["encrypted_content"]
        for r in recs
        for i, it in enumerate(r[key])
        if it.get("type") == "compaction" and i
    }
    # Chat / Anthropic compactions: a continuation summary that keeps no items (a new thread, unlinked)
    firsts = {str(r[key][0].get("content")) for r in recs}
    continued = {text for text in firsts if synth._CONTINUED in text}
    roots = kept.filter(pl.col("conversation_id") == pl.col("thread_id"))
    assert roots.filter(pl.col("continues_thread").is_null()).height == 40 + len(continued)
    assert roots.filter(pl.col("continues_thread").is_not_null()).height == len(compactions)
    assert (len(compactions) > 0) == (fmt == "responses")
    assert kept.filter(pl.col("duplicate_of").is_not_null()).height > 0
