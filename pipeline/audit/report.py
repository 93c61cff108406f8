"""The HTML audit report: one static file, charts as inline SVG, no script and no network.

``chatlake audit RUN --html report.html`` writes it. The charts (losses by kind, lossless share by
dataset, turn-count histogram, item kinds) are drawn by matplotlib into SVG text that is inlined in
the page, so the file opens anywhere, offline, and can be mailed or archived as it is. Every value
taken from the data is HTML-escaped (texts in a run are untrusted).

The numbers come from the same ``sql/`` queries the CLI runs; nothing is computed here but layout.
"""

from __future__ import annotations

import html
import io
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from pipeline.audit.queries import Query, load_queries, load_query, run_queries
from pipeline.audit.render import cell

CHART_QUERIES = (
    "loss_totals_by_kind",
    "lossless_share_by_dataset",
    "turn_count_distribution",
    "item_kinds_and_roles",
)
TABLE_QUERIES = (
    "loss_totals_by_direction",
    "lossless_share_by_dataset",
    "rejected_records_by_reason",
    "worst_records",
    "phase_coverage",
    "compaction_statistics",
)
MAX_TABLE_ROWS = 50

_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:2rem auto;max-width:1100px;
color:#1d1d1f;padding:0 1rem}
h1{font-size:1.6rem;margin-bottom:.2rem}h2{font-size:1.2rem;margin-top:2rem;border-bottom:1px solid #ddd}
.meta{color:#666;font-size:.9rem}
.cards{display:flex;gap:1rem;flex-wrap:wrap;margin:1rem 0}
.card{border:1px solid #ddd;border-radius:8px;padding:.6rem 1rem;min-width:8rem}
.card b{display:block;font-size:1.5rem}
.grid{display:grid;grid-template-columns:1fr 1fr;gap:1rem}
figure{margin:0;border:1px solid #eee;border-radius:8px;padding:.5rem}figure svg{width:100%;height:auto}
figcaption{font-weight:600;margin-bottom:.3rem}
table{border-collapse:collapse;font-size:.85rem;margin:.5rem 0}
th,td{border-bottom:1px solid #eee;padding:.25rem .6rem;text-align:left;vertical-align:top}
td.n{text-align:right;font-variant-numeric:tabular-nums}
.ok{color:#1a7f37}.bad{color:#b42318;font-weight:600}
p.q{color:#555;margin:.2rem 0}
"""


def _svg(fig: Any) -> str:
    """A matplotlib figure as SVG text for inlining (text kept as text, no timestamp)."""
    import matplotlib.pyplot as plt

    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(fig)
    text = buf.getvalue()
    return text[text.index("<svg") :]


def _barh(labels: list[str], values: list[float], xlabel: str, color: str, xmax: float | None = None) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams["svg.fonttype"] = "none"
    plt.rcParams["svg.hashsalt"] = "chatlake"
    height = max(1.6, 0.28 * len(labels) + 0.8)
    fig, ax = plt.subplots(figsize=(6.4, height))
    if not labels:
        ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes)
        ax.set_axis_off()
        return _svg(fig)
    ax.barh(range(len(labels)), values, color=color)
    ax.set_yticks(range(len(labels)), labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel(xlabel, fontsize=9)
    if xmax is not None:
        ax.set_xlim(0, xmax)
    for i, v in enumerate(values):
        ax.text(v, i, f" {v:.0%}" if xmax == 1 else f" {v:,.0f}", va="center", fontsize=7)
    ax.spines[["top", "right"]].set_visible(False)
    return _svg(fig)


def _histogram(x: list[int], counts: list[int]) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    plt.rcParams["svg.fonttype"] = "none"
    plt.rcParams["svg.hashsalt"] = "chatlake"
    fig, ax = plt.subplots(figsize=(6.4, 3.0))
    ax.bar(x, counts, color="#4c78a8", width=0.85)
    ax.set_xlabel("turns per conversation (human + assistant)", fontsize=9)
    ax.set_ylabel("conversations", fontsize=9)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.spines[["top", "right"]].set_visible(False)
    return _svg(fig)


def _kind_chart(result: pa.Table) -> str:
    kinds = [r for r in result.to_pylist() if not r["addition"]][:25]
    return _barh([r["kind"] for r in kinds], [r["losses"] for r in kinds], "losses", "#e45756")


def _share_chart(result: pa.Table) -> str:
    with_share = [r for r in result.to_pylist() if r["lossless_share"] is not None]
    return _barh([r["dataset"] for r in with_share], [r["lossless_share"] for r in with_share],
                 "share of written records with no loss", "#54a24b", xmax=1)  # fmt: skip


def _turn_chart(result: pa.Table) -> str:
    turns = result.to_pylist()
    return _histogram([r["all_turns"] for r in turns], [r["conversations"] for r in turns])


def _item_chart(result: pa.Table) -> str:
    item_counts: Counter[str] = Counter()
    for r in result.to_pylist():
        item_counts[f"{r['type']} ({r['role'] or '-'})"] += r["items"]
    top_items = item_counts.most_common(20)
    return _barh([k for k, _ in top_items], [n for _, n in top_items], "items", "#4c78a8")


# caption -> (the query it draws, how)
_CHARTS = {
    "Losses by kind": ("loss_totals_by_kind", _kind_chart),
    "Lossless share of written records, by dataset": ("lossless_share_by_dataset", _share_chart),
    "Turn-count histogram": ("turn_count_distribution", _turn_chart),
    "Item kinds (role)": ("item_kinds_and_roles", _item_chart),
}


def charts(results: dict[str, pa.Table]) -> dict[str, str]:
    """The four charts as SVG text, keyed by caption (those whose query has a result)."""
    return {caption: draw(results[name]) for caption, (name, draw) in _CHARTS.items() if name in results}


def _table(result: pa.Table) -> str:
    if result.num_rows == 0:
        return "<p><i>no rows</i></p>"
    numeric = [pa.types.is_integer(f.type) or pa.types.is_floating(f.type) for f in result.schema]
    head = "".join(f"<th>{html.escape(n)}</th>" for n in result.column_names)
    body = []
    for row in result.slice(0, MAX_TABLE_ROWS).to_pylist():
        tds = "".join(
            f'<td class="n">{html.escape(cell(v))}</td>' if num else f"<td>{html.escape(cell(v))}</td>"
            for v, num in zip(row.values(), numeric, strict=True)
        )
        body.append(f"<tr>{tds}</tr>")
    more = result.num_rows - MAX_TABLE_ROWS
    note = f"<p class='q'>… {more} more rows (run the query to see all)</p>" if more > 0 else ""
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>{note}"


def build_report(
    con: duckdb.DuckDBPyConnection, title: str = "chatlake audit", run: Path | None = None
) -> str:
    """The report for the run whose views are defined on ``con``, as one HTML document (``run``:
    where they were defined; a query that needs a view it cannot have is reported as not available,
    with the reason: a single-file output in a wire format has no canonical table)."""
    queries: dict[str, Query] = {q.name: q for q in load_queries()}
    if run is None:
        results, missing = {name: q.run(con) for name, q in queries.items()}, {}
    else:
        results, missing = run_queries(con, run, list(queries.values()))
    [(read, written, rejected, target)] = con.sql(
        "SELECT read, written, rejected, target FROM summary"
    ).fetchall()
    [(records_with_losses,)] = con.sql(
        "SELECT count(DISTINCT conversation_id) FROM losses "
        "WHERE kind NOT IN (SELECT kind FROM loss_kinds WHERE addition)"  # additions are not losses
    ).fetchall()
    figures = charts(results)
    cards = [
        ("read", f"{read:,}"),
        ("written", f"{written:,}"),
        ("rejected", f"{rejected:,}"),
        ("written with losses", f"{records_with_losses:,}"),
        ("target", str(target)),
    ]
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>{html.escape(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        f"<p class='meta'>generated {datetime.now(UTC):%Y-%m-%d %H:%M UTC} by chatlake</p>",
        "<div class='cards'>",
        *(f"<div class='card'>{html.escape(k)}<b>{html.escape(v)}</b></div>" for k, v in cards),
        "</div><h2>Charts</h2><div class='grid'>",
        *(f"<figure><figcaption>{html.escape(c)}</figcaption>"
          + (figures[c] if c in figures else f"<p class='q'>{html.escape(missing[name])}</p>") + "</figure>"
          for c, (name, _) in _CHARTS.items()),
        "</div><h2>Audits (no rows = healthy)</h2><table><tbody>",
    ]  # fmt: skip
    for name, q in queries.items():
        if q.is_audit and name in missing:
            parts.append(f"<tr><td>{html.escape(name)}</td><td>not available</td></tr>")
        elif q.is_audit:
            n = results[name].num_rows
            status = "<span class='ok'>healthy</span>" if n == 0 else f"<span class='bad'>{n:,} rows</span>"
            parts.append(f"<tr><td>{html.escape(name)}</td><td>{status}</td></tr>")
    parts.append("</tbody></table>")
    for name in (n for n, q in queries.items() if q.is_audit and n in results and results[n].num_rows):
        parts += [f"<h2>{html.escape(name)}</h2>", _table(results[name])]
    for name in TABLE_QUERIES:
        q = queries[name]
        parts += [f"<h2>{html.escape(name)}</h2>", f"<p class='q'>{html.escape(q.question)}</p>"]
        why = f"<p><i>{html.escape(missing.get(name, ''))}</i></p>"
        parts.append(_table(results[name]) if name in results else why)
    parts.append("</body></html>\n")
    return "\n".join(parts)


__all__ = ["CHART_QUERIES", "build_report", "charts", "load_query"]
