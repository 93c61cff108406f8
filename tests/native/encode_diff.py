"""Native vs per-record encoding of the same table: the helpers the encoder tests and the fuzzer
(``fuzz_native.py``, under AddressSanitizer) use.

Not a test module. :func:`compare_encode` runs :func:`~pipeline.encoders.encode_rows.encode_rows`
with the compiled encoder and again with ``CHATLAKE_NATIVE=0`` (every row through
``convert_table``, the specification) and asserts the same JSON bytes, errors, losses (in order)
and refusals under each loss policy. :func:`compare_report` checks the compiled Anthropic
round-trip report (``pipeline._native.anthropic_report``) against
:func:`pipeline.encoders.anthropic_round_trip.report`, row by row.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from pipeline import codec
from pipeline.encoders import anthropic_round_trip
from pipeline.encoders._context import Ctx
from pipeline.encoders.call_ids import CallIds
from pipeline.encoders.encode_rows import EncodedRows, _native, encode_rows
from pipeline.formats._common import ConversationView
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


def _python(table: pa.Table, media: bool) -> list[list[tuple[str, str, str]] | None]:
    """Each row's report losses from the Python report (None: it raised, or not an Anthropic request)."""
    view = ConversationView(table)
    out: list[list[tuple[str, str, str]] | None] = []
    for r in range(view.n):
        if view.source_format[r] != "anthropic" or view.record_kind[r] != "request":
            out.append(None)
            continue
        ctx = Ctx(view, r)
        ids = CallIds(ctx)
        before = len(ctx.losses)
        try:
            anthropic_round_trip.report(ctx, ids, media_in_results=media)
        except (ValueError, KeyError, TypeError, AttributeError):
            out.append(None)
            continue
        out.append([(x.path, x.kind, x.detail) for x in ctx.losses[before:]])
    return out


def compare_report(table: pa.Table) -> np.ndarray:
    """C vs Python report on every row the C takes, with and without media in results; the C's
    per-row flags (the rows it took in both runs)."""
    from pipeline import _native as native_ext

    flags = np.ones(table.num_rows, bool)
    for media in (True, False):
        _, losses, native = _native(lambda b, m=media: native_ext.anthropic_report(b, m), table)
        want = _python(table, media)
        got: list[list[tuple[str, str, str]]] = [[] for _ in range(table.num_rows)]
        for x in losses.to_pylist():
            got[x["row"]].append((x["path"], x["kind"], x["detail"]))
        for r in range(table.num_rows):
            if not native[r]:
                assert not got[r], f"row {r}: a handed-back row kept losses"
                continue
            assert want[r] is not None, f"row {r}: the C took a row the Python report does not"
            assert got[r] == want[r], f"row {r} (media {media}): C\n{got[r]}\nPython\n{want[r]}"
        flags &= native
    return flags
