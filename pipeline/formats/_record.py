"""Top-level fields every format shares (model, tools, tool_choice, every other key) and the
``decode`` entry point each codec exposes.

A codec writes only a *walk*: ``walk(tb, rec)`` appends the record's instructions and items to
``tb`` and says how to close the row. :func:`make_decode` wraps it into the codec's public
``decode(tb, rec, *, conversation_id, source_file=None, source_line=None)``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pipeline.formats._build import TableBuilder, dumps

# Top-level keys stored in their own columns (everything else goes to extra_json).
_TOP_JSON = ("tools", "tool_choice")

# What a walk returns: (top-level object to file, keys it already decoded, record_kind, items_form,
# keys to add at the end of extra_json or None).
RowEnd = tuple[dict[str, Any], frozenset[str], str, str | None, dict[str, Any] | None]
Walk = Callable[[TableBuilder, dict[str, Any]], RowEnd]
Decode = Callable[..., None]


def add_top_level(
    tb: TableBuilder,
    rec: dict[str, Any],
    handled: frozenset[str],
    fmt: str,
    kind: str,
    items_form: str | None,
    conversation_id: str,
    source_file: str | None,
    source_line: int | None,
    tail: dict[str, Any] | None = None,
) -> None:
    """Close one conversation row: the keys in ``handled`` were decoded by the format already.

    Every value is serialised before the first column is appended, so a value orjson cannot
    write rejects the record without leaving a partial row behind.
    """
    model = tools = tool_choice = None
    extra: dict[str, Any] | None = None
    nulls: list[str] | None = None
    for k, v in rec.items():
        if k in handled:
            continue
        if k == "model" and type(v) is str:
            model = v
        elif (k == "model" or k in _TOP_JSON) and v is None:
            nulls = [*(nulls or ()), k]
        elif k == "tools":
            tools = dumps(v)
        elif k == "tool_choice":
            tool_choice = dumps(v)
        else:
            if extra is None:
                extra = {}
            extra[k] = v
    if tail:
        extra = {**(extra or {}), **tail}
    extra_text = None if extra is None else dumps(extra)
    tb.conversation_id.append(conversation_id)
    tb.source_format.append(fmt)
    tb.record_kind.append(kind)
    tb.source_file.append(source_file)
    tb.source_line.append(source_line)
    tb.model.append(model)
    tb.items_form.append(items_form)
    tb.tools.append(tools)
    tb.tool_choice.append(tool_choice)
    tb.extra.append(extra_text)
    tb.nulls.append(nulls)
    tb.items_off.append(len(tb.items.rows))


def make_decode(fmt: str, walk: Walk) -> Decode:
    """The public ``decode`` of codec ``fmt``: ``walk`` the record, then close its row."""

    def decode(
        tb: TableBuilder,
        rec: dict[str, Any],
        *,
        conversation_id: str,
        source_file: str | None = None,
        source_line: int | None = None,
    ) -> None:
        top, handled, kind, items_form, tail = walk(tb, rec)
        add_top_level(
            tb, top, handled, fmt, kind, items_form, conversation_id, source_file, source_line, tail
        )

    decode.__doc__ = (
        f"Append one {fmt} record to ``tb`` as one canonical row (raises :class:`RecordError`).\n\n"
        f"{walk.__doc__ or ''}"
    )
    return decode
