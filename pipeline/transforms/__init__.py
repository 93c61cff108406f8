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

import re
from collections.abc import Sequence
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


def apply_steps(df: pl.DataFrame, steps: Sequence[Step]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Run ``steps`` in order; return ``(kept, rejected)`` with ``len(kept) + len(rejected) == len(df)``.

    ``kept`` has the canonical columns first, then the columns the steps added. ``rejected`` has
    ``conversation_id, source_file, source_line, step, reason``, one row per record a step could
    not handle (it goes no further).
    """
    rejected = [pl.DataFrame(schema=REJECTED_SCHEMA)]
    for step in steps:
        out = run_step(df.lazy(), step).collect()
        if ERROR in out.columns:
            bad = out.filter(pl.col(ERROR).is_not_null())
            if len(bad):
                rejected.append(
                    bad.select(
                        "conversation_id",
                        "source_file",
                        "source_line",
                        pl.lit(step.name).alias("step"),
                        pl.col(ERROR).alias("reason"),
                    ).cast(REJECTED_SCHEMA)  # type: ignore[arg-type]
                )
                out = out.filter(pl.col(ERROR).is_null())
            out = out.drop(ERROR)
        df = out.with_columns(pl.col("items").list.len().fill_null(0).cast(pl.Int32).alias("n_items"))
    canonical = CONVERSATION_SCHEMA.names
    df = df.select(*canonical, *(c for c in df.columns if c not in canonical))
    return df, pl.concat(rejected)


__all__ = [
    "REJECTED_SCHEMA",
    "STEPS",
    "ConfigError",
    "Step",
    "apply_steps",
    "make_step",
    "parse_step",
    "run_step",
]
