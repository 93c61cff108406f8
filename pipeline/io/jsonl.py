"""JSONL input in line-aligned byte chunks, so workers can decode chunks independently."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

DEFAULT_CHUNK_BYTES = 8 << 20


@dataclass(frozen=True)
class Chunk:
    """Whole lines ``first_line ..`` of ``source_file`` (1-based), as raw bytes."""

    source_file: str
    first_line: int
    data: bytes

    def lines(self) -> list[bytes]:
        lines = self.data.split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        return lines


def iter_chunks(path: str | Path, chunk_bytes: int = DEFAULT_CHUNK_BYTES) -> Iterator[Chunk]:
    """Yield line-aligned chunks of about ``chunk_bytes``; a final line without newline is kept."""
    name = str(path)
    line = 1
    rest = b""
    with open(path, "rb") as f:
        while True:
            block = f.read(chunk_bytes)
            if not block:
                break
            block = rest + block
            cut = block.rfind(b"\n")
            if cut < 0:
                rest = block
                continue
            data, rest = block[: cut + 1], block[cut + 1 :]
            yield Chunk(name, line, data)
            line += data.count(b"\n")
    if rest:
        yield Chunk(name, line, rest)
