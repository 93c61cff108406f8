"""Rendering a run summary and the run catalog for people (rich tables); JSON is for machines."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text


def console() -> Console:
    """Standard output's console. Piped or redirected, lines are not wrapped (rich would fold them at
    80 columns, cutting a path mid-name): a script or a log gets each line whole."""
    out = Console()
    if not out.is_terminal:
        out.soft_wrap = True
    return out


def auto_choices(summary: dict[str, Any]) -> str:
    """What ``--from auto`` chose, in one line: records per wire format of each file of wire records
    (``detected``: one format, or mixed and decided per record), and the adapter of each file read
    by one (docs/sources.md#auto)."""
    parts = []
    for inp in summary["inputs"]:
        name = Path(inp["path"]).name if "://" not in inp["path"] else inp["path"]
        if "skipped" in inp:
            parts.append(f"file {name} skipped")
        elif "detected" in inp:
            counts = sorted(inp["detected"].items(), key=lambda kv: (-kv[1], kv[0]))
            # one format: every record fit the file's (wire_kind.follow_the_file); else per record
            how = "one format" if len(counts) == 1 else "mixed, per record"
            said = ", ".join(f"{n:,} {'records ' * (i == 0)}as {fmt}" for i, (fmt, n) in enumerate(counts))
            parts.append(f"{said} (file {name}: {how})" if counts else f"no records (file {name})")
        else:
            parts.append(f"file {name} as {inp['format']}")
    return "auto: " + ", ".join(parts)


LISTED = 5  # rejection reasons (and skipped files) printed; the rest are counted


def rejection_lines(summary: dict[str, Any]) -> list[str]:
    """The rejection reasons of a run, most frequent first, as printed: ``LISTED`` of them, then how
    many more reasons and records there are (the rejected file has them all)."""
    reasons = list(summary["rejected_by_reason"].items())
    lines = [f"  {n:,} x {reason}" for reason, n in reasons[:LISTED]]
    if len(reasons) > LISTED:
        rest = sum(n for _, n in reasons[LISTED:])
        lines.append(f"  and {len(reasons) - LISTED:,} more reasons ({rest:,} records)")
    return lines


def print_summary(summary: dict[str, Any], console: Console) -> None:
    """The end-of-run table: counts, rejections by stage and reason, losses by kind, where it went."""
    console.print(_counts_table(summary))
    if summary["rejected"]:
        stages = ", ".join(f"{k} {n:,}" for k, n in summary["rejected_by_stage"].items())
        console.print(f"rejected by stage: {stages}")
        for line in rejection_lines(summary):
            console.print(line, markup=False, highlight=False)
    skipped = [inp for inp in summary.get("inputs", []) if "skipped" in inp]
    if skipped:
        console.print(f"files rejected whole (not read): {len(skipped):,}")
        for inp in skipped[:LISTED]:
            console.print(f"  {inp['path']}: {inp['skipped']}", markup=False, highlight=False)
        if len(skipped) > LISTED:
            console.print(f"  and {len(skipped) - LISTED:,} more (the rejected file lists them all)")
    _print_threads(summary, console)
    if summary.get("dropped"):
        # a grouping step's dropped records are not rejected: each is kept inside its leaf (dropped/)
        reasons = ", ".join(f"{reason} {n:,}" for reason, n in summary["dropped_by_reason"].items())
        console.print(f"dropped (in their leaves): {summary['dropped']:,} ({reasons})")
    if summary["records_with_losses"]:
        kinds = ", ".join(f"{k} {n:,}" for k, n in list(summary["losses_by_kind"].items())[:6])
        if len(summary["losses_by_kind"]) > 6:
            kinds += f", and {len(summary['losses_by_kind']) - 6} more"
        console.print(f"{summary['records_with_losses']:,} records lost something ({kinds})")
    added = summary.get("additions_by_kind") or {}
    if added:
        # additions are not losses (pipeline.losses.ADDITIONS): listed apart, never a reason to reject
        listed = ", ".join(f"{kind} in {n:,} records" for kind, n in added.items())
        console.print(f"added (not losses; see the losses file): {listed}")
    if summary.get("native_fallback"):
        by_reason = summary["fallback_by_reason"].items()
        reasons = ", ".join(f"{n:,} {FALLBACK_WORDS.get(k, k)}" for k, n in by_reason)
        console.print(
            f"{summary['native_fallback']:,} lines read by the Python decoder instead of the compiled one "
            f"(same result, slower): {reasons}"
        )
    redone = summary.get("shards_redone") or {}
    if redone:
        console.print(f"{len(redone)} finished shards were redone: their files did not match manifest.json")
        for shard, why in list(redone.items())[:5]:
            console.print(f"  {shard}: {why}", markup=False, highlight=False)
    _print_where(summary, console)


# summary.json's fallback reasons (docs/run-layout.md) in the words of the printed summary
FALLBACK_WORDS = {
    "not_bytes": "not bytes",
    "parse": "invalid JSON or UTF-8",
    "duplicate_key": "with a repeated key",
    "number": "with a number kept as written",
    "depth": "nested deeper than 128",
    "big_object": "with an object of over 1,024 keys",
    "shape": "rejected, or of a form only the Python decoder reads",
    "validation": "checked by a decode rule",
    "batch_too_large": "in a batch too large for the compiled decoder",
}


def shards_text(summary: dict[str, Any]) -> str:
    """The shards of a run and how many of them an earlier run had finished: ``16`` or ``16 (15
    resumed)``; a two-stage job (threads) counts its stage-1 shards and its partitions together."""
    total = summary["shards"] + summary.get("stage1_shards", 0)
    resumed = summary.get("shards_resumed", 0) + summary.get("stage1_resumed", 0)
    if not resumed:
        return f"{total}"
    return f"{total} (all resumed)" if resumed == total else f"{total} ({resumed} resumed)"


def _counts_table(summary: dict[str, Any]) -> Table:
    """The summary's counts as one table row (read, written, rejected, dropped when the job has a
    grouping step, shards with those resumed, seconds)."""
    title = f"chatlake run {summary['job']} -> {summary['target']} ({summary['status']})"
    table = Table(title=title)
    dropped = "dropped" in summary  # a job with the threads step: read = written + rejected + dropped
    for col in (
        "read",
        "written",
        "rejected",
        *(("dropped",) if dropped else ()),
        "shards",
        "seconds",
    ):
        table.add_column(col, justify="right")
    table.add_row(
        f"{summary['read']:,}",
        f"{summary['written']:,}",
        f"{summary['rejected']:,}",
        *((f"{summary['dropped']:,}",) if dropped else ()),
        shards_text(summary),
        f"{summary.get('timings_s', {}).get('total', 0):.1f}",
    )
    return table


def _print_threads(summary: dict[str, Any], console: Console) -> None:
    """One line per dataset of a run with the threads step: threads, requests, items, dedupe."""
    for row in summary.get("threads") or []:
        name = Path(row["dataset"]).name if row["dataset"] else "?"
        console.print(
            f"threads ({name}): {row['threads']:,} threads, {row['requests']:,} requests "
            f"({row['requests_per_thread']:.1f} per thread), {row['items']:,} items, "
            f"{row['items_saved_by_dedupe']:,} saved by dedupe to leaves "
            f"(redundancy {row['redundancy_ratio'] or 0:.2f}x)"
        )


def _print_where(summary: dict[str, Any], console: Console) -> None:
    """Where the run's output went: its run directory, or (the single-file layout of convert /
    transform -o) each file it wrote."""
    if "run_dir" in summary:
        console.print(f"run directory: {summary['run_dir']}")
        return
    console.print(f"output: {summary['output']}")  # the single-file layout (convert/transform -o)
    if summary["rejected"]:
        console.print(f"rejected records: {summary['rejected_file']}")
    if summary.get("dropped"):
        console.print(f"dropped records: {summary['dropped_file']}")
    if summary.get("losses_file") and (summary["records_with_losses"] or summary.get("additions_by_kind")):
        console.print(f"losses: {summary['losses_file']}")


def _short_path(path: str) -> str:
    """A run directory as short as it can be said: relative to the current directory, or ``~/...``."""
    p = Path(path)
    for base, prefix in ((Path.cwd(), ""), (Path.home(), "~/")):
        try:
            return prefix + str(p.relative_to(base))
        except ValueError:
            continue
    return path


def print_runs(rows: list[dict[str, Any]], console: Console) -> None:
    """The catalog's runs, latest first, each with its run directory under its id.

    Fits an 80-column terminal: the job and the start time are in the run id
    (``JOB-YYYYMMDDTHHMMSS-xxxxxx``), so they get no column of their own (``--json`` has them),
    the run directory shares the id's cell, and there are no vertical rules.
    """
    table = Table(title="chatlake runs", box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("run id / directory", overflow="fold")
    for col in ("read", "written", "rejected"):
        table.add_column(col, justify="right", no_wrap=True)
    table.add_column("status", no_wrap=True)

    def n(v: Any) -> str:
        return "-" if v is None else f"{v:,}"

    for r in rows:
        where = Text(r["run_id"])
        where.append("\n" + _short_path(r["run_dir"]), style="dim")
        table.add_row(where, n(r["read"]), n(r["written"]), n(r["rejected"]), r["status"])
    console.print(table)
