"""Every hand-written case survives decode -> Parquet -> encode exactly, in its own format."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cases import CASES
from tests.helpers import assert_identical, json_diff, roundtrip

PARAMS = [pytest.param(fmt, rec, id=f"{fmt}-{name}") for fmt, cases in CASES.items() for name, rec in cases]


@pytest.mark.parametrize(("fmt", "record"), PARAMS)
def test_case_roundtrips_exactly(fmt: str, record: dict, tmp_path: Path) -> None:
    [back] = roundtrip([record], fmt, tmp_path)
    assert_identical(record, back)


def test_all_cases_in_one_table(tmp_path: Path) -> None:
    """Many records in one table: offsets between conversations must not bleed."""
    for fmt, cases in CASES.items():
        records = [rec for _, rec in cases]
        assert [json_diff(a, b) for a, b in zip(records, roundtrip(records, fmt, tmp_path), strict=True)] == [
            None
        ] * len(records)


def test_comparison_helper_is_strict() -> None:
    assert json_diff({"a": 1}, {"a": 1.0}) is not None
    assert json_diff({"a": True}, {"a": 1}) is not None
    assert json_diff({"a": None}, {}) is not None
    assert json_diff({"a": " x"}, {"a": "x"}) is not None
    assert json_diff([1, 2], [2, 1]) is not None
