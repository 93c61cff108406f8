"""Compressed inputs: which compression a file uses, told from its first bytes (not its name), and
a stream that decompresses it as it is read (gzip, bzip2 and xz by the standard library, zstd by
pyarrow's codec), so memory stays one read whatever the file's size."""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import zlib
from typing import IO, Any

import pyarrow as pa

# First bytes of each compressed format (RFC 1952, zstd frame, bzip2, xz).
_MAGIC = (
    (b"\x1f\x8b", "gzip"),
    (b"\x28\xb5\x2f\xfd", "zstd"),
    (b"BZh", "bz2"),
    (b"\xfd7zXZ\x00", "xz"),
)
# Errors a decompressor raises on corrupt or truncated data.
DECOMPRESS_ERRORS = (OSError, EOFError, zlib.error, lzma.LZMAError, ValueError, pa.ArrowException)


def compression_of(head: bytes) -> str | None:
    """The compression of a file from its first bytes (``gzip``, ``zstd``, ``bz2``, ``xz``), else None."""
    for magic, name in _MAGIC:
        if head.startswith(magic):
            return name
    return None


def decompressed(f: IO[bytes], compression: str | None) -> IO[bytes]:
    """``f`` read through its decompressor, as a stream (``compression`` None: ``f`` itself)."""
    if compression is None:
        return f
    if compression == "gzip":
        return gzip.GzipFile(fileobj=f, mode="rb")
    if compression == "bz2":
        return bz2.BZ2File(f, "rb")
    if compression == "xz":
        return lzma.LZMAFile(f, "rb")
    if compression == "zstd":
        # buffered: lines can be iterated, as from the other decompressors
        return io.BufferedReader(_Raw(pa.CompressedInputStream(pa.PythonFile(f, mode="r"), "zstd")))
    raise ValueError(f"unknown compression {compression!r}")


class _Raw(io.RawIOBase):
    """A pyarrow input stream as a raw Python stream (for :class:`io.BufferedReader`)."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        data = self.stream.read(len(b))
        b[: len(data)] = data
        return len(data)
