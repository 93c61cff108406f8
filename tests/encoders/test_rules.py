"""The target rules table (pipeline/encoders/rules.py) and its page (docs/target-rules.md)."""

from __future__ import annotations

import re
from pathlib import Path

from pipeline.encoders.rules import NAME_RE, RULE, RULES, TARGETS, markdown_table, rules_of
from pipeline.losses import LOSS_KINDS
from tests.cases import RULE_BREAKERS

DOC = Path(__file__).resolve().parents[2] / "docs" / "target-rules.md"


def test_ids_are_unique_and_name_their_target() -> None:
    assert len(RULE) == len(RULES)
    for r in RULES:
        assert re.fullmatch(r"[a-z]+\.[a-z_]+", r.id), r.id
        assert r.id.split(".")[0] == r.target
        assert r.rule.endswith(".") and r.source and "—" in r.source  # the error text, then where from


def test_every_repair_is_a_loss_kind_and_says_what_it_does() -> None:
    for r in RULES:
        if r.repair is not None:
            assert r.repair in LOSS_KINDS, r.id
            assert not LOSS_KINDS[r.repair].addition  # a repair changes the record: a loss, not an addition
            assert r.how, r.id
        else:
            assert not r.how, r.id


def test_the_page_is_the_table() -> None:
    """docs/target-rules.md holds every target's table exactly as rules.py renders it."""
    page = DOC.read_text()
    for target in TARGETS:
        assert markdown_table(target) in page, target
    rows = [line for line in page.splitlines() if line.startswith("| `")]
    assert len(rows) == len(RULES)


def test_every_rule_has_a_breaking_case() -> None:
    assert sorted({rule for rule, _, _ in RULE_BREAKERS}) == sorted(RULE)


def test_the_name_pattern() -> None:
    assert NAME_RE.match("get_weather-2") and NAME_RE.match("x" * 64)
    for bad in ("", "   ", "mcp.files.read", "a/b", "x" * 65, "naïve"):
        assert not NAME_RE.match(bad), bad


def test_sharegpt_has_no_rules() -> None:
    assert rules_of("sharegpt") == ()
