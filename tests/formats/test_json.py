"""pipeline.formats._json: the nesting limit and the 64-bit integer screen never raise past a record.

A value nested ~500 levels deep holding an integer beyond 64 bits once killed the whole job with a
RecursionError (the integer screen and the standard-library re-parse both recursed per level).
"""

from __future__ import annotations

import contextlib

import orjson
import pytest

from pipeline.formats import MAX_DEPTH, WIRE_FORMATS, decode_lines, encode_table
from pipeline.formats._common import RecordError
from pipeline.formats._json import (
    BIG_INT_MESSAGE,
    OVERFLOW_MESSAGE,
    UNDERFLOW_MESSAGE,
    deep_path,
    loads,
    loads_document,
    loads_nested,
    record_spans,
)
from tests.native.differential import python_codec

BIG = "123456789012345678901234"
DEEP_MSG = f"nested deeper than {MAX_DEPTH} levels"
# one good record per wire format, and the key under which a nested value is kept verbatim
GOOD = {
    "responses": b'{"input": "hi"}',
    "chat": b'{"messages": [{"role": "user", "content": "hi"}]}',
    "anthropic": b'{"messages": [{"role": "user", "content": "hi"}]}',
    "hf": b'{"messages": [{"role": "user", "content": "hi"}]}',
    "sharegpt": b'{"conversations": [{"from": "human", "value": "hi"}]}',
}


def nested(levels: int, leaf: str = "1") -> bytes:
    """``levels`` arrays around ``leaf``."""
    return b"[" * levels + leaf.encode() + b"]" * levels


def with_value(fmt: str, value: bytes) -> bytes:
    """The format's good record plus a top-level key ``deep`` holding ``value`` (level 2)."""
    return GOOD[fmt][:-1] + b', "deep": ' + value + b"}"


@pytest.mark.parametrize("fmt", WIRE_FORMATS)
@pytest.mark.parametrize("levels", [500, 1000])
def test_deep_big_integer_rejects_its_record_alone(fmt: str, levels: int) -> None:
    res = decode_lines([GOOD[fmt], with_value(fmt, nested(levels, BIG)), GOOD[fmt]], fmt)
    [rej] = res.rejected
    assert rej.line == 2
    assert rej.error == "$.deep[0][0][0][0][0][0][0][0][0][0][0]...: " + DEEP_MSG
    assert res.table.column("source_line").to_pylist() == [1, 3]


@pytest.mark.parametrize("fmt", WIRE_FORMATS)
def test_deepest_accepted_record_is_written_and_encodes_back(fmt: str) -> None:
    """The record is level 1 and ``deep`` level 2: MAX_DEPTH - 1 arrays is exactly the limit."""
    res = decode_lines([with_value(fmt, nested(MAX_DEPTH - 1)), with_value(fmt, nested(MAX_DEPTH))], fmt)
    assert [(r.line, r.error.endswith(DEEP_MSG)) for r in res.rejected] == [(2, True)]
    [back] = encode_table(res.table, fmt)
    assert orjson.dumps(back["deep"]) == nested(MAX_DEPTH - 1)


@pytest.mark.parametrize("fmt", WIRE_FORMATS)
def test_beyond_orjson_read_limit_is_a_nesting_rejection(fmt: str) -> None:
    res = decode_lines([with_value(fmt, nested(1100))], fmt)
    assert [r.error for r in res.rejected] == [f"$: {DEEP_MSG} (more than 1024)"]


def test_big_integer_just_inside_the_limit_is_found_without_recursion() -> None:
    raw = b'{"a": ' + nested(MAX_DEPTH - 1, BIG) + b"}"
    with pytest.raises(RecordError) as e:
        loads(raw)
    assert e.value.path == "$.a" + "[0]" * (MAX_DEPTH - 1)


def test_depth_counts_objects_and_arrays_alike() -> None:
    value: object = 1
    for i in range(MAX_DEPTH):
        value = {"k": value} if i % 2 else [value]
    assert deep_path(value) is None
    assert deep_path([value]) == "$[0].k[0].k[0].k[0].k[0].k[0].k..."
    assert loads(orjson.dumps(value)) == value
    with pytest.raises(RecordError, match=DEEP_MSG):
        loads(orjson.dumps([value]))


def test_nested_json_text_too_deep_is_not_parsed() -> None:
    assert loads_nested("[[1]]") == [[1]]
    assert loads_nested(nested(MAX_DEPTH).decode()) == orjson.loads(nested(MAX_DEPTH))
    assert loads_nested(nested(MAX_DEPTH + 1).decode()) is ...
    assert loads_nested(nested(MAX_DEPTH + 1)) is ...
    assert loads_nested("not json") is ...


# Values orjson's parse would fold without a word: a duplicate key keeps the last value, 1e-400
# reads as 0.0; 1e400 fails the parse with a position rather than a path.
FOLDED = [
    (b'{"messages": [{"role": "user", "role": "assistant", "content": "x"}]}', "$.messages[0].role",
     "duplicate key 'role' (JSON pointer /messages/0/role)"),
    (b'{"messages": [{"role": "user", "content": "x"}], "a/b": {"k": 1, "k": 1}}', "$.a/b.k",
     "duplicate key 'k' (JSON pointer /a~1b/k)"),
    (b'{"messages": [{"role": "user", "content": "x"}], "t": 1e-400}', "$.t", UNDERFLOW_MESSAGE),
    (b'{"messages": [{"role": "user", "content": "x"}], "t": [-0.000e-999, 1E-400]}', "$.t[1]",
     UNDERFLOW_MESSAGE),
    (b'{"messages": [{"role": "user", "content": "x"}], "t": 1e400}', "$.t", OVERFLOW_MESSAGE),
    (b'{"messages": [{"role": "user", "content": "x"}], "t": -1.5E+309}', "$.t", OVERFLOW_MESSAGE),
]  # fmt: skip


@pytest.mark.parametrize(("raw", "path", "message"), FOLDED)
@pytest.mark.parametrize("fmt", ["chat", "anthropic", "hf"])
@pytest.mark.parametrize("native", [True, False], ids=["native", "python"])
def test_a_value_the_parse_would_fold_rejects_its_record_naming_it(
    fmt: str, raw: bytes, path: str, message: str, native: bool
) -> None:
    """Both codecs (the compiled decoder hands such a line to the Python one) say the same."""
    ok = GOOD[fmt]
    with contextlib.nullcontext() if native else python_codec():
        res = decode_lines([ok, raw, ok], fmt)
    assert [(r.line, r.error) for r in res.rejected] == [(2, f"{path}: {message}")]
    assert res.table.column("source_line").to_pylist() == [1, 3]


@pytest.mark.parametrize(
    "raw",
    [
        b'{"a": "x:y", "b": "\\u003a", "c": {"d": ":"}}',  # colons in strings, one escaped
        b'{"a": 1e-300, "b": 4.9e-324, "c": 1.7976931348623157e308, "d": 0e-999, "e": "1e-400"}',
        b'{"a": {"k": 1}, "b": {"k": 1}, "c": [{"k": 1}, {"k": 2}]}',  # the same key in two objects
        b'{"\\\\": 1, "a\\\\\\"": {"\\u003a": 2}}',  # keys ending in escapes
    ],
)
def test_values_kept_exactly_are_not_rejected(raw: bytes) -> None:
    assert loads(raw) == orjson.loads(raw)


def test_the_duplicate_screen_never_misses_one_hidden_behind_an_escaped_colon() -> None:
    """An escaped colon adds one to orjson's text and a dropped duplicate takes one away."""
    with pytest.raises(RecordError, match="duplicate key 'a'"):
        loads(b'{"a": 1, "b": "\\u003a", "a": 2}')


def test_nested_json_text_the_parse_would_fold_stays_text() -> None:
    assert loads_nested('{"a": 1, "a": 2}') is ...
    assert loads_nested("[1e-400]") is ...
    assert loads_nested("[1e400]") is ...
    assert loads_nested('{"a": 1e-5}') == {"a": 1e-5}


GOOD_DOC = b'{"input": "hi"}'


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        (b'{"input": "y", "t": 1e400}', "$[1].t: " + OVERFLOW_MESSAGE),
        (b'{"input": "y", "t": 1e-400}', "$[1].t: " + UNDERFLOW_MESSAGE),
        (b'{"input": "y", "d": ' + nested(1100) + b"}", f"$[1]: {DEEP_MSG} (more than 1024)"),
        (b'{"input": "y", "d": ' + nested(500) + b"}", "$[1].d" + "[0]" * 11 + "...: " + DEEP_MSG),
        (b'{"input": "y", "input": "z"}', "$[1].input: duplicate key 'input' (JSON pointer /input)"),
        (b'{"input": "y", "n": ' + BIG.encode() + b"}", "$[1].n: " + BIG_INT_MESSAGE),
    ],
)  # fmt: skip
def test_a_bad_record_of_a_json_array_is_rejected_alone(bad: bytes, reason: str) -> None:
    doc = b"[\n  " + GOOD_DOC + b",\n  " + bad + b" ,\n" + GOOD_DOC + b"]"
    value, rejected = loads_document(doc)
    assert rejected == {1: reason}
    assert value == [{"input": "hi"}, bad, {"input": "hi"}]  # the bad record as its own text


def test_a_bad_record_under_a_key_is_rejected_alone_and_one_outside_rejects_the_file() -> None:
    deep = b'{"id": 2, "x": ' + nested(1100) + b"}"
    value, rejected = loads_document(b'{"eval": {}, "samples": [{"id": 1}, ' + deep + b"]}", "samples")
    assert rejected == {1: f"$.samples[1]: {DEEP_MSG} (more than 1024)"}
    assert value == {"eval": {}, "samples": [{"id": 1}, deep]}
    with pytest.raises(RecordError, match=r"^\$\.eval\.t: number too large"):
        loads_document(b'{"eval": {"t": 1e400}, "samples": [{"id": 1}]}', "samples")
    with pytest.raises(RecordError, match=r"^\$\.eval\.k: duplicate key"):
        loads_document(b'{"eval": {"k": 1, "k": 2}, "samples": [{"id": 1, "x": 1e-400}]}', "samples")


def test_record_spans_skip_strings_and_nested_lists() -> None:
    doc = b' [ {"a": "],[\\"{"}, [1, [2, 3]] , "x,y" ,4]'
    spans = record_spans(doc, None)
    assert [doc[s:e] for s, e in spans or ()] == [b'{"a": "],[\\"{"}', b"[1, [2, 3]]", b'"x,y"', b"4"]
    assert record_spans(b"[]", None) == []
    assert record_spans(b'{"samples": 1}', "samples") is None
    assert record_spans(b'{"a": [9], "samples": [1, 2]}', "samples") == [(23, 24), (26, 27)]
