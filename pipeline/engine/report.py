"""Rendering a run summary and the run catalog for people (rich tables); JSON is for machines."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table


def print_summary(summary: dict[str, Any], console: Console) -> None:
    """The end-of-run table: counts, rejections by stage and reason, losses by kind, where it went."""
    title = f"chatlake run {summary['job']} -> {summary['target']} ({summary['status']})"
    table = Table(title=title)
    for col in ("read", "written", "rejected", "shards", "resumed", "seconds"):
        table.add_column(col, justify="right")
    table.add_row(
        f"{summary['read']:,}",
        f"{summary['written']:,}",
        f"{summary['rejected']:,}",
        str(summary["shards"]),
        str(summary.get("shards_resumed", 0)),
        f"{summary.get('timings_s', {}).get('total', 0):.1f}",
    )
    console.print(table)
    if summary["rejected"]:
        stages = ", ".join(f"{k} {n:,}" for k, n in summary["rejected_by_stage"].items())
        console.print(f"rejected by stage: {stages}")
        for reason, n in list(summary["rejected_by_reason"].items())[:5]:
            console.print(f"  {n:,} x {reason}")
    if summary["records_with_losses"]:
        kinds = ", ".join(f"{k} {n:,}" for k, n in list(summary["losses_by_kind"].items())[:6])
        console.print(f"{summary['records_with_losses']:,} records lost something ({kinds})")
    if summary.get("native_fallback"):
        reasons = ", ".join(f"{k} {n:,}" for k, n in summary["fallback_by_reason"].items())
        console.print(
            f"codec {summary['codec']}: {summary['native_fallback']:,} lines decoded by the Python codec "
            f"instead ({reasons})"
        )
    redone = summary.get("shards_redone") or {}
    if redone:
        console.print(f"{len(redone)} finished shards were redone: their files did not match manifest.json")
        for shard, why in list(redone.items())[:5]:
            console.print(f"  {shard}: {why}", markup=False, highlight=False)
    if "run_dir" in summary:
        console.print(f"run directory: {summary['run_dir']}")
        return
    console.print(f"output: {summary['output']}")  # the single-file layout (convert/transform -o)
    if summary["rejected"]:
        console.print(f"rejected records: {summary['rejected_file']}")
    if summary.get("losses_file") and summary["records_with_losses"]:
        console.print(f"losses: {summary['losses_file']}")


def print_runs(rows: list[dict[str, Any]], console: Console) -> None:
    table = Table(title="chatlake runs")
    for col in ("run_id", "job", "started", "read", "written", "rejected", "status"):
        table.add_column(col, justify="right" if col in ("read", "written", "rejected") else "left")

    def n(v: Any) -> str:
        return "-" if v is None else f"{v:,}"

    for r in rows:
        counts = (n(r["read"]), n(r["written"]), n(r["rejected"]))
        table.add_row(r["run_id"], r["job"], r["started_at"], *counts, r["status"])
    console.print(table)
