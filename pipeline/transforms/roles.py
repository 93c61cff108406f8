"""Role swap and the synthetic-user view (Kiln semantics), as list expressions over ``items``.

``role_swap`` turns user messages into assistant messages and back, in order, never merging runs
of the same role. Only text messages can be swapped: any other role (system, developer, tool), any
other item kind (tool calls and outputs, reasoning) and any non-text content fails the record
(``role_swap: unsupported role 'tool' at item 4``), or with ``on_unsupported='drop'`` the item is
dropped and its reason listed in ``role_swap_dropped``.

=========  =========  ===================
role       becomes    text blocks
=========  =========  ===================
user       assistant  input_text -> output_text
assistant  user       output_text -> input_text
=========  =========  ===================
"""

from __future__ import annotations

import polars as pl

from pipeline.transforms._items import (
    ASSISTANT,
    ERROR,
    ITEMS_DTYPE,
    TEXT_BLOCK_TYPES,
    USER,
    field,
    insert_at,
    insert_section,
    items_form_after,
    new_message,
    next_group,
    request_only,
    text,
)

_SWAPPABLE = (USER, ASSISTANT)


def swap_error(prefix: str) -> pl.Expr:
    """Inside ``list.eval``: why item ``i`` cannot be swapped (null when it can)."""
    role, kind, form = field("role"), field("type"), field("content_form")
    idx = pl.int_range(pl.len())
    bad_block = (
        field("content")
        .list.eval(
            pl.element()
            .struct.field("type")
            .filter(pl.element().struct.field("type").is_not_null())
            .filter(~pl.element().struct.field("type").is_in(TEXT_BLOCK_TYPES))
        )
        .list.first()
    )
    return (
        pl.when(role.is_not_null() & ~role.is_in(_SWAPPABLE))
        .then(pl.format(prefix + ": unsupported role '{}' at item {}", role, idx))
        .when(kind != "message")
        .then(pl.format(prefix + ": unsupported item type '{}' at item {}", kind, idx))
        .when(form.is_in(("null", "absent")))
        .then(pl.format(prefix + ": non-text content ({}) at item {}", form, idx))
        .when(bad_block.is_not_null())
        .then(pl.format(prefix + ": non-text content '{}' at item {}", bad_block, idx))
        .otherwise(pl.lit(None, pl.String))
    )


def swapped_item() -> pl.Expr:
    """Inside ``list.eval``: the item with user and assistant exchanged (text block kinds follow)."""
    e = pl.element()
    role = field("role")
    new_role = pl.when(role == USER).then(pl.lit(ASSISTANT)).when(role == ASSISTANT).then(pl.lit(USER))
    blocks = field("content").list.eval(
        pl.element().struct.with_fields(
            pl.when(pl.element().struct.field("type") == "input_text")
            .then(pl.lit("output_text"))
            .when(pl.element().struct.field("type") == "output_text")
            .then(pl.lit("input_text"))
            .otherwise(pl.element().struct.field("type"))
            .alias("type")
        )
    )
    return e.struct.with_fields(new_role.otherwise(role).alias("role"), blocks.alias("content"))


def first_error(errors: pl.Expr) -> pl.Expr:
    """The first non-null entry of a list of per-item errors."""
    return errors.list.drop_nulls().list.first()


def role_swap(
    frame: pl.DataFrame | pl.LazyFrame, on_unsupported: str = "reject"
) -> pl.DataFrame | pl.LazyFrame:
    """Swap user and assistant message roles in every conversation.

    >>> from pipeline.formats import decode_records
    >>> t = decode_records([{"messages": [{"role": "user", "content": "hi"},
    ...                                   {"role": "assistant", "content": "yo"}]}], "chat").table
    >>> out = role_swap(pl.from_arrow(t))
    >>> out["items"].list.eval(pl.element().struct.field("role")).to_list()
    [['assistant', 'user']]
    """
    items = pl.col("items").fill_null(pl.lit([], ITEMS_DTYPE))
    errors = items.list.eval(swap_error("role_swap"))
    swapped = pl.col("items").list.eval(swapped_item())
    if on_unsupported == "drop":
        keep = pl.col("items").list.eval(swap_error("role_swap").is_null())
        kept = pl.col("items").list.gather(keep.list.eval(pl.element().arg_true())).list.eval(swapped_item())
        return frame.with_columns(
            kept.cast(ITEMS_DTYPE).alias("items"),
            errors.list.drop_nulls().alias("role_swap_dropped"),
            items_form_after(pl.col("items").list.len() > 0),
        )
    return frame.with_columns(
        swapped.cast(ITEMS_DTYPE).alias("items"),
        first_error(errors).alias(ERROR),
        items_form_after(pl.col("items").list.len() > 0),
    )


def synthetic_user_view(
    frame: pl.DataFrame | pl.LazyFrame,
    visible_roles: tuple[str, ...] = (USER, ASSISTANT),
    persona: str | None = None,
) -> pl.DataFrame | pl.LazyFrame:
    """The messages a synthetic-user model sees: the visible text turns, swapped, persona first.

    Keeps message items whose role is visible (default user and assistant), drops assistant
    messages without text (tool dispatch only: their calls and the tool outputs are not visible),
    requires the view to end on an assistant message, then swaps roles as :func:`role_swap`.
    Errors name the item index in the original conversation.
    """
    items = pl.col("items").fill_null(pl.lit([], ITEMS_DTYPE))
    visible = (field("type") == "message") & field("role").is_in(list(visible_roles))
    keep_expr = visible & ~((field("role") == ASSISTANT) & (text() == ""))
    keep = items.list.eval(keep_expr)
    kept_idx = keep.list.eval(pl.element().arg_true())
    errors = items.list.eval(pl.when(keep_expr).then(swap_error("synthetic_user_view")))
    view = items.list.gather(kept_idx)
    last_role = view.list.last().struct.field("role")
    end_error = (
        pl.when(last_role.is_null())
        .then(pl.lit("synthetic_user_view: conversation must end on an assistant turn (nothing visible)"))
        .when(last_role != ASSISTANT)
        .then(
            pl.format(
                "synthetic_user_view: conversation must end on an assistant turn (ends on '{}')", last_role
            )
        )
    )
    error = pl.coalesce(first_error(errors), end_error)
    out = frame.with_columns(
        view.list.eval(swapped_item()).cast(ITEMS_DTYPE).alias("items"),
        error.alias(ERROR),
        items_form_after(pl.lit(True)),
    )
    if persona is not None:
        msg = new_message(
            section=insert_section(),
            group=next_group(),
            part=None,
            role="system",
            text_=persona,
            block_type=None,
        )
        out = out.with_columns(
            insert_at(pl.lit(0), msg).alias("items"),
            pl.coalesce(pl.col(ERROR), request_only("synthetic_user_view")).alias(ERROR),
        )
    return out
