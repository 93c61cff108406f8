"""decode_lines itself: what reaches the codecs, and records that must be rejected whole.

Every case here once ended in a silently inexact value, a row left behind by a rejected record, or
a crash of the whole batch.
"""

from __future__ import annotations

import orjson
import pytest

from pipeline.formats import MAX_DEPTH, decode_lines
from pipeline.formats._build import dumps
from tests.helpers import json_diff

BIG = "integer outside the 64-bit range cannot be stored exactly"
DEEP = "[" * 300 + "]" * 300  # orjson reads 1024 levels but writes 254: past MAX_DEPTH


@pytest.mark.parametrize(
    ("number", "error"),
    [
        ("18446744073709551615", None),  # 2**64 - 1: read exactly
        ("18446744073709551616", f"$.n: {BIG}"),
        ("-9223372036854775808", None),  # -2**63
        ("-9223372036854775809", f"$.n: {BIG}"),  # 19 digits: was stored as a float
        ("-1000000000000000000", None),
        ("123456789012345678901234", f"$.n: {BIG}"),
        ("1.2345678901234567890123", None),  # a float in the source stays a float
        ('"-9223372036854775809"', None),  # digits in a string are text
    ],
)
def test_integers_outside_64_bits_are_rejected_never_rounded(number: str, error: str | None) -> None:
    res = decode_lines([f'{{"input": "hi", "n": {number}}}'.encode()], "responses")
    assert [r.error for r in res.rejected] == ([error] if error else [])
    if error is None:
        [extra] = res.table.column("extra_json").to_pylist()
        assert json_diff(orjson.loads(extra), orjson.loads(f'{{"n": {number}}}')) is None


@pytest.mark.parametrize(
    ("fmt", "line"),
    [
        ("responses", f'{{"deep": {DEEP}, "input": "x"}}'),
        ("responses", f'{{"tools": {DEEP}, "input": "x"}}'),
        ("chat", f'{{"messages": [], "deep": {DEEP}}}'),
        ("sharegpt", f'{{"system": {DEEP}, "conversations": []}}'),
        ("sharegpt", f'{{"tools": {DEEP}, "conversations": [{{"from": "human", "value": "v"}}]}}'),
    ],
)
def test_a_top_level_value_that_cannot_be_written_rejects_its_record_alone(fmt: str, line: str) -> None:
    """Such a record once left a partial row behind (the whole batch then failed to build) or was
    both written and rejected."""
    good = b'{"input": "ok"}' if fmt == "responses" else b'{"messages": []}'
    if fmt == "sharegpt":
        good = b'{"conversations": [], "tools": ""}'
    res = decode_lines([good, line.encode(), good], fmt)
    [rej] = res.rejected
    assert rej.line == 2 and rej.error.endswith(f"...: nested deeper than {MAX_DEPTH} levels")
    assert res.table.column("source_line").to_pylist() == [1, 3]


def test_anthropic_response_with_a_non_string_role_keeps_it_verbatim() -> None:
    """A role object once reached the string column and failed the whole batch."""
    rec = {"role": {"a": 1}, "content": [{"type": "text", "text": "hi"}]}
    res = decode_lines([orjson.dumps(rec)], "anthropic")
    assert res.rejected == []
    [item] = res.table.column("items")[0].as_py()
    assert item["role"] is None
    assert orjson.loads(res.table.column("extra_json")[0].as_py()) == {"role": {"a": 1}}


@pytest.mark.parametrize("line", [b"", b" ", b"\t\r\n", b"\x0b\x0c", b"  \n"])
def test_blank_lines_are_counted_not_rejected(line: bytes) -> None:
    res = decode_lines([line, b'{"input": "x"}'], "responses")
    assert (res.blank_lines, res.rejected, res.table.num_rows) == (1, [], 1)


def test_leading_whitespace_does_not_make_a_line_blank() -> None:
    res = decode_lines([b' \t{"input": "x"}'], "responses")
    assert (res.blank_lines, res.table.num_rows) == (0, 1)


def test_dumps_is_compact_exact_json_text() -> None:
    value = {"b": 1.0, "a": [1, "é", None, True], "c": -0.0}
    assert dumps(value) == '{"b":1.0,"a":[1,"é",null,true],"c":-0.0}'
    assert type(dumps([])) is str
