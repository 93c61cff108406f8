"""The compiled item fingerprints (pipeline/_native/fingerprint.c) against DuckDB's FINGERPRINT_SQL,
the reference (pipeline/fingerprint.py): equal strings and nulls on every item source the project
has, and on hypothesis-made item arrays with the edge cases SQL treats specially (null vs empty
lists, null blocks, null items, separator and NUL characters inside values, sliced arrays).
"""

from __future__ import annotations

import orjson
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline import codec, synth
from pipeline.fingerprint import duckdb_fingerprints, fingerprints
from pipeline.formats import decode_lines
from pipeline.schema import ITEM
from tests.cases import CASES
from tests.corpus import corpus_available, corpus_records
from tests.native.differential import python_codec
from tests.strategies import wire_record

native = codec.native_fingerprints()
pytestmark = pytest.mark.skipif(
    native is None, reason="pipeline._native is not built (no C compiler at install)"
)

FORMATS = sorted(codec.NATIVE_FORMATS)
ITEM_TYPE = pa.struct([f for f in ITEM if f.name != "fingerprint"])
STRING_FIELDS = [f.name for f in ITEM_TYPE if f.type == pa.string()]


def _check(items: pa.StructArray) -> pa.Array:
    """C and DuckDB give equal arrays (values and nulls); return the C one."""
    got, want = fingerprints(items), duckdb_fingerprints(items)
    assert got.type == want.type == pa.string()
    assert got.to_pylist() == want.to_pylist()
    assert got.equals(want)
    return got


def _items(lines: list[bytes], fmt: str) -> pa.StructArray:
    """The flat items of ``lines`` decoded by the Python decoder (its fingerprints by DuckDB)."""
    with python_codec():
        table = decode_lines(lines, fmt).table
    return table.column("items").combine_chunks().flatten()


def _both_ways(lines: list[bytes], fmt: str) -> None:
    """C == DuckDB on the items of ``lines``, equal to the fingerprints the Python decoder stored, and
    (but for Chat, whose messages carry no id, encrypted content or signature) not all null."""
    items = _items(lines, fmt)
    got = _check(items)
    assert got.equals(items.field("fingerprint"))
    if fmt != "chat":
        assert got.null_count < len(got), "no item has state: the test would compare only nulls"


@pytest.mark.parametrize("fmt", FORMATS)
def test_hand_written_cases(fmt: str) -> None:
    _both_ways([orjson.dumps(r) for _, r in CASES[fmt]], fmt)


@pytest.mark.parametrize("fmt", FORMATS)
def test_synthetic_records(fmt: str) -> None:
    _both_ways([orjson.dumps(r) for r in synth.generate(fmt, 400, seed=3)], fmt)


@pytest.mark.corpus
@pytest.mark.skipif(not corpus_available(), reason="../shared/corpus not found (CI has it)")
@pytest.mark.parametrize("fmt", FORMATS)
def test_shared_corpus_records(fmt: str) -> None:
    records = [r.record for r in corpus_records() if r.format == fmt]
    assert records
    _both_ways([orjson.dumps(r) for r in records], fmt)


@pytest.mark.parametrize("fmt", FORMATS)
def test_hypothesis_records(fmt: str) -> None:
    records = st.one_of(wire_record(fmt, "request"), wire_record(fmt, "response"))

    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.lists(records, min_size=1, max_size=6))
    def check(records: list[dict]) -> None:
        _check(_items([orjson.dumps(r) for r in records], fmt))

    check()


# Values with the separators (GS, RS, US), NUL and non-ASCII inside, so a join that differs from
# DuckDB's (or a NUL that ends a C string) shows.
_TEXT = st.one_of(
    st.none(), st.text(alphabet=st.sampled_from(["a", "é", "\x00", "\x1d", "\x1e", "\x1f", "😀"]), max_size=5)
)
_BLOCK = st.one_of(
    st.none(), st.fixed_dictionaries({}, optional={"type": _TEXT, "text": _TEXT, "extra_json": _TEXT})
)
_ITEM = st.one_of(
    st.none(),
    st.fixed_dictionaries(
        {},
        optional={
            **{name: _TEXT for name in STRING_FIELDS},
            "content": st.one_of(st.none(), st.lists(_BLOCK, max_size=3)),
            "summary": st.one_of(st.none(), st.lists(_BLOCK, max_size=3)),
        },
    ),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_ITEM, max_size=12), st.integers(0, 3), st.integers(0, 3))
def test_hypothesis_item_arrays(rows: list[dict | None], start: int, cut: int) -> None:
    items = pa.array(rows, ITEM_TYPE)
    _check(items)
    _check(items.slice(start, max(0, len(items) - start - cut)))  # offsets into every buffer


def test_a_null_block_or_item_with_values_underneath() -> None:
    """Arrow lets a null struct slot keep child values; both sides must read them as null."""
    blocks = pa.StructArray.from_arrays(
        [pa.array(["t", "u"]), pa.array(["x", "y"]), pa.array([None, "{}"], pa.string())],
        names=["type", "text", "extra_json"],
        mask=pa.array([True, False]),
    )
    content = pa.ListArray.from_arrays(pa.array([0, 2, 2]), blocks).cast(ITEM_TYPE.field("content").type)
    arrays = [
        pa.array(["a", "b"])
        if f.name == "id"
        else content
        if f.name in ("content", "summary")
        else pa.nulls(2, f.type)
        for f in ITEM_TYPE
    ]
    items = pa.StructArray.from_arrays(arrays, fields=list(ITEM_TYPE), mask=pa.array([False, True]))
    assert _check(items).to_pylist()[1] is None
    assert _check(items.slice(1)).to_pylist() == [None]


def test_other_field_types_take_the_reference() -> None:
    """large_string fields (as Polars gives them) are not bound by the C: DuckDB computes them."""
    items = pa.array([{"id": "a", "type": "message", "content": [{"text": "hi"}]}], ITEM_TYPE)
    with pytest.raises(ValueError, match="canonical item struct"):
        native.fingerprints(
            items.cast(
                pa.struct([f.with_type(pa.large_string()) if f.type == pa.string() else f for f in ITEM_TYPE])
            )
        )
    large = items.cast(
        pa.struct([f.with_type(pa.large_string()) if f.type == pa.string() else f for f in ITEM_TYPE])
    )
    assert fingerprints(large).equals(duckdb_fingerprints(items))


def test_chatlake_native_0_uses_duckdb(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(codec.ENV, "0")
    assert codec.native_fingerprints() is None
    items = pa.array([{"id": "a", "role": "user"}], ITEM_TYPE)
    assert fingerprints(items).equals(duckdb_fingerprints(items))
