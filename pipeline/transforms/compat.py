"""Responses compatibility modes: reshape a Responses conversation for providers that need it.

* ``native``: unchanged.
* ``flat_tools``: a function / custom tool call with a ``namespace`` gets ``name =
  namespace__name`` and no namespace (reversible: split at the first ``__``); in ``tools`` every
  ``namespace`` tool is replaced by its inner tools renamed the same way (a function tool missing
  ``parameters`` / ``strict``, optional only inside a namespace, gets them as null; the namespace's
  own description is dropped). ``tools`` is rewritten once per distinct value (it repeats across
  a dataset), compact JSON; a ``tools`` without namespace tools keeps its exact text.
  ``tool_choice`` is kept: a forced function choice carries no namespace to flatten.
* ``kimi``: every tool output is moved directly after its call (several outputs of one call keep
  their order); pairing happens only inside a stretch of items without a message, so a message
  between a call and its output stops it, and an output with no call in its stretch stays where it
  is. A paired output without a ``name`` gets the call's name; existing names are kept.

Records of other formats are rejected (``compat: mode 'kimi' applies to responses records, got
'chat'``) unless the mode is ``native``.
"""

from __future__ import annotations

from typing import Any

import orjson
import polars as pl

from pipeline.transforms._items import (
    CALL_KINDS,
    ERROR,
    IDX,
    IT,
    ROW,
    explode_items,
    field,
    is_tool_output,
    regroup_items,
    with_row,
)

SEPARATOR = "__"


def _responses_only(mode: str) -> pl.Expr:
    return (
        pl.when(pl.col("source_format") != "responses")
        .then(
            pl.format(
                f"compat: mode '{mode}' applies to responses records, got '{{}}'", pl.col("source_format")
            )
        )
        .otherwise(pl.lit(None, pl.String))
        .alias(ERROR)
    )


def flatten_tools(tools_json: str) -> str:
    """A Responses ``tools`` JSON text with every namespace tool lifted to ``namespace__name`` tools.

    >>> flatten_tools('[{"type":"namespace","name":"fs","tools":[{"type":"function","name":"ls"}]}]')
    '[{"type":"function","name":"fs__ls","parameters":null,"strict":null}]'
    """
    tools = orjson.loads(tools_json)
    if not isinstance(tools, list) or not any(_is_namespace(t) for t in tools):
        return tools_json
    out: list[Any] = []
    for tool in tools:
        if not _is_namespace(tool):
            out.append(tool)
            continue
        for inner in tool["tools"]:
            if isinstance(inner, dict) and isinstance(inner.get("name"), str):
                inner = {**inner, "name": f"{tool['name']}{SEPARATOR}{inner['name']}"}
                if inner.get("type") == "function":  # required (nullable) on a top-level function tool
                    inner.setdefault("parameters", None)
                    inner.setdefault("strict", None)
            out.append(inner)
    return orjson.dumps(out).decode()


def _is_namespace(tool: Any) -> bool:
    return (
        isinstance(tool, dict)
        and tool.get("type") == "namespace"
        and isinstance(tool.get("name"), str)
        and isinstance(tool.get("tools"), list)
    )


def _flat_tools_column(tools: pl.Series) -> pl.Series:
    # Python once per distinct tools value, not per row: a dataset shares a handful of tool lists.
    distinct = tools.drop_nulls().unique()
    return tools.replace_strict(distinct, [flatten_tools(t) for t in distinct], default=tools)


def _flat_tools(frame: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame | pl.LazyFrame:
    e = pl.element()
    ns, name = field("namespace"), field("name")
    hit = field("type").is_in(CALL_KINDS) & ns.is_not_null() & name.is_not_null()
    flat = pl.when(hit).then(
        e.struct.with_fields(
            (ns + SEPARATOR + name).alias("name"), pl.lit(None, pl.String).alias("namespace")
        )
    )
    tools = (
        pl.when(pl.col("source_format") == "responses")
        .then(pl.col("tools").map_batches(_flat_tools_column, return_dtype=pl.String))
        .otherwise(pl.col("tools"))
    )
    return frame.with_columns(
        pl.col("items").list.eval(flat.otherwise(e)).alias("items"),
        tools.alias("tools"),
        _responses_only("flat_tools"),
    )


def _kimi(frame: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame | pl.LazyFrame:
    f = with_row(frame)
    long = explode_items(f)
    kind, cid = field("type", pl.col(IT)), field("call_id", pl.col(IT))
    is_msg = kind == "message"
    # a new stretch starts at every message and every conversation
    seg = (is_msg | (pl.col(ROW) != pl.col(ROW).shift(1)).fill_null(True)).cum_sum()
    long = long.with_columns(seg.alias("__seg"), cid.alias("__cid"))
    calls = (
        long.filter(kind.is_in(CALL_KINDS) & cid.is_not_null())
        .group_by(ROW, "__seg", "__cid")
        .agg(pl.col(IDX).first().alias("__call_idx"), field("name", pl.col(IT)).first().alias("__call_name"))
    )
    out = long.join(calls, on=[ROW, "__seg", "__cid"], how="left", maintain_order="left")
    paired = is_tool_output(pl.col(IT)) & pl.col("__call_idx").is_not_null()
    name = field("name", pl.col(IT))
    # list.filter keeps the order of null_fields (set_difference does not)
    nulls = field("null_fields", pl.col(IT)).list.filter(pl.element() != "name")
    named = pl.col(IT).struct.with_fields(
        pl.col("__call_name").alias("name"),
        pl.when(nulls.list.len() > 0)
        .then(nulls)
        .otherwise(pl.lit(None, pl.List(pl.String)))
        .alias("null_fields"),
    )
    fill = paired & name.is_null() & pl.col("__call_name").is_not_null()
    out = out.with_columns(
        pl.when(fill).then(named).otherwise(pl.col(IT)).alias(IT),
        pl.when(paired).then(pl.col("__call_idx")).otherwise(pl.col(IDX)).alias("__k1"),
        paired.cast(pl.Int8).alias("__k2"),
    ).sort(ROW, "__k1", "__k2", IDX)
    return regroup_items(f, out.select(ROW, IT)).with_columns(_responses_only("kimi")).drop(ROW)


def compat(frame: pl.DataFrame | pl.LazyFrame, mode: str = "native") -> pl.DataFrame | pl.LazyFrame:
    """Apply a Responses compatibility mode (see the module doc)."""
    if mode == "native":
        return frame
    if mode == "flat_tools":
        return _flat_tools(frame)
    return _kimi(frame)
