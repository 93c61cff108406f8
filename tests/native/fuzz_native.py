"""Mutation fuzzer of the compiled decoder and encoders: malformed Responses / Chat / Anthropic
lines, native vs Python.

Seeds are synthetic and hand-written records of the format (``--fmt``); each fuzzed line gets one to three
mutations: type swaps, deleted keys, keys moved onto an item of another type, fields in their
other string / object form, duplicate keys, deep nesting, odd, huge and underflowing numbers, lone
surrogate escapes, invalid UTF-8, NUL bytes, odd whitespace, truncation and byte flips. Every batch
goes through :func:`tests.native.differential.compare` (same table, Parquet bytes and chunk layout, same
rejected lines, read == written + rejected), then the decoded table through
:func:`tests.native.encode_diff.compare_encode` to every target with a compiled encoder (Chat,
Responses, Anthropic and HF: the compiled encoders vs the per-record ones, same JSON bytes, losses,
refusals); the target of the fuzzed format itself goes through its same-format writer
(``encode_same.c``), the others through the cross-format encoders, and Anthropic batches also
through :func:`tests.native.encode_diff.compare_report` (the compiled round-trip report vs
``anthropic_round_trip.report``). Decoding also runs the C item fingerprints (``fingerprint.c``,
checked against DuckDB's by ``compare``), each batch's bytes go through the C MD5 against hashlib,
and the decoded table's flat columns through the C JSON Lines writers (``lines.c``) against Polars
and Arrow. A failing batch is narrowed to the single line that fails alone, written to
``--failures`` and the run exits 1.

Run it against an AddressSanitizer + UBSan build (how tests/native/test_fuzz.py runs it)::

    python tests/native/build_native.py --out /tmp/asan --sanitize
    LD_PRELOAD=$(gcc -print-file-name=libasan.so) ASAN_OPTIONS=detect_leaks=0 \\
        python tests/native/fuzz_native.py --ext-dir /tmp/asan --lines 100000 --seed 1

Without ``--ext-dir`` it fuzzes the extension already built in the worktree; without ``--seed`` it
draws a fresh seed and prints it first (a run that dies still names its seed).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import orjson  # noqa: E402

from tests.mutate import graft_or_form  # noqa: E402

Rnd = random.Random

POOL: list[Any] = [
    None, True, False, 0, -1, 1.5, "", "x", "message", "reasoning", "function_call_output", "user",
    [], [None], [1, "a"], {}, {"type": "input_text"}, {"type": "output_text", "text": None},
    [{"type": "refusal", "refusal": "no"}], [{"type": "thinking", "thinking": "t"}], [[]],
    "tool", "function", "custom", {"name": "f", "arguments": "{}"}, {"name": None, "input": 1},
    [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}", "x": 1}}],
    [{"type": "custom", "custom": {"name": "g", "input": "i"}}], {"role": "assistant", "content": None},
    "tool_use", "tool_result", "thinking", "redacted_thinking", "compaction", "web_search_tool_result",
    {"type": "tool_use", "id": "t", "name": "n", "input": {"a": [1.5, None]}},
    {"type": "tool_result", "tool_use_id": "t", "content": [{"type": "text", "text": "r"}]},
    {"type": "thinking", "thinking": None, "signature": 3}, [{"type": "redacted_thinking", "data": "d"}],
]  # fmt: skip
NUMBERS = [
    b"-0", b"0.0", b"-0.0", b"1e400", b"-1e400", b"1E5", b"1e-7", b"0.000001", b"0.1e-7", b"5e-324",
    b"18446744073709551615", b"18446744073709551616", b"-9223372036854775808", b"-9223372036854775809",
    b"123456789012345678901234567890", b"1.0000000000000002", b"0.30000000000000004", b"100.0",
    b"1.50", b"9007199254740993", b"1234567890123456.5", b"27628950807049.3125", b"00", b"01", b"1.",
    b".5", b"+1", b"NaN", b"Infinity", b"-", b"1e", b"0x10", b"1e-400", b"-2.5e-999",
]  # fmt: skip
BAD_BYTES = [b"\x80", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xff", b"\xe2\x82", b"\xfe"]
ESCAPES = [b"\\ud800", b"\\udc00", b"\\ud800\\u0041", b"\\udbff\\udfff", b"\\ud83d\\ude00", b"\\u0000",
           b"\\/", b"\\u001f", b"\\u007f", b"\\x", b"\\u12"]  # fmt: skip
WHITESPACE = [b" ", b"\t", b"\n", b"\r", b"\x0b", b"\x0c", b"\xc2\xa0"]
NUMBER_RE = re.compile(rb"(?<=[:\[,])-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
KEY_RE = re.compile(rb'"([A-Za-z_]{1,30})":')


def _children(value: Any) -> list[tuple[Any, Any]]:
    """The (container, key-or-index) slots of ``value`` itself (none for a scalar)."""
    if isinstance(value, dict):
        return [(value, k) for k in list(value)]
    if isinstance(value, list):
        return [(value, i) for i in range(len(value))]
    return []


def _containers(value: Any, out: list[tuple[Any, Any]]) -> None:
    """Every (container, key-or-index) slot of a parsed record, depth first (a slot before the
    slots of its value). A stack of iterators, not recursion: :func:`deepen` nests records past
    Python's recursion limit."""
    stack = [iter(_children(value))]
    while stack:
        slot = next(stack[-1], None)
        if slot is None:
            stack.pop()
            continue
        out.append(slot)
        stack.append(iter(_children(slot[0][slot[1]])))


def _slot(rec: Any, rnd: Rnd) -> tuple[Any, Any] | None:
    slots: list[tuple[Any, Any]] = []
    _containers(rec, slots)
    return rnd.choice(slots) if slots else None


def swap_type(rec: Any, rnd: Rnd) -> Any:
    slot = _slot(rec, rnd)
    if slot is not None:
        slot[0][slot[1]] = orjson.loads(orjson.dumps(rnd.choice(POOL)))
    return rec


def delete_key(rec: Any, rnd: Rnd) -> Any:
    slot = _slot(rec, rnd)
    if slot is not None:
        del slot[0][slot[1]]
    return rec


def deepen(rec: Any, rnd: Rnd) -> Any:
    slot = _slot(rec, rnd)
    if slot is not None:
        value = slot[0][slot[1]]
        for _ in range(rnd.choice([20, 126, 127, 128, 129, 200, 253, 254, 255, 256, 300])):
            value = [value] if rnd.random() < 0.5 else {"d": value}
        slot[0][slot[1]] = value
    return rec


def moved_key(rec: Any, rnd: Rnd) -> Any:
    """A key moved onto an item of another type, or a field in its other string / object form."""
    graft_or_form(rec, rnd)
    return rec


STRUCTURAL: list[Callable[[Any, Rnd], Any]] = [swap_type, swap_type, delete_key, deepen, moved_key]


def _at(raw: bytes, rnd: Rnd, insert: bytes) -> bytes:
    i = rnd.randrange(len(raw) + 1)
    return raw[:i] + insert + raw[i:]


def _in_string(raw: bytes, rnd: Rnd, insert: bytes) -> bytes:
    """Insert right after the opening quote of a random string value (or anywhere if none)."""
    starts = [m.end() for m in re.finditer(rb':"', raw)]
    if not starts:
        return _at(raw, rnd, insert)
    i = rnd.choice(starts)
    return raw[:i] + insert + raw[i:]


def odd_number(raw: bytes, rnd: Rnd) -> bytes:
    spots = list(NUMBER_RE.finditer(raw))
    if not spots:
        return _in_string(raw, rnd, b"") + b""
    m = rnd.choice(spots)
    return raw[: m.start()] + rnd.choice(NUMBERS) + raw[m.end() :]


def duplicate_key(raw: bytes, rnd: Rnd) -> bytes:
    spots = list(KEY_RE.finditer(raw))
    if not spots:
        return raw
    m = rnd.choice(spots)
    value = rnd.choice([b"null", b"1", b'"dup"', b"[]", b"{}"])
    return raw[: m.start()] + b'"' + m.group(1) + b'":' + value + b"," + raw[m.start() :]


BYTES: list[Callable[[bytes, Rnd], bytes]] = [
    odd_number,
    odd_number,
    duplicate_key,
    lambda raw, rnd: _in_string(raw, rnd, rnd.choice(ESCAPES)),
    lambda raw, rnd: _in_string(raw, rnd, rnd.choice(BAD_BYTES)),
    lambda raw, rnd: _at(raw, rnd, rnd.choice(BAD_BYTES)),
    lambda raw, rnd: _at(raw, rnd, b"\x00"),
    lambda raw, rnd: _in_string(raw, rnd, b"\x00"),
    lambda raw, rnd: _at(raw, rnd, rnd.choice(WHITESPACE)),
    lambda raw, rnd: raw[: rnd.randrange(len(raw) + 1)],
    lambda raw, rnd: _at(raw, rnd, bytes([rnd.randrange(256)])) if raw else raw,
    lambda raw, rnd: (
        (lambda i: raw[:i] + bytes([rnd.randrange(256)]) + raw[i + 1 :])(rnd.randrange(len(raw)))
        if raw
        else raw
    ),
]


def _dumps(rec: Any) -> bytes:
    try:
        return orjson.dumps(rec)
    except TypeError:  # orjson writes at most 255 levels
        return _dumps_deep(rec)


def _dumps_deep(rec: Any) -> bytes:
    """``rec`` written at any depth, the bytes ``json.dumps(rec, ensure_ascii=False,
    separators=(",", ":"))`` writes; that recurses (one C level per container, counted against
    Python's recursion limit), so this walks an explicit stack of what is left to write."""
    out: list[bytes] = []
    todo: list[Any] = [rec]
    while todo:
        x = todo.pop()
        if type(x) is bytes:  # punctuation queued below (a parsed record holds no bytes)
            out.append(x)
        elif type(x) is dict:
            parts: list[Any] = [b"{"]
            for i, (k, v) in enumerate(x.items()):
                parts += [(b"," if i else b"") + _scalar(k) + b":", v]
            todo += reversed([*parts, b"}"])
        elif type(x) is list:
            parts = [b"["]
            for i, v in enumerate(x):
                parts += [b","] if i else []
                parts.append(v)
            todo += reversed([*parts, b"]"])
        else:
            out.append(_scalar(x))
    return b"".join(out)


def _scalar(x: Any) -> bytes:
    return json.dumps(x, ensure_ascii=False).encode()


def mutate(raw: bytes, rnd: Rnd) -> bytes:
    """One to three mutations; structural ones while the line still parses."""
    for _ in range(rnd.randint(1, 3)):
        if rnd.random() < 0.6:
            try:
                rec = orjson.loads(raw)
            except orjson.JSONDecodeError:
                rec = ...
            if rec is not ...:
                raw = _dumps(rnd.choice(STRUCTURAL)(rec, rnd))
                continue
        raw = rnd.choice(BYTES)(raw, rnd)
    return raw


def seeds(fmt: str, n: int, seed: int) -> list[bytes]:
    from pipeline import synth
    from tests.cases import CASES

    out = [orjson.dumps(r) for _, r in CASES[fmt]]
    out += [orjson.dumps(r) for r in synth.generate(fmt, n, seed=seed)]
    return out


# Every line a fuzz run found failing, each run first, alone in its batch (where a bug in the
# empty-column case shows): the bounded run in test_fuzz.py replays them under the sanitizers.
PINNED: dict[str, list[bytes]] = {
    "responses": [
        # UBSan: memcpy of 0 bytes into a column buffer not yet allocated (an empty first string)
        b'{"instructions": "", "input": "x"}',
        b'{"input": ""}',
        b'{"input": [{"role": "user", "content": ""}], "": ""}',
    ],
    "chat": [
        b'{"messages": [{"role": "", "content": ""}]}',
        # ~520 levels (two deepen mutations): the fuzzer's own copy once recursed past Python's limit
        b'{"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function", "function": '
        + b'{"name": "f", "parameters": '
        + b'[{"d":' * 258
        + b"1"
        + b"}]" * 258
        + b"}}]}",
    ],
    "anthropic": [b'{"messages": [{"role": "", "content": []}], "system": ""}'],
}


# rows each compiled encoder took / rows encoded, by target, for the summary
ENCODED: dict[str, Counter[str]] = {}


def _targets() -> list[str]:
    """The targets with a compiled encoder (every fuzzed table is encoded to each, both ways)."""
    from pipeline import codec

    return sorted(codec.NATIVE_ENCODERS)


def _fails(lines: list[bytes], fmt: str) -> str | None:
    """Decode both ways, then encode what they decoded to every compiled target both ways (compiled
    encoder vs per-record, :func:`tests.native.encode_diff.compare_encode`); the first difference,
    or None."""
    from tests.native.differential import compare
    from tests.native.encode_diff import compare_encode, compare_report

    try:
        res = compare(lines, fmt, source_file="fuzz.jsonl")
        lines_error = _lines_differ(res.table)
        if lines_error is not None:
            return lines_error
        if fmt == "anthropic" and res.table.num_rows:  # the compiled round-trip report alone
            counts = ENCODED.setdefault("anthropic_report", Counter())
            counts["native"] += int(compare_report(res.table).sum())
            counts["rows"] += res.table.num_rows
        for target in _targets() if res.table.num_rows else []:
            enc = compare_encode(res.table, target)
            counts = ENCODED.setdefault(target, Counter())
            counts["native"] += sum(enc.native.to_pylist())
            counts["rows"] += res.table.num_rows
    except AssertionError as e:
        return str(e) or "AssertionError"
    return None


def _lines_differ(table: Any) -> str | None:
    """The C JSON Lines writers (``lines.c``) on the decoded table's flat string and int64 columns
    against their references (Polars' write_ndjson, Arrow's filter and join); a difference, or None."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from pipeline import codec
    from pipeline.encoders.encode_rows import _lines
    from pipeline.engine.writers import jsonl_parts, ndjson_polars

    native = codec.native_lines()
    flat = table.select([f.name for f in table.schema if f.type in (pa.string(), pa.int64())])
    if native is None or not flat.num_rows:
        return None
    if b"".join(bytes(p) for p in jsonl_parts(flat)) != ndjson_polars(flat):
        return "json_lines differs from Polars' write_ndjson"
    keep = pa.array(np.arange(flat.num_rows) % 3 != 1)
    for col in flat.columns:
        col = col.combine_chunks()
        if col.type == pa.string():
            got = pa.foreign_buffer(*native.join_lines(col, keep)).to_pybytes()
            if got != _lines(pc.filter(col, keep)):
                return "join_lines differs from Arrow's filter and join"
    return None


def _drop_python_crashes(lines: list[bytes], fmt: str, crashes: list[str]) -> list[bytes]:
    """The lines the pure-Python decoder handles without raising; the others are noted in
    ``crashes``. A line that kills the Python decoder kills a job the same way with the native one
    (it decodes that line in Python), so it says nothing about the native decoder: it is reported
    and left out rather than ending the run. The same goes for a line whose table makes the
    per-record encoders raise."""
    from pipeline.encoders.encode_rows import encode_rows
    from pipeline.formats import decode_lines
    from tests.native.differential import python_codec

    keep = []
    for line in lines:
        stage = "decode"
        try:
            with python_codec():
                table = decode_lines([line], fmt).table
                for target in _targets():
                    stage = f"encode to {target}"
                    encode_rows(table, target)
            keep.append(line)
        except Exception as e:
            crashes.append(f"{type(e).__name__} ({stage}) on {line[:120]!r}... ({len(line)} bytes)")
    return keep


def run(fmt: str, n_lines: int, seed: int, batch: int, failures: Path | None) -> int:
    from pipeline import codec

    assert codec.native_module(fmt) is not None, codec.status()
    md5 = codec.native_fingerprints()
    assert md5 is not None, codec.status()
    rnd = random.Random(seed)
    pool = seeds(fmt, 200, seed)
    counts: Counter[str] = Counter()
    python_crashes: list[str] = []
    for line in PINNED[fmt]:
        error = _fails([line], fmt)
        if error is not None:
            print(f"FAILURE of pinned line {line!r}: {error[:3000]}")
            return 1
    done = 0
    start = time.monotonic()
    while done < n_lines:
        lines = [mutate(rnd.choice(pool), rnd) for _ in range(min(batch, n_lines - done))]
        lines += [rnd.choice(pool)]  # one clean line per batch keeps native rows in every table
        try:
            error = _fails(lines, fmt)
        except Exception:  # the Python decoder itself raised: not the native decoder's to judge
            lines = _drop_python_crashes(lines, fmt, python_crashes)
            error = _fails(lines, fmt)
        joined = b"\n".join(lines)
        blob = joined[: max(0, len(joined) - done % 131)]  # cut so that lengths vary modulo 64
        if error is None and md5.md5_hex(blob) != hashlib.md5(blob).hexdigest():
            error = f"md5_hex differs from hashlib on {len(blob)} bytes"
        if error is not None:
            bad = next((line for line in lines if _fails([line], fmt) is not None), None)
            print(f"FAILURE at lines {done}..{done + len(lines)} (seed {seed}): {error[:3000]}")
            print(f"failing line alone: {bad!r}"[:6000])
            if failures is not None:
                with failures.open("ab") as f:
                    f.write((bad if bad is not None else b"\n".join(lines)) + b"\n")
            return 1
        from pipeline.formats import decode_lines

        counts.update(decode_lines(lines, fmt).native_fallback)
        if (done + len(lines)) // 10_000 > done // 10_000:
            print(f"  {done + len(lines)} lines, {time.monotonic() - start:.0f} s", flush=True)
        done += len(lines)
    took = time.monotonic() - start
    print(f"fuzzed {done} {fmt} lines (seed {seed}) in {took:.1f} s: no difference; fallbacks {dict(counts)}")
    for target, enc in ENCODED.items():
        print(f"{target} encoding: {enc['native']} of {enc['rows']} rows by the compiled encoder")
    if python_crashes:
        print(f"{len(python_crashes)} lines made the Python decoder or encoder itself raise (skipped):")
        for crash in python_crashes[:5]:
            print(f"  {crash}")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fmt", default="responses", choices=["responses", "chat", "anthropic"])
    ap.add_argument("--lines", type=int, default=5000)
    ap.add_argument("--seed", type=int, default=None, help="default: a fresh random one, printed")
    ap.add_argument("--batch", type=int, default=250)
    ap.add_argument("--ext-dir", type=Path, help="directory build_native.py built into (e.g. the ASan one)")
    ap.add_argument("--failures", type=Path, help="append each failing line here")
    args = ap.parse_args()
    if args.ext_dir is not None:
        import pipeline

        pipeline.__path__.insert(0, str(args.ext_dir / "pipeline"))
        import pipeline._native as native

        assert native.__file__.startswith(str(args.ext_dir)), native.__file__
    seed = random.SystemRandom().randrange(2**32) if args.seed is None else args.seed
    print(f"fuzzing {args.lines} {args.fmt} lines, seed {seed}", flush=True)
    return run(args.fmt, args.lines, seed, args.batch, args.failures)


if __name__ == "__main__":
    sys.exit(main())
