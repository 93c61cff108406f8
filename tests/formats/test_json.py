"""pipeline.formats._json: the nesting limit and the 64-bit integer screen never raise past a record.

A value nested ~500 levels deep holding an integer beyond 64 bits once killed the whole job with a
RecursionError (the integer screen and the standard-library re-parse both recursed per level).
"""

from __future__ import annotations

import orjson
import pytest

from pipeline.formats import MAX_DEPTH, WIRE_FORMATS, decode_lines, encode_table
from pipeline.formats._common import RecordError
from pipeline.formats._json import deep_path, loads, loads_nested

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
