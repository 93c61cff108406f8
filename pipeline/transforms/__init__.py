"""Vectorized conversation transforms over the canonical table, configured as named steps.

>>> from pipeline.formats import decode_records
>>> t = decode_records([{"messages": [{"role": "user", "content": "hi"},
...                                   {"role": "tool", "tool_call_id": "c", "content": "x"}]}], "chat").table
>>> kept, rejected = apply_steps(pl.from_arrow(t), [parse_step("role_swap")])
>>> len(kept), rejected.row(0, named=True)["reason"]
(0, "role_swap: unsupported role 'tool' at item 1")

Steps are pure functions over a Polars frame (see :mod:`pipeline.transforms.registry`); a record a
step cannot handle gets an error message instead of an exception, and :func:`apply_steps` moves it
to the rejected frame.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import polars as pl
from pydantic import BaseModel, ValidationError

from pipeline.errors import ConfigError
from pipeline.schema import CONVERSATION_SCHEMA
from pipeline.transforms._items import ERROR
from pipeline.transforms.registry import GROUPING_STEPS, STEPS

REJECTED_SCHEMA = {
    "conversation_id": pl.String,
    "source_file": pl.String,
    "source_line": pl.Int64,
    "step": pl.String,
    "reason": pl.String,
}


@dataclass(frozen=True)
class Step:
    """One configured step: its registry name and validated params."""

    name: str
    params: BaseModel


def make_step(name: str, **params: Any) -> Step:
    """A step from a name and a dict (job TOML). Raises :class:`ConfigError` saying what to fix."""
    if name not in STEPS:
        raise ConfigError(f"unknown step {name!r}; use one of {', '.join(STEPS)}")
    model, _ = STEPS[name]
    unknown = [k for k in params if k not in model.model_fields]
    if unknown:
        allowed = ", ".join(model.model_fields) or "none"
        raise ConfigError(f"step {name}: unknown parameter {unknown[0]!r}; allowed: {allowed}")
    try:
        return Step(name, model(**params))
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(x) for x in err["loc"]) or "params"
        got = f" (got {err['input']!r})" if where != "params" and "input" in err else ""
        raise ConfigError(f"step {name}: {where}: {err['msg']}{got}") from None


# A comma starts a new parameter only when a ``key=`` follows, so values may contain commas.
_PARAM_SPLIT = re.compile(r",(?=\s*[A-Za-z_][A-Za-z0-9_]*=)")


def parse_step(spec: str) -> Step:
    """A step from the command line: ``NAME`` or ``NAME:k=v,k=v``; list values separate with ``|``.

    >>> parse_step("window:last_turns=3,keep_first_task=false").params
    Window(last_turns=3, max_chars=None, keep_first_task=False)
    """
    name, _, rest = spec.partition(":")
    name = name.strip()
    if name not in STEPS:
        raise ConfigError(f"--step {spec!r}: unknown step {name!r}; use one of {', '.join(STEPS)}")
    model, _ = STEPS[name]
    params: dict[str, Any] = {}
    for part in _PARAM_SPLIT.split(rest) if rest.strip() else []:
        key, eq, value = part.partition("=")
        key = key.strip()
        if not eq:
            raise ConfigError(f"--step {spec!r}: expected key=value, got {part!r}")
        info = model.model_fields.get(key)
        if info is not None and "tuple" in str(info.annotation):
            params[key] = tuple(value.split("|")) if value else ()
        elif info is not None and value.lower() in ("none", "null") and "None" in str(info.annotation):
            params[key] = None
        else:
            params[key] = value
    return make_step(name, **params)


def run_step(frame: pl.DataFrame | pl.LazyFrame, step: Step) -> pl.DataFrame | pl.LazyFrame:
    """The step's function on ``frame`` (may add ``__error``); no splitting."""
    _, fn = STEPS[step.name]
    return fn(frame, step.params)


# Below this many rows per chunk, threads cost more than they save.
MIN_CHUNK_ROWS = 4096
# Above this many rows per chunk one run's flat columns take more memory than they save time.
# Every run also pays a fixed ~40 ms of Python and Polars planning for the three flat steps, so
# runs stay long: measured on 200,000 synthetic conversations on one thread (CPU seconds, best
# of 3): one run 2.37 s, 2 runs 2.33 s, 4 runs 2.41 s, 13 runs of about 15,400 rows 2.97 s.
MAX_CHUNK_ROWS = 131_072


def apply_steps(
    df: pl.DataFrame, steps: Sequence[Step], *, chunks: int | None = None
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Run ``steps`` in order; return ``(kept, rejected)`` with ``len(kept) + len(rejected) == len(df)``.

    ``kept`` has the canonical columns first, then the columns the steps added. ``rejected`` has
    ``conversation_id, source_file, source_line, step, reason``, one row per record a step could
    not handle (it goes no further).

    A grouping step (``GROUPING_STEPS``: ``threads``) needs every row at once: with one, the
    steps run in one pass over the whole frame. Every other step computes each row from that
    row alone, so the frame is cut into about ``chunks``
    runs of rows that go through the steps on a pool of one thread per Polars thread (Polars and
    Arrow release the GIL) and are concatenated in order: the result is the same as one pass.
    ``None`` picks enough chunks to keep every thread busy (at least :data:`MIN_CHUNK_ROWS` rows
    each) and none longer than :data:`MAX_CHUNK_ROWS` rows; ``1`` runs on the calling thread.
    Runs also end where the frame's stored chunks do (see :func:`pieces`), so ``chunks=1`` on a
    frame of several large stored chunks is one run per stored chunk, one after another.
    """
    if any(step.name in GROUPING_STEPS for step in steps):
        # a grouping step (threads) relates rows to each other: one pass over the whole frame
        kept, rejected = _apply_steps(df, steps)
        return kept, pl.concat(rejected)
    threads = pl.thread_pool_size()
    if chunks is None:
        chunks = max(min(threads, len(df) // MIN_CHUNK_ROWS), -(-len(df) // MAX_CHUNK_ROWS))
    chunks = max(1, min(chunks, len(df)))
    stored = df.get_column("items").chunk_lengths() if "items" in df.columns else [len(df)]
    bounds = pieces(stored, chunks)
    parts = [df.slice(lo, hi - lo) for lo, hi in itertools.pairwise(bounds)]
    if chunks == 1 or len(parts) <= 1:
        results = [_apply_steps(part, steps) for part in parts] or [_apply_steps(df, steps)]
    else:
        with ThreadPoolExecutor(min(len(parts), threads), thread_name_prefix="chatlake-steps") as pool:
            results = list(pool.map(lambda part: _apply_steps(part, steps), parts))
    if len(results) == 1:
        kept, rejected = results[0]
        return kept, pl.concat(rejected)
    # rejected rows step by step, each step's in row order, as one pass lists them
    by_step = [rejected[i] for i in range(len(steps) + 1) for _, rejected in results]
    return pl.concat([k for k, _ in results]), pl.concat(by_step)


def pieces(stored: Sequence[int], chunks: int, small: int = MIN_CHUNK_ROWS) -> list[int]:
    """Row bounds of about ``chunks`` equal runs of rows, none crossing a boundary between the
    frame's stored chunks (``stored``: their lengths) except to group stored chunks shorter
    than both ``small`` rows and a run.

    A run inside one stored chunk hands its ``items`` to Arrow without a copy; a run across
    stored chunks needs them concatenated first, which copies every nested buffer into fresh
    memory (measured on 200,000 conversations in 32,768-row chunks: about 1 s of CPU, most of it
    the kernel mapping new pages, against about 2.4 s for the three flat steps). So a stored
    chunk of at least ``small`` rows (or a run) is cut into runs of its own, and shorter ones are
    grouped, whole, until they reach a run's length (a 1,600-row chunk costs more in fixed
    per-run planning than its copy).

    ==================  ======  =====  =================================
    stored              chunks  small  bounds
    ==================  ======  =====  =================================
    ``[100]``           4       10     ``[0, 25, 50, 75, 100]``
    ``[60, 40]``        1       10     ``[0, 60, 100]``
    ``[5] * 20``        2       10     ``[0, 50, 100]``
    ``[70, 5, 5, 20]``  4       10     ``[0, 23, 46, 70, 80, 100]``
    ==================  ======  =====  =================================
    """
    total = sum(stored)
    if total == 0:
        return [0]
    target = total / max(1, chunks)
    bounds, start, pos = [0], 0, 0
    for length in stored:
        if length < min(small, target):  # grouped with its short neighbours up to a run's length
            pos += length
            if pos - start >= target:
                bounds.append(pos)
                start = pos
            continue
        if pos > start:  # close the run of short chunks before this one
            bounds.append(pos)
        k = max(1, round(length / target))
        bounds.extend(pos + length * i // k for i in range(1, k + 1))
        pos += length
        start = pos
    if pos > start:
        bounds.append(pos)
    return [b for i, b in enumerate(bounds) if i == 0 or b > bounds[i - 1]]


def _rows(frame: pl.DataFrame, mask: pl.Series) -> pl.DataFrame:
    """The rows where ``mask`` is true, by index (Polars' filter is several times slower than a
    gather on nested list columns)."""
    return frame[mask.arg_true()]


def _apply_steps(df: pl.DataFrame, steps: Sequence[Step]) -> tuple[pl.DataFrame, list[pl.DataFrame]]:
    """One pass: the kept rows, and the rejected rows as ``[empty, step 1's, step 2's, ...]``."""
    rejected = [pl.DataFrame(schema=REJECTED_SCHEMA)]
    for step in steps:
        out = run_step(df.lazy(), step).collect()
        bad = pl.DataFrame(schema=REJECTED_SCHEMA)
        if ERROR in out.columns:
            failed = out.get_column(ERROR).is_not_null()
            if failed.any():
                bad = (
                    _rows(out, failed)
                    .select(
                        "conversation_id",
                        "source_file",
                        "source_line",
                        pl.lit(step.name).alias("step"),
                        pl.col(ERROR).alias("reason"),
                    )
                    .cast(REJECTED_SCHEMA)  # type: ignore[arg-type]
                )
                out = _rows(out, ~failed)
            out = out.drop(ERROR)
        rejected.append(bad)
        df = out.with_columns(pl.col("items").list.len().fill_null(0).cast(pl.Int32).alias("n_items"))
    canonical = CONVERSATION_SCHEMA.names
    df = df.select(*canonical, *(c for c in df.columns if c not in canonical))
    return df, rejected


__all__ = [
    "GROUPING_STEPS",
    "MAX_CHUNK_ROWS",
    "MIN_CHUNK_ROWS",
    "REJECTED_SCHEMA",
    "STEPS",
    "ConfigError",
    "Step",
    "apply_steps",
    "make_step",
    "parse_step",
    "pieces",
    "run_step",
]
