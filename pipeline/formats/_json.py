"""Parsing one JSON record safely: the nesting limit and the 64-bit integer screen.

Every decoder and source adapter parses records through :func:`loads` (``pipeline.formats._loads``),
and JSON text found inside a record (a tool call's arguments, a ``tools`` string) through
:func:`loads_nested`, so one record can never kill a job:

* **Nesting.** orjson reads up to 1024 levels but writes at most 254, and the standard library
  (used for the exact integer re-parse) recurses once per level. A value nested deeper than
  :data:`MAX_DEPTH` levels is rejected, with the path where the limit was passed; everything
  accepted can be written back, with room for the few levels an adapter wraps around it.
* **Integers.** orjson reads integers in [-2**63, 2**64) exactly and any other as a float; such an
  integer rejects the record instead of silently becoming a float.
* **Floats.** A number a 64-bit float cannot hold (``1e400`` overflows, ``1e-400`` underflows to
  ``0.0``) rejects the record, naming its path, instead of becoming ``0.0`` or failing the parse.
* **Duplicate keys.** orjson keeps the last of two equal keys in one object; a record holding a
  duplicate key is rejected, naming the key's path, instead of silently losing the first value.

Neither check recurses: they walk the value with an explicit stack.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import orjson

from pipeline.formats._common import RecordError

# The deepest nesting a record may hold: objects and arrays count one level each, the record itself
# is level 1. orjson writes at most 254 levels; the margin leaves room for the levels an adapter or
# the rejected file wraps around a value (meta_json, {"member": ...}). Documented in docs/decoding.md.
MAX_DEPTH = 200
# orjson.dumps raises from this depth on (254 levels write, 255 do not).
_ORJSON_WRITE_LIMIT = 255
# A value nested in this many lists writes (orjson) only when the value itself is <= MAX_DEPTH deep.
_PROBE_WRAP = _ORJSON_WRITE_LIMIT - 1 - MAX_DEPTH
# How many path segments a nesting error shows before "..." (the full path is MAX_DEPTH segments).
_PATH_SHOWN = 12

# orjson reads integers in [-2**63, 2**64) exactly and any other as a float. Outside that range lie
# only integers of 20+ digits (2**64 has 20) and negative ones of 19 digits (-2**63 has 19). Mapping
# every digit to "0" and searching for such runs runs at C speed (a regex costs ~100x more here).
_DIGITS_TO_ZERO = bytes.maketrans(b"0123456789", b"0" * 10)
_TWENTY_DIGITS = b"0" * 20
_MINUS_NINETEEN_DIGITS = b"-" + b"0" * 19


def too_deep_message() -> str:
    """The reason a record nested deeper than :data:`MAX_DEPTH` is rejected with."""
    return f"nested deeper than {MAX_DEPTH} levels"


def _segment(key: str | int) -> str:
    return f"[{key}]" if type(key) is int else f".{key}"


def deep_path(value: Any, base: str = "$", limit: int = MAX_DEPTH) -> str | None:
    """The path of the first container below ``value`` at depth ``limit + 1`` (``value`` is depth 1),
    shortened after a few segments; None when ``value`` is at most ``limit`` levels deep.

    >>> deep_path({"a": [[1]], "b": 2}, limit=2)
    '$.a[0]'
    >>> deep_path({"a": [1]}, limit=2) is None
    True
    """
    # (container, depth, its path segments up to _PATH_SHOWN); depth-first so the first hit is the
    # leftmost one, which is what a reader scanning the line finds first
    stack: list[tuple[Any, int, tuple[str, ...]]] = [(value, 1, ())]
    while stack:
        node, depth, segs = stack.pop()
        if type(node) is dict:
            children = list(node.items())
        elif type(node) is list:
            children = list(enumerate(node))
        else:
            continue
        if depth > limit:
            shown = base + "".join(segs)
            return shown + "..." if depth > _PATH_SHOWN + 1 else shown
        for key, child in reversed(children):
            if type(child) is dict or type(child) is list:
                stack.append((child, depth + 1, (*segs, _segment(key)) if len(segs) < _PATH_SHOWN else segs))
    return None


def check_depth(value: Any, path: str = "$", above: int = 0) -> None:
    """Raise :class:`RecordError` naming where ``value`` passes :data:`MAX_DEPTH` levels, counting
    ``above`` levels that hold it (a record of a JSON list file is 1 level below the file).

    Costs one C-speed ``orjson.dumps`` of the value (wrapped so that it fails exactly past the
    limit); the Python walk that finds the path runs only for a value that is too deep.
    """
    probe: Any = value
    for _ in range(_PROBE_WRAP + above):
        probe = [probe]
    try:
        orjson.dumps(probe)
        return
    except orjson.JSONEncodeError:
        pass
    where = deep_path(value, path, MAX_DEPTH - above)
    if where is not None:
        raise RecordError(where, too_deep_message())


BIG_INT_MESSAGE = "integer outside the 64-bit range cannot be stored exactly"
UNDERFLOW_MESSAGE = "number too small for a 64-bit float (it would read as 0)"
OVERFLOW_MESSAGE = "number too large for a 64-bit float"
# Exponents of 3+ digits, once every digit is mapped to "0": only they (or a run of 20+ digits,
# found by the integer screen) can take a number out of a 64-bit float's range (1e-324 .. 1e308).
_LONG_EXPONENTS = tuple(e + sign + b"000" for e in (b"e", b"E") for sign in (b"", b"-", b"+"))
# A colon written as an escape in a string: orjson writes it back as ":" (the duplicate-key screen).
_ESCAPED_COLONS = (b"\\u003a", b"\\u003A")


class _Object(list):  # type: ignore[type-arg]
    """An object's ``(key, value)`` pairs in order, duplicates kept (the exact re-parse)."""


class _Inexact(str):
    """The text of a float a 64-bit float cannot hold (the exact re-parse)."""


def _exact_float(text: str) -> float | _Inexact:
    value = float(text)
    if value in (math.inf, -math.inf):
        return _Inexact(text)
    if value == 0.0 and text.lower().partition("e")[0].strip("-+0."):
        return _Inexact(text)  # a nonzero mantissa that underflowed
    return value


def _exact(raw: bytes) -> Any:
    """``raw`` parsed keeping what orjson's parse folds: every key of an object (as :class:`_Object`
    pairs), a float's text when no 64-bit float holds it (:class:`_Inexact`), integers exact.

    Recurses (the standard library): only for a value whose depth is known to be safe.
    """
    return json.loads(raw, object_pairs_hook=_Object, parse_float=_exact_float)


def inexact_path(value: Any, path: str = "$") -> tuple[str, str] | None:
    """Where the first value of an :func:`_exact` parse that the record cannot keep as it was is,
    and why: a duplicate key, an integer beyond 64 bits, a float out of range (no recursion)."""
    stack: list[tuple[Any, str]] = [(value, path)]
    while stack:
        node, path = stack.pop()
        kind = type(node)
        if kind is int:
            if not -(2**63) <= node < 2**64:
                return path, BIG_INT_MESSAGE
        elif kind is _Inexact:
            return path, UNDERFLOW_MESSAGE if math.isfinite(float(node)) else OVERFLOW_MESSAGE
        elif kind is _Object:
            seen: set[str] = set()
            children = []
            for k, v in node:
                if k in seen:
                    return f"{path}.{k}", f"duplicate key {k!r} (JSON pointer {_pointer(path, k)})"
                seen.add(k)
                children.append((v, f"{path}.{k}"))
            stack.extend(reversed(children))
        elif kind is list:
            stack.extend((v, f"{path}[{i}]") for i, v in reversed(list(enumerate(node))))
    return None


def _pointer(path: str, key: str) -> str:
    """The RFC 6901 pointer of ``key`` in the object at ``path`` (a ``$.a[0]`` path of plain keys)."""
    steps = re.findall(r"\.([^.\[]*)|\[(\d+)\]", path[1:])
    parts = [k if k else i for k, i in steps] + [key]
    return "/" + "/".join(p.replace("~", "~0").replace("/", "~1") for p in parts)


def _orjson_loads(raw: bytes) -> Any:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as e:
        if str(e).startswith("depth limit exceeded"):  # orjson's own limit, 1024 levels
            raise RecordError("$", f"{too_deep_message()} (more than 1024)") from e
        if str(e).startswith("number is infinity"):  # name where, as for any other number
            try:
                where = inexact_path(_exact(raw))
            except (ValueError, RecursionError):
                raise e from None
            if where is not None:
                raise RecordError(*where) from e
        raise


def _digits(raw: bytes) -> bytes:
    return raw.translate(_DIGITS_TO_ZERO)


def _has_big_int_digits(digits: bytes) -> bool:
    return _TWENTY_DIGITS in digits or _MINUS_NINETEEN_DIGITS in digits


def _may_be_inexact(raw: bytes, digits: bytes, value: Any) -> bool:
    """Whether ``value`` (orjson's parse of ``raw``) may differ from what ``raw`` says: a number
    out of range, or a duplicate key. Cheap, and never False when it does.

    Duplicate keys: every key of ``raw`` is written with one colon outside strings, so orjson's
    write of ``value`` holds as many colons as ``raw`` (plus one per escaped colon it unescapes)
    unless a duplicate was dropped with its key, its colon and whatever its value held.
    """
    if _has_big_int_digits(digits) or any(e in digits for e in _LONG_EXPONENTS):
        return True
    if b":" not in raw:
        return False
    try:
        written = orjson.dumps(value)
    except orjson.JSONEncodeError:
        return True
    return written.count(b":") != raw.count(b":") + sum(raw.count(c) for c in _ESCAPED_COLONS)


def loads(raw: bytes, *, above: int = 0) -> Any:
    """Parse one record; a value it cannot keep as written is a :class:`RecordError` naming where:
    nested too deep, an integer beyond 64 bits, a float out of range, a duplicate key.

    Invalid JSON raises ``ValueError`` (``orjson.JSONDecodeError``) as before. The depth check runs
    only when the line holds more than :data:`MAX_DEPTH` brackets (``above``: levels that hold the
    record); the exact re-parse (with the standard library) only when :func:`_may_be_inexact`
    says so, and only once the depth is known to be safe for it.
    """
    value = _orjson_loads(raw)
    if raw.count(b"[") + raw.count(b"{") > MAX_DEPTH - above:
        check_depth(value, above=above)
    if _may_be_inexact(raw, _digits(raw), value):
        where = inexact_path(_exact(raw))
        if where is not None:
            raise RecordError(*where)
    return value


def _records(value: Any, key: str | None) -> tuple[list[Any] | None, str]:
    """The record list of a whole-JSON file (the top-level list, or the list under ``key`` of the
    top-level object) and its path; None when there is none."""
    if key is None:
        return (value, "$") if type(value) is list else (None, "$")
    inner = value.get(key) if type(value) is dict else None
    return (inner, f"$.{key}") if type(inner) is list else (None, "$")


# The tokens of a JSON text that matter for finding its records: strings (skipped whole), brackets,
# commas and colons.
_TOKEN = re.compile(rb'"(?:[^"\\]++|\\.)*+"|[\[\]{},:]')
_SPACE = b" \t\r\n"


def record_spans(raw: bytes, key: str | None) -> list[tuple[int, int]] | None:
    """The byte ranges of a whole-JSON file's records (the elements of the top-level list, or of
    the list under ``key`` of the top-level object), found without parsing them: a record too deep
    or holding a number no parser reads still has its range. None when the text has no such list.

    Walks the text's tokens once (strings skipped by one regex match each); only for a document
    whose plain parse failed or found a bad record.
    """
    depth = 0
    list_depth = 1 if key is None else 2
    inside = key is None and raw.lstrip(_SPACE)[:1] == b"["
    want_key = key is not None and raw.lstrip(_SPACE)[:1] == b"{"
    last_key: str | None = None
    spans: list[tuple[int, int]] = []
    found: list[tuple[int, int]] | None = None
    start = -1
    for m in _TOKEN.finditer(raw):
        tok = m.group()
        c = tok[:1]
        if c == b"[" or c == b"{":
            depth += 1
            if depth == list_depth and c == b"[" and (inside or (want_key and last_key == key)):
                spans, start, inside = [], m.end(), True
                continue
        elif c == b"]" or c == b"}":
            if inside and depth == list_depth and c == b"]":
                if raw[start : m.start()].strip(_SPACE):
                    spans.append(_stripped(raw, start, m.start()))
                found, inside = spans, False  # the last list under a repeated key is the one read
            depth -= 1
        elif c == b"," and inside and depth == list_depth:
            spans.append(_stripped(raw, start, m.start()))
            start = m.end()
        elif c == b'"' and want_key and depth == 1:
            try:
                last_key = orjson.loads(tok)
            except orjson.JSONDecodeError:
                last_key = None
        elif c == b"," and depth == 1:
            last_key = None
    return found


def _stripped(raw: bytes, start: int, end: int) -> tuple[int, int]:
    while start < end and raw[start] in _SPACE:
        start += 1
    while end > start and raw[end - 1] in _SPACE:
        end -= 1
    return start, end


def loads_document(raw: bytes, records: str | None = None) -> tuple[Any, dict[int, str]]:
    """Parse a whole-JSON file holding many records; a record that :func:`loads` would reject
    (nested too deep, beyond orjson's read limit included; a number no 64-bit type holds; a
    duplicate key) is rejected alone, its neighbours read.

    The records are the top-level list (``records`` None) or the list under key ``records`` of the
    top-level object (an inspect log's ``samples``). Returns the value and, by record index, why a
    record cannot be used (such a record is its JSON text, ``bytes``, in the value); a problem
    outside the records raises :class:`RecordError` (the whole file), invalid JSON ``ValueError``,
    as :func:`loads` does.
    """
    try:
        value = _orjson_loads(raw)
    except (RecordError, orjson.JSONDecodeError) as e:
        if isinstance(e, orjson.JSONDecodeError) and not str(e).startswith("number is infinity"):
            raise
        return _by_record(raw, records, e)
    deep = raw.count(b"[") + raw.count(b"{") > MAX_DEPTH
    if deep:
        try:
            check_depth(value)
        except RecordError as e:
            return _by_record(raw, records, e)
    if _may_be_inexact(raw, _digits(raw), value):
        try:
            exact = _exact(raw)
        except RecursionError as e:  # only past ~950 levels, which a bad record above can be
            raise RecordError("$", f"{too_deep_message()}; too deep to check its numbers") from e
        where = inexact_path(exact)
        if where is not None:
            return _by_record(raw, records, RecordError(*where))
    return value, {}


def _by_record(raw: bytes, records: str | None, error: Exception) -> tuple[Any, dict[int, str]]:
    """:func:`loads_document` once something is wrong: each record parsed alone, the bad ones
    replaced by their text; ``error`` (what the whole parse found) is raised when it lies outside
    the records."""
    spans = record_spans(raw, records)
    if spans is None:
        raise error
    base = "$" if records is None else f"$.{records}"
    above = 1 if records is None else 2  # levels that hold each record
    bad: dict[int, str] = {}
    for i, (start, end) in enumerate(spans):
        try:
            loads(raw[start:end], above=above)
        except RecordError as e:
            bad[i] = f"{base}[{i}]{str(e)[1:]}"  # the record's path "$..." under the file's
        except ValueError:
            raise error from None  # not JSON on its own: the spans are not records
    if not bad:
        raise error
    parts, at = [], 0
    for i in bad:
        start, end = spans[i]
        parts += [raw[at:start], b"null"]
        at = end
    value = loads(b"".join([*parts, raw[at:]]))  # the rest of the file: its own problems raise
    recs, _ = _records(value, records)
    if recs is None or len(recs) != len(spans):
        raise error
    for i in bad:
        start, end = spans[i]
        recs[i] = raw[start:end]
    return value, bad


def loads_nested(text: str | bytes) -> Any:
    """Parse JSON text held inside a record (tool arguments, a ``tools`` string); ``...`` when it
    is not JSON, or is JSON the parsed value would not keep as written (nested deeper than
    :data:`MAX_DEPTH` levels, a number out of range, a duplicate key): the caller keeps the text."""
    try:
        return loads(text.encode() if type(text) is str else text)
    except ValueError:  # RecordError included
        return ...
