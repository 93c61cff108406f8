"""JSONL input in line-aligned byte ranges, so workers can decode chunks independently.

The parent only finds where chunks start and how many lines come before them; each worker reads
its own byte range from the file. Sending the bytes instead would copy every input byte through
pickling and a pipe four more times (parent pickle, pipe, worker buffer, unpickle).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

DEFAULT_CHUNK_BYTES = 8 << 20


@dataclass(frozen=True)
class Chunk:
    """Whole lines ``first_line ..`` of ``source_file`` (1-based): ``size`` bytes from byte ``offset``."""

    source_file: str
    first_line: int
    offset: int
    size: int

    def read(self) -> bytes:
        """The chunk's bytes; raises ``OSError`` when the file no longer holds them (changed meanwhile)."""
        with open(self.source_file, "rb") as f:
            f.seek(self.offset)
            data = f.read(self.size)
        if len(data) != self.size:
            raise OSError(
                f"{self.source_file}: input changed while it was read "
                f"(expected {self.size} bytes at offset {self.offset}, got {len(data)})"
            )
        return data

    def lines(self) -> list[bytes]:
        """The chunk's lines without their newlines (a final line without one is kept)."""
        lines = self.read().split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        return lines


def iter_chunks(path: str | Path, chunk_bytes: int = DEFAULT_CHUNK_BYTES) -> Iterator[Chunk]:
    """Yield line-aligned chunks of about ``chunk_bytes``; a final line without newline is kept.

    A chunk ends at the last newline before a multiple of ``chunk_bytes`` (the next multiple that
    has one, after a longer line), so chunks, and the row groups written from them, depend only on
    the file. The file is read once, into one reused buffer.
    """
    name = str(path)
    line = 1
    offset = 0
    buf = bytearray(chunk_bytes)
    with open(path, "rb") as f:
        while True:
            end = (offset // chunk_bytes + 1) * chunk_bytes
            while True:
                want = end - offset
                if len(buf) < want:
                    buf = bytearray(want)
                f.seek(offset)
                n = f.readinto(memoryview(buf)[:want])
                cut = buf.rfind(b"\n", 0, n)
                if cut >= 0 or n < want:  # a newline, or the end of the file
                    break
                end += chunk_bytes  # no newline before this multiple: a longer line
            if n == 0:
                return
            if cut < 0:
                yield Chunk(name, line, offset, n)  # the last line, without newline
                return
            yield Chunk(name, line, offset, cut + 1)
            line += buf.count(b"\n", 0, cut + 1)
            offset += cut + 1
