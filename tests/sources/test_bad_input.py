"""Broken files: every bad line or sample is counted and reported with file, line and reason."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from pipeline.errors import ConfigError
from pipeline.sources import SOURCES, read_source


def _lines(path: Path, *lines: bytes) -> Path:
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def _read(path: Path, source: str):
    results = list(read_source(path, source))
    rejected = [x for r in results for x in r.rejected]
    return results, rejected, results[-1].counts


def _j(obj: object) -> bytes:
    return orjson.dumps(obj)


def test_codex_bad_lines(tmp_path: Path) -> None:
    msg = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}
    path = _lines(
        tmp_path / "rollout.jsonl",
        _j({"timestamp": "t0", "type": "session_meta", "payload": {"id": "s1", "instructions": "Be brief."}}),
        _j({"timestamp": "t1", "type": "response_item", "payload": msg}),
        b'{"timestamp": "t2", "type": "response_item", "payload": {"type": "mess',  # truncated
        _j({"timestamp": "t3", "type": "brand_new_line", "payload": {}}),  # unknown line type
        _j({"timestamp": "t4", "type": "response_item"}),  # broken envelope: no payload
        _j({"timestamp": "t5", "type": "response_item", "payload": {"content": "no type, no role"}}),
        b"",
        _j({"timestamp": "t6", "type": "event_msg", "payload": {"type": "token_count"}}),
        _j({"timestamp": "t7", "type": "response_item", "payload": msg}),
    )
    results, rejected, counts = _read(path, "codex-rollout")
    assert [(r.line, r.file) for r in rejected] == [(n, str(path)) for n in (3, 4, 5, 6)]
    assert "invalid JSON" in rejected[0].error
    assert "unknown line type 'brand_new_line'" in rejected[1].error
    assert "broken envelope" in rejected[2].error
    assert "neither 'type' nor 'role'" in rejected[3].error
    assert counts["unknown_line_types:brand_new_line"] == 1
    assert counts["lines_read"] == 9 and counts["blank_lines"] == 1
    table = results[-1].table
    assert table.num_rows == 1 and table.column("n_items").to_pylist() == [2]
    assert table.column("instructions").combine_chunks().field("form").to_pylist() == ["string"]
    prov = table.column("provenance").combine_chunks()
    assert prov.field("session_id").to_pylist() == ["s1"]
    assert (prov.field("started_at")[0].as_py(), prov.field("ended_at")[0].as_py()) == ("t0", "t7")
    accounted = sum(v for k, v in counts.items() if k.startswith("line_types:"))
    assert accounted + len(rejected) + counts["blank_lines"] == counts["lines_read"]


def test_codex_compaction_keeps_both_sides(tmp_path: Path) -> None:
    a = {"type": "message", "role": "user", "content": "first"}
    b = {"type": "message", "role": "user", "content": "after"}
    summary = {"type": "compaction", "encrypted_content": "enc"}
    path = _lines(
        tmp_path / "r.jsonl",
        _j({"timestamp": "t0", "type": "session_meta", "payload": {"id": "s"}}),
        _j({"timestamp": "t1", "type": "turn_context", "payload": {"model": "gpt-5"}}),
        _j({"timestamp": "t2", "type": "response_item", "payload": a}),
        _j(
            {
                "timestamp": "t3",
                "type": "compacted",
                "payload": {"message": "", "replacement_history": [a, summary]},
            }
        ),
        _j({"timestamp": "t4", "type": "response_item", "payload": b}),
    )
    results, rejected, _ = _read(path, "codex-rollout")
    assert rejected == []
    from pipeline.formats import encode_table

    recs = encode_table(results[-1].table, "responses")
    assert [r["input"] for r in recs] == [[a], [a, summary, b]]
    assert [r["model"] for r in recs] == ["gpt-5", "gpt-5"]
    meta = [
        orjson.loads(m)
        for m in results[-1].table.column("provenance").combine_chunks().field("meta_json").to_pylist()
    ]
    assert [m["replacement_items"] for m in meta] == [0, 2]
    assert meta[1]["compaction"]["line"] == 4 and meta[1]["item_lines"] == [None, None, 5]


def test_claude_code_bad_lines(tmp_path: Path) -> None:
    user = {"type": "user", "sessionId": "s", "uuid": "u1", "message": {"role": "user", "content": "hi"}}
    a1 = {
        "type": "assistant",
        "sessionId": "s",
        "uuid": "a1",
        "timestamp": "t1",
        "message": {
            "id": "m1",
            "role": "assistant",
            "model": "claude-x",
            "content": [{"type": "text", "text": "ok"}],
        },
    }
    a2 = {
        **a1,
        "uuid": "a2",
        "timestamp": "t2",
        "message": {**a1["message"], "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}]},
    }
    side = {**user, "isSidechain": True, "uuid": "x"}
    path = _lines(
        tmp_path / "s.jsonl",
        _j({"type": "summary", "summary": "s", "leafUuid": "l"}),
        _j(user),
        _j(a1),
        _j(a2),
        b'{"type": "user", "message": ',  # truncated
        _j({"type": "assistant", "sessionId": "s"}),  # broken envelope: no message
        _j({"type": "shiny-new-type"}),
        _j({"type": "user", "sessionId": "s", "message": {"role": "user", "content": 5}}),  # bad content
        _j(side),
    )
    results, rejected, counts = _read(path, "claude-code")
    assert [r.line for r in rejected] == [5, 6, 7, 8]
    assert "expected string or array" in rejected[3].error
    assert counts["line_types:summary"] == 1 and counts["unknown_line_types:shiny-new-type"] == 1
    from pipeline.formats import encode_table

    main, sidechain = encode_table(results[-1].table, "anthropic")
    assert main["messages"] == [
        user["message"] | {},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "ok"},
                {"type": "tool_use", "id": "t", "name": "f", "input": {}},
            ],
        },
    ]
    assert main["model"] == "claude-x" and sidechain["messages"] == [side["message"]]
    prov = results[-1].table.column("provenance").combine_chunks()
    assert prov.field("sample_id").to_pylist() == [None, "sidechain"]


@pytest.mark.parametrize(
    ("source", "body", "reason"),
    [
        (
            "tau-bench",
            b'[{"task_id": 1, "traj": [{"role": "user", "content": "x"}]}, {"task_id": 2}, 7]',
            ["record 2 has no 'traj'", "record 3 has no 'traj'"],
        ),
        ("swe-agent", b'{"trajectory": [], "history": "nope"}', ["'history' list"]),
        (
            "inspect-log",
            b'{"version": 2, "eval": {}, "samples": [{"id": 1}, {"id": 2, "messages": []}]}',
            ["samples[0] has no 'messages'"],
        ),
        (
            "sharegpt",
            b'[{"conversations": [{"from": "human", "value": "x"}]}, {"conversations": [{"value": 1}]}]',
            ["turn without a string 'from'"],
        ),
        (
            "llamafactory",
            b'{"messages": [{"role": "user", "content": "x"}]}\n{"nothing": 1}\n{"messages": [',
            ["'conversations' or a 'messages' list", "invalid JSON"],
        ),
        (
            "kiln",
            b'{"id": "r", "input": "x", "output": {"output": "y"}, "trace": "[{not json"}',
            ["legacy string trace is not JSON"],
        ),
        ("tau-bench", b'[{"task_id": 1, "traj": [', ["invalid JSON"]),
        (
            "http-cassette",
            b'{"interactions": [{"request": {"uri": "https://x.test/v1/chat/completions", "parsed_body": '
            b'{"messages": [{"role": "user", "content": "x"}]}}, "response": {"status": {"code": 200}, '
            b'"parsed_body": "not an object"}}, {"request": {"uri": "https://x.test/v1/embeddings"}}]}\n'
            b'{"interactions": 3}',
            ["interactions[0].response.parsed_body: expected a JSON object", "no codec reads this API",
             "an 'interactions' list"],
        ),
    ],
)
def test_broken_records_are_rejected_with_reason(
    tmp_path: Path, source: str, body: bytes, reason: list[str]
) -> None:
    path = tmp_path / "f.json"
    path.write_bytes(body)
    _, rejected, _ = _read(path, source)
    assert len(rejected) == len(reason)
    for r, why in zip(rejected, reason, strict=True):
        assert why in r.error and r.file == str(path) and r.line >= 1


def test_unknown_options_and_sources_fail_before_work(tmp_path: Path) -> None:
    missing = tmp_path / "does-not-exist.jsonl"
    for name in SOURCES:
        with pytest.raises(ConfigError, match="has no option 'bogus'"):
            read_source(missing, name, bogus=1)
    with pytest.raises(ConfigError, match="unknown source"):
        read_source(missing, "nope")
    with pytest.raises(ConfigError, match="must be bool"):
        read_source(missing, "inspect-log", model_calls="yes")
