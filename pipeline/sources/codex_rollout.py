"""Codex CLI / Desktop rollout JSONL (``~/.codex/sessions/.../rollout-<time>-<session id>.jsonl``).

Each line is ``{"timestamp", "type", "payload"}`` (plus ``ordinal`` in newer versions). A rollout file
is one session: Codex names the file after it and, on resume, replays every ``response_item`` of the
file in order, whatever ``session_meta`` lines it holds (a fork copies its parent's lines, parent
``session_meta`` included). So one file gives one conversation per *context window*:

* window 0 holds the ``response_item`` payloads from the start of the file;
* a ``compacted`` line restarts the history: Codex replaces everything before it with
  ``payload.replacement_history``. It opens window *k*, whose items are that replacement history
  followed by the ``response_item`` payloads up to the next ``compacted`` line.

Every payload therefore sits in exactly one conversation, the replaced history stays in the earlier
windows, and each window is exactly the input the model saw. ``provenance.sample_id`` is the window
number and ``meta_json.replacement_items`` says how many leading items came from the compaction.

=====================  ===========================================================================
line type              what happens
=====================  ===========================================================================
``response_item``      a Responses input item of the current window (decoded by the responses codec)
``compacted``          opens a new window (see above); ``message``, window ids -> ``meta_json``
``session_meta``       the first one: ``id`` -> ``session_id``, ``instructions`` /
                       ``base_instructions.text`` -> the conversation's ``instructions``, the rest ->
                       ``meta_json.session_meta``; later ones -> ``meta_json.more_session_meta``
``turn_context``       ``model`` -> the ``model`` column (the model in effect at the window's first
                       item), every model of the window -> ``meta_json.models``; counted
``event_msg``,         counted (``line_types:<type>``): UI/telemetry events that repeat what the
``world_state``, ...   response items hold, never extra turns
anything else          rejected with file, line and reason (``unknown_line_types:<type>``)
=====================  ===========================================================================

Per item, ``meta_json.item_lines`` / ``item_timestamps`` give the line and timestamp of each
``response_item`` of the window (null for replacement items), and ``item_envelopes`` any other
envelope key (``ordinal``) by line number.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pipeline.formats import RecordError
from pipeline.formats._build import ItemCols
from pipeline.formats.responses import decode_item
from pipeline.sources._base import SourceBuilder, SourceResult, check_options, gc_paused, iter_jsonl

NAME = "codex-rollout"
OPTIONS: dict[str, type] = {}

# Line types that are not conversation items: counted, never turned into turns.
COUNTED_TYPES = frozenset(("turn_context", "event_msg", "world_state", "inter_agent_communication_metadata"))
KNOWN_TYPES = COUNTED_TYPES | {"session_meta", "response_item", "compacted"}
_ENVELOPE = frozenset(("timestamp", "type", "payload"))


def sniff(obj: dict[str, Any]) -> bool:
    """A rollout line: ``{"timestamp", "type", "payload"}`` with a Codex line type."""
    t = obj.get("type")
    # a list or object "type" is not a line type (and is unhashable as a set member)
    return type(t) is str and t in KNOWN_TYPES and "payload" in obj and "timestamp" in obj


class _Window:
    __slots__ = (
        "compaction", "ended_at", "envelopes", "first_line", "item_lines", "item_timestamps", "items",
        "model", "models", "replacement_items", "session_metas", "started_at",
    )  # fmt: skip

    def __init__(self, first_line: int, started_at: Any, compaction: dict[str, Any] | None) -> None:
        self.first_line = first_line
        self.started_at = started_at if type(started_at) is str else None
        self.ended_at = self.started_at
        self.compaction = compaction
        self.items: list[Any] = []
        self.item_lines: list[int | None] = []
        self.item_timestamps: list[Any] = []
        self.envelopes: dict[str, dict[str, Any]] = {}
        self.model: str | None = None
        self.models: list[str] = []
        self.replacement_items = 0
        self.session_metas: list[dict[str, Any]] = []


class _Session:
    """What the first ``session_meta`` says, shared by every window of the file."""

    def __init__(self) -> None:
        self.id: str | None = None
        self.meta: dict[str, Any] | None = None
        self.instructions: str | None = None
        self.instructions_from: str | None = None

    def set(self, payload: dict[str, Any]) -> None:
        meta = dict(payload)
        sid = meta.get("id")
        self.id = sid if type(sid) is str else None
        instr = meta.get("instructions")
        base = meta.get("base_instructions")
        if type(instr) is str:
            self.instructions, self.instructions_from = instr, "instructions"
            del meta["instructions"]
        elif type(base) is dict and type(base.get("text")) is str:
            self.instructions, self.instructions_from = base["text"], "base_instructions.text"
            meta["base_instructions"] = {k: v for k, v in base.items() if k != "text"}
        self.meta = meta


def _valid_item(scratch: ItemCols, item: Any, path: str) -> str | None:
    """Why ``item`` is not a Responses item the codec can hold (None when it is).

    Checked per line so that one broken line is rejected alone instead of its whole window.
    """
    try:
        decode_item(scratch, item, "input", 0, path)
    except RecordError as e:
        return str(e)
    finally:
        scratch.truncate(0)
    return None


def read(path: Path, **options: Any) -> Iterator[SourceResult]:
    """Read one rollout file: one conversation per context window (see the module docstring)."""
    check_options(NAME, options, OPTIONS)
    b = SourceBuilder(NAME, path)
    with gc_paused():
        session, windows = _scan(path, b)
        for k, w in enumerate(windows):
            _emit(b, session, w, k, len(windows))
    yield b.result(final=True)


def _scan(path: Path, b: SourceBuilder) -> tuple[_Session, list[_Window]]:
    session = _Session()
    windows: list[_Window] = []
    scratch = ItemCols()
    model: str | None = None
    for n, raw, line in iter_jsonl(path, b):
        ltype = line.get("type")
        payload = line.get("payload")
        ts = line.get("timestamp")
        if type(ltype) is not str:
            b.reject(n, raw.decode("utf-8", "replace"), "broken envelope: no string 'type'")
            continue
        if ltype not in KNOWN_TYPES:
            b.counts[f"unknown_line_types:{ltype}"] += 1
            b.reject(n, raw.decode("utf-8", "replace"), f"unknown line type {ltype!r}")
            continue
        if type(payload) is not dict:
            b.reject(
                n, raw.decode("utf-8", "replace"), f"broken envelope: {ltype} line without object 'payload'"
            )
            continue
        if not windows:
            windows.append(_Window(n, ts, None))
        w = windows[-1]
        if type(ts) is str:
            w.ended_at = ts
        if ltype == "response_item":
            why = _valid_item(scratch, payload, f"line {n}: $.payload")
            if why is not None:
                b.reject(n, raw.decode("utf-8", "replace"), why)
                continue
            b.counts["line_types:response_item"] += 1
            if w.model is None:
                w.model = model
            w.items.append(payload)
            w.item_lines.append(n)
            w.item_timestamps.append(ts)
            extra = {k: v for k, v in line.items() if k not in _ENVELOPE}
            if extra:
                w.envelopes[str(n)] = extra
        elif ltype == "compacted":
            w = _compaction(b, scratch, windows, n, raw, ts, payload)
        else:
            # a rejected line is counted as rejected only: the counts add up to lines_read
            b.counts[f"line_types:{ltype}"] += 1
        if ltype == "turn_context":
            m = payload.get("model")
            if type(m) is str:
                model = m
                if m not in w.models:
                    w.models.append(m)
        elif ltype == "session_meta":
            if session.meta is None:
                session.set(payload)
            else:
                w.session_metas.append({"line": n, "payload": payload})
    return session, windows


def _compaction(
    b: SourceBuilder,
    scratch: ItemCols,
    windows: list[_Window],
    n: int,
    raw: bytes,
    ts: Any,
    payload: dict[str, Any],
) -> _Window:
    """Open the window a ``compacted`` line starts (its replacement history first)."""
    history = payload.get("replacement_history", ...)
    compaction = {k: v for k, v in payload.items() if k != "replacement_history"}
    compaction["line"] = n
    w = _Window(n, ts, compaction)
    windows.append(w)
    if history is ... or history is None:
        compaction["replacement_history"] = "absent" if history is ... else None
        b.counts["line_types:compacted"] += 1
        return w
    if type(history) is not list:
        b.reject(n, raw.decode("utf-8", "replace"), "broken envelope: replacement_history is not a list")
        compaction["replacement_history"] = "rejected"
        return w
    for j, item in enumerate(history):
        why = _valid_item(scratch, item, f"line {n}: $.payload.replacement_history[{j}]")
        if why is not None:
            b.reject(n, raw.decode("utf-8", "replace"), why)
            compaction["replacement_history"] = "rejected"
            return w
    w.items.extend(history)
    w.item_lines.extend([None] * len(history))
    w.item_timestamps.extend([None] * len(history))
    w.replacement_items = len(history)
    b.counts["line_types:compacted"] += 1
    return w


def _emit(b: SourceBuilder, session: _Session, w: _Window, k: int, n_windows: int) -> None:
    if not w.items and w.compaction is None:
        b.counts["skipped:window_without_items"] += 1
        return
    record: dict[str, Any] = {}
    if session.instructions is not None:
        record["instructions"] = session.instructions
    record["input"] = w.items
    model = w.model or (w.models[0] if w.models else None)
    if model is not None:
        record["model"] = model
    meta: dict[str, Any] = {"window": k, "windows": n_windows, "replacement_items": w.replacement_items}
    if w.compaction is not None:
        meta["compaction"] = w.compaction
    meta["item_lines"] = w.item_lines
    meta["item_timestamps"] = w.item_timestamps
    if w.envelopes:
        meta["item_envelopes"] = w.envelopes
    if w.models:
        meta["models"] = w.models
    if session.meta is not None:
        meta["session_meta"] = session.meta
    if session.instructions_from is not None:
        meta["instructions_from"] = session.instructions_from
    if w.session_metas:
        meta["more_session_meta"] = w.session_metas
    b.add(
        "responses",
        record,
        line=w.first_line,
        anchor=f"window {k}".encode(),
        session_id=session.id,
        sample_id=str(k),
        started_at=w.started_at,
        ended_at=w.ended_at,
        meta=meta,
    )
