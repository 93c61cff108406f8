"""Chat / Anthropic -> Responses (``pipeline.encoders.to_responses``): file parts, cache hints."""

from __future__ import annotations

from typing import Any

from pipeline import codec
from pipeline.encoders import convert_table
from pipeline.formats import decode_records
from pipeline.losses import Loss
from tests.cases import CASES
from tests.encoders.coverage import uncovered
from tests.helpers import json_diff
from tests.native.encode_diff import compare_encode
from tests.sdk_validate import validate_request

PDF = "data:application/pdf;base64,JVBERi0="
PDF_SOURCE = {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0="}


def _responses_there_and_back(record: dict[str, Any], source: str) -> tuple[dict[str, Any], list[Loss]]:
    """``record`` (of ``source``) to Responses, checked against the SDK types, the way back covering
    every difference, the compiled encoder giving the same bytes."""
    table = decode_records([record], source).table
    [there] = convert_table(table, "responses")
    validate_request("responses", there.record)
    [back] = convert_table(decode_records([there.record], "responses").table, source)
    assert uncovered(record, back.record, there.losses) == []
    if codec.native_encoder("responses") is not None:
        compare_encode(table, "responses")
    return there.record, there.losses


def test_chat_file_parts_become_input_file_parts_exactly() -> None:
    parts = [
        {"type": "text", "text": "read"},
        {"type": "file", "file": {"file_data": PDF, "filename": "a.pdf"}},
        {"type": "file", "file": {"file_id": "file-1"}, "prompt_cache_breakpoint": {"mode": "explicit"}},
    ]
    record = {"model": "gpt-5", "messages": [{"role": "user", "content": parts}]}
    body, losses = _responses_there_and_back(record, "chat")
    assert body["input"][0]["content"][1:] == [
        {"type": "input_file", "file_data": PDF, "filename": "a.pdf"},
        {"type": "input_file", "file_id": "file-1", "prompt_cache_breakpoint": {"mode": "explicit"}},
    ]
    assert losses == []


def test_chat_audio_has_no_slot_in_a_responses_message() -> None:
    """The Responses message content union has no audio part (the SDK's ResponseInputAudioParam is
    not in it): a true loss."""
    audio = {"type": "input_audio", "input_audio": {"data": "AAA=", "format": "wav"}}
    content = [audio, {"type": "text", "text": "transcribe"}]
    record = {"model": "gpt-5", "messages": [{"role": "user", "content": content}]}
    body, losses = _responses_there_and_back(record, "chat")
    assert body["input"][0]["content"] == [{"type": "input_text", "text": "transcribe"}]
    assert [(x.path, x.kind) for x in losses] == [("/messages/0/content/0", "audio")]


def test_anthropic_pdf_documents_become_input_file_parts() -> None:
    """A base64 PDF is inline file data (the title its filename), a URL one a file_url; in a
    tool result too (a function_call_output's output takes input_file parts)."""
    use = {"type": "tool_use", "id": "t1", "name": "fetch", "input": {}}
    result = {"type": "tool_result", "tool_use_id": "t1",
              "content": [{"type": "document", "source": PDF_SOURCE, "title": "r.pdf"}]}  # fmt: skip
    record = {
        "model": "m",
        "max_tokens": 9,
        "messages": [
            {"role": "user", "content": [
                {"type": "document", "source": PDF_SOURCE, "title": "a.pdf"},
                {"type": "document", "source": {"type": "url", "url": "https://x/b.pdf"}},
                {"type": "document", "source": {"type": "file", "file_id": "file_anthropic"}},
                {"type": "text", "text": "compare"},
            ]},
            {"role": "assistant", "content": [use]},
            {"role": "user", "content": [result]},
        ],
    }  # fmt: skip
    body, losses = _responses_there_and_back(record, "anthropic")
    assert body["input"][0]["content"][:2] == [
        {"type": "input_file", "file_data": PDF, "filename": "a.pdf"},
        {"type": "input_file", "file_url": "https://x/b.pdf"},
    ]
    assert body["input"][2]["output"] == [{"type": "input_file", "file_data": PDF, "filename": "r.pdf"}]
    # an Anthropic file id names a file OpenAI cannot read
    assert ("/messages/0/content/2", "file") in [(x.path, x.kind) for x in losses]


def test_chat_file_data_that_is_not_pdf_is_reported() -> None:
    """Responses takes any file data; the way back to Chat only base64 PDF data (found by the
    no-silent-loss property test)."""
    parts = [{"type": "file", "file": {"file_data": ""}}, {"type": "text", "text": "x"}]
    record = {"model": "gpt-5", "messages": [{"role": "user", "content": parts}]}
    table = decode_records([record], "chat").table
    [there] = convert_table(table, "responses")
    assert [(x.path, x.kind) for x in there.losses] == [("/messages/0/content/0", "file")]
    [back] = convert_table(decode_records([there.record], "responses").table, "chat")
    assert uncovered(record, back.record, there.losses) == []


def test_a_chat_cache_breakpoint_goes_with_its_text_and_image_parts_to_responses() -> None:
    """OpenAI's ``prompt_cache_breakpoint`` on a Chat text / image_url part is the same value on the
    Responses ``input_text`` / ``input_image`` part (both SDKs type the slot): carried, not a loss.
    An assistant's text becomes an ``output_text``, which has none, and a ``null`` is no value the
    SDK types take: those two are reported (``cache_control``)."""
    record = dict(CASES["chat"])["prompt_cache_breakpoint_on_parts"]
    body, losses = _responses_there_and_back(record, "chat")
    validate_request("responses", body)
    messages = record["messages"]
    assert body["input"][0]["content"] == [{**messages[0]["content"][0], "type": "input_text"}]
    assert body["input"][1]["content"] == [
        {"type": "input_text", "text": "Read this.",
         "prompt_cache_breakpoint": {"mode": "explicit", "ttl": "30m"}},
        {"type": "input_image", "detail": "low", "image_url": "https://example.com/a.png",
         "prompt_cache_breakpoint": {"mode": "explicit", "ttl": "12h"}},
    ]  # fmt: skip
    assert body["input"][2]["content"] == [{"type": "output_text", "text": "Done.", "annotations": []}]
    assert body["input"][3]["content"] == [{"type": "input_text", "text": "x"}]
    assert [(x.path, x.kind) for x in losses if "prompt_cache" in x.path] == [
        ("/messages/2/content/0/prompt_cache_breakpoint", "cache_control"),
        ("/messages/3/content/0/prompt_cache_breakpoint", "cache_control"),
    ]


def test_an_anthropic_tools_strict_and_defer_loading_are_carried() -> None:
    """An Anthropic tool's boolean ``strict`` and ``defer_loading`` are the same keys of a Responses
    function tool: carried, and back the same (both codecs); ``allowed_callers`` (another set of
    callers) is reported."""
    tool = {
        "name": "get_weather",
        "input_schema": {"type": "object"},
        "strict": True,
        "defer_loading": True,
        "allowed_callers": ["direct"],
    }
    record = {"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}],
              "tools": [tool]}  # fmt: skip
    body, losses = _responses_there_and_back(record, "anthropic")
    assert body["tools"] == [
        {"type": "function", "name": "get_weather", "parameters": {"type": "object"}, "strict": True,
         "defer_loading": True}
    ]  # fmt: skip
    assert [(x.path, x.kind) for x in losses if x.path.startswith("/tools")] == [
        ("/tools/0/allowed_callers", "tools")
    ]
    [back] = convert_table(decode_records([body], "responses").table, "anthropic")
    assert back.record["tools"] == [{k: v for k, v in tool.items() if k != "allowed_callers"}]
    assert [x.path for x in back.losses if x.path.startswith("/tools")] == []


def test_top_level_keys_both_openai_apis_type_alike_are_carried() -> None:
    """``prompt_cache_key``, ``prompt_cache_retention``, ``safety_identifier``, ``top_logprobs``
    and ``moderation`` are the same keys of a Chat and a Responses request: carried both ways as
    they are, nothing reported (both codecs)."""
    shared = {
        "prompt_cache_key": "k",
        "prompt_cache_retention": "24h",
        "safety_identifier": "u-1",
        "top_logprobs": 3,
        "moderation": {"model": "omni-moderation-latest"},
    }
    record = {"model": "gpt-5", "messages": [{"role": "user", "content": "hi"}], **shared}
    body, losses = _responses_there_and_back(record, "chat")
    assert {k: body[k] for k in shared} == shared
    assert losses == []
    table = decode_records([body], "responses").table
    [back] = convert_table(table, "chat")
    assert json_diff(back.record, record) is None and back.losses == []
    if codec.native_encoder("chat") is not None:
        compare_encode(table, "chat")


def test_chat_reasoning_effort_and_verbosity_are_nested_in_reasoning_and_text() -> None:
    """Chat's ``reasoning_effort`` is Responses' ``reasoning.effort`` and ``verbosity`` its
    ``text.verbosity`` (both codecs, SDK-valid, nothing reported), and they come back as they were.
    A Chat request's own ``reasoning`` key (no Chat SDK types it) is reported, not merged."""
    record = {"model": "gpt-5", "messages": [{"role": "user", "content": "hi"}], "reasoning_effort": "low",
              "verbosity": "medium"}  # fmt: skip
    body, losses = _responses_there_and_back(record, "chat")
    assert (body["reasoning"], body["text"]) == ({"effort": "low"}, {"verbosity": "medium"})
    assert losses == []
    table = decode_records([body], "responses").table
    [back] = convert_table(table, "chat")
    assert json_diff(back.record, record) is None and back.losses == []
    own = {**record, "reasoning": {"effort": "high"}}
    [there] = convert_table(decode_records([own], "chat").table, "responses")
    assert there.record["reasoning"] == {"effort": "low"}
    assert [(x.path, x.kind) for x in there.losses] == [("/reasoning", "request_field")]


def test_a_chat_json_schema_response_format_is_flattened_into_text_format() -> None:
    """Chat's ``response_format`` json_schema (nested in ``json_schema``) is Responses'
    ``text.format``, its keys flat beside ``type`` in their order (both codecs, SDK-valid, nothing
    reported), and comes back nested as it was."""
    schema = {"name": "o", "schema": {"type": "object"}, "strict": False, "description": "d"}
    record = {"model": "gpt-5", "messages": [{"role": "user", "content": "hi"}],
              "response_format": {"type": "json_schema", "json_schema": schema}}  # fmt: skip
    body, losses = _responses_there_and_back(record, "chat")
    assert body["text"] == {"format": {"type": "json_schema", **schema}}
    assert list(body["text"]["format"]) == ["type", "name", "schema", "strict", "description"]
    assert losses == []
    [back] = convert_table(decode_records([body], "responses").table, "chat")
    assert json_diff(back.record, record) is None and back.losses == []
    assert back.record["response_format"] == record["response_format"]
