"""Every step by name: its parameters (a pydantic model, validated before any work) and its function.

A step function takes a frame of the canonical table and the validated params and returns the frame
with changed ``items`` and/or added columns, plus ``__error`` when records can fail.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Literal

import polars as pl
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from pipeline.transforms import compaction as _compaction
from pipeline.transforms import compat as _compat
from pipeline.transforms import edits, roles, system, window
from pipeline.transforms import threads as _threads
from pipeline.transforms import turns as _turns

Frame = pl.DataFrame | pl.LazyFrame


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _check_regex(value: str) -> str:
    """A pattern both engines accept (Polars' Rust regex runs it; Python's re checks the tests)."""
    try:
        pl.Series([""]).str.contains(value)
        re.compile(value)
    except Exception as e:
        raise ValueError(f"invalid regular expression {value!r}: {e}") from None
    return value


class RoleSwap(Params):
    on_unsupported: Literal["reject", "drop"] = "reject"


class SyntheticUserView(Params):
    visible_roles: tuple[str, ...] = ("user", "assistant")
    persona: str | None = None


class Turns(Params):
    preview_chars: int = Field(80, ge=0)


class Compaction(Params):
    markers: tuple[str, ...] = _compaction.DEFAULT_MARKERS
    item_types: tuple[str, ...] = _compaction.DEFAULT_ITEM_TYPES

    @field_validator("markers")
    @classmethod
    def _non_empty(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        if any(m == "" for m in v):
            raise ValueError("an empty marker would match every message")
        return v


class Threads(Compaction):
    """``keep``: ``all`` adds the thread columns; ``leaves`` also drops every record that is not a
    leaf or is a duplicate (to the rejected table, naming its leaf). ``markers``/``item_types``:
    what counts as a compaction (as the ``compaction`` step)."""

    keep: Literal["all", "leaves"] = "all"


class PlaceSystem(Params):
    text: str
    role: Literal["system", "developer"] = "system"
    position: Literal["append", "before_system_content", "after_system_content"] = "before_system_content"
    anchor_patterns: tuple[str, ...] = ()
    anchor: Literal["first", "last"] = "first"
    missing: Literal["start", "reject"] = "start"

    @field_validator("anchor_patterns")
    @classmethod
    def _regex(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(_check_regex(p) for p in v)


class ParseHeader(Params):
    pattern: str = system.DEFAULT_HEADER_PATTERN
    fields: tuple[str, ...] = ()

    @field_validator("pattern")
    @classmethod
    def _regex(cls, v: str) -> str:
        _check_regex(v)
        if re.compile(v).groups < 1:
            raise ValueError("the pattern needs a capture group around the JSON header")
        return v

    @field_validator("fields")
    @classmethod
    def _names(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for name in v:
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
                raise ValueError(f"header field {name!r} must be an identifier")
        return v


class AppendNote(Params):
    text: str
    mode: Literal["block", "message"] = "block"


class PrependSystem(Params):
    text: str
    role: Literal["system", "developer"] = "system"


class Compat(Params):
    mode: Literal["native", "flat_tools", "kimi"] = "native"


class Window(Params):
    last_turns: int | None = Field(None, ge=0)
    max_chars: int | None = Field(None, ge=0)
    keep_first_task: bool = True

    @model_validator(mode="after")
    def _some_limit(self) -> Window:
        if self.last_turns is None and self.max_chars is None:
            raise ValueError("give last_turns, max_chars or both")
        return self


class SliceTurns(Params):
    start: int | None = None
    stop: int | None = None


StepFn = Callable[[Frame, BaseModel], Frame]

STEPS: dict[str, tuple[type[Params], StepFn]] = {
    "role_swap": (RoleSwap, lambda f, p: roles.role_swap(f, p.on_unsupported)),
    "synthetic_user_view": (
        SyntheticUserView,
        lambda f, p: roles.synthetic_user_view(f, p.visible_roles, p.persona),
    ),
    "turns": (Turns, lambda f, p: _turns.turns(f, p.preview_chars)),
    "compaction": (Compaction, lambda f, p: _compaction.compaction(f, p.markers, p.item_types)),
    "threads": (Threads, lambda f, p: _threads.threads(f, p.keep, p.markers, p.item_types)),
    "place_system": (
        PlaceSystem,
        lambda f, p: system.place_system(
            f, p.text, p.role, p.position, p.anchor_patterns, p.anchor, p.missing
        ),
    ),
    "parse_header": (ParseHeader, lambda f, p: system.parse_header(f, p.pattern, p.fields)),
    "append_note": (AppendNote, lambda f, p: edits.append_note(f, p.text, p.mode)),
    "prepend_system": (PrependSystem, lambda f, p: edits.prepend_system(f, p.text, p.role)),
    "compat": (Compat, lambda f, p: _compat.compat(f, p.mode)),
    "window": (Window, lambda f, p: window.window(f, p.last_turns, p.max_chars, p.keep_first_task)),
    "slice_turns": (SliceTurns, lambda f, p: window.slice_turns(f, p.start, p.stop)),
}

# Steps whose result for one record depends on the other records: they run on the whole frame at
# once (apply_steps does not cut it into runs of rows) and, in a job, on a whole shard.
GROUPING_STEPS = frozenset({"threads"})
