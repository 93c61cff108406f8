"""Claude Code transcript JSONL (``~/.claude/projects/<project>/<session id>.jsonl``).

Each line is one JSON object whose ``type`` says what it is. ``user`` and ``assistant`` lines carry
an Anthropic message in ``message``; every other type (``file-history-snapshot``, ``summary``,
``system``, ``attachment``, ``progress``, ...) is counted (``line_types:<type>``) and not a turn.

One Anthropic-format conversation per session and thread: lines are grouped by ``sessionId``, and
sub-agent lines (``isSidechain: true``) form their own conversation per session (and ``agentId``
when the line has one), so a sub-agent's turns never interleave with the main thread. Within a
conversation, messages follow the thread's ``parentUuid`` chain (below; file order when it has
none):

* consecutive ``assistant`` lines with the same ``message.id`` are one API message written block by
  block: their content lists are concatenated, in order, into one message;
* tool results stay where Claude Code wrote them, in ``user`` messages of ``tool_result`` blocks.

The canonical conversation is a clean Messages request body -- ``messages`` of ``role`` and
``content`` plus ``model`` (the first real assistant model; ``<synthetic>`` error stand-ins are
skipped). Everything else goes to ``provenance.meta_json``:

* ``lines``: per conversation line, its line number, the message it belongs to (``message``
  index) and every envelope key except ``message`` (``uuid``, ``parentUuid``, ``timestamp``,
  ``isMeta``, ``toolUseResult``, ``requestId``, ...), plus ``message_keys``: the API message's own
  keys other than ``role``/``content`` (``id``, ``model``, ``usage``, ``stop_reason``, ...);
* ``models``: every assistant model in order of first use.

``session_id`` is ``sessionId``; ``sample_id`` is null for the main thread and ``sidechain`` (or
``sidechain:<agentId>``) for sub-agent threads; ``started_at``/``ended_at`` are the first and last
line timestamps.

Rewinds and branches (two lines with one parent) are resolved by ``pipeline.sources.claude_threads``:
the conversation is the chain from the thread's most recent leaf back to its root (what Claude Code
shows on resume); every abandoned branch is a conversation of its own with the same ``session_id``,
``sample_id`` = ``branch:<leaf uuid>`` (``sidechain[:agentId]/branch:<leaf uuid>`` in a sub-agent
thread) and ``meta_json.branch`` = ``{leaf, leaf_line, fork_uuid, fork_line, fork_leaf}`` naming the
line of the conversation it forked from (``fork_leaf`` null: the active one). Each message line is in
exactly one conversation. ``meta_json.threading`` is ``tree``, or ``file_order`` with
``threading_reason`` when the links cannot be trusted (counted as ``threading_file_order:<reason>``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pipeline.formats import RecordError
from pipeline.formats._build import ItemCols
from pipeline.formats.anthropic import decode_message
from pipeline.sources._base import SourceBuilder, SourceResult, check_options, gc_paused, iter_jsonl
from pipeline.sources.claude_threads import MessageLine, Node, Resolved, resolve_threads

NAME = "claude-code"
OPTIONS: dict[str, type] = {}

MESSAGE_TYPES = frozenset(("user", "assistant"))
# Line types Claude Code writes that are not model messages (from the transcripts we have seen and
# the agent-sessions schema fixture); any other type is reported as unknown.
COUNTED_TYPES = frozenset(
    (
        "file-history-snapshot", "summary", "system", "attachment", "progress", "queue-operation",
        "permission-mode", "mode", "agent-name", "custom-title", "ai-title", "last-prompt",
        "frame-link", "pr-link", "started", "result", "relocated", "worktree-state",
        "bridge-session", "atis-latch", "tag", "x-ai-title",
    )
)  # fmt: skip
SYNTHETIC_MODEL = "<synthetic>"


def sniff(obj: dict[str, Any]) -> bool:
    """A transcript line: a Claude Code line type, and session/threading keys on message lines."""
    t = obj.get("type")
    if type(t) is not str:  # a list or object is no line type (and is unhashable as a set member)
        return False
    if t in MESSAGE_TYPES:
        return isinstance(obj.get("message"), dict) and "sessionId" in obj and "uuid" in obj
    return t in ("file-history-snapshot", "summary") or (t in COUNTED_TYPES and "sessionId" in obj)


class _Conversation:
    __slots__ = ("ended_at", "first_line", "last_id", "lines", "messages", "model", "models", "started_at")

    def __init__(self, first_line: int) -> None:
        self.first_line = first_line
        self.messages: list[dict[str, Any]] = []
        self.lines: list[dict[str, Any]] = []
        self.last_id: str | None = None  # message.id of the last message, when it is an assistant one
        self.model: str | None = None
        self.models: list[str] = []
        self.started_at: str | None = None
        self.ended_at: str | None = None


def _thread(line: dict[str, Any]) -> str | None:
    if line.get("isSidechain") is not True:
        return None
    agent = line.get("agentId")
    return f"sidechain:{agent}" if type(agent) is str else "sidechain"


def read(path: Path, **options: Any) -> Iterator[SourceResult]:
    """Read one transcript file: one conversation per session and thread (see the module docstring)."""
    check_options(NAME, options, OPTIONS)
    b = SourceBuilder(NAME, path)
    with gc_paused():
        _emit_threads(b, *_scan(path, b))
        # The parsed lines are gone (they lived in _emit_threads) before the table is built and the
        # cyclic GC is back: with them alive the GC rescans them all (1.6x slower, measured).
        out = b.result(final=True)
    yield out


def _emit_threads(
    b: SourceBuilder,
    threads: dict[tuple[str | None, str | None], list[MessageLine]],
    nodes: dict[str, Node],
    duplicates: set[str],
) -> None:
    memo: dict[str, str] = {}  # shared by the threads: each non-message line is walked once
    for (session, thread), lines in threads.items():
        convs, fallback, counts = resolve_threads(lines, nodes, duplicates, memo)
        b.counts.update(counts)
        if fallback is not None:
            b.counts[f"threading_file_order:{fallback}"] += 1
        for r in convs:
            c = _Conversation(min(m.line for m in r.lines))
            for m in r.lines:
                _add_line(c, m.line, m.obj, m.msg, m.content)
            _emit(b, session, thread, c, r, fallback)


def _scan(
    path: Path, b: SourceBuilder
) -> tuple[dict[tuple[str | None, str | None], list[MessageLine]], dict[str, Node], set[str]]:
    """Message lines per (session, thread), every uuid line of the file, and uuids written twice."""
    threads: dict[tuple[str | None, str | None], list[MessageLine]] = {}
    nodes: dict[str, Node] = {}
    duplicates: set[str] = set()
    scratch = ItemCols()
    for n, raw, line in iter_jsonl(path, b):
        ltype = line.get("type")
        key = _thread_key(line, ltype, n, raw, b, scratch)
        u = line.get("uuid")
        if type(u) is str:  # every uuid line is a link of the chain, message or not (rejected ones too)
            if u in nodes:
                duplicates.add(u)
            nodes[u] = Node(n, line.get("parentUuid"), key)
        if key is not None:
            threads.setdefault(key, []).append(
                MessageLine(n, line, line["message"], line["message"].get("content", ...))
            )
    return threads, nodes, duplicates


def _thread_key(
    line: dict[str, Any], ltype: Any, n: int, raw: bytes, b: SourceBuilder, scratch: ItemCols
) -> tuple[str | None, str | None] | None:
    """(session, thread) of a usable message line; None for other lines (counted or rejected here)."""
    if type(ltype) is not str:
        b.reject(n, raw.decode("utf-8", "replace"), "broken envelope: no string 'type'")
        return None
    if ltype not in MESSAGE_TYPES:
        if ltype not in COUNTED_TYPES:
            b.counts[f"unknown_line_types:{ltype}"] += 1
            b.reject(n, raw.decode("utf-8", "replace"), f"unknown line type {ltype!r}")
            return None
        b.counts[f"line_types:{ltype}"] += 1
        return None
    msg = line.get("message")
    if type(msg) is not dict or type(msg.get("role")) is not str:
        b.reject(n, raw.decode("utf-8", "replace"), f"broken envelope: {ltype} line without a message role")
        return None
    content = msg.get("content", ...)
    try:
        decode_message(
            scratch, {"role": msg["role"], "content": content}, "messages", 0, f"line {n}: $.message"
        )
    except RecordError as e:
        b.reject(n, raw.decode("utf-8", "replace"), str(e))
        return None
    finally:
        scratch.truncate(0)
    b.counts[f"line_types:{ltype}"] += 1
    session = line.get("sessionId")
    return (session if type(session) is str else None, _thread(line))


def _add_line(c: _Conversation, n: int, line: dict[str, Any], msg: dict[str, Any], content: Any) -> None:
    ts = line.get("timestamp")
    if type(ts) is str:
        if c.started_at is None:
            c.started_at = ts
        c.ended_at = ts
    role = msg["role"]
    mid = msg.get("id") if role == "assistant" else None
    prev = c.messages[-1] if c.messages else None
    if (
        type(mid) is str
        and mid == c.last_id
        and prev is not None
        and type(prev.get("content")) is list
        and type(content) is list
    ):
        prev["content"].extend(content)  # one API message written block by block (our own list)
    else:
        new: dict[str, Any] = {"role": role}
        if content is not ...:
            new["content"] = list(content) if type(content) is list else content
        c.messages.append(new)
    c.last_id = mid if type(mid) is str else None
    if role == "assistant":
        model = msg.get("model")
        if type(model) is str:
            if model not in c.models:
                c.models.append(model)
            if c.model is None and model != SYNTHETIC_MODEL:
                c.model = model
    entry: dict[str, Any] = {"line": n, "message": len(c.messages) - 1}
    entry.update((k, v) for k, v in line.items() if k != "message")
    keys = {k: v for k, v in msg.items() if k not in ("role", "content")}
    if keys:
        entry["message_keys"] = keys
    c.lines.append(entry)


def _emit(
    b: SourceBuilder,
    session: str | None,
    thread: str | None,
    c: _Conversation,
    r: Resolved,
    fallback: str | None,
) -> None:
    record: dict[str, Any] = {"messages": c.messages}
    if c.model is not None:
        record["model"] = c.model
    meta: dict[str, Any] = {"lines": c.lines}
    if c.models:
        meta["models"] = c.models
    meta["threading"] = "tree" if fallback is None else "file_order"
    if fallback is not None:
        meta["threading_reason"] = fallback
    sample_id = thread
    anchor = f"{session}\x00{thread}"
    if r.branch is not None:
        meta["branch"] = r.branch
        sample_id = f"{thread}/branch:{r.leaf}" if thread is not None else f"branch:{r.leaf}"
        anchor += f"\x00{r.leaf}"
    b.add(
        "anthropic",
        record,
        line=c.first_line,
        anchor=anchor.encode(),
        session_id=session,
        sample_id=sample_id,
        started_at=c.started_at,
        ended_at=c.ended_at,
        meta=meta,
    )
