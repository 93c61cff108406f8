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

Neither check recurses: they walk the value with an explicit stack.
"""

from __future__ import annotations

import json
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


def _find_big_int(value: Any, path: str = "$") -> str | None:
    """The path of the first integer outside the 64-bit range in ``value`` (no recursion)."""
    stack: list[tuple[Any, str]] = [(value, path)]
    while stack:
        node, path = stack.pop()
        if type(node) is int:
            if not -(2**63) <= node < 2**64:
                return path
        elif type(node) is dict:
            stack.extend((v, f"{path}.{k}") for k, v in reversed(node.items()))
        elif type(node) is list:
            stack.extend((v, f"{path}[{i}]") for i, v in reversed(list(enumerate(node))))
    return None


BIG_INT_MESSAGE = "integer outside the 64-bit range cannot be stored exactly"


def _orjson_loads(raw: bytes) -> Any:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as e:
        if str(e).startswith("depth limit exceeded"):  # orjson's own limit, 1024 levels
            raise RecordError("$", f"{too_deep_message()} (more than 1024)") from e
        raise


def _has_big_int_digits(raw: bytes) -> bool:
    digits = raw.translate(_DIGITS_TO_ZERO)
    return _TWENTY_DIGITS in digits or _MINUS_NINETEEN_DIGITS in digits


def loads(raw: bytes) -> Any:
    """Parse one record; too deep a value or an integer beyond 64 bits is a :class:`RecordError`.

    Invalid JSON raises ``ValueError`` (``orjson.JSONDecodeError``) as before. The depth check runs
    only when the line holds more than :data:`MAX_DEPTH` brackets; the integer check re-parses
    exactly (with the standard library) only when a run of 20+ digits, or of 19 after a minus sign,
    appears, and only once the depth is known to be safe for it.
    """
    value = _orjson_loads(raw)
    if raw.count(b"[") + raw.count(b"{") > MAX_DEPTH:
        check_depth(value)
    if _has_big_int_digits(raw):
        path = _find_big_int(json.loads(raw))
        if path is not None:
            raise RecordError(path, BIG_INT_MESSAGE)
    return value


def _records(value: Any, key: str | None) -> tuple[list[Any] | None, str]:
    """The record list of a whole-JSON file (the top-level list, or the list under ``key`` of the
    top-level object) and its path; None when there is none."""
    if key is None:
        return (value, "$") if type(value) is list else (None, "$")
    inner = value.get(key) if type(value) is dict else None
    return (inner, f"$.{key}") if type(inner) is list else (None, "$")


def _without(value: Any, key: str | None, drop: set[int] | dict[int, str]) -> Any:
    """``value`` with the records at ``drop`` replaced by null (shallow copies)."""
    recs, _ = _records(value, key)
    if recs is None or not drop:
        return value
    kept = [None if i in drop else r for i, r in enumerate(recs)]
    return kept if key is None else {**value, key: kept}


def loads_document(raw: bytes, records: str | None = None) -> tuple[Any, dict[int, str]]:
    """Parse a whole-JSON file holding many records; a record too deep or holding an integer beyond
    64 bits rejects that record alone.

    The records are the top-level list (``records`` None) or the list under key ``records`` of the
    top-level object (an inspect log's ``samples``). Returns the value and, by record index, why a
    record cannot be used; a problem outside the records raises :class:`RecordError` (the whole
    file), invalid JSON ``ValueError``, as :func:`loads` does.
    """
    value = _orjson_loads(raw)
    recs, base = _records(value, records)
    above = 1 if records is None else 2  # levels that hold each record
    bad: dict[int, str] = {}
    if raw.count(b"[") + raw.count(b"{") > MAX_DEPTH:
        try:
            check_depth(value)
        except RecordError:
            if recs is None:
                raise
            for i, rec in enumerate(recs):
                try:
                    check_depth(rec, f"{base}[{i}]", above)
                except RecordError as e:
                    bad[i] = str(e)
            check_depth(_without(value, records, bad))  # a deep value outside the records
    if _has_big_int_digits(raw):
        try:
            exact = json.loads(raw)
        except RecursionError as e:  # only past ~950 levels, which a bad record above can be
            raise RecordError("$", f"{too_deep_message()}; too deep to check its integers") from e
        exact_recs, _ = _records(exact, records)
        for i, rec in enumerate(exact_recs or ()):
            if i not in bad and (path := _find_big_int(rec, f"{base}[{i}]")) is not None:
                bad[i] = f"{path}: {BIG_INT_MESSAGE}"
        path = _find_big_int(_without(exact, records, set(range(len(exact_recs or ())))))
        if path is not None:
            raise RecordError(path, BIG_INT_MESSAGE)
    return value, bad


def loads_nested(text: str | bytes) -> Any:
    """Parse JSON text held inside a record (tool arguments, a ``tools`` string); ``...`` when it
    is not JSON or is nested deeper than :data:`MAX_DEPTH` levels (the caller keeps the text)."""
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return ...
    opening = text.count("[") + text.count("{") if type(text) is str else text.count(b"[") + text.count(b"{")
    if opening > MAX_DEPTH:
        try:
            check_depth(value)
        except RecordError:
            return ...
    return value
