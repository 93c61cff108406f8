"""rule_checks.violations: each rule found where it is broken, nothing where none is.

The per-record reference is tests/sdk_validate.py's ``check_api_rules`` (the rules the property
tests have always checked outputs with): every record it accepts has no violation here.
"""

from __future__ import annotations

import pytest

from pipeline.encoders.rule_checks import violations
from pipeline.formats import decode_records
from pipeline.synth import generate
from tests.cases import CASES, RULE_BREAKERS
from tests.sdk_validate import SdkValidationError, check_api_rules


@pytest.mark.parametrize(("rule", "fmt", "record"), RULE_BREAKERS, ids=[r for r, _, _ in RULE_BREAKERS])
def test_a_record_that_breaks_a_rule_is_found(rule: str, fmt: str, record: dict) -> None:
    decoded = decode_records([record], fmt)
    assert not decoded.rejected
    found = violations(decoded.table, fmt)
    assert rule in found["rule"].to_list()
    hit = found.filter(found["rule"] == rule).row(0, named=True)
    assert hit["row"] == 0 and hit["path"].startswith("/") and hit["detail"]


def test_rows_are_numbered_in_the_batch() -> None:
    bad = next(rec for rule, _, rec in RULE_BREAKERS if rule == "chat.content_nonempty")
    ok = {"messages": [{"role": "user", "content": "hi"}]}
    t = decode_records([ok, bad, ok, bad], "chat").table
    assert violations(t, "chat")["row"].to_list() == [1, 3]


def test_response_objects_are_not_requests() -> None:
    completion = {
        "object": "chat.completion",
        "id": "c",
        "model": "m",
        "created": 1,
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
                    ],
                },
            }
        ],
    }
    t = decode_records([completion], "chat").table
    assert t.column("record_kind").to_pylist() == ["response"]
    assert violations(t, "chat").height == 0


@pytest.mark.parametrize("fmt", ["responses", "chat", "anthropic"])
def test_records_the_reference_accepts_break_no_rule(fmt: str) -> None:
    """Hand-written cases and synthetic records (chatlake synth) that the per-record reference accepts."""
    checked = 0
    for name, record in [*CASES[fmt], *(("synth", r) for r in generate(fmt, 300, seed=5))]:
        try:
            check_api_rules(fmt, record)
        except (SdkValidationError, KeyError, TypeError, AttributeError):
            continue
        decoded = decode_records([record], fmt)
        if decoded.rejected or decoded.table.column("record_kind")[0].as_py() != "request":
            continue
        found = violations(decoded.table, fmt)
        assert found.height == 0, (name, found.to_dicts())
        checked += 1
    assert checked >= 100
