"""``chat_json`` writes the per-record path's bytes (``orjson.dumps`` of ``to_chat``'s dict) for every
row ``responses_to_chat`` converts, and its string pieces are orjson's for any Unicode text.

Sources: every Responses case of ``tests/cases.py``, synthetic records (``pipeline.synth``),
hypothesis records (``wire_record``), the corpus' Responses records; each also through a sliced and
a multi-chunk Chat table. The escaping helpers (``needs_escape``, ``Pieces``) are checked by
hypothesis over arbitrary text (every code point but lone surrogates, which Arrow UTF-8 cannot hold)
against ``orjson.dumps``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline import synth
from pipeline.encoders import convert_table
from pipeline.encoders.vectorized import chat_json, responses_to_chat
from pipeline.encoders.vectorized._json import Pieces, needs_escape
from pipeline.formats import decode_records
from tests.cases import RESPONSES
from tests.corpus import corpus_available, corpus_records
from tests.strategies import TEXT, wire_record

# every code point Arrow UTF-8 can hold: C0 controls, NUL, DEL, U+2028/2029, astral planes
ANY_TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=40)
TEXTS = st.lists(st.one_of(st.none(), ANY_TEXT, TEXT), max_size=12)


def expected_records(table: pa.Table) -> list[bytes]:
    """The per-record path's bytes for each row ``responses_to_chat`` converts itself (input order;
    its fallback rows go to the per-record encoders, as in ``encode_rows``)."""
    res = responses_to_chat(table)
    ref = convert_table(table, "chat", as_bytes=True)
    return [ref[r].record for r in res.rows.to_pylist()]


def check_chat_json(table: pa.Table) -> int:
    """Assert ``chat_json`` equals the per-record bytes on ``table``'s converted rows, also through a
    slice and a chunked copy of the Chat table; returns how many rows were compared."""
    chat = responses_to_chat(table).table
    want = expected_records(table)
    got = chat_json(chat)
    assert got.type == pa.large_string()
    assert [s.encode() for s in got.to_pylist()] == want
    if chat.num_rows > 2:
        assert [s.encode() for s in chat_json(chat.slice(1, chat.num_rows - 2)).to_pylist()] == want[1:-1]
        halves = pa.concat_tables([chat.slice(0, 2), chat.slice(2)])
        assert halves.column("items").num_chunks == 2
        assert chat_json(halves).equals(got)
    return len(want)


def test_every_responses_case() -> None:
    table = decode_records([rec for _, rec in RESPONSES], "responses").table
    assert check_chat_json(table) > 0


def test_synthetic_records() -> None:
    table = decode_records(list(synth.generate("responses", 300, seed=23)), "responses").table
    assert check_chat_json(table) > 270


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(wire_record("responses", "request"), min_size=1, max_size=6))
def test_hypothesis_records(records: list[dict[str, Any]]) -> None:
    res = decode_records(records, "responses")
    if res.table.num_rows:
        check_chat_json(res.table)


@pytest.mark.skipif(not corpus_available(), reason="../shared/corpus is absent (CI has it)")
def test_corpus_responses_records() -> None:
    records = [c.record for c in corpus_records() if c.format == "responses"]
    table = decode_records(records, "responses").table
    assert check_chat_json(table) > 0


def test_empty_table() -> None:
    table = decode_records([], "responses").table
    out = chat_json(responses_to_chat(table).table)
    assert len(out) == 0 and out.type == pa.large_string()


def test_record_with_a_call_before_any_message_is_refused() -> None:
    """Calls are written inside the message before them: a row that starts with one is not a table
    ``responses_to_chat`` writes, and the error says which row."""
    record = {"messages": [{"role": "assistant", "content": None, "tool_calls": [
        {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}]}  # fmt: skip
    table = decode_records([record, record], "chat").table
    items = table.column("items").combine_chunks()
    flat = items.flatten()
    assert flat.field("type").to_pylist() == ["message", "function_call"] * 2
    # row 1 loses its head message: its call comes first
    offsets = pa.array([0, 2, 3], pa.int32())
    headless = pa.ListArray.from_arrays(offsets, flat.take([0, 1, 3]), type=items.type)
    broken = table.set_column(table.schema.get_field_index("items"), "items", headless)
    with pytest.raises(ValueError, match="row 1 has a tool call before any message"):
        chat_json(broken)
    assert chat_json(table).to_pylist() == [orjson.dumps(record).decode()] * 2


# ---- the pieces: orjson's escaping, column at a time ----------------------------------------------


def _as(values: list[str | None], large: bool, sliced: bool) -> pa.Array:
    arr = pa.array(["x\n", *values, '"'], pa.large_string() if large else pa.string())
    return arr.slice(1, len(values)) if sliced else pa.array(values, arr.type)


@settings(max_examples=300, deadline=None)
@given(TEXTS, st.booleans(), st.booleans())
def test_needs_escape_matches_a_character_test(values: list[str | None], large: bool, sliced: bool) -> None:
    want = [v is not None and any(c in '"\\' or ord(c) < 0x20 for c in v) for v in values]
    assert needs_escape(_as(values, large, sliced)).tolist() == want


@settings(max_examples=300, deadline=None)
@given(TEXTS, st.booleans(), st.booleans(), st.booleans())
def test_pieces_write_orjson_strings(
    values: list[str | None], large: bool, sliced: bool, narrow: bool
) -> None:
    """A JSON array of the strings, written by gathering, is orjson's array (nulls as null)."""
    p = Pieces()
    valid, value = p.json_strings(_as(values, large, sliced))
    quote = p.choose(lambda q: '"' if q else "", valid)
    index = [p.literal("[")]
    for i in range(len(values)):
        index += ([p.literal(",")] if i else []) + [quote[i], value[i], quote[i]]
    index.append(p.literal("]"))
    # two strings out of one gather: the array, then the array again cut at the same pieces
    pieces = np.array(index * 2, np.int32)
    out = p.gather(pieces, np.array([0, len(index), 2 * len(index)]), narrow=narrow)
    assert out.type == pa.large_string()
    assert [s.encode() for s in out.to_pylist()] == [orjson.dumps(values)] * 2


def test_pieces_drop_empty_pieces_and_keep_empty_strings() -> None:
    p = Pieces()
    a, comma = p.literal("a"), p.literal(",")
    out = p.gather(np.array([0, a, 0, 0, comma, 0, a, 0], np.int32), np.array([0, 2, 2, 4, 8]))
    assert out.to_pylist() == ["a", "", "", ",a"]
    assert p.gather(np.array([0, 0], np.int32), np.array([0, 1, 2])).to_pylist() == ["", ""]
    assert p.gather(np.array([], np.int32), np.array([0])).to_pylist() == []
