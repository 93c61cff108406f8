"""Column-at-a-time JSON helpers the vectorized encoders share.

The canonical table keeps unmodelled keys as JSON object text (``extra_json``). An encoder needs
their *names* (each dropped key is a loss) and, for a few modelled cases, one string value. DuckDB's
JSON functions read a whole column in C++; nothing here loops over rows in Python.

>>> import pyarrow as pa
>>> json_keys(pa.array(['{"a":1,"b/c":{"x":2}}', None])).to_pylist()
[['a', 'b/c'], None]
>>> import polars as pl
>>> pl.select(orjson_string(pl.lit('say "hi"\\n'))).item()
'"say \\\\"hi\\\\"\\\\n"'
"""

from __future__ import annotations

import duckdb
import polars as pl
import pyarrow as pa

_KEYS_SQL = "SELECT json_keys(t) AS k FROM src"
# $path is bound, never formatted into the text
_PROBE_SQL = "SELECT json_type(t, $path) AS kind, json_extract_string(t, $path) AS value FROM src"


_DB: duckdb.DuckDBPyConnection | None = None


def _run(sql: str, texts: pa.Array, params: dict[str, str] | None = None) -> pa.Table:
    # One in-memory database per process: opening one costs ~50 ms, a cursor on it next to nothing,
    # and each cursor is its own connection (its own registered "src"), so threads do not collide.
    global _DB
    if _DB is None:
        _DB = duckdb.connect()
    con = _DB.cursor()
    try:
        con.register("src", pa.table({"t": texts}))
        # A projection over one registered table keeps its row order (preserve_insertion_order).
        return con.sql(sql, params=params or None).to_arrow_table()
    finally:
        con.close()


def json_keys(texts: pa.Array) -> pa.Array:
    """The top-level keys of each JSON object text, in source order (null for a null text)."""
    if len(texts) == 0:
        return pa.array([], pa.list_(pa.string()))
    return _run(_KEYS_SQL, texts).column("k").combine_chunks()


def json_elements(texts: pa.Array) -> tuple[pa.Array, pa.Array]:
    """For each JSON text: its JSON type (``'ARRAY'``, ``'OBJECT'``, ...) and, for an array, its
    elements as JSON texts (equal values, not necessarily the same bytes: parse them before use)."""
    if len(texts) == 0:
        return pa.array([], pa.string()), pa.array([], pa.list_(pa.string()))
    out = _run("SELECT json_type(t) AS kind, json_extract(t, '$[*]') AS elements FROM src", texts)
    return out.column("kind").combine_chunks(), out.column("elements").combine_chunks().cast(
        pa.list_(pa.string())
    )


def json_member(texts: pa.Array, key: str) -> tuple[pa.Array, pa.Array]:
    """For each JSON object text: the JSON type of member ``key`` (null when absent; ``'NULL'`` for an
    explicit null, ``'VARCHAR'`` for a string, ...) and its value when it is a string."""
    if len(texts) == 0:
        return pa.array([], pa.string()), pa.array([], pa.string())
    out = _run(_PROBE_SQL, texts, {"path": "$." + key})
    return out.column("kind").combine_chunks(), out.column("value").combine_chunks()


# orjson's escaping: quote, backslash and the C0 controls (short forms where JSON has them, else
# \u00xx in lowercase hex); everything else, DEL and U+2028 included, is written as UTF-8.
_SHORT = {"\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}
_ESCAPE_FROM = ["\\", '"', *(chr(c) for c in range(0x20))]
_ESCAPE_TO = ["\\\\", '\\"', *(_SHORT.get(chr(c), f"\\u{c:04x}") for c in range(0x20))]


def orjson_string(expr: pl.Expr) -> pl.Expr:
    """A string column as JSON string literals, byte for byte what ``orjson.dumps`` writes."""
    return pl.concat_str(pl.lit('"'), expr.str.replace_many(_ESCAPE_FROM, _ESCAPE_TO), pl.lit('"'))


def json_pointer_token(expr: pl.Expr) -> pl.Expr:
    """A key as an RFC 6901 pointer segment with its slash (``'a/b'`` -> ``'/a~1b'``)."""
    escaped = expr.str.replace_all("~", "~0", literal=True).str.replace_all("/", "~1", literal=True)
    return pl.concat_str(pl.lit("/"), escaped)
