"""Rows with edited items on the native (compiled) Responses -> Chat path (:func:`encode_rows`): their stale
state is dropped and their ``edited`` losses are written as columns, before the row's other losses,
last item first, exactly as ``convert_table`` reports them.

Every check compares with the per-record loop (``check_same``: ``convert_table`` on the same table,
under every loss policy, through ``chatlake convert``'s and the engine's writers) and, where the row
is one the native encoder takes, asserts it now does (``native``). Sources: role_swap + turns
output (pipeline.transforms), hand edits of text and role, several edited items in one row, edited
reasoning with encrypted content, edited items without an id, string-form input, ids Python's
``repr`` escapes (those rows stay per-record), hypothesis records with hypothesis-chosen edits.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline import synth
from pipeline.encoders import convert_table
from pipeline.encoders.edits import drop_stale_state
from pipeline.encoders.encode_rows import encode_rows
from pipeline.formats import decode_records
from pipeline.schema import CONVERSATION_SCHEMA, cast_to_canonical
from pipeline.transforms import apply_steps, make_step
from tests.cases import RESPONSES
from tests.encoders.test_encode_rows import check_same
from tests.strategies import draw_edits, wire_record

REC: dict[str, Any] = {
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
            "content": [{"type": "output_text", "text": "hello", "annotations": []}],
        },
        {"role": "user", "content": "next"},
        {"type": "message", "id": "msg_c", "role": "user", "content": "plain"},
    ],
}


def _edit(records: list[dict[str, Any]], change: Callable[[int, list[dict[str, Any]]], None]) -> pa.Table:
    """Decode, then edit each row's items the way a user would (to Python rows and back): the stored
    fingerprints stay those of the decoded content."""
    rows = decode_records(records, "responses").table.to_pylist()
    for r, row in enumerate(rows):
        change(r, row["items"])
    return pa.Table.from_pylist(rows, schema=CONVERSATION_SCHEMA)


def _edited_rows(table: pa.Table) -> np.ndarray:
    """The rows ``convert_table`` reports an ``edited`` loss for (the reference's view)."""
    return np.array(
        sorted(
            {r for r, c in enumerate(convert_table(table, "chat")) for x in c.losses if x.kind == "edited"}
        ),
        np.int64,
    )


def _check(table: pa.Table, *, native: list[bool] | None = None) -> list[list[tuple[str, str, str]]]:
    """Exactness against the per-record loop; the losses of each row; the rows' native flags."""
    check_same(table)
    enc = encode_rows(table, "chat")
    if native is not None:
        assert enc.native.to_pylist() == native
    out: list[list[tuple[str, str, str]]] = [[] for _ in range(table.num_rows)]
    for x in enc.losses.to_pylist():
        out[x["row"]].append((x["path"], x["kind"], x["detail"]))
    return out


def _text(item: dict[str, Any], suffix: str) -> None:
    if item["content"]:
        item["content"][0]["text"] = (item["content"][0]["text"] or "") + suffix


def test_several_edited_items_in_one_row_come_first_last_item_first() -> None:
    def change(_: int, items: list[dict[str, Any]]) -> None:
        _text(items[0], " (edited)")  # a message with an id
        items[1]["summary"][0]["text"] = "thought harder"  # reasoning: id and encrypted content
        items[2]["role"] = "user"  # a role edit alone changes the fingerprint
        _text(items[3], "!")  # no id, no state: no fingerprint, not reported
        _text(items[4], "!")  # string content

    table = _edit([REC], change)
    [losses] = _check(table, native=[True])
    edited = [x for x in losses if x[1] == "edited"]
    assert losses[: len(edited)] == edited  # before every other loss of the row
    prefix = "content changed since decoding; dropped "
    assert edited == [
        ("/input/4", "edited", prefix + "id 'msg_c'"),
        ("/input/2", "edited", prefix + "id 'msg_a'"),
        ("/input/1", "edited", prefix + "id 'rs_1', encrypted_content"),
        ("/input/0", "edited", prefix + "id 'msg_u'"),
    ]
    assert len(losses) > len(edited)  # the reasoning item and the ids of untouched items follow


def test_string_form_input_points_at_input() -> None:
    """The string shorthand's item has no id when decoded; a table built by hand can give it one
    (and a fingerprint that no longer matches): its loss points at ``/input``."""

    def change(_: int, items: list[dict[str, Any]]) -> None:
        items[0]["id"] = "msg_1"
        items[0]["fingerprint"] = "0123456789abcdef"

    table = _edit([{"input": "hello"}], change)
    [losses] = _check(table, native=[True])
    assert losses[0] == ("/input", "edited", "content changed since decoding; dropped id 'msg_1'")


def test_ids_that_repr_escapes_stay_per_record() -> None:
    ids = ["it's", "back\\slash", "caf\u00e9", "tab\there", ""]
    records = [{"input": [{"type": "message", "id": i, "role": "user", "content": "x"}]} for i in ids]
    records.append({"input": [{"type": "message", "id": "ok_1", "role": "user", "content": "x"}]})
    table = _edit(records, lambda _, items: _text(items[0], "y"))
    losses = _check(table, native=[False, False, False, False, True, True])
    assert losses[0][0] == ("/input/0", "edited", 'content changed since decoding; dropped id "it\'s"')
    assert losses[4][0] == ("/input/0", "edited", "content changed since decoding; dropped id ''")


def test_only_the_edited_row_loses_its_state() -> None:
    def change(r: int, items: list[dict[str, Any]]) -> None:
        if r == 1:
            items[2]["content"][0]["text"] = "hello again"

    table = _edit([REC, REC, REC], change)
    losses = _check(table, native=[True, True, True])
    assert [x[1] for x in losses[1]].count("edited") == 1
    assert losses[0] == losses[2] and "edited" not in [x[1] for x in losses[0]]


def test_cases_with_every_text_and_role_edited() -> None:
    """Every item with state of every Responses case edited (a message's role or text, a reasoning
    summary, a call's arguments): the rows the native encoder takes once the stale state is
    dropped are now native."""

    def change(r: int, items: list[dict[str, Any]]) -> None:
        for k, item in enumerate(items or []):
            if item["fingerprint"] is None:
                continue
            if item["type"] == "message" and (r + k) % 2:
                item["role"] = {"user": "assistant", "assistant": "user"}.get(item["role"], item["role"])
            elif item["content"]:
                _text(item, " (edited)")
            elif item["summary"]:
                item["summary"][0]["text"] = (item["summary"][0]["text"] or "") + " (edited)"
            elif item["arguments"] is not None:
                item["arguments"] += " "

    table = _edit([rec for _, rec in RESPONSES], change)
    edited = _edited_rows(table)
    assert len(edited) >= 3  # the cases hold few items with state
    enc = encode_rows(table, "chat")
    _check(table)
    _assert_edited_rows_native(table, enc.native, edited)


def _assert_edited_rows_native(table: pa.Table, native: pa.Array, edited: np.ndarray) -> None:
    """An edited row is native unless the native encoder falls back on its cleaned content,
    refuses it, or an edited id is not plain ASCII; checked the other way round: each edited row the
    encoder converts once its state is dropped by hand (``convert_table``'s rule) is native."""
    flags = np.array(native.to_pylist())
    cleaned, items = drop_stale_state(table)
    escaped = {e.row for e in items if "id" in e.dropped and not _plain(e.dropped["id"])}
    converted = set(
        np.flatnonzero(encode_rows(cleaned, "chat").native.to_numpy(zero_copy_only=False)).tolist()
    )
    expected = [r for r in edited.tolist() if r not in escaped and r in converted]
    assert expected, "no edited row on the native path: the test lost its point"
    assert flags[expected].all()
    print(f"{len(edited)} edited rows, {int(flags[edited].sum())} native")


def _plain(s: str) -> bool:
    """Python's repr of ``s`` is ``s`` in single quotes."""
    return all(" " <= c <= "~" for c in s) and "'" not in s and "\\" not in s


def _role_swap_turns(table: pa.Table) -> pa.Table:
    steps = [make_step("role_swap", on_unsupported="drop"), make_step("turns")]
    kept, _ = apply_steps(pl.from_arrow(table), steps)  # type: ignore[arg-type]
    return cast_to_canonical(kept.to_arrow())


def test_role_swap_and_turns_output() -> None:
    """The job of the profile (docs/internals/profile.md): role_swap (drop) + turns, target chat."""
    table = _role_swap_turns(
        decode_records(list(synth.generate("responses", 300, seed=11)), "responses").table
    )
    edited = _edited_rows(table)
    assert len(edited) > 100  # role_swap really edited items
    stats = check_same(table)
    print("role_swap + turns:", stats)
    _assert_edited_rows_native(table, encode_rows(table, "chat").native, edited)
    assert stats["native"] > 0.9 * table.num_rows


def test_role_swap_of_the_cases() -> None:
    table = _role_swap_turns(decode_records([rec for _, rec in RESPONSES], "responses").table)
    assert len(_edited_rows(table)) > 0
    check_same(table)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(wire_record("responses", "request"), min_size=1, max_size=6), st.data())
def test_hypothesis_records_with_edits(records: list[dict[str, Any]], data: st.DataObject) -> None:
    res = decode_records(records, "responses")
    if not res.table.num_rows:
        return
    check_same(draw_edits(res.table, data))


def test_as_decoded_rows_have_no_edited_item_and_encode_the_same() -> None:
    """``as_decoded=True`` (the engine: rows it decoded, no step run) skips the edit check; on freshly
    decoded rows that must change nothing, because nothing can be edited."""
    records = [r for _, r in RESPONSES] + list(synth.generate("responses", 300, seed=11))
    table = cast_to_canonical(decode_records(records, "responses").table)
    assert drop_stale_state(table)[1] == []
    checked, skipped = encode_rows(table, "chat"), encode_rows(table, "chat", as_decoded=True)
    assert checked.records.equals(skipped.records) and checked.errors.equals(skipped.errors)
    assert checked.losses.equals(skipped.losses) and checked.native.equals(skipped.native)
    assert skipped.native.to_numpy(zero_copy_only=False).sum() > len(records) // 2
