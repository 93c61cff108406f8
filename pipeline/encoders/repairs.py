"""The target rules' repairs, on the canonical table, ahead of every encoder (compiled or Python).

:mod:`pipeline.encoders.rules` states what each target API accepts beyond its SDK types. A
conversion must write only records that obey those rules, so :func:`encode_rows
<pipeline.encoders.encode_rows.encode_rows>` runs two steps around the encoders, for the request
rows of another format than the target (a row of the target's own format is written exactly as it
was: ``chatlake check`` lints those):

1. :func:`repair` -- before encoding, one columnar pass finds the rows that *could* break a rule
   (``suspect``: a call and its output not side by side, a name outside ``^[a-zA-Z0-9_-]{1,64}$``,
   a ``tool_choice``, an empty content list, an item kind the target drops, ...; a row with none of
   these cannot break one) and repairs those rows in the table every encoder then sees. Each repair
   is named by its rule's ``repair`` (a loss kind) and reported as a loss at a JSON pointer into the
   source record, the detail starting with the rule's id:

   ===================  ===============================================================================
   loss kind            repair
   ===================  ===============================================================================
   ``moved_message``    Chat / HF: a message between a tool call and its result (a Codex ``developer``
                        note, a ``user`` message) moves to right after the results of that turn
   ``tool_name``        a name the pattern refuses becomes ``<cleaned name>_<8 hex of its hash>``
                        (invalid characters -> ``_``, cut to fit 64): in the tools, the tool_choice and
                        every call of the record; the detail gives ``'old' -> 'new'``
   ``empty_content``    a message whose content list is empty is dropped; a tool result's empty list
                        becomes ``""`` (Chat); Chat: the same when every part is of a type Chat cannot
                        hold there (``to_chat.KEPT_PARTS``), which the encoder would leave as ``[]``
   ``tool_choice``      a ``tool_choice`` the target would get without tools (or naming a tool the
                        request does not declare) is dropped
   ===================  ===============================================================================

2. :func:`refusals` -- after encoding, the suspect rows' records (only those: on clean data, a few
   percent) are decoded as the target and checked with :func:`rule_checks.violations
   <pipeline.encoders.rule_checks.violations>`; a record that still breaks a rule (one with no repair,
   such as ``chat.tool_calls_answered``, or one whose repair did not fit) is refused with the rule's
   id as the reason: ``<rule id>: <detail> at <pointer into the written record>``.

A row that is not suspect is not looked at again: the suspect test is a superset of what the
encoders can turn into a broken record (``tests/encoders/test_repairs.py`` checks it on random and
real conversations in every direction, against ``violations`` on every written record).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.arrays import one_array
from pipeline.encoders.pointers import any_item_pointer
from pipeline.encoders.request_fields import ROW_LOSSES
from pipeline.encoders.rule_checks import CALLS, OUTPUTS, violations
from pipeline.encoders.rules import NAME_MAX, NAME_PATTERN, RULE, rules_of
from pipeline.encoders.to_chat import KEPT_PARTS
from pipeline.fingerprint import fingerprints
from pipeline.formats import decode_lines

# Content block types every target writes as text (null: a plain string).
_TEXT_BLOCKS = ("input_text", "output_text", "text")
_ROLES = ("user", "assistant", "system", "developer")
# Text Python's str.strip() empties (what the Anthropic encoder drops): its whitespace, for RE2.
_BLANK = (
    r"^[\t\n\x0b\x0c\r\x1c-\x1f \x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}"
    r"\x{3000}]*$"
)
# Where each source format keeps a tool's name in ``tools`` (Chat / HF: under ``function``).
_NESTED = ("chat", "hf")


@dataclass
class Repaired:
    """What :func:`repair` returns: the table the encoders get, the repairs' losses (``ROW_LOSSES``,
    rows ascending) and which rows are suspect (their records are checked by :func:`refusals`)."""

    table: pa.Table
    losses: pa.Table
    suspect: np.ndarray


def new_name(name: str | None) -> str:
    """A name every target accepts for ``name``, the same for the same name everywhere: invalid
    characters become ``_``, and an 8-hex-digit hash of the original keeps two names apart that
    clean to the same text.

    >>> new_name("mcp.files.read")
    'mcp_files_read_e3bc728f'
    >>> len(new_name("x" * 100)), new_name("   ")
    (64, 'tool_990d8044')
    """
    text = name or ""
    suffix = hashlib.blake2b(text.encode(), digest_size=4).hexdigest()
    cleaned = re.sub(r"[^a-zA-Z0-9_-]", "_", text).strip("_") or "tool"
    return f"{cleaned[: NAME_MAX - len(suffix) - 1]}_{suffix}"


def _eligible(table: pa.Table, target: str) -> np.ndarray:
    """Rows the rules apply to: request bodies of another format than the target."""
    fmt = one_array(table.column("source_format"))
    kind = one_array(table.column("record_kind"))
    ok = pc.and_(pc.equal(kind, "request"), pc.not_equal(fmt, target))
    return np.asarray(ok.to_numpy(zero_copy_only=False), bool)


def _flat(table: pa.Table, target: str) -> pl.DataFrame:
    """Every item: ``row``, ``pos`` (its index in the row), ``g`` (its index in the batch), the
    fields the suspect test and the repairs read, ``n_blocks``, ``text`` (it has a text block: a
    plain string or a text part; for Anthropic, one whose text is not blank)."""
    items = one_array(table.column("items"))
    flat = items.flatten()
    parent = pc.list_parent_indices(items).to_numpy()
    offsets = items.offsets.to_numpy()
    g = np.arange(len(flat), dtype=np.int64)
    pos = g + offsets[0] - offsets[:-1][parent]
    content = flat.field("content")
    blocks = pc.list_flatten(content)
    owner = pc.list_parent_indices(content).to_numpy()
    btype = blocks.field("type")
    kept = (*_TEXT_BLOCKS, "refusal") if target == "chat" else _TEXT_BLOCKS  # Chat has refusal parts
    texty = pc.or_kleene(pc.is_null(btype), pc.is_in(btype, pa.array(kept)))
    texty = np.asarray(texty.to_numpy(zero_copy_only=False), bool)
    has_text = np.bincount(owner[texty], minlength=len(flat)) > 0
    # Chat: does the item hold a part Chat can hold where it goes (to_chat.KEPT_PARTS)? A message
    # or tool result with parts and none of these is left with no content by the encoder.
    keeps = np.ones(len(flat), bool)
    if target == "chat":
        user = pc.and_(pc.equal(flat.field("type"), "message"), pc.equal(flat.field("role"), "user"))
        user = np.asarray(pc.fill_null(user, False).to_numpy(zero_copy_only=False), bool)[owner]
        held = np.zeros(len(blocks), bool)
        for where, kept in KEPT_PARTS.items():
            named = pc.fill_null(pc.is_in(btype, pa.array(sorted(t for t in kept if t is not None))), False)
            ok = pc.or_(pc.is_null(btype), named) if None in kept else named
            ok = np.asarray(ok.to_numpy(zero_copy_only=False), bool)
            held |= ok & (user if where == "user" else ~user)
        keeps = np.bincount(owner[held], minlength=len(flat)) > 0
    if target == "anthropic":  # Anthropic refuses blank text: a message of blank text may end up empty
        blank = pc.match_substring_regex(pc.fill_null(blocks.field("text"), ""), _BLANK)
        blank = np.asarray(blank.to_numpy(zero_copy_only=False), bool)
        has_text = np.bincount(owner[texty & ~blank], minlength=len(flat)) > 0
    cols = {
        "row": pa.array(parent.astype(np.int64)),
        "pos": pa.array(pos),
        "g": pa.array(g),
        **{f: flat.field(f) for f in ("type", "role", "call_id", "name", "content_form")},
        "n_blocks": pc.list_value_length(content),
        "text": pa.array(has_text),
        "keeps": pa.array(keeps),
    }
    df = pl.from_arrow(pa.table(cols))
    assert isinstance(df, pl.DataFrame)
    return df


def _tool_names(table: pa.Table, rows: np.ndarray) -> pl.DataFrame:
    """``row``, ``k``, ``type``, ``name`` of every tool of ``rows``' ``tools`` (each row read in its
    source format's shape: Chat / HF under ``function``); rows whose tools are not a list of
    objects give none (the encoders report those)."""
    out: list[dict[str, Any]] = []
    tools = one_array(table.column("tools")).take(pa.array(rows)).to_pylist()
    fmts = one_array(table.column("source_format")).take(pa.array(rows)).to_pylist()
    for r, text, fmt in zip(rows.tolist(), tools, fmts, strict=True):
        for k, t, name in _names_in(text, fmt):
            out.append({"row": r, "k": k, "type": t, "name": name})
    return pl.DataFrame(out, schema={"row": pl.Int64, "k": pl.Int64, "type": pl.String, "name": pl.String})


def _names_in(text: str | None, fmt: str) -> list[tuple[int, str | None, str | None]]:
    """(index, type, name) of each tool object of one ``tools`` text."""
    try:
        tools = orjson.loads(text) if text is not None else None
    except orjson.JSONDecodeError:
        return []
    out = []
    for k, t in enumerate(tools if isinstance(tools, list) else []):
        if not isinstance(t, dict):
            continue
        typ = t.get("type") if isinstance(t.get("type"), str) else None
        inner = t.get(typ) if fmt in _NESTED and typ in ("function", "custom") else t
        name = inner.get("name") if isinstance(inner, dict) else None
        out.append((k, typ, name if isinstance(name, str) else None))
    return out


def _spans(items: pl.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The call..result spans of the batch, overlapping ones merged (batch indices ``g``: a row's
    items are contiguous, so spans never cross rows), and the pairs that are not well formed:
    ``(starts, ends, bad_rows)``. Well formed: every call answered by exactly one later output,
    every output answering one earlier call, all with ids."""
    typ, cid = pl.col("type"), pl.col("call_id")
    is_call = typ.is_in(CALLS)
    tools = items.filter(is_call | typ.is_in(OUTPUTS))
    pairs = tools.group_by("row", "call_id").agg(
        is_call.sum().alias("calls"),
        pl.len().alias("n"),
        pl.col("g").filter(is_call).min().alias("start"),
        pl.col("g").filter(~is_call).max().alias("end"),
    )
    ok = (pl.col("calls") == 1) & (pl.col("n") == 2) & (pl.col("start") < pl.col("end")) & cid.is_not_null()
    bad = pairs.filter(~ok)["row"].unique().to_numpy()
    good = pairs.filter(ok).sort("start")
    start, end = good["start"].to_numpy(), good["end"].to_numpy()
    if not len(start):
        return start, end, bad
    reach = np.maximum.accumulate(end)
    new = np.r_[True, start[1:] > reach[:-1]]
    return start[new], np.maximum.reduceat(end, np.flatnonzero(new)), bad


def _inside(g: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """For each batch index in ``g``: the span it sits strictly inside (-1: none)."""
    if not len(starts):
        return np.full(len(g), -1, np.int64)
    k = np.searchsorted(starts, g, side="right") - 1
    hit = (k >= 0) & (g > starts[np.maximum(k, 0)]) & (g < ends[np.maximum(k, 0)])
    return np.where(hit, k, -1)


def _tools_frame(table: pa.Table, rows: np.ndarray) -> pl.DataFrame:
    """``row``, ``k``, ``type``, ``name`` of every tool in ``rows``' ``tools`` (read in the row's
    source format's shape: Chat / HF keep a function's name under ``function``). Each distinct
    tools text is parsed once (a dataset's records usually share one tool list)."""
    shape = pl.List(
        pl.Struct(
            {
                "type": pl.String,
                "name": pl.String,
                "function": pl.Struct({"name": pl.String}),
                "custom": pl.Struct({"name": pl.String}),
            }
        )
    )
    picked = pl.DataFrame(
        {
            "row": rows.astype(np.int64),
            "text": pl.Series(one_array(table.column("tools")).take(pa.array(rows))),
            "fmt": pl.Series(one_array(table.column("source_format")).take(pa.array(rows))),
        }
    )
    texts = picked.select(pl.col("text").unique()).filter(pl.col("text").is_not_null())
    try:
        parsed = texts["text"].str.json_decode(shape)
    except pl.exceptions.PolarsError:  # some text has another shape: each on its own
        parsed = pl.Series("t", [_shaped(t) for t in texts["text"].to_list()], dtype=shape)
    texts = texts.with_columns(parsed.alias("t"))
    df = picked.join(texts, on="text").drop("text")
    df = df.filter(pl.col("t").list.len() > 0).with_columns(pl.int_ranges(pl.col("t").list.len()).alias("k"))
    df = df.explode("t", "k")
    t = pl.col("t")
    nested = pl.col("fmt").is_in(_NESTED) & t.struct.field("type").is_in(("function", "custom"))
    inner = pl.when(t.struct.field("type") == "custom").then(t.struct.field("custom").struct.field("name"))
    inner = inner.otherwise(t.struct.field("function").struct.field("name"))
    name = pl.when(nested).then(inner).otherwise(t.struct.field("name"))
    return df.select(
        "row", pl.col("k").cast(pl.Int64), t.struct.field("type").alias("type"), name.alias("name")
    )


def _shaped(text: str | None) -> list[dict[str, Any]] | None:
    """:func:`_tools_frame`'s shape for one ``tools`` text Polars could not read whole."""
    try:
        tools = orjson.loads(text) if text is not None else None
    except orjson.JSONDecodeError:
        return None
    out = []

    def s(v: Any) -> str | None:
        return v if isinstance(v, str) else None

    def sub(v: Any) -> dict[str, Any] | None:
        return {"name": s(v.get("name"))} if isinstance(v, dict) else None

    for t in tools if isinstance(tools, list) else []:
        if isinstance(t, dict):
            out.append(
                {
                    "type": s(t.get("type")),
                    "name": s(t.get("name")),
                    "function": sub(t.get("function")),
                    "custom": sub(t.get("custom")),
                }
            )
    return out


def _suspect(
    table: pa.Table, items: pl.DataFrame, eligible: np.ndarray, target: str
) -> dict[str, np.ndarray]:
    """Rows whose records could break a rule of ``target`` (see the module docstring), by what
    could break: ``order`` (messages, calls and results), ``names``, ``choice``, ``content``."""
    n = table.num_rows
    flags = {k: np.zeros(n, bool) for k in ("order", "names", "choice", "content")}
    bad = flags["order"]

    def flag(found: pl.DataFrame | np.ndarray) -> None:
        if isinstance(found, pl.DataFrame):
            found = found["row"].to_numpy()
        if len(found):
            bad[found] = True

    typ = pl.col("type")
    is_call, is_out, msg = typ.is_in(CALLS), typ.is_in(OUTPUTS), typ == "message"
    if target != "responses":  # a row that may give no message at all
        talk = np.bincount(items.filter(msg | is_call | is_out)["row"].to_numpy(), minlength=n)
        flag(np.flatnonzero(talk == 0))
    starts, ends, broken = _spans(items)
    flag(broken)
    # inside a call..result span: calls (and reasoning) first, then results, nothing else
    g = items["g"].to_numpy()
    k = _inside(g, starts, ends)
    kinds = items["type"].to_numpy()
    inside = k >= 0
    row = items["row"].to_numpy()
    early = np.isin(kinds, (*CALLS, "reasoning"))
    late = np.isin(kinds, OUTPUTS)
    flag(row[inside & ~early & ~late])
    if inside.any():
        last_early = np.full(len(starts), -1, np.int64)
        np.maximum.at(last_early, k[inside & early], g[inside & early])
        first_late = np.asarray(ends, np.int64).copy()
        np.minimum.at(first_late, k[inside & late], g[inside & late])
        spans_bad = np.flatnonzero(last_early > first_late)
        flag(row[np.searchsorted(g, starts[spans_bad])])
    # names of calls
    bad = flags["names"]
    flag(items.filter(is_call & ~pl.col("name").str.contains(NAME_PATTERN).fill_null(False)))
    # content that may end up empty: no text block (Anthropic: no text that is not blank)
    bad = flags["content"]
    has = pl.col("text") | pl.lit(target == "hf")  # HF writes "" for a message with no text
    flag(items.filter(msg & ~has))
    flag(items.filter(msg & ~pl.col("role").is_in(_ROLES).fill_null(False)))
    if target in ("chat", "anthropic"):
        flag(items.filter(is_out & (pl.col("content_form") == "parts") & ~has))
    bad = flags["order"]
    if target == "anthropic":
        # the first turn a user's (a system / developer message before it becomes the system prompt,
        # one after it user text)
        sys_msg = msg & pl.col("role").is_in(("system", "developer"))
        turns = items.filter(typ != "reasoning").with_columns(sys_msg.alias("sys"))
        first = (
            turns.filter(~pl.col("sys"))
            .group_by("row")
            .agg(pl.col("pos").min().alias("p"), (msg & (pl.col("role") == "user")).first().alias("user"))
        )
        flag(first.filter(~pl.col("user")))
        has_turn = np.zeros(n, bool)
        has_turn[first["row"].to_numpy()] = True
        flag(np.flatnonzero(~has_turn))  # only system messages: no message at all
    bad = flags["names"]
    # tool names: every "name" key's string in the tools text (a superset of the tools' names;
    # an escaped character fails the pattern, as the name it stands for would)
    tools = one_array(table.column("tools"))
    if pc.any(pc.is_valid(tools)).as_py():
        found = pl.DataFrame({"row": np.arange(n, dtype=np.int64), "t": pl.Series(tools)}).select(
            "row", pl.col("t").str.extract_all(r'"name"\s*:\s*"(?:[^"\\]|\\.)*"').alias("name")
        )
        found = found.explode("name").filter(pl.col("name").is_not_null())
        value = (
            pl.col("name").str.replace(r'^"name"\s*:\s*"', "").str.slice(0, pl.col("name").str.len_bytes())
        )
        value = value.str.strip_suffix('"')
        flag(found.filter(~value.str.contains(NAME_PATTERN)))
    # tool_choice, and (Responses) calls to undeclared tools: the rows' tools read as JSON
    choice = pl.Series(one_array(table.column("tool_choice")))
    need = np.asarray(choice.is_not_null().to_numpy(), bool) & eligible
    if target == "responses":
        need |= np.asarray(pc.is_valid(tools).to_numpy(zero_copy_only=False), bool) & eligible
    if target != "hf" and need.any():
        rows = np.flatnonzero(need)
        declared = _tools_frame(table, rows)
        bad = flags["choice"]
        flag(_choice_breaks(choice, rows, declared, target))
        bad = flags["order"]
        if target == "responses":  # a call to a tool the request does not declare
            names = declared.filter(pl.col("name").is_not_null()).select("row", "name").unique()
            calls = items.filter(typ == "function_call").join(names.select("row").unique(), on="row")
            flag(calls.join(names, on=["row", "name"], how="anti"))
    return {k: v & eligible for k, v in flags.items()}


def _choice_breaks(choice: pl.Series, rows: np.ndarray, tools: pl.DataFrame, target: str) -> pl.DataFrame:
    """Of ``rows``, those whose ``tool_choice`` the target would refuse: one that needs tools (Chat:
    any; else one that requires or names a tool) where no tool the target takes is declared, or
    one naming a tool the request does not declare."""
    c = pl.col("c")
    named = pl.coalesce(
        c.str.json_path_match("$.function.name"),
        c.str.json_path_match("$.custom.name"),
        c.str.json_path_match("$.name"),
    )
    typ = c.str.json_path_match("$.type")
    forcing = (
        (c == '"required"')
        | typ.is_in(("any", "required", "tool", "function", "custom"))
        | named.is_not_null()
    )
    if target == "chat":
        forcing = pl.lit(True)
    df = pl.DataFrame({"row": rows.astype(np.int64), "c": choice.gather(rows)}).filter(c.is_not_null())
    df = df.with_columns(named.alias("named"), forcing.fill_null(True).alias("forcing"))
    kept = tools.filter(
        (pl.col("type").is_null() | pl.col("type").is_in(("function", "custom")))
        & pl.col("name").is_not_null()
    ).select("row", "name")
    counts = kept.group_by("row").len()
    df = df.join(counts, on="row", how="left").with_columns(pl.col("len").fill_null(0))
    no_tools = df.filter(pl.col("forcing") & (pl.col("len") == 0))
    undeclared = df.filter(pl.col("named").is_not_null()).join(
        kept, left_on=["row", "named"], right_on=["row", "name"], how="anti"
    )
    return pl.concat([no_tools.select("row"), undeclared.select("row")])


def _with_pointer_fields(table: pa.Table, items: pl.DataFrame) -> pl.DataFrame:
    """``items`` (a few rows') with what :func:`any_item_pointer` reads: the row's source format and
    items form, the item's section, group and part."""
    flat = one_array(table.column("items")).flatten()
    g = pa.array(items["g"].to_numpy())
    rows = pa.array(items["row"].to_numpy())
    return items.with_columns(
        pl.Series("source_format", one_array(table.column("source_format")).take(rows)),
        pl.Series("items_form", one_array(table.column("items_form")).take(rows)),
        *(pl.Series(f, flat.field(f).take(g)) for f in ("section", "group", "part")),
    )


def _loss_frame(df: pl.DataFrame) -> pl.DataFrame:
    return df.select(pl.col("row").cast(pl.Int64), "path", "kind", "detail")


def _moves(items: pl.DataFrame, target: str) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Chat / HF: the new order of the suspect rows' items (``order`` ascending) and one
    ``moved_message`` loss per message moved out of a call..result span."""
    starts, ends, _ = _spans(items)
    items = items.sort("g")
    k = _inside(items["g"].to_numpy(), starts, ends)
    span_end = np.where(k >= 0, ends[np.maximum(k, 0)] if len(ends) else -1, -1)
    located = items.with_columns(pl.Series("gend", span_end).replace(-1, None))
    prev = pl.when(pl.col("type") != "reasoning").then(pl.col("type")).forward_fill().shift(1).over("row")
    located = located.with_columns(prev.alias("prev"))
    move = (pl.col("type") == "message") & pl.col("gend").is_not_null()
    if target == "chat":  # assistant text right after calls joins their message (text_order), in place
        move = move & ~((pl.col("role") == "assistant") & pl.col("prev").is_in(CALLS).fill_null(False))
    located = located.with_columns(move.alias("moved"))
    ordered = located.with_columns(
        pl.when(pl.col("moved")).then(pl.col("gend")).otherwise(pl.col("g")).alias("key")
    ).sort("row", "key", "moved", "g")
    rule = RULE[f"{target}.tool_results_follow_call"]
    after = items.select(pl.col("g").alias("gend"), any_item_pointer().alias("after"))
    moved = located.filter(pl.col("moved")).join(after, on="gend", how="left")
    losses = moved.select(
        "row",
        any_item_pointer().alias("path"),
        pl.lit(rule.repair).alias("kind"),
        pl.concat_str(
            pl.lit(f"{rule.id}: a "),
            pl.col("role").fill_null("user"),
            pl.lit(" message between a tool call and its result moved to after the result at "),
            pl.col("after").fill_null("?"),
        ).alias("detail"),
    )
    return ordered.select("row", "pos"), _loss_frame(losses)


def _renames(
    table: pa.Table, items: pl.DataFrame, rows: np.ndarray, target: str
) -> tuple[dict[int, dict[str, str]], pl.DataFrame]:
    """The names to replace, per row (old -> new), and one ``tool_name`` loss per tool and call renamed."""
    rule = RULE[f"{target}.tool_name"]
    names = _tool_names(table, rows)
    bad_tools = names.filter(pl.col("name").is_not_null() & ~pl.col("name").str.contains(NAME_PATTERN))
    bad_calls = items.filter(
        pl.col("type").is_in(CALLS)
        & pl.col("row").is_in(rows.tolist())
        & (pl.col("name").is_null() | ~pl.col("name").str.contains(NAME_PATTERN).fill_null(False))
    )
    mapping: dict[int, dict[str, str]] = {}
    for r, old in [
        *bad_tools.select("row", "name").iter_rows(),
        *bad_calls.select("row", "name").iter_rows(),
    ]:
        mapping.setdefault(r, {})[old or ""] = new_name(old)
    fmts = one_array(table.column("source_format"))
    fmt_of = pl.Series(fmts).gather(bad_tools["row"]) if bad_tools.height else pl.Series([], dtype=pl.String)
    new = pl.Series([mapping[r][o] for r, o in bad_tools.select("row", "name").iter_rows()], dtype=pl.String)

    def detail(old: pl.Expr, new_: pl.Expr) -> pl.Expr:
        return pl.concat_str(pl.lit(f"{rule.id}: '"), old, pl.lit("' -> '"), new_, pl.lit("'"))

    tool_losses = bad_tools.with_columns(fmt_of.alias("fmt"), new.alias("new")).select(
        "row",
        pl.concat_str(
            pl.lit("/tools/"),
            pl.col("k").cast(pl.String),
            pl.when(pl.col("fmt").is_in(_NESTED))
            .then(pl.concat_str(pl.lit("/"), pl.col("type")))
            .otherwise(pl.lit("")),
            pl.lit("/name"),
        ).alias("path"),
        pl.lit(rule.repair).alias("kind"),
        detail(pl.col("name"), pl.col("new")).alias("detail"),
    )
    call_new = pl.Series(
        [mapping[r][o or ""] for r, o in bad_calls.select("row", "name").iter_rows()], dtype=pl.String
    )
    call_losses = bad_calls.with_columns(call_new.alias("new")).select(
        "row",
        any_item_pointer().alias("path"),
        pl.lit(rule.repair).alias("kind"),
        detail(pl.col("name").fill_null(""), pl.col("new")).alias("detail"),
    )
    return mapping, _loss_frame(pl.concat([tool_losses, call_losses]))


def _renamed_tools(text: str | None, fmt: str, names: dict[str, str]) -> str | None:
    """One ``tools`` JSON text with its names replaced."""
    if text is None:
        return None
    tools = orjson.loads(text)
    for t in tools if isinstance(tools, list) else []:
        if not isinstance(t, dict):
            continue
        typ = t.get("type")
        inner = t.get(typ) if fmt in _NESTED and typ in ("function", "custom") else t
        if isinstance(inner, dict) and isinstance(inner.get("name"), str) and inner["name"] in names:
            inner["name"] = names[inner["name"]]
    return orjson.dumps(tools).decode()


def _choice_name(choice: Any) -> str | None:
    """The tool a ``tool_choice`` (any source format's) names, or None."""
    if not isinstance(choice, dict):
        return None
    inner = next((choice[k] for k in ("function", "custom") if isinstance(choice.get(k), dict)), None)
    name = inner.get("name") if inner is not None else choice.get("name")
    return name if isinstance(name, str) else None


def _forcing(choice: Any, target: str) -> bool:
    """Does the target refuse this ``tool_choice`` without tools? Chat refuses any; Responses and
    Anthropic one that requires a tool or names one."""
    if target == "chat":
        return True
    if choice == "required" or _choice_name(choice) is not None:
        return True
    return isinstance(choice, dict) and choice.get("type") in ("any", "required", "tool", "function")


def _choices(
    table: pa.Table, rows: np.ndarray, target: str, renames: dict[int, dict[str, str]]
) -> tuple[list[int], pl.DataFrame]:
    """Rows whose ``tool_choice`` is dropped, and their ``tool_choice`` losses."""
    choice = one_array(table.column("tool_choice")).take(pa.array(rows)).to_pylist()
    tools = one_array(table.column("tools")).take(pa.array(rows)).to_pylist()
    fmts = one_array(table.column("source_format")).take(pa.array(rows)).to_pylist()
    dropped: list[int] = []
    losses: list[dict[str, Any]] = []
    for r, text, tool_text, fmt in zip(rows.tolist(), choice, tools, fmts, strict=True):
        if text is None or target == "hf":
            continue
        try:
            value = orjson.loads(text)
        except orjson.JSONDecodeError:
            continue
        declared = {
            renames.get(r, {}).get(name, name)
            for _, typ, name in _names_in(tool_text, fmt)
            if name is not None and typ in (None, "function", "custom")
        }
        named = _choice_name(value)
        named = renames.get(r, {}).get(named, named) if named is not None else None
        if not declared and _forcing(value, target):
            rule = RULE[
                "chat.tool_choice_needs_tools" if target == "chat" else f"{target}.tool_choice_declared"
            ]
            why = "no tools the target takes"
        elif named is not None and named not in declared:
            rule = RULE[f"{target}.tool_choice_declared"]
            why = f"names '{named}', which the tools do not declare"
        else:
            continue
        dropped.append(r)
        losses.append({"row": r, "path": "/tool_choice", "kind": rule.repair, "detail": f"{rule.id}: {why}"})
    frame = pl.DataFrame(
        losses, schema={"row": pl.Int64, "path": pl.String, "kind": pl.String, "detail": pl.String}
    )
    return dropped, frame


def repair(table: pa.Table, target: str) -> Repaired:
    """Repair the rows of ``table`` (canonical, one batch) that would break a rule of ``target``;
    see the module docstring. The table is returned as it is when no row needs a repair."""
    n = table.num_rows
    none = Repaired(table, ROW_LOSSES.empty_table(), np.zeros(n, bool))
    if n == 0 or not rules_of(target):
        return none
    eligible = _eligible(table, target)
    if not eligible.any():
        return none
    items = _flat(table, target)
    flags = _suspect(table, items, eligible, target)
    suspect = np.logical_or.reduce(list(flags.values()))
    if not suspect.any():
        return none
    losses: list[pl.DataFrame] = []
    # 1. names (before the choice: a choice naming a renamed tool follows it)
    renames: dict[int, dict[str, str]] = {}
    if f"{target}.tool_name" in RULE and flags["names"].any():
        rows = np.flatnonzero(flags["names"])
        renames, found = _renames(table, _picked(table, items, rows), rows, target)
        losses.append(found)
    # 2. tool_choice
    dropped_choice: list[int] = []
    if target != "hf" and flags["choice"].any():
        dropped_choice, found = _choices(table, np.flatnonzero(flags["choice"]), target, renames)
        losses.append(found)
    # 3. empty content: a message with an empty content list goes; a tool result's becomes ""
    # 4. order (Chat / HF), without the dropped messages
    empty_rule = RULE.get(f"{target}.content_nonempty")
    moving = f"{target}.tool_results_follow_call" in RULE
    rows = np.flatnonzero(flags["content"] | (flags["order"] if moving else False))
    mine = _picked(table, items, rows)
    # (Chat: also one whose every part is a type Chat cannot hold there, which the encoder would
    # drop one by one; the message's loss stands for its parts')
    emptied = (pl.col("n_blocks") > 0) & ~pl.col("keeps")
    empty = mine.filter(
        (pl.col("content_form") == "parts")
        & ((pl.col("n_blocks") == 0) | emptied)
        & pl.col("type").is_in(("message", *OUTPUTS))
        & pl.lit(empty_rule is not None)
    )
    drop_msgs = empty.filter(pl.col("type") == "message")
    blank_outs = empty.filter(pl.col("type").is_in(OUTPUTS) & pl.lit(target == "chat"))
    if empty_rule is not None and empty.height:
        rid = empty_rule.id

        def said(of_parts: str, empty_list: str) -> pl.Expr:
            text = pl.when(emptied).then(pl.lit(of_parts)).otherwise(pl.lit(empty_list))
            return pl.concat_str(pl.lit(f"{rid}: "), text)

        found = pl.concat(
            [
                drop_msgs.select(
                    "row",
                    any_item_pointer().alias("path"),
                    pl.lit(empty_rule.repair).alias("kind"),
                    said(
                        "a message of parts Chat cannot hold there dropped",
                        "a message with an empty content list dropped",
                    ).alias("detail"),
                ),
                blank_outs.select(
                    "row",
                    pl.concat_str(any_item_pointer(), pl.lit("/content")).alias("path"),
                    pl.lit(empty_rule.repair).alias("kind"),
                    said(
                        "a tool result of parts Chat cannot hold written as ''",
                        "an empty content list written as ''",
                    ).alias("detail"),
                ),
            ]
        )
        losses.append(_loss_frame(found))
    keep = mine.join(drop_msgs.select("row", "pos"), on=["row", "pos"], how="anti")
    order = keep.select("row", "pos")
    if moving and keep.height:
        order, found = _moves(keep, target)
        losses.append(found)
    found_losses = pl.concat([f for f in losses if f.height]) if any(f.height for f in losses) else None
    if found_losses is None and not renames and not dropped_choice:
        return Repaired(table, ROW_LOSSES.empty_table(), suspect)
    table = _rebuilt(table, rows, order, renames, dropped_choice, blank_outs)
    out = found_losses.to_arrow().cast(ROW_LOSSES) if found_losses is not None else ROW_LOSSES.empty_table()
    out = out.take(np.argsort(out.column("row").to_numpy(), kind="stable"))
    return Repaired(table, out, suspect)


def _picked(table: pa.Table, items: pl.DataFrame, rows: np.ndarray) -> pl.DataFrame:
    """The items of ``rows``, with their pointer fields."""
    return _with_pointer_fields(table, items.filter(pl.col("row").is_in(rows.tolist())))


def _rebuilt(
    table: pa.Table,
    rows: np.ndarray,
    order: pl.DataFrame,
    renames: dict[int, dict[str, str]],
    dropped_choice: list[int],
    blank_outs: pl.DataFrame,
) -> pa.Table:
    """``table`` with the suspect rows' items in ``order`` (dropped ones left out), names replaced,
    tool choices dropped and empty tool results made ``""``; fingerprints of items whose content
    fields changed are recomputed when they were current (a repair is not an edit)."""
    items = one_array(table.column("items"))
    offsets = items.offsets.to_numpy().astype(np.int64)
    base = offsets[0]
    lengths = np.diff(offsets)
    is_suspect = np.zeros(table.num_rows, bool)
    is_suspect[rows] = True
    first = offsets[:-1] - base  # each row's first item in the flat array
    # flat indices: every other row's items as they are, the suspect rows' in their new order
    total = int(offsets[-1] - base)
    row_all = np.repeat(np.arange(table.num_rows), lengths)
    rank_all = np.arange(total) - np.repeat(first, lengths)
    keep_all = ~is_suspect[row_all]
    o_row, o_pos = order["row"].to_numpy(), order["pos"].to_numpy()
    o_rank = np.arange(len(o_row)) - np.searchsorted(o_row, o_row)  # order is by row: rank within it
    cand_row = np.r_[row_all[keep_all], o_row]
    cand_rank = np.r_[rank_all[keep_all], o_rank]
    cand_idx = np.r_[np.flatnonzero(keep_all), first[o_row] + o_pos]
    flat_idx = cand_idx[np.lexsort((cand_rank, cand_row))]
    new_len = np.bincount(cand_row, minlength=table.num_rows)
    starts = np.r_[0, np.cumsum(new_len)].astype(np.int64)
    flat = items.flatten()
    before = flat.take(pa.array(flat_idx))
    row_of = np.repeat(np.arange(table.num_rows), new_len)
    changed = np.zeros(len(flat_idx), bool)
    if renames:
        names = before.field("name").to_pylist()
        for k in np.flatnonzero(np.isin(row_of, list(renames))):
            m = renames[int(row_of[k])]
            typ = before.field("type")[int(k)].as_py()
            if typ in CALLS and (names[k] or "") in m:
                names[k] = m[names[k] or ""]
                changed[k] = True
        before = _with_field(before, "name", pa.array(names, pa.string()))
    if blank_outs.height:
        key = first[blank_outs["row"].to_numpy()] + blank_outs["pos"].to_numpy()
        hit = np.isin(flat_idx, key)
        forms = pc.if_else(pa.array(hit), pa.scalar("string"), before.field("content_form"))
        one = pa.array([[{"type": None, "text": ""}]], before.field("content").type)
        content = pc.if_else(
            pa.array(hit), one.take(pa.array(np.zeros(len(hit), np.int64))), before.field("content")
        )
        before = _with_field(_with_field(before, "content_form", forms), "content", content)
        changed |= hit
    if changed.any():
        stored = flat.field("fingerprint").take(pa.array(flat_idx))
        was_current = pc.fill_null(pc.equal(stored, fingerprints(flat.take(pa.array(flat_idx)))), False)
        now = fingerprints(before)
        use_new = pc.and_(pa.array(changed), was_current)
        before = _with_field(before, "fingerprint", pc.if_else(use_new, now, stored))
    new_items = pa.ListArray.from_arrays(pa.array(starts.astype(np.int32)), before, type=items.type)
    table = table.set_column(table.schema.get_field_index("items"), "items", new_items)
    table = table.set_column(
        table.schema.get_field_index("n_items"), "n_items", pa.array(new_len.astype(np.int32))
    )
    if renames:
        tools = one_array(table.column("tools")).to_pylist()
        fmts = one_array(table.column("source_format")).to_pylist()
        for r, m in renames.items():
            tools[r] = _renamed_tools(tools[r], fmts[r], m)
        choices = one_array(table.column("tool_choice")).to_pylist()
        for r, m in renames.items():
            if choices[r] is not None:
                value = orjson.loads(choices[r])
                name = _choice_name(value)
                if name in m:
                    slots = ("function", "custom")
                    inner = next((value[k] for k in slots if isinstance(value.get(k), dict)), value)
                    inner["name"] = m[name]
                    choices[r] = orjson.dumps(value).decode()
        table = table.set_column(table.schema.get_field_index("tools"), "tools", pa.array(tools, pa.string()))
        table = table.set_column(
            table.schema.get_field_index("tool_choice"), "tool_choice", pa.array(choices, pa.string())
        )
    if dropped_choice:
        mask = np.zeros(table.num_rows, bool)
        mask[dropped_choice] = True
        col = one_array(table.column("tool_choice"))
        table = table.set_column(
            table.schema.get_field_index("tool_choice"),
            "tool_choice",
            pc.if_else(pa.array(mask), pa.nulls(len(col), pa.string()), col),
        )
    return table


def _with_field(arr: pa.StructArray, name: str, values: pa.Array) -> pa.StructArray:
    """``arr`` with one field replaced."""
    fields = [values if f.name == name else arr.field(f.name) for f in arr.type]
    return pa.StructArray.from_arrays(
        fields, fields=list(arr.type), mask=pc.is_null(arr) if arr.null_count else None
    )


def refusals(records: pa.Array, errors: pa.Array, suspect: np.ndarray, target: str) -> pa.Array:
    """Per row: why its record is refused (``<rule id>: <detail> at <pointer>``, its first
    violation), or null. Only the suspect rows that encoded are checked: their records are
    decoded as ``target`` and checked with :func:`violations`."""
    n = len(records)
    out: list[str | None] = [None] * n
    ok = np.asarray(errors.is_null().to_numpy(zero_copy_only=False), bool)
    rows = np.flatnonzero(suspect & ok)
    if not len(rows) or not rules_of(target):
        return pa.array(out, pa.string())
    texts = records.take(pa.array(rows)).to_pylist()
    decoded = decode_lines([t.encode() for t in texts], target)
    # every record decodes (the encoders write what the decoders read); one that does not is refused
    for rej in decoded.rejected:
        out[int(rows[rej.line - 1])] = f"types: {rej.error}"
    lines = np.asarray(one_array(decoded.table.column("source_line")).to_numpy(), np.int64)
    found = violations(decoded.table, target)
    if found.height:
        first = found.group_by("row", maintain_order=True).first()
        for r, rule, path, detail in first.select("row", "rule", "path", "detail").iter_rows():
            out[int(rows[lines[r] - 1])] = f"{rule}: {detail} at {path}"
    return pa.array(out, pa.string())
