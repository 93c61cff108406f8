"""The compiled decoder against the Python one on mutated records: same table, same rejections.

The round-trip fuzzer's mutations (:class:`tests.encoders.test_fuzz_round_trip.Mutator`: one to
three field-level changes -- a deleted key, a value swapped for another JSON type, another
format's role or part type, an unknown key, a key moved between messages, an emptied list) over
``tests/cases.py`` and ``pipeline.synth`` records make exactly the records the Python decode rules
(roles, required fields, part types per role, tool names) reject, and the near misses they accept.
Each batch is decoded natively and with the Python codec and compared with
:func:`tests.native.differential.compare`; a differing batch is replayed a line at a time so the
failure names the record.

Seeded and bounded here (``CHATLAKE_NATIVE_FUZZ_N`` mutated records per format, 8,000 by default);
``CHATLAKE_NATIVE_FUZZ_N=50000 CHATLAKE_NATIVE_FUZZ_SEED=random`` runs a long unseeded campaign.
Every failure such a run found is pinned in :data:`PINNED`.
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
    n = int(os.environ.get("CHATLAKE_NATIVE_FUZZ_N", "8000"))
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


# Records a long unseeded run found native and Python disagreeing on (format, record).
PINNED: list[tuple[str, dict[str, Any]]] = []


@pytest.mark.parametrize(("fmt", "record"), PINNED)
def test_pinned_mutated_records(fmt: str, record: dict[str, Any]) -> None:
    compare([orjson.dumps(record)], fmt)
