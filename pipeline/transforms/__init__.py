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
from pipeline.transforms.registry import STEPS

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
# Above this many rows per chunk the flat item columns outgrow the CPU caches and every row costs
# more (measured: 200,000 rows cost about 15% more CPU in one pass than in 16,384-row pieces).
MAX_CHUNK_ROWS = 16_384


def apply_steps(
    df: pl.DataFrame, steps: Sequence[Step], *, chunks: int | None = None
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Run ``steps`` in order; return ``(kept, rejected)`` with ``len(kept) + len(rejected) == len(df)``.

    ``kept`` has the canonical columns first, then the columns the steps added. ``rejected`` has
    ``conversation_id, source_file, source_line, step, reason``, one row per record a step could
    not handle (it goes no further).

    Every step computes each row from that row alone, so the frame is cut into ``chunks`` runs of
    rows that go through the steps on a pool of one thread per Polars thread (Polars and Arrow
    release the GIL) and are concatenated in order: the result is the same as one pass. ``None``
    picks enough chunks to keep every thread busy (at least :data:`MIN_CHUNK_ROWS` rows each) and
    none longer than :data:`MAX_CHUNK_ROWS` rows; ``1`` is one pass.
    """
    threads = pl.thread_pool_size()
    if chunks is None:
        chunks = max(min(threads, len(df) // MIN_CHUNK_ROWS), -(-len(df) // MAX_CHUNK_ROWS))
    chunks = max(1, min(chunks, len(df)))
    if chunks == 1:
        kept, rejected = _apply_steps(df, steps)
        return kept, pl.concat(rejected)
    bounds = [len(df) * i // chunks for i in range(chunks + 1)]
    parts = [df.slice(lo, hi - lo) for lo, hi in itertools.pairwise(bounds)]
    with ThreadPoolExecutor(min(chunks, threads), thread_name_prefix="chatlake-steps") as pool:
        results = list(pool.map(lambda part: _apply_steps(part, steps), parts))
    # rejected rows step by step, each step's in row order, as one pass lists them
    by_step = [rejected[i] for i in range(len(steps) + 1) for _, rejected in results]
    return pl.concat([k for k, _ in results]), pl.concat(by_step)


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
    "MAX_CHUNK_ROWS",
    "MIN_CHUNK_ROWS",
    "REJECTED_SCHEMA",
    "STEPS",
    "ConfigError",
    "Step",
    "apply_steps",
    "make_step",
    "parse_step",
    "run_step",
]
