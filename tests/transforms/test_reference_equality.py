"""Property: every step, vectorized, equals its per-record reference on random canonical tables.

Tables come from the wire-record strategies of all three formats, requests and responses (empty
conversations, tool-only ones, unicode, tri-state fields), several records per table so regrouping
across rows is exercised too.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.formats import decode_records
from tests.strategies import wire_record
from tests.transforms.harness import compare

KINDS = [(f, k) for f in ("responses", "chat", "anthropic") for k in ("request", "response")]

STEP_CASES: list[tuple[str, dict]] = [
    ("role_swap", {}),
    ("role_swap", {"on_unsupported": "drop"}),
    ("synthetic_user_view", {}),
    (
        "synthetic_user_view",
        {"persona": "You are a terse user. 👤", "visible_roles": ["user", "assistant", "system"]},
    ),
    ("turns", {}),
    ("turns", {"preview_chars": 3}),
    ("compaction", {}),
    ("compaction", {"markers": ["a", "é"], "item_types": ["compaction", "reasoning"]}),
    ("place_system", {"text": "S"}),
    (
        "place_system",
        {"text": "S", "position": "after_system_content", "anchor": "last", "role": "developer"},
    ),
    ("place_system", {"text": "S", "position": "append"}),
    ("place_system", {"text": "S", "anchor_patterns": ["^a", "b$"], "missing": "reject"}),
    ("parse_header", {"pattern": r"^(\{.*\})$", "fields": ["a", "b"]}),
    ("append_note", {"text": "NOTE"}),
    ("append_note", {"text": "NOTE", "mode": "message"}),
    ("prepend_system", {"text": "P", "role": "developer"}),
    ("compat", {"mode": "native"}),
    ("compat", {"mode": "flat_tools"}),
    ("compat", {"mode": "kimi"}),
    ("window", {"last_turns": 2}),
    ("window", {"last_turns": 0, "keep_first_task": False}),
    ("window", {"max_chars": 12}),
    ("window", {"last_turns": 3, "max_chars": 40}),
    ("slice_turns", {"start": 1, "stop": -1}),
    ("slice_turns", {"start": -2}),
    ("slice_turns", {"stop": 2}),
]


@pytest.mark.parametrize(("fmt", "kind"), KINDS)
@pytest.mark.parametrize(
    ("name", "params"), STEP_CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(STEP_CASES)]
)
def test_vectorized_equals_reference(fmt: str, kind: str, name: str, params: dict) -> None:
    @settings(
        max_examples=12,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(records=st.lists(wire_record(fmt, kind), min_size=1, max_size=4))
    def check(records: list[dict]) -> None:
        res = decode_records(records, fmt)
        assert res.rejected == [], res.rejected[0].error
        d = compare(res.table, name, **params)
        assert d is None, d

    check()
