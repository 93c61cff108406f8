"""Edit-aware rebuild: an edited item loses its stale id / encrypted content / signature, nothing else."""

from __future__ import annotations

from typing import Any

import polars as pl
import pyarrow as pa
import pytest

from pipeline.encoders import convert_table
from pipeline.formats import decode_records
from pipeline.schema import CONVERSATION_SCHEMA, cast_to_canonical
from tests.helpers import json_diff

RESPONSES_REC: dict[str, Any] = {
    "model": "gpt-5",
    "input": [
        {"type": "message", "id": "msg_u", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
        {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [{"type": "summary_text", "text": "think"}],
            "encrypted_content": "gAAA-opaque",
        },
        {
            "type": "message",
            "id": "msg_a",
            "role": "assistant",
            "phase": "final_answer",
            "status": "completed",
            "content": [{"type": "output_text", "text": "hello", "annotations": []}],
        },
        {"role": "user", "content": "next"},
    ],
}

ANTHROPIC_REC: dict[str, Any] = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 100,
    "messages": [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "hmm", "signature": "sig=="},
                {"type": "text", "text": "hello"},
            ],
        },
    ],
}


def _edit(table: pa.Table, change: Any) -> pa.Table:
    """Edit the table the way a user would: to Python rows, change, back (fingerprints untouched)."""
    rows = table.to_pylist()
    change(rows[0]["items"])
    return pa.Table.from_pylist(rows, schema=CONVERSATION_SCHEMA)


def _one(table: pa.Table, target: str) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    [out] = convert_table(table, target)
    assert out.error is None, out.error
    return out.record, [(loss.path, loss.kind) for loss in out.losses]


def test_untouched_items_keep_everything() -> None:
    table = decode_records([RESPONSES_REC], "responses").table
    record, losses = _one(table, "responses")
    assert losses == []
    assert json_diff(RESPONSES_REC, record) is None


def test_edited_reasoning_text_drops_its_id_and_encrypted_content_only() -> None:
    table = decode_records([RESPONSES_REC], "responses").table

    def change(items: list[dict[str, Any]]) -> None:
        items[1]["summary"][0]["text"] = "thought harder"

    record, losses = _one(_edit(table, change), "responses")
    assert losses == [("/input/1", "edited")]
    summary = [{"type": "summary_text", "text": "thought harder"}]
    assert record["input"][1] == {"type": "reasoning", "summary": summary}
    # the neighbours keep their ids, phase and status
    assert record["input"][0]["id"] == "msg_u"
    assert record["input"][2]["id"] == "msg_a"
    assert record["input"][2]["phase"] == "final_answer"


def test_edited_assistant_text_drops_its_id_and_reports_it() -> None:
    table = decode_records([RESPONSES_REC], "responses").table

    def change(items: list[dict[str, Any]]) -> None:
        items[2]["content"][0]["text"] = "hello!"

    [out] = convert_table(_edit(table, change), "responses")
    assert [(loss.path, loss.kind) for loss in out.losses] == [("/input/2", "edited")]
    assert "msg_a" in out.losses[0].detail
    msg = out.record["input"][2]
    assert "id" not in msg
    assert msg["content"][0]["text"] == "hello!"
    assert msg["phase"] == "final_answer" and msg["status"] == "completed"
    assert out.record["input"][1]["encrypted_content"] == "gAAA-opaque"


def test_edit_through_polars_is_detected_too() -> None:
    """A user editing with Polars (large types, re-cast) is caught like any other edit."""
    df = pl.from_arrow(decode_records([RESPONSES_REC], "responses").table)
    assert isinstance(df, pl.DataFrame)
    edited = df.with_columns(
        pl.col("items").list.eval(
            pl.when(pl.element().struct.field("role") == "user")
            .then(pl.element().struct.with_fields(pl.lit("assistant").alias("role")))
            .otherwise(pl.element())
        )
    )
    record, losses = _one(cast_to_canonical(edited.to_arrow()), "responses")
    # both user messages were "swapped"; only the one with an id has state to drop
    assert losses == [("/input/0", "edited")]
    assert "id" not in record["input"][0]
    assert record["input"][2]["id"] == "msg_a"


@pytest.mark.parametrize("target", ["anthropic", "responses"])
def test_edited_thinking_drops_its_signature(target: str) -> None:
    table = decode_records([ANTHROPIC_REC], "anthropic").table

    def change(items: list[dict[str, Any]]) -> None:
        thinking = next(it for it in items if it["type"] == "reasoning")
        thinking["content"][0]["text"] = "hmm, edited"

    record, losses = _one(_edit(table, change), target)
    assert ("/messages/1/content/0", "edited") in losses
    assert "sig==" not in str(record)


def test_inserted_items_have_no_state_to_drop() -> None:
    table = decode_records([RESPONSES_REC], "responses").table

    def change(items: list[dict[str, Any]]) -> None:
        new = dict(items[3], id=None, fingerprint=None)
        new["content"] = [dict(new["content"][0], text="an inserted note")]
        items.append(new)

    record, losses = _one(_edit(table, change), "responses")
    assert losses == []
    assert record["input"][-1] == {"role": "user", "content": "an inserted note"}
