"""apply_steps: a frame cut into row chunks on threads gives exactly the one-pass result."""

from __future__ import annotations

import polars as pl
import pyarrow as pa
import pytest

from pipeline import synth
from pipeline.formats import decode_records
from pipeline.transforms import apply_steps, parse_step
from pipeline.transforms.job import to_arrow
from tests.cases import CASES

STEP_LISTS = [
    ["role_swap"],
    ["role_swap:on_unsupported=drop", "turns", "compaction"],
    ["turns:preview_chars=5", "compaction:markers=a|é"],
    ["synthetic_user_view", "window:last_turns=2"],
    ["compat:mode=kimi", "place_system:text=S", "append_note:text=N"],
]


@pytest.fixture(scope="module")
def frame() -> pl.DataFrame:
    """Every hand-written case of the three formats plus synthetic records, rejects included."""
    frames = []
    for fmt in ("responses", "chat", "anthropic"):
        records = [r for _, r in CASES[fmt]] + list(synth.generate(fmt, 120, 3))
        frames.append(pl.from_arrow(decode_records(records, fmt).table))
    return pl.concat(frames, how="vertical_relaxed")


@pytest.mark.parametrize("specs", STEP_LISTS, ids=["+".join(s) for s in STEP_LISTS])
@pytest.mark.parametrize("chunks", [2, 3, 7])
def test_chunked_equals_one_pass(frame: pl.DataFrame, specs: list[str], chunks: int) -> None:
    steps = [parse_step(s) for s in specs]
    kept1, rejected1 = apply_steps(frame, steps, chunks=1)
    kept, rejected = apply_steps(frame, steps, chunks=chunks)
    assert len(kept) + len(rejected) == len(frame)
    want: pa.Table = to_arrow(kept1)
    got: pa.Table = to_arrow(kept)
    assert got.schema == want.schema
    assert got.to_pylist() == want.to_pylist()
    assert rejected.to_dicts() == rejected1.to_dicts()
    if specs[0] == "role_swap":
        assert len(rejected) > 0  # the reject path runs in several chunks too


def test_more_chunks_than_rows() -> None:
    table = decode_records([{"messages": [{"role": "user", "content": "hi"}]}], "chat").table
    kept, rejected = apply_steps(pl.from_arrow(table), [parse_step("turns")], chunks=8)  # type: ignore[arg-type]
    assert (len(kept), len(rejected)) == (1, 0)
    assert kept["human_turns"].to_list() == [1]
