"""Seeded mutation fuzzer for the no-silent-change rule on A -> B -> A.

A malformed record is either rejected at decode (the reason names the field) or every change the
round trip makes is reported as a loss on the way A -> B (or conversion refuses it with an error).
Valid records (``tests/cases.py`` and ``pipeline.synth``) get one to three field-level mutations
each (a key deleted, set, moved to a message of another role or grafted onto an item of another
type, a type or role swapped, a field written in its other string / object form, a list emptied);
every record that decodes is converted to both other formats and back, and the difference is
checked with the no-silent-loss checker (:func:`tests.encoders.coverage.uncovered`). A tenth as
many are written with a duplicate key or a number a double cannot keep, which reading would change:
each must be rejected at decode, naming it.

Bounded in CI (a few thousand mutated records, seeded). ``CHATLAKE_FUZZ_N=100000`` runs longer,
``CHATLAKE_FUZZ_SEED=random`` (or a number) unseeds it; a failure prints the mutated record, so it
can be pinned as an explicit test.
"""

from __future__ import annotations

import contextlib
import os
import random
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pytest

from pipeline import synth
from pipeline.encoders import convert_table
from pipeline.formats import decode_lines, decode_records
from tests.cases import CASES, STRAY_KEYS
from tests.encoders.coverage import uncovered

FORMATS = ("responses", "chat", "anthropic")
# Values a mutation writes in place of a field's value.
VALUES: tuple[Any, ...] = ("", None, 0, 2.5, -1, True, [], [1], {}, {"x": 1}, "x")
# Values a role is swapped for, besides the roles the seeds use.
BAD_ROLES = ("", "bogus", "Human", "USER")
BAD_TYPES = ("", "bogus", "message")
UNKNOWN_KEY = "zz_unknown"
# What a mutation returns when it found nothing to change (a record with no key left, a move that
# would make a cycle).
NO_MUTATION = "none"
# The last mutation Mutator.text names when it wrote its duplicate key or out-of-range number.
TEXT_MUTATIONS = ("duplicate key ", "number ")


def unmutated(done: list[str]) -> bool:
    """Whether no mutation of a record changed anything: it is its seed, valid, so it is counted as
    unmutatable, neither checked nor a failure."""
    return all(d == NO_MUTATION for d in done)


def text_unmutated(done: list[str]) -> bool:
    """Whether :meth:`Mutator.text` found no key or value to write twice or out of range (the
    record is ``{}``): the text reads back as it is, so there is nothing for decode to reject and
    it is counted as unmutatable, not as a failure."""
    return not done or not done[-1].startswith(TEXT_MUTATIONS)


def _json(x: Any) -> Any:
    return orjson.loads(orjson.dumps(x))


def _slots(x: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """Every (path, value) of a JSON value, the root included."""
    yield path, x
    if isinstance(x, dict):
        for k, v in x.items():
            yield from _slots(v, (*path, k))
    elif isinstance(x, list):
        for i, v in enumerate(x):
            yield from _slots(v, (*path, i))


def _get(x: Any, path: tuple[Any, ...]) -> Any:
    for p in path:
        x = x[p]
    return x


def _vocabulary(seeds: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    """The ``type`` and ``role`` strings the seed records use (sorted: the fuzzer is seeded)."""
    types, roles = set(), {"system", "developer", "user", "assistant", "tool", "function"}
    for rec in seeds:
        for path, v in _slots(rec):
            if path and type(v) is str and path[-1] == "type":
                types.add(v)
            elif path and type(v) is str and path[-1] == "role":
                roles.add(v)
    return sorted(types) + list(BAD_TYPES), sorted(roles) + list(BAD_ROLES)


class Mutator:
    """Seeded field-level mutations of one format's valid records."""

    def __init__(
        self, seeds: list[dict[str, Any]], rng: random.Random, vocabulary: tuple[list[str], list[str]]
    ) -> None:
        self.seeds = seeds
        self.rng = rng
        self.types, self.roles = vocabulary

    def record(self) -> tuple[dict[str, Any], list[str]]:
        """A mutated copy of a random seed record and the mutations applied."""
        rec = _json(self.rng.choice(self.seeds))
        done = [self.mutate(rec) for _ in range(self.rng.choice((1, 1, 1, 2, 3)))]
        return rec, done

    def mutate(self, rec: dict[str, Any]) -> str:
        rng = self.rng
        slots = [(p, v) for p, v in _slots(rec) if p]
        op = rng.choice(("delete", "set", "set", "type", "role", "unknown", "move", "empty", "graft", "form"))
        if op == "graft":
            done = self.graft(rec)
            if done is not None:
                return done
            op = "form"
        if op == "form":
            done = self.form(rec)
            if done is not None:
                return done
            op = "set"
        if op == "type" or op == "role":
            named = [p for p, v in slots if p[-1] == op]
            if named:
                path = rng.choice(named)
                value = rng.choice(self.types if op == "type" else self.roles)
                _get(rec, path[:-1])[path[-1]] = value
                return f"{op} {list(path)} = {value!r}"
            op = "set"
        if op == "move":
            messages = [(p, v) for p, v in _slots(rec) if type(v) is dict and type(v.get("role")) is str]
            if len(messages) >= 2:
                (pa_, a), (pb, b) = rng.sample(messages, 2)
                keys = [k for k in a if k != "role"]
                if keys and a["role"] != b["role"]:
                    k = rng.choice(keys)
                    if pb[: len(pa_) + 1] == (*pa_, k):  # b lives inside the value: a cycle
                        return NO_MUTATION
                    b[k] = a.pop(k)
                    return f"move {list(pa_)}.{k} -> {list(pb)}"
            op = "unknown"
        if op == "unknown":
            dicts = [p for p, v in _slots(rec) if type(v) is dict]
            path = rng.choice(dicts)
            _get(rec, path)[UNKNOWN_KEY] = _json(rng.choice(VALUES))  # a copy: VALUES stays as it is
            return f"unknown {list(path)}"
        if op == "empty":
            lists = [p for p, v in slots if type(v) is list and v]
            if lists:
                path = rng.choice(lists)
                _get(rec, path).clear()
                return f"empty {list(path)}"
            op = "delete"
        if not slots:
            return NO_MUTATION
        path = rng.choice(slots)[0]
        parent = _get(rec, path[:-1])
        if op == "delete":
            del parent[path[-1]]
            return f"delete {list(path)}"
        value = rng.choice(VALUES)
        parent[path[-1]] = _json(value)
        return f"set {list(path)} = {value!r}"


    def graft(self, rec: dict[str, Any]) -> str | None:
        """A key of one item, block or message copied onto another of a different ``type`` or role
        (a call's ``arguments`` on a message, a custom call's ``input`` on a function call): keys
        moved between item types. None when the record has no two such objects."""
        typed = [
            (p, v) for p, v in _slots(rec) if type(v) is dict and type(v.get("type", v.get("role"))) is str
        ]
        if len(typed) < 2:
            return None
        (pa_, a), (pb, b) = self.rng.sample(typed, 2)
        kind = lambda d: (d.get("type"), d.get("role"))  # noqa: E731
        keys = [k for k in a if k not in b and k not in ("type", "role")]
        if not keys or kind(a) == kind(b) or pb[: len(pa_)] == pa_ or pa_[: len(pb)] == pb:
            return None  # same kind, nothing to move, or one holds the other
        k = self.rng.choice(keys)
        b[k] = _json(a[k])
        return f"graft {list(pa_)}.{k} -> {list(pb)}"

    def form(self, rec: dict[str, Any]) -> str | None:
        """A field written in its other form: a string as ``{"type": s}`` (tool_choice), an object's
        type as the bare string, a text as a list of one text part, one text part as its text."""
        rng = self.rng
        slots = [(p, v) for p, v in _slots(rec) if p and type(p[-1]) is str]
        if not slots:
            return None
        path, v = rng.choice(slots)
        parent = _get(rec, path[:-1])
        if type(v) is str:
            new: Any = rng.choice(({"type": v}, [{"type": rng.choice(("text", "input_text")), "text": v}]))
        elif type(v) is dict and type(v.get("type")) is str:
            new = v["type"]
        elif type(v) is list and len(v) == 1 and type(v[0]) is dict and type(v[0].get("text")) is str:
            new = v[0]["text"]
        else:
            return None
        parent[path[-1]] = new
        return f"form {list(path)}"

    def text(self) -> tuple[bytes, list[str]]:
        """A mutated record written with one thing orjson's reading would change: a duplicate key (the
        last would win) or a number a double cannot keep (``1e-400`` reads as 0). The decoders
        reject both, naming the key's path."""
        rec, done = self.record()
        rng = self.rng
        objects = [p for p, v in _slots(rec) if type(v) is dict and v]
        if rng.random() < 0.5 and objects:
            path = rng.choice(objects)
            obj = _get(rec, path)
            key = rng.choice(list(obj))
            mark = "\x01dup\x01"
            obj[mark] = None
            raw = orjson.dumps(rec).replace(
                orjson.dumps(mark) + b":null", orjson.dumps(key) + b":" + orjson.dumps(rng.choice(VALUES)), 1
            )
            return raw, [*done, f"duplicate key {list(path)}.{key}"]
        slots = [(p, v) for p, v in _slots(rec) if p]
        if not slots:
            return orjson.dumps(rec), done
        path = rng.choice(slots)[0]
        mark = "\x01num\x01"
        _get(rec, path[:-1])[path[-1]] = mark
        number = rng.choice((b"1e-400", b"-2.5e-999", b"1e400", b"-1E+309"))
        return orjson.dumps(rec).replace(orjson.dumps(mark), number, 1), [*done, f"number {list(path)}"]


@dataclass
class Stats:
    """Counts of one campaign; ``failures`` holds (direction, mutations, record, problem)."""

    tried: int = 0
    accepted: int = 0
    rejected: int = 0
    checked: int = 0
    texts: int = 0  # records written with a duplicate key or an out-of-range number (all rejected)
    unmutatable: int = 0  # records and texts no mutation could change (their seed; not checked)
    refused: Counter[str] = field(default_factory=Counter)
    failures: list[tuple[str, list[str], dict[str, Any], Any]] = field(default_factory=list)

    def line(self) -> str:
        return (
            f"{self.tried} mutated records: {self.accepted} accepted, {self.rejected} rejected at decode; "
            f"{self.checked} round trips checked, {sum(self.refused.values())} refused, "
            f"{self.texts} with a duplicate key or an out-of-range number (rejected), "
            f"{self.unmutatable} unmutatable (not checked), "
            f"{len(self.failures)} failures"
        )


def _refusal(error: str) -> str:
    return error.split(":")[0][:60]


def round_trips(records: list[dict[str, Any]], a: str, b: str) -> tuple[list[Any], Counter[str]]:
    """Check records of format ``a`` (all decodable) A -> B -> A, batched.

    Returns one entry per record -- None when the rule holds (the changes are all reported, or a
    hop refused the record with an error), else ``(what, detail)`` -- and the refusals by reason.
    """
    res = decode_records(records, a)
    assert res.rejected == [], res.rejected[0].error
    refused: Counter[str] = Counter()
    out: list[Any] = [None] * len(records)
    there = convert_table(res.table, b)
    ok = [i for i, t in enumerate(there) if t.error is None]
    for t in there:
        if t.error is not None:
            refused[_refusal(t.error)] += 1
    mid = decode_records([there[i].record for i in ok], b)
    for r in mid.rejected:
        out[ok[r.line - 1]] = ("B rejects our output", r.error)
    ok = [ok[line - 1] for line in mid.table.column("source_line").to_pylist()]
    back = convert_table(mid.table, a)
    for i, k in zip(ok, back, strict=True):
        if k.error is not None:
            refused[_refusal(k.error)] += 1
        elif bad := uncovered(records[i], k.record, there[i].losses):
            out[i] = ("unreported change", bad)
    return out, refused


def run(n: int, seed: int) -> Stats:
    """Mutate ``n`` records (a third per source format) and check them in both directions each."""
    rng = random.Random(seed)
    stats = Stats()
    # types and roles are swapped for any format's: another format's part type is a likely mistake
    vocabulary = _vocabulary([rec for a in FORMATS for _, rec in CASES[a]])
    for a in FORMATS:
        seeds = [rec for _, rec in CASES[a]] + list(synth.generate(a, 60, seed=rng.randrange(2**32)))
        mutator = Mutator(seeds, rng, vocabulary)
        made = [mutator.record() for _ in range(n // len(FORMATS))]
        batch = [(rec, done) for rec, done in made if not unmutated(done)]
        stats.tried += len(batch)
        made_texts = [mutator.text() for _ in range(max(1, n // len(FORMATS) // 10))]
        texts = [(raw, done) for raw, done in made_texts if not text_unmutated(done)]
        stats.unmutatable += len(made) - len(batch) + len(made_texts) - len(texts)
        stats.texts += len(texts)
        kept_text = decode_lines([raw for raw, _ in texts], a)  # each one changes on reading: rejected
        for line in kept_text.table.column("source_line").to_pylist():
            raw, done = texts[line - 1]
            stats.failures.append((f"{a} decode", done, orjson.loads(raw), "accepted, changed on reading"))
        for r in kept_text.rejected:
            if not r.error.split(": ", 1)[-1].startswith(("duplicate key", "number too")):
                raw, done = texts[r.line - 1]
                stats.failures.append((f"{a} decode", done, {"text": raw.decode()}, r.error))
        res = decode_records([rec for rec, _ in batch], a)
        stats.rejected += len(res.rejected)
        kept = [batch[line - 1] for line in res.table.column("source_line").to_pylist()]
        stats.accepted += len(kept)
        for b in FORMATS:
            if b == a:
                continue
            problems, refused = round_trips([rec for rec, _ in kept], a, b)
            stats.checked += len(kept)
            stats.refused += refused
            for (rec, done), problem in zip(kept, problems, strict=True):
                if problem is not None:
                    stats.failures.append((f"{a} -> {b} -> {a}", done, rec, problem))
    return stats


def _settings() -> tuple[int, int]:
    n = int(os.environ.get("CHATLAKE_FUZZ_N", "3000"))
    raw = os.environ.get("CHATLAKE_FUZZ_SEED", "15")
    seed = random.SystemRandom().randrange(2**32) if raw == "random" else int(raw)
    return n, seed


def test_mutated_records_change_nothing_silently() -> None:
    n, seed = _settings()
    stats = run(n, seed)
    print(f"\nfuzz seed {seed}: {stats.line()}; refused {dict(stats.refused)}")
    assert stats.accepted > n // 4 and stats.rejected > n // 20  # the mutations reach both outcomes
    shown = [f"{d}: {m}\n  {orjson.dumps(rec).decode()}\n  {bad}" for d, m, rec, bad in stats.failures[:5]]
    assert stats.failures == [], f"seed {seed}, {len(stats.failures)} failures:\n" + "\n".join(shown)


def test_mutator_is_seeded_and_mutates() -> None:
    seeds = [rec for _, rec in CASES["chat"]]
    words = _vocabulary(seeds)
    m1, m2 = Mutator(seeds, random.Random(3), words), Mutator(seeds, random.Random(3), words)
    one = [m1.record() for _ in range(20)]
    two = [m2.record() for _ in range(20)]
    assert one == two
    changed = sum(rec not in seeds for rec, _ in one)
    assert changed >= 15  # a mutation can land back on a seed (delete an unknown key), rarely


def test_unmutatable_records_are_told_apart() -> None:
    """A record with no key (``{}``) often gives the mutator nothing to change: such a record is its
    seed and such a text has no duplicate key or number, so both are counted as unmutatable, not as
    a decode failure (``{}`` is rejected for a missing list, not as a duplicate key)."""
    empty = Mutator([{}], random.Random(1), _vocabulary([]))
    records = [empty.record() for _ in range(50)]
    texts = [empty.text() for _ in range(50)]
    assert {orjson.dumps(rec) for rec, done in records if unmutated(done)} == {b"{}"}
    assert {raw for raw, done in texts if text_unmutated(done)} == {b"{}"}
    mutated = [raw for raw, done in texts if not text_unmutated(done)]
    read = decode_lines(mutated, "chat")  # the others carry what decode rejects as such
    reasons = {r.error.split(": ", 1)[-1].split(" ")[0] for r in read.rejected}
    assert len(read.rejected) == len(mutated) > 0 and reasons <= {"duplicate", "number"}, reasons


# Every failure the fuzzer found, pinned (issue 15 item 4). A record is either rejected at decode,
# the reason naming the field (the decode rules have their own tests in tests/formats), or its
# round trips in both directions report every change.
_CALL = {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"}
_OUT = {"type": "function_call_output", "call_id": "c", "output": "x"}
PINNED_REJECTED = [
    # the campaign's findings
    ("chat", {"messages": [{"role": "user", "content": "x", "refusal": "no"}]}, "$.messages[0].refusal"),
    ("chat", {"messages": [{"role": "", "content": "x"}]}, "$.messages[0].role"),
    (
        "chat",
        {
            "messages": [
                {"role": "assistant", "tool_calls": [{"id": "c", "type": "x", "function": {"name": "f"}}]}
            ]
        },
        "$.messages[0].tool_calls[0].type",
    ),
    (
        "chat",
        {
            "messages": [
                {"role": "assistant", "tool_calls": [{"id": "c", "type": "function", "function": {}}]}
            ]
        },
        "$.messages[0].tool_calls[0].function.name",
    ),
    (
        "chat",
        {"messages": [{"role": "user", "content": [{"type": "input_text", "text": "x"}]}]},
        "$.messages[0]",
    ),
    (
        "chat",
        {"messages": [{"role": "user", "content": "x", "tool_calls": [{"id": "c", "type": "function"}]}]},
        "$.messages[0].tool_calls",
    ),
    ("anthropic", {"messages": [{"role": "", "content": "x"}]}, "$.messages[0].role"),
    ("anthropic", {"messages": [], "tools": [{"input_schema": {}}]}, "$.tools[0].name"),
    (
        "anthropic",
        {"messages": [{"role": "user", "content": [{"text": "x"}]}]},
        "$.messages[0].content[0].type",
    ),
    # found by this fuzzer
    ("responses", {"input": [{"role": "tool", "content": "x"}]}, "$.input[0].role"),
    ("responses", {"input": None}, "$.input"),
    ("responses", {"input": [{"role": "user"}]}, "$.input[0].content"),
    ("responses", {"input": [], "tool_choice": {"type": "function"}}, "$.tool_choice.name"),
    (
        "chat",
        {"messages": [], "tool_choice": {"type": "function", "function": {}}},
        "$.tool_choice.function.name",
    ),
    (
        "chat",
        {
            "messages": [
                {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "u", "detail": 0}}]}
            ]
        },
        "$.messages[0].content[0].image_url.detail",
    ),
    (
        "anthropic",
        {"messages": [{"role": "assistant", "content": [{"type": "tool_result", "tool_use_id": "t"}]}]},
        "$.messages[0].content[0].type",
    ),
    (
        "anthropic",
        {
            "messages": [
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": 1}]}
            ]
        },
        "$.messages[0].content[0].input",
    ),
]
PINNED_REJECTED += [
    (
        "responses",
        {"input": [{"role": "user", "content": [{"type": "image_url", "image_url": "u"}]}]},
        "$.input[0]",
    ),
    ("responses", {"input": [{**_OUT, "output": [{"text": "x"}]}]}, "$.input[0].output[0].type"),
]
PINNED_REJECTED.append(
    (
        "chat",
        {"messages": [{"role": "user", "content": [{"type": "input_image", "image_url": "u"}]}]},
        "$.messages[0]",
    )
)
PINNED_REPORTED = [
    # a legacy function message comes back as a tool message
    (
        "chat",
        {
            "messages": [
                {
                    "role": "assistant",
                    "tool_calls": [
                        {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}
                    ],
                },
                {"role": "function", "name": "f", "tool_call_id": "c", "content": "r"},
            ]
        },
    ),
    # a tool message turned assistant after a message with calls: Chat's way back joins them
    (
        "chat",
        {
            "messages": [
                {"role": "user", "content": "go"},
                {
                    "role": "assistant",
                    "tool_calls": [
                        {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}
                    ],
                },
                {"role": "assistant", "tool_call_id": "c", "content": "r"},
            ]
        },
    ),
    # a stop_reason no API writes (the encoders once raised TypeError on it)
    ("anthropic", {"type": "message", "role": "assistant", "content": [], "stop_reason": [1]}),
    # a fractional Chat created: Chat's way back writes whole seconds
    ("chat", {"object": "chat.completion", "created": 2.5, "choices": []}),
    # a tool_choice object of type auto comes back as the string
    ("chat", {"messages": [{"role": "user", "content": "x"}], "tool_choice": {"type": "auto", "x": 1}}),
    # a null image detail: Responses gets 'auto'
    (
        "chat",
        {
            "messages": [
                {
                    "role": "user",
                    "content": [{"type": "image_url", "image_url": {"url": "u", "detail": None}}],
                }
            ]
        },
    ),
    # a response object without its creation time, or with a null output
    ("responses", {"object": "response", "output": []}),
    ("responses", {"object": "response", "created_at": 1, "output": None}),
    (
        "chat",
        {
            "object": "chat.completion",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "a"}}],
        },
    ),
    # a call's keys on an output item
    ("responses", {"input": [_CALL, {**_OUT, "arguments": "{}"}]}),
    # a tool_call_id on a user message is an unknown key there (the checker once misaligned it)
    ("chat", {"messages": [{"role": "user", "content": "hi", "tool_call_id": "c"}]}),
    # a Responses function tool without strict / parameters: the way back from Chat sets them null
    ("responses", {"input": "x", "tools": [{"type": "function", "name": "f"}]}),
    # an assistant message without content does not come back from Chat or Anthropic
    ("responses", {"input": [{"role": "user", "content": "a"}, {"type": "message", "role": "assistant"}]}),
    ("responses", {"input": [{"role": "user", "content": "a"}, _CALL, _OUT, {"role": "assistant"}]}),
    # a Claude Code message's "type" that is not "message" (the checker once misaligned it)
    (
        "anthropic",
        {
            "messages": [
                {"role": "user", "content": "a"},
                {"role": "assistant", "type": "message", "content": []},
                {
                    "role": "assistant",
                    "type": "auto",
                    "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}],
                },
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "r"}]},
            ]
        },
    ),
    # a user message whose only block that comes back is a tool_use: it returns as an assistant message
    (
        "anthropic",
        {
            "messages": [
                {"role": "user", "content": "a"},
                {
                    "role": "user",
                    "content": [
                        {"type": "x_note", "text": "run"},
                        {"type": "tool_use", "id": "t", "name": "f", "input": {}},
                    ],
                },
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "ok"}]},
            ]
        },
    ),
]

# tool_choice keys the choice's type does not carry (found by session 7's campaign: an Anthropic
# auto choice with a name lost it, unreported): each reported on its own
_USER_X = {"role": "user", "content": "x"}
_F_CHOICE = {"type": "function"}
PINNED_REPORTED += [
    ("anthropic", {"messages": [_USER_X], "tool_choice": {"type": "auto", "name": "g"}}),
    ("anthropic", {"messages": [_USER_X], "tool_choice": {"type": "tool", "name": "g", "function": {}}}),
    ("anthropic", {"messages": [_USER_X], "tool_choice": {"type": "any", "custom": 1}}),
    ("responses", {"input": "x", "tool_choice": {**_F_CHOICE, "name": "f", "disable_parallel_tool_use": 1}}),
    ("chat", {"messages": [_USER_X], "tool_choice": {**_F_CHOICE, "function": {"name": "f"}, "name": "g"}}),
    ("chat", {"messages": [_USER_X], "tool_choice": {**_F_CHOICE, "function": {"name": "f"}, "custom": {}}}),
]

# found by the mutations that graft a key onto an object of another type: a call_id on a content
# part is a key like any other (the checker once aligned the part as a call)
_ASSISTANT_PART = {"type": "output_text", "text": "a", "annotations": [], "call_id": "c"}
_WITH_PART = {"input": [_USER_X, {"role": "assistant", "content": [_ASSISTANT_PART]}]}
PINNED_REPORTED.append(("responses", _WITH_PART))


@pytest.mark.parametrize(("fmt", "record", "field"), PINNED_REJECTED)
def test_pinned_failures_rejected_at_decode(fmt: str, record: dict[str, Any], field: str) -> None:
    [rejected] = decode_records([record], fmt).rejected
    assert rejected.error.startswith(field), rejected.error


@pytest.mark.parametrize(("fmt", "record"), PINNED_REPORTED)
def test_pinned_failures_report_every_change(fmt: str, record: dict[str, Any]) -> None:
    for b in FORMATS:
        if b != fmt:
            problems, refused = round_trips([record], fmt, b)
            assert (problems, refused) == ([None], Counter()), b


def _id_less_result_before_its_calls_own_result() -> dict[str, Any]:
    uses = [{"type": "tool_use", "id": c, "name": "f", "input": {}} for c in ("a", "b")]
    results = [
        {"type": "tool_result", "tool_use_id": "b", "content": "rb"},
        {"type": "tool_result", "tool_use_id": None, "content": "rn"},
        {"type": "tool_result", "tool_use_id": "a", "content": "ra"},
    ]
    return {
        "messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": uses},
            {"role": "user", "content": results},
            {"role": "assistant", "content": "done"},
        ]
    }


@pytest.mark.parametrize("b", ["chat", "responses"])
def test_pinned_id_less_result_before_its_calls_own_result(b: str) -> None:
    """An id-less result does not take a call whose own result (by id) comes later: it has no call
    left to answer, so it is the orphan (dropped, reported), and both calls keep their own results.
    (It once paired with call ``a``: the way back kept it and dropped ``ra``, unreported.)"""
    record = _id_less_result_before_its_calls_own_result()
    problems, _ = round_trips([record], "anthropic", b)
    assert problems == [None]
    [there] = convert_table(decode_records([record], "anthropic").table, b)
    orphans = {(x.path, x.kind) for x in there.losses if x.kind == "orphan_output"}
    assert orphans == {("/messages/2/content/1", "orphan_output")}
    [back] = convert_table(decode_records([there.record], b).table, "anthropic")
    kept = [blk for m in back.record["messages"] if type(m["content"]) is list for blk in m["content"]]
    results = [(blk["tool_use_id"], blk.get("content")) for blk in kept if blk["type"] == "tool_result"]
    assert results == [("b", "rb"), ("a", "ra")]


# An Anthropic user message of text right after a user message of tool results comes back joined to
# it (the way back's normal form joins adjacent same-role messages; the server merges them anyway):
# reported message_merge at both, whether the call and result have ids or are paired by position.
def _text_after_results(ids: bool) -> dict[str, Any]:
    use = {"type": "tool_use", "name": "sh", "input": {"c": "ls"}, **({"id": "t"} if ids else {})}
    result = {"type": "tool_result", "content": "a.txt", **({"tool_use_id": "t"} if ids else {})}
    return {
        "max_tokens": 64,
        "messages": [
            {"role": "user", "content": "list files"},
            {"role": "assistant", "content": [use]},
            {"role": "user", "content": [result]},
            {"role": "user", "content": "Done."},
        ],
    }


@pytest.mark.parametrize("ids", [True, False], ids=["with ids", "id-less"])
@pytest.mark.parametrize("b", ["chat", "responses"])
def test_pinned_text_after_tool_results_is_reported_merged(b: str, ids: bool) -> None:
    record = _text_after_results(ids)
    assert round_trips([record], "anthropic", b) == ([None], Counter())
    [there] = convert_table(decode_records([record], "anthropic").table, b)
    merged = {x.path for x in there.losses if x.kind == "message_merge"}
    assert merged == {"/messages/2", "/messages/3"}


# Failures the long unseeded campaigns found and that are fixed, as the fuzzer produced them
# (direction, mutations, record, expect): "expect" is the field the decode rejection names, or
# "reported" when the record decodes and the A -> B hop now reports every change.
_FIXED_FILE = Path(__file__).parent / "fuzz_fixed_failures.jsonl"
_FIXED = [orjson.loads(line) for line in _FIXED_FILE.read_bytes().splitlines()]


@pytest.mark.parametrize("case", _FIXED, ids=[f"{c['direction']}: {c['mutations']}"[:80] for c in _FIXED])
def test_fixed_failure(case: dict[str, Any]) -> None:
    a, b = case["direction"].split(" -> ")[:2]
    rejected = decode_records([case["record"]], a).rejected
    if case["expect"] != "reported":
        assert [r.error.split(":")[0] for r in rejected] == [case["expect"]]
        return
    assert rejected == []
    problems, _ = round_trips([case["record"]], a, b)
    assert problems == [None]


# Records a conversion once changed unreported (tests/cases.py's STRAY_KEYS), in both codecs: the
# compiled decoder and encoders agree with the Python ones byte for byte, the record comes back from
# its own format verbatim, and every change a round trip through another format makes is reported
# on the way out, at the path named.
@pytest.mark.parametrize("codec_name", ["python", "native"])
@pytest.mark.parametrize(
    ("fmt", "record", "reported"), [c[1:] for c in STRAY_KEYS], ids=[c[0] for c in STRAY_KEYS]
)
def test_stray_keys_kept_or_reported(
    fmt: str, record: dict[str, Any], reported: dict[str, str], codec_name: str
) -> None:
    from pipeline import codec
    from tests.helpers import json_diff
    from tests.native.differential import compare, python_codec
    from tests.native.encode_diff import compare_encode

    if codec_name == "native":
        if codec.native_module(fmt) is None:
            pytest.skip("the compiled codec is not built (pip install -e . builds it)")
        res = compare([orjson.dumps(record)], fmt)  # decoded by the compiled decoder, as Python does
        assert res.native_fallback == {}
        for b in FORMATS:
            compare_encode(res.table, b)  # the compiled encoders write what Python writes
        context = contextlib.nullcontext()
    else:
        context = python_codec()
    with context:
        table = decode_records([record], fmt).table
        [same] = convert_table(table, fmt)
        assert json_diff(record, same.record) is None
        for b, path in reported.items():
            [there] = convert_table(table, b)
            assert path in [loss.path for loss in there.losses]
            assert round_trips([record], fmt, b) == ([None], Counter())
