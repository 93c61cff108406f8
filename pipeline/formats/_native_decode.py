"""The compiled decoder's side of :func:`pipeline.formats.decode_lines`: call ``pipeline._native``,
assemble its buffers into the canonical table column at a time, and decode the lines it hands back
(fallbacks) with the Python decoder, keeping line order.

The C walks (``pipeline/_native/decode.c``; Responses, Chat and Anthropic) return, per column path
(``items.content.text``), the length, null count, validity bitmap and buffers of an Arrow array;
``pa.Array.from_buffers`` wraps them without a copy. Item fingerprints are computed the way the
Python path does (:func:`pipeline.formats._build.item_struct`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from types import ModuleType
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa

from pipeline.formats._build import item_struct
from pipeline.schema import BLOCK, CONVERSATION_SCHEMA, INSTRUCTIONS, ITEM

_BLOCK_LIST = pa.list_(pa.field("item", BLOCK))
_NAMES = pa.list_(pa.field("item", pa.string()))


class NativeDecode(NamedTuple):
    table: pa.Table
    rejected: list[Any]
    blank_lines: int
    fallback: dict[str, int]


# What the Python decoder runs on the fallback lines: (lines, source_file, line numbers) -> result
PythonLines = Callable[[list[bytes], str | None, list[int]], Any]


def _buf(b: bytes | None) -> pa.Buffer | None:
    return None if b is None else pa.py_buffer(b)


class _Columns:
    """Typed access to the C result's column buffers."""

    def __init__(self, cols: dict[str, Any]) -> None:
        self.cols = cols

    def string(self, name: str) -> pa.Array:
        n, nulls, valid, offsets, data = self.cols[name]
        return pa.Array.from_buffers(pa.string(), n, [_buf(valid), _buf(offsets), _buf(data)], nulls)

    def int32(self, name: str) -> pa.Array:
        n, nulls, valid, values = self.cols[name]
        return pa.Array.from_buffers(pa.int32(), n, [_buf(valid), _buf(values)], nulls)

    def list_of(self, name: str, values: pa.Array, type_: pa.DataType) -> pa.Array:
        n, nulls, valid, offsets = self.cols[name]
        return pa.Array.from_buffers(type_, n, [_buf(valid), _buf(offsets)], nulls, children=[values])

    def names(self, name: str) -> pa.Array:
        """A ``null_fields`` list<string> column."""
        return self.list_of(name, self.string(f"{name}.item"), _NAMES)

    def blocks(self, name: str) -> pa.Array:
        """A ``list<Block>`` column (``instructions.content``, ``items.content``, ``items.summary``)."""
        fields = [
            self.names(f"{name}.null_fields") if f.name == "null_fields" else self.string(f"{name}.{f.name}")
            for f in BLOCK
        ]
        return self.list_of(name, pa.StructArray.from_arrays(fields, fields=list(BLOCK)), _BLOCK_LIST)


def _table(cols: dict[str, Any]) -> pa.Table:
    c = _Columns(cols)
    n = cols["rows"]
    arrays: dict[str, pa.Array] = {}
    for f in ITEM:
        if f.name in ("group", "part"):
            arrays[f.name] = c.int32(f"items.{f.name}")
        elif f.name in ("content", "summary"):
            arrays[f.name] = c.blocks(f"items.{f.name}")
        elif f.name == "null_fields":
            arrays[f.name] = c.names("items.null_fields")
        elif f.name != "fingerprint":
            arrays[f.name] = c.string(f"items.{f.name}")
    items = c.list_of("items", item_struct(arrays), CONVERSATION_SCHEMA.field("items").type)
    instructions = pa.StructArray.from_arrays(
        [c.string("instructions.form"), c.blocks("instructions.content")], fields=list(INSTRUCTIONS)
    )
    line = pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(cols["source_line"])], 0)
    columns = {
        "source_line": line,
        "instructions": instructions,
        "items": items,
        "null_fields": c.names("null_fields"),
        "n_items": c.int32("n_items"),
        "provenance": pa.nulls(n, CONVERSATION_SCHEMA.field("provenance").type),
    }
    return pa.Table.from_arrays(
        [columns[name] if name in columns else c.string(name) for name in CONVERSATION_SCHEMA.names],
        schema=CONVERSATION_SCHEMA,
    )


def decode(
    native: ModuleType,
    fmt: str,
    lines: Iterable[bytes],
    source_file: str | None,
    first_line: int,
    python_lines: PythonLines,
) -> NativeDecode:
    """Decode ``fmt`` lines natively; the lines it cannot prove exact go to ``python_lines``."""
    lines = lines if type(lines) is list else list(lines)
    file = None if source_file is None else source_file.encode()
    out = native.decode_lines(fmt, lines, file, first_line)
    if out is None:  # a column passed 2 GiB (int32 offsets): the whole batch in Python
        res = python_lines(lines, source_file, list(range(first_line, first_line + len(lines))))
        return NativeDecode(res.table, res.rejected, res.blank_lines, {"batch_too_large": len(lines)})
    cols, blank, fallbacks = out
    table = _table(cols)
    if not fallbacks:
        return NativeDecode(table, [], blank, {})
    index = [i for i, _ in fallbacks]
    res = python_lines([lines[i] for i in index], source_file, [first_line + i for i in index])
    counts = dict(Counter(reason for _, reason in fallbacks))
    if res.table.num_rows == 0:
        return NativeDecode(table, res.rejected, blank, counts)
    rejected_lines = {r.line for r in res.rejected}
    python_rows = np.array([i for i in index if first_line + i not in rejected_lines], np.int64)
    return NativeDecode(_merge(table, np.frombuffer(cols["row_index"], np.int64), res.table, python_rows),
                        res.rejected, blank, counts)  # fmt: skip


def _merge(native: pa.Table, native_rows: np.ndarray, python: pa.Table, python_rows: np.ndarray) -> pa.Table:
    """The two decoders' rows in line order (``*_rows``: each row's line index, ascending), as one chunk.

    Cut and concatenated in runs (a run of Python rows goes between two slices of native rows), not
    ``take``n row by row: gathering nested lists costs ~5-40x more than copying slices.
    """
    cut = np.searchsorted(native_rows, python_rows)  # native rows before each Python row
    starts = np.flatnonzero(np.diff(cut, prepend=-1))  # Python runs: no native row between their rows
    ends = np.append(starts[1:], len(python_rows))[: len(starts)]
    pieces, done = [], 0
    for a, z in zip(starts.tolist(), ends.tolist(), strict=True):
        pieces += [native.slice(done, int(cut[a]) - done), python.slice(a, z - a)]
        done = int(cut[a])
    pieces.append(native.slice(done))
    return pa.concat_tables(pieces).combine_chunks()
