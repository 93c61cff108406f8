"""The compiled Responses decoder against the Python one: same table (values, Parquet bytes, chunk
layout), same rejected lines, same counts, on every source of records the project has.

Each test also bounds how many lines went back to the Python decoder, so a native decoder that
quietly handed everything back would fail here rather than pass by comparing Python with itself.
"""

from __future__ import annotations

import random
import struct

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline import codec, synth
from pipeline.formats import conversation_id, decode_lines
from tests.cases import BAD_LINES, CASES
from tests.corpus import corpus_available, corpus_records
from tests.native.differential import compare, python_codec
from tests.native.fuzz_native import PINNED
from tests.strategies import wire_record

native = codec.native_module("responses")
pytestmark = pytest.mark.skipif(
    native is None,
    reason="pipeline._native is not built (no C compiler at install): "
    "run `python tests/native/build_native.py --out .` or `pip install -e .` to test it",
)


def _lines(records: list[dict]) -> list[bytes]:
    return [orjson.dumps(r) for r in records]


FORMATS = sorted(codec.NATIVE_FORMATS)


@pytest.mark.parametrize("fmt", FORMATS)
def test_hand_written_cases_decode_natively_and_identically(fmt: str) -> None:
    res = compare(_lines([r for _, r in CASES[fmt]]), fmt, source_file="cases.jsonl")
    assert res.native_fallback == {}, "a hand-written case went to the Python decoder"


@pytest.mark.parametrize("fmt", FORMATS)
def test_bad_lines_are_rejected_by_the_python_decoder_with_its_reasons(fmt: str) -> None:
    bad = [(line, error) for f, line, error in BAD_LINES if f == fmt]
    res = compare([line for line, _ in bad], fmt)
    assert [r.error.split(":")[0] for r in res.rejected] == [e.split(":")[0] for _, e in bad]
    assert sum(res.native_fallback.values()) == len(bad)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("seed", [0, 1])
def test_synthetic_records(fmt: str, seed: int) -> None:
    lines = _lines(list(synth.generate(fmt, 600, seed=seed)))
    lines[100:100] = [b"", b"  \t", b"\n"]  # blank lines count and shift line numbers
    res = compare(lines, fmt, source_file="synth.jsonl", first_line=7)
    assert sum(res.native_fallback.values()) <= len(lines) // 100, res.native_fallback


@pytest.mark.corpus
@pytest.mark.skipif(not corpus_available(), reason="../shared/corpus not found (CI has it)")
@pytest.mark.parametrize("fmt", FORMATS)
def test_shared_corpus_records(fmt: str) -> None:
    records = [r.record for r in corpus_records() if r.format == fmt]
    assert records
    res = compare(_lines(records), fmt, source_file="corpus.jsonl")
    assert sum(res.native_fallback.values()) <= len(records) // 20, res.native_fallback


@pytest.mark.parametrize("fmt", FORMATS)
def test_hypothesis_records(fmt: str) -> None:
    records = st.one_of(wire_record(fmt, "request"), wire_record(fmt, "response"))

    @settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.lists(records, min_size=1, max_size=6))
    def check(records: list[dict]) -> None:
        compare(_lines(records), fmt)

    check()


def _doubles(n: int, seed: int) -> tuple[list[float], list[float]]:
    """Doubles from random bits (mostly printed with an exponent) and doubles in orjson's plain
    range (uniform, and uniform rounded to 0..17 digits), which the native decoder must keep."""
    rnd = random.Random(seed)
    bits: list[float] = []
    while len(bits) < n:
        x = struct.unpack("<d", rnd.getrandbits(64).to_bytes(8, "little"))[0]
        if x == x and abs(x) != float("inf"):
            bits.append(x)
    plain = []
    for _ in range(n):
        x = rnd.uniform(-1e6, 1e6) * 10.0 ** rnd.randint(-10, 9)
        tie = rnd.getrandbits(53) / 2 ** rnd.randint(1, 12)  # often halfway between two 17-digit texts
        plain += [x, round(x, rnd.randint(0, 17)), tie]
    return bits, [x for x in plain if x == 0 or 1e-5 <= abs(x) < 1e15]


def _chunks(values: list[float]) -> list[bytes]:
    return [orjson.dumps({"input": [], "x": values[i : i + 20]}) for i in range(0, len(values), 20)]


def test_numbers_print_as_orjson_prints_them() -> None:
    """Random doubles and hand-picked texts decode identically; the ones orjson would print
    differently go to Python (and come out the same)."""
    bits, plain = _doubles(2000, 5)
    res = compare(_chunks(plain))
    assert res.native_fallback == {}
    tiny = [rnd * 10.0 ** -e for rnd, e in zip(plain[:400], range(6, 330), strict=False) if rnd]
    res = compare(_chunks(bits + tiny))  # orjson's exponent notation: "1e-6", "2.5e-7", "1e+16"
    assert res.native_fallback == {}, "a double as orjson writes it went to the Python decoder"
    texts = [
        "0", "-0", "1", "-1", "0.0", "-0.0", "1.0", "1.50", "100.0", "1e5", "1E5", "1.0e0", "0.00001",
        "0.000001", "0.1", "0.30000000000000004", "0.3000000000000000444", "123456789012345.0",
        "1234567890123456.0", "9007199254740993", "18446744073709551615", "-9223372036854775808",
        "9223372036854775807", "1.7976931348623157e308", "5e-324", "2.2250738585072014e-308",
        "0.1234567890123456789", "9.999999999999999", "9.9999999999999999", "1.0000000000000002",
    ]  # fmt: skip
    compare([f'{{"input": [], "x": {t}}}'.encode() for t in texts])


@pytest.mark.parametrize(
    ("text", "fallback"),
    [
        ("1e-6", None), ("-8e-6", None), ("2.5e-7", None), ("1e+16", None), ("1.5e+300", None),
        ("1.2345678901234568e+17", None), ("1.7976931348623157e+308", None), ("0.00001", None),
        ("1039514241563211.8", None), ("1e-05", "number"), ("1e-5", "number"), ("1E-6", "number"),
        ("1.0e-7", "number"), ("10e-7", "number"), ("1e16", "number"), ("1e+15", "number"),
        ("1e+016", "number"), ("1e-06", "number"), ("1.5e3", "number"), ("1e+400", "number"),
        ("1e-400", "number"), ("5e-324", "number"), ("4e-324", "number"), ("0e-7", "number"),
        ("1.23456789012345678e-7", "number"), ("1.2e-", "parse"),
    ],
)  # fmt: skip
def test_numbers_in_exponent_notation(text: str, fallback: str | None) -> None:
    """orjson writes a double below 1e-5 or from 1e16 on as "1e-6" / "1e+16": such a text stays on
    the compiled path; any other spelling of a number (Python's "1e-05", "1E-6", "1.0e-7") goes to
    the Python decoder, which writes orjson's text. 5e-324 is a power of two: checked in Python."""
    ok = b'{"input": "before"}'
    res = compare([ok, f'{{"input": [], "x": {text}}}'.encode(), ok])
    assert res.native_fallback == ({} if fallback is None else {fallback: 1})


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (b'{"input": [], "a": 1, "a": 2}', "duplicate_key"),
        (b'{"input": [{"role": "user", "content": "x", "role": "assistant"}]}', "duplicate_key"),
        (b'{"input": [], "x": ' + b"[" * 200 + b"]" * 200 + b"}", "depth"),
        (b'{"input": [], "x": ' + b"[" * 300 + b"]" * 300 + b"}", "depth"),  # Python rejects it
        (b'{"input": "\xff"}', "parse"),  # invalid UTF-8
        (b'{"input": "\\ud800"}', "parse"),  # lone surrogate escape
        (b'{"input": "\\udc00\\ud800"}', "parse"),
        (b'{"input": "a\x00b"}', "parse"),  # raw NUL inside a string
        (b'{"input": "a"}\x00', "parse"),
        (b'{"input": [{"type": "message", "role": "user", "content": "x"}', "parse"),  # truncated
        (b'\xef\xbb\xbf{"input": "bom"}', "parse"),
        (b'{"input": 1.5e3}', "number"),
        (b'{"input": [], "n": 123456789012345678901234}', "number"),
        (b'{"input": [], "n": 18446744073709551616}', "number"),  # Python rejects: beyond 64 bits
        (b'{"input": [], "x": {%s}}' % b",".join(b'"k%d": 1' % i for i in range(1025)), "big_object"),
        (b'{"model": "m"}', "shape"),
        (b"[]", "shape"),
        (b'{"input": [{"role": "user", "content": [1]}]}', "validation"),  # a part that is no object
        (b'{"input": [{"role": "tool", "content": "x"}]}', "validation"),  # Python rejects the role
        (b'{"input": [{"type": "function_call", "call_id": "c", "arguments": "{}"}]}', "validation"),
        (b'{"input": null}', "validation"),
        (b'{"input": [], "tools": [{"type": "function"}]}', "validation"),  # a tool without a name
        (b'{"input": [], "tools": [{"type": "bogus_tool"}]}', "validation"),  # not a known tool type
    ],
)
def test_lines_the_native_decoder_hands_back(line: bytes, reason: str) -> None:
    ok = b'{"input": "before"}'
    res = compare([ok, line, ok])
    assert res.native_fallback == {reason: 1}


def test_escapes_and_unicode_survive_byte_for_byte() -> None:
    weird = "".join(chr(c) for c in range(0x20)) + '"\\/\x7f\u2028\u2029é𝄞\ufeff\uffff'
    rec = {
        "input": [{"role": "user", "content": weird, weird: weird, "x": {weird: [weird, None, True]}}],
        weird: weird,
        "tools": [{"type": "function", "name": weird, weird: weird}],
        "tool_choice": weird,
    }
    escaped = b'{"input": "\\u0041\\u00e9\\ud834\\udd1e\\/\\b\\f\\n\\r\\t\\u0000", "k\\u0000": "\\u001F"}'
    res = compare([orjson.dumps(rec), escaped])
    assert res.native_fallback == {}


@pytest.mark.parametrize(("fmt", "line"), [(fmt, line) for fmt, lines in PINNED.items() for line in lines])
def test_lines_the_fuzzer_found(fmt: str, line: bytes) -> None:
    """Alone in their batch, as found (the sanitizer build replays them in test_fuzz.py). A line
    nested deeper than the compiled decoder walks, or one a Python decode rule rejects, reaches the
    Python decoder; every other one is decoded natively."""
    res = compare([line], fmt)
    if _depth(orjson.loads(line)) > native.MAX_DEPTH:
        assert res.native_fallback == {"depth": 1}
    else:
        assert res.native_fallback == ({"validation": 1} if res.rejected else {})


def _depth(value: object) -> int:
    """How deep ``value`` nests (a scalar is 0), without recursion: a pinned line can nest hundreds
    of levels."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        v, d = stack.pop()
        children = v.values() if isinstance(v, dict) else v if isinstance(v, list) else ()
        for child in children:
            if isinstance(child, (dict, list)):
                stack.append((child, d + 1))
        if isinstance(v, (dict, list)):
            deepest = max(deepest, d)
    return deepest


def test_not_bytes_lines_and_empty_input() -> None:
    res = compare([bytearray(b'{"input": "x"}'), b'{"input": "y"}'])
    assert res.native_fallback == {"not_bytes": 1}
    res = compare([])
    assert res.table.num_rows == 0 and res.native_fallback == {}


def test_rows_keep_line_order_around_fallbacks() -> None:
    lines = [b'{"input": "%d"}' % i if i % 3 else b'{"input": "%d", "d": 1.5e3}' % i for i in range(30)]
    res = compare(lines, first_line=40)
    assert res.native_fallback == {"number": 10}
    assert res.table.column("source_line").to_pylist() == list(range(40, 70))


def test_duplicate_keys_fall_back_and_are_rejected_by_line() -> None:
    """yyjson keeps both keys, orjson the last: either way a duplicate rejects its record alone."""
    lines = [b'{"input": "%d"}' % i if i % 3 else b'{"input": "%d", "d": 1, "d": 2}' % i for i in range(30)]
    res = compare(lines, first_line=40)
    assert res.native_fallback == {"duplicate_key": 10}
    assert res.table.column("source_line").to_pylist() == [40 + i for i in range(30) if i % 3]
    assert {(r.line - 40) % 3 for r in res.rejected} == {0}
    assert {r.error for r in res.rejected} == {"$.d: duplicate key 'd' (JSON pointer /d)"}


@pytest.mark.parametrize("source_file", [None, "", "dir/ä.jsonl"])
def test_conversation_id_is_the_python_blake2b(source_file: str | None) -> None:
    rnd = random.Random(3)
    for size in (0, 1, 127, 128, 129, 255, 256, 257, 1000):
        raw = rnd.randbytes(size)
        encoded = None if source_file is None else source_file.encode()
        for line in (0, 1, 10**12):
            assert native.conversation_id_hex(raw, encoded, line) == conversation_id(raw, source_file, line)


def test_conversation_id_blake2b_on_random_lengths() -> None:
    """Every message length from 0 to 10,000 bytes in steps that cross each block boundary (128),
    plus random ones: the C BLAKE2b equals hashlib's, through the full conversation id."""
    rnd = random.Random(16)
    sizes = sorted({*range(0, 300), *range(0, 10_001, 127), *range(0, 10_001, 128),
                    *(rnd.randrange(10_001) for _ in range(300)), 10_000})  # fmt: skip
    for size in sizes:
        raw = rnd.randbytes(size)
        file = rnd.choice([None, "f.jsonl", "x" * rnd.randrange(300)])
        line = rnd.randrange(10**9)
        encoded = None if file is None else file.encode()
        assert native.conversation_id_hex(raw, encoded, line) == conversation_id(raw, file, line), size


# Bytes orjson escapes (quote, backslash, C0 controls) beside plain ASCII and multi-byte UTF-8.
_ESCAPED = ['"', "\\", "\n", "\x00", "\x1f", "\t", "\x08", "\x7f", "\u2028", "é", "😀", " ", "a"]


def _escape_probes(rnd: random.Random) -> list[str]:
    """Strings with each escaped character at every offset 0..19 in texts of 0..40 characters:
    JSON string writers test 8 bytes at a time, so each offset of a word and the tail are hit."""
    probes = []
    for ch in _ESCAPED:
        for at in range(20):
            for tail in (0, 1, 7, 8, 9, 20):
                probes.append("p" * at + ch + "q" * tail)
    for _ in range(200):
        probes.append("".join(rnd.choice(_ESCAPED + ["x"] * 8) for _ in range(rnd.randrange(41))))
    return probes


def test_extra_json_strings_escaped_at_every_offset() -> None:
    """An unknown key's string value is re-written as JSON text (extra_json) by the C decoder."""
    probes = _escape_probes(random.Random(8))
    lines = [orjson.dumps({"input": "hi", "x_extra": s, s: 1}) for s in probes]
    res = compare(lines)
    assert res.native_fallback == {}


def test_chatlake_native_0_forces_the_python_codec() -> None:
    with python_codec():
        assert not codec.status().native
        assert codec.native_module("responses") is None
        res = decode_lines([b'{"input": "x", "a": 1, "a": 2}'], "responses")
    assert res.native_fallback == {}
    assert codec.status().native
    assert codec.native_module("hf") is None  # not implemented natively


@pytest.mark.parametrize("depth", [60, 100, 125, 126, 127, 128, 129])
def test_nesting_around_the_native_limit_matches_the_python_decoder(depth: int) -> None:
    """If the Python decoder's documented nesting limit ever drops below the native MAX_DEPTH, the
    native decoder would keep records Python rejects: this fails first (lower MAX_DEPTH then)."""
    nested = b"[" * depth + b"]" * depth
    item = b'{"input": [{"role": "user", "content": "x", "y": %s}]}' % nested
    compare([b'{"input": [], "x": %s}' % nested, item])
