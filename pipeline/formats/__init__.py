"""Wire formats <-> the canonical table.

>>> from pipeline.formats import decode_lines, encode_table
>>> result = decode_lines([b'{"input": "hi", "model": "gpt-5"}'], "responses")
>>> result.table.num_rows, result.rejected
(1, [])
>>> encode_table(result.table, "responses")
[{'input': 'hi', 'model': 'gpt-5'}]
"""

from __future__ import annotations

import gc
import hashlib
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from types import ModuleType
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from pipeline import codec
from pipeline.formats import _native_decode, anthropic, chat, hf, responses, sharegpt
from pipeline.formats._build import TableBuilder
from pipeline.formats._common import ConversationView, RecordError, json_type
from pipeline.formats._json import MAX_DEPTH
from pipeline.formats._json import loads as _loads

CODECS: dict[str, ModuleType] = {
    "responses": responses,
    "chat": chat,
    "anthropic": anthropic,
    "hf": hf,
    "sharegpt": sharegpt,
}
WIRE_FORMATS = tuple(CODECS)


@dataclass
class Rejected:
    """A record that could not be decoded: where it was, its original text, and why."""

    line: int
    input: str
    error: str
    file: str | None = None
    losses: list[dict[str, str]] | None = None

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"line": self.line, "input": self.input, "error": self.error}
        if self.file is not None:
            d["file"] = self.file
        if self.losses is not None:
            d["losses"] = self.losses
        return d


@dataclass
class DecodeResult:
    table: pa.Table
    rejected: list[Rejected] = field(default_factory=list)
    blank_lines: int = 0
    # lines the compiled decoder handed to the Python one, by reason (pipeline/codec.py); {} when
    # the Python codec decoded everything
    native_fallback: dict[str, int] = field(default_factory=dict)


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic GC while a batch builds millions of small acyclic objects.

    Row tuples, block lists and decoded JSON hold no reference cycles, so reference counting frees
    them; without the pause CPython rescans the growing heap and a batch decode runs ~2x slower.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def conversation_id(raw: bytes, source_file: str | None, line: int) -> str:
    """Stable id of a record: the same line of the same file always gets the same id."""
    h = hashlib.blake2b(raw, digest_size=16)
    h.update(f"\x00{source_file or ''}\x00{line}".encode())
    return h.hexdigest()


# What bytes.strip() removes: ASCII space, \t, \n, \v, \f, \r.
_WHITESPACE = frozenset(b" \t\n\x0b\x0c\r")


def decode_lines(
    lines: Iterable[bytes],
    fmt: str,
    *,
    source_file: str | None = None,
    first_line: int = 1,
) -> DecodeResult:
    """Decode JSONL lines of one wire format into a canonical table plus the rejected lines.

    Every non-blank line ends up in exactly one of the two; a bad line never raises.
    """
    with gc_paused():
        native = codec.native_module(fmt)
        if native is not None:  # the compiled decoder; lines it cannot prove exact come back here
            out = _native_decode.decode(
                native,
                fmt,
                lines,
                source_file,
                first_line,
                lambda raws, file, numbers: _decode_lines(raws, fmt, file, first_line, numbers),
            )
            return DecodeResult(out.table, out.rejected, out.blank_lines, out.fallback)
        return _decode_lines(lines, fmt, source_file, first_line)


def decode_files(files: list[tuple[str, list[bytes]]], fmt: str) -> DecodeResult:
    """Decode the lines of several files (``(name, lines)``, each numbered from 1) in one call.

    The result is what decoding each file on its own and concatenating would give (the same rows,
    ids, rejections and blank count): one decode call for many small files, instead of one per file
    (a call costs about as much as decoding fifteen records). The lines are decoded as one file
    without a name; then each record's ``source_file``, ``source_line`` and ``conversation_id``
    (which hashes both) are set to its own file's.
    """
    lines = [line for _, ls in files for line in ls]
    res = decode_lines(lines, fmt, source_file=None, first_line=1)
    starts = np.cumsum([0, *(len(ls) for _, ls in files)])  # each file's first line, 0-based
    names = [name for name, _ in files]

    def where(n: int) -> tuple[str, int]:
        k = int(np.searchsorted(starts, n - 1, side="right")) - 1
        return names[k], n - int(starts[k])

    table = res.table
    if table.num_rows:
        at = table.column("source_line").to_numpy()
        k = np.searchsorted(starts, at - 1, side="right") - 1
        local = at - starts[k]
        file_col = pc.take(pa.array(names, pa.string()), pa.array(k))
        # the id hashes the line and its place: per record, as the decoders do it
        ids = [conversation_id(lines[n - 1], names[f], int(n0))
               for n, f, n0 in zip(at.tolist(), k.tolist(), local.tolist(), strict=True)]  # fmt: skip
        fixed = {"source_file": file_col, "source_line": pa.array(local), "conversation_id": pa.array(ids)}
        for name, col in fixed.items():
            i = table.schema.get_field_index(name)
            table = table.set_column(i, table.schema.field(i), col.cast(table.schema.field(i).type))
    rejected = [replace(r, file=where(r.line)[0], line=where(r.line)[1]) for r in res.rejected]
    return DecodeResult(table, rejected, res.blank_lines, res.native_fallback)


def _decode_lines(
    lines: Iterable[bytes],
    fmt: str,
    source_file: str | None,
    first_line: int,
    numbers: Iterable[int] | None = None,
) -> DecodeResult:
    """The Python decoder; ``numbers`` gives each line's number when they are not consecutive."""
    decode: Callable[..., None] = CODECS[fmt].decode
    tb = TableBuilder()
    rejected: list[Rejected] = []
    blank = 0
    for n, raw in zip(numbers, lines, strict=True) if numbers is not None else enumerate(lines, first_line):
        # strip() copies the whole line; only a line that starts with whitespace can be blank
        if not raw or (raw[0] in _WHITESPACE and not raw.strip()):
            blank += 1
            continue
        try:
            rec = _loads(raw)
        except RecordError as e:
            rejected.append(Rejected(n, _text(raw), str(e), source_file))
            continue
        except ValueError as e:
            rejected.append(Rejected(n, _text(raw), f"$: invalid JSON: {e}", source_file))
            continue
        if type(rec) is not dict:
            rejected.append(Rejected(n, _text(raw), f"$: expected object, got {json_type(rec)}", source_file))
            continue
        mark = tb.mark()
        try:
            decode(
                tb,
                rec,
                conversation_id=conversation_id(raw, source_file, n),
                source_file=source_file,
                source_line=n,
            )
        except RecordError as e:
            tb.rollback(mark)
            rejected.append(Rejected(n, _text(raw), str(e), source_file))
        except orjson.JSONEncodeError as e:
            tb.rollback(mark)
            rejected.append(Rejected(n, _text(raw), f"$: value cannot be stored: {e}", source_file))
    return DecodeResult(tb.finish(), rejected, blank)


def decode_records(records: Iterable[dict[str, Any]], fmt: str) -> DecodeResult:
    """Decode already-parsed records (tests, notebooks); line numbers count from 1."""
    return decode_lines((orjson.dumps(r) for r in records), fmt)


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace").rstrip("\r\n")


def encode_jsonl(table: pa.Table, fmt: str) -> list[bytes]:
    """Rebuild every row of a canonical table as one JSON line of ``fmt`` (same-format rows only)."""
    with gc_paused():
        return _encode_jsonl(table, fmt)


def _encode_jsonl(table: pa.Table, fmt: str) -> list[bytes]:
    view = ConversationView(table)
    encode = CODECS[fmt].encode
    dumps = orjson.dumps
    out = []
    for r in range(view.n):
        if view.source_format[r] != fmt:
            raise RecordError(
                f"row {r}",
                f"record is {view.source_format[r]}; converting to {fmt} is not supported yet",
            )
        out.append(dumps(encode(view, r)))
    return out


def encode_table(table: pa.Table, fmt: str) -> list[dict[str, Any]]:
    """Rebuild every row of a canonical table as a ``fmt`` record (same-format rows only)."""
    return [orjson.loads(line) for line in encode_jsonl(table, fmt)]


__all__ = [
    "CODECS",
    "MAX_DEPTH",
    "WIRE_FORMATS",
    "DecodeResult",
    "RecordError",
    "Rejected",
    "conversation_id",
    "decode_lines",
    "decode_records",
    "encode_jsonl",
    "encode_table",
]
