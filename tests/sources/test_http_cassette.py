"""The http-cassette source: recorded API exchanges, a conversation per request and response body."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from pipeline.formats import encode_table
from pipeline.sources import detect_source, read_source
from tests.cases import CASES
from tests.corpus import CORPUS_DIR, corpus_available
from tests.helpers import assert_identical

CHAT = CASES["chat"][1][1]
ANTHROPIC = CASES["anthropic"][0][1]
RESPONSES = CASES["responses"][0][1]


def _exchange(uri: str, request: dict, response: object, status: int = 200) -> dict:
    return {
        "request": {"method": "POST", "uri": uri, "headers": {"authorization": ["Bearer sk-x"]},
                    "parsed_body": request},
        "response": {"status": {"code": status, "message": "OK"}, "headers": {}, "parsed_body": response},
    }  # fmt: skip


def _read(path: Path) -> tuple[list, list, dict]:
    results = list(read_source(path, "http-cassette"))
    tables = [r.table for r in results if r.table is not None and r.table.num_rows]
    rejected = [x for r in results for x in r.rejected]
    return tables, rejected, results[-1].counts


def test_each_exchange_is_one_conversation_with_its_answer(tmp_path: Path) -> None:
    """The request's history plus the response's answer as the last assistant turn, in the API's own
    shape, so an export carries the answers; an error response leaves the request alone."""
    choice = {"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}
    completion = {"id": "c", "object": "chat.completion", "choices": [choice], "usage": {"total_tokens": 3}}
    answer = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x",
              "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn"}  # fmt: skip
    output = [{"type": "message", "id": "m1", "role": "assistant", "status": "completed",
               "content": [{"type": "output_text", "text": "4", "annotations": []}]}]  # fmt: skip
    response = {"id": "resp_1", "object": "response", "status": "completed", "output": output}
    cassette = {
        "cassette_name": "t.yaml",
        "interactions": [
            _exchange("https://api.openai.com/v1/chat/completions", CHAT, completion),
            _exchange("https://api.anthropic.com/v1/messages?beta=true", ANTHROPIC, answer),
            _exchange("https://api.openai.com/v1/responses", RESPONSES, response),
            _exchange("https://api.openai.com/v1/responses", RESPONSES, None, 500),
        ],
    }
    path = tmp_path / "c.cassettes.jsonl"
    path.write_bytes(orjson.dumps(cassette) + b"\n")
    assert detect_source(path) == "http-cassette"
    tables, rejected, counts = _read(path)
    assert rejected == []
    table = tables[0]
    assert table.column("source_format").to_pylist() == ["chat", "anthropic", "responses", "responses"]
    assert table.column("record_kind").to_pylist() == ["request"] * 4
    prov = table.column("provenance").combine_chunks()
    assert prov.field("sample_id").to_pylist() == ["0", "1", "2", "3"]
    assert counts["unanswered:error_response"] == 1 and counts["conversations"] == 4
    meta = [orjson.loads(m) for m in prov.field("meta_json").to_pylist()]
    assert meta[0]["uri"].endswith("/chat/completions") and meta[0]["cassette_name"] == "t.yaml"
    assert meta[0]["response"] == {"id": "c", "object": "chat.completion", "usage": {"total_tokens": 3},
                                   "choices": [{"index": 0, "finish_reason": "stop"}]}  # fmt: skip
    assert meta[1]["response"]["stop_reason"] == "end_turn" and "response" not in meta[3]
    assert all("headers" not in m and "sk-x" not in orjson.dumps(m).decode() for m in meta)
    formats = ["chat", "anthropic", "responses", "responses"]
    chat, anthropic, responses, alone = (encode_table(table.slice(k, 1), f)[0] for k, f in enumerate(formats))
    assert_identical(chat, {**CHAT, "messages": [*CHAT["messages"], choice["message"]]})
    said = {"role": "assistant", "content": answer["content"]}
    assert_identical(anthropic, {**ANTHROPIC, "messages": [*ANTHROPIC["messages"], said]})
    given = RESPONSES["input"]
    history = [{"role": "user", "content": given}] if isinstance(given, str) else given
    assert_identical(responses, {**RESPONSES, "input": [*history, *output]})
    assert_identical(alone, RESPONSES)


def test_a_response_without_an_answer_of_its_api_is_rejected(tmp_path: Path) -> None:
    uri = "https://api.openai.com/v1/chat/completions"
    cassette = {"interactions": [_exchange(uri, CHAT, {"choices": []})]}
    path = tmp_path / "c.cassettes.jsonl"
    path.write_bytes(orjson.dumps(cassette) + b"\n")
    tables, rejected, _ = _read(path)
    assert tables == [] and len(rejected) == 1
    assert "choices[0].message" in rejected[0].error


@pytest.mark.skipif(not corpus_available(), reason="the shared corpus (../shared/corpus) is not here")
def test_corpus_cassettes() -> None:
    for path in sorted((CORPUS_DIR / "pydantic-ai-cassettes").glob("*.jsonl")):
        assert detect_source(path) == "http-cassette"
        tables, rejected, counts = _read(path)
        assert sum(t.num_rows for t in tables) == counts["conversations"] > 0
        # only Gemini-native exchanges have no codec (tests/corpus.py skips them the same way)
        assert all("generateContent" in r.error for r in rejected), [r.error for r in rejected]
