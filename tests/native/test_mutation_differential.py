"""The compiled decoder against the Python one on mutated records: same table, same rejections.

The round-trip fuzzer's mutations (:class:`tests.encoders.test_fuzz_round_trip.Mutator`: one to
three field-level changes -- a deleted key, a value swapped for another JSON type, another
format's role or part type, an unknown key, a key moved between messages or onto an item of another
type, a field in its other string or object form, an emptied list; one record in ten written with a
duplicate key or a number a double cannot keep) over
``tests/cases.py`` and ``pipeline.synth`` records make exactly the records the Python decode rules
(roles, required fields, part types per role, tool names) reject, and the near misses they accept.
Each batch is decoded natively and with the Python codec and compared with
:func:`tests.native.differential.compare`; a differing batch is replayed a line at a time so the
failure names the record.

Seeded and bounded here (``CHATLAKE_NATIVE_FUZZ_N`` mutated records per format, 15,000 by default);
``CHATLAKE_NATIVE_FUZZ_N=50000 CHATLAKE_NATIVE_FUZZ_SEED=random`` runs a long unseeded campaign.
:data:`REJECTED` pins one record per rule the native decoder has to hand to Python.
"""

from __future__ import annotations

import os
import random
from typing import Any

import orjson
import pytest

from pipeline import codec, synth
from tests.cases import CASES
from tests.encoders.test_fuzz_round_trip import FORMATS, Mutator, _vocabulary
from tests.native.differential import compare

pytestmark = pytest.mark.skipif(
    codec.native_module("responses") is None,
    reason="pipeline._native is not built (no C compiler at install): "
    "run `python tests/native/build_native.py --out .` or `pip install -e .` to test it",
)

BATCH = 250


def _settings() -> tuple[int, int]:
    n = int(os.environ.get("CHATLAKE_NATIVE_FUZZ_N", "15000"))
    raw = os.environ.get("CHATLAKE_NATIVE_FUZZ_SEED", "3")
    seed = random.SystemRandom().randrange(2**32) if raw == "random" else int(raw)
    return n, seed


def campaign(fmt: str, n: int, seed: int) -> tuple[dict[str, int], list[tuple[list[str], bytes, str]]]:
    """Mutate ``n`` records of ``fmt`` and compare both decoders on them, a batch at a time.

    Returns the counts (tried, native, rejected, fallback) and the failures as (mutations, line,
    difference)."""
    rng = random.Random(f"{seed}-{fmt}")
    vocabulary = _vocabulary([rec for f in FORMATS for _, rec in CASES[f]])
    seeds = [rec for _, rec in CASES[fmt]] + list(synth.generate(fmt, 60, seed=rng.randrange(2**32)))
    mutator = Mutator(seeds, rng, vocabulary)
    counts = {"tried": 0, "native": 0, "rejected": 0, "fallback": 0}
    failures: list[tuple[list[str], bytes, str]] = []
    while counts["tried"] < n:
        batch = [mutator.record() for _ in range(min(BATCH, n - counts["tried"]))]
        lines = [orjson.dumps(rec) for rec, _ in batch]
        # one in ten written with a duplicate key or a number a double cannot keep
        for k in range(0, len(batch), 10):
            lines[k], done = mutator.text()
            batch[k] = ({}, done)
        counts["tried"] += len(lines)
        try:
            res = compare(lines, fmt)
        except AssertionError:
            for (_, done), line in zip(batch, lines, strict=True):
                try:
                    compare([line], fmt)
                except AssertionError as exc:
                    failures.append((done, line, str(exc)[:1500]))
            continue
        fallback = sum(res.native_fallback.values())
        counts["fallback"] += fallback
        counts["rejected"] += len(res.rejected)
        counts["native"] += len(lines) - fallback
    return counts, failures


@pytest.mark.parametrize("fmt", FORMATS)
def test_mutated_records_decode_identically_native_and_python(fmt: str) -> None:
    n, seed = _settings()
    counts, failures = campaign(fmt, n, seed)
    print(f"\n{fmt} seed {seed}: {counts}, {len(failures)} failures")
    shown = [f"{done}\n  {line.decode(errors='replace')}\n  {why}" for done, line, why in failures[:5]]
    assert failures == [], f"seed {seed}, {len(failures)} records differ:\n" + "\n".join(shown)
    # both outcomes are reached, and the native decoder did most of the work: a native decoder
    # that handed every line back would compare Python with itself and pass
    assert counts["rejected"] > n // 20, counts
    assert counts["native"] > n // 3, counts


# One record per Python decode rule the native decoder did not know (the 200+ differences per
# 1,000 mutated records it made before): each must reach the Python decoder, which rejects it.
# Long unseeded runs (60,000 mutated records per format) found no other difference.
_MSG = {"role": "user", "content": "x"}
_ASSISTANT, _USER = {"role": "assistant"}, {"role": "user"}
_TC = {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}
_OUT_TEXT = {"type": "output_text", "text": "x"}
_IMG = {"type": "image_url", "image_url": {"url": "u"}}
REJECTED: list[tuple[str, dict[str, Any]]] = [
    ("responses", {"input": None}),
    ("responses", {"input": [{"role": "tool", "content": "x"}]}),
    ("responses", {"input": [{"role": "user"}]}),
    ("responses", {"input": [{"role": "user", "content": None}]}),
    ("responses", {"input": [{"role": "user", "content": [{"type": "output_text", "text": "x"}]}]}),
    ("responses", {"input": [{"role": "user", "content": [{"type": "text", "text": "x"}]}]}),
    ("responses", {"input": [{"role": "assistant", "content": [{"type": "refusal"}]}]}),
    ("responses", {"input": [{"role": "user", "type": 5, "content": "x"}]}),
    ("responses", {"input": [{"type": "function_call", "call_id": "c", "arguments": "{}"}]}),
    ("responses", {"input": [{"type": "function_call_output", "call_id": "c", "output": [{"text": "x"}]}]}),
    ("responses", {"input": [_MSG], "tools": [{"type": "function"}]}),
    ("responses", {"input": [_MSG], "tools": [{"name": "f"}]}),
    ("responses", {"input": [_MSG], "tool_choice": {"type": "function"}}),
    ("chat", {"messages": [{"role": "", "content": "x"}]}),
    ("chat", {"messages": [{"role": "user"}]}),
    ("chat", {"messages": [{"role": "function", "content": "x"}]}),
    ("chat", {"messages": [{"role": "user", "content": "x", "refusal": None}]}),
    ("chat", {"messages": [{"role": "assistant", "content": "x", "refusal": 1}]}),
    ("chat", {"messages": [{"role": "user", "content": "x", "tool_calls": [_TC]}]}),
    ("chat", {"messages": [{"role": "assistant", "tool_calls": [{**_TC, "type": None}]}]}),
    ("chat", {"messages": [{"role": "assistant", "tool_calls": [{**_TC, "function": {"name": "f"}}]}]}),
    ("chat", {"messages": [{"role": "user", "content": [{"type": "input_text", "text": "x"}]}]}),
    ("chat", {"messages": [{"role": "system", "content": [_IMG]}]}),
    ("chat", {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]}),
    ("chat", {"messages": [_MSG], "tools": [{"type": "function", "function": {}}]}),
    ("anthropic", {"messages": [{"role": "", "content": []}]}),
    ("anthropic", {"messages": [{"role": "user"}]}),
    ("anthropic", {"messages": [{"role": "user", "content": [{"text": "x"}]}]}),
    ("anthropic", {"messages": [{**_ASSISTANT, "content": [{"type": "tool_result", "tool_use_id": ""}]}]}),
    ("anthropic", {"messages": [{**_ASSISTANT, "content": [{"type": "tool_use", "id": "t", "name": "f"}]}]}),
    ("anthropic", {"messages": [{"role": "user", "content": [{"type": "input_text", "text": "x"}]}]}),
    ("anthropic", {"messages": [_MSG], "tools": [{"name": "f"}]}),
    ("anthropic", {"messages": [_MSG], "tool_choice": {"type": "tool"}}),
]
# a tool_result content block whose type is no string (an object or list one once raised TypeError)
REJECTED += [
    ("anthropic", {"messages": [{**_USER, "content": [{"type": "tool_result", "content": [{"type": t}]}]}]})
    for t in ({}, [1], 1, None)
]


@pytest.mark.parametrize(("fmt", "record"), REJECTED)
def test_records_a_python_rule_rejects_reach_the_python_decoder(fmt: str, record: dict[str, Any]) -> None:
    res = compare([orjson.dumps(record)], fmt)
    assert len(res.rejected) == 1 and res.native_fallback == {"validation": 1}


# Shapes the native decoder hands to Python whether or not a Python rule rejects them today: the
# whitelists (a tool type, an image detail the checks do not list) and the rules of branch abc2
# (an Anthropic tool_result's non-string tool_use_id or output_text block, an image source without
# its url, a Responses tool output's output_text part, a tool_choice object's null type).
HANDED_BACK: list[tuple[str, dict[str, Any]]] = [
    ("responses", {"input": [_MSG], "tools": [{"type": "bogus_tool"}]}),
    ("chat", {"messages": [_MSG], "tools": [{"type": "bogus_tool"}]}),
    ("chat", {"messages": [{**_USER, "content": [{**_IMG, "image_url": {"url": "u", "detail": "?"}}]}]}),
    ("anthropic", {"messages": [_MSG], "tool_choice": {"type": "bogus"}}),
    ("anthropic", {"messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": 1}]}]}),
    ("anthropic", {"messages": [{**_USER, "content": [{"type": "image", "source": {"type": "url"}}]}]}),
    ("anthropic", {"messages": [{**_USER, "content": [{"type": "tool_result", "content": [_OUT_TEXT]}]}]}),
    ("anthropic", {"messages": [{**_USER, "content": [{"type": "tool_result", "content": [{"type": {}}]}]}]}),
    ("chat", {"messages": [_MSG], "tool_choice": {"type": None}}),
    ("responses", {"input": [{"type": "function_call_output", "call_id": "c", "output": [_OUT_TEXT]}]}),
    ("responses", {"input": [{"type": "function_call_output", "call_id": "c", "output": [{"type": "x"}]}]}),
]


@pytest.mark.parametrize(("fmt", "record"), HANDED_BACK)
def test_shapes_outside_the_whitelists_reach_the_python_decoder(fmt: str, record: dict[str, Any]) -> None:
    assert compare([orjson.dumps(record)], fmt).native_fallback == {"validation": 1}
