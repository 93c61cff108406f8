"""What every source adapter shares: reading files, building canonical rows with provenance, counting.

An adapter walks its envelope once, turns each conversation into a wire-format record (a Responses,
Chat, Anthropic, HF or ShareGPT body) and hands it to :meth:`SourceBuilder.add`, which decodes it
with the existing codec (``pipeline.formats``) and remembers the provenance of the row. Whatever the
adapter cannot use is either counted (a known non-conversation line type) or rejected with file,
line and reason -- nothing vanishes.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import orjson
import pyarrow as pa

from pipeline.compression import compression_of, decompressed
from pipeline.errors import ConfigError
from pipeline.formats import CODECS, RecordError, Rejected, conversation_id, gc_paused
from pipeline.formats import _loads as loads_record
from pipeline.formats._build import TableBuilder, dumps
from pipeline.formats._common import json_type
from pipeline.formats._json import loads_document, loads_nested
from pipeline.schema import CONVERSATION_SCHEMA, PROVENANCE
from pipeline.storage import open_input

# Conversations per yielded table for sources with many conversations per file (tau-bench, ShareGPT).
BATCH_CONVERSATIONS = 2_000
# A rejected record's text is kept whole up to this size; beyond, the head is kept and marked.
MAX_REJECTED_TEXT = 1 << 20


@dataclass
class SourceResult:
    """One batch of conversations read from a source file.

    ``table`` is a canonical table (:data:`~pipeline.schema.CONVERSATION_SCHEMA`) whose
    ``provenance`` is filled; ``rejected`` holds the lines / samples that could not be used, with
    file, line (or 1-based record number) and reason; ``counts`` says what was read (``lines_read``,
    ``conversations``, ``line_types:<type>``, ``unknown_line_types:<type>``, ``skipped:<why>``, ...).
    """

    table: pa.Table
    rejected: list[Rejected] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)


def check_options(source: str, options: dict[str, Any], allowed: dict[str, type]) -> None:
    """Unknown or mistyped options fail before any work (``ConfigError``, exit code 2 in the CLI).

    Integer options are sizes or counts: they must be positive, and ``true`` is not an integer.
    """
    for k, v in options.items():
        if k not in allowed:
            known = ", ".join(sorted(allowed)) or "none"
            raise ConfigError(f"source {source!r} has no option {k!r} (options: {known})")
        want = allowed[k]
        if not isinstance(v, want) or (want is int and (type(v) is bool or v < 1)):
            what = "a positive integer" if want is int else want.__name__
            raise ConfigError(f"source {source!r} option {k!r} must be {what}, got {v!r}")


def text_of(value: Any) -> str:
    """The JSON text of a parsed value, for a rejected record (capped: a record can be megabytes).

    Never raises: a value orjson cannot write (nested deeper than it writes: a record rejected for
    passing :data:`~pipeline.formats.MAX_DEPTH`) is written by the standard library, and one too
    deep for that as well is shown as its JSON type and the reason: the rejection itself must not
    kill the job.
    """
    try:
        raw = value if isinstance(value, bytes) else orjson.dumps(value)
    except orjson.JSONEncodeError as e:
        try:  # deeper than orjson writes (a record rejected for its depth): the standard library
            raw = json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()
        except (RecursionError, ValueError, TypeError):
            return f"<{json_type(value)} that cannot be written as JSON: {e}>"
    if len(raw) > MAX_REJECTED_TEXT:
        raw = raw[:MAX_REJECTED_TEXT] + b"...[truncated]"
    return raw.decode("utf-8", errors="replace").rstrip("\r\n")


def meta_text(meta: dict[str, Any]) -> str | None:
    """``provenance.meta_json``: the envelope data an adapter keeps (raises ``JSONEncodeError``)."""
    return dumps(meta) if meta else None


class SourceBuilder:
    """Collects canonical rows (through the wire codecs), their provenance, rejects and counts."""

    def __init__(self, source: str, path: Path) -> None:
        self.source = source
        self.file = str(path)
        self.counts: Counter[str] = Counter()
        self._reset()

    def _reset(self) -> None:
        self.tb = TableBuilder()
        self.prov: list[dict[str, Any]] = []
        self.rejected: list[Rejected] = []

    def __len__(self) -> int:
        return len(self.tb)

    def reject(self, line: int, value: Any, error: str) -> None:
        self.rejected.append(
            Rejected(line, value if isinstance(value, str) else text_of(value), error, self.file)
        )
        self.counts["rejected"] += 1

    def add(
        self,
        fmt: str,
        record: dict[str, Any],
        *,
        line: int,
        anchor: bytes,
        session_id: str | None = None,
        sample_id: str | None = None,
        started_at: str | None = None,
        ended_at: str | None = None,
        score: float | None = None,
        meta: dict[str, Any] | None = None,
        reject_value: Any = None,
    ) -> bool:
        """Decode ``record`` (a ``fmt`` wire body) into one canonical row; False when it was rejected.

        ``anchor`` makes the conversation id unique within the file (with ``line``); ``reject_value``
        is what the rejected file shows when the codec refuses the record (default: the record).
        """
        tb = self.tb
        mark = tb.mark()
        try:
            meta_json = meta_text(meta or {})
        except orjson.JSONEncodeError as e:
            self.reject(line, record if reject_value is None else reject_value, f"meta_json: {e}")
            return False
        try:
            CODECS[fmt].decode(
                tb,
                record,
                conversation_id=conversation_id(self.source.encode() + b"\x00" + anchor, self.file, line),
                source_file=self.file,
                source_line=line,
            )
        except (RecordError, orjson.JSONEncodeError) as e:
            tb.rollback(mark)
            self.reject(line, record if reject_value is None else reject_value, f"{fmt}: {e}")
            return False
        self.prov.append(
            {
                "source": self.source,
                "session_id": session_id,
                "sample_id": sample_id,
                "started_at": started_at,
                "ended_at": ended_at,
                "score": score,
                "meta_json": meta_json,
            }
        )
        self.counts["conversations"] += 1
        return True

    def result(self, final: bool = False) -> SourceResult:
        """The rows collected since the last result, with provenance; counts only on the final one."""
        table = self.tb.finish()
        prov = pa.array(self.prov, PROVENANCE) if self.prov else pa.nulls(0, PROVENANCE)
        table = table.set_column(
            CONVERSATION_SCHEMA.get_field_index("provenance"), CONVERSATION_SCHEMA.field("provenance"), prov
        )
        out = SourceResult(table, self.rejected, dict(self.counts) if final else {})
        self._reset()
        return out


def iter_jsonl(path: Path, b: SourceBuilder) -> Iterator[tuple[int, bytes, dict[str, Any]]]:
    """Stream ``(line number, raw line, object)``; blank lines are counted, broken lines rejected."""
    with open_plain(path) as f:
        for n, raw in enumerate(f, 1):
            b.counts["lines_read"] += 1
            if not raw.strip():
                b.counts["blank_lines"] += 1
                continue
            raw = raw.rstrip(b"\r\n")
            try:
                obj = loads_record(raw)
            except RecordError as e:
                b.reject(n, raw.decode("utf-8", "replace"), str(e))
                continue
            except ValueError as e:
                b.reject(n, raw.decode("utf-8", "replace"), f"$: invalid JSON: {e}")
                continue
            if type(obj) is not dict:
                b.reject(n, raw.decode("utf-8", "replace"), f"$: expected object, got {json_type(obj)}")
                continue
            yield n, raw, obj


class BadRecord:
    """Stands in a whole-JSON file's record list for a record the parse already rejected (nested
    too deep, an integer beyond 64 bits), so the other records keep their numbers."""

    __slots__ = ("error", "value")

    def __init__(self, value: Any, error: str) -> None:
        self.value = value
        self.error = error


def load_json(path: Path, b: SourceBuilder, records: str | None = None) -> Any:
    """Parse a whole-JSON file; a file that is not JSON is one rejected record (line 1) and ``...``.

    A record of the file (an element of the top-level list, or of the list under key ``records``)
    that is nested too deep or holds an integer beyond 64 bits is replaced by a :class:`BadRecord`
    for the adapter to reject by number (:func:`iter_records`); the other records are read.
    """
    with open_plain(path) as f:
        raw = f.read()
    try:
        value, bad = loads_document(raw, records)
    except RecordError as e:
        b.reject(1, text_of(raw), str(e))
        return ...
    except ValueError as e:
        b.reject(1, text_of(raw), f"$: invalid JSON: {e}")
        return ...
    if bad:
        recs = value if records is None else value[records]
        for i, error in bad.items():
            recs[i] = BadRecord(recs[i], error)
    return value


def records_of(value: Any, b: SourceBuilder, what: str) -> list[Any] | None:
    """A whole-JSON file holding a list of records (or one record): the records, else a reject."""
    if value is ...:
        return None
    if type(value) is list:
        return value
    if type(value) is dict:
        return [value]
    b.reject(1, value, f"$: expected a list of {what} or one {what}, got {json_type(value)}")
    return None


def iter_records(records: list[Any] | None, b: SourceBuilder, counter: str) -> Iterator[tuple[int, Any]]:
    """``(1-based number, record)`` of a whole-JSON file's records, counting each in ``counter``;
    a :class:`BadRecord` is rejected here with its number and reason, and not yielded."""
    for number, rec in enumerate(records or (), 1):
        b.counts[counter] += 1
        if type(rec) is BadRecord:
            b.reject(number, rec.value, rec.error)
            continue
        yield number, rec


def batched(b: SourceBuilder) -> SourceResult | None:
    """A result when the builder holds a full batch (sources with many conversations per file)."""
    return b.result() if len(b) >= BATCH_CONVERSATIONS else None


def parse_jsonish(text: str) -> Any:
    """Parse JSON text held in a string field (tool call values, ``tools``); ``...`` when it is not
    JSON or is nested deeper than :data:`~pipeline.formats.MAX_DEPTH` (the text is then kept)."""
    return loads_nested(text)


__all__ = [
    "BATCH_CONVERSATIONS",
    "BadRecord",
    "SourceBuilder",
    "SourceResult",
    "batched",
    "check_options",
    "gc_paused",
    "iter_jsonl",
    "iter_records",
    "load_json",
    "meta_text",
    "open_plain",
    "parse_jsonish",
    "records_of",
    "text_of",
]


@contextlib.contextmanager
def open_plain(url: str | os.PathLike[str]) -> Iterator[IO[bytes]]:
    """A local file or URL as its plain bytes: decompressed as a stream when it is gzip, zstd, bzip2
    or xz (told from its first bytes, not its name), so an agent log reads the same compressed or not."""
    with open_input(url) as f:
        compression = compression_of(f.read(6))
        f.seek(0)
        stream = decompressed(f, compression)
        try:
            yield stream
        finally:
            if stream is not f:
                stream.close()
