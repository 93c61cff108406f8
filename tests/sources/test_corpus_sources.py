"""Acceptance: every corpus file of the source kinds ingests, with counts established from the files."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from pipeline.encoders import convert_table
from pipeline.formats import encode_table
from pipeline.formats.hf import REASONING_KEYS
from pipeline.sources import detect_source, read_source
from tests.corpus import CORPUS_DIR, corpus_available
from tests.helpers import json_diff
from tests.sdk_validate import validate_request

pytestmark = [
    pytest.mark.corpus,
    pytest.mark.skipif(not corpus_available(), reason=f"conversation corpus not found at {CORPUS_DIR}"),
]

CODEX_AGENTCMD = (
    "codex-rollouts-agentcmd/rollout-2025-09-24T20-12-23-01997ea4-a70d-7da3-8c20-c736db82a7c5.jsonl"
)
CODEX_LOCALPUSH = (
    "codex-rollouts-localpush-sanitized/"
    "rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl"
)
CODEX_SCHEMA = "agent-sessions-schema-fixtures/codex-rollout-schema-small.jsonl"
CLAUDE_AGENTCMD = "claude-code-agentcmd/full-session-four.jsonl"
CLAUDE_SCHEMA = "agent-sessions-schema-fixtures/claude-code-schema-small.jsonl"

# file -> (source, conversations, canonical items, tool calls). Established with jq in the corpus dir,
# not with chatlake (C = the file):
#   codex: items = response_item lines + compacted replacement_history entries; windows = 1 + compacted
#     jq -s '[.[]|select(.type=="response_item")]|length' C                  -> 54 / 29 / 22
#     jq -s '[.[]|select(.type=="compacted")|.payload.replacement_history|length]|add'  -> schema 159
#     calls: payload.type function_call|custom_tool_call                     -> 16 / 5 / 4 (+0 replaced)
#   claude code: items = one per tool_use/tool_result/thinking block + one per run of other blocks + one
#     per string content, after merging consecutive lines of one message.id (listed with
#     jq -c 'select(.type=="user" or .type=="assistant")|[.sessionId,.isSidechain,.message.id,
#     [.message.content[]?.type]]'): agentcmd 49 assistant blocks + 27 tool_result + 6 strings = 82,
#     27 tool_use; schema 9 (sidechain) + 4 (ses_stage0_small) + 13 ([trimmed] session) = 26, 3 tool_use
#   inspect: messages + tool_calls: jq '[.samples[].messages[]]|length' -> 10 (+4 calls), 9
#   glaive: jq '[.[].conversations|length]|add' -> 1914 turns; function_call turns -> 211 (no lists)
#   mllm: jq '[.[].messages|length]|add' -> 24
#   reason_tool_use: 274 messages + 68 tool_call parts + (33 - 28) extra tool messages from the 28
#     tool values that list 33 {tool_call_id,name,content} results -> 347; 68 calls
#   swe-agent: history 28 messages + 13 tool_calls -> 41 / 13; pydicom 26 / 0
#   tau-bench: jq '[.[].traj|length]|add' -> 3984 messages + 898 tool_calls -> 4882 / 898
EXPECTED = {
    CODEX_AGENTCMD: ("codex-rollout", 1, 54, 16),
    CODEX_LOCALPUSH: ("codex-rollout", 1, 29, 5),
    CODEX_SCHEMA: ("codex-rollout", 7, 22 + 159, 4),
    CLAUDE_AGENTCMD: ("claude-code", 1, 82, 27),
    # 4 conversations since rewinds are resolved (was 3 in file order): in the ses_stage0_small
    # sidechain, a2 (line 18) and a3 (line 19) both have parentUuid u2, so a2 is an abandoned branch
    # of its own; u3 (line 22, parent a3) is the most recent leaf, the active chain is lines
    # 7 8 9 10 19 22 (u2 and u2b are the tool results of a1 and stay in its node). Items stay 26:
    # every message line is in exactly one conversation (8 + 1 in the sidechain). Counted with
    # jq -c 'select(.isSidechain==true and .message)|[.uuid,.parentUuid]' C
    CLAUDE_SCHEMA: ("claude-code", 4, 26, 3),
    "inspect-ai-logs/2025-05-12T20-27-36-04-00_browser.json": ("inspect-log", 1, 14, 4),
    "inspect-ai-logs/2025-05-12T20-28-26-04-00_security-guide.json": ("inspect-log", 3, 9, 0),
    "llama-factory/glaive_toolcall_en_demo.json": ("sharegpt", 300, 1914, 211),
    "llama-factory/mllm_demo.json": ("llamafactory", 6, 24, 0),
    "llama-factory/reason_tool_use_demo_50.jsonl": ("llamafactory", 50, 347, 68),
    "swe-agent-traj/marshmallow-1867.function_calling_replace_from_source.traj.json": (
        "swe-agent",
        1,
        41,
        13,
    ),
    "swe-agent-traj/pydicom-1458.gpt4.traj.json": ("swe-agent", 1, 26, 0),
    "tau-bench/gpt-4o-airline.visible-150.json": ("tau-bench", 150, 4882, 898),
}

# Line types per file: jq -r '.type' C | sort | uniq -c
LINE_TYPES = {
    CODEX_AGENTCMD: {"event_msg": 39, "response_item": 54, "session_meta": 1, "turn_context": 18},
    CLAUDE_AGENTCMD: {"assistant": 49, "user": 33, "file-history-snapshot": 7},
}


def _read(rel: str, source: str | None = None, **options: object) -> tuple[pa.Table, list, dict]:
    path = CORPUS_DIR / rel
    results = list(read_source(path, source or EXPECTED[rel][0], **options))
    table = pa.concat_tables([r.table for r in results])
    return table, [x for r in results for x in r.rejected], results[-1].counts


def _calls(table: pa.Table) -> int:
    items = table.column("items").combine_chunks().flatten()
    return pc.sum(pc.is_in(items.field("type"), pa.array(["function_call", "custom_tool_call"]))).as_py() or 0


@pytest.mark.parametrize("rel", sorted(EXPECTED))
def test_file_ingests_with_expected_counts(rel: str) -> None:
    source, conversations, items, calls = EXPECTED[rel]
    assert detect_source(CORPUS_DIR / rel) == source
    table, rejected, counts = _read(rel)
    assert [r.error for r in rejected] == []
    assert (table.num_rows, pc.sum(table.column("n_items")).as_py(), _calls(table)) == (
        conversations,
        items,
        calls,
    )
    assert counts["conversations"] == conversations
    prov = table.column("provenance").combine_chunks()
    assert prov.field("source").to_pylist() == [source] * conversations
    assert set(table.column("source_file").to_pylist()) == {str(CORPUS_DIR / rel)}
    assert len(set(table.column("conversation_id").to_pylist())) == conversations


@pytest.mark.parametrize("rel", sorted(LINE_TYPES))
def test_every_line_is_accounted_for(rel: str) -> None:
    _, rejected, counts = _read(rel)
    types = {k.split(":", 1)[1]: v for k, v in counts.items() if k.startswith("line_types:")}
    assert types == LINE_TYPES[rel]
    assert sum(types.values()) + len(rejected) + counts.get("blank_lines", 0) == counts["lines_read"]


def _payloads(rel: str) -> list[list[dict]]:
    """Reference: the Responses items of each context window, read with the standard library."""
    windows: list[list[dict]] = [[]]
    with open(CORPUS_DIR / rel, encoding="utf-8") as f:
        for line in f:
            obj = orjson.loads(line)
            if obj["type"] == "response_item":
                windows[-1].append(obj["payload"])
            elif obj["type"] == "compacted":
                windows.append(list(obj["payload"].get("replacement_history") or []))
    return windows


@pytest.mark.parametrize("rel", [CODEX_AGENTCMD, CODEX_LOCALPUSH, CODEX_SCHEMA])
def test_codex_round_trips_exactly(rel: str, tmp_path: Path) -> None:
    """Responses-native: encoding the canonical rows gives back the response_item payloads."""
    table, _, _ = _read(rel)
    import pyarrow.parquet as pq

    pq.write_table(table, tmp_path / "c.parquet")
    back = encode_table(pq.read_table(tmp_path / "c.parquet"), "responses")
    expected = _payloads(rel)
    assert len(back) == len(expected)
    for k, (rec, items) in enumerate(zip(back, expected, strict=True)):
        assert json_diff(rec["input"], items) is None, (k, json_diff(rec["input"], items))
    first = orjson.loads((CORPUS_DIR / rel).read_bytes().split(b"\n", 1)[0])["payload"]
    sid = table.column("provenance").combine_chunks().field("session_id").to_pylist()
    assert sid == [first["id"]] * len(expected)


def test_codex_compaction_windows() -> None:
    table, _, _ = _read(CODEX_SCHEMA)
    meta = [
        orjson.loads(m) for m in table.column("provenance").combine_chunks().field("meta_json").to_pylist()
    ]
    # jq -s '[.[]|select(.type=="compacted")|.payload.replacement_history|length]' -> replacement sizes
    assert [m["replacement_items"] for m in meta] == [0, 1, 8, 21, 51, 65, 13]
    assert [m["window"] for m in meta] == list(range(7))
    assert all("compaction" in m for m in meta[1:]) and "compaction" not in meta[0]


def test_claude_code_merges_split_messages() -> None:
    table, _, _ = _read(CLAUDE_AGENTCMD)
    [rec] = encode_table(table, "anthropic")
    # jq -r 'select(.type=="assistant")|.message.id' C | uniq | wc -l -> 30 API messages (49 lines)
    assert sum(m["role"] == "assistant" for m in rec["messages"]) == 30
    assert len(rec["messages"]) == 30 + 33  # 33 user lines, never merged
    assert rec["model"] == "claude-sonnet-4-5-20250929"
    meta = orjson.loads(table.column("provenance").combine_chunks().field("meta_json")[0].as_py())
    assert len(meta["lines"]) == 82 and all("uuid" in e for e in meta["lines"])


def test_inspect_score_and_model_calls() -> None:
    rel = "inspect-ai-logs/2025-05-12T20-28-26-04-00_security-guide.json"
    table, rejected, counts = _read(rel, model_calls=True)
    assert rejected == []
    # 3 samples + 2 model events per sample, each with request and response
    assert table.num_rows == 3 + 3 * 2 * 2 and counts["model_calls:request"] == 6
    prov = table.column("provenance").combine_chunks()
    assert set(table.column("source_format").to_pylist()) == {"chat"}
    assert Counter(table.column("record_kind").to_pylist()) == {"request": 9, "response": 6}
    assert prov.field("sample_id").to_pylist()[:1] == ["1"]


# Cross-format conversions that are not valid SDK request bodies today, and why (pinned so that an
# encoder fix shows up here). (file, target) -> (encode errors, invalid bodies).
KNOWN_GAPS: dict[tuple[str, str], tuple[int, int]] = {}
# Chat bodies valid but for the reasoning keys HF -> Chat keeps on assistant messages (issue 18 item
# 5: DeepSeek / vLLM read reasoning_content there; OpenAI's SDK type has no such key): file -> count.
REASONING_KEYED = {"llama-factory/reason_tool_use_demo_50.jsonl": 50}


def _valid_without_reasoning(body: dict[str, Any]) -> bool:
    """Whether a Chat body passes the SDK type once its messages' reasoning keys are removed."""
    messages = [{k: v for k, v in m.items() if k not in REASONING_KEYS} for m in body["messages"]]
    try:
        validate_request("chat", {**body, "messages": messages})
    except Exception:
        return False
    return True


@pytest.mark.parametrize("rel", sorted(EXPECTED))
def test_conversions_report_losses_and_validate(rel: str) -> None:
    table, _, _ = _read(rel)
    formats = table.column("source_format").to_pylist()
    for target in ("responses", "chat", "anthropic"):
        converted = convert_table(table, target)
        errors = invalid = reasoning_keyed = 0
        for fmt, c in zip(formats, converted, strict=True):
            if fmt == target:  # same format: the exact codec, identical to what the adapter built
                assert c.error is None and c.losses == []
                continue
            if c.error is not None:
                errors += 1
                continue
            body = dict(c.record)
            body.setdefault("model", "unrecorded")  # required; several sources never record it
            try:
                validate_request(target, body)
            except Exception:
                if target == "chat" and _valid_without_reasoning(body):
                    reasoning_keyed += 1
                else:
                    invalid += 1
        assert (errors, invalid) == KNOWN_GAPS.get((rel, target), (0, 0)), target
        assert reasoning_keyed == (REASONING_KEYED.get(rel, 0) if target == "chat" else 0), target


def test_codex_to_chat_reports_what_it_drops() -> None:
    table, _, _ = _read(CODEX_AGENTCMD)
    [c] = convert_table(table, "chat")
    kinds = Counter(loss.kind for loss in c.losses)
    # jq -s '[.[]|select(.type=="response_item" and .payload.type=="reasoning")]|length' -> 17
    assert kinds["reasoning"] == 17 and kinds["encrypted_reasoning"] == 17
