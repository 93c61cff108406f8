"""Eleanor placement cases (zero, one, several system messages; anchors by pattern) and headers.

Implemented from the issue text: Eleanor's CanonicalChat source was not available to read.
"""

from __future__ import annotations

import polars as pl
import pytest

from pipeline.engine.process import frame_to_disk as to_arrow
from pipeline.formats import decode_records, encode_table
from pipeline.transforms import apply_steps, make_step

U, A = {"role": "user", "content": "u"}, {"role": "assistant", "content": "a"}
S1, S2 = {"role": "system", "content": "policy one"}, {"role": "developer", "content": "rules two"}
NEW = {"role": "system", "content": "NEW"}


def place(messages: list[dict], **params: object) -> list | str:
    table = decode_records([{"messages": messages}], "chat").table
    kept, rejected = apply_steps(pl.from_arrow(table), [make_step("place_system", text="NEW", **params)])
    if len(rejected):
        return rejected["reason"][0]
    return encode_table(to_arrow(kept), "chat")[0]["messages"]


@pytest.mark.parametrize(
    ("messages", "params", "expected"),
    [
        # zero system messages: before/after fall back to the start, append goes last
        ([U, A], {"position": "before_system_content"}, [NEW, U, A]),
        ([U, A], {"position": "after_system_content"}, [NEW, U, A]),
        ([U, A], {"position": "append"}, [U, A, NEW]),
        (
            [U, A],
            {"position": "after_system_content", "missing": "reject"},
            "place_system: no inline system message matches the anchor",
        ),
        # one system message
        ([S1, U, A], {"position": "before_system_content"}, [NEW, S1, U, A]),
        ([S1, U, A], {"position": "after_system_content"}, [S1, NEW, U, A]),
        ([S1, U, A], {"position": "append"}, [S1, U, A, NEW]),
        # several: the first by default, the last on request, or the one a pattern picks
        ([S1, U, S2, A], {"position": "after_system_content"}, [S1, NEW, U, S2, A]),
        ([S1, U, S2, A], {"position": "after_system_content", "anchor": "last"}, [S1, U, S2, NEW, A]),
        (
            [S1, U, S2, A],
            {"position": "before_system_content", "anchor_patterns": ["^rules"]},
            [S1, U, NEW, S2, A],
        ),
        (
            [S1, U, S2, A],
            {"position": "before_system_content", "anchor_patterns": ["nomatch"]},
            [NEW, S1, U, S2, A],
        ),
        (
            [S1, U],
            {"role": "developer", "position": "after_system_content"},
            [S1, {"role": "developer", "content": "NEW"}, U],
        ),
    ],
)
def test_placement(messages: list[dict], params: dict, expected: list | str) -> None:
    assert place(messages, **params) == expected


def test_response_objects_are_rejected() -> None:
    table = decode_records([{"object": "response", "output": []}], "responses").table
    _, rejected = apply_steps(pl.from_arrow(table), [make_step("place_system", text="x")])
    assert rejected["reason"].to_list() == [
        "place_system: response objects hold one reply, not a conversation to insert into"
    ]


def test_header_is_parsed_and_removed_before_turns_are_counted() -> None:
    msgs = [{"role": "system", "content": 'ELEANOR_SYSTEM {"persona": "x", "n": 2}'}, U, A]
    table = decode_records([{"messages": msgs}], "chat").table
    steps = [make_step("parse_header", fields=["persona", "n", "missing"]), make_step("turns")]
    kept, rejected = apply_steps(pl.from_arrow(table), steps)
    assert len(rejected) == 0
    row = to_arrow(kept).to_pylist()[0]
    assert row["header_json"] == '{"persona": "x", "n": 2}'
    assert row["header"] == {"persona": "x", "n": "2", "missing": None}
    assert (row["system_turns"], row["human_turns"], row["n_items"]) == (0, 1, 2)


def test_invalid_header_json_rejects_the_record() -> None:
    table = decode_records(
        [{"messages": [{"role": "system", "content": "ELEANOR_SYSTEM {bad}"}]}], "chat"
    ).table
    _, rejected = apply_steps(pl.from_arrow(table), [make_step("parse_header")])
    assert rejected["reason"].to_list() == ["parse_header: header at item 0 is not valid JSON"]


def test_no_header_leaves_the_record_alone() -> None:
    table = decode_records([{"messages": [S1, U]}], "chat").table
    kept, _ = apply_steps(pl.from_arrow(table), [make_step("parse_header")])
    assert kept["header_json"].to_list() == [None]
    assert encode_table(to_arrow(kept), "chat")[0]["messages"] == [S1, U]
