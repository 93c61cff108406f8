"""One Parquet file from whole Parquet files appended one after the other, each byte written once.

A Parquet file is ``PAR1``, its row groups' column chunks, then the footer: a Thrift
(compact protocol) ``FileMetaData`` that lists every row group with the absolute file offsets
of its pages, its length (4 bytes, little endian) and ``PAR1`` again. Column chunk bytes hold
no absolute offset, so the column chunks of several files written by the same writer options
can be laid end to end; only the footer changes: the row groups of all of them, their offsets
shifted to where their bytes now sit, ``ordinal`` renumbered and ``num_rows`` summed.

This is how the single-file layout (engine/single_file.py) builds ``FILE.parquet`` and its side
files: each shard's rows are written to Parquet in memory by the worker, the parent appends the
column chunks to the file in shard order, and the footer is written once at the end. The result
is the file one ``ParquetWriter`` would have written from the same tables in the same order
(``tests/io/test_parquet_concat.py`` compares the bytes).

Thrift compact protocol (only what a Parquet footer uses): a field header is one byte
``(id delta << 4) | type`` (or the type, then the id as a zigzag varint); integers are zigzag
varints, binaries a varint length then the bytes, lists a header ``(size << 4) | element type``
(size 15 and over: ``0xF0 | type`` then a varint size). A parsed struct keeps its fields in
order, so writing it back gives the same bytes.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any

MAGIC = b"PAR1"

# compact protocol types
_STOP, _TRUE, _FALSE, _BYTE, _I16, _I32, _I64, _DOUBLE, _BINARY, _LIST, _SET, _MAP, _STRUCT = range(13)
_UUID = 13

# FileMetaData: 3 num_rows, 4 row_groups; RowGroup: 1 columns, 5 file_offset, 7 ordinal;
# ColumnChunk: 2 file_offset, 3 meta_data, 4 offset_index_offset, 6 column_index_offset;
# ColumnMetaData: 9 data_page_offset, 10 index_page_offset, 11 dictionary_page_offset,
# 14 bloom_filter_offset
_NUM_ROWS, _ROW_GROUPS = 3, 4
_RG_COLUMNS, _RG_FILE_OFFSET, _RG_ORDINAL = 1, 5, 7
_CC_OFFSETS, _CC_META = (2, 4, 6), 3
_CMD_OFFSETS = (9, 10, 11, 14)


@dataclass
class Struct:
    """A Thrift struct as read: ``(field id, type, value)`` in wire order."""

    fields: list[list[Any]] = field(default_factory=list)

    def get(self, fid: int) -> Any:
        for f in self.fields:
            if f[0] == fid:
                return f[2]
        return None

    def set(self, fid: int, value: Any) -> None:
        for f in self.fields:
            if f[0] == fid:
                f[2] = value
                return
        raise KeyError(fid)


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def byte(self) -> int:
        b = self.data[self.pos]
        self.pos += 1
        return b

    def varint(self) -> int:
        out = shift = 0
        while True:
            b = self.byte()
            out |= (b & 0x7F) << shift
            if not b & 0x80:
                return out
            shift += 7

    def zigzag(self) -> int:
        n = self.varint()
        return (n >> 1) ^ -(n & 1)

    def value(self, t: int) -> Any:
        if t in (_TRUE, _FALSE):  # inside a list: one byte
            return self.byte() == _TRUE
        if t == _BYTE:
            return self.byte()
        if t in (_I16, _I32, _I64):
            return self.zigzag()
        if t == _DOUBLE:
            self.pos += 8
            return self.data[self.pos - 8 : self.pos]
        if t == _BINARY:
            n = self.varint()
            self.pos += n
            return self.data[self.pos - n : self.pos]
        if t == _UUID:
            self.pos += 16
            return self.data[self.pos - 16 : self.pos]
        if t in (_LIST, _SET):
            head = self.byte()
            n, et = head >> 4, head & 0x0F
            if n == 15:
                n = self.varint()
            return (et, [self.value(et) for _ in range(n)])
        if t == _MAP:
            n = self.varint()
            if not n:
                return (0, 0, [])
            kv = self.byte()
            kt, vt = kv >> 4, kv & 0x0F
            return (kt, vt, [(self.value(kt), self.value(vt)) for _ in range(n)])
        if t == _STRUCT:
            return self.struct()
        raise ValueError(f"not a Parquet footer: Thrift type {t} at byte {self.pos}")

    def struct(self) -> Struct:
        s = Struct()
        last = 0
        while True:
            head = self.byte()
            t = head & 0x0F
            if t == _STOP:
                return s
            delta = head >> 4
            fid = last + delta if delta else self.zigzag()
            last = fid
            value = (t == _TRUE) if t in (_TRUE, _FALSE) else self.value(t)
            s.fields.append([fid, t, value])


def _varint(n: int, out: bytearray) -> None:
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


def _zigzag(n: int, out: bytearray) -> None:
    _varint((n << 1) ^ (n >> 63), out)


def _write_value(t: int, v: Any, out: bytearray) -> None:
    if t in (_TRUE, _FALSE):
        out.append(_TRUE if v else _FALSE)
    elif t == _BYTE:
        out.append(v)
    elif t in (_I16, _I32, _I64):
        _zigzag(v, out)
    elif t in (_DOUBLE, _UUID):
        out += v
    elif t == _BINARY:
        _varint(len(v), out)
        out += v
    elif t in (_LIST, _SET):
        et, items = v
        if len(items) < 15:
            out.append((len(items) << 4) | et)
        else:
            out.append(0xF0 | et)
            _varint(len(items), out)
        for item in items:
            _write_value(et, item, out)
    elif t == _MAP:
        kt, vt, pairs = v
        _varint(len(pairs), out)
        if pairs:
            out.append((kt << 4) | vt)
            for k, val in pairs:
                _write_value(kt, k, out)
                _write_value(vt, val, out)
    elif t == _STRUCT:
        _write_struct(v, out)
    else:
        raise ValueError(f"Thrift type {t}")


def _write_struct(s: Struct, out: bytearray) -> None:
    last = 0
    for fid, t, v in s.fields:
        if t in (_TRUE, _FALSE):
            t = _TRUE if v else _FALSE
        delta = fid - last
        if 0 < delta <= 15:
            out.append((delta << 4) | t)
        else:
            out.append(t)
            _zigzag(fid, out)
        last = fid
        if t not in (_TRUE, _FALSE):
            _write_value(t, v, out)
    out.append(_STOP)


def parse_footer(footer: bytes) -> Struct:
    """The ``FileMetaData`` of a footer's Thrift bytes."""
    return _Reader(footer).struct()


def write_footer(meta: Struct) -> bytes:
    """A ``FileMetaData``'s Thrift bytes (the inverse of :func:`parse_footer`)."""
    out = bytearray()
    _write_struct(meta, out)
    return bytes(out)


def split(data: bytes | memoryview) -> tuple[memoryview, bytes]:
    """``(column chunks, footer)`` of one whole Parquet file: the bytes between the leading magic
    and the footer (they start at offset 4 of that file), and the footer's Thrift bytes."""
    view = memoryview(data)
    if len(view) < 12 or view[:4] != MAGIC or view[-4:] != MAGIC:
        raise ValueError("not a whole Parquet file (no PAR1 at both ends)")
    n = int.from_bytes(view[-8:-4], "little")
    end = len(view) - 8 - n
    return view[4:end], bytes(view[end : len(view) - 8])


def _shift(s: Struct, fids: tuple[int, ...], delta: int) -> None:
    for f in s.fields:
        if f[0] in fids and f[2] > 0:  # 0: an offset the writer leaves unset (a column chunk's file_offset)
            f[2] += delta


def row_groups(footer: bytes, at: int) -> list[Struct]:
    """The row groups of a file's footer, as they read once its column chunks sit at byte ``at``
    of another file (they were at byte 4 of their own)."""
    meta = parse_footer(footer)
    groups = meta.get(_ROW_GROUPS)
    if groups is None:
        return []
    delta = at - 4
    for rg in groups[1]:
        _shift(rg, (_RG_FILE_OFFSET,), delta)
        for cc in rg.get(_RG_COLUMNS)[1]:
            _shift(cc, _CC_OFFSETS, delta)
            cmd = cc.get(_CC_META)
            if cmd is not None:
                _shift(cmd, _CMD_OFFSETS, delta)
    return list(groups[1])


def merged_footer(first: bytes, groups: list[Struct]) -> bytes:
    """The footer of the joined file: ``first``'s (schema, key-value metadata, writer) with
    ``groups`` as its row groups, renumbered, and their rows summed; then the length and magic."""
    meta = parse_footer(first)
    rows = 0
    for k, rg in enumerate(groups):
        rows += rg.get(3)  # RowGroup.num_rows
        if rg.get(_RG_ORDINAL) is not None:
            rg.set(_RG_ORDINAL, k)
    meta.set(_NUM_ROWS, rows)
    if meta.get(_ROW_GROUPS) is not None:
        meta.set(_ROW_GROUPS, (_STRUCT, groups))
    body = write_footer(meta)
    return body + struct.pack("<I", len(body)) + MAGIC
