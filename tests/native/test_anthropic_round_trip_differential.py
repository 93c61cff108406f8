"""The compiled Anthropic round-trip report (``pipeline/_native/anthropic_round_trip.c``, run alone by
``pipeline._native.anthropic_report``) against ``pipeline.encoders.anthropic_round_trip.report``, its
specification: for every Anthropic request row the C takes, the same losses in the same order.

The report is what the Responses and Chat encoders of Anthropic-source rows add after the forward
losses; here it runs with no forward losses before it (``reported`` starts empty), every item
emitted, and each row's own call ids. Each test bounds the share of rows the C hands back, so a
port that refused everything would fail rather than compare nothing.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline import codec, synth
from pipeline.formats import decode_lines, decode_records
from tests.cases import ANTHROPIC, CASES
from tests.corpus import corpus_available, corpus_records
from tests.native.encode_diff import compare_report
from tests.strategies import wire_record

pytestmark = pytest.mark.skipif(
    codec.native_encoder("anthropic") is None,
    reason="pipeline._native is not built (no C compiler at install): "
    "run `python tests/native/build_native.py --out .` or `pip install -e .` to test it",
)

# The hand-written Anthropic cases the C report hands back, and why.
HANDED_BACK = {
    "tool_use_without_ids",  # ids generated and paired by position (call_ids.py)
}


def test_hand_written_anthropic_cases() -> None:
    table = decode_records([rec for _, rec in ANTHROPIC], "anthropic").table
    flags = compare_report(table)
    kinds = table.column("record_kind").to_pylist()
    back = {name for (name, _), f, k in zip(ANTHROPIC, flags, kinds, strict=True) if not f and k == "request"}
    assert back == HANDED_BACK


def test_other_formats_are_handed_back() -> None:
    for fmt in ("responses", "chat"):
        table = decode_records([rec for _, rec in CASES[fmt]], fmt).table
        assert not compare_report(table).any()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_synthetic_records(seed: int) -> None:
    table = decode_records(list(synth.generate("anthropic", 600, seed=seed)), "anthropic").table
    assert compare_report(table).mean() == 1.0


@pytest.mark.skipif(not corpus_available(), reason="../shared/corpus is not there")
def test_corpus_records() -> None:
    records = [c.record for c in corpus_records() if c.format == "anthropic"]
    table = decode_records(records, "anthropic").table
    flags = compare_report(table)
    requests = np.array([k == "request" for k in table.column("record_kind").to_pylist()])
    assert requests.sum() > 0
    assert flags[requests].mean() >= 0.9


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(wire_record("anthropic", "request"), min_size=1, max_size=8))
def test_hypothesis_records(records: list[dict[str, Any]]) -> None:
    table = decode_records(records, "anthropic").table
    if table.num_rows:
        compare_report(table)


@pytest.mark.parametrize("limit", ["1e-7", "1e+16", "5.0", "7", "0", "-3"])
def test_max_tokens_must_be_an_int_to_come_back(limit: str) -> None:
    """Pinned from fuzz_native.py (seed 9090): ``"max_tokens": 1e-7`` is a float, not a usable
    limit (``type(v) is int``), though its text has no "." or "-": the way back sets the default."""
    line = b'{"model":"m","max_tokens":%s,"messages":[{"role":"user","content":"hi"}]}' % limit.encode()
    table = decode_lines([line], "anthropic").table
    assert compare_report(table).all()
