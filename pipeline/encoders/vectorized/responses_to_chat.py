"""Responses -> Chat Completions, table to table: the rules of :mod:`pipeline.encoders.to_chat` as
column operations over the exploded items, with the same records and the same losses.

The per-record encoder walks each conversation keeping one piece of state, *the assistant message
tool calls attach to*. Here that state is rebuilt with scans over the flat item column (items are
stored row by row, in order, so "since the last X in this row" is a forward fill from X):

* a **segment** starts at each item that ends the current assistant turn (a non-assistant message,
  a tool output, a compaction item, a hosted or unknown item) and at each row start; reasoning and
  item references leave the turn open;
* an assistant message **merges** into the open turn (its text goes before the calls it followed)
  when it has content and the turn's message has none yet: the turn was opened by calls, or by an
  assistant message whose content was null or absent;
* every other message, tool output, unmerged assistant message, and call that finds no open turn
  starts a **new Chat message**; calls join the latest message, numbered in call order.

The output is the canonical table the Chat decoder builds from the record ``to_chat`` writes (one
head item per message, one item per tool call), plus a losses table whose rows equal that record's
losses. Example (``s`` = a synthetic Responses table):

>>> from pipeline.formats import decode_records
>>> t = decode_records([{"instructions": "Be brief.", "input": [
...     {"role": "user", "content": "hi"},
...     {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
...     {"type": "function_call_output", "call_id": "c1", "output": "ok"}]}], "responses").table
>>> res = responses_to_chat(t)
>>> from pipeline.formats import encode_table
>>> encode_table(res.table, "chat")[0]["messages"][2]
{'role': 'assistant', 'content': None, 'tool_calls': [{'id': 'c1', 'type': 'function', \
'function': {'name': 'f', 'arguments': '{}'}}]}
>>> res.losses.column("kind").to_pylist()
['instruction_position']

**Fallback** (rows converted by the per-record encoder instead, chosen by a vectorized predicate and
counted in :attr:`ChatConversion.fallback`): rows whose source is not a Responses request body
(response objects included); an Anthropic-style ``image`` part in a user message; an ``input_image``
whose ``detail`` Chat does not accept and is neither null nor a plain printable-ASCII string (the loss
detail quotes its Python ``repr``); an assistant message with *absent* content that would merge into a
turn (the per-record encoder fails on it: the failure message is the per-record one); text merged into a
turn opened by an assistant message with absent content, after its calls (the per-record record has
the keys ``role, tool_calls, content`` in that order, which :mod:`.chat_json` does not write); a call
or tool output without ``call_id`` (missing or null: :mod:`pipeline.encoders.call_ids` generates and
pairs ids by position, which real logs rarely need). Tool
definitions (per distinct ``tools`` text), ``tool_choice`` and top-level keys that must be rewritten
are converted once per *distinct* value with ``to_chat``'s own functions (real logs repeat a handful
of tool sets).

:data:`PHASES` accumulates the seconds spent per phase (``benchmarks/bench_convert_vectorized.py``
prints it).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.encoders import convert_table
from pipeline.encoders._context import PART_LOSS_KINDS, Ctx
from pipeline.encoders.to_chat import (
    _OUTPUT_LOST,
    IMAGE_DETAILS,
    RENAMED_KEYS,
    SAME_KEYS,
    _tool_choice,
    _tools,
)
from pipeline.encoders.vectorized._json import (
    json_elements,
    json_keys,
    json_member,
    json_pointer_token,
    orjson_string,
)
from pipeline.formats import decode_records
from pipeline.schema import BLOCK, CONVERSATION_SCHEMA, ITEM, cast_to_canonical

INSTRUCTION_ITEMS_ERROR = "ValueError: converting instructions given as an item list is not supported yet"

_BAD_DETAIL = f" is not one of Chat's {IMAGE_DETAILS}"  # to_chat's words
_TEXT_TYPES = ["input_text", "output_text", "text"]  # and a null type (a plain-string content)
_CALLS = ["function_call", "custom_tool_call"]
_OUTPUTS = ["function_call_output", "custom_tool_call_output"]
_BLOCK_JSON = ["annotations", "logprobs", "cache_control", "citations"]
_HOSTED_SUFFIXES = ("_call", "_call_output", "_tool_result", "_tool_use")
_LOSS_COLUMNS = ["row", "stage", "pos", "step", "k", "bstep", "sub", "path", "kind", "detail"]
_LOSS_KEY_KINDS = Ctx.BLOCK_KEY_KINDS
_FIELD_KINDS = Ctx.FIELD_KINDS
_STR_LIST = pa.list_(pa.field("item", pa.string()))
LOSSES_SCHEMA = pa.schema(
    [
        pa.field("row", pa.int64()),
        pa.field("conversation_id", pa.string()),
        pa.field("path", pa.string()),
        pa.field("kind", pa.string()),
        pa.field("detail", pa.string()),
    ]
)


@dataclass
class ChatConversion:
    """What :func:`responses_to_chat` returns.

    * ``table`` -- canonical Chat rows (``CONVERSATION_SCHEMA``), one per converted input row, in input
      order; ``rows`` gives the input row of each.
    * ``losses`` -- ``row`` (input row), ``conversation_id``, ``path``, ``kind``, ``detail``, in the order
      the per-record encoder reports them (keys dropped from one content part excepted: it reports
      those in set order).
    * ``errors`` -- one string per input row: null when converted, else why not (the per-record text).
    * ``fallback`` -- one bool per input row: converted (or refused) by the per-record encoder.
    """

    table: pa.Table
    rows: pa.Array
    losses: pa.Table
    errors: pa.Array
    fallback: pa.Array

    @property
    def fallback_share(self) -> float:
        n = len(self.fallback)
        return pc.sum(self.fallback).as_py() / n if n else 0.0


def responses_to_chat(table: pa.Table, *, per_record: bool = True) -> ChatConversion:
    """Convert a canonical table of Responses request bodies to canonical Chat rows with losses.

    ``per_record=False`` leaves the fallback rows out (flagged in ``fallback``, not converted): for a
    caller that converts them itself (:func:`~pipeline.encoders.vectorized.encode_rows`).
    """
    table = cast_to_canonical(table).combine_chunks()
    n = table.num_rows
    top = pl.from_arrow(
        table.select(["source_format", "record_kind", "instructions"])
        .flatten()
        .select(["source_format", "record_kind", "instructions.form"])
    )
    assert isinstance(top, pl.DataFrame)
    top = top.rename({"instructions.form": "instr_form"})
    is_responses = pl.col("source_format") == "responses"
    request = pl.col("record_kind") == "request"
    flags = top.select(
        eligible=is_responses & request & ~pl.col("instr_form").is_in(["items", "parts"]),
        error=pl.when(is_responses & request & (pl.col("instr_form") == "items")).then(
            pl.lit(INSTRUCTION_ITEMS_ERROR)
        ),
        # not a Responses request body this module models (a response object has its own envelope,
        # pipeline.encoders.response_objects): the per-record encoder decides
        other=~is_responses | ~request | (pl.col("instr_form") == "parts"),
    )
    eligible_rows = np.flatnonzero(flags["eligible"].to_numpy())
    if len(eligible_rows) == n:  # the usual case: no copy of the nested columns
        out, losses, sub_fallback = _convert(table)
    elif len(eligible_rows):
        out, losses, sub_fallback = _convert(table.take(eligible_rows))
    else:
        out = losses = sub_fallback = None

    fallback = flags["other"].to_numpy().copy()
    if sub_fallback is not None:
        fallback[eligible_rows[sub_fallback]] = True
    errors = flags["error"].to_list()
    tables: list[pa.Table] = []
    rows: list[np.ndarray] = []
    loss_tables: list[pa.Table] = []
    if out is not None and losses is not None:
        keep = np.ones(len(eligible_rows), bool)
        keep[sub_fallback] = False
        tables.append(out)
        rows.append(eligible_rows[keep])
        loss_tables.append(losses.set_column(0, "row", pa.array(eligible_rows[losses.column("row")])))
    fb_rows = np.flatnonzero(fallback)
    if len(fb_rows) and per_record:
        fb_table, fb_kept, fb_losses = _per_record(table, fb_rows, errors)
        tables.append(fb_table)
        rows.append(fb_kept)
        loss_tables.append(fb_losses)
    if len(tables) == 1:
        result, all_rows, loss_table = tables[0], rows[0], loss_tables[0]
    elif tables:
        all_rows = np.concatenate(rows)
        order = np.argsort(all_rows, kind="stable")
        result = pa.concat_tables(tables).take(order)
        all_rows = all_rows[order]
        loss_table = pa.concat_tables(loss_tables)
        loss_order = np.argsort(loss_table.column("row").to_numpy(), kind="stable")
        loss_table = loss_table.take(loss_order)
    else:
        result = CONVERSATION_SCHEMA.empty_table()
        all_rows = np.zeros(0, np.int64)
        loss_table = LOSSES_SCHEMA.empty_table()
    return ChatConversion(
        result,
        pa.array(all_rows, pa.int64()),
        loss_table,
        pa.array(errors, pa.string()),
        pa.array(fallback, pa.bool_()),
    )


def _per_record(
    table: pa.Table, rows: np.ndarray, errors: list[str | None]
) -> tuple[pa.Table, np.ndarray, pa.Table]:
    """The fallback: the reference encoder on these rows, its records decoded as canonical Chat rows."""
    sub = table.take(rows)
    converted = convert_table(sub, "chat")
    ok = [i for i, c in enumerate(converted) if c.error is None]
    for i, c in enumerate(converted):
        if c.error is not None:
            errors[rows[i]] = c.error
    decoded = decode_records([converted[i].record for i in ok], "chat")
    if decoded.rejected:  # the reference wrote a record its own decoder refuses: report, never drop
        bad = {r.line - 1 for r in decoded.rejected}
        for r in decoded.rejected:
            errors[rows[ok[r.line - 1]]] = f"chat record does not decode: {r.error}"
        ok = [i for j, i in enumerate(ok) if j not in bad]
    chat = decoded.table
    keep_idx = pa.array(ok, pa.int64())
    for name in ("conversation_id", "source_file", "source_line", "provenance"):
        chat = chat.set_column(chat.schema.get_field_index(name), name, sub.column(name).take(keep_idx))
    loss_rows: list[tuple[int, str, str, str, str]] = []
    cids = sub.column("conversation_id").to_pylist()
    for i in ok:
        for loss in converted[i].losses:
            loss_rows.append((int(rows[i]), cids[i], loss.path, loss.kind, loss.detail))
    cols = list(zip(*loss_rows, strict=True)) if loss_rows else [[]] * 5
    losses = pa.Table.from_arrays(
        [pa.array(list(c), f.type) for c, f in zip(cols, LOSSES_SCHEMA, strict=True)], schema=LOSSES_SCHEMA
    )
    return cast_to_canonical(chat), rows[ok], losses


# ---------------------------------------------------------------------------------------------
# The vectorized path


def _since(flag: pl.Expr, start: pl.Expr) -> pl.Expr:
    """How many earlier items since the last ``start`` item (itself included) have ``flag``."""
    f = flag.cast(pl.Int64)
    cs = f.cum_sum()
    base = pl.when(start).then(cs - f).forward_fill()
    return cs - f - base


def _frame(columns: dict[str, pa.Array]) -> pl.DataFrame:
    df = pl.from_arrow(pa.table(columns))
    assert isinstance(df, pl.DataFrame)
    return df


def _losses(
    df: pl.DataFrame | pl.LazyFrame,
    path: pl.Expr,
    kind: pl.Expr | str,
    detail: pl.Expr | str,
    *,
    stage: int,
    step: int = 0,
    pos: pl.Expr | None = None,
    k: pl.Expr | None = None,
    bstep: int = 0,
    sub: pl.Expr | None = None,
) -> pl.LazyFrame:
    """Loss rows for every row of ``df``, with the keys that put them in the per-record order."""
    return df.lazy().select(
        pl.col("row").cast(pl.Int64),
        pl.lit(stage, pl.Int32).alias("stage"),
        (pos if pos is not None else pl.lit(-1)).cast(pl.Int32).alias("pos"),
        pl.lit(step, pl.Int32).alias("step"),
        (k if k is not None else pl.lit(-1)).cast(pl.Int32).alias("k"),
        pl.lit(bstep, pl.Int32).alias("bstep"),
        (sub if sub is not None else pl.lit(0)).cast(pl.Int64).alias("sub"),
        path.alias("path"),
        (pl.lit(kind) if isinstance(kind, str) else kind).alias("kind"),
        (pl.lit(detail) if isinstance(detail, str) else detail).alias("detail"),
    )


def _present(field: str) -> pl.Expr:
    """A modelled key that was there: a value, or an explicit null listed in ``null_fields``."""
    return pl.col(field).is_not_null() | pl.col("null_fields").list.contains(field).fill_null(False)


# Seconds spent per phase of _convert, summed over calls (benchmarks print it; reset it freely).
PHASES: dict[str, float] = {}


class _Clock:
    def __init__(self, prefix: str = "") -> None:
        self.prefix = prefix
        self.t = time.perf_counter()

    def __call__(self, phase: str) -> None:
        now = time.perf_counter()
        key = self.prefix + phase
        PHASES[key] = PHASES.get(key, 0.0) + now - self.t
        self.t = now

    def skip(self) -> None:
        """Restart without recording (the time was recorded by a callee's own clock)."""
        self.t = time.perf_counter()


def _convert(table: pa.Table) -> tuple[pa.Table, pa.Table, np.ndarray]:
    """Convert Responses request rows; returns Chat rows (fallback rows left out), losses, fallback rows."""
    n = table.num_rows
    clock = _Clock("table: ")
    instr = table.column("instructions").chunk(0)
    rows = _frame(
        {
            "conversation_id": table.column("conversation_id").chunk(0),
            "items_form": table.column("items_form").chunk(0),
            "instr_form": instr.field("form"),
            "instr_text": _first_text(instr.field("content")),
            "tools": table.column("tools").chunk(0),
            "tool_choice": table.column("tool_choice").chunk(0),
            "extra_json": table.column("extra_json").chunk(0),
            "null_fields": table.column("null_fields").chunk(0),
        }
    ).with_row_index("row")
    rows = rows.with_columns(
        pl.col("row").cast(pl.Int64),
        instr_msg=(pl.col("instr_form") == "string") & (pl.col("instr_text") != ""),
    )

    items_list = table.column("items").chunk(0)
    flat = items_list.flatten()
    item_row = pc.list_parent_indices(items_list)
    content = flat.field("content")
    names = ["section", "group", "type", "native_type", "role", "id", "call_id", "name", "namespace",
             "arguments", "input", "status", "phase", "content_form", "encrypted_content", "signature",
             "extra_json", "null_fields"]  # fmt: skip
    items = _frame(
        {
            "row": item_row,
            **{f: flat.field(f) for f in names},
            "b0": _first_block(content),
            "text0_nonempty": _first_nonempty(content),
        }
    ).with_row_index("idx")
    items = items.with_columns(
        pl.col("idx").cast(pl.Int64),
        pl.col("row").cast(pl.Int64),
        pos=_pos(item_row),
        items_form=rows["items_form"].gather(pl.Series(item_row)),
    )
    role = pl.col("role")
    t = pl.col("type")
    form = pl.col("content_form")
    items = items.with_columns(
        eff_role=pl.when(role.is_null() | (role == "")).then(pl.lit("user")).otherwise(role),
        base=item_pointer(),
        is_msg=t == "message",
        is_call=t.is_in(_CALLS),
        is_out=t.is_in(_OUTPUTS),
    )
    items = items.with_columns(
        is_ma=pl.col("is_msg") & (pl.col("eff_role") == "assistant"),
        is_mo=pl.col("is_msg") & (pl.col("eff_role") != "assistant"),
        payload=pl.when(pl.col("is_out")).then(pl.lit("/output")).otherwise(pl.lit("/content")),
    )

    clock("rows and items frames")
    # ---- content blocks of messages and tool outputs --------------------------------------------
    bflat = content.flatten()
    block_item = pc.list_parent_indices(content)
    bnames = ["type", "text", "annotations", "logprobs", "cache_control", "citations", "extra_json",
              "null_fields"]  # fmt: skip
    blocks = _frame({"item": block_item, **{f: bflat.field(f) for f in bnames}}).with_row_index("bidx")
    blocks = blocks.with_columns(pl.col("item").cast(pl.Int64), k=_pos(block_item))
    attrs = items.select(
        "row",
        "pos",
        "base",
        "payload",
        "is_msg",
        "is_out",
        "is_ma",
        "content_form",
        allow_media=pl.col("is_msg") & (pl.col("eff_role") == "user"),
        expected=pl.when(pl.col("is_msg") & (role == "assistant"))
        .then(pl.lit("output_text"))
        .otherwise(pl.lit("input_text")),
    ).gather(blocks["item"])
    blocks = pl.concat([blocks, attrs], how="horizontal")
    in_scope = (pl.col("is_msg") | pl.col("is_out")) & (pl.col("content_form") == "parts")
    blocks = blocks.filter(in_scope)
    blocks = _image_fields(blocks)
    bt = pl.col("type")
    blocks = blocks.with_columns(
        cls=pl.when(bt.is_null() | bt.is_in(_TEXT_TYPES))
        .then(pl.lit("text"))
        .when(bt == "refusal")
        .then(pl.lit("refusal"))
        .when(pl.col("allow_media") & (bt == "input_image") & (pl.col("img_kind") == "VARCHAR"))
        .then(pl.lit("image"))
        .when(pl.col("allow_media") & (bt == "image"))
        .then(pl.lit("fallback"))
        .otherwise(pl.lit("drop")),
        path=pl.concat_str(pl.col("base"), pl.col("payload"), pl.lit("/"), pl.col("k").cast(pl.String)),
    )
    survive = pl.col("cls").is_in(["text", "refusal", "image"])
    n_items = items.height
    surviving = (
        np.bincount(blocks.select(pl.col("item").filter(survive))["item"].to_numpy(), minlength=n_items)
        if n_items
        else np.zeros(0, np.int64)
    )
    # (select, then filter: a filter on the whole frame would copy every column)
    block_fallback = blocks.select(
        pl.col("row").filter(
            (pl.col("cls") == "fallback")
            | ((pl.col("cls") == "image") & pl.col("detail_bad") & pl.col("detail_repr").is_null())
        )
    )["row"]

    clock("blocks")
    # ---- the turn state: segments, merges, message numbers ---------------------------------------
    items = items.with_columns(n_surv=pl.Series(surviving, dtype=pl.Int64))
    truthy = (
        pl.when(form == "string")
        .then(pl.col("text0_nonempty"))
        .when(form == "parts")
        .then(pl.col("n_surv") > 0)
        .when(form == "absent")
        .then(pl.lit(True))
        .otherwise(pl.lit(False))
    )
    resetter = (
        pl.col("is_mo")
        | pl.col("is_out")
        | ~(pl.col("is_msg") | pl.col("is_call") | t.is_in(["reasoning", "item_reference"]))
    )
    items = items.with_columns(
        first=pl.col("pos") == 0,
        truthy=truthy,
        nonish=form.is_in(["null", "absent"]),
        setter=pl.col("is_ma") | pl.col("is_call"),
        resetter=resetter,
    )
    seg_start = pl.col("first") | pl.col("resetter")
    marker = pl.when(pl.col("is_ma")).then(pl.col("nonish").cast(pl.Int8))
    items = items.with_columns(
        calls_before=_since(pl.col("is_call"), seg_start),
        setters_before=_since(pl.col("setter"), seg_start),
        prev_ma=pl.when(seg_start).then(pl.lit(-1, pl.Int8)).otherwise(marker.shift(1)).forward_fill(),
    )
    items = items.with_columns(
        merged=pl.col("is_ma")
        & pl.col("truthy")
        & pl.when(pl.col("prev_ma") >= 0).then(pl.col("prev_ma") == 1).otherwise(pl.col("calls_before") > 0)
    )
    items = items.with_columns(
        new_msg=pl.col("is_mo")
        | pl.col("is_out")
        | (pl.col("is_ma") & ~pl.col("merged"))
        | (pl.col("is_call") & (pl.col("setters_before") == 0))
    )
    instr_msg = rows["instr_msg"].gather(items["row"]).cast(pl.Int64)
    items = items.with_columns(
        msg_local=_since(pl.col("new_msg"), pl.col("first")) + pl.col("new_msg").cast(pl.Int64),
        opener=pl.when(pl.col("new_msg")).then(pl.col("idx")).forward_fill(),
        part=_since(pl.col("is_call"), pl.col("new_msg")),
    )
    items = items.with_columns(msg_no=pl.col("msg_local") - 1 + instr_msg)
    merge_fallback = items.select(pl.col("row").filter(pl.col("merged") & (form == "absent")))["row"]
    # Text merged into a turn opened by an assistant message with absent content, after calls: the
    # per-record dict gets its keys in the order role, tool_calls, content, which the Chat text
    # writer (chat_json) does not reproduce; such rows are rare enough for the per-record encoder.
    opener_form = pl.col("content_form").gather(pl.col("opener").fill_null(0))
    order_fallback = items.select(
        pl.col("row").filter(pl.col("merged") & (opener_form == "absent") & (pl.col("calls_before") > 0))
    )["row"]
    # A call or output without call_id gets a generated / paired id (call_ids.py, positional pairing):
    # the per-record encoder does it, so from here on every call and output has its own id.
    id_fallback = items.select(
        pl.col("row").filter((pl.col("is_call") | pl.col("is_out")) & pl.col("call_id").is_null())
    )["row"]

    # Tool outputs have no kind in Chat: it is inferred from a custom call with the same id.
    keys = items.select("row", "call_id", "type")
    customs = (
        keys.filter(t == "custom_tool_call").select("row", "call_id").unique()
        .with_columns(custom=pl.lit(True))
    )  # fmt: skip
    custom = keys.join(customs, on=["row", "call_id"], how="left", nulls_equal=True, maintain_order="left")
    items = items.with_columns(custom=custom["custom"].fill_null(False))

    clock("turn state")
    # ---- top level: tools, tool_choice and extra keys, once per distinct value ------------------------
    tools_out, tools_loss, tools_bad = _convert_tools_column(rows["tools"])
    choice_out, choice_loss, choice_bad = _per_distinct(rows["tool_choice"], _convert_tool_choice)
    choice_loss = choice_loss.rename({"pos": "row"})
    extra_keys = pl.Series(json_keys(table.column("extra_json").chunk(0)))
    rows = rows.with_columns(extra_keys=extra_keys)
    carried = list(SAME_KEYS)
    kept = pl.col("extra_keys").list.eval(pl.element().is_in(carried)).list.all()
    none_kept = (
        ~pl.col("extra_keys")
        .list.eval(pl.element().is_in(carried) | pl.element().is_in(list(RENAMED_KEYS)))
        .list.any()
    )
    rows = rows.with_columns(
        extra_mode=pl.when(pl.col("extra_json").is_null() | none_kept.fill_null(True))
        .then(pl.lit("none"))
        .when(kept)
        .then(pl.lit("same"))
        .otherwise(pl.lit("rewrite"))
    )
    rewrite = rows["extra_json"].zip_with(rows["extra_mode"] == "rewrite", pl.Series([None], dtype=pl.String))
    rewritten, _, _ = _per_distinct(rewrite, _carried_extra)
    rows = rows.with_columns(
        out_tools=tools_out,
        out_choice=choice_out,
        out_extra=pl.when(pl.col("extra_mode") == "same")
        .then(pl.col("extra_json"))
        .when(pl.col("extra_mode") == "rewrite")
        .then(rewritten)
        .otherwise(pl.lit(None, pl.String)),
    )

    clock("tools, tool_choice, top-level keys")
    # ---- fallback rows ------------------------------------------------------------------------
    bad = np.zeros(n, bool)
    for s in (block_fallback, merge_fallback, order_fallback, id_fallback):
        bad[s.to_numpy()] = True
    bad |= tools_bad | choice_bad
    fallback_rows = np.flatnonzero(bad)

    losses = _all_losses(rows, items, blocks, tools_loss, choice_loss)
    clock("losses")
    chat = _build(rows, items, blocks, table, content.values.field("text"))
    clock.skip()
    if len(fallback_rows):  # (a filter copies every nested column, even with nothing to drop)
        chat = chat.filter(pa.array(~bad))
    clock("chat table: fallback rows out")
    losses = losses.filter(pl.Series(~bad[losses["row"].to_numpy()]))
    losses = losses.sort(["row", "stage", "pos", "step", "k", "bstep", "sub"], maintain_order=True)
    cids = rows["conversation_id"]
    losses = losses.with_columns(conversation_id=cids.gather(losses["row"]))
    loss_table = losses.select("row", "conversation_id", "path", "kind", "detail").to_arrow()
    clock("losses in order")
    return chat, loss_table.cast(LOSSES_SCHEMA), fallback_rows


def item_pointer(
    items_form: pl.Expr | None = None, section: pl.Expr | None = None, group: pl.Expr | None = None
) -> pl.Expr:
    """An item's pointer in its Responses source record (``Ctx.item_ptr`` for Responses), as an
    expression over the row's ``items_form`` and the item's ``section`` and ``group`` (by default the
    columns of those names). Null when ``section`` is null, or ``group`` is null outside the string
    shorthand.

    ==========  =======  =====  ==========
    items_form  section  group  pointer
    ==========  =======  =====  ==========
    string      input    0      /input
    parts       input    3      /input/3
    parts       output   1      /output/1
    ==========  =======  =====  ==========
    """
    items_form = pl.col("items_form") if items_form is None else items_form
    section = pl.col("section") if section is None else section
    group = pl.col("group") if group is None else group
    # section names are fixed ("input", "output"): nothing in them for a JSON pointer to escape
    return (
        pl.when((items_form == "string") & (section == "input"))
        .then(pl.lit("/input"))
        .otherwise(pl.concat_str(pl.lit("/"), section, pl.lit("/"), group.cast(pl.String)))
    )


def _first_block(content: pa.Array) -> pa.Array:
    """Index (into ``content.values``) of each list's first block; null for an empty or null list."""
    offsets = content.offsets.to_numpy()
    has = (np.diff(offsets) > 0) & content.is_valid().to_numpy(zero_copy_only=False)
    return pa.array(offsets[:-1].astype(np.int64), mask=~has)


def _first_nonempty(content: pa.Array) -> pa.Array:
    """Whether each list's first block has a non-empty text (null: no block, or a null text); reads
    lengths only, so no text is copied."""
    first = _first_block(content)
    lengths = pc.binary_length(content.values.field("text"))
    if len(lengths) == 0:
        return pa.nulls(len(content), pa.bool_())
    nonempty = pc.greater(lengths.take(pc.fill_null(first, 0)), 0)
    return pc.if_else(first.is_valid(), nonempty, pa.scalar(None, pa.bool_()))


def _first_text(content: pa.Array) -> pa.Array:
    """The text of each list's first block (null for an empty or null list)."""
    offsets = content.offsets.to_numpy()
    lengths = np.diff(offsets)
    has = (lengths > 0) & content.is_valid().to_numpy(zero_copy_only=False)
    texts = content.values.field("text")
    idx = pa.array(np.where(has, offsets[:-1], 0), pa.int64())
    if len(texts) == 0:
        return pa.nulls(len(content), pa.string())
    return pc.if_else(pa.array(has), texts.take(idx), pa.scalar(None, pa.string()))


def _pos(parent: pa.Array) -> pl.Series:
    """Position of each child inside its parent list (children are stored parent by parent)."""
    p = parent.to_numpy(zero_copy_only=False)
    if len(p) == 0:
        return pl.Series([], dtype=pl.Int32)
    start = np.r_[True, p[1:] != p[:-1]]
    idx = np.arange(len(p))
    first = np.maximum.accumulate(np.where(start, idx, 0))
    return pl.Series(idx - first, dtype=pl.Int32)


def _image_fields(blocks: pl.DataFrame) -> pl.DataFrame:
    """``image_url`` and ``detail`` of input_image parts, read from their extra_json."""
    img = (blocks["type"] == "input_image").fill_null(False)
    n = blocks.height
    if not img.any():
        return blocks.with_columns(
            *(pl.lit(None, pl.String).alias(c) for c in ("img_kind", "img_url", "detail_kind", "detail_val"))
        ).with_columns(_detail_checks())
    probe = blocks["extra_json"].filter(img).to_arrow()
    kind, url = json_member(probe, "image_url")
    dkind, dval = json_member(probe, "detail")
    where = np.flatnonzero(img.to_numpy())
    out = []
    for name, arr in (("img_kind", kind), ("img_url", url), ("detail_kind", dkind), ("detail_val", dval)):
        s = pl.repeat(None, n, dtype=pl.String, eager=True).alias(name)
        s = s.scatter(where, pl.Series(arr))
        out.append(s)
    return blocks.with_columns(out).with_columns(_detail_checks())


def plain_repr(value: pl.Expr) -> pl.Expr:
    """Is Python's ``repr`` of the string ``value`` just ``'`` + value + ``'``? True for printable ASCII
    without a quote or backslash; other strings are left to the per-record encoders, whose losses
    quote them with ``repr``."""
    return value.str.contains(r"^[ -~]*$") & ~value.str.contains(r"['\\]")


def _detail_checks() -> list[pl.Expr]:
    """``detail_bad``: a detail Chat does not accept (dropped with a loss); ``detail_repr``: how the
    loss shows it (Python's ``repr``), written here for null and plain printable-ASCII strings only;
    other values leave it null and the row to the per-record encoder."""
    kind, val = pl.col("detail_kind"), pl.col("detail_val")
    bad = kind.is_not_null() & ~((kind == "VARCHAR") & val.is_in(list(IMAGE_DETAILS)))
    plain = (kind == "VARCHAR") & plain_repr(val)
    return [
        bad.fill_null(False).alias("detail_bad"),
        pl.when(kind == "NULL").then(pl.lit("None")).when(plain)
        .then(pl.concat_str(pl.lit("'"), val, pl.lit("'"))).alias("detail_repr"),
    ]  # fmt: skip


# ---------------------------------------------------------------------------------------------
# Tools, tool_choice, extra keys: to_chat's own functions, once per distinct JSON text


class _LossLog:
    """Stands in for :class:`Ctx` where ``to_chat`` only reads ``source`` and calls ``lose``."""

    source = "responses"

    def __init__(self) -> None:
        self.losses: list[dict[str, str]] = []

    def lose(self, path: str, kind: str, detail: str) -> None:
        self.losses.append({"path": path, "kind": kind, "detail": detail})


def _convert_tool_choice(text: str) -> tuple[str | None, list[dict[str, str]]]:
    log = _LossLog()
    choice = _tool_choice(log, orjson.loads(text))  # type: ignore[arg-type]
    return (None if choice is ... else orjson.dumps(choice).decode()), log.losses


def _carried_extra(text: str) -> tuple[str | None, list[dict[str, str]]]:
    body: dict[str, Any] = {}
    for key, value in orjson.loads(text).items():
        if key in SAME_KEYS:
            body[key] = value
        elif key in RENAMED_KEYS:
            body[RENAMED_KEYS[key]] = value
    return (orjson.dumps(body).decode() if body else None), []


def _per_distinct(
    values: pl.Series, fn: Callable[[str], tuple[str | None, list[dict[str, str]]]]
) -> tuple[pl.Series, pl.DataFrame, np.ndarray]:
    """``fn`` applied once per distinct non-null value; results broadcast back to every position.

    Returns the output text per position, the losses (``pos``, ``sub``, ``path``, ``kind``,
    ``detail``) and which positions ``fn`` failed on (those go to the per-record encoder, which
    reports the failure).
    """
    uniq = values.drop_nulls().unique(maintain_order=True)
    ids = pl.DataFrame({"value": uniq, "vid": pl.int_range(len(uniq), eager=True, dtype=pl.Int64)})
    codes = values.to_frame("value").join(ids, on="value", how="left", maintain_order="left")["vid"]
    outs: list[str | None] = []
    failed: list[bool] = []
    lost: list[tuple[int, int, str, str, str]] = []
    for vid, text in enumerate(uniq.to_list()):  # distinct values only
        try:
            out, losses = fn(text)
        except (ValueError, KeyError, TypeError):
            out, losses, bad = None, [], True
        else:
            bad = False
        outs.append(out)
        failed.append(bad)
        lost.extend((vid, j, x["path"], x["kind"], x["detail"]) for j, x in enumerate(losses))
    vid_safe = codes.fill_null(0)
    out_s = pl.Series(outs, dtype=pl.String).gather(vid_safe) if outs else pl.repeat(
        None, len(values), dtype=pl.String, eager=True)  # fmt: skip
    out_s = pl.select(pl.when(codes.is_not_null()).then(out_s)).to_series()
    failed_np = np.array(failed, bool)[vid_safe.to_numpy()] & codes.is_not_null().to_numpy() if failed else (
        np.zeros(len(values), bool))  # fmt: skip
    loss_cols = list(zip(*lost, strict=True)) if lost else [[], [], [], [], []]
    loss_frame = pl.DataFrame(
        {"vid": pl.Series(loss_cols[0], dtype=pl.Int64), "sub": pl.Series(loss_cols[1], dtype=pl.Int64),
         "path": pl.Series(loss_cols[2], dtype=pl.String), "kind": pl.Series(loss_cols[3], dtype=pl.String),
         "detail": pl.Series(loss_cols[4], dtype=pl.String)}
    )  # fmt: skip
    positions = pl.DataFrame({"pos": pl.int_range(len(values), eager=True), "vid": codes}).drop_nulls("vid")
    losses = positions.join(loss_frame, on="vid", how="inner").sort(["pos", "sub"]).drop("vid")
    return out_s, losses, failed_np


def _one_tool(text: str) -> tuple[str | None, list[dict[str, str]]]:
    """One tool definition (a JSON text) as a Chat tool, with losses under ``/tools/0``."""
    log = _LossLog()
    out = _tools(log, [orjson.loads(text)])  # type: ignore[arg-type]
    return (orjson.dumps(out[0]).decode() if out else None), log.losses


def _convert_tools_column(tools: pl.Series) -> tuple[pl.Series, pl.DataFrame, np.ndarray]:
    """Tool definitions: each distinct ``tools`` text read once (logs repeat a handful of tool sets).

    Returns the Chat ``tools`` text per row, the losses (``row``, ``sub``, ...) and the rows whose
    ``tools`` is not a JSON array (left to the per-record encoder).
    """
    uniq = tools.drop_nulls().unique(maintain_order=True)
    codes = (
        tools.to_frame("t")
        .join(pl.DataFrame({"t": uniq, "u": pl.int_range(len(uniq), eager=True, dtype=pl.Int64)}), on="t",
              how="left", maintain_order="left")["u"]
    )  # fmt: skip
    out_u, losses_u, bad_u = _convert_tools_distinct(uniq)
    if not len(uniq):  # no row has tools
        return pl.repeat(None, len(tools), dtype=pl.String, eager=True), losses_u, np.zeros(len(tools), bool)
    safe = codes.fill_null(0)
    out = pl.select(pl.when(codes.is_not_null()).then(out_u.gather(safe))).to_series()
    bad = bad_u[safe.to_numpy()] & codes.is_not_null().to_numpy()
    positions = pl.DataFrame({"row": pl.int_range(len(tools), eager=True, dtype=pl.Int64), "u": codes})
    losses = (
        positions.drop_nulls("u")
        .join(losses_u.rename({"row": "u"}), on="u", how="inner")
        .sort(["row", "sub"], maintain_order=True)
        .select("row", "sub", "path", "kind", "detail")
    )
    return out, losses, bad


def _convert_tools_distinct(tools: pl.Series) -> tuple[pl.Series, pl.DataFrame, np.ndarray]:
    """Tool definitions: each distinct definition converted once, the lists rebuilt per row.

    Returns the Chat ``tools`` text per row, the losses (``row``, ``sub``, ...) and the rows whose
    ``tools`` is not a JSON array (left to the per-record encoder).
    """
    kinds, elements = json_elements(tools.to_arrow())
    n = len(tools)
    frame = pl.DataFrame(
        {"row": pl.int_range(n, eager=True, dtype=pl.Int64), "kind": pl.Series(kinds, dtype=pl.String),
         "el": pl.Series(elements, dtype=pl.List(pl.String))}
    )  # fmt: skip
    not_array = (frame["kind"].is_not_null() & (frame["kind"] != "ARRAY")).to_numpy()
    els = frame.filter(pl.col("kind") == "ARRAY").select("row", "el").explode("el").drop_nulls("el")
    els = els.with_columns(k=pl.int_range(pl.len()).over("row"))
    out, losses, failed = _per_distinct(els["el"], _one_tool)
    els = els.with_columns(out=out, failed=pl.Series(failed))
    bad_rows = els.filter(pl.col("failed"))["row"].to_numpy()
    prefix = pl.concat_str(pl.lit("/tools/"), pl.col("k").cast(pl.String))
    losses = losses.join(els.select(pl.int_range(pl.len(), dtype=pl.Int64).alias("pos"), "row", "k"),
                         on="pos", how="inner")  # fmt: skip
    losses = losses.with_columns(path=pl.concat_str(prefix, pl.col("path").str.slice(len("/tools/0"))))
    losses = losses.with_columns(sub=pl.col("k") * 1000 + pl.col("sub")).select(
        "row", "sub", "path", "kind", "detail")  # fmt: skip
    joined = els.filter(pl.col("out").is_not_null()).group_by("row", maintain_order=True).agg(
        body=pl.col("out").str.join(",")
    )  # fmt: skip
    frame = frame.join(joined, on="row", how="left", maintain_order="left")
    is_array = pl.col("kind") == "ARRAY"
    empty = pl.col("el").list.len() == 0
    frame = frame.with_columns(
        out=pl.when(is_array & (pl.col("body").is_not_null() | empty)).then(
            pl.concat_str(pl.lit("["), pl.col("body").fill_null(""), pl.lit("]"))
        )
    )
    none_left = frame.filter(is_array & pl.col("out").is_null()).select(
        "row", sub=pl.lit(10**9, pl.Int64), path=pl.lit("/tools"), kind=pl.lit("tools"),
        detail=pl.lit("no tool survives the conversion"),
    )  # fmt: skip
    bad = not_array.copy()
    bad[bad_rows] = True
    return frame["out"], pl.concat([losses, none_left], how="vertical").sort(["row", "sub"]), bad


# ---------------------------------------------------------------------------------------------
# Losses


def _all_losses(
    rows: pl.DataFrame, items: pl.DataFrame, blocks: pl.DataFrame, tools: pl.DataFrame, choice: pl.DataFrame
) -> pl.DataFrame:
    parts: list[pl.LazyFrame] = []
    lit = pl.lit
    rows_l = rows.lazy()

    # stage 0-1: the input shorthand, the instructions
    parts.append(
        _losses(rows_l.filter(pl.col("items_form") == "string"), lit("/input"), "content_form",
                "the string input shorthand becomes a user message", stage=0)
    )  # fmt: skip
    iform = pl.col("instr_form")
    parts.append(
        _losses(rows_l.filter(iform == "null"), lit("/instructions"), "instruction_position",
                "explicit null instructions dropped", stage=1)
    )  # fmt: skip
    parts.append(
        _losses(rows_l.filter((iform == "string") & (pl.col("instr_text") == "")), lit("/instructions"),
                "empty_text", "empty instructions produce no system message", stage=1)
    )  # fmt: skip
    parts.append(
        _losses(rows_l.filter(pl.col("instr_msg")), lit("/instructions"), "instruction_position",
                "instructions became a leading system message", stage=1)
    )  # fmt: skip

    # stage 2: items, in order; blocks first (step 10) where the encoder reads content first
    parts.extend(_block_losses(blocks))
    parts.extend(_item_losses(items))

    # stage 3: a leading string system message reads as instructions once back in Responses
    first = (
        items.lazy()
        .filter(pl.col("new_msg") & (pl.col("msg_local") == 1))
        .join(rows_l.select("row", "instr_msg"), on="row", how="left", maintain_order="left")
    )
    lead = first.filter(
        ~pl.col("instr_msg")
        & pl.col("is_mo")
        & (pl.col("eff_role") == "system")
        & (pl.col("content_form") == "string")
        & pl.col("text0_nonempty")
    )
    detail = "a leading system message and top-level instructions look the same in Chat"
    parts.append(_losses(lead, pl.col("base"), "instruction_position", detail, stage=3, sub=lit(0)))
    parts.append(_losses(lead, lit("/instructions"), "instruction_position", detail, stage=3, sub=lit(1)))

    # stage 4-7: tools, tool_choice, explicit nulls, top-level keys
    for stage, lost in ((4, tools), (5, choice)):
        parts.append(_losses(lost, pl.col("path"), pl.col("kind"), pl.col("detail"), stage=stage,
                             sub=pl.col("sub")))  # fmt: skip
    nulls = rows.select("row", name=pl.col("null_fields")).explode("name").drop_nulls("name")
    nulls = nulls.with_columns(sub=pl.int_range(pl.len()).over("row"))
    parts.append(
        _losses(nulls, pl.concat_str(lit("/"), pl.col("name")), "request_field",
                pl.concat_str(lit("explicit null '"), pl.col("name"), lit("' dropped")), stage=6,
                sub=pl.col("sub"))
    )  # fmt: skip
    keys = rows.select("row", key=pl.col("extra_keys")).explode("key").drop_nulls("key")
    keys = keys.with_columns(sub=pl.int_range(pl.len()).over("row"))
    keys = keys.filter(~pl.col("key").is_in(list(SAME_KEYS) + list(RENAMED_KEYS)))
    parts.append(
        _losses(keys, json_pointer_token(pl.col("key")), "request_field",
                pl.concat_str(lit("'"), pl.col("key"), lit("' is not carried to Chat")), stage=7,
                sub=pl.col("sub"))
    )  # fmt: skip
    return pl.concat(pl.collect_all(parts), how="vertical")


def _block_losses(blocks_eager: pl.DataFrame) -> list[pl.LazyFrame]:
    lit = pl.lit
    blocks = blocks_eager.lazy()
    bt = pl.col("type")
    path = pl.col("path")
    common = {"stage": 2, "step": 10, "pos": pl.col("pos"), "k": pl.col("k")}
    text = blocks.filter(pl.col("cls") == "text")
    out = [
        _losses(
            text.filter(bt.is_null() | (bt != pl.col("expected"))),
            path, "content_form",
            pl.concat_str(lit("a '"), bt.fill_null("None"), lit("' part comes back as '"),
                          pl.col("expected"), lit("'")),
            bstep=0, **common,
        ),
        _losses(
            text.filter((pl.col("expected") == "output_text") & pl.col("annotations").is_null()
                        & (bt == "output_text")),
            path + "/annotations", "annotations", "no annotations: [] comes back", bstep=2, **common,
        ),
        _losses(text.filter(pl.col("text").is_null()), path + "/text", "content_form",
                "a part without text gets ''", bstep=3, **common),
        _losses(
            blocks.filter((pl.col("cls") == "image") & pl.col("detail_kind").is_null()),
            path + "/detail", "image", "no detail: Responses requires one, 'auto' comes back",
            bstep=0, **common,
        ),
        _losses(
            blocks.filter((pl.col("cls") == "image") & pl.col("detail_bad")),
            path + "/detail", "image",
            pl.concat_str(lit("detail "), pl.col("detail_repr"), lit(_BAD_DETAIL)),
            bstep=0, **common,
        ),
        _losses(
            blocks.filter(pl.col("cls") == "drop"),
            path,
            bt.replace_strict(PART_LOSS_KINDS, default="unknown_field", return_dtype=pl.String),
            pl.concat_str(lit("a '"), bt.fill_null("None"), lit("' part has no equivalent in Chat here")),
            bstep=0, **common,
        ),
    ]  # fmt: skip

    # keys of the source part that the Chat part does not carry (ctx.lose_block_keys)
    kept = blocks.filter(pl.col("cls").is_in(["text", "refusal", "image"])).drop("img_url", "detail_val")
    text_key = pl.when(bt == "refusal").then(lit("refusal")).when(bt == "thinking").then(
        lit("thinking")).otherwise(lit("text"))  # fmt: skip
    present = [
        kept.filter(bt.is_not_null()).select("bidx", key=lit("type"), order=lit(0)),
        kept.filter(pl.col("text").is_not_null()).select("bidx", key=text_key, order=lit(1)),
    ]
    for j, name in enumerate(_BLOCK_JSON):
        present.append(
            kept.filter(pl.col(name).is_not_null()).select("bidx", key=lit(name), order=lit(2 + j))
        )
    nulls = kept.select("bidx", "type", name=pl.col("null_fields")).explode("name").drop_nulls("name")
    nulls = nulls.with_columns(order=pl.int_range(pl.len()).over("bidx") + 10)
    present.append(
        nulls.select("bidx", key=pl.when(pl.col("name") == "text").then(text_key).otherwise(pl.col("name")),
                     order="order")
    )  # fmt: skip
    with_extra = blocks_eager.select("bidx", "cls", "extra_json").filter(
        pl.col("cls").is_in(["text", "refusal", "image"]) & pl.col("extra_json").is_not_null()
    )
    if with_extra.height:
        ek = with_extra.select("bidx", key=pl.Series(json_keys(with_extra["extra_json"].to_arrow())))
        ek = (
            ek.explode("key").drop_nulls("key").with_columns(order=pl.int_range(pl.len()).over("bidx") + 1000)
        )
        present.append(ek.lazy())
    keys = pl.concat([p.with_columns(pl.col("order").cast(pl.Int64)) for p in present], how="vertical")
    keys = keys.join(kept.drop("text", "extra_json", "null_fields"), on="bidx", how="left")
    carried = (
        pl.when(pl.col("cls") == "text")
        .then(
            pl.col("key").is_in(["type", "text"])
            | ((pl.col("key") == "annotations") & (pl.col("expected") == "output_text")
               & (pl.col("annotations") == "[]"))
        )
        .when(pl.col("cls") == "refusal")
        .then(pl.col("key").is_in(["type", "refusal"]))
        .otherwise(pl.col("key").is_in(["type", "image_url", "detail"]))
    )  # fmt: skip
    lost = keys.filter(~carried)
    out.append(
        _losses(
            lost,
            pl.concat_str(path, json_pointer_token(pl.col("key"))),
            pl.col("key").replace_strict(_LOSS_KEY_KINDS, default="unknown_field", return_dtype=pl.String),
            pl.concat_str(lit("'"), pl.col("key"), lit("' is not carried")),
            bstep=1, sub=pl.col("order"), **common,
        )
    )  # fmt: skip
    return out


def _lose_fields(df: pl.LazyFrame, fields: tuple[str, ...], step: int) -> list[pl.LazyFrame]:
    out = []
    for j, field in enumerate(fields):  # a fixed list of column names, not rows
        out.append(
            _losses(
                df.filter(_present(field)),
                pl.col("base") + "/" + field,
                _FIELD_KINDS.get(field, "unknown_field"),
                f"'{field}' has no slot",
                stage=2, step=step, pos=pl.col("pos"), sub=pl.lit(j),
            )
        )  # fmt: skip
    return out


def _item_losses(items_eager: pl.DataFrame) -> list[pl.LazyFrame]:
    lit = pl.lit
    items = items_eager.lazy()  # lazy: each loss reads only the columns it needs
    base = pl.col("base")
    t = pl.col("type")
    form = pl.col("content_form")
    pos = {"stage": 2, "pos": pl.col("pos")}
    out: list[pl.LazyFrame] = []

    msgs = items.filter(pl.col("is_msg"))
    out += _lose_fields(msgs, ("id", "status", "phase", "call_id", "name", "namespace", "arguments", "input",
                               "encrypted_content"), step=20)  # fmt: skip
    raw_assistant = pl.col("role") == "assistant"
    out.append(
        _losses(
            msgs.filter(_present("native_type") & (~raw_assistant.fill_null(False) | (form != "parts"))),
            base + "/type",
            "content_form",
            "Chat messages have no type tag",
            step=30,
            **pos,
        )
    )
    out.append(
        _losses(
            items_eager.lazy().filter(
                pl.col("is_msg") & raw_assistant & (form == "string") & ~pl.col("text0_nonempty")
            ),
            base,
            "content_form",
            "an empty assistant text has no item on the way back",
            step=31,
            **pos,
        )
    )
    out.append(
        _losses(
            msgs.filter(raw_assistant & (form == "absent")),
            base,
            "content_form",
            "an assistant message without content has no item on the way back",
            step=31,
            **pos,
        )
    )
    parts = msgs.filter(raw_assistant & (form == "parts"))
    nulls = pl.col("null_fields").list
    out.append(
        _losses(
            parts.filter(pl.col("id").is_null() & ~nulls.contains("id").fill_null(False)),
            base + "/id",
            "generated_id",
            "no id: one is generated on the way back",
            step=32,
            **pos,
        )
    )
    out.append(
        _losses(
            parts.filter(pl.col("status").is_null() & ~nulls.contains("status").fill_null(False)),
            base + "/status",
            "status",
            "no status: 'completed' comes back",
            step=33,
            **pos,
        )
    )
    out.append(
        _losses(
            parts.filter(pl.col("native_type").is_null()),
            base + "/type",
            "content_form",
            "comes back as a typed output message",
            step=34,
            **pos,
        )
    )
    out.append(_extra_losses(items_eager, pl.col("is_msg"), step=40))
    merged = items_eager.lazy().filter(pl.col("merged")).select("row", "pos", "base", "opener").collect()
    opener_base = items_eager["base"].gather(merged["opener"])
    out.append(_losses(merged, base, "text_order", "the text is placed before the tool calls it followed",
                       step=50, sub=lit(0), **pos))  # fmt: skip
    out.append(_losses(merged.with_columns(obase=opener_base), pl.col("obase"), "text_order",
                       "the calls now come after the text", step=50, sub=lit(1), **pos))  # fmt: skip
    out.append(
        _losses(
            msgs.filter(~pl.col("merged") & (form == "absent") & ~pl.col("is_ma")),
            base + "/content",
            "content_form",
            "absent content written as ''",
            step=50,
            **pos,
        )
    )

    calls = items_eager.lazy().filter(pl.col("is_call"))
    out += _lose_fields(calls, ("id", "status", "namespace", "phase", "encrypted_content"), step=20)
    # (no loss for a null call_id: such rows take the fallback, their rows here are dropped)
    out.append(_losses(calls.filter(pl.col("name").is_null()), base + "/name", "content_form",
                       "a missing or null 'name' becomes ''", step=30, sub=lit(1), **pos))  # fmt: skip
    custom = t == "custom_tool_call"
    out.append(_losses(
        calls.filter(pl.when(custom).then(pl.col("input")).otherwise(pl.col("arguments")).is_null()),
        base + pl.when(custom).then(lit("/input")).otherwise(lit("/arguments")), "content_form",
        pl.when(custom).then(lit("a missing or null 'input' becomes ''"))
        .otherwise(lit("a missing or null 'arguments' becomes ''")),
        step=30, sub=lit(2), **pos))  # fmt: skip
    out.append(_extra_losses(items_eager, pl.col("is_call"), step=40))

    outs = items.filter(pl.col("is_out"))  # (an id-less output's row takes the fallback: no loss here)
    out.append(_losses(outs.filter(form.is_in(["null", "absent"])), base + "/output", "content_form",
                       "Chat tool messages need content; wrote ''", step=15, **pos))  # fmt: skip
    out += _lose_fields(outs, _OUTPUT_LOST, step=20)
    out.append(_extra_losses(items_eager, pl.col("is_out"), step=40))
    out.append(
        _losses(
            outs.filter(pl.col("custom") != (t == "custom_tool_call_output")),
            base,
            "content_form",
            "Chat tool messages have no kind; it is inferred from the call",
            step=50,
            **pos,
        )
    )

    reasoning = items_eager.lazy().filter(t == "reasoning")
    out.append(_losses(reasoning, base, "reasoning", "Chat has no reasoning", step=10, **pos))
    out.append(_losses(reasoning.filter(pl.col("encrypted_content").is_not_null()),
                       base + "/encrypted_content", "encrypted_reasoning", "dropped", step=20,
                       **pos))  # fmt: skip
    out.append(_losses(reasoning.filter(pl.col("signature").is_not_null()), base + "/signature",
                       "thinking_signature", "dropped", step=30, **pos))  # fmt: skip
    out.append(_losses(items.filter(t == "compaction"), base, "compaction", "Chat has no compaction items",
                       step=10, **pos))  # fmt: skip
    out.append(_losses(items.filter(t == "item_reference"), base, "unknown_item",
                       "an item reference cannot be resolved here", step=10, **pos))  # fmt: skip
    other = items.filter(
        ~(pl.col("is_msg") | pl.col("is_call") | pl.col("is_out") | t.is_in(["reasoning", "compaction",
                                                                                "item_reference"]))
    )  # fmt: skip
    hosted = t.str.ends_with(_HOSTED_SUFFIXES[0])
    for suffix in _HOSTED_SUFFIXES[1:]:
        hosted = hosted | t.str.ends_with(suffix)
    hosted = hosted | t.str.starts_with("mcp_")
    out.append(
        _losses(
            other,
            base,
            pl.when(hosted).then(lit("hosted_tool")).otherwise(lit("unknown_item")),
            pl.concat_str(lit("'"), t, lit("' has no equivalent in Chat")),
            step=10,
            **pos,
        )
    )
    return out


def _extra_losses(df: pl.DataFrame, which: pl.Expr, step: int) -> pl.LazyFrame:
    """Every unmodelled key of an item is a loss (``ctx.lose_extra``)."""
    has = df.lazy().filter(which & pl.col("extra_json").is_not_null()).select(
        "row", "pos", "base", "extra_json").collect()  # fmt: skip
    keys = has.select("row", "pos", "base", key=pl.Series(json_keys(has["extra_json"].to_arrow()),
                                                          dtype=pl.List(pl.String)))  # fmt: skip
    keys = keys.explode("key").drop_nulls("key").with_columns(sub=pl.int_range(pl.len()).over("row", "pos"))
    return _losses(
        keys, pl.concat_str(pl.col("base"), json_pointer_token(pl.col("key"))), "unknown_field",
        pl.concat_str(pl.lit("'"), pl.col("key"), pl.lit("' has no slot in the target")),
        stage=2, step=step, pos=pl.col("pos"), sub=pl.col("sub"),
    )  # fmt: skip


# ---------------------------------------------------------------------------------------------
# The Chat rows


def _build(
    rows: pl.DataFrame, items: pl.DataFrame, blocks: pl.DataFrame, table: pa.Table, block_texts: pa.Array
) -> pa.Table:
    clock = _Clock("table: ")
    lit = pl.lit
    s = pl.String
    # head items: one per Chat message; a merged assistant text gives its content to the turn's head
    merged = items.lazy().filter(pl.col("merged")).select(pl.col("opener").alias("idx"), src=pl.col("idx"))
    needed = ["idx", "row", "msg_no", "is_call", "is_out", "is_mo", "eff_role", "call_id"]
    heads = (
        items.lazy().filter(pl.col("new_msg")).select(needed)
        .join(merged, on="idx", how="left", maintain_order="left").collect()
    )  # fmt: skip
    heads = heads.with_columns(
        src=pl.when(pl.col("src").is_not_null()).then(pl.col("src"))
        .when(pl.col("is_call")).then(lit(None, pl.Int64)).otherwise(pl.col("idx"))
    )  # fmt: skip
    src_form = items["content_form"].gather(heads["src"].fill_null(0))
    first = items["b0"].gather(heads["src"].fill_null(0)).fill_null(0).to_arrow()
    src_text = pl.Series(block_texts.take(first)) if len(block_texts) else pl.repeat(
        None, heads.height, dtype=pl.String, eager=True)  # fmt: skip
    heads = heads.with_columns(src_form=src_form, src_text=src_text)
    role_out = (
        pl.when(pl.col("is_out")).then(lit("tool")).when(pl.col("is_mo")).then(pl.col("eff_role"))
        .otherwise(lit("assistant"))
    )  # fmt: skip
    f = pl.col("src_form")
    empty = (pl.col("is_mo") & (f == "absent")) | (pl.col("is_out") & f.is_in(["null", "absent"]))
    heads = heads.select(
        "row", "msg_no", "src",
        part=lit(None, pl.Int32),
        type=pl.when(role_out.is_in(["tool", "function"])).then(lit("function_call_output"))
        .otherwise(lit("message")),
        native_type=lit(None, s),
        role=role_out,
        call_id=pl.when(pl.col("is_out")).then(pl.col("call_id")).otherwise(lit(None, s)),
        name=lit(None, s), arguments=lit(None, s), input=lit(None, s),
        content_form=pl.when(pl.col("src").is_null()).then(lit("null"))
        .when(empty).then(lit("string")).otherwise(f),
        text=pl.when(empty).then(lit("")).when(f == "string").then(pl.col("src_text"))
        .otherwise(lit(None, s)),
    )  # fmt: skip
    instr = rows.filter(pl.col("instr_msg")).select(
        "row",
        msg_no=lit(0, pl.Int64), src=lit(None, pl.Int64), part=lit(None, pl.Int32),
        type=lit("message"), native_type=lit(None, s), role=lit("system"), call_id=lit(None, s),
        name=lit(None, s), arguments=lit(None, s), input=lit(None, s), content_form=lit("string"),
        text=pl.col("instr_text"),
    )  # fmt: skip
    custom = pl.col("type") == "custom_tool_call"
    calls = items.filter(pl.col("is_call")).select(
        "row", "msg_no",
        src=lit(None, pl.Int64),
        part=pl.col("part").cast(pl.Int32),
        type="type",
        native_type=pl.when(custom).then(lit("custom")).otherwise(lit("function")),
        role=lit("assistant"),
        call_id="call_id",  # null only in id-less rows, which take the fallback (dropped below)
        name=pl.col("name").fill_null(""),
        arguments=pl.when(custom).then(lit(None, s)).otherwise(pl.col("arguments").fill_null("")),
        input=pl.when(custom).then(pl.col("input").fill_null("")).otherwise(lit(None, s)),
        content_form=lit(None, s),
        text=lit(None, s),
    )  # fmt: skip
    clock("chat table: heads and calls")
    out = pl.concat(
        [
            x.with_columns(pl.col("row").cast(pl.Int64), pl.col("msg_no").cast(pl.Int64))
            for x in (instr, heads, calls)
        ],
        how="vertical",
    )
    out = out.sort(["row", "msg_no", "part"], nulls_last=False, maintain_order=True).with_row_index("out")
    clock("chat table: message order")
    n_out = out.height

    # content blocks: a string is one untyped block; a part list the surviving converted parts
    esc = orjson_string
    image_extra = pl.concat_str(
        lit('{"image_url":{"url":'), esc(pl.col("img_url")),
        pl.when(pl.col("detail_kind").is_not_null() & ~pl.col("detail_bad"))
        .then(pl.concat_str(lit(',"detail":'), esc(pl.col("detail_val"))))
        .otherwise(lit("")),
        lit("}}"),
    )  # fmt: skip
    conv = blocks.filter(pl.col("cls").is_in(["text", "refusal", "image"])).select(
        src=pl.col("item"), k="k",
        btype=pl.when(pl.col("cls") == "image").then(lit("image_url")).when(pl.col("cls") == "refusal")
        .then(lit("refusal")).otherwise(lit("text")),
        btext=pl.when(pl.col("cls") == "image").then(lit(None, s)).otherwise(pl.col("text").fill_null("")),
        bextra=pl.when(pl.col("cls") == "image").then(image_extra).otherwise(lit(None, s)),
    )  # fmt: skip
    part_heads = out.filter(pl.col("content_form") == "parts").select("out", "src")
    conv = conv.join(part_heads, on="src", how="inner").select("out", "k", "btype", "btext", "bextra")
    single = out.filter(pl.col("content_form") == "string").select(
        "out", k=lit(0, pl.Int32), btype=lit(None, s), btext="text", bextra=lit(None, s)
    )
    ob = pl.concat([conv.with_columns(pl.col("k").cast(pl.Int32)), single], how="vertical")
    ob = ob.sort(["out", "k"], maintain_order=True)
    counts = np.bincount(ob["out"].to_numpy(), minlength=n_out) if n_out else np.zeros(0, np.int64)
    content_valid = out["content_form"].is_in(["string", "parts"]).fill_null(False).to_numpy()
    clock("chat table: content blocks")
    content = _list_array(counts, content_valid, _blocks_array(ob))

    fields: dict[str, pa.Array] = {}
    for name in ("type", "native_type", "role", "call_id", "name", "arguments", "input", "content_form"):
        fields[name] = out[name].to_arrow().cast(pa.string())
    arrays = []
    for f in ITEM:
        if f.name == "section":
            arrays.append(_repeat("messages", n_out))
        elif f.name == "group":
            arrays.append(out["msg_no"].to_arrow().cast(pa.int32()))
        elif f.name == "part":
            arrays.append(out["part"].to_arrow().cast(pa.int32()))
        elif f.name == "content":
            arrays.append(content)
        elif f.name in fields:
            arrays.append(fields[f.name])
        else:
            arrays.append(pa.nulls(n_out, f.type))
    item_array = pa.StructArray.from_arrays(arrays, fields=list(ITEM))
    n = rows.height
    per_row = np.bincount(out["row"].to_numpy(), minlength=n) if n_out else np.zeros(n, np.int64)
    items_list = _list_array(per_row, np.ones(n, bool), item_array)

    s_ = pa.string()
    columns = {
        "conversation_id": table.column("conversation_id"),
        "source_format": _repeat("chat", n),
        "record_kind": _repeat("request", n),
        "source_file": table.column("source_file"),
        "source_line": table.column("source_line"),
        "model": table.column("model"),
        "instructions": pa.StructArray.from_arrays(
            [_repeat("absent", n),
             pa.nulls(n, CONVERSATION_SCHEMA.field("instructions").type.field("content").type)],
            fields=list(CONVERSATION_SCHEMA.field("instructions").type),
        ),
        "items_form": _repeat("parts", n),
        "items": items_list,
        "tools": rows["out_tools"].to_arrow().cast(s_),
        "tool_choice": rows["out_choice"].to_arrow().cast(s_),
        "extra_json": rows["out_extra"].to_arrow().cast(s_),
        "null_fields": pa.nulls(n, _STR_LIST),
        "n_items": pa.array(per_row, pa.int32()),
        "provenance": table.column("provenance"),
    }  # fmt: skip
    clock("chat table: arrays")
    return pa.Table.from_arrays([columns[f.name] for f in CONVERSATION_SCHEMA], schema=CONVERSATION_SCHEMA)


def _repeat(value: str, n: int) -> pa.Array:
    """``value`` ``n`` times as a plain string array (filled in C++, no Python objects)."""
    return pc.fill_null(pa.nulls(n, pa.string()), value)


def _blocks_array(ob: pl.DataFrame) -> pa.StructArray:
    n = ob.height
    arrays = []
    for f in BLOCK:
        if f.name == "type":
            arrays.append(ob["btype"].to_arrow().cast(pa.string()))
        elif f.name == "text":
            arrays.append(ob["btext"].to_arrow().cast(pa.string()))
        elif f.name == "extra_json":
            arrays.append(ob["bextra"].to_arrow().cast(pa.string()))
        else:
            arrays.append(pa.nulls(n, f.type))
    return pa.StructArray.from_arrays(arrays, fields=list(BLOCK))


def _list_array(counts: np.ndarray, valid: np.ndarray, values: pa.Array) -> pa.ListArray:
    offsets = np.zeros(len(counts) + 1, np.int32)
    np.cumsum(counts, out=offsets[1:])
    mask = None if valid.all() else pa.array(~valid)
    return pa.ListArray.from_arrays(
        pa.array(offsets), values, type=pa.list_(pa.field("item", values.type)), mask=mask
    )
