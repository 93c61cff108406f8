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

import itertools
from collections.abc import Callable

import duckdb
import numpy as np
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
_ESCAPES = dict(zip(_ESCAPE_FROM, _ESCAPE_TO, strict=True))


def orjson_string(expr: pl.Expr) -> pl.Expr:
    """A string column as JSON string literals, byte for byte what ``orjson.dumps`` writes."""
    return pl.concat_str(pl.lit('"'), expr.str.replace_many(_ESCAPE_FROM, _ESCAPE_TO), pl.lit('"'))


def _offsets(values: pa.Array) -> np.ndarray:
    """The offsets of a ``string`` or ``large_string`` array, as numpy over its buffer (no copy)."""
    width = 8 if pa.types.is_large_string(values.type) else 4
    dtype = np.int64 if width == 8 else np.int32
    return np.frombuffer(values.buffers()[1], dtype, len(values) + 1, values.offset * width)


def needs_escape(values: pa.Array) -> np.ndarray:
    """Per string (``string`` or ``large_string``): does orjson write it other than as its own bytes
    between quotes? False for a null.

    >>> needs_escape(pa.array(['plain', 'a"b', None, 'tab\\t', 'é\u2028', ''])).tolist()
    [False, True, False, True, False, False]
    """
    return _scan(values)[0]


def _scan(values: pa.Array) -> tuple[np.ndarray, list[str]]:
    """:func:`needs_escape`, and the characters to escape that occur (backslash first). Numpy passes
    over the bytes: UTF-8 continuation and lead bytes are >= 0x80, so a byte below 0x20, a quote or a
    backslash is always that character."""
    offsets = _offsets(values).astype(np.int64)
    if len(values) == 0 or offsets[-1] == offsets[0]:
        return np.zeros(len(values), bool), []
    data = np.frombuffer(values.buffers()[2], np.uint8)[offsets[0] : offsets[-1]]
    hit = np.empty(len(data) + 1, bool)
    hit[-1] = False  # reduceat's start of an empty string at the very end
    control = np.less(data, 0x20, out=hit[:-1])
    controls = np.unique(data[np.flatnonzero(control)]).tolist() if control.any() else []
    quote, backslash = data == ord('"'), data == ord("\\")
    present = ["\\"] * bool(backslash.any()) + ['"'] * bool(quote.any()) + [chr(c) for c in controls]
    hit[:-1] |= quote
    hit[:-1] |= backslash
    starts = offsets - offsets[0]
    # reduceat gives an empty range its first element: that element is another string's
    return np.logical_or.reduceat(hit, starts[:-1]) & (starts[1:] > starts[:-1]), present


class Pieces:
    """Text pieces for JSON written by gathering: literals and string columns in one pool, addressed by
    ``int32`` index, so a writer lays out the index of every piece of its output with numpy and copies
    the bytes once (:meth:`gather`) instead of concatenating nested parts level by level.

    Index 0 is the empty string: a writer gives every element a fixed number of slots and fills the
    ones it does not need with 0; :meth:`gather` drops them before copying.

    >>> p = Pieces()
    >>> valid, value = p.json_strings(pa.array(['a"b', None, "c"]))
    >>> q = p.choose(lambda quoted: '"' if quoted else "", valid)
    >>> index = np.array([p.literal("["), q[0], value[0], q[0], p.literal(","), value[1], p.literal(","),
    ...                   q[2], value[2], q[2], p.literal("]")], np.int32)
    >>> p.gather(index, np.array([0, len(index)])).to_pylist()
    ['["a\\\\"b",null,"c"]']
    """

    # literals come first in the pool, values after this many slots
    MAX_LITERALS = 4096

    def __init__(self) -> None:
        self._literals: dict[str, int] = {"": 0}
        self._chunks: list[pa.Array] = []
        self._size = self.MAX_LITERALS

    def literal(self, text: str) -> int:
        """The index of a literal piece."""
        if text not in self._literals:
            if len(self._literals) == self.MAX_LITERALS:
                raise ValueError("Pieces: too many distinct literals")
            self._literals[text] = len(self._literals)
        return self._literals[text]

    def choose(self, text: Callable[..., str], *flags: np.ndarray | bool) -> np.ndarray:
        """Per element, the literal ``text(*flags)`` (flags are booleans, arrays broadcast): every
        combination is made once, so ``text`` runs at most ``2 ** len(flags)`` times.

        >>> p = Pieces()
        >>> i = p.choose(lambda a, b: ("A" if a else "") + ("B" if b else "-"), np.array([1, 0], bool), True)
        >>> [p.text(j) for j in i]
        ['AB', 'B']
        """
        table = np.empty((2,) * len(flags), np.int32)
        for combo in itertools.product((0, 1), repeat=len(flags)):
            table[combo] = self.literal(text(*map(bool, combo)))
        return table[tuple(np.asarray(f, bool).astype(np.intp) for f in flags)]

    def text(self, index: int) -> str:
        """The text of a literal (for tests and doctests)."""
        return next(t for t, i in self._literals.items() if i == index)

    def add(self, values: pa.Array) -> np.ndarray:
        """Put ``values`` in the pool as they are (JSON text already); returns the index of each."""
        base = self._size
        self._chunks.append(values.cast(pa.large_string()))
        self._size += len(values)
        return np.arange(base, self._size, dtype=np.int32)

    def json_strings(self, values: pa.Array) -> tuple[np.ndarray, np.ndarray]:
        """``values`` as orjson writes them, without the quotes: per value, is it a string (to quote),
        and the index of its escaped text (of ``null`` for a null).

        Only the strings with a character to escape are escaped, and only they are copied into the
        pool; the others are referenced as they are.
        """
        index = self.add(values)
        need, present = _scan(values)
        if need.any():
            subset = pl.Series(values.filter(pa.array(need)))
            # one literal pass per character that occurs (usually newline and quote) is about twice
            # as fast as replace_many over all 34; the backslash goes first, as the others add some
            for char in present:
                subset = subset.str.replace_all(char, _ESCAPES[char], literal=True)
            index[need] = self.add(subset.to_arrow())
        valid = values.is_valid().to_numpy(zero_copy_only=False)
        index[~valid] = self.literal("null")
        return valid, index

    def gather(self, index: np.ndarray, bounds: np.ndarray, *, narrow: bool = True) -> pa.Array:
        """The pieces ``index`` names, in that order, cut into strings at piece positions ``bounds``
        (``bounds[i]:bounds[i + 1]`` is string ``i``): one ``large_string`` array, bytes copied once.

        ``narrow`` gathers with 32-bit offsets while the text fits in them (half the offsets to write
        for millions of pieces), else with 64-bit ones; ``narrow=False`` always uses 64-bit ones.
        """
        literals = [""] * self.MAX_LITERALS
        for text, i in self._literals.items():
            literals[i] = text
        pool = pa.concat_arrays([pa.array(literals, pa.large_string()), *self._chunks])
        # an empty piece costs a step of the copy loop: drop them, counting what each string keeps
        keep = index != 0
        kept = np.zeros(len(index) + 1, np.int64)
        np.cumsum(keep, out=kept[1:])
        picks = pa.array(index[keep], pa.int32())
        taken = None
        if narrow:
            try:
                taken = pool.cast(pa.string()).take(picks)
            except (pa.ArrowInvalid, pa.ArrowCapacityError):  # the pool or the result is over 2 GiB
                taken = None
        if taken is None:
            taken = pool.take(picks)
        offsets = _offsets(taken)
        data = taken.buffers()[2] or pa.py_buffer(b"")  # no buffer when every piece is empty
        # the strings share the gathered bytes: only their offsets are new
        return pa.LargeStringArray.from_buffers(
            len(bounds) - 1, pa.py_buffer(offsets[kept[bounds]].astype(np.int64)), data
        )


def json_pointer_token(expr: pl.Expr) -> pl.Expr:
    """A key as an RFC 6901 pointer segment with its slash (``'a/b'`` -> ``'/a~1b'``)."""
    escaped = expr.str.replace_all("~", "~0", literal=True).str.replace_all("/", "~1", literal=True)
    return pl.concat_str(pl.lit("/"), escaped)
