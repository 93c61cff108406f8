"""ShareGPT rows (``{"conversations": [{"from", "value"}], "system"?, "tools"?, ...}``) in a JSON list
or JSON Lines file, decoded by the sharegpt codec as they are: one conversation per row.

The codec keeps the row exactly (``from`` tags, ``function_call`` / ``observation`` turns, the
``tools`` JSON string, any other column in ``extra_json``), so provenance only adds the source and
``meta_json.record`` (1-based row number, also the ``source_line``; for JSONL the file line).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from pipeline.sources._base import (
    SourceBuilder,
    SourceResult,
    batched,
    check_options,
    gc_paused,
    iter_jsonl,
    iter_records,
    load_json,
    open_plain,
    records_of,
)

NAME = "sharegpt"
OPTIONS: dict[str, type] = {}


def sniff(obj: Any) -> bool:
    return type(obj) is dict and type(obj.get("conversations")) is list


def rows(path: Path, b: SourceBuilder) -> Iterator[tuple[int, Any]]:
    """``(line or 1-based row number, row)`` of a JSON list file or a JSON Lines file."""
    with open_plain(path) as f:
        head = f.read(64).lstrip()
    if head.startswith(b"["):
        yield from iter_records(records_of(load_json(path, b), b, "rows"), b, "records_read")
    else:
        for n, _raw, row in iter_jsonl(path, b):
            b.counts["records_read"] += 1
            yield n, row


def read_rows(
    name: str, path: Path, add_row: Callable[[SourceBuilder, int, Any], None]
) -> Iterator[SourceResult]:
    """The loop every row-per-conversation dataset shares, in batches."""
    b = SourceBuilder(name, path)
    with gc_paused():
        for number, row in rows(path, b):
            add_row(b, number, row)
            out = batched(b)
            if out is not None:
                yield out
    yield b.result(final=True)


def add_sharegpt(b: SourceBuilder, number: int, row: Any) -> None:
    if type(row) is not dict or "conversations" not in row:
        b.reject(number, row, "broken envelope: a ShareGPT row is an object with 'conversations'")
        return
    b.add("sharegpt", row, line=number, anchor=b"row", meta={"record": number})


def read(path: Path, **options: Any) -> Iterator[SourceResult]:
    """Read one ShareGPT file: one conversation per row."""
    check_options(NAME, options, OPTIONS)
    return read_rows(NAME, path, add_sharegpt)
