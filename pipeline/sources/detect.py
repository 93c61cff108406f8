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
``http-cassette``      rows with an ``interactions`` list of ``{request: {uri, ...}, ...}``
=====================  ===================================================================

A JSON file is parsed whole (the adapter parses it again); a JSONL file is read up to
:data:`SNIFF_LINES` lines.

:func:`detect_input` is what ``--from auto`` runs: the sources above, else wire records
(:data:`WIRE`: Responses, Chat, Anthropic, HF, ShareGPT, decided per record by
:mod:`pipeline.sources.wire_kind` when the file is read). A file of only ShareGPT rows, or only
``messages`` rows without request keys, stays with the ``sharegpt`` / ``llamafactory`` adapter
(the same codecs, plus provenance and LLaMA-Factory's typed parts); one that mixes them with other
wire records is read per record.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from pipeline.sources import (
    claude_code,
    codex_rollout,
    http_cassette,
    inspect_eval,
    inspect_log,
    kiln,
    llamafactory,
    sharegpt,
    swe_agent,
    tau_bench,
)
from pipeline.sources._base import open_plain
from pipeline.sources.inputs import MAX_DOCUMENT_BYTES, record_batches
from pipeline.sources.wire_kind import classify_fits, follow_the_file
from pipeline.storage import as_path, open_input

WIRE = "auto"  # detect_input's answer for wire records: the format is chosen per record as read

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
    (http_cassette.NAME, http_cassette.sniff),
)


def row_source(obj: Any) -> str | None:
    """The one source whose row sniffer matches the decoded JSON value ``obj``, else None."""
    hits = [name for name, sniff in _ROW_SNIFFERS if sniff(obj)] if type(obj) is dict else []
    return hits[0] if len(hits) == 1 else None


def detect_source(path: Path) -> str | None:
    """The source adapter for ``path``, or None when the content is ambiguous or unknown."""
    path = as_path(path)
    try:
        with open_plain(path) as f:  # a compressed log is told by its content, as a plain one
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
    with open_plain(path) as f:
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
        with open_plain(path) as f:
            value = orjson.loads(f.read())
    except orjson.JSONDecodeError:
        return None
    if type(value) is dict:
        return row_source(value)
    if type(value) is list and value:
        names = {row_source(v) for v in value[:SNIFF_LINES]}
        if len(names) == 1:
            return names.pop()
    return None


# The adapters whose rows are also wire records, and the wire format their rows classify as.
_WIRE_ADAPTERS = {sharegpt.NAME: "sharegpt", llamafactory.NAME: "hf"}


def sample_lines(path: str | Path, max_document_bytes: int = MAX_DOCUMENT_BYTES) -> list[bytes]:
    """The first :data:`SNIFF_LINES` records of a wire input (any shape: plain or compressed JSONL,
    a JSON array or document, see :mod:`pipeline.sources.inputs`), as JSON texts."""
    out: list[bytes] = []
    with open_input(path) as f:
        for batch in record_batches(f, str(path), 1 << 20, max_document_bytes):
            out.extend(line for line in batch.lines if line.strip())
            if len(out) >= SNIFF_LINES:
                break
    return out[:SNIFF_LINES]


def detect_input(path: str | Path, max_document_bytes: int = MAX_DOCUMENT_BYTES) -> str | None:
    """What ``--from auto`` reads ``path`` as: a source adapter's name, :data:`WIRE` (wire records,
    each record's format decided as it is read), or None when nothing fits.

    A compressed file is told by its decompressed content, like a plain one.
    """
    path = as_path(path)
    source = detect_source(path)
    if source is not None and source not in _WIRE_ADAPTERS:
        return source
    lines = sample_lines(path, max_document_bytes)
    kinds = [k for k in follow_the_file(*classify_fits(lines)) if k]
    if source is not None:
        return source if all(k == _WIRE_ADAPTERS[source] for k in kinds) else WIRE
    if kinds:
        return WIRE
    return None


def _loads(line: bytes) -> Any:
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
