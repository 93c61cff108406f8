"""Reading a file of wire records whatever its shape: JSON Lines, a JSON array, one (pretty-printed)
JSON document, compressed (gzip, zstd, bzip2, xz) or standard input (docs/sources.md#inputs).

The engine reads plain JSONL files in byte ranges (``engine/read.py``); everything else comes
through :func:`record_batches`, which yields ``(first_line, lines, rejected)`` batches of JSON
records for ``pipeline.formats.decode_lines``:

===============  =========================================  ===================================
shape            how it is read                             ``line`` of a record
===============  =========================================  ===================================
JSON Lines       streamed, ``chunk_bytes`` at a time        its (decompressed) line number
JSON array       whole, at most ``max_document_bytes``      1-based element index
one JSON object  whole, at most ``max_document_bytes``      1
===============  =========================================  ===================================

Compressed files are decompressed as a stream (gzip, bzip2 and xz by the standard library, zstd by
pyarrow's codec), so memory stays one batch whatever the file's size; the compression is told from
the file's first bytes, not its name. A JSON array or document has to be parsed whole (orjson reads
no stream): it is capped at ``max_document_bytes`` (an input option, default 1 GiB) and a larger one
is one rejected record saying how to raise the cap. A JSON Lines record is held whole while it
is read: a line longer than ``max_record_bytes`` (an input option, default 256 MiB) is skipped as
it is read, never held whole, and is one rejected record naming the limit; the lines after it are
read. The total a compressed stream inflates to needs no budget: it is read one batch at a time
(a bomb of short lines is as costly as the plain file it stands for, no more). A stream that fails
half way (a corrupt or cut off ``.gz``) keeps what was read and rejects the rest as one record
naming the error.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any

import orjson

from pipeline.compression import DECOMPRESS_ERRORS, compression_of, decompressed
from pipeline.formats import Rejected
from pipeline.formats._common import RecordError
from pipeline.formats._json import loads_document
from pipeline.sources._base import text_of

STDIN = "-"  # the input path that means standard input
STDIN_NAME = "<stdin>"  # what provenance (source_file) calls it
MAX_DOCUMENT_BYTES = 1 << 30
# A JSON Lines record (one line) is held whole while it is read: a longer one is skipped as it is
# read (memory holds at most this much of it) and rejected, naming the limit. A few MB of gzip or
# zstd hold gigabytes of one line with no line end. As an .eval member's cap (max_member_bytes).
MAX_RECORD_BYTES = 256 << 20
# The options every wire-format input takes (a job's [[inputs]] options), with their types.
WIRE_OPTIONS: dict[str, type] = {"max_document_bytes": int, "max_record_bytes": int}

COMPRESSED_SUFFIXES = {".gz": "gzip", ".zst": "zstd", ".bz2": "bz2", ".xz": "xz"}
# Errors a decompressor raises on corrupt or truncated data.
_DECOMPRESS_ERRORS = DECOMPRESS_ERRORS


@dataclass
class RecordBatch:
    """Up to one batch of records: JSON texts numbered from ``first_line``, and the ones already
    rejected while reading (a JSON array element too deep, a stream that broke)."""

    first_line: int
    lines: list[bytes]
    rejected: list[Rejected] = field(default_factory=list)
    nbytes: int = 0
    placeholders: int = 0  # empty lines standing in for ``rejected`` records (not blank lines)


def is_document(head: bytes) -> bool:
    """Whether a file starting with ``head`` looks like one JSON value rather than JSON Lines: it opens
    with ``[`` or ``{`` and its first line is not a whole JSON value (pretty-printed), or it is one
    line opening with ``[`` (a one-line array). A first guess: a "document" that does not parse is
    read as JSON Lines after all (:func:`record_batches`)."""
    text = head.lstrip()
    if not text.startswith((b"[", b"{")):
        return False
    first, _, more = text.partition(b"\n")
    try:
        orjson.loads(first)
    except orjson.JSONDecodeError:
        if not more:
            return len(head) < (1 << 16)  # a first line longer than the head: JSONL
        return not _lines_follow(more)  # a broken first line of JSON Lines, or a pretty-printed value
    return text.startswith(b"[") and not more.strip()  # a whole line followed by more: JSONL


def _lines_follow(more: bytes) -> bool:
    """Whether one of the (up to 3) whole lines after the first is a JSON object on its own: JSON
    Lines. A pretty-printed document's inner lines (``"model": "x",``) never are."""
    lines = [x for x in more.split(b"\n")[:-1] if x.strip()][:3]
    for line in lines:
        try:
            if type(orjson.loads(line)) is dict:
                return True
        except orjson.JSONDecodeError:
            continue
    return False


def _document(data: bytes, name: str) -> RecordBatch:
    """The records of a whole JSON array (or the one record of a JSON object) as JSON texts."""
    try:
        value, bad = loads_document(data)
    except RecordError as e:
        return RecordBatch(1, [], [Rejected(1, _text(data), str(e), name)], len(data))
    except ValueError as e:
        return RecordBatch(1, [], [Rejected(1, _text(data), f"$: invalid JSON: {e}", name)], len(data))
    records = value if type(value) is list else [value]
    lines: list[bytes] = []
    rejected: list[Rejected] = []
    for i, rec in enumerate(records):
        if i in bad:
            rejected.append(Rejected(i + 1, text_of(rec), bad[i], name))  # text_of: any depth
            lines.append(b"")  # keeps the element numbers; counted as blank, subtracted below
        else:
            lines.append(orjson.dumps(rec))
    return RecordBatch(1, lines, rejected, len(data), len(rejected))


def _read(stream: IO[bytes], n: int, failed: list[Exception]) -> bytes:
    """Up to ``n`` bytes of ``stream``: fewer only at its end (a decompressor may return less) or
    when it fails, which appends the error to ``failed`` (the bytes before it are returned)."""
    parts, got = [], 0
    while got < n:
        try:
            data = stream.read(min(n - got, 1 << 24))
        except _DECOMPRESS_ERRORS as e:
            failed.append(e)
            break
        if not data:
            break
        parts.append(data)
        got += len(data)
    return b"".join(parts)


def skip_line(read: Callable[[], bytes]) -> tuple[int, bytes | None]:
    """Read on (``read()`` returns the next block, ``b""`` at the end) to the end of the current line
    without keeping it: the bytes skipped (its newline included) and what follows the newline, or
    None when the input ends first (memory: one block)."""
    skipped = 0
    while True:
        block = read()
        if not block:
            return skipped, None
        nl = block.find(b"\n")
        if nl >= 0:
            return skipped + nl + 1, block[nl + 1 :]
        skipped += len(block)


def too_long(line: int, head: bytes, size: int, cap: int, name: str) -> Rejected:
    """The rejection of a line of ``size`` bytes, over ``max_record_bytes`` (``head``: its start)."""
    msg = (
        f"$: a line of {size} bytes, more than max_record_bytes = {cap}: a record is read whole, so "
        "it is not read; raise the input option max_record_bytes"
    )
    return Rejected(line, _text(head[:200]) + "...", msg, name)


def over_budget(lines: list[bytes], first: int, cap: int, name: str) -> tuple[list[bytes], list[Rejected]]:
    """``lines`` (numbered from ``first``) with each one longer than ``cap`` replaced by an empty
    placeholder, and their rejections (one ``max`` over the lengths when none is: the usual case)."""
    if not lines or max(map(len, lines)) <= cap:
        return lines, []
    bad = [too_long(n, x, len(x), cap, name) for n, x in enumerate(lines, first) if len(x) > cap]
    return [b"" if len(x) > cap else x for x in lines], bad


def _text(raw: bytes) -> str:
    text = raw[: 1 << 20].decode("utf-8", errors="replace")
    return text + "...[truncated]" if len(raw) > 1 << 20 else text


def record_batches(
    f: IO[bytes],
    name: str,
    chunk_bytes: int,
    max_document_bytes: int = MAX_DOCUMENT_BYTES,
    max_record_bytes: int = MAX_RECORD_BYTES,
) -> Iterator[RecordBatch]:
    """The records of an open input (plain or compressed bytes), in batches of about ``chunk_bytes``.

    ``name`` is the file's name in provenance and errors. Never raises on bad data: a document over
    its cap, a line over ``max_record_bytes`` (skipped as it is read), invalid JSON or a
    decompression error becomes a rejected record.
    """
    failed: list[Exception] = []
    magic = f.read(6)
    try:
        stream = decompressed(io.BufferedReader(_Prefixed(magic, f)), compression_of(magic))
    except _DECOMPRESS_ERRORS as e:  # a header the decompressor refuses at once
        failed.append(e)
        stream = io.BytesIO(b"")
    head = _read(stream, 1 << 16, failed)
    if is_document(head) and not failed:
        data = head + _read(stream, max_document_bytes + 1 - len(head), failed)
        if len(data) > max_document_bytes:
            msg = (
                f"$: a JSON document larger than max_document_bytes = {max_document_bytes} is not read "
                "(it is parsed whole); convert it to JSON Lines, or raise the input option "
                "max_document_bytes"
            )
            yield RecordBatch(1, [], [Rejected(1, _text(data[:200]) + "...", msg, name)], len(data))
            return
        if not failed:
            doc = _document(data, name)
            if not _not_json(doc, data):
                yield doc
                return
            head = data  # it did not parse: JSON Lines whose first line is broken, read as such
        else:
            yield RecordBatch(1, [], [_broken(1, data, failed[0], name)], len(data))
            return
    line, rest = 1, head
    while True:
        block = _read(stream, chunk_bytes, failed) if not failed else b""
        data = rest + block
        cut = data.rfind(b"\n") if (block or failed) else len(data) - 1
        if cut < 0 and block:  # no whole line yet: read on
            if len(data) <= max_record_bytes:
                rest = data
                continue
            skipped, after = skip_line(lambda: _read(stream, chunk_bytes, failed) if not failed else b"")
            size = len(data) + skipped - (after is not None)  # the line without its newline
            yield RecordBatch(line, [], [too_long(line, data, size, max_record_bytes, name)], size)
            if after is None:  # the input ended (or broke) inside that line: nothing follows it
                return
            line, rest = line + 1, after
            continue
        lines = data[: cut + 1].split(b"\n")
        if lines[-1] == b"":
            lines.pop()
        if lines:
            lines, bad = over_budget(lines, line, max_record_bytes, name)
            yield RecordBatch(line, lines, bad, nbytes=cut + 1, placeholders=len(bad))
            line += len(lines)
        if failed:  # what was read is kept; the rest (from the cut-off line on) is one rejection
            yield RecordBatch(line, [], [_broken(line, data[cut + 1 :], failed[0], name)])
            return
        if not block:
            return
        rest = data[cut + 1 :]


def _not_json(doc: RecordBatch, data: bytes) -> bool:
    """Whether a whole-document read failed as JSON on a text of several lines (then: JSON Lines)."""
    return (
        not doc.lines and len(doc.rejected) == 1 and doc.rejected[0].error.startswith("$: invalid JSON")
        and b"\n" in data.strip()
    )  # fmt: skip


def _broken(line: int, tail: bytes, e: Exception, name: str) -> Rejected:
    msg = f"$: cannot read the rest of the input from line {line} on: {type(e).__name__}: {e}"
    return Rejected(line, _text(tail), msg, name)


class _Prefixed(io.RawIOBase):
    """A binary stream that gives ``prefix`` and then the rest of ``f`` (the magic bytes read to
    tell the compression are handed back; standard input cannot seek)."""

    def __init__(self, prefix: bytes, f: IO[bytes]) -> None:
        self.prefix, self.f = prefix, f

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        if self.prefix:
            n = min(len(b), len(self.prefix))
            b[:n] = self.prefix[:n]
            self.prefix = self.prefix[n:]
            return n
        data = self.f.read(len(b))
        b[: len(data)] = data
        return len(data)

