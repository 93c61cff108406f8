"""Tell which source a file is, from its content: the first lines of a JSON Lines file, or the
top-level shape of a JSON file. Returns None when no adapter, or more than one, fits.

=====================  ===================================================================
source                 what identifies it
=====================  ===================================================================
``codex-rollout``      JSONL lines ``{"timestamp", "type", "payload"}`` with a Codex line type
``claude-code``        JSONL lines with Claude Code types (``user``/``assistant`` with
                       ``sessionId`` and ``uuid``, ``file-history-snapshot``, ``summary``)
``inspect-log``        a JSON object with ``version`` and ``eval``, or a zip archive with
                       ``header.json``, ``_journal/start.json`` or ``samples/*.json`` (``.eval``)
``swe-agent``          a JSON object with a ``history`` list and ``trajectory``
``tau-bench``          a JSON list of records with ``task_id`` and a ``traj`` list
``kiln``               a JSON object (or list) of task runs: ``model_type: "task_run"``, or
                       ``input``, ``output`` and ``trace``
``sharegpt``           rows with a ``conversations`` list
``llamafactory``       rows with a ``messages`` list (and no ``model``: not a request body)
=====================  ===================================================================

A JSON file is parsed whole (the adapter parses it again); a JSONL file is read up to
:data:`SNIFF_LINES` lines.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from pipeline.sources import (
    claude_code,
    codex_rollout,
    inspect_eval,
    inspect_log,
    kiln,
    llamafactory,
    sharegpt,
    swe_agent,
    tau_bench,
)

SNIFF_LINES = 50
# Row-level sniffers, most specific first; a row must match exactly one.
_ROW_SNIFFERS = (
    (codex_rollout.NAME, codex_rollout.sniff),
    (claude_code.NAME, claude_code.sniff),
    (inspect_log.NAME, inspect_log.sniff),
    (swe_agent.NAME, swe_agent.sniff),
    (tau_bench.NAME, tau_bench.sniff),
    (kiln.NAME, kiln.sniff),
    (sharegpt.NAME, sharegpt.sniff),
    (llamafactory.NAME, llamafactory.sniff),
)


def row_source(obj: Any) -> str | None:
    """The one source whose row sniffer matches the decoded JSON value ``obj``, else None."""
    hits = [name for name, sniff in _ROW_SNIFFERS if sniff(obj)] if type(obj) is dict else []
    return hits[0] if len(hits) == 1 else None


def detect_source(path: Path) -> str | None:
    """The source adapter for ``path``, or None when the content is ambiguous or unknown."""
    path = Path(path)
    try:
        with open(path, "rb") as f:
            head = f.read(1 << 16)
    except OSError:
        return None
    if inspect_eval.is_zip(path):  # only inspect's .eval logs are zip archives among the sources
        return inspect_log.NAME if inspect_eval.looks_like_eval(path) else None
    start = head.lstrip()[:1]
    if start == b"[":
        return _from_json(path)
    if start != b"{":
        return None
    first_line = head.split(b"\n", 1)[0]
    try:
        orjson.loads(first_line)
        one_line_object = True
    except orjson.JSONDecodeError:
        one_line_object = False
    if not one_line_object:
        return _from_json(path)  # a pretty-printed JSON object
    found: set[str] = set()
    with open(path, "rb") as f:
        for n, raw in enumerate(f):
            if n >= SNIFF_LINES:
                break
            try:
                obj = orjson.loads(raw)
            except orjson.JSONDecodeError:
                continue
            name = row_source(obj)
            if name is not None:
                found.add(name)
    if n == 0 and len(found) == 1 and next(iter(found)) in _WHOLE_FILE:
        return next(iter(found))  # a one-line JSON file (inspect log, trajectory, task run)
    found -= _WHOLE_FILE
    return found.pop() if len(found) == 1 else None


_WHOLE_FILE = frozenset((inspect_log.NAME, swe_agent.NAME, kiln.NAME))


def _from_json(path: Path) -> str | None:
    try:
        value = orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError:
        return None
    if type(value) is dict:
        return row_source(value)
    if type(value) is list and value:
        names = {row_source(v) for v in value[:SNIFF_LINES]}
        if len(names) == 1:
            return names.pop()
    return None
