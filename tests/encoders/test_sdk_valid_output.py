"""Every Chat and Responses body we produce from another format validates against the official
SDK request types (tests/sdk_validate.py: strict, unknown keys rejected)."""

from __future__ import annotations

import pytest

from pipeline import synth
from pipeline.encoders import convert_table
from pipeline.formats import decode_records
from tests.sdk_validate import validate_request

PAIRS = [("responses", "chat"), ("chat", "responses"), ("anthropic", "chat"), ("anthropic", "responses")]


@pytest.mark.parametrize(("source", "target"), PAIRS)
def test_converted_synthetic_bodies_validate(source: str, target: str) -> None:
    records = list(synth.generate(source, 300, seed=21))
    converted = convert_table(decode_records(records, source).table, target)
    assert [c.error for c in converted] == [None] * len(records)
    failures = []
    for n, c in enumerate(converted):
        try:
            validate_request(target, c.record)
        except Exception as e:  # collect them all, then report the first few
            failures.append((n, str(e)[:300]))
    assert failures[:3] == [], f"{len(failures)} of {len(records)} {source} -> {target} bodies are invalid"
