"""A seeded JSON mutator for the crash fuzzers (``tests/formats/test_fuzz.py``,
``tests/sources/test_fuzz.py``, ``benchmarks/fuzz_decoders.py``).

:func:`mutate` takes a valid JSON value and returns the bytes of a hostile variant: a few structural
changes on the value (type swaps, deleted keys, swapped-in odd values, keys grafted onto an object of
another type, fields in their other string / object form) and then one change made on
the text (huge or odd numbers, deep nesting, lone surrogates, invalid UTF-8, NUL, duplicate keys,
truncation). Everything is a pure function of the ``random.Random`` passed in, so a failure is
replayed from its seed.
"""

from __future__ import annotations

import os
import random
from typing import Any

import orjson

# Environment: CHATLAKE_FUZZ_N scales the number of inputs per target (default: the CI budget);
# CHATLAKE_FUZZ_SEED=random draws a fresh seed (printed by the failing assertion), any integer fixes one.
FUZZ_N_ENV = "CHATLAKE_FUZZ_N"
FUZZ_SEED_ENV = "CHATLAKE_FUZZ_SEED"

# Numbers orjson reads as floats or rejects, and spellings a decoder must keep exactly.
ODD_NUMBERS = (
    b"123456789012345678901234567890",
    b"18446744073709551616",
    b"18446744073709551615",
    b"-9223372036854775809",
    b"-9223372036854775808",
    b"1e400",
    b"-1e400",
    b"1e-400",
    b"-0",
    b"-0.0",
    b"1E5",
    b"1e5",
    b"0.1e1",
    b"9007199254740993",
    b"1.0",
    b"NaN",
    b"Infinity",
    b"-Infinity",
    b"01",
    b"1.",
    b".5",
    b"+1",
    b"0x10",
)
# Nesting depths around every limit: MAX_DEPTH (200), orjson's write limit (254) and read limit (1024).
DEPTHS = (199, 200, 201, 254, 255, 256, 300, 600, 1023, 1024, 1025, 1100)
ODD_STRINGS = (
    b'"\\ud800"',
    b'"\\udc00x"',
    b'"a\\ud800\\ud800"',
    b'"\\ud83d\\ude00"',
    b'"\xed\xa0\x80"',  # surrogates
    b'"\xff\xfe"',
    b'"\xc3"',
    b'"\xc0\xaf"',
    b'"\xf4\x90\x80\x80"',
    b'"a\x80b"',  # invalid UTF-8
    b'"a\\u0000b"',
    b'"a\x00b"',
    b'"\x00"',
    b'"\\u0000"',  # NUL escaped and raw
    b'"\xe2\x80\xa8"',
    b'"\\n\\r\\t"',
    b'""',
    b'"a\x1fb"',
)
# Values a type swap puts where something else was (every JSON type, and shapes decoders test for).
SWAPS: tuple[Any, ...] = (
    None,
    True,
    False,
    0,
    -1,
    1.5,
    "",
    "x",
    "text",
    "user",
    "assistant",
    "message",
    [],
    {},
    [1, "a"],
    [None],
    [{}],
    [[]],
    {"type": []},
    {"type": {}},
    {"type": None},
    {"role": []},
    {"type": "text"},
    {"type": "text", "text": []},
    {"role": "user", "content": {}},
    {"value": {}, "type": "text"},
)
RAW_KINDS = ("number", "deep", "string", "duplicate_key", "truncate", "raw_bytes", "none")
_MARK = "\x01fuzz-mark\x01"
_MARK_BYTES = orjson.dumps(_MARK)


def fuzz_n(default: int) -> int:
    """Inputs per target: ``CHATLAKE_FUZZ_N`` when set (a longer run), else ``default`` (CI)."""
    return int(os.environ.get(FUZZ_N_ENV, default))


def fuzz_seed(default: int = 0) -> int:
    """The run's seed: ``CHATLAKE_FUZZ_SEED`` (an integer, or ``random`` for a fresh one)."""
    value = os.environ.get(FUZZ_SEED_ENV)
    if value is None:
        return default
    if value == "random":
        return random.SystemRandom().randrange(2**32)
    return int(value)


def _nodes(value: Any, limit: int = 5000) -> list[tuple[Any, Any]]:
    """``(parent, key)`` of every node below ``value`` (breadth-first, at most ``limit``)."""
    out: list[tuple[Any, Any]] = []
    queue = [value]
    i = 0
    while i < len(queue) and len(out) < limit:
        node = queue[i]
        i += 1
        items = node.items() if type(node) is dict else enumerate(node) if type(node) is list else ()
        for k, v in items:
            out.append((node, k))
            if type(v) in (dict, list):
                queue.append(v)
    return out


def _pick(
    rng: random.Random, nodes: list[tuple[Any, Any]], want: type | None = None
) -> tuple[Any, Any] | None:
    pool = nodes if want is None else [n for n in nodes if type(n[0][n[1]]) is want]
    return rng.choice(pool) if pool else None


def _deep(rng: random.Random) -> bytes:
    levels = rng.choice(DEPTHS)
    leaf = rng.choice((b"1", b'"x"', b"123456789012345678901234", b"{}", b"[]", b"null"))
    if rng.random() < 0.5:
        return b"[" * levels + leaf + b"]" * levels
    return b'{"a":' * levels + leaf + b"}" * levels


def _duplicate(rng: random.Random, obj: dict[str, Any]) -> bytes:
    """``obj`` written with one of its keys repeated (orjson keeps the last)."""
    items = [orjson.dumps(k) + b":" + orjson.dumps(v) for k, v in obj.items()]
    key = rng.choice(list(obj)) if obj else "type"
    dup = orjson.dumps(key) + b":" + orjson.dumps(rng.choice(SWAPS))
    items.insert(rng.randrange(len(items) + 1), dup)
    return b"{" + b",".join(items) + b"}"


def _graft(rng: random.Random, nodes: list[tuple[Any, Any]]) -> bool:
    """A key of one typed object (an item, block or message) copied onto another of a different
    ``type`` / ``role``: a key moved between item types. False when there are no two such objects."""
    values = [n[0][n[1]] for n in nodes]
    typed = [v for v in values if type(v) is dict and ("type" in v or "role" in v)]
    if len(typed) < 2:
        return False
    a, b = rng.sample(typed, 2)
    keys = [k for k in a if k not in ("type", "role")]
    if not keys or (a.get("type"), a.get("role")) == (b.get("type"), b.get("role")):
        return False
    k = rng.choice(keys)
    b[k] = deep_copy(a[k])
    return True


def deep_copy(value: Any) -> Any:
    """A copy of a parsed JSON value at any depth. ``copy.deepcopy`` recurses (two Python frames
    per level: a value ~500 levels deep, which ``tests/native/fuzz_native.py`` nests, passes the
    recursion limit) and orjson writes at most 255 levels, so the copy walks an explicit stack."""
    if type(value) is not dict and type(value) is not list:
        return value
    root: Any = {} if type(value) is dict else []
    stack: list[tuple[Any, Any]] = [(value, root)]
    while stack:
        src, dst = stack.pop()
        items = src.items() if type(src) is dict else enumerate(src)
        for k, v in items:
            if type(v) is dict or type(v) is list:
                child: Any = {} if type(v) is dict else []
                stack.append((v, child))
                v = child
            if type(dst) is dict:
                dst[k] = v
            else:
                dst.append(v)
    return root


def _other_form(value: Any, rng: random.Random) -> Any:
    """``value`` in its other form, as fields that take a string or an object do (``tool_choice``,
    content): a string as ``{"type": s}`` or a list of one text part, an object as its type."""
    if type(value) is str:
        return rng.choice(({"type": value}, [{"type": "text", "text": value}]))
    if type(value) is dict and type(value.get("type")) is str:
        return value["type"]
    if type(value) is list and len(value) == 1 and type(value[0]) is dict and "text" in value[0]:
        return value[0]["text"]
    return value


def graft_or_form(value: Any, rng: random.Random) -> None:
    """A key grafted onto an object of another type, else a field in its other string / object form
    (in place): the two mutations that found silent changes, on their own for fuzzers that have
    their own other mutations (``tests/native/fuzz_native.py``)."""
    nodes = _nodes(value)
    if nodes and not _graft(rng, nodes):
        parent, key = rng.choice(nodes)
        parent[key] = _other_form(parent[key], rng)


def structural(value: Any, rng: random.Random) -> None:
    """One change in place: a swapped type, a key grafted onto an object of another type, a field
    in its other string / object form, a deleted key, or a container emptied or doubled."""
    nodes = _nodes(value)
    if not nodes:
        return
    parent, key = rng.choice(nodes)
    roll = rng.random()
    if roll < 0.45:
        parent[key] = orjson.loads(orjson.dumps(rng.choice(SWAPS)))
    elif roll < 0.5:
        if not _graft(rng, nodes):
            parent[key] = _other_form(parent[key], rng)
    elif roll < 0.55:
        parent[key] = _other_form(parent[key], rng)
    elif roll < 0.8:
        hit = _pick(rng, nodes, dict)
        if hit is not None and hit[0][hit[1]]:
            d = hit[0][hit[1]]
            del d[rng.choice(list(d))]
    elif roll < 0.9:
        v = parent[key]
        parent[key] = [v, v] if type(v) is not list else v + v
    else:
        v = parent[key]
        if type(v) is list:
            parent[key] = []
        elif type(v) is dict:
            parent[key] = {}
        elif type(v) is str:
            parent[key] = v * rng.choice((0, 2, 50))


def textual(value: Any, rng: random.Random, kind: str | None = None) -> bytes:
    """``value`` as JSON bytes with one change made on the text (``kind`` from :data:`RAW_KINDS`).

    ``value`` itself may be changed (a placeholder goes where the token will be): pass a copy.
    """
    kind = kind or rng.choice(RAW_KINDS)
    if kind == "none":
        return orjson.dumps(value)
    if kind == "truncate":
        raw = orjson.dumps(value)
        return raw[: rng.randrange(len(raw))] if len(raw) > 1 else b""
    if kind == "raw_bytes":
        raw = bytearray(orjson.dumps(value))
        for _ in range(rng.randint(1, 3)):
            raw.insert(rng.randrange(len(raw) + 1), rng.choice(b'\x00\xff\xc3"\\{}[],:'))
        return bytes(raw)
    nodes = _nodes(value)
    if kind == "duplicate_key":
        hit = _pick(rng, nodes, dict)
        if hit is None:
            return _duplicate(rng, value) if type(value) is dict else orjson.dumps(value)
        token = _duplicate(rng, hit[0][hit[1]])
    elif kind == "number":
        token = rng.choice(ODD_NUMBERS)
    elif kind == "deep":
        token = _deep(rng)
    else:
        token = rng.choice(ODD_STRINGS)
    if not nodes:
        return orjson.dumps([value, orjson.Fragment(token)]) if kind != "duplicate_key" else token
    parent, key = rng.choice(nodes) if kind != "duplicate_key" else hit  # type: ignore[misc]
    parent[key] = _MARK
    raw = orjson.dumps(value)
    return raw.replace(_MARK_BYTES, token, 1)


def mutate(value: Any, rng: random.Random) -> bytes:
    """A hostile variant of ``value`` (which is not changed): 0-3 structural changes, then one on the text."""
    copy = orjson.loads(orjson.dumps(value))
    for _ in range(rng.choice((0, 0, 1, 1, 2, 3))):
        structural(copy, rng)
    return textual(copy, rng)
