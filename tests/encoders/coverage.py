"""The no-silent-loss check: every path where A -> B -> A differs from A is covered by a loss
reported on the way A -> B (the loss path equals the differing path or is a prefix of it).
"""

from __future__ import annotations

from typing import Any

import orjson

from pipeline.losses import Loss, pointer

# Responses item types that are never a message, whatever keys they carry.
_NOT_MESSAGES = frozenset(
    ("function_call", "function_call_output", "custom_tool_call", "custom_tool_call_output", "reasoning")
)


def _key(x: Any) -> bytes:
    return orjson.dumps(x, option=orjson.OPT_SORT_KEYS)


def _shape(x: Any, items: bool) -> Any:
    """What an element *is* (kind, role, call id), so changed elements still align; ``items``: it
    is an element of a Responses item list (``/input``, ``/output``)."""
    if isinstance(x, dict):
        # anything with a role is a message, whatever else its "type" key says (a Claude Code
        # message carries "type": "message"; an unknown value there is a key like any other),
        # unless it is a Responses item whose type is a call, output or reasoning: a role there is
        # a stray key. A Chat or Anthropic message typed "reasoning" is still a message (taken
        # for a reasoning item, it paired with nothing and was flagged whole)
        t = x.get("type")
        typed = items and type(t) is str and t in _NOT_MESSAGES
        kind = t if typed else "message" if "role" in x else t
        # a tool_call_id pairs only a tool message, a call_id only calls and outputs, a tool_use_id
        # only a tool_result block, a role only messages: elsewhere they are keys like any other (a
        # tool_use_id on a message or a text block is reported as the unknown key it is; taken as
        # what the element is, it split the message from its way back and flagged it whole)
        tool_call_id = x.get("tool_call_id") if x.get("role") == "tool" else None
        call_id = x.get("call_id") if type(kind) is str and kind.endswith(("_call", "_output")) else None
        tool_use_id = x.get("tool_use_id") if kind == "tool_result" else None
        role = None if typed else x.get("role")
        return (kind, role, call_id, tool_call_id, tool_use_id)
    return type(x).__name__


def _pairs(a: list[Any], b: list[Any], late: bool = False, items: bool = False) -> list[tuple[int, int]]:
    """The best alignment of two lists: an equal pair scores 2, a same-shape pair 1 (dynamic
    programming over all alignments; lists here are small).

    difflib pairs the first longest contiguous block, which matches repeated user/assistant
    patterns one turn apart; a two-pass exact-then-shape match can also miss the best pairing.
    ``late`` breaks ties towards later elements (the same alignment computed from the end).
    """
    n, m = len(a), len(b)
    if late:
        return sorted((n - 1 - i, m - 1 - j) for i, j in _pairs(a[::-1], b[::-1], items=items))
    ka, kb = [_key(x) for x in a], [_key(x) for x in b]
    sa, sb = [_shape(x, items) for x in a], [_shape(x, items) for x in b]

    def score(i: int, j: int) -> int:
        return 2 if ka[i] == kb[j] else 1 if sa[i] == sb[j] else 0

    table = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            s = score(i, j)
            table[i][j] = max(table[i + 1][j], table[i][j + 1], table[i + 1][j + 1] + s if s else 0)
    pairs, i, j = [], 0, 0
    while i < n and j < m:
        s = score(i, j)
        if s and table[i][j] == table[i + 1][j + 1] + s:
            pairs.append((i, j))
            i, j = i + 1, j + 1
        elif table[i + 1][j] >= table[i][j + 1]:
            i += 1
        else:
            j += 1
    return pairs


def _align_lists(a: list[Any], b: list[Any], path: str, late: bool, gone: frozenset[str]) -> list[str]:
    """Paired elements are compared recursively; unpaired elements of ``a`` differ whole, and an
    unpaired element of ``b`` is a difference where it appeared. Elements of ``a`` the converter
    declared lost or moved as a whole (their path is in ``gone``) take no part in the pairing."""
    keep = [x for x in range(len(a)) if path + pointer(x) not in gone]
    items = path in ("/input", "/output")
    pairs = [(keep[x], y) for x, y in _pairs([a[x] for x in keep], b, late, items)]
    out: list[str] = []
    for x, y in pairs:
        out.extend(diff_paths(a[x], b[y], path + pointer(x), late, gone))
    paired_a = {x for x, _ in pairs}
    out.extend(path + pointer(x) for x in range(len(a)) if x not in paired_a)
    paired_b = dict((y, x) for x, y in pairs)
    last_a = -1
    for y in range(len(b)):
        if y in paired_b:
            last_a = paired_b[y]
            continue
        at = last_a + 1
        out.append(path + pointer(at) if at < len(a) else path or "/")
    return out


def diff_paths(
    a: Any, b: Any, path: str = "", late: bool = False, gone: frozenset[str] = frozenset()
) -> list[str]:
    """Every JSON pointer (into ``a``) where ``b`` differs. Lists are aligned with difflib, so a
    dropped element is one path rather than a shift of all that follow; types compare strictly."""
    if type(a) is not type(b):
        return [path or "/"]
    if isinstance(a, dict):
        out = []
        for k in a.keys() | b.keys():
            if k not in a or k not in b:
                out.append(path + pointer(k))
            else:
                out.extend(diff_paths(a[k], b[k], path + pointer(k), late, gone))
        return out
    if isinstance(a, list):
        return _align_lists(a, b, path, late, gone)
    return [] if a == b else [path or "/"]


def without_nulls(x: Any) -> Any:
    """``x`` without its null-valued object keys, at every depth: a dataset row's null is an absent
    key (``pipeline.encoders.from_dataset.null_as_absent``), so dropping one is no difference."""
    if isinstance(x, dict):
        return {k: without_nulls(v) for k, v in x.items() if v is not None}
    if isinstance(x, list):
        return [without_nulls(v) for v in x]
    return x


def uncovered(original: Any, back: Any, losses: list[Loss], *, dataset: bool = False) -> list[str]:
    """Differing paths that no reported loss covers (``dataset``: the original is a dataset row,
    whose null-valued keys mean absent ones)."""
    if dataset:
        original, back = without_nulls(original), without_nulls(back)
    prefixes = [loss.path for loss in losses]

    def covered(p: str) -> bool:
        return any(p == q or p.startswith(q + "/") or q in ("", "/") for q in prefixes)

    # Aligning lists is ambiguous when equally long alignments exist: a difference is explained
    # if either tie-breaking (pair with the earlier or the later equal element) covers it.
    gone = frozenset(prefixes)
    tries = [
        [p for p in diff_paths(original, back, "", late, g) if not covered(p)]
        for late in (False, True)
        for g in (frozenset(), gone)
    ]
    return min(tries, key=len)
