"""Extract wire-format conversation bodies from the shared conformance corpus.

The corpus lives in ``../shared/corpus`` relative to the repository root (read-only, third-party
data; see its README.md for where the conversation sits in each file). This module yields every body
of the three wire formats we convert (OpenAI Responses, OpenAI Chat Completions, Anthropic Messages)
and lists every part it deliberately leaves out, so the harness test can prove nothing is missed.

Bodies are the objects produced by ``json.loads`` on the file, untouched. Where a source stores a
bare message/item list (rollouts, transcripts, trajectories), it is wrapped in a minimal request
object (``{"input": [...]}`` or ``{"messages": [...]}``) whose list elements are those same parsed
objects. Callers must not mutate the records: results are cached and shared.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

CORPUS_DIR: Path = Path(__file__).resolve().parents[2] / "shared" / "corpus"

FORMATS = ("responses", "chat", "anthropic")
KINDS = ("request", "response")


@dataclass(frozen=True)
class CorpusRecord:
    source: str  # unique locator: "<relative path>#<part>"
    format: str  # "responses" | "chat" | "anthropic"
    kind: str  # "request" | "response"
    record: dict[str, Any]  # wire body as parsed by json.loads (or a wrapper around parsed objects)


def corpus_available() -> bool:
    return CORPUS_DIR.is_dir()


def corpus_records() -> list[CorpusRecord]:
    return list(_scan()[0])


def skipped_corpus_parts() -> list[tuple[str, str]]:
    return list(_scan()[1])


# --------------------------------------------------------------------------------------------------

_Out = tuple[list[CorpusRecord], list[tuple[str, str]]]


def _load(rel: str) -> Any:
    with open(CORPUS_DIR / rel, encoding="utf-8") as f:
        return json.load(f)


def _lines(rel: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """(1-based line number, parsed object) for a JSON Lines file."""
    with open(CORPUS_DIR / rel, encoding="utf-8") as f:
        for n, line in enumerate(f, start=1):
            if line.strip():
                yield n, json.loads(line)


def _files(pattern: str) -> list[str]:
    return sorted(p.relative_to(CORPUS_DIR).as_posix() for p in CORPUS_DIR.glob(pattern))


def _cassette_api(uri: str) -> str | None:
    """Wire format from the request URI; None for Gemini-native generateContent."""
    path = uri.split("?", 1)[0]
    if path == "https://api.anthropic.com/v1/messages":
        return "anthropic"
    if path.endswith("/chat/completions"):  # openai, deepseek, openrouter, gemini /v1beta/openai
        return "chat"
    if path in ("https://api.openai.com/v1/responses", "https://api.openai.com/v1/responses/compact"):
        return "responses"
    if path.startswith("https://generativelanguage.googleapis.com/") and path.endswith(":generateContent"):
        return None
    raise ValueError(f"unknown API in cassette request uri {uri!r}")


def _vercel(out: _Out) -> None:
    recs, _ = out
    for rel in _files("vercel-ai-fixtures/openai-responses-*.json"):
        recs.append(CorpusRecord(rel, "responses", "response", _load(rel)))
    for rel in _files("vercel-ai-fixtures/anthropic-messages-*.json"):
        recs.append(CorpusRecord(rel, "anthropic", "response", _load(rel)))


def _cassettes(out: _Out) -> None:
    recs, skipped = out
    for rel in _files("pydantic-ai-cassettes/*.cassettes.jsonl"):
        for n, cassette in _lines(rel):
            for i, inter in enumerate(cassette["interactions"]):  # interaction index is 0-based
                loc = f"{rel}#L{n}/interaction{i}"
                uri = inter["request"]["uri"]
                api = _cassette_api(uri)
                if api is None:
                    skipped.append(
                        (loc, f"Gemini native generateContent exchange ({uri}), not a wire format")
                    )
                    continue
                recs.append(CorpusRecord(f"{loc}/request", api, "request", inter["request"]["parsed_body"]))
                status = inter["response"]["status"]["code"]
                if status == 200:
                    body = inter["response"]["parsed_body"]
                    recs.append(CorpusRecord(f"{loc}/response", api, "response", body))
                else:
                    skipped.append((f"{loc}/response", f"HTTP {status} error body, not a {api} response"))


def _codex(out: _Out) -> None:
    recs, _ = out
    rels = [
        *_files("codex-rollouts-agentcmd/*.jsonl"),
        *_files("codex-rollouts-localpush-sanitized/rollout-*.jsonl"),
        "agent-sessions-schema-fixtures/codex-rollout-schema-small.jsonl",
    ]
    for rel in rels:
        # The schema fixture holds 7 sessions (7 session_meta lines, incl. sub-agents); we still build
        # one request per file: it is a shape-coverage check, not a faithful conversation.
        items: list[Any] = []
        for n, line in _lines(rel):
            if line["type"] == "response_item":
                items.append(line["payload"])
            elif line["type"] == "compacted":
                hist = line["payload"]["replacement_history"]
                recs.append(CorpusRecord(f"{rel}#L{n}/compacted", "responses", "request", {"input": hist}))
        recs.append(CorpusRecord(f"{rel}#response_items", "responses", "request", {"input": items}))


def _claude_code(out: _Out) -> None:
    recs, _ = out
    rels = [
        *_files("claude-code-agentcmd/*.jsonl"),
        "agent-sessions-schema-fixtures/claude-code-schema-small.jsonl",
    ]
    for rel in rels:
        messages: list[Any] = []
        for n, line in _lines(rel):
            msg = line.get("message")
            if line.get("type") not in ("user", "assistant") or not isinstance(msg, dict):
                continue
            messages.append(msg)
            if line["type"] == "assistant" and msg.get("type") == "message":
                recs.append(CorpusRecord(f"{rel}#L{n}/message", "anthropic", "response", msg))
        recs.append(CorpusRecord(f"{rel}#messages", "anthropic", "request", {"messages": messages}))


def _inspect(out: _Out) -> None:
    recs, skipped = out
    for rel in _files("inspect-ai-logs/*.json"):
        log = _load(rel)
        for s, sample in enumerate(log["samples"]):
            skipped.append((f"{rel}#samples[{s}]/messages", "inspect_ai ChatMessage list, not a wire format"))
            for e, event in enumerate(sample["events"]):
                if event.get("event") != "model":
                    continue
                call = event.get("call") or {}
                for kind in KINDS:
                    # attachment://<hex> strings are left unresolved on purpose.
                    body = call.get(kind)
                    if isinstance(body, dict):
                        loc = f"{rel}#samples[{s}]/events[{e}]/call/{kind}"
                        recs.append(CorpusRecord(loc, "chat", kind, body))


def _swe_agent(out: _Out) -> None:
    recs, _ = out
    for rel in _files("swe-agent-traj/*.traj.json"):
        recs.append(CorpusRecord(f"{rel}#history", "chat", "request", {"messages": _load(rel)["history"]}))


def _tau_bench(out: _Out) -> None:
    recs, _ = out
    for rel in _files("tau-bench/*.json"):
        for i, rec in enumerate(_load(rel)):
            recs.append(CorpusRecord(f"{rel}#[{i}]/traj", "chat", "request", {"messages": rec["traj"]}))


def _llama_factory(out: _Out) -> None:
    recs, skipped = out
    # mllm_demo: the wrapper keeps only `messages`; `images` (paths for the <image> placeholders) is
    # dropped because chat requests have no such field.
    rel = "llama-factory/mllm_demo.json"
    for i, rec in enumerate(_load(rel)):
        recs.append(CorpusRecord(f"{rel}#[{i}]/messages", "chat", "request", {"messages": rec["messages"]}))
    # reason_tool_use: content parts are {type, value} (unusual, but arrays of objects, which chat
    # allows); kept as-is. `tools` (a JSON string) is dropped from the wrapper.
    rel = "llama-factory/reason_tool_use_demo_50.jsonl"
    for n, rec in _lines(rel):
        recs.append(CorpusRecord(f"{rel}#L{n}/messages", "chat", "request", {"messages": rec["messages"]}))
    skipped.append(
        ("llama-factory/glaive_toolcall_en_demo.json", "ShareGPT `conversations` format, not a wire format")
    )


def _metadata(out: _Out) -> None:
    _, skipped = out
    skipped.append(
        (
            "codex-rollouts-localpush-sanitized/localpush-fixture-manifest.json",
            "publisher's sanitisation manifest, no conversation",
        )
    )
    skipped.append(("MANIFEST.jsonl", "corpus provenance manifest, no conversation"))
    skipped.append(("LICENSES/", "licence texts, no conversation"))


@cache
def _scan() -> tuple[tuple[CorpusRecord, ...], tuple[tuple[str, str], ...]]:
    out: _Out = ([], [])
    for step in (
        _vercel,
        _cassettes,
        _codex,
        _claude_code,
        _inspect,
        _swe_agent,
        _tau_bench,
        _llama_factory,
        _metadata,
    ):
        step(out)
    recs, skipped = out
    sources = [r.source for r in recs]
    if len(set(sources)) != len(sources):
        raise AssertionError("duplicate corpus record locators")
    return tuple(recs), tuple(skipped)
