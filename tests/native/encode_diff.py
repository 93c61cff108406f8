"""Native vs per-record Chat encoding of the same table: the helper the encoder tests and the
fuzzer (``fuzz_native.py``, under AddressSanitizer) use.

Not a test module. :func:`compare_encode` runs :func:`~pipeline.encoders.encode_rows.encode_rows`
with the compiled encoder and again with ``CHATLAKE_NATIVE=0`` (every row through
``convert_table``, the specification) and asserts the same JSON bytes, errors, losses (in order)
and refusals under each loss policy.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from pipeline import codec
from pipeline.encoders.encode_rows import EncodedRows, encode_rows
from pipeline.losses import LossPolicy
from tests.native.differential import python_codec

POLICIES = [
    LossPolicy(),
    LossPolicy("reject"),
    LossPolicy("reject", frozenset({"reasoning", "item_id", "instruction_position", "content_form"})),
]


def compare_encode(table: pa.Table, target: str = "chat") -> EncodedRows:
    """Encode ``table`` both ways; raise AssertionError naming the first differing row; return the
    native result (its ``native`` flags say which rows the compiled encoder took)."""
    assert codec.native_encoder(target) is not None, "the native encoder is not active"
    native = encode_rows(table, target)
    with python_codec():
        python = encode_rows(table, target)
    assert not any(python.native.to_pylist())
    n = table.num_rows
    assert len(native.records) == len(native.errors) == len(native.native) == n
    got, want = native.records.to_pylist(), python.records.to_pylist()
    for r in range(n):
        assert got[r] == want[r], f"row {r}: native\n{got[r]}\nper-record\n{want[r]}"
    assert native.errors.to_pylist() == python.errors.to_pylist()
    got_l, want_l = native.losses.to_pylist(), python.losses.to_pylist()
    if got_l != want_l:
        for r in range(n):
            g = [x for x in got_l if x["row"] == r]
            w = [x for x in want_l if x["row"] == r]
            assert g == w, f"row {r} losses: native\n{g}\nper-record\n{w}\nrecord {want[r]}"
    assert native.losses.schema.equals(python.losses.schema)
    for policy in POLICIES:
        assert native.refused_kinds(policy).to_pylist() == python.refused_kinds(policy).to_pylist()
    keep = np.ones(n, bool)
    assert native.jsonl(keep) == python.jsonl(keep)
    return native
