"""The target rules' repairs and refusals (pipeline/encoders/repairs.py), through ``encode_rows``.

Per rule with a repair: a record whose conversion would break it, the repair's loss (kind, pointer
into the source record, detail naming the rule and what changed) and a written record that breaks
no rule (``rule_checks.violations``) and passes the SDK types. Per rule without one: the record is
refused with the rule's id as the reason. Both codecs give the same bytes, losses and refusals;
``--on-loss reject`` refuses a repaired record unless the repair's kind is allowed.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from pipeline.encoders.encode_rows import EncodedRows, encode_rows
from pipeline.encoders.repairs import new_name, repair
from pipeline.encoders.rule_checks import violations
from pipeline.encoders.rules import NAME_RE, REPAIR_KINDS, RULE
from pipeline.engine.process import _encode, _Originals
from pipeline.formats import decode_records
from pipeline.losses import LOSS_KINDS, LossPolicy
from tests.corpus import corpus_available, corpus_records
from tests.mutate import fuzz_seed
from tests.native.differential import python_codec
from tests.sdk_validate import SdkValidationError, validate_request
from tests.strategies import wire_record

APIS = ("responses", "chat", "anthropic")

U = {"role": "user", "content": "hi"}
CALL = {"type": "function_call", "call_id": "c1", "name": "shell", "arguments": "{}"}
OUT = {"type": "function_call_output", "call_id": "c1", "output": "ok"}
DEV = {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "sandbox: on"}]}


def _convert(record: dict[str, Any], source: str, target: str) -> tuple[EncodedRows, dict[str, Any] | None]:
    decoded = decode_records([record], source)
    assert not decoded.rejected
    enc = encode_rows(decoded.table, target)
    text = enc.records[0].as_py()
    return enc, orjson.loads(text) if text is not None else None


def _valid(out: dict[str, Any], target: str) -> None:
    """The written record breaks no rule of its target and passes the SDK's request types."""
    decoded = decode_records([out], target)
    assert not decoded.rejected
    assert violations(decoded.table, target).to_dicts() == []
    if target != "hf":  # the model is the user's to set (--set model=...): not what is checked here
        validate_request(target, {"model": "m", **out})


def _repairs(enc: EncodedRows) -> list[dict[str, Any]]:
    return [x for x in enc.losses.to_pylist() if x["kind"] in REPAIR_KINDS]


# ---- repairs ------------------------------------------------------------------------------------


@pytest.mark.parametrize("role", ["developer", "user", "system"])
@pytest.mark.parametrize("target", ["chat", "hf"])
def test_a_message_between_a_call_and_its_result_moves_after_the_result(role: str, target: str) -> None:
    note = {**DEV, "role": role}
    answer = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}]}
    enc, out = _convert({"input": [U, CALL, note, OUT, answer]}, "responses", target)
    assert out is not None
    roles = [m["role"] for m in out["messages"]]
    shown = "system" if target == "hf" and role == "developer" else role
    assert roles == ["user", "assistant", "tool", shown, "assistant"]
    [loss] = _repairs(enc)
    rule = f"{target}.tool_results_follow_call"
    assert loss == {
        "row": 0,
        "path": "/input/2",
        "kind": "moved_message",
        "detail": f"{rule}: a {role} message between a tool call and its result moved to after the result "
        "at /input/3",
    }
    assert RULE[rule].repair == "moved_message"
    _valid(out, target)


def test_parallel_calls_keep_their_results_together() -> None:
    c2 = {**CALL, "call_id": "c2"}
    o2 = {**OUT, "call_id": "c2"}
    enc, out = _convert({"input": [U, CALL, c2, OUT, DEV, o2]}, "responses", "chat")
    assert out is not None
    assert [m["role"] for m in out["messages"]] == ["user", "assistant", "tool", "tool", "developer"]
    assert [x["path"] for x in _repairs(enc)] == ["/input/4"]
    assert _repairs(enc)[0]["detail"].endswith("after the result at /input/5")
    _valid(out, "chat")


def test_anthropic_text_before_its_tool_results_moves_after_them() -> None:
    record = {
        "max_tokens": 8,
        "messages": [
            U,
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}]},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "here:"},
                    {"type": "tool_result", "tool_use_id": "t1", "content": "ok"},
                ],
            },
        ],
    }
    enc, out = _convert(record, "anthropic", "chat")
    assert out is not None
    assert [m["role"] for m in out["messages"]] == ["user", "assistant", "tool", "user"]
    assert [(x["path"], x["kind"]) for x in _repairs(enc)] == [("/messages/2/content/0", "moved_message")]
    _valid(out, "chat")


@pytest.mark.parametrize("target", ["chat", "anthropic", "hf"])
def test_a_name_the_pattern_refuses_gets_one_new_name_everywhere(target: str) -> None:
    bad = "mcp.files.read"
    record = {
        "input": [
            U,
            {**CALL, "name": bad},
            OUT,
            {**CALL, "call_id": "c2", "name": bad},
            {**OUT, "call_id": "c2"},
        ],
        "tools": [{"type": "function", "name": bad, "parameters": {"type": "object"}}],
        "tool_choice": {"type": "function", "name": bad},
    }
    enc, out = _convert(record, "responses", target)
    assert out is not None
    new = new_name(bad)
    assert NAME_RE.match(new) and new.startswith("mcp_files_read_")
    text = orjson.dumps(out).decode()
    # the tool, the choice, both calls (HF: no choice; each tool message names its call)
    assert bad not in text and text.count(new) == (5 if target == "hf" else 4)
    rule = f"{target}.tool_name"
    assert [(x["path"], x["kind"], x["detail"]) for x in _repairs(enc)] == [
        ("/tools/0/name", "tool_name", f"{rule}: '{bad}' -> '{new}'"),
        ("/input/1", "tool_name", f"{rule}: '{bad}' -> '{new}'"),
        ("/input/3", "tool_name", f"{rule}: '{bad}' -> '{new}'"),
    ]
    _valid(out, target)


@pytest.mark.parametrize(
    ("name", "source"), [("x" * 70, "anthropic"), ("   ", "chat"), ("ask user?", "chat")]
)
def test_too_long_blank_and_odd_names(name: str, source: str) -> None:
    if source == "anthropic":
        record: dict[str, Any] = {
            "max_tokens": 8,
            "messages": [
                U,
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "t1", "name": name, "input": {}}],
                },
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]},
            ],
            "tools": [{"name": name, "input_schema": {"type": "object"}}],
        }
        target, paths = "chat", ["/tools/0/name", "/messages/1/content/0"]
    else:
        record = {
            "messages": [
                U,
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {"id": "c1", "type": "function", "function": {"name": name, "arguments": "{}"}}
                    ],
                },
                {"role": "tool", "tool_call_id": "c1", "content": "ok"},
            ],
            "tools": [{"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}],
        }
        target, paths = "responses", ["/tools/0/function/name", "/messages/1/tool_calls/0"]
    enc, out = _convert(record, source, target)
    assert out is not None
    assert [x["path"] for x in _repairs(enc)] == paths
    assert {x["detail"] for x in _repairs(enc)} == {f"{target}.tool_name: '{name}' -> '{new_name(name)}'"}
    assert len(new_name(name)) <= 64
    _valid(out, target)


def test_an_empty_message_is_dropped_and_an_empty_tool_result_becomes_empty_text() -> None:
    enc, out = _convert(
        {"input": [U, {"type": "message", "role": "user", "content": []}]}, "responses", "chat"
    )
    assert out == {"messages": [U]}
    assert [(x["path"], x["kind"], x["detail"]) for x in _repairs(enc)] == [
        ("/input/1", "empty_content", "chat.content_nonempty: a message with an empty content list dropped")
    ]
    record = {
        "max_tokens": 8,
        "messages": [
            U,
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": []}]},
        ],
    }
    enc, out = _convert(record, "anthropic", "chat")
    assert out is not None and out["messages"][2] == {"role": "tool", "tool_call_id": "t1", "content": ""}
    assert [(x["path"], x["kind"]) for x in _repairs(enc)] == [
        ("/messages/2/content/0/content", "empty_content")
    ]
    _valid(out, "chat")


def test_a_message_of_parts_chat_cannot_hold_is_dropped_like_an_empty_one() -> None:
    """Every part of the message is one the Chat encoder drops where it goes (an unknown part type;
    an image in an assistant message): the encoder would leave ``content: []``, so the message is
    dropped ahead of it as an ``empty_content`` repair (the message's loss stands for its parts)."""
    unknown = {"type": "message", "role": "user", "content": [{"type": "brand_new_part", "x": 1}]}
    image = {"type": "input_image", "image_url": "https://i/x.png", "detail": "auto"}
    pictured = {"type": "message", "role": "assistant", "content": [image]}
    enc, out = _convert({"input": [U, unknown, pictured]}, "responses", "chat")
    assert out == {"messages": [U]}
    said = "chat.content_nonempty: a message of parts Chat cannot hold there dropped"
    assert [(x["path"], x["kind"], x["detail"]) for x in _repairs(enc)] == [
        ("/input/1", "empty_content", said),
        ("/input/2", "empty_content", said),
    ]
    _valid(out, "chat")
    # the same image in a user message is held: nothing dropped
    enc, out = _convert({"input": [{**pictured, "role": "user"}]}, "responses", "chat")
    assert out == {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {
        "url": "https://i/x.png", "detail": "auto"}}]}]}  # fmt: skip
    assert _repairs(enc) == []


def test_an_image_only_tool_result_becomes_empty_text() -> None:
    """A Chat tool message holds text only: an Anthropic tool_result of just an image is written
    with ``""`` (an ``empty_content`` repair), not refused."""
    block = {"type": "image", "source": {"type": "url", "url": "https://i/x.png"}}
    record = {
        "max_tokens": 8,
        "messages": [
            U,
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": [block]}]},
        ],
    }
    enc, out = _convert(record, "anthropic", "chat")
    assert out is not None and out["messages"][2] == {"role": "tool", "tool_call_id": "t1", "content": ""}
    assert [(x["path"], x["kind"], x["detail"]) for x in _repairs(enc)] == [
        (
            "/messages/2/content/0/content",
            "empty_content",
            "chat.content_nonempty: a tool result of parts Chat cannot hold written as ''",
        )
    ]
    _valid(out, "chat")


@pytest.mark.parametrize(
    ("source", "record", "target", "rule"),
    [
        (
            "responses",
            {"input": [U], "tools": [], "tool_choice": "required"},
            "chat",
            "chat.tool_choice_needs_tools",
        ),
        ("responses", {"input": [U], "tool_choice": "auto"}, "chat", "chat.tool_choice_needs_tools"),
        (
            "chat",
            {
                "messages": [U],
                "tools": [{"type": "function", "function": {"name": "a", "parameters": {}}}],
                "tool_choice": {"type": "function", "function": {"name": "b"}},
            },
            "anthropic",
            "anthropic.tool_choice_declared",
        ),
        (
            "anthropic",
            {"max_tokens": 8, "messages": [U], "tool_choice": {"type": "any"}},
            "responses",
            "responses.tool_choice_declared",
        ),
    ],
)
def test_a_tool_choice_without_its_tools_is_dropped(
    source: str, record: dict, target: str, rule: str
) -> None:
    enc, out = _convert(record, source, target)
    assert out is not None and "tool_choice" not in out
    [loss] = _repairs(enc)
    assert (loss["path"], loss["kind"]) == ("/tool_choice", "tool_choice")
    assert loss["detail"].startswith(f"{rule}: ")
    _valid(out, target)


# ---- refusals -----------------------------------------------------------------------------------

TOOL_USE = {
    "role": "assistant",
    "content": [{"type": "tool_use", "id": "t1", "name": "search_tools", "input": {}}],
}
REFUSED = [
    (
        "chat.tool_calls_answered",
        "responses",
        {"input": [U, CALL, {"role": "user", "content": "go on"}]},
        "chat",
    ),
    ("chat.tool_result_has_call", "responses", {"input": [U, OUT]}, "chat"),
    ("chat.messages_nonempty", "responses", {"input": [], "instructions": None}, "chat"),
    (  # a tool_result beside the answered ones, for a tool_use nobody made
        "chat.tool_result_has_call",
        "anthropic",
        {
            "max_tokens": 8,
            "messages": [
                U,
                TOOL_USE,
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": "t1", "content": "ok"},
                        {"type": "tool_result", "tool_use_id": "t3", "content": "r", "is_error": True},
                    ],
                },
            ],
        },
        "chat",
    ),
    ("chat.tool_calls_answered", "anthropic", {"messages": [TOOL_USE]}, "chat"),  # a response's message
    (
        "responses.calls_declared",
        "anthropic",
        {
            "max_tokens": 8,
            "messages": [
                U,
                TOOL_USE,
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]},
            ],
            "tools": [{"name": "get_weather", "input_schema": {"type": "object"}}],
        },
        "responses",
    ),
    (
        "anthropic.messages_nonempty",
        "chat",
        {"messages": [{"role": "system", "content": "be brief"}]},
        "anthropic",
    ),
    ("hf.messages_nonempty", "responses", {"input": [{"type": "reasoning", "summary": []}]}, "hf"),
]


@pytest.mark.parametrize(("rule", "source", "record", "target"), REFUSED, ids=[r[0] for r in REFUSED])
def test_a_record_that_breaks_a_rule_without_a_repair_is_refused(
    rule: str, source: str, record: dict, target: str
) -> None:
    enc, out = _convert(record, source, target)
    assert out is None
    error = enc.errors[0].as_py()
    assert error.startswith(f"{rule}: ") and " at /" in error
    assert RULE[rule].repair is None
    assert enc.losses.num_rows == 0  # a refused record reports no losses


def test_the_engine_rejects_it_at_the_convert_stage() -> None:
    rule, source, record, target = REFUSED[0]
    table = decode_records([record], source).table
    _, data, _, rejected = _encode(table, target, LossPolicy(), _Originals(table, {}, None))
    assert data == b""
    [row] = rejected
    assert row["stage"] == "convert" and row["reason"].startswith(f"encode: {rule}: ")


# ---- policies, codecs, untouched rows -----------------------------------------------------------

CODEX = {"input": [U, CALL, DEV, OUT]}


def test_on_loss_reject_refuses_a_repaired_record_unless_its_kind_is_allowed() -> None:
    table = decode_records([CODEX], "responses").table
    originals = _Originals(table, {}, None)
    every_other = frozenset(LOSS_KINDS) - {"moved_message"}
    _, data, _, rejected = _encode(table, "chat", LossPolicy("reject", every_other), originals)
    assert data == b"" and [r["reason"] for r in rejected] == ["loss: moved_message (on_loss = reject)"]
    _, data, _, rejected = _encode(table, "chat", LossPolicy("reject", frozenset(LOSS_KINDS)), originals)
    assert rejected == [] and data
    _valid(orjson.loads(bytes(data)), "chat")


def test_on_loss_reject_writes_nothing_that_breaks_a_rule() -> None:
    records = [CODEX, *(r for _, s, r, _ in REFUSED if s == "responses")]
    table = decode_records(records, "responses").table
    for policy in (LossPolicy(), LossPolicy("reject"), LossPolicy("reject", frozenset(REPAIR_KINDS))):
        _, data, _, _ = _encode(table, "chat", policy, _Originals(table, {}, None))
        written = [orjson.loads(line) for line in bytes(data).splitlines()]
        if written:
            assert violations(decode_records(written, "chat").table, "chat").height == 0


def test_both_codecs_give_the_same_bytes_losses_and_refusals() -> None:
    records = [
        CODEX,
        {"input": [U, {**CALL, "name": "a.b"}, OUT], "tool_choice": "auto"},
        {"input": [U, CALL]},
        {"input": [U, {"type": "message", "role": "user", "content": []}]},
    ]
    table = decode_records(records, "responses").table
    for target in ("chat", "anthropic", "hf"):
        native = encode_rows(table, target)
        with python_codec():
            python = encode_rows(table, target)
        assert native.records.to_pylist() == python.records.to_pylist()
        assert native.errors.to_pylist() == python.errors.to_pylist()
        assert native.losses.equals(python.losses)
        assert any(x["kind"] in REPAIR_KINDS for x in native.losses.to_pylist())


def test_clean_rows_and_rows_of_the_target_format_are_not_touched() -> None:
    clean = decode_records([{"input": [U, CALL, OUT]}], "responses").table
    assert repair(clean, "chat").table is clean and not repair(clean, "chat").suspect.any()
    broken_chat = decode_records([{"messages": [U], "tools": [], "tool_choice": "auto"}], "chat").table
    fixed = repair(broken_chat, "chat")
    assert fixed.table is broken_chat and fixed.losses.num_rows == 0
    enc = encode_rows(broken_chat, "chat")  # written as it was: chatlake check lints it
    assert orjson.loads(enc.records[0].as_py())["tool_choice"] == "auto"


def test_the_suspect_rows_are_the_only_ones_checked_after_encoding() -> None:
    table = decode_records([{"input": [U, CALL, OUT]}, CODEX, {"input": [U]}], "responses").table
    fixed = repair(table, "chat")
    assert fixed.suspect.tolist() == [False, True, False]
    assert np.array_equal(fixed.losses.column("row").to_numpy(), np.array([1]))
    assert pa.table({"n": fixed.table.column("n_items")}).column("n").to_pylist() == [3, 4, 1]


# ---- every direction, random conversations ------------------------------------------------------

DIRECTIONS = [(s, t) for s in ("responses", "chat", "anthropic") for t in (*APIS, "hf") if s != t]


def written_requests_obey(
    records: list[dict[str, Any]], source: str, target: str, *, sdk: bool = True
) -> Counter[str]:
    """Convert ``records`` and check every written request against its target's rules (and, with
    ``sdk``, its SDK types); returns the repairs' loss kinds and the refusals' rule ids, counted."""
    decoded = decode_records(records, source)
    table = decoded.table
    requests = table.filter(pc.equal(table.column("record_kind"), "request"))
    enc = encode_rows(requests, target)
    lines = requests.column("source_line").to_pylist()
    pairs = [
        (records[line - 1], orjson.loads(r))
        for line, r in zip(lines, enc.records.to_pylist(), strict=True)
        if r
    ]
    written = [out for _, out in pairs]
    back = decode_records(written, target)
    assert back.rejected == [], back.rejected[0].error
    found = violations(back.table, target)
    assert found.height == 0, (found.to_dicts()[:3], written[found["row"][0]])
    for given_, out in pairs:  # the SDK types: for a source the SDK's own types take
        if sdk and target != "hf" and _sdk_valid(source, given_):
            validate_request(target, {"model": "m", **out})
    seen: Counter[str] = Counter(x for x in enc.losses.column("kind").to_pylist() if x in REPAIR_KINDS)
    seen.update(e.split(":")[0] for e in enc.errors.to_pylist() if e is not None and e.split(":")[0] in RULE)
    return seen


def _sdk_valid(fmt: str, record: dict[str, Any]) -> bool:
    """Does the SDK take ``record`` as a request of ``fmt``? A top-level explicit null is carried to
    the target as it was (an OpenAI field Responses' types allow null and Chat's do not, such as
    ``parallel_tool_calls``): such records are left to the rules alone."""
    if any(v is None for v in record.values()):
        return False
    try:
        validate_request(fmt, {"model": "m", **record})
    except (ValueError, SdkValidationError):  # pydantic's ValidationError is a ValueError
        return False
    return True


@pytest.mark.parametrize(("source", "target"), DIRECTIONS)
def test_random_conversations_convert_to_requests_that_obey_every_rule(source: str, target: str) -> None:
    @seed(fuzz_seed())
    @settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
    @given(records=st.lists(wire_record(source, "request"), min_size=1, max_size=6))
    def check(records: list[dict[str, Any]]) -> None:
        written_requests_obey(records, source, target)

    check()


@pytest.mark.skipif(not corpus_available(), reason="the shared corpus (../shared/corpus) is absent")
def test_the_corpus_converts_to_requests_that_obey_every_rule_in_every_direction() -> None:
    by_format: dict[str, list[dict[str, Any]]] = {}
    for rec in corpus_records():
        if rec.kind == "request":
            by_format.setdefault(rec.format, []).append(rec.record)
    assert set(by_format) == set(APIS)
    total: Counter[str] = Counter()
    for source, target in DIRECTIONS:
        seen = written_requests_obey(by_format[source], source, target, sdk=False)
        print(f"{source} -> {target}: {len(by_format[source])} requests; repairs and refusals: {dict(seen)}")
        total.update({f"{target}: {k}": v for k, v in seen.items()})
    print("by target and rule:", dict(sorted(total.items())))
