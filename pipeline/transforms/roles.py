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
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.transforms._flat import (
    Flat,
    Frame,
    arrow,
    child,
    eager,
    gather,
    regroup,
    run_starts,
    scatter,
    series,
    split,
    with_children,
)
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
    return swap_error_of(
        prefix, field("role"), field("type"), field("content_form"), bad_block, pl.int_range(pl.len())
    )


# why an item cannot be swapped, by :func:`swap_case`: (message head, message tail)
_CASES = (
    ("unsupported role '", "' at item "),  # the value is the role
    ("unsupported item type '", "' at item "),  # the item kind
    ("non-text content (", ") at item "),  # the content_form
    ("non-text content '", "' at item "),  # the first non-text block's type
)


def swap_case(role: pl.Expr, kind: pl.Expr, form: pl.Expr, bad_block: pl.Expr) -> pl.Expr:
    """Which of the :data:`_CASES` keeps an item from being swapped (UInt8), null when it can be."""
    return (
        pl.when(role.is_not_null() & ~role.is_in(_SWAPPABLE))
        .then(0)
        .when(kind != "message")
        .then(1)
        .when(form.is_in(("null", "absent")))
        .then(2)
        .when(bad_block.is_not_null())
        .then(3)
        .cast(pl.UInt8)
    )


def swap_error_of(
    prefix: str, role: pl.Expr, kind: pl.Expr, form: pl.Expr, bad_block: pl.Expr, idx: pl.Expr
) -> pl.Expr:
    """Why an item cannot be swapped (null when it can), from its role, kind, ``content_form``, the
    type of its first non-text block and its index in the conversation.

    ======  =========  =====  ==========  ===================================================
    role    kind       form   bad block   error
    ======  =========  =====  ==========  ===================================================
    user    message    parts  null        null
    tool    message    parts  null        ``role_swap: unsupported role 'tool' at item 3``
    null    reasoning  null   null        ``role_swap: unsupported item type 'reasoning' at item 3``
    user    message    null   null        ``role_swap: non-text content (null) at item 3``
    user    message    parts  input_file  ``role_swap: non-text content 'input_file' at item 3``
    ======  =========  =====  ==========  ===================================================
    """
    case = swap_case(role, kind, form, bad_block)
    head = tail = pl.lit(None, pl.String)
    for i, (h, t) in reversed(list(enumerate(_CASES))):
        head = pl.when(case == i).then(pl.lit(f"{prefix}: {h}")).otherwise(head)
        tail = pl.when(case == i).then(pl.lit(t)).otherwise(tail)
    value = (
        pl.when(case == 0)
        .then(role)
        .when(case == 1)
        .then(kind)
        .when(case == 2)
        .then(form)
        .otherwise(bad_block)
    )
    return pl.concat_str(head, value, tail, idx.cast(pl.String))


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


def swapped(items: pa.Array) -> pa.StructArray:
    """Flat item structs with user and assistant exchanged and text block kinds flipped to match.

    Only the ``role`` child and the content blocks' ``type`` child are new; every other child
    (texts, ids, nested lists) is the input's buffers, re-wrapped.
    """
    role = child(items, "role")
    new_role = pl.select(
        pl.when(role == USER)
        .then(pl.lit(ASSISTANT))
        .when(role == ASSISTANT)
        .then(pl.lit(USER))
        .otherwise(role)
    ).to_series()
    content = split(pc.struct_field(items, "content"))
    kind = child(content.values, "type")
    new_kind = pl.select(
        pl.when(kind == "input_text")
        .then(pl.lit("output_text"))
        .when(kind == "output_text")
        .then(pl.lit("input_text"))
        .otherwise(kind)
    ).to_series()
    blocks = with_children(content.values, {"type": arrow(new_kind)})
    return with_children(items, {"role": arrow(new_role), "content": content.rewrap(blocks)})


def swap_errors(flat: Flat, parent: pl.Series, prefix: str) -> tuple[pl.Series, pl.Series]:
    """``(at, errors)``: the flat positions of the items that cannot be swapped, and why (see
    :func:`swap_error_of`); messages are built for those items only."""
    items = flat.values
    content = split(pc.struct_field(items, "content"))
    kind = child(content.values, "type")
    blocks_at = (kind.is_not_null() & ~kind.is_in(TEXT_BLOCK_TYPES)).arg_true()
    owner = content.parent().gather(blocks_at)
    first = run_starts(owner)  # blocks are in item order: the first bad block of each item
    bad_block = scatter(len(items), owner.filter(first), kind.gather(blocks_at).filter(first), pl.String)
    cols = [child(items, "role"), child(items, "type"), child(items, "content_form"), bad_block.alias("bad")]
    case = pl.DataFrame(cols).select(swap_case(*(pl.col(c.name) for c in cols))).to_series()
    at = case.is_not_null().arg_true()
    code = case.gather(at).cast(pl.Int64)
    # the same message as swap_error_of, built once per distinct (case, value, item index): a few
    # item kinds at small indices repeat over millions of dropped items, so the messages are
    # formatted for the distinct keys only and every item takes its message by a lookup
    value = pl.concat(cols).gather(code * len(items) + at)
    idx = flat.index(parent, at).cast(pl.Int64)
    vid = value.cast(pl.Categorical).to_physical().cast(pl.Int64).fill_null(-1) + 1
    n_idx, n_vid = int(idx.max() or 0) + 1, int(vid.max() or 0) + 1  # type: ignore[arg-type]
    key = (code * n_vid + vid) * n_idx + idx
    firsts = key.arg_unique()
    parts = pl.DataFrame(
        [
            pl.Series([f"{prefix}: {h}" for h, _ in _CASES]).gather(code.gather(firsts)).alias("h"),
            value.gather(firsts).alias("v"),
            pl.Series([t for _, t in _CASES]).gather(code.gather(firsts)).alias("t"),
            idx.gather(firsts).cast(pl.String).alias("i"),
        ]
    )
    messages = parts.select(pl.concat_str("h", "v", "t", "i")).to_series()
    where = _positions(key.gather(firsts), key, len(_CASES) * n_vid * n_idx)
    return at, messages.gather(where).alias("error")


def _positions(distinct: pl.Series, keys: pl.Series, key_space: int) -> pl.Series:
    """For each of ``keys`` (Int64 in ``[0, key_space)``), its position in ``distinct`` (which holds
    each of them once): a dense table when the key space is small, a sorted search otherwise."""
    if key_space <= 4 * len(keys) + 1024:
        table = scatter(key_space, distinct, pl.int_range(0, len(distinct), eager=True), pl.Int64)
        return table.gather(keys)
    order = distinct.arg_sort()
    return order.gather(distinct.gather(order).search_sorted(keys))


def role_swap(frame: Frame, on_unsupported: str = "reject") -> Frame:
    """Swap user and assistant message roles in every conversation.

    >>> from pipeline.formats import decode_records
    >>> t = decode_records([{"messages": [{"role": "user", "content": "hi"},
    ...                                   {"role": "assistant", "content": "yo"}]}], "chat").table
    >>> out = role_swap(pl.from_arrow(t))
    >>> out["items"].list.eval(pl.element().struct.field("role")).to_list()
    [['assistant', 'user']]

    Computed on the flat items (see :mod:`pipeline.transforms._flat`): per-item errors as one
    column, then the kept items re-wrapped with new offsets (drop) or the original ones (reject).
    """
    return eager(frame, lambda df: _role_swap(df, on_unsupported))


def _role_swap(df: pl.DataFrame, on_unsupported: str) -> pl.DataFrame:
    flat = split(arrow(df.get_column("items")))
    parent = flat.parent()
    at, errors = swap_errors(flat, parent, "role_swap")
    form = df.select(items_form_after(pl.col("items").list.len() > 0)).to_series()
    if on_unsupported == "drop":
        drop = scatter(len(flat.values), at, pl.repeat(True, len(at), eager=True), pl.Boolean).fill_null(
            False
        )
        keep = ~drop
        kept = swapped(gather(flat.values, keep.arg_true()))
        items = regroup(kept, flat.kept_offsets(keep), flat.nulls)
        dropped = regroup(arrow(errors), flat.kept_offsets(drop))
        return df.with_columns(
            _items_series(items), series(dropped, "role_swap_dropped").cast(pl.List(pl.String)), form
        )
    rows = parent.gather(at)
    first = run_starts(rows)
    error = scatter(len(df), rows.filter(first), errors.filter(first), pl.String)
    return df.with_columns(_items_series(flat.rewrap(swapped(flat.values))), error.alias(ERROR), form)


def _items_series(items: pa.Array) -> pl.Series:
    s = series(items, "items")
    return s if s.dtype == ITEMS_DTYPE else s.cast(ITEMS_DTYPE)


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
