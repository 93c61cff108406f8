"""Synthetic conversations of every format come back exactly through canonical Parquet."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline import synth
from tests.helpers import json_diff, roundtrip


@pytest.mark.parametrize("fmt", synth.FORMATS)
def test_synthetic_roundtrip_is_exact(fmt: str, tmp_path: Path) -> None:
    records = list(synth.generate(fmt, 1000, seed=11))
    back = roundtrip(records, fmt, tmp_path)
    diffs = [d for a, b in zip(records, back, strict=True) if (d := json_diff(a, b))]
    assert diffs == []
