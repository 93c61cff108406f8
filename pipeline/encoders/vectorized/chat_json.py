"""Canonical Chat rows made by :func:`responses_to_chat` -> Chat request JSON text, column at a time.

The text is byte for byte what the per-record path writes (``orjson.dumps`` of the dict
``pipeline.encoders.to_chat.encode`` builds), so a job gives the same files whichever path converted
a row. That fixes the key order, which is ``to_chat``'s, not the Chat codec's:

=====================  ===============================================================
element                keys, in order (optional ones only when present)
=====================  ===============================================================
record                 messages, model, tools, tool_choice, then carried keys in order
tool message           role, tool_call_id, content
other message          role, content, tool_calls
function call          id, type, function {name, arguments}
custom call            id, type, custom {name, input}
text / refusal part    type, text / type, refusal
image part             type, image_url {url, detail}
=====================  ===============================================================

Every string goes through :func:`~pipeline.encoders.vectorized._json.orjson_string` (orjson's
escaping); tools, tool_choice and carried keys are already orjson text in the table. Lists are
joined with ``list.join`` over Arrow list arrays built from the stored order (items are stored
message by message, calls right after their head), so nothing is hashed or sorted.

>>> from pipeline.formats import decode_records
>>> from pipeline.encoders.vectorized import responses_to_chat
>>> t = decode_records([{"input": "hi", "model": "m"}], "responses").table
>>> chat_json(responses_to_chat(t).table).to_pylist()
['{"messages":[{"role":"user","content":"hi"}],"model":"m"}']
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.encoders.vectorized._json import orjson_string as esc
from pipeline.encoders.vectorized.responses_to_chat import _Clock

_CALL_TYPES = ["function_call", "custom_tool_call"]


def _joined(values: pl.Series, parents: np.ndarray, n: int) -> pl.Series:
    """Each parent's strings (stored parent by parent, parents ascending) joined with ``,``; an empty
    string for a parent ``0..n-1`` without any."""
    counts = np.bincount(parents, minlength=n) if len(parents) else np.zeros(n, np.int64)
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(counts, out=offsets[1:])
    # Polars exports large_string: a large list over it needs no cast (no copy of the text)
    lists = pa.LargeListArray.from_arrays(pa.array(offsets), values.to_arrow())
    return pl.Series(lists).list.join(",")


def chat_json(table: pa.Table) -> pa.Array:
    """One Chat request body (JSON text, ``large_string``) per row of a canonical Chat table from
    :func:`responses_to_chat`."""
    n = table.num_rows
    if n == 0:
        return pa.array([], pa.large_string())
    clock = _Clock("json: ")
    items = table.column("items").combine_chunks()
    flat = items.flatten()
    item_row = pc.list_parent_indices(items).to_numpy()
    content = flat.field("content")
    blocks = content.flatten()
    block_item = pc.list_parent_indices(content).to_numpy()

    lit = pl.lit
    b = pl.from_arrow(
        pa.table(
            {"type": blocks.field("type"), "text": blocks.field("text"), "extra": blocks.field("extra_json")}
        )
    )
    assert isinstance(b, pl.DataFrame)
    bt = pl.col("type")
    # each text is escaped once; the branches only pick small literals (when/then computes them all)
    b = b.with_columns(string=esc(pl.col("text")))
    image = bt == "image_url"
    prefix = (
        pl.when(image).then(lit('{"type":"image_url",'))
        .when(bt == "refusal").then(lit('{"type":"refusal","refusal":'))
        .otherwise(lit('{"type":"text","text":'))
    )  # fmt: skip
    # an image part has no text and its extra_json is {"image_url": {...}}: spliced without its brace
    body = pl.coalesce(pl.col("string"), pl.col("extra").str.slice(1))
    b = b.with_columns(part=pl.concat_str(prefix, body, pl.when(image).then(lit("")).otherwise(lit("}"))))
    clock("parts")
    n_items = len(flat)
    parts_joined = _joined(b["part"], block_item, n_items)
    # a string content is one untyped block: its text, the first block of the item
    first_block = np.zeros(n_items, np.int64)
    offsets = content.offsets.to_numpy()
    has_block = np.diff(offsets) > 0
    first_block[has_block] = offsets[:-1][has_block] - offsets[0]
    string_text = b["string"].gather(pl.Series(first_block)) if b.height else pl.repeat(
        None, n_items, dtype=pl.String, eager=True)  # fmt: skip

    clock("parts joined per item")
    it = pl.from_arrow(
        pa.table({f: flat.field(f) for f in ("type", "native_type", "role", "call_id", "name", "arguments",
                                             "input", "content_form")})
    )  # fmt: skip
    assert isinstance(it, pl.DataFrame)
    it = it.with_columns(parts=parts_joined, string=string_text)
    form = pl.col("content_form")
    content_json = (
        pl.when(form == "string")
        .then(pl.col("string"))
        .when(form == "parts")
        .then(pl.concat_str(lit("["), pl.col("parts"), lit("]")))
        .when(form == "null")
        .then(lit("null"))
    )
    custom = pl.col("type") == "custom_tool_call"
    # a custom call has an input and no arguments, a function call the other way round
    call = pl.concat_str(
        lit('{"id":'), esc(pl.col("call_id")),
        pl.when(custom).then(lit(',"type":"custom","custom":{"name":'))
        .otherwise(lit(',"type":"function","function":{"name":')),
        esc(pl.col("name")),
        pl.when(custom).then(lit(',"input":')).otherwise(lit(',"arguments":')),
        esc(pl.coalesce(pl.col("arguments"), pl.col("input"))),
        lit("}}"),
    )  # fmt: skip
    is_call = it["type"].is_in(_CALL_TYPES).to_numpy()
    # calls follow the head of their message: the message of an item is the number of heads so far
    msg_of = np.cumsum(~is_call) - 1
    heads = np.flatnonzero(~is_call)
    calls = np.flatnonzero(is_call)
    calls_json = it[calls].select(call=call)["call"]
    calls_joined = _joined(calls_json, msg_of[calls], len(heads))
    clock("calls")
    h = it[heads].with_columns(content_json=content_json, calls=calls_joined)
    has_calls = pl.col("calls") != ""
    tool = pl.col("role") == "tool"
    message = (
        pl.when(tool)
        .then(
            pl.concat_str(
                lit('{"role":"tool"'),
                pl.when(pl.col("call_id").is_not_null())
                .then(pl.concat_str(lit(',"tool_call_id":'), esc(pl.col("call_id"))))
                .otherwise(lit("")),
                lit(',"content":'), pl.col("content_json"), lit("}"),
            )
        )
        .otherwise(
            pl.concat_str(
                lit('{"role":'), esc(pl.col("role")),
                pl.when(form != "absent").then(pl.concat_str(lit(',"content":'), pl.col("content_json")))
                .otherwise(lit("")),
                pl.when(has_calls).then(pl.concat_str(lit(',"tool_calls":['), pl.col("calls"), lit("]")))
                .otherwise(lit("")),
                lit("}"),
            )
        )
    )  # fmt: skip
    messages = h.select(message=message)["message"]
    messages_joined = _joined(messages, item_row[heads], n)

    clock("messages")
    top = pl.from_arrow(table.select(["model", "tools", "tool_choice", "extra_json"]))
    assert isinstance(top, pl.DataFrame)

    def opt(key: str, value: pl.Expr) -> pl.Expr:
        return pl.when(value.is_not_null()).then(pl.concat_str(lit(f',"{key}":'), value)).otherwise(lit(""))

    extra = pl.col("extra_json")
    record = top.with_columns(messages=messages_joined).select(
        pl.concat_str(
            lit('{"messages":['), pl.col("messages"), lit("]"),
            opt("model", esc(pl.col("model"))),
            opt("tools", pl.col("tools")),
            opt("tool_choice", pl.col("tool_choice")),
            pl.when(extra.is_not_null() & (extra != "{}"))
            .then(pl.concat_str(lit(","), extra.str.slice(1, extra.str.len_chars() - 2)))
            .otherwise(lit("")),
            lit("}"),
        ).alias("record")
    )  # fmt: skip
    out = record["record"].to_arrow()
    clock("records")
    return out
