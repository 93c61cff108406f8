"""Seeded mutation fuzzing of every wire decoder: no exception escapes ``decode_lines``, every line
is a row or a rejection with a reason, and every row encodes back.

The CI run is bounded (a few seconds per format); ``CHATLAKE_FUZZ_N=<inputs per format>`` runs
longer and ``CHATLAKE_FUZZ_SEED=random`` unseeded (the failure message names the seed).
``benchmarks/fuzz_decoders.py`` is the long-running version. A finding is pinned as an explicit
test (``tests/formats/test_json.py``, ``tests/sources/test_hostile_values.py``).
"""

from __future__ import annotations

import random

import orjson
import pytest

from pipeline.formats import WIRE_FORMATS
from tests.fuzzing import check_wire_lines, fuzz_wire, wire_seeds
from tests.mutate import RAW_KINDS, fuzz_n, fuzz_seed, textual

CI_INPUTS = 3000


@pytest.mark.parametrize("fmt", WIRE_FORMATS)
def test_mutated_records_never_escape_the_decoder(fmt: str) -> None:
    seed = fuzz_seed()
    stats = fuzz_wire(fmt, wire_seeds(fmt, corpus=True), fuzz_n(CI_INPUTS), seed)
    assert stats.findings == [], "\n".join(str(f) for f in stats.findings[:10])
    # the mutations must reach the codecs, not only the JSON parser: both outcomes occur
    assert stats.written > stats.tried // 20 and stats.rejected > stats.tried // 20


@pytest.mark.parametrize("fmt", WIRE_FORMATS)
def test_every_hostile_token_kind_on_every_seed(fmt: str) -> None:
    """Each kind of text change several times on every seed record, not left to chance."""
    rng = random.Random(5)
    lines = [
        textual(orjson.loads(orjson.dumps(record)), rng, kind).replace(b"\n", b" ")
        for record in wire_seeds(fmt, synthetic=5, corpus=False)
        for kind in RAW_KINDS
        for _ in range(6)
    ]
    written, rejected, problem = check_wire_lines(fmt, lines)
    assert problem is None, problem
    assert written and rejected
