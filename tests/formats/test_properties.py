"""Property: any valid-shaped wire record survives decode -> Parquet -> encode exactly."""

from __future__ import annotations

import io

import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings

from pipeline.formats import decode_records, encode_table
from tests.helpers import json_diff
from tests.strategies import wire_record

KINDS = [(f, k) for f in ("responses", "chat", "anthropic") for k in ("request", "response")]


@pytest.mark.parametrize(("fmt", "kind"), KINDS)
def test_roundtrip_property(fmt: str, kind: str) -> None:
    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(record=wire_record(fmt, kind))
    def check(record: dict) -> None:
        res = decode_records([record], fmt)
        assert res.rejected == [], res.rejected[0].error
        buf = io.BytesIO()
        pq.write_table(res.table, buf)
        buf.seek(0)
        table = pq.read_table(buf)
        assert table.column("record_kind").to_pylist() == [kind]
        [back] = encode_table(table, fmt)
        assert json_diff(record, back) is None, json_diff(record, back)

    check()
