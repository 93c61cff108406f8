"""Responses / Anthropic -> Chat (``pipeline.encoders.to_chat``): what it reports."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from pipeline import codec
from pipeline.encoders import convert_table
from pipeline.encoders.encode_rows import encode_rows
from pipeline.formats import decode_records
from tests.cases import CASES
from tests.encoders.coverage import uncovered
from tests.native.encode_diff import compare_encode
from tests.sdk_validate import validate_request


def test_a_responses_function_tool_without_strict_or_parameters_reports_the_fill() -> None:
    """Chat leaves them out, and the way back to Responses sets both to null (required there):
    found by the fuzzer (tests/encoders/test_fuzz_round_trip.py) as an unreported change."""
    tool = {"type": "function", "name": "f", "description": "d"}
    record = {"input": [{"role": "user", "content": "hi"}], "tools": [tool]}
    table = decode_records([record], "responses").table
    [there] = convert_table(table, "chat")
    assert [(x.path, x.kind) for x in there.losses] == [
        ("/tools/0/parameters", "filled_default"),
        ("/tools/0/strict", "filled_default"),
    ]
    [back] = convert_table(decode_records([there.record], "chat").table, "responses")
    assert back.record["tools"] == [{**tool, "parameters": None, "strict": None}]
    assert uncovered(record, back.record, there.losses) == []
    if codec.native_encoder("chat") is not None:
        compare_encode(table)  # the compiled encoder reports the same


def test_a_call_key_on_a_responses_output_is_reported() -> None:
    """A function_call_output carrying a call's keys (arguments, input): a tool message has no slot
    (found by the fuzzer as an unreported change)."""
    call = {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"}
    out = {"type": "function_call_output", "call_id": "c", "output": "x", "arguments": "{}", "input": "i"}
    record = {"input": [call, out]}
    table = decode_records([record], "responses").table
    [there] = convert_table(table, "chat")
    # keys of another item type are kept as unknown keys (docs/decoding.md), reported as such
    assert [(x.path, x.kind) for x in there.losses] == [
        ("/input/1/arguments", "unknown_field"),
        ("/input/1/input", "unknown_field"),
    ]
    [back] = convert_table(decode_records([there.record], "chat").table, "responses")
    assert uncovered(record, back.record, there.losses) == []
    if codec.native_encoder("chat") is not None:
        compare_encode(table)


def test_an_anthropic_tool_reference_becomes_a_placeholder_naming_the_tool() -> None:
    """A tool search result's ``tool_reference`` block has no OpenAI equivalent: the tool output
    says which tool it named instead of coming back empty (Responses and Chat alike)."""
    call = {"type": "tool_use", "id": "t1", "name": "search", "input": {}}
    found = [{"type": "tool_reference", "tool_name": "get_weather"}]
    record = {
        "model": "m", "max_tokens": 100,
        "messages": [
            {"role": "user", "content": "find a weather tool"},
            {"role": "assistant", "content": [call]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": found}]},
        ],
    }  # fmt: skip
    table = decode_records([record], "anthropic").table
    placeholder = "[tool_reference: get_weather]"
    for target, part in (("chat", {"type": "text", "text": placeholder}),
                         ("responses", {"type": "input_text", "text": placeholder})):  # fmt: skip
        [out] = convert_table(table, target)
        outputs = out.record["messages" if target == "chat" else "input"][-1]
        assert outputs["content" if target == "chat" else "output"] == [part]
        assert [(x.path, x.kind, x.detail) for x in out.losses] == [
            ("/messages/2/content/0/content/0", "tool_reference", f"written as the text '{placeholder}'")
        ]


PDF = "data:application/pdf;base64,JVBERi0="
CUT = {"mode": "explicit"}  # a prompt_cache_breakpoint: Chat's input_audio part has its slot


def _chat_there_and_back(record: dict, source: str) -> tuple[dict, list]:
    """``record`` (of ``source``) to Chat: the body (checked against the SDK types and the API's
    rules), its losses, and the way back covering every difference."""
    table = decode_records([record], source).table
    [there] = convert_table(table, "chat")
    validate_request("chat", there.record)
    [back] = convert_table(decode_records([there.record], "chat").table, source)
    assert uncovered(record, back.record, there.losses) == []
    if codec.native_encoder("chat") is not None:
        compare_encode(table)  # the compiled encoder hands these rows back: the same bytes
    return there.record, [(x.path, x.kind) for x in there.losses]


def test_responses_file_and_audio_parts_become_chat_file_and_input_audio_parts() -> None:
    """Chat has ``file`` (file_data, file_id, filename) and ``input_audio`` parts: they are carried,
    and only what Chat has no slot for is reported (a file_url, a detail)."""
    parts = [
        {"type": "input_text", "text": "read these"},
        {"type": "input_file", "file_data": PDF, "filename": "a.pdf", "detail": "high"},
        {"type": "input_file", "file_id": "file-1"},
        {"type": "input_file", "file_url": "https://x/a.pdf"},  # no slot: the whole part
        {"type": "input_file", "file_data": "data:text/plain;base64,aGk=", "filename": "a.txt"},  # not PDF
        {
            "type": "input_audio",
            "input_audio": {"data": "AAA=", "format": "wav"},
            "prompt_cache_breakpoint": CUT,
        },
    ]
    record = {"model": "gpt-5", "input": [{"role": "user", "content": parts}]}
    body, losses = _chat_there_and_back(record, "responses")
    assert body["messages"][0]["content"] == [
        {"type": "text", "text": "read these"},
        {"type": "file", "file": {"file_data": PDF, "filename": "a.pdf"}},
        {"type": "file", "file": {"file_id": "file-1"}},
        {
            "type": "input_audio",
            "input_audio": {"data": "AAA=", "format": "wav"},
            "prompt_cache_breakpoint": CUT,
        },
    ]
    assert losses == [
        ("/input/0/content/1/detail", "file"),
        ("/input/0/content/3", "file"),
        ("/input/0/content/4", "file"),
        ("/input/0/content/5", "audio"),  # carried; Responses messages have no audio part to come back to
    ]


def test_an_anthropic_pdf_document_becomes_a_chat_file_part() -> None:
    """A base64 PDF ``document`` is Chat's inline file data; its title is the filename, which OpenAI
    requires with file data (filled, and reported as an addition, when there is none)."""
    pdf = {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0="}
    blocks = [
        {"type": "document", "source": pdf, "title": "report.pdf"},
        {"type": "document", "source": pdf, "context": "q3"},
        {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "hi"}},
        {"type": "text", "text": "summarise"},
    ]
    record = {"model": "m", "max_tokens": 9, "messages": [{"role": "user", "content": blocks}]}
    body, losses = _chat_there_and_back(record, "anthropic")  # (an Anthropic model name is not reported)
    assert body["messages"][0]["content"][:2] == [
        {"type": "file", "file": {"file_data": PDF, "filename": "report.pdf"}},
        {"type": "file", "file": {"file_data": PDF, "filename": "document.pdf"}},
    ]
    assert losses == [
        ("/messages/0/content/1/title", "filled_default"),
        ("/messages/0/content/1/context", "file"),
        ("/messages/0/content/2", "file"),
    ]


def test_instructions_given_as_items_become_the_first_messages() -> None:
    """The quick start's sample has such a record: its developer message comes first, in place, with
    its role (it was once refused as "not supported yet")."""
    text = [{"type": "input_text", "text": "Be terse."}]
    developer = {"type": "message", "role": "developer", "content": text}
    record = {"model": "gpt-5", "input": [{"role": "user", "content": "hi"}], "instructions": [developer]}
    body, losses = _chat_there_and_back(record, "responses")
    assert body["messages"] == [
        {"role": "developer", "content": [{"type": "text", "text": "Be terse."}]},
        {"role": "user", "content": "hi"},
    ]
    assert ("/instructions", "instruction_position") in losses


@pytest.mark.parametrize("fmt", ["responses", "chat", "anthropic"])
def test_the_sample_data_converts_whole(fmt: str) -> None:
    """Every record of the quick start's samples converts to Chat with the target's rules applied
    (what a new user's first command runs): nothing refused, so the first summary is clean."""
    lines = (Path(__file__).parents[2] / "data" / f"sample-{fmt}.jsonl").read_bytes().splitlines()
    records = [orjson.loads(line) for line in lines if line.strip()]
    if fmt == "responses":
        assert any(isinstance(r.get("instructions"), list) for r in records)
    enc = encode_rows(decode_records(records, fmt).table, "chat")
    assert enc.errors.to_pylist() == [None] * len(records)


def _case(fmt: str, name: str) -> dict:
    return dict(CASES[fmt])[name]


def _encode_both(record: dict, source: str, target: str) -> tuple[str, list[tuple[str, str]]]:
    """``record`` to ``target`` by the compiled encoder (which must take the row, when built) and the
    per-record one: the same bytes and losses; the body's JSON text and the losses ``(path, kind)``."""
    table = decode_records([record], source).table
    if codec.native_encoder(target) is not None:
        enc = compare_encode(table, target)
        assert enc.native.to_pylist() == [True]
    else:
        enc = encode_rows(table, target)
    return enc.records[0].as_py(), [(x["path"], x["kind"]) for x in enc.losses.to_pylist()]


def test_a_responses_cache_breakpoint_goes_with_its_text_and_image_parts_to_chat() -> None:
    """OpenAI's ``prompt_cache_breakpoint`` on an ``input_text`` / ``input_image`` part is the same
    value on the Chat text / image_url part (both SDKs type the slot): carried, not a loss. An
    assistant's is carried too (Chat's assistant text part has the slot) and reported
    (``cache_control``): the Responses ``output_text`` it comes back as has none."""
    record = _case("responses", "prompt_cache_breakpoint_on_parts")
    text, losses = _encode_both(record, "responses", "chat")
    body = orjson.loads(text)
    validate_request("chat", body)
    assert body["messages"][0]["content"] == [
        {"type": "text", "text": "Read this.", "prompt_cache_breakpoint": {"mode": "explicit", "ttl": "30m"}},
        {"type": "image_url", "image_url": {"url": "https://example.com/a.png", "detail": "high"},
         "prompt_cache_breakpoint": {"mode": "explicit"}},
    ]  # fmt: skip
    assert body["messages"][1]["content"] == [
        {"type": "text", "text": "Done.", "prompt_cache_breakpoint": {"mode": "explicit"}}
    ]
    assert [x for x in losses if "prompt_cache" in x[0]] == [
        ("/input/1/content/0/prompt_cache_breakpoint", "cache_control")
    ]
    [back] = convert_table(decode_records([body], "chat").table, "responses")
    assert back.record["input"][0] == record["input"][0]  # the user's parts come back whole


def test_a_chat_cache_breakpoint_round_trips_through_responses_byte_for_byte() -> None:
    """Chat -> Responses -> Chat gives the same bytes for parts with a ``prompt_cache_breakpoint``
    (system and user text, an image), through both codecs each way, with no loss reported."""
    record = {"messages": _case("chat", "prompt_cache_breakpoint_on_parts")["messages"][:2]}
    there, losses = _encode_both(record, "chat", "responses")
    validate_request("responses", {"model": "m", **orjson.loads(there)})
    assert "prompt_cache_breakpoint" in there
    assert losses == []
    back, losses_back = _encode_both(orjson.loads(there), "responses", "chat")
    assert losses_back == []
    assert back == orjson.dumps(record).decode()


@pytest.mark.parametrize("native", [True, False])
def test_an_openai_cache_breakpoint_without_a_slot_is_a_cache_control_loss(native: bool) -> None:
    """Where the target part has no ``prompt_cache_breakpoint`` (an assistant's Responses
    ``output_text``; any part to Anthropic or HF) or the value is not an object the SDK types take
    (``null``), it is reported as what it is, a cache hint (``cache_control``), by both codecs."""
    from tests.native.differential import python_codec

    chat = _case("chat", "prompt_cache_breakpoint_on_parts")
    responses = _case("responses", "prompt_cache_breakpoint_on_parts")
    every_chat_part = [(m, 0) for m in range(4)] + [(1, 1)]
    expected = {
        ("chat", "responses"): [(2, 0), (3, 0)],  # the assistant's text, the null
        ("chat", "anthropic"): every_chat_part,
        ("responses", "chat"): [(1, 0)],
        ("responses", "anthropic"): [(0, 0), (0, 1), (1, 0)],
        ("responses", "hf"): [(0, 0), (1, 0)],  # HF text has no slot (the image goes whole)
        ("chat", "hf"): [(0, 0), (1, 0), (2, 0), (3, 0)],
    }
    for (source, target), where in expected.items():
        record = chat if source == "chat" else responses
        key = "messages" if source == "chat" else "input"
        table = decode_records([record], source).table
        if native:
            enc = encode_rows(table, target)
        else:
            with python_codec():
                enc = encode_rows(table, target)
        if native and codec.native_encoder(target) is not None:
            assert enc.native.to_pylist() == [True], (source, target)
        found = sorted((x["path"], x["kind"]) for x in enc.losses.to_pylist() if "prompt_cache" in x["path"])
        want = sorted((f"/{key}/{m}/content/{k}/prompt_cache_breakpoint", "cache_control") for m, k in where)
        assert found == want, (source, target)


def test_an_anthropic_tools_strict_is_carried_to_chat() -> None:
    """An Anthropic tool's boolean ``strict`` is Chat's function ``strict`` (both codecs); its
    ``defer_loading`` has no slot in Chat and is reported."""
    tool = {"name": "f", "input_schema": {"type": "object"}, "strict": False, "defer_loading": True}
    record = {"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}], "tools": [tool]}
    text, losses = _encode_both(record, "anthropic", "chat")
    body = orjson.loads(text)
    validate_request("chat", body)
    assert body["tools"] == [
        {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}, "strict": False}}
    ]
    assert [x for x in losses if x[0].startswith("/tools")] == [("/tools/0/defer_loading", "tools")]
    [back] = convert_table(decode_records([body], "chat").table, "anthropic")
    assert back.record["tools"] == [{k: v for k, v in tool.items() if k != "defer_loading"}]


@pytest.mark.parametrize(("tier", "carried"), [("flex", True), ("ultrafast", False)])
def test_a_responses_service_tier_goes_to_chat_where_chat_takes_it(tier: str, carried: bool) -> None:
    """A Responses ``service_tier`` Chat's SDK types is carried (both codecs), one it does not
    (``ultrafast``) reported; a Chat tier goes to Responses, which takes them all."""
    record = {"model": "gpt-5", "input": "hi", "service_tier": tier}
    text, losses = _encode_both(record, "responses", "chat")
    assert orjson.loads(text).get("service_tier") == (tier if carried else None)
    assert [x for x in losses if x[0] == "/service_tier"] == (
        [] if carried else [("/service_tier", "request_field")]
    )
    if carried:
        [there] = convert_table(decode_records([orjson.loads(text)], "chat").table, "responses")
        assert there.record["service_tier"] == tier and there.losses == []


def test_responses_reasoning_effort_and_text_verbosity_go_to_chat_and_back() -> None:
    """A Responses ``reasoning.effort`` is Chat's ``reasoning_effort`` and ``text.verbosity`` its
    ``verbosity``: carried by both codecs, SDK-valid, not reported; ``reasoning.summary`` has no
    Chat slot and is reported. Chat -> Responses -> Chat gives the same bytes, nothing reported."""
    record = {
        "model": "gpt-5",
        "input": "hi",
        "reasoning": {"summary": "auto", "effort": "high"},
        "text": {"verbosity": "low"},
    }
    text, losses = _encode_both(record, "responses", "chat")
    body = orjson.loads(text)
    validate_request("chat", body)
    assert (body["reasoning_effort"], body["verbosity"]) == ("high", "low")
    assert [x for x in losses if x[0].startswith(("/reasoning", "/text"))] == [
        ("/reasoning/summary", "request_field")
    ]
    chat = {"messages": [{"role": "user", "content": "hi"}], "model": "gpt-5", "reasoning_effort": "minimal",
            "verbosity": "high", "temperature": 0.5}  # fmt: skip
    there, losses = _encode_both(chat, "chat", "responses")
    assert orjson.loads(there)["reasoning"] == {"effort": "minimal"}
    assert orjson.loads(there)["text"] == {"verbosity": "high"}
    validate_request("responses", orjson.loads(there))
    assert losses == []
    back, losses_back = _encode_both(orjson.loads(there), "responses", "chat")
    assert back == orjson.dumps(chat).decode() and losses_back == []


SCHEMA = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}
FORMATS = [
    {"type": "text"},
    {"type": "json_object"},
    {
        "type": "json_schema",
        "json_schema": {"name": "o", "description": "d", "schema": SCHEMA, "strict": True},
    },
]


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f["type"])
def test_a_chat_response_format_round_trips_through_responses_text_format_byte_for_byte(fmt: dict) -> None:
    """Chat's ``response_format`` is Responses' ``text.format`` (a json_schema one flattened beside
    its ``type``, the schema's keys in their order), with ``verbosity`` in the same ``text``
    object: both codecs, SDK-valid both ways, nothing reported, the same bytes back."""
    chat = {"messages": [{"role": "user", "content": "hi"}], "model": "gpt-5", "verbosity": "low",
            "response_format": fmt, "temperature": 0.5}  # fmt: skip
    there, losses = _encode_both(chat, "chat", "responses")
    body = orjson.loads(there)
    validate_request("responses", body)
    flat = {"type": fmt["type"], **fmt.get("json_schema", {})}
    assert body["text"] == {"verbosity": "low", "format": flat}
    assert losses == []
    back, losses_back = _encode_both(body, "responses", "chat")
    validate_request("chat", orjson.loads(back))
    assert back == orjson.dumps(chat).decode() and losses_back == []


def test_a_response_format_key_without_a_slot_is_reported_and_spread_text_keys_go_to_python() -> None:
    """A response format key neither API types is reported (each way, both codecs); a format type
    Chat does not take (Responses' grammar-less custom ones) is reported whole. Chat ``verbosity``
    and ``response_format`` apart (another key between them) make one ``text`` object where the
    first was: the compiled encoder declines the row, the per-record one writes it."""
    record = {"model": "gpt-5", "input": "hi",
              "text": {"format": {"type": "json_schema", "name": "o", "schema": SCHEMA, "x": 1}}}  # fmt: skip
    text, losses = _encode_both(record, "responses", "chat")
    nested = {"type": "json_schema", "json_schema": {"name": "o", "schema": SCHEMA}}
    assert orjson.loads(text)["response_format"] == nested
    assert [x for x in losses if x[0].startswith("/text")] == [("/text/format/x", "request_field")]
    odd = {"model": "gpt-5", "input": "hi", "text": {"format": {"type": "grammar"}}}
    text, losses = _encode_both(odd, "responses", "chat")
    assert "response_format" not in orjson.loads(text)
    assert [x for x in losses if x[0].startswith("/text")] == [("/text/format", "request_field"),
                                                              ("/text", "request_field")]  # fmt: skip
    spread = {"type": "json_schema", "json_schema": {"name": "o", "y": 2}, "z": 3}
    chat = {"messages": [{"role": "user", "content": "hi"}], "verbosity": "low", "temperature": 0.5,
            "response_format": spread}  # fmt: skip
    table = decode_records([chat], "chat").table
    if codec.native_encoder("responses") is not None:
        enc = compare_encode(table, "responses")
        assert enc.native.to_pylist() == [False]
    else:
        enc = encode_rows(table, "responses")
    body = orjson.loads(enc.records[0].as_py())
    assert list(body) == ["input", "text", "temperature"]
    assert body["text"] == {"verbosity": "low", "format": {"type": "json_schema", "name": "o"}}
    assert [(x["path"], x["kind"]) for x in enc.losses.to_pylist()] == [
        ("/response_format/z", "request_field"),
        ("/response_format/json_schema/y", "request_field"),
    ]


@pytest.mark.parametrize("n", [1, 4, 5])
def test_anthropic_stop_sequences_go_to_chat_stop_up_to_four(n: int) -> None:
    """An Anthropic ``stop_sequences`` of at most 4 strings is Chat's ``stop``, the same list (both
    codecs, SDK-valid, not reported) and comes back as it was; 5 or more, which Chat refuses, are
    reported (``request_field``) and not written."""
    stops = [f"END{i}" for i in range(n)]
    record = {"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}],
              "stop_sequences": stops}  # fmt: skip
    text, losses = _encode_both(record, "anthropic", "chat")
    body = orjson.loads(text)
    validate_request("chat", body)
    assert body.get("stop") == (stops if n <= 4 else None)
    lost = [("/stop_sequences", "request_field")]
    assert [x for x in losses if x[0] == "/stop_sequences"] == ([] if n <= 4 else lost)
    if n <= 4:
        [back] = convert_table(decode_records([body], "chat").table, "anthropic")
        assert back.record["stop_sequences"] == stops
