"""System-message placement and header parsing (Eleanor's CanonicalChat semantics).

``place_system`` inserts a new system (or developer) message relative to an *anchor*: the first
(or last, ``anchor='last'``) inline system/developer message whose text matches one of
``anchor_patterns`` (any inline system/developer message when no patterns are given).

=========================  ==================================  ===============================
position                   with an anchor                      without one (``missing='start'``)
=========================  ==================================  ===============================
``before_system_content``  directly before the anchor          at index 0
``after_system_content``   directly after the anchor           at index 0
``append``                 after the last item                 after the last item
=========================  ==================================  ===============================

With ``missing='reject'`` a conversation without an anchor is rejected instead (``append`` needs
none). Top-level ``instructions`` are never an anchor and never change. Response objects are
rejected: they hold one reply, not a conversation.

``parse_header`` finds the first inline system/developer message whose whole text matches
``pattern`` (default ``^ELEANOR_SYSTEM\\s*(\\{.*\\})$``), removes it from ``items`` and adds
``header_json`` (capture group 1, as written) and, when ``fields`` are named, a ``header`` struct of
those keys (strings as they are, other JSON values as compact JSON text, null when missing). A
header that is not valid JSON rejects the record. Run it before ``turns`` so the header message is
not counted.
"""

from __future__ import annotations

import polars as pl

from pipeline.transforms._items import (
    ERROR,
    ITEMS_DTYPE,
    SYSTEM_ROLES,
    field,
    insert_at,
    insert_section,
    items_form_after,
    new_message,
    next_group,
    request_only,
    text,
)

DEFAULT_HEADER_PATTERN = r"^ELEANOR_SYSTEM\s*(\{.*\})$"


def _is_system() -> pl.Expr:
    return (field("type") == "message") & field("role").is_in(SYSTEM_ROLES)


def any_pattern(patterns: tuple[str, ...]) -> str:
    """One regex matching when any of ``patterns`` matches."""
    return "|".join(f"(?:{p})" for p in patterns)


def place_system(
    frame: pl.DataFrame | pl.LazyFrame,
    text_: str,
    role: str = "system",
    position: str = "before_system_content",
    anchor_patterns: tuple[str, ...] = (),
    anchor: str = "first",
    missing: str = "start",
) -> pl.DataFrame | pl.LazyFrame:
    """Insert a system/developer message at ``position`` (see the module table)."""
    items = pl.col("items").fill_null(pl.lit([], ITEMS_DTYPE))
    cand = _is_system()
    if anchor_patterns:
        cand = cand & text().str.contains(any_pattern(anchor_patterns))
    hits = items.list.eval(cand.arg_true())
    at = (hits.list.first() if anchor == "first" else hits.list.last()).cast(pl.Int32)
    n = items.list.len().cast(pl.Int32)
    if position == "append":
        pos = n
        no_anchor = pl.lit(None, pl.String)
    else:
        pos = (at if position == "before_system_content" else at + 1).fill_null(0)
        no_anchor = (
            pl.when(at.is_null())
            .then(pl.lit("place_system: no inline system message matches the anchor"))
            .otherwise(pl.lit(None, pl.String))
            if missing == "reject"
            else pl.lit(None, pl.String)
        )
    msg = new_message(
        section=insert_section(), group=next_group(), part=None, role=role, text_=text_, block_type=None
    )
    return frame.with_columns(
        insert_at(pos, msg).alias("items"),
        pl.coalesce(request_only("place_system"), no_anchor).alias(ERROR),
        items_form_after(pl.lit(True)),
    )


def parse_header(
    frame: pl.DataFrame | pl.LazyFrame,
    pattern: str = DEFAULT_HEADER_PATTERN,
    fields: tuple[str, ...] = (),
) -> pl.DataFrame | pl.LazyFrame:
    """Move a header system message into ``header_json`` / ``header`` columns (see the module doc)."""
    items = pl.col("items").fill_null(pl.lit([], ITEMS_DTYPE))
    at = items.list.eval((_is_system() & text().str.contains(pattern)).arg_true()).list.first().cast(pl.Int32)
    captured = items.list.eval(text().str.extract(pattern, 1)).list.get(at, null_on_oob=True)
    removed = pl.concat_list(items.list.head(at), items.list.slice(at + 1)).cast(ITEMS_DTYPE)
    invalid = captured.is_not_null() & captured.str.json_path_match("$").is_null()
    out = frame.with_columns(
        pl.when(at.is_null()).then(pl.col("items")).otherwise(removed).alias("items"),
        captured.alias("header_json"),
        pl.when(invalid)
        .then(pl.format("parse_header: header at item {} is not valid JSON", at))
        .otherwise(pl.lit(None, pl.String))
        .alias(ERROR),
        items_form_after(at.is_not_null()),
    )
    if fields:
        hdr = pl.col("header_json")
        out = out.with_columns(
            pl.when(hdr.is_not_null())
            .then(pl.struct(*(hdr.str.json_path_match(f"$.{name}").alias(name) for name in fields)))
            .alias("header")
        )
    return out
