"""The item index equals a per-item Python reading of the canonical table."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.formats import decode_records
from pipeline.io.item_index import ITEM_INDEX_SCHEMA, SCALARS, item_index
from tests.cases import CASES
from tests.strategies import wire_record


def _reference(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for row in rows:
        for k, it in enumerate(row["items"] or []):
            blocks = (it["content"] or []) + (it["summary"] or [])
            out.append(
                {
                    "conversation_id": row["conversation_id"],
                    "source_format": row["source_format"],
                    "source_file": row["source_file"],
                    "source_line": row["source_line"],
                    "item_index": k,
                    **{n: it[n] for n in SCALARS},
                    "null_fields": it["null_fields"],
                    "n_content": None if it["content"] is None else len(it["content"]),
                    "n_summary": None if it["summary"] is None else len(it["summary"]),
                    "text_chars": sum(len(b["text"] or "") for b in blocks),
                    "arguments_chars": len(it["arguments"] or "") + len(it["input"] or ""),
                    "encrypted_bytes": len((it["encrypted_content"] or "").encode()),
                }
            )
    return out


def test_item_index_of_every_case() -> None:
    for fmt, cases in CASES.items():
        table = decode_records([rec for _, rec in cases], fmt).table
        index = item_index(table)
        assert index.schema == ITEM_INDEX_SCHEMA
        assert index.to_pylist() == _reference(table.to_pylist()), fmt


def test_item_index_of_a_slice_and_of_no_items() -> None:
    table = decode_records([rec for _, rec in CASES["responses"]], "responses").table
    part = table.slice(3, 4)
    assert item_index(part).to_pylist() == _reference(part.to_pylist())
    assert item_index(table.slice(0, 0)).num_rows == 0


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_item_index_of_random_records(data: st.DataObject) -> None:
    fmt = data.draw(st.sampled_from(["responses", "chat", "anthropic"]))
    records = data.draw(st.lists(wire_record(fmt, "request"), min_size=0, max_size=4))
    table = decode_records(records, fmt).table
    assert item_index(table).to_pylist() == _reference(table.to_pylist())
