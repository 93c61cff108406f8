"""Acceptance: A -> B -> A loses nothing that A -> B did not report."""

from __future__ import annotations

from collections import Counter

import pytest

from pipeline.encoders import ENCODERS, convert_table
from pipeline.formats import decode_records
from tests.cases import CASES
from tests.encoders.coverage import diff_paths, uncovered

CHECKED = ("responses", "chat", "anthropic")
DIRECTIONS = [(a, b) for a in CHECKED for b in CHECKED if a != b and b in ENCODERS]
# Cases refused on purpose (with a "not supported yet" error), not converted lossily. The response
# objects among them (response_object, ...) convert to the other formats' response objects.
REFUSED: set[str] = set()


@pytest.mark.parametrize(("a", "b"), DIRECTIONS)
def test_cases_no_silent_loss(a: str, b: str) -> None:
    names = [name for name, _ in CASES[a]]
    records = [rec for _, rec in CASES[a]]
    there = convert_table(decode_records(records, a).table, b)
    refused = {n for n, c in zip(names, there, strict=True) if c.error is not None}
    assert refused == REFUSED & set(names)
    assert all("not supported yet" in c.error for c in there if c.error)
    kept = [(n, rec, c) for n, rec, c in zip(names, records, there, strict=True) if c.error is None]
    res = decode_records([c.record for _, _, c in kept], b)
    assert res.rejected == [], res.rejected[0].error
    back = convert_table(res.table, a)
    assert [c.error for c in back] == [None] * len(kept)
    problems = {}
    paths = 0
    for (name, rec, t), k in zip(kept, back, strict=True):
        paths += len(diff_paths(rec, k.record))
        if bad := uncovered(rec, k.record, t.losses):
            problems[name] = bad
    kinds = Counter(loss.kind for _, _, t in kept for loss in t.losses)
    print(f"\n{a} -> {b} -> {a}: {len(kept)} records ({len(refused)} refused: {sorted(refused)}), "
          f"{paths} differing paths; losses {dict(kinds)}")  # fmt: skip
    assert problems == {}


def test_checker_catches_an_unreported_change() -> None:
    assert uncovered({"a": [1, 2, 3]}, {"a": [1, 3]}, []) == ["/a/1"]
    assert diff_paths({"x": {"y": 1}}, {"x": {"y": 1.0}}) == ["/x/y"]
    assert sorted(diff_paths({"l": [{"type": "a"}, {"type": "b", "id": 1}]}, {"l": [{"type": "b"}]})) == [
        "/l/0",
        "/l/1/id",
    ]


def _check(records: list[dict], a: str, b: str, label: str) -> None:
    """Convert A -> B -> A; every differing path must be covered by an A -> B loss."""
    there = convert_table(decode_records(records, a).table, b)
    errors = Counter(c.error for c in there if c.error is not None)
    assert all("not supported yet" in e for e in errors), errors
    kept = [(rec, c) for rec, c in zip(records, there, strict=True) if c.error is None]
    res = decode_records([c.record for _, c in kept], b)
    assert res.rejected == [], res.rejected[0].error
    back = convert_table(res.table, a)
    assert [c.error for c in back] == [None] * len(kept)
    problems = []
    paths = 0
    for (rec, t), k in zip(kept, back, strict=True):
        paths += len(diff_paths(rec, k.record))
        if bad := uncovered(rec, k.record, t.losses):
            problems.append(bad)
    print(f"\n{label} {a} -> {b} -> {a}: {len(kept)} records, {paths} differing paths covered, "
          f"{sum(errors.values())} refused ({dict(errors)})")  # fmt: skip
    assert problems[:3] == []


@pytest.mark.parametrize(("a", "b"), DIRECTIONS)
def test_synthetic_no_silent_loss(a: str, b: str) -> None:
    from pipeline import synth

    _check(list(synth.generate(a, 500, seed=5)), a, b, "synthetic")


@pytest.mark.parametrize(("a", "b"), DIRECTIONS)
def test_corpus_no_silent_loss(a: str, b: str) -> None:
    from tests.corpus import corpus_available, corpus_records

    if not corpus_available():
        pytest.skip("../shared/corpus not found: corpus conversion tests need it (CI has it)")
    _check([r.record for r in corpus_records() if r.format == a and r.kind == "request"], a, b, "corpus")


@pytest.mark.parametrize(("a", "b"), DIRECTIONS)
def test_property_no_silent_loss(a: str, b: str) -> None:
    from hypothesis import HealthCheck, given, settings

    from tests.strategies import wire_record

    # bounded: a failing example can take minutes to shrink
    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(record=wire_record(a, "request"))
    def check(record: dict) -> None:
        there = convert_table(decode_records([record], a).table, b)
        if there[0].error is not None:
            assert "not supported yet" in there[0].error
            return
        res = decode_records([there[0].record], b)
        assert res.rejected == [], res.rejected[0].error
        [back] = convert_table(res.table, a)
        assert back.error is None
        assert uncovered(record, back.record, there[0].losses) == []

    check()


@pytest.mark.parametrize("b", ["chat", "responses"])
def test_anthropic_url_image_holding_a_data_url(b: str) -> None:
    """A 'url' image source whose URL is a data: URL comes back from an OpenAI format as a base64
    source (found by hypothesis): the change is reported on the source."""
    url = "data:image/png;base64,iVBORw0KGgo="
    image = {"type": "image", "source": {"type": "url", "url": url}}
    record = {"messages": [{"role": "user", "content": [image]}]}
    there = convert_table(decode_records([record], "anthropic").table, b)
    [back] = convert_table(decode_records([there[0].record], b).table, "anthropic")
    source = back.record["messages"][0]["content"][0]["source"]
    assert source == {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}
    assert ("/messages/0/content/0/source", "image") in [(loss.path, loss.kind) for loss in there[0].losses]
    assert uncovered(record, back.record, there[0].losses) == []


@pytest.mark.parametrize("native", ["1", "0"])
def test_responses_reasoning_with_only_a_null_summary_to_chat(
    native: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CHATLAKE_NATIVE", native)
    record = {"input": [], "reasoning": {"summary": None}}
    there = convert_table(decode_records([record], "responses").table, "chat")
    [back] = convert_table(decode_records([there[0].record], "chat").table, "responses")
    assert uncovered(record, back.record, there[0].losses) == []
