"""The one shape of a lost detail and of a rejected record, for every command (docs/run-layout.md).

One definition for every writer (the batch engine behind ``run``, ``convert`` and ``transform``, in
a run directory or in the single-file layout's ``FILE.losses.jsonl`` / ``FILE.rejected.*``) and for
the tests that build run directories by hand, so the contract the audit reads cannot drift.

A rejected record keeps its **original input**, so it can be fixed and fed back: the verbatim line
of a JSONL input, or the source record encoded back in its ``source_format`` (JSON text) for a
Parquet, dataset or adapter input. ``input_format`` says what format ``input`` is in;
``input_encoding`` is ``utf-8``, or ``base64`` when the line was not valid UTF-8 (its bytes are kept).
"""

from __future__ import annotations

import base64
from typing import Any

import pyarrow as pa

LOSSES_SCHEMA = pa.schema(
    [
        pa.field("conversation_id", pa.string()),
        pa.field("source_file", pa.string()),
        pa.field("source_line", pa.int64()),
        pa.field("source_format", pa.string()),
        pa.field("target_format", pa.string()),
        pa.field("kind", pa.string()),
        pa.field("path", pa.string()),
        pa.field("detail", pa.string()),
    ]
)

REJECTED_SCHEMA = pa.schema(
    [
        pa.field("source_file", pa.string()),
        pa.field("source_line", pa.int64()),
        pa.field("conversation_id", pa.string()),
        pa.field("stage", pa.string()),
        pa.field("step", pa.string()),
        pa.field("reason", pa.string()),
        pa.field("input", pa.string()),
        pa.field("input_format", pa.string()),
        pa.field("input_encoding", pa.string()),
    ]
)

UTF8 = "utf-8"
BASE64 = "base64"


def loss_refused(kind: str) -> str:
    """The reason of a record the loss policy refused (the one wording, for every command)."""
    return f"loss: {kind} (on_loss = reject)"


def input_text(raw: bytes | str | None) -> tuple[str | None, str | None]:
    """``(input, input_encoding)`` of an original input: its text, or base64 when it is not UTF-8."""
    if raw is None:
        return None, None
    if isinstance(raw, str):
        return raw, UTF8
    try:
        return raw.decode(UTF8), UTF8
    except UnicodeDecodeError:
        return base64.b64encode(raw).decode("ascii"), BASE64


def original_bytes(row: dict[str, Any]) -> bytes | None:
    """A rejected row's original input as bytes (undoes :func:`input_text`): what to fix and feed back."""
    text = row.get("input")
    if text is None:
        return None
    return base64.b64decode(text) if row.get("input_encoding") == BASE64 else text.encode(UTF8)


def rejected_row(
    source_file: str | None,
    source_line: int | None,
    stage: str,
    reason: str,
    *,
    conversation_id: str | None = None,
    step: str | None = None,
    raw: bytes | str | None = None,
    input_format: str | None = None,
) -> dict[str, Any]:
    """One rejected record (a row of ``rejected/``); ``raw`` is its original input."""
    text, encoding = input_text(raw)
    return {
        "source_file": source_file,
        "source_line": source_line,
        "conversation_id": conversation_id,
        "stage": stage,
        "step": step,
        "reason": reason,
        "input": text,
        "input_format": input_format if text is not None else None,
        "input_encoding": encoding,
    }
