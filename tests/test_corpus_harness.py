"""The corpus harness yields every wire-format body in ../shared/corpus, and misses nothing silently."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from tests.corpus import (
    CORPUS_DIR,
    FORMATS,
    KINDS,
    corpus_available,
    corpus_records,
    skipped_corpus_parts,
)

pytestmark = pytest.mark.corpus

if not corpus_available():
    pytest.skip(f"conversation corpus not found at {CORPUS_DIR}", allow_module_level=True)


# Counts established independently of tests/corpus.py, with jq/wc from inside the corpus dir:
#   cassettes (C=pydantic-ai-cassettes/*.jsonl), API from the URI:
#     jq -r '.interactions[].request.uri' $C | sed ... | sort | uniq -c
#       -> 19 anthropic, 17 chat, 27 responses (25 + 1 in the anthropic file + 1 in the chat file), 3 gemini
#     same with select(.response.status.code==200)
#       -> 19 anthropic, 16 chat, 26 responses (one 400 each in chat and responses)
#   vercel-ai-fixtures: ls openai-responses-*.json -> 7, anthropic-messages-*.json -> 3
#   codex: 3 rollout files + jq 'select(.type=="compacted")' -> 6 lines
#   claude code: 2 files + jq 'select(.type=="assistant" and .message.type=="message")' -> 49 + 7 = 56
#   inspect: jq '[.samples[].events[]|select(.event=="model")]|length' -> 5 + 6 (each with request+response)
#   swe-agent: 2 files; tau-bench: jq length -> 150; mllm_demo.json: jq length -> 6;
#   reason_tool_use_demo_50.jsonl: wc -l -> 50
EXPECTED_COUNTS = {
    ("responses", "request"): 27 + 3 + 6,  # cassettes + codex rollouts + compacted histories
    ("responses", "response"): 7 + 26,  # vercel + cassettes
    ("chat", "request"): 17 + 11 + 2 + 150 + 6 + 50,  # cassettes, inspect, swe, tau, mllm, reason
    ("chat", "response"): 16 + 11,  # cassettes + inspect
    ("anthropic", "request"): 19 + 2,  # cassettes + claude code transcripts
    ("anthropic", "response"): 3 + 19 + 56,  # vercel + cassettes + claude code assistant lines
}

NOT_DATA = {"README.md", "MANIFEST.jsonl"}


def test_counts_per_format_and_kind() -> None:
    counts = Counter((r.format, r.kind) for r in corpus_records())
    assert dict(counts) == EXPECTED_COUNTS


def test_records_are_well_formed_and_unique() -> None:
    records = corpus_records()
    sources = [r.source for r in records]
    assert len(set(sources)) == len(sources)
    for r in records:
        assert r.format in FORMATS and r.kind in KINDS, r.source
        assert isinstance(r.record, dict), r.source
        assert (CORPUS_DIR / r.source.split("#", 1)[0]).is_file(), r.source


def test_whole_file_bodies_are_verbatim() -> None:
    for r in corpus_records():
        if r.source.startswith("vercel-ai-fixtures/"):
            assert r.record == json.loads((CORPUS_DIR / r.source).read_text(encoding="utf-8"))


def test_skipped_parts() -> None:
    skipped = skipped_corpus_parts()
    assert all(reason for _, reason in skipped)
    reasons = " ".join(reason for _, reason in skipped)
    assert reasons.count("Gemini native") == 3
    assert reasons.count("HTTP 400") == 2
    assert sum(loc.endswith("/messages") and "inspect-ai-logs/" in loc for loc, _ in skipped) == 4


def test_every_corpus_file_is_yielded_or_skipped() -> None:
    covered = {r.source.split("#", 1)[0] for r in corpus_records()}
    covered |= {loc.split("#", 1)[0] for loc, _ in skipped_corpus_parts()}
    files = {
        p.relative_to(CORPUS_DIR).as_posix()
        for p in CORPUS_DIR.rglob("*")
        if p.is_file() and not p.relative_to(CORPUS_DIR).as_posix().startswith("LICENSES/")
    }
    assert files - NOT_DATA - covered == set()
