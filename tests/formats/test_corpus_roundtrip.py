"""Acceptance: every conversation of the shared corpus comes back equal through canonical Parquet."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from pipeline.formats import decode_records, encode_table
from tests.corpus import corpus_available, corpus_records, skipped_corpus_parts
from tests.helpers import json_diff, roundtrip

pytestmark = pytest.mark.skipif(
    not corpus_available(), reason="../shared/corpus not found: corpus round-trip tests need it (CI has it)"
)


@pytest.mark.parametrize("fmt", ["responses", "chat", "anthropic"])
def test_corpus_roundtrip_is_exact(fmt: str, tmp_path: Path) -> None:
    records = [r for r in corpus_records() if r.format == fmt]
    assert records, f"no {fmt} records found in the corpus"
    back = roundtrip([r.record for r in records], fmt, tmp_path)
    diffs = [(r.source, d) for r, b in zip(records, back, strict=True) if (d := json_diff(r.record, b))]
    kinds = Counter(r.kind for r in records)
    print(f"\n{fmt}: {len(records)} records checked ({dict(kinds)}), {len(diffs)} differ")
    assert diffs == []


def test_nothing_is_skipped_silently() -> None:
    skipped = skipped_corpus_parts()
    print("\nnot wire-format conversations (each with its reason):")
    for where, why in skipped:
        print(f"  {where}: {why}")
    assert all(why for _, why in skipped)


def test_corpus_decodes_into_modelled_columns() -> None:
    """Guards against a 'lossless' decoder that parks everything in extra_json."""
    records = [r for r in corpus_records() if r.format == "responses"]
    table = decode_records([r.record for r in records], "responses").table
    items = table.column("items").combine_chunks().flatten()
    kinds = Counter(items.field("type").to_pylist())
    assert kinds["message"] > 200 and kinds["reasoning"] > 50 and kinds["function_call"] > 30
    with_extra = sum(x is not None for x in items.field("extra_json").to_pylist())
    assert with_extra / len(items) < 0.5
    assert encode_table(table, "responses") is not None
