"""Which records of a target format break its acceptance rules (:mod:`pipeline.encoders.rules`).

:func:`violations` takes a canonical table of records *in the target's own format* (a file decoded
``--as`` that format, or a conversion's output decoded back) and returns one row per violation:
the record's row, the rule's id, a JSON pointer into the record and a short detail. It is columnar:
the items are flattened once (Arrow) and every rule is a Polars expression or join over them; the
tool lists (JSON text) are parsed by Polars with a fixed shape, per record only when a row's
``tools`` does not have that shape.

>>> from pipeline.formats import decode_records
>>> t = decode_records([{"messages": []}, {"messages": [{"role": "user", "content": "hi"}],
...                      "tool_choice": "auto"}], "chat").table
>>> violations(t, "chat").to_dicts()  # doctest: +NORMALIZE_WHITESPACE
[{'row': 0, 'rule': 'chat.messages_nonempty', 'path': '/messages', 'detail': 'no messages'},
 {'row': 1, 'rule': 'chat.tool_choice_needs_tools', 'path': '/tool_choice', 'detail': 'no tools'}]
"""

from __future__ import annotations

import numpy as np
import orjson
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.arrays import one_array
from pipeline.encoders.pointers import any_item_pointer
from pipeline.encoders.rules import NAME_PATTERN, RULE, rules_of

CALLS = ("function_call", "custom_tool_call")
OUTPUTS = ("function_call_output", "custom_tool_call_output")
VIOLATIONS = {"row": pl.Int64, "rule": pl.String, "path": pl.String, "detail": pl.String}
_ITEM_FIELDS = ("section", "group", "part", "type", "role", "call_id", "name", "namespace", "content_form")


def empty() -> pl.DataFrame:
    """No violations (the frame :func:`violations` returns)."""
    return pl.DataFrame(schema=VIOLATIONS)


def flat_items(table: pa.Table, fields: tuple[str, ...] = _ITEM_FIELDS) -> pl.DataFrame:
    """Every item of every row, one row each: ``row``, ``pos`` (its index in the record), the record's
    ``source_format`` and ``items_form``, ``fields`` of the item and ``n_blocks`` (its content
    blocks; null when it has no content list). Zero-copy views of the Arrow columns where it can."""
    items = one_array(table.column("items"))
    flat = items.flatten()
    parent = pc.list_parent_indices(items).to_numpy()
    offsets = items.offsets.to_numpy()
    pos = np.arange(len(flat), dtype=np.int64) + offsets[0] - offsets[:-1][parent]
    take = pa.array(parent)
    cols = {
        "row": pa.array(parent.astype(np.int64)),
        "pos": pa.array(pos),
        "source_format": one_array(table.column("source_format")).take(take),
        "items_form": one_array(table.column("items_form")).take(take),
        **{f: flat.field(f) for f in fields},
        "n_blocks": pc.list_value_length(flat.field("content")),
    }
    df = pl.from_arrow(pa.table(cols))
    assert isinstance(df, pl.DataFrame)
    return df


def _tool_names(tools: pa.Array, target: str) -> pl.DataFrame:
    """``row``, ``k`` (index in ``tools``) and ``name`` of every named tool of each row's ``tools``
    JSON text, where the target keeps a function's name (Chat: ``function.name``; Responses and
    Anthropic: ``name``)."""
    s = pl.Series("tools", tools)
    chat = target in ("chat", "hf")
    shape = pl.List(pl.Struct({"function": pl.Struct({"name": pl.String})} if chat else {"name": pl.String}))
    try:
        parsed = s.str.json_decode(shape)
    except pl.exceptions.PolarsError:  # a row whose tools are not a list of objects: each on its own
        parsed = pl.Series("tools", [_names_of(t, chat) for t in s.to_list()], dtype=shape)
    df = pl.DataFrame({"row": pl.int_range(len(s), eager=True, dtype=pl.Int64), "tools": parsed})
    df = (
        df.filter(pl.col("tools").list.len() > 0)
        .with_columns(pl.int_ranges(pl.col("tools").list.len()).alias("k"))
        .explode("tools", "k")
    )
    name = (
        pl.col("tools").struct.field("function").struct.field("name")
        if chat
        else pl.col("tools").struct.field("name")
    )
    return df.select("row", pl.col("k").cast(pl.Int64), name.alias("name")).filter(
        pl.col("name").is_not_null()
    )


def _names_of(text: str | None, chat: bool) -> list[dict] | None:
    """:func:`_tool_names`' shape for one ``tools`` text that Polars could not read as a whole."""
    try:
        tools = orjson.loads(text) if text is not None else None
    except orjson.JSONDecodeError:
        return None
    out = []
    for t in tools if isinstance(tools, list) else []:
        inner = t.get("function") if chat and isinstance(t, dict) else t
        name = inner.get("name") if isinstance(inner, dict) else None
        n = name if isinstance(name, str) else None
        out.append({"function": {"name": n}} if chat else {"name": n})
    return out


def _quoted(value: pl.Expr) -> pl.Expr:
    """An id in a detail: ``'c1'``, or ``(no id)`` when null."""
    return pl.concat_str(pl.lit("'"), value, pl.lit("'")).fill_null("(no id)")


def _v(df: pl.DataFrame, rule: str, path: pl.Expr, detail: pl.Expr) -> pl.DataFrame:
    assert rule in RULE, rule
    return df.select(
        pl.col("row").cast(pl.Int64), pl.lit(rule).alias("rule"), path.alias("path"), detail.alias("detail")
    )


def _messages(items: pl.DataFrame) -> pl.DataFrame:
    """One row per native message of a Chat / HF / Anthropic record: ``row``, ``group`` (its index),
    ``role`` and ``tool`` (a Chat tool message)."""
    return (
        items.group_by("row", "group", maintain_order=True)
        .agg(pl.col("role").drop_nulls().first(), (pl.col("type").first().is_in(OUTPUTS)).alias("tool"))
        .sort("row", "group")
    )


def _chat_order(items: pl.DataFrame, target: str) -> list[pl.DataFrame]:
    """Chat / HF: the tool messages right after an assistant message answer its calls, all of them."""
    out = []
    msgs = _messages(items).with_columns(
        # the next message that is not a tool message (null: none), and the last one before
        pl.when(~pl.col("tool"))
        .then(pl.col("group"))
        .shift(-1)
        .backward_fill()
        .over("row")
        .alias("next_other"),
        pl.when(~pl.col("tool")).then(pl.col("group")).forward_fill().over("row").alias("prev_other"),
    )
    calls = items.filter(pl.col("type").is_in(CALLS)).join(
        msgs.select("row", "group", "next_other"), on=["row", "group"], how="left"
    )
    outputs = items.filter(pl.col("type").is_in(OUTPUTS)).join(
        msgs.select("row", "group", "prev_other"), on=["row", "group"], how="left"
    )
    if target == "hf":  # TRL rows may leave ids out: the tool messages right after are counted
        ncalls = calls.group_by("row", "group").agg(
            pl.len().alias("calls"), pl.col("pos").first(), pl.col("next_other").first()
        )
        nout = outputs.group_by("row", "prev_other").agg(pl.len().alias("answers"))
        bad = ncalls.join(nout, left_on=["row", "group"], right_on=["row", "prev_other"], how="left").filter(
            pl.col("answers").fill_null(0) != pl.col("calls")
        )
        first = items.join(bad.select("row", "pos"), on=["row", "pos"])
        return [
            _v(
                first,
                "hf.tool_results_follow_call",
                any_item_pointer(),
                pl.lit("the tool messages right after do not answer every call"),
            )
        ]
    # a call is answered when an output with its id sits in the tool messages right after its message
    answered = (
        calls.join(
            outputs.select("row", "call_id", pl.col("group").alias("out_group")),
            on=["row", "call_id"],
            how="left",
        )
        .with_columns(
            (
                (pl.col("out_group") > pl.col("group"))
                & (pl.col("next_other").is_null() | (pl.col("out_group") < pl.col("next_other")))
            ).alias("here")
        )
        .group_by("row", "pos", maintain_order=True)
        .agg(
            pl.col("here").fill_null(False).any(),
            pl.col("out_group").is_not_null().any().alias("anywhere"),
            *(
                pl.col(c).first()
                for c in ("source_format", "items_form", "section", "group", "part", "call_id")
            ),
        )
    )
    late = answered.filter(~pl.col("here") & pl.col("anywhere"))
    out.append(
        _v(
            late,
            "chat.tool_results_follow_call",
            any_item_pointer(),
            pl.concat_str(pl.lit("another message comes before the result of "), _quoted(pl.col("call_id"))),
        )
    )
    never = answered.filter(~pl.col("anywhere"))
    out.append(
        _v(
            never,
            "chat.tool_calls_answered",
            any_item_pointer(),
            pl.concat_str(pl.lit("no tool message answers "), _quoted(pl.col("call_id"))),
        )
    )
    # an output answers a call of the last message before its run of tool messages
    has_call = outputs.join(
        calls.select("row", "call_id", pl.col("group").alias("call_group"), pl.lit(True).alias("ok")),
        left_on=["row", "call_id", "prev_other"],
        right_on=["row", "call_id", "call_group"],
        how="left",
    )
    orphan = has_call.filter(pl.col("ok").is_null())
    out.append(
        _v(
            orphan,
            "chat.tool_result_has_call",
            any_item_pointer(),
            pl.concat_str(pl.lit("no call before answers to "), _quoted(pl.col("call_id"))),
        )
    )
    return out


def _anthropic(items: pl.DataFrame, table: pa.Table) -> list[pl.DataFrame]:
    out = []
    msgs = _messages(items)
    first = msgs.group_by("row", maintain_order=True).first().filter(pl.col("role") != "user")
    out.append(
        _v(
            first,
            "anthropic.first_message_user",
            pl.concat_str(pl.lit("/messages/"), pl.col("group").cast(pl.String)),
            pl.concat_str(pl.lit("the first message is "), pl.col("role")),
        )
    )
    same = msgs.filter(
        (pl.col("role") == pl.col("role").shift(1).over("row")) & (pl.col("row") == pl.col("row").shift(1))
    )
    out.append(
        _v(
            same,
            "anthropic.roles_alternate",
            pl.concat_str(pl.lit("/messages/"), pl.col("group").cast(pl.String)),
            pl.concat_str(pl.lit("a second "), pl.col("role"), pl.lit(" message in a row")),
        )
    )
    calls = items.filter(pl.col("type").is_in(CALLS))
    results = items.filter(pl.col("type").is_in(OUTPUTS))
    nxt = calls.join(
        results.select("row", "call_id", pl.col("group").alias("rg"), pl.lit(True).alias("ok")),
        left_on=["row", "call_id", pl.col("group") + 1],
        right_on=["row", "call_id", "rg"],
        how="left",
    ).unique(["row", "pos"], maintain_order=True)
    out.append(
        _v(
            nxt.filter(pl.col("ok").is_null()),
            "anthropic.tool_result_next",
            any_item_pointer(),
            pl.concat_str(
                pl.lit("no tool_result for "),
                _quoted(pl.col("call_id")),
                pl.lit(" in the next message"),
            ),
        )
    )
    prev = results.join(
        calls.select("row", "call_id", pl.col("group").alias("cg"), pl.lit(True).alias("ok")),
        left_on=["row", "call_id", pl.col("group") - 1],
        right_on=["row", "call_id", "cg"],
        how="left",
    ).unique(["row", "pos"], maintain_order=True)
    out.append(
        _v(
            prev.filter(pl.col("ok").is_null()),
            "anthropic.tool_result_has_call",
            any_item_pointer(),
            pl.concat_str(
                pl.lit("no tool_use "),
                _quoted(pl.col("call_id")),
                pl.lit(" in the previous message"),
            ),
        )
    )
    # tool_result blocks first: a non-result block of a message before one of its results
    order = (
        items.group_by("row", "group", maintain_order=True)
        .agg(
            pl.col("part").filter(~pl.col("type").is_in(OUTPUTS)).min().alias("other"),
            pl.col("part").filter(pl.col("type").is_in(OUTPUTS)).max().alias("last_result"),
        )
        .filter(pl.col("other") < pl.col("last_result"))
    )
    out.append(
        _v(
            order,
            "anthropic.tool_result_first",
            pl.concat_str(
                pl.lit("/messages/"),
                pl.col("group").cast(pl.String),
                pl.lit("/content/"),
                pl.col("other").cast(pl.String),
            ),
            pl.lit("a block comes before the message's tool_result blocks"),
        )
    )
    # empty content: a message whose only item has no text (a string "" or an empty block list)
    last_group = msgs.group_by("row").agg(pl.col("group").max().alias("last"))
    empty = (
        items.group_by("row", "group", maintain_order=True)
        .agg(
            pl.len().alias("n"),
            pl.col("n_blocks").first(),
            pl.col("content_form").first(),
            pl.col("role").first(),
            pl.col("type").first(),
            pl.col("empty_text").first().alias("blank"),
        )
        .join(last_group, on="row")
        .filter(
            (pl.col("n") == 1)
            & (pl.col("type") == "message")
            & (
                ((pl.col("content_form") == "parts") & (pl.col("n_blocks") == 0))
                | pl.col("blank").fill_null(False)
            )
            & ~((pl.col("role") == "assistant") & (pl.col("group") == pl.col("last")))
        )
    )
    out.append(
        _v(
            empty,
            "anthropic.content_nonempty",
            pl.concat_str(pl.lit("/messages/"), pl.col("group").cast(pl.String), pl.lit("/content")),
            pl.lit("empty content"),
        )
    )
    return out


def _names(items: pl.DataFrame, table: pa.Table, target: str) -> list[pl.DataFrame]:
    rule = f"{target}.tool_name"
    names = _tool_names(one_array(table.column("tools")), target)
    key = "function/name" if target in ("chat", "hf") else "name"
    bad_tools = names.filter(~pl.col("name").str.contains(NAME_PATTERN))
    calls = items.filter(
        pl.col("type").is_in(CALLS)
        & pl.col("name").is_not_null()
        & ~pl.col("name").str.contains(NAME_PATTERN)
    )
    return [
        _v(
            bad_tools,
            rule,
            pl.concat_str(pl.lit("/tools/"), pl.col("k").cast(pl.String), pl.lit("/" + key)),
            pl.concat_str(pl.lit("'"), pl.col("name"), pl.lit("' does not match " + NAME_PATTERN)),
        ),
        _v(
            calls,
            rule,
            any_item_pointer(),
            pl.concat_str(pl.lit("'"), pl.col("name"), pl.lit("' does not match " + NAME_PATTERN)),
        ),
    ]


def _choice(table: pa.Table, target: str) -> list[pl.DataFrame]:
    """``tool_choice`` with no tools, or naming a tool the request does not declare."""
    df = pl.DataFrame(
        {"tool_choice": one_array(table.column("tool_choice")), "tools": one_array(table.column("tools"))}
    )
    df = df.with_row_index("row").filter(pl.col("tool_choice").is_not_null())
    if df.height == 0:
        return []
    names = (
        _tool_names(pa.array(df["tools"].to_list(), pa.string()), target)
        .join(
            df.select(
                pl.int_range(pl.len(), dtype=pl.Int64).alias("i"), pl.col("row").cast(pl.Int64).alias("r")
            ),
            left_on="row",
            right_on="i",
        )
        .select(pl.col("r").alias("row"), "name")
    )
    n_tools = pl.col("tools").str.json_decode(pl.List(pl.Struct({"type": pl.String}))).list.len()
    choice = pl.col("tool_choice")
    typ = choice.str.json_path_match("$.type")
    named = (
        choice.str.json_path_match("$.function.name")
        if target == "chat"
        else choice.str.json_path_match("$.name")
    )
    forcing = {
        "chat": pl.lit(True),  # any tool_choice, even "none"
        "responses": (choice == '"required"') | named.is_not_null(),
        "anthropic": typ.is_in(["any", "tool"]),
    }[target]
    try:
        df = df.with_columns(
            n_tools.fill_null(0).alias("n"), named.alias("named"), forcing.fill_null(False).alias("forcing")
        )
    except pl.exceptions.PolarsError:
        counts = [
            len(v) if isinstance(v, list) else 0
            for v in (orjson.loads(t) if t else None for t in df["tools"])
        ]
        df = df.with_columns(
            pl.Series("n", counts), named.alias("named"), forcing.fill_null(False).alias("forcing")
        )
    rule = "chat.tool_choice_needs_tools" if target == "chat" else f"{target}.tool_choice_declared"
    out = [
        _v(
            df.filter(pl.col("forcing") & (pl.col("n") == 0)),
            rule,
            pl.lit("/tool_choice"),
            pl.lit("no tools"),
        )
    ]
    declared = (
        df.filter(pl.col("named").is_not_null() & (pl.col("n") > 0))
        .join(
            names.with_columns(pl.lit(True).alias("ok")),
            left_on=["row", "named"],
            right_on=["row", "name"],
            how="left",
        )
        .filter(pl.col("ok").is_null())
    )
    rule = "chat.tool_choice_declared" if target == "chat" else f"{target}.tool_choice_declared"
    out.append(
        _v(
            declared,
            rule,
            pl.lit("/tool_choice"),
            pl.concat_str(pl.lit("names '"), pl.col("named"), pl.lit("', which tools does not declare")),
        )
    )
    return out


def _namespaced(tools: pa.Array) -> pl.DataFrame:
    """``row``, ``namespace``, ``name`` of the functions inside each row's Responses namespace tools."""
    shape = pl.List(
        pl.Struct({"type": pl.String, "name": pl.String, "tools": pl.List(pl.Struct({"name": pl.String}))})
    )
    s = pl.Series("tools", tools)
    try:
        parsed = s.str.json_decode(shape)
    except pl.exceptions.PolarsError:  # some row's tools have another shape: read each on its own
        parsed = pl.Series("tools", [_namespaces_of(t) for t in s.to_list()], dtype=shape)
    df = pl.DataFrame({"row": pl.int_range(len(s), eager=True, dtype=pl.Int64), "t": parsed}).explode("t")
    df = df.filter(pl.col("t").struct.field("type") == "namespace").select(
        "row",
        pl.col("t").struct.field("name").alias("namespace"),
        pl.col("t").struct.field("tools").alias("f"),
    )
    return df.explode("f").select("row", "namespace", pl.col("f").struct.field("name").alias("name"))


def _namespaces_of(text: str | None) -> list[dict] | None:
    """:func:`_namespaced`' shape for one ``tools`` text that Polars could not read as a whole."""
    try:
        tools = orjson.loads(text) if text is not None else None
    except orjson.JSONDecodeError:
        return None
    out = []
    for t in tools if isinstance(tools, list) else []:
        if isinstance(t, dict) and t.get("type") == "namespace" and isinstance(t.get("tools"), list):
            inner = [{"name": f.get("name") if isinstance(f.get("name"), str) else None}
                     for f in t["tools"] if isinstance(f, dict)]  # fmt: skip
            name = t.get("name") if isinstance(t.get("name"), str) else None
            out.append({"type": "namespace", "name": name, "tools": inner})
    return out


def _responses(items: pl.DataFrame, table: pa.Table) -> list[pl.DataFrame]:
    calls = items.filter(pl.col("type").is_in(CALLS))
    outputs = items.filter(pl.col("type").is_in(OUTPUTS))
    earlier = (
        outputs.join(
            calls.select("row", "call_id", pl.col("pos").alias("cpos")), on=["row", "call_id"], how="left"
        )
        .group_by("row", "pos", maintain_order=True)
        .agg(
            (pl.col("cpos") < pl.col("pos")).fill_null(False).any().alias("ok"),
            *(
                pl.col(c).first()
                for c in ("source_format", "items_form", "section", "group", "part", "call_id")
            ),
        )
    )
    out = [
        _v(
            earlier.filter(~pl.col("ok")),
            "responses.output_has_call",
            any_item_pointer(),
            pl.concat_str(pl.lit("no earlier call "), _quoted(pl.col("call_id"))),
        )
    ]
    # calls to undeclared functions (top level, or in their namespace), when the request declares any tool
    tools = one_array(table.column("tools"))
    declared_any = pl.DataFrame(
        {"row": np.arange(len(tools), dtype=np.int64), "any": pc.fill_null(pc.not_equal(tools, "[]"), False)}
    ).filter(pl.col("any"))
    fn_calls = items.filter(pl.col("type") == "function_call").join(declared_any.select("row"), on="row")
    if fn_calls.height:
        top = _tool_names(tools, "responses").select(
            "row", pl.lit(None, pl.String).alias("namespace"), "name"
        )
        names = pl.concat([top, _namespaced(tools)]).unique().with_columns(pl.lit(True).alias("ok"))
        undeclared = fn_calls.join(names, on=["row", "namespace", "name"], how="left", nulls_equal=True)
        out.append(
            _v(
                undeclared.filter(pl.col("ok").is_null()),
                "responses.calls_declared",
                any_item_pointer(),
                pl.concat_str(
                    pl.lit("calls '"), pl.col("name").fill_null(""), pl.lit("', which tools does not declare")
                ),
            )
        )
    return out


def violations(table: pa.Table, target: str) -> pl.DataFrame:
    """Every violation of ``target``'s rules in ``table`` (rows of that format): ``row``, ``rule``,
    ``path`` (JSON pointer into the record), ``detail``; by row, then in rule-table order. Response
    objects (``record_kind`` response) are not requests: they have none."""
    if not rules_of(target) or table.num_rows == 0:
        return empty()
    requests = pc.equal(one_array(table.column("record_kind")), "request")
    if not pc.all(requests).as_py():  # a response object is not a request: the rules are the request's
        keep = np.flatnonzero(requests.to_numpy(zero_copy_only=False))
        found = violations(table.take(pa.array(keep)), target)
        return found.with_columns(pl.lit(pl.Series(keep)).gather(pl.col("row")).cast(pl.Int64).alias("row"))
    fields = (*_ITEM_FIELDS, "content")
    items = flat_items(table, fields)
    # an empty string content (one block, type null, text ""), for the non-empty rules
    first_text = pl.col("content").list.first().struct.field("text")
    items = items.with_columns(
        ((pl.col("content_form") == "string") & (first_text.fill_null("") == "")).alias("empty_text")
    ).drop("content")
    n_items = pl.Series(one_array(table.column("n_items")))
    found: list[pl.DataFrame] = []
    rows = pl.DataFrame({"row": pl.int_range(table.num_rows, eager=True, dtype=pl.Int64), "n": n_items})
    if target in ("chat", "anthropic", "hf"):
        found.append(
            _v(
                rows.filter(pl.col("n") == 0),
                f"{target}.messages_nonempty",
                pl.lit("/messages"),
                pl.lit("no messages"),
            )
        )
    if target in ("chat", "hf"):
        found += _chat_order(items, target)
    if target == "chat":
        empty_list = items.filter(
            pl.col("type").is_in(("message", *OUTPUTS))
            & (pl.col("content_form") == "parts")
            & (pl.col("n_blocks") == 0)
        )
        found.append(
            _v(
                empty_list,
                "chat.content_nonempty",
                pl.concat_str(any_item_pointer(), pl.lit("/content")),
                pl.lit("an empty content list"),
            )
        )
    if target == "anthropic":
        found += _anthropic(items, table)
    if target == "responses":
        found += _responses(items, table)
    if target in ("chat", "responses", "anthropic", "hf"):
        found += _names(items, table, target)
    if target in ("chat", "responses", "anthropic"):
        found += _choice(table, target)
    order = {r.id: k for k, r in enumerate(rules_of(target))}
    out = (
        pl.concat([f for f in found if f.height], how="vertical") if any(f.height for f in found) else empty()
    )
    return (
        out.with_columns(pl.col("rule").replace_strict(order, return_dtype=pl.Int64).alias("_k"))
        .sort("row", "_k", "path", maintain_order=True)
        .drop("_k")
    )
