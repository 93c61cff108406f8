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


def test_request_and_response_bodies_by_api(tmp_path: Path) -> None:
    choice = {"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}
    completion = {"id": "c", "object": "chat.completion", "choices": [choice]}
    cassette = {
        "cassette_name": "t.yaml",
        "interactions": [
            _exchange("https://api.openai.com/v1/chat/completions", CHAT, completion),
            _exchange("https://api.anthropic.com/v1/messages?beta=true", ANTHROPIC, {"error": {}}, 400),
            _exchange("https://api.openai.com/v1/responses", RESPONSES, None, 500),
        ],
    }
    path = tmp_path / "c.cassettes.jsonl"
    path.write_bytes(orjson.dumps(cassette) + b"\n")
    assert detect_source(path) == "http-cassette"
    tables, rejected, counts = _read(path)
    assert rejected == []
    table = tables[0]
    assert table.column("source_format").to_pylist() == ["chat", "chat", "anthropic", "responses"]
    prov = table.column("provenance").combine_chunks()
    assert prov.field("sample_id").to_pylist() == ["0/request", "0/response", "1/request", "2/request"]
    assert counts["skipped:error_response"] == 2 and counts["conversations"] == 4
    meta = [orjson.loads(m) for m in prov.field("meta_json").to_pylist()]
    assert meta[0]["uri"].endswith("/chat/completions") and meta[0]["cassette_name"] == "t.yaml"
    assert all("headers" not in m and "sk-x" not in orjson.dumps(m).decode() for m in meta)
    assert_identical(encode_table(table.slice(0, 1), "chat")[0], CHAT)
    assert_identical(encode_table(table.slice(2, 1), "anthropic")[0], ANTHROPIC)


@pytest.mark.skipif(not corpus_available(), reason="the shared corpus (../shared/corpus) is not here")
def test_corpus_cassettes() -> None:
    for path in sorted((CORPUS_DIR / "pydantic-ai-cassettes").glob("*.jsonl")):
        assert detect_source(path) == "http-cassette"
        tables, rejected, counts = _read(path)
        assert sum(t.num_rows for t in tables) == counts["conversations"] > 0
        # only Gemini-native exchanges have no codec (tests/corpus.py skips them the same way)
        assert all("generateContent" in r.error for r in rejected), [r.error for r in rejected]
