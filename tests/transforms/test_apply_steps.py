"""apply_steps: a frame cut into row chunks on threads gives exactly the one-pass result."""

from __future__ import annotations

import itertools

import polars as pl
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline import synth
from pipeline.engine.process import frame_to_disk as to_arrow
from pipeline.formats import decode_records
from pipeline.transforms import apply_steps, parse_step, pieces
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


@pytest.mark.parametrize(
    ("stored", "chunks", "small", "bounds"),
    [
        ([100], 4, 10, [0, 25, 50, 75, 100]),
        ([60, 40], 1, 10, [0, 60, 100]),
        ([5] * 20, 2, 10, [0, 50, 100]),
        ([70, 5, 5, 20], 4, 10, [0, 23, 46, 70, 80, 100]),
        ([3], 3, 10, [0, 1, 2, 3]),
        ([0, 5, 0], 2, 1, [0, 2, 5]),
        ([0], 2, 10, [0]),
    ],
)
def test_pieces_examples(stored: list[int], chunks: int, small: int, bounds: list[int]) -> None:
    assert pieces(stored, chunks, small) == bounds


@settings(max_examples=300, deadline=None)
@given(
    stored=st.lists(st.integers(0, 400), min_size=1, max_size=12).filter(lambda s: sum(s) > 0),
    chunks=st.integers(1, 20),
    small=st.integers(1, 200),
)
def test_pieces_cover_rows_and_keep_long_stored_chunks_whole(
    stored: list[int], chunks: int, small: int
) -> None:
    chunks = min(chunks, sum(stored))
    bounds = pieces(stored, chunks, small)
    assert bounds[0] == 0 and bounds[-1] == sum(stored)
    assert all(a < b for a, b in itertools.pairwise(bounds))
    edges = list(itertools.accumulate(stored))
    target = sum(stored) / chunks
    for lo, hi in itertools.pairwise(bounds):
        crossed = [e for e in edges if lo < e < hi]
        if crossed:  # a run across stored chunks is made of whole short ones
            starts = [0, *edges[:-1]]
            inside = [n for start, n in zip(starts, stored, strict=True) if lo <= start < hi]
            assert sum(inside) == hi - lo
            assert all(length < min(small, target) for length in inside if length)


def test_runs_follow_stored_chunks(frame: pl.DataFrame) -> None:
    """A frame of several stored chunks (as read from Parquet row groups) gives the one-pass result,
    and its runs do not cross the stored chunks' boundaries."""
    one = frame.rechunk()
    stored = pl.concat([one.slice(0, 150), one.slice(150, 200), one.slice(350)], rechunk=False)
    assert stored.get_column("items").chunk_lengths() == [150, 200, len(frame) - 350]
    steps = [parse_step(s) for s in STEP_LISTS[1]]
    kept1, rejected1 = apply_steps(one, steps, chunks=1)
    for chunks in (1, 2, 5):
        kept, rejected = apply_steps(stored, steps, chunks=chunks)
        assert to_arrow(kept).to_pylist() == to_arrow(kept1).to_pylist()
        assert rejected.to_dicts() == rejected1.to_dicts()
    bounds = pieces([150, 200, len(frame) - 350], 5)
    assert {150, 350} <= set(bounds)


@pytest.mark.parametrize("chunks", [None, 1, 2])
def test_empty_frame(frame: pl.DataFrame, chunks: int | None) -> None:
    kept, rejected = apply_steps(frame.head(0), [parse_step(s) for s in STEP_LISTS[1]], chunks=chunks)
    assert (len(kept), len(rejected)) == (0, 0)
    assert "role_swap_dropped" in kept.columns and "compacted" in kept.columns
