"""The compiled JSON Lines writers (pipeline/_native/lines.c) against their references.

``json_lines`` (the losses and rejected files beside a single JSONL output) must give the bytes of
Polars' ``write_ndjson`` (:func:`pipeline.engine.writers.ndjson_polars`, the CHATLAKE_NATIVE=0
path); ``join_lines`` (the output file) those of Arrow's filter and join
(:func:`pipeline.encoders.encode_rows._lines`). Checked on the losses and output of the hand-written
cases, synthetic records and the shared corpus converted to every target, on rejected rows, and on
hypothesis-made tables (every control character, non-ASCII, nulls, extreme integers, slices).
"""

from __future__ import annotations

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline import codec, synth
from pipeline.encoders.encode_rows import _lines, encode_rows
from pipeline.engine.process import _encode, _Originals
from pipeline.engine.writers import jsonl_parts, ndjson_polars
from pipeline.formats import decode_lines
from pipeline.io.run_tables import LOSSES_SCHEMA, REJECTED_SCHEMA, rejected_row
from pipeline.losses import LossPolicy
from tests.cases import CASES
from tests.corpus import corpus_available, corpus_records

native = codec.native_lines()
pytestmark = pytest.mark.skipif(
    native is None, reason="pipeline._native is not built (no C compiler at install)"
)

FORMATS = sorted(codec.NATIVE_FORMATS)


def _json_lines(table: pa.Table) -> bytes:
    """The C writer's bytes for ``table``, checked equal to Polars' (and returned)."""
    got = b"".join(bytes(p) for p in jsonl_parts(table))
    assert len(jsonl_parts(table)) == len([b for b in table.to_batches() if b.num_rows]), "C was not used"
    assert got == ndjson_polars(table) if table.num_rows else got == b""
    return got


def _losses_and_output(lines: list[bytes], fmt: str) -> int:
    """Convert ``lines`` to every other format; the losses file's and output's bytes equal the
    references'. Returns how many loss rows were compared."""
    table = decode_lines(lines, fmt).table
    n = 0
    for target in FORMATS:
        if target == fmt:
            continue
        _, data, losses, _ = _encode(table, target, LossPolicy("allow"), _Originals(table, {}, fmt))
        assert losses.schema == LOSSES_SCHEMA
        _json_lines(losses)
        n += losses.num_rows
        enc = encode_rows(table, target)
        keep = np.ones(len(enc.records), bool)
        keep[::3] = False  # some rows left out, as the loss policy does
        for mask in (np.ones(len(enc.records), bool), keep):
            assert bytes(enc.jsonl(mask)) == _lines(pc.filter(enc.records, pa.array(mask)))
        assert bytes(data) == _lines(enc.records)
    return n


@pytest.mark.parametrize("fmt", FORMATS)
def test_hand_written_cases(fmt: str) -> None:
    assert _losses_and_output([orjson.dumps(r) for _, r in CASES[fmt]], fmt)


@pytest.mark.parametrize("fmt", FORMATS)
def test_synthetic_records(fmt: str) -> None:
    assert _losses_and_output([orjson.dumps(r) for r in synth.generate(fmt, 300, seed=5)], fmt)


@pytest.mark.corpus
@pytest.mark.skipif(not corpus_available(), reason="../shared/corpus not found (CI has it)")
@pytest.mark.parametrize("fmt", FORMATS)
def test_shared_corpus_records(fmt: str) -> None:
    records = [r.record for r in corpus_records() if r.format == fmt]
    assert records
    assert _losses_and_output([orjson.dumps(r) for r in records], fmt)


def test_rejected_rows() -> None:
    rows = [
        rejected_row(
            "in.jsonl", 3, "decode", '$: invalid JSON "x"\n', raw=b'{"a":\x00"\xff', input_format="chat"
        ),
        rejected_row("f\u2028\x7f.jsonl", None, "transform", "r", conversation_id="c", step="s", raw=None),
    ]
    _json_lines(pa.Table.from_pylist(rows, schema=REJECTED_SCHEMA))


_TEXT = st.one_of(st.none(), st.text(st.characters(codec="utf-8"), max_size=8))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(_TEXT, st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1)), _TEXT), max_size=10),
    st.integers(0, 3),
    st.integers(0, 3),
    st.text(st.characters(codec="utf-8", exclude_characters="\x00"), min_size=1, max_size=4),
)
def test_hypothesis_tables(rows: list[tuple], start: int, cut: int, key: str) -> None:
    a, b, c = zip(*rows, strict=True) if rows else ((), (), ())
    table = pa.table(
        {"a": pa.array(a, pa.string()), "n": pa.array(b, pa.int64()), key + "_": pa.array(c, pa.string())}
    )
    _json_lines(table)
    _json_lines(table.slice(start, max(0, table.num_rows - start - cut)))  # offsets into every buffer
    _json_lines(pa.concat_tables([table, table]))  # two batches


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(_TEXT, st.booleans()), max_size=10), st.integers(0, 3), st.booleans())
def test_hypothesis_join_lines(rows: list[tuple], start: int, large: bool) -> None:
    texts = pa.array([t for t, _ in rows], pa.large_string() if large else pa.string())[start:]
    keep = pa.array([k for _, k in rows], pa.bool_())[start:]
    got = pa.foreign_buffer(*native.join_lines(texts, keep)).to_pybytes()
    assert got == _lines(pc.filter(texts, keep))
    assert pa.foreign_buffer(*native.join_lines(texts, None)).to_pybytes() == _lines(texts)


def test_other_types_fall_back_to_polars() -> None:
    table = pa.table({"a": pa.array([1.5, None]), "b": pa.array([True, False])})
    for t in (table, pa.table({"k\x00": ["v"]})):  # other types; a NUL in a name (C strings)
        assert jsonl_parts(t) == [ndjson_polars(t)]
    with pytest.raises(ValueError):
        native.json_lines(table.to_batches()[0])
    assert b"".join(bytes(p) for p in jsonl_parts(table)) == ndjson_polars(table)
    with pytest.raises(ValueError):
        native.join_lines(pa.array([1]), None)
    with pytest.raises(ValueError):
        native.join_lines(pa.array(["a"]), pa.array([True, False]))
