"""Native vs Python decode of the same lines: the helper every native test uses.

Not a test module: ``test_differential.py`` and ``fuzz_native.py`` (which runs outside pytest,
under AddressSanitizer) both call :func:`compare`.
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline import codec
from pipeline.formats import DecodeResult, decode_lines


@contextmanager
def python_codec() -> Iterator[None]:
    """Force the pure-Python codec for the duration (CHATLAKE_NATIVE=0)."""
    old = os.environ.get(codec.ENV)
    os.environ[codec.ENV] = "0"
    try:
        yield
    finally:
        if old is None:
            del os.environ[codec.ENV]
        else:
            os.environ[codec.ENV] = old


def parquet_bytes(table: pa.Table) -> bytes:
    buf = io.BytesIO()
    pq.write_table(table, buf)
    return buf.getvalue()


def layout(table: pa.Table) -> list[tuple[str, list[int]]]:
    """Each column's chunk lengths: what the table's values and schema do not show.

    The tables are not compared as Arrow IPC bytes: the bits of a validity bitmap past the array's
    length are unspecified in Arrow, and pyarrow's builders leave them as the heap had them (on a
    reused glibc heap a Python-built bitmap's last byte read 0xfe where the native one read 0x00).
    """
    return [(name, [len(c) for c in table.column(name).chunks]) for name in table.column_names]


def compare(
    lines: Sequence[bytes], fmt: str = "responses", *, source_file: str | None = None, first_line: int = 1
) -> DecodeResult:
    """Decode ``lines`` both ways; raise AssertionError at the first difference; return the native
    result (its ``native_fallback`` says how many lines the native decoder handed back)."""
    assert codec.native_module(fmt) is not None, "the native decoder is not active"
    lines = list(lines)
    native = decode_lines(lines, fmt, source_file=source_file, first_line=first_line)
    with python_codec():
        python = decode_lines(lines, fmt, source_file=source_file, first_line=first_line)
    assert python.native_fallback == {}
    assert [r.to_json() for r in native.rejected] == [r.to_json() for r in python.rejected]
    assert native.blank_lines == python.blank_lines
    assert native.table.schema.equals(python.table.schema, check_metadata=True)
    if not native.table.equals(python.table):
        raise AssertionError(f"tables differ: {first_difference(native.table, python.table)}")
    assert parquet_bytes(native.table) == parquet_bytes(python.table), "Parquet bytes differ"
    assert layout(native.table) == layout(python.table), "chunk layouts differ"
    read = sum(1 for line in lines if line.strip())
    assert native.table.num_rows + len(native.rejected) == read, "read != written + rejected"
    return native


def first_difference(a: pa.Table, b: pa.Table) -> str:
    """Where two tables of one schema first differ (column, row, both values), for messages."""
    if a.num_rows != b.num_rows:
        return f"{a.num_rows} rows vs {b.num_rows}"
    for name in a.column_names:
        x, y = a.column(name).to_pylist(), b.column(name).to_pylist()
        for i, (u, v) in enumerate(zip(x, y, strict=True)):
            if u != v:
                return f"column {name}, row {i}:\n native {str(u)[:2000]}\n python {str(v)[:2000]}"
    return "equal values, different layout"
