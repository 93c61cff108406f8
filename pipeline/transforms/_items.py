"""Expressions over the canonical ``items`` list that every transform shares.

Item labels (which side of the conversation an item belongs to), item text, the explode/regroup pair
used by transforms that need per-conversation windows, and the constructor for inserted items.
Everything here is a Polars expression or frame operation: no per-row Python.
"""

from __future__ import annotations

import polars as pl

from pipeline.schema import CONVERSATION_SCHEMA

ROW = "__row"  # row index of the conversation, added while a transform needs to regroup items
IDX = "__idx"  # index of the item inside its conversation
IT = "__it"  # the item struct in the exploded (one row per item) frame
ERROR = "__error"  # per-record error message; apply_steps splits rows where it is set

ITEMS_DTYPE: pl.List = pl.from_arrow(CONVERSATION_SCHEMA.empty_table()).schema["items"]  # type: ignore[assignment]
ITEM_DTYPE: pl.Struct = ITEMS_DTYPE.inner  # type: ignore[assignment]
BLOCKS_DTYPE: pl.List = dict(ITEM_DTYPE.to_schema())["content"]  # type: ignore[assignment]

# Labels of the turn view. An item with no label (compaction, item_reference, unknown kinds) belongs
# to no turn and does not split a run.
USER, ASSISTANT, TOOL, SYSTEM = "user", "assistant", "tool", "system"
TOOL_OUTPUT_KINDS = ("function_call_output", "custom_tool_call_output")
ASSISTANT_KINDS = ("reasoning", "function_call", "custom_tool_call", "server_tool_use")
CALL_KINDS = ("function_call", "custom_tool_call")
SYSTEM_ROLES = ("system", "developer")
TEXT_BLOCK_TYPES = ("text", "input_text", "output_text")


def field(name: str, item: pl.Expr | None = None) -> pl.Expr:
    """A field of the item struct (``pl.element()`` inside ``list.eval``, else ``item``)."""
    return (pl.element() if item is None else item).struct.field(name)


def is_tool_output(item: pl.Expr | None = None) -> pl.Expr:
    return tool_output_kind(field("type", item))


def tool_output_kind(t: pl.Expr) -> pl.Expr:
    """Whether an item kind (``type``) is a tool output."""
    return t.is_in(TOOL_OUTPUT_KINDS) | t.str.ends_with("_call_output")


def is_message(item: pl.Expr | None = None) -> pl.Expr:
    return field("type", item) == "message"


def label(item: pl.Expr | None = None) -> pl.Expr:
    """``user`` / ``assistant`` / ``tool`` / ``system`` or null, by item kind first, then role.

    Tool outputs are ``tool`` whatever their role (Anthropic tool_result blocks sit in user
    messages); reasoning, calls (any ``*_call``) and Anthropic server blocks are ``assistant``.
    """
    return label_of(field("type", item), field("role", item))


# label codes (UInt8) of label_code_of: the index into LABELS
LABELS = (USER, ASSISTANT, TOOL, SYSTEM)


def label_of(t: pl.Expr, role: pl.Expr) -> pl.Expr:
    """:func:`label` from the item's ``type`` and ``role`` (columns of a flat item frame).

    ========================  =========  =========
    type                      role       label
    ========================  =========  =========
    function_call_output      user       tool
    message                   developer  system
    reasoning                 null       assistant
    compaction                null       null
    ========================  =========  =========
    """
    code = label_code_of(t, role)
    out = pl.lit(None, pl.String)
    for i, name in reversed(list(enumerate(LABELS))):
        out = pl.when(code == i).then(pl.lit(name)).otherwise(out)
    return out


def label_code_of(t: pl.Expr, role: pl.Expr) -> pl.Expr:
    """:func:`label_of` as a small integer (the index into :data:`LABELS`), cheaper to compare."""
    user, assistant, tool, system = range(len(LABELS))
    return (
        pl.when(tool_output_kind(t))
        .then(tool)
        .when(t == "message")
        .then(
            pl.when(role == USER)
            .then(user)
            .when(role == ASSISTANT)
            .then(assistant)
            .when(role.is_in(SYSTEM_ROLES))
            .then(system)
        )
        .when(t.is_in(ASSISTANT_KINDS) | t.str.ends_with("_call") | t.str.ends_with("_tool_result"))
        .then(assistant)
        .cast(pl.UInt8)
    )


def text(item: pl.Expr | None = None) -> pl.Expr:
    """The visible text of a message or tool output: its blocks' texts joined with ``\\n``.

    Other kinds (reasoning, calls, ...) have the empty string, so turn previews show what a reader
    of the conversation sees.
    """
    joined = (
        field("content", item)
        .list.eval(pl.element().struct.field("text"))
        .list.drop_nulls()
        .list.join("\n")
        .fill_null("")
    )
    return pl.when(is_message(item) | is_tool_output(item)).then(joined).otherwise(pl.lit(""))


def explode_items(frame: pl.DataFrame | pl.LazyFrame, *extra: str) -> pl.DataFrame | pl.LazyFrame:
    """One row per item: ``__row`` (conversation), ``__idx`` (item index), ``__it`` (the item).

    ``frame`` must carry ``__row``. Conversations with no items produce no rows.
    """
    return (
        frame.select(
            pl.col(ROW),
            *extra,
            pl.col("items").alias(IT),
            pl.col("items").list.eval(pl.int_range(pl.len(), dtype=pl.Int32)).alias(IDX),
        )
        .filter(pl.col(IT).list.len() > 0)
        .explode([IT, IDX])
    )


def with_row(frame: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame | pl.LazyFrame:
    return frame.with_row_index(ROW)


def regroup_items(
    frame: pl.DataFrame | pl.LazyFrame, long: pl.DataFrame | pl.LazyFrame
) -> pl.DataFrame | pl.LazyFrame:
    """Put the (filtered, reordered) exploded items back as each conversation's ``items`` list.

    ``long`` holds ``__row`` and ``__it`` in the wanted order; a conversation whose items were all
    removed gets ``[]`` (a null ``items`` stays null).
    """
    agg = long.group_by(ROW, maintain_order=True).agg(pl.col(IT).alias("__items"))
    out = frame.join(agg, on=ROW, how="left", maintain_order="left")
    items = (
        pl.when(pl.col("items").is_null())
        .then(pl.col("items"))
        .otherwise(pl.col("__items").fill_null(pl.lit([], ITEMS_DTYPE)))
    )
    return out.with_columns(items.cast(ITEMS_DTYPE).alias("items")).drop("__items")


def block(type_: pl.Expr | str | None, text_: pl.Expr | str) -> pl.Expr:
    """A content block struct with only ``type`` and ``text`` set."""
    t = pl.lit(type_, pl.String) if not isinstance(type_, pl.Expr) else type_.cast(pl.String)
    x = pl.lit(text_, pl.String) if not isinstance(text_, pl.Expr) else text_.cast(pl.String)
    return pl.struct(
        t.alias("type"),
        x.alias("text"),
        *(
            pl.lit(None, pl.String).alias(n)
            for n in ("annotations", "logprobs", "cache_control", "citations")
        ),
        pl.lit(None, pl.String).alias("extra_json"),
        pl.lit(None, pl.List(pl.String)).alias("null_fields"),
    )


def new_message(
    *,
    section: pl.Expr,
    group: pl.Expr,
    part: pl.Expr | None,
    role: pl.Expr | str,
    text_: pl.Expr | str,
    block_type: pl.Expr | str | None,
) -> pl.Expr:
    """A new message item with null id, as a decoder would build it from ``{"role", "content"}``.

    ``block_type`` None gives string content (``content_form = 'string'``, one untyped block), a
    type gives a one-block parts list.
    """
    content_form = pl.lit("string" if block_type is None else "parts")
    values: dict[str, pl.Expr] = {
        "section": section,
        "group": group,
        "part": part if part is not None else pl.lit(None, pl.Int32),
        "type": pl.lit("message"),
        "role": pl.lit(role) if isinstance(role, str) else role,
        "content_form": content_form,
        "content": pl.concat_list(block(block_type, text_)),
    }
    fields = []
    for name, dtype in ITEM_DTYPE.to_schema().items():
        expr = values.get(name, pl.lit(None, dtype))
        fields.append(expr.cast(dtype).alias(name))
    return pl.struct(fields)


def insert_section() -> pl.Expr:
    """Section of an item inserted into a request's conversation (``input`` for Responses)."""
    return pl.when(pl.col("source_format") == "responses").then(pl.lit("input")).otherwise(pl.lit("messages"))


def next_group() -> pl.Expr:
    """A group number no item of the conversation uses, so an inserted item is its own message."""
    return (pl.col("items").list.eval(pl.element().struct.field("group")).list.max().fill_null(-1) + 1).cast(
        pl.Int32
    )


def insert_at(position: pl.Expr, item: pl.Expr) -> pl.Expr:
    """``items`` with ``item`` inserted before index ``position`` (clamped to the list)."""
    items = pl.col("items").fill_null(pl.lit([], ITEMS_DTYPE))
    return pl.concat_list(items.list.head(position), pl.concat_list(item), items.list.slice(position)).cast(
        ITEMS_DTYPE
    )


def request_only(step: str) -> pl.Expr:
    """Error for steps that add messages: response objects hold one reply, not a conversation."""
    return (
        pl.when(pl.col("record_kind") == "response")
        .then(pl.lit(f"{step}: response objects hold one reply, not a conversation to insert into"))
        .otherwise(pl.lit(None, pl.String))
    )


def items_form_after(changed: pl.Expr) -> pl.Expr:
    """``items_form`` once the items changed: the Responses ``input`` string shorthand holds exactly
    one user message, so any edit makes the input a list (``parts``)."""
    return (
        pl.when(changed & (pl.col("items_form") == "string"))
        .then(pl.lit("parts"))
        .otherwise(pl.col("items_form"))
        .alias("items_form")
    )
