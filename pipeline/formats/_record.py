"""Top-level fields every format shares: model, tools, tool_choice, provenance and the rest."""

from __future__ import annotations

from typing import Any

from pipeline.formats._build import TableBuilder, dumps

# Top-level keys stored in their own columns (everything else goes to extra_json).
_TOP_JSON = ("tools", "tool_choice")


def add_top_level(
    tb: TableBuilder,
    rec: dict[str, Any],
    handled: frozenset[str],
    *,
    fmt: str,
    kind: str,
    items_form: str | None,
    conversation_id: str,
    source_file: str | None,
    source_line: int | None,
) -> None:
    """Close one conversation row: the keys in ``handled`` were decoded by the format already."""
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
    tb.conversation_id.append(conversation_id)
    tb.source_format.append(fmt)
    tb.record_kind.append(kind)
    tb.source_file.append(source_file)
    tb.source_line.append(source_line)
    tb.model.append(model)
    tb.items_form.append(items_form)
    tb.tools.append(tools)
    tb.tool_choice.append(tool_choice)
    tb.extra.append(None if extra is None else dumps(extra))
    tb.nulls.append(nulls)
    tb.items_off.append(len(tb.items))
