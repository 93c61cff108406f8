"""Query results as text: ``table`` (terminal), ``csv``, ``json`` or ``markdown``.

Results are small (aggregates, or the offending rows of an audit), so they are rendered from Python
values; list cells (``kinds``) are written as JSON text in CSV and Markdown.

>>> import pyarrow as pa
>>> print(render_markdown("q", "How many?", pa.table({"kind": ["a"], "n": [2]})))
### q
<BLANKLINE>
How many?
<BLANKLINE>
| kind | n |
|---|---:|
| a | 2 |
<BLANKLINE>
"""

from __future__ import annotations

import csv
import io
from typing import Any

import orjson
import pyarrow as pa

FORMATS = ("table", "csv", "json", "markdown")


def cell(value: Any) -> str:
    """One value as text: NULL for null, JSON for lists and structs, 6 significant digits for floats."""
    if value is None:
        return "NULL"
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, list | dict):
        return orjson.dumps(value).decode()
    return str(value)


def _numeric(t: pa.DataType) -> bool:
    return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)


def render_markdown(name: str, question: str, result: pa.Table) -> str:
    lines = [f"### {name}", "", question, ""]
    if result.num_rows == 0:
        return "\n".join([*lines, "(no rows)", ""])
    lines.append("| " + " | ".join(result.column_names) + " |")
    lines.append("|" + "|".join("---:" if _numeric(f.type) else "---" for f in result.schema) + "|")
    for row in result.to_pylist():
        lines.append("| " + " | ".join(cell(v).replace("|", "\\|") for v in row.values()) + " |")
    return "\n".join([*lines, ""])


def render_csv(result: pa.Table) -> str:
    """CSV for other tools: floats in full (the shortest text that reads back as the same float,
    not the 6 digits people get), null as an empty field."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(result.column_names)
    for row in result.to_pylist():
        w.writerow(["" if v is None else repr(v) if isinstance(v, float) else cell(v) for v in row.values()])
    return buf.getvalue()


def render_json(results: dict[str, pa.Table]) -> str:
    """``{"query name": [row, ...], ...}``; numbers stay numbers, lists stay lists."""
    return orjson.dumps({n: t.to_pylist() for n, t in results.items()}, option=orjson.OPT_INDENT_2).decode()


def render_table(name: str, question: str, result: pa.Table, width: int = 160) -> str:
    """A terminal table (rich), titled with the query name and its question (untitled when both
    are empty: ``chatlake sql`` does not echo the query the user just typed)."""
    from rich.console import Console
    from rich.table import Table

    title = f"{name}: {question}" if question else name or None
    table = Table(title=title, title_justify="left", show_lines=False)
    for f in result.schema:
        table.add_column(f.name, justify="right" if _numeric(f.type) else "left", overflow="fold")
    for row in result.to_pylist():
        table.add_row(*(cell(v) for v in row.values()))
    console = Console(file=io.StringIO(), width=width, force_terminal=False, color_system=None)
    console.print(table)
    if result.num_rows == 0:
        console.print("(no rows)")
    return console.file.getvalue()  # type: ignore[attr-defined]
